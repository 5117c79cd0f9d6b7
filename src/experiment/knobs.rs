//! System settings latlab may change (plans, `clocks --clocksource`), and the on-disk journal
//! that guarantees they are put back.
//!
//! Safe by construction:
//! - a knob is a regular file under `/sys` or `/proc/sys`, named without `..`, whose resolved
//!   path (every symlink followed) stays under those roots; the file is opened without following
//!   a final symlink and the opened file's real path is checked again, so a swapped link cannot
//!   redirect a write;
//! - the original bytes are journaled (hex, synced) before the first change and written back
//!   byte for byte; the journal is removed only after every original is back;
//! - one owner at a time: the journal is only touched under an exclusive `flock` on a lock
//!   file beside it, so a second plan started at the same moment is refused and cannot touch
//!   the first one's journal; `latlab restore` replays the journal after a crash or SIGKILL.

use crate::error::{Error, Result};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Component, Path, PathBuf};
use std::time::{Duration, Instant};

/// The only trees a knob may live in.
pub const KNOB_ROOTS: &[&str] = &["/sys", "/proc/sys"];
/// Largest knob file read (sysfs files hold at most a page; procfs sysctls a few).
const MAX_KNOB_BYTES: u64 = 1 << 20;
/// Largest journal read back.
const MAX_JOURNAL_BYTES: u64 = 16 << 20;
/// How long a start waits for a lock held for a moment (e.g. by another process's check).
const LOCK_PATIENCE: Duration = Duration::from_millis(500);

pub use crate::io::journal_path;

/// The lock file that guards a journal: beside it, `.lock` instead of its extension.
pub fn lock_path(journal: &Path) -> PathBuf {
    journal.with_extension("lock")
}

fn default_roots() -> Vec<PathBuf> {
    KNOB_ROOTS.iter().map(PathBuf::from).collect()
}

/// The sysctl file for a dotted (`kernel.sched_rt_runtime_us`) or slashed name, always under
/// `/proc/sys`: an absolute name, an empty segment or `..` is refused.
pub fn sysctl_path(name: &str) -> std::result::Result<PathBuf, String> {
    let bad = |why: &str| Err(format!("sysctl '{name}': {why}"));
    if name.is_empty() {
        return bad("empty name");
    }
    if name.starts_with('/') {
        return bad("a sysctl is a name like kernel.sched_rt_runtime_us, not a path (use knob = \"/proc/sys/...\")");
    }
    let rel = name.replace('.', "/");
    if rel.split('/').any(|s| s.is_empty() || s == "..") {
        return bad("empty or '..' segment");
    }
    if !rel
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "_-/:+@".contains(c))
    {
        return bad("unexpected character");
    }
    Ok(Path::new("/proc/sys").join(rel))
}

/// Resolves a knob path: absolute, without `..`, and (every symlink followed) under `/sys` or
/// `/proc/sys`. Returns the real path. An error is bad input (a path outside) or the
/// environment's (a knob this machine lacks): see [`KnobError`].
pub fn resolve(raw: &Path) -> std::result::Result<PathBuf, KnobError> {
    resolve_in(raw, &default_roots())
}

/// Why a knob path was refused.
#[derive(Debug, Clone, PartialEq)]
pub enum KnobError {
    /// Not a path latlab may write: outside the roots, `..`, relative (exit 2).
    Outside(String),
    /// Allowed, but missing or unusable on this machine (exit 3).
    Unusable(String),
}

impl std::fmt::Display for KnobError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KnobError::Outside(s) | KnobError::Unusable(s) => f.write_str(s),
        }
    }
}

impl KnobError {
    /// As latlab's error, with `context` in front.
    pub fn into_error(self, context: &str) -> Error {
        match self {
            KnobError::Outside(s) => Error::Usage(format!("{context}{s}")),
            KnobError::Unusable(s) => Error::Env(format!("{context}{s}")),
        }
    }
}

fn roots_text(roots: &[PathBuf]) -> String {
    roots
        .iter()
        .map(|r| r.display().to_string())
        .collect::<Vec<_>>()
        .join(" or ")
}

fn under(p: &Path, roots: &[PathBuf]) -> bool {
    roots.iter().any(|r| p.starts_with(r) && p != r)
}

/// [`resolve`] against chosen roots (tests use a temporary tree).
pub fn resolve_in(raw: &Path, roots: &[PathBuf]) -> std::result::Result<PathBuf, KnobError> {
    let shown = raw.display();
    let outside = |why: String| KnobError::Outside(format!("knob '{shown}': {why}"));
    if !raw.is_absolute() {
        return Err(outside(format!(
            "not an absolute path under {}",
            roots_text(roots)
        )));
    }
    if raw.components().any(|c| c == Component::ParentDir) {
        return Err(outside("'..' is not allowed in a knob path".into()));
    }
    if !under(raw, roots) {
        return Err(outside(format!(
            "latlab only writes files under {}",
            roots_text(roots)
        )));
    }
    let real = std::fs::canonicalize(raw)
        .map_err(|e| KnobError::Unusable(format!("knob '{shown}': {e}")))?;
    if !under(&real, roots) {
        return Err(outside(format!(
            "resolves to {}, outside {}",
            real.display(),
            roots_text(roots)
        )));
    }
    if real.to_str().is_none() {
        return Err(outside("not a UTF-8 path".into()));
    }
    Ok(real)
}

/// Opens a resolved knob without following a final symlink, and checks that the file opened
/// is really under the roots (a link swapped in between cannot redirect the write).
fn open_knob(real: &Path, write: bool, roots: &[PathBuf]) -> std::io::Result<File> {
    open_knob_as(real, write, false, roots)
}

fn open_knob_as(
    real: &Path,
    write: bool,
    truncate: bool,
    roots: &[PathBuf],
) -> std::io::Result<File> {
    let f = std::fs::OpenOptions::new()
        .read(!write)
        .write(write)
        .truncate(truncate)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NOCTTY)
        .open(real)?;
    let meta = f.metadata()?;
    if !meta.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    use std::os::fd::AsRawFd;
    let opened = std::fs::read_link(format!("/proc/self/fd/{}", f.as_raw_fd()))?;
    if !under(&opened, roots) {
        return Err(std::io::Error::other(format!(
            "opened {}, outside {}",
            opened.display(),
            roots_text(roots)
        )));
    }
    Ok(f)
}

/// Checks that `file` (already resolved) exists and can be written, without changing it. A file
/// with no write permission bit at all is refused even for root (sysfs and procfs files mark
/// their writability that way; root could otherwise open them).
pub fn check_writable(file: &Path) -> std::result::Result<(), String> {
    check_writable_in(file, &default_roots())
}

fn check_writable_in(file: &Path, roots: &[PathBuf]) -> std::result::Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(file).map_err(|e| format!("{}: {e}", file.display()))?;
    if !meta.is_file() {
        return Err(format!("{}: not a file", file.display()));
    }
    if meta.permissions().mode() & 0o222 == 0 {
        return Err(format!("{}: read-only", file.display()));
    }
    open_knob(file, true, roots)
        .map(|_| ())
        .map_err(|e| format!("{}: {e}", file.display()))
}

fn read_knob(real: &Path, roots: &[PathBuf]) -> Result<Vec<u8>> {
    let err = |e: std::io::Error| Error::Env(format!("{}: {e}", real.display()));
    let f = open_knob(real, false, roots).map_err(err)?;
    let mut v = Vec::new();
    f.take(MAX_KNOB_BYTES + 1)
        .read_to_end(&mut v)
        .map_err(err)?;
    if v.len() as u64 > MAX_KNOB_BYTES {
        return Err(Error::Env(format!(
            "{}: larger than {MAX_KNOB_BYTES} bytes; not a setting latlab can restore",
            real.display()
        )));
    }
    Ok(v)
}

fn write_knob(real: &Path, value: &[u8], roots: &[PathBuf]) -> std::io::Result<()> {
    // Truncated as `echo value > file` does (sysfs and procfs ignore it; a plain file in a
    // test tree needs it).
    let mut f = open_knob_as(real, true, true, roots)?;
    // One write: sysfs and procfs take a value in a single write call.
    let n = f.write(value)?;
    if n != value.len() {
        return Err(std::io::Error::other(format!(
            "short write ({n} of {} bytes)",
            value.len()
        )));
    }
    Ok(())
}

/// What has to be written back for a file read as `orig`: the bytes as they were, except a
/// one-line bracketed choice list (`always [madvise] never`), whose chosen entry is written.
pub fn restore_value(orig: &[u8]) -> Vec<u8> {
    if let Ok(s) = std::str::from_utf8(orig) {
        let line = s.strip_suffix('\n').unwrap_or(s);
        if !line.contains('\n') {
            if let (Some(a), Some(b)) = (line.find('['), line.find(']')) {
                if b > a && line.matches('[').count() == 1 {
                    return line.as_bytes()[a + 1..b].to_vec();
                }
            }
        }
    }
    orig.to_vec()
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) || !s.is_ascii() {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).ok())
        .collect()
}

/// One journaled original: the exact bytes to write back (hex), and for people a text form.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(untagged)]
pub enum Saved {
    /// Current form: the bytes in hex.
    Bytes {
        /// The bytes to write back, hex-encoded.
        hex: String,
        /// The same, as text, for people reading the journal.
        #[serde(default)]
        text: String,
    },
    /// Journals written by latlab before byte-exact restore: the text to write.
    Text(String),
}

impl Saved {
    fn of(bytes: &[u8]) -> Saved {
        Saved::Bytes {
            hex: hex(bytes),
            text: String::from_utf8_lossy(bytes).into_owned(),
        }
    }

    /// The bytes to write back (None: a damaged hex string).
    pub fn bytes(&self) -> Option<Vec<u8>> {
        match self {
            Saved::Bytes { hex, .. } => unhex(hex),
            Saved::Text(t) => Some(t.as_bytes().to_vec()),
        }
    }
}

/// The journal: original contents of every file latlab changed, by real path.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct Journal {
    /// Process that wrote it.
    pub pid: u32,
    /// Original of each changed file.
    pub originals: BTreeMap<String, Saved>,
}

/// The exclusive right to change settings: an `flock` on the journal's lock file, released when
/// dropped (or when the process dies, however it dies).
#[derive(Debug)]
struct Lock {
    _file: File,
}

fn take_lock(journal: &Path) -> Result<Lock> {
    if let Some(d) = journal.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(d).map_err(|e| Error::Env(format!("{}: {e}", d.display())))?;
    }
    let lp = lock_path(journal);
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&lp)
        .map_err(|e| Error::Env(format!("{}: {e}", lp.display())))?;
    let t0 = Instant::now();
    loop {
        match f.try_lock() {
            Ok(()) => break,
            Err(std::fs::TryLockError::WouldBlock) if t0.elapsed() < LOCK_PATIENCE => {
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(std::fs::TryLockError::WouldBlock) => {
                let mut holder = String::new();
                let _ = (&f).take(64).read_to_string(&mut holder);
                let holder = holder.trim();
                return Err(Error::Env(format!(
                    "another latlab {}is changing system settings right now ({} is locked); \
                     one plan at a time: wait for it to end",
                    if holder.is_empty() {
                        String::new()
                    } else {
                        format!("(pid {holder}) ")
                    },
                    lp.display()
                )));
            }
            Err(std::fs::TryLockError::Error(e)) => {
                return Err(Error::Env(format!("{}: cannot lock: {e}", lp.display())))
            }
        }
    }
    // Name the holder for the message a second start prints.
    let _ = f.set_len(0);
    let _ = f.write_all(std::process::id().to_string().as_bytes());
    Ok(Lock { _file: f })
}

/// True while some process holds the lock of `journal`.
fn lock_is_held(journal: &Path) -> bool {
    let Ok(f) = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(lock_path(journal))
    else {
        return false;
    };
    // A shared lock fails only against an exclusive one; released on drop at once.
    matches!(f.try_lock_shared(), Err(std::fs::TryLockError::WouldBlock))
}

fn read_journal(path: &Path) -> Result<Option<Journal>> {
    let f = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
    {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::Env(format!("{}: {e}", path.display()))),
    };
    let mut text = String::new();
    f.take(MAX_JOURNAL_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(|e| Error::Env(format!("{}: {e}", path.display())))?;
    if text.len() as u64 > MAX_JOURNAL_BYTES {
        return Err(Error::Env(format!(
            "{}: larger than {MAX_JOURNAL_BYTES} bytes; not a latlab journal",
            path.display()
        )));
    }
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|e| Error::Env(format!("{}: not a latlab journal: {e}", path.display())))
}

/// Changes files and remembers how they were, on disk, while holding the journal's lock.
pub struct Knobs {
    path: PathBuf,
    journal: Journal,
    roots: Vec<PathBuf>,
    _lock: Lock,
}

impl Knobs {
    /// Takes the lock and starts a journal at [`journal_path`]; refuses while another latlab
    /// holds the lock, or when an unrestored journal exists.
    pub fn new() -> Result<Knobs> {
        Knobs::open(journal_path(), default_roots())
    }

    /// As [`Knobs::new`], with a chosen journal and roots (tests use a temporary tree).
    pub fn open(journal: PathBuf, roots: Vec<PathBuf>) -> Result<Knobs> {
        let lock = take_lock(&journal)?;
        if let Some(j) = read_journal(&journal).unwrap_or(Some(Journal::default())) {
            let files: Vec<&str> = j.originals.keys().map(String::as_str).collect();
            return Err(Error::Env(format!(
                "{}: a previous latlab run did not restore its settings ({}); run 'latlab restore' first",
                journal.display(),
                if files.is_empty() { "unreadable journal".to_string() } else { files.join(", ") }
            )));
        }
        Ok(Knobs {
            path: journal,
            journal: Journal {
                pid: std::process::id(),
                originals: BTreeMap::new(),
            },
            roots,
            _lock: lock,
        })
    }

    /// Changes `file` to `value` in one journaled step and returns a guard that puts the
    /// original back when dropped (`clocks --clocksource` uses this through [`KnobGuard`]).
    pub fn apply_journaled(file: &Path, value: &str) -> Result<KnobGuard> {
        let g = KnobGuard::acquire(file)?;
        g.set(value)?;
        Ok(g)
    }

    fn persist(&self) -> Result<()> {
        let tmp = self.path.with_extension("tmp");
        let text =
            serde_json::to_string_pretty(&self.journal).map_err(|e| Error::Env(e.to_string()))?;
        let _ = std::fs::remove_file(&tmp);
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)
            .map_err(|e| Error::Env(format!("{}: {e}", tmp.display())))?;
        f.write_all(text.as_bytes())
            .and_then(|_| f.sync_all())
            .map_err(|e| Error::Env(format!("{}: {e}", tmp.display())))?;
        std::fs::rename(&tmp, &self.path)
            .map_err(|e| Error::Env(format!("{}: {e}", self.path.display())))?;
        if let Some(d) = self.path.parent().filter(|d| !d.as_os_str().is_empty()) {
            let _ = File::open(d).and_then(|d| d.sync_all());
        }
        Ok(())
    }

    /// Journals the original of `file` (once) without changing it; returns its real path.
    pub fn remember(&mut self, file: &Path) -> Result<PathBuf> {
        let real = resolve_in(file, &self.roots).map_err(|e| e.into_error(""))?;
        let key = real.to_str().unwrap_or_default().to_string();
        if !self.journal.originals.contains_key(&key) {
            let orig = read_knob(&real, &self.roots)?;
            self.journal
                .originals
                .insert(key, Saved::of(&restore_value(&orig)));
            self.persist()?;
        }
        Ok(real)
    }

    /// Writes `value` to `file`, journaling the original first.
    pub fn set(&mut self, file: &Path, value: &str) -> Result<()> {
        let real = self.remember(file)?;
        write_knob(&real, value.as_bytes(), &self.roots)
            .map_err(|e| Error::Env(format!("cannot set {} to '{value}': {e}", real.display())))
    }

    /// Writes every original back and removes the journal; returns what failed (the journal
    /// is then kept for `latlab restore`).
    pub fn restore(self) -> Vec<String> {
        let failed = restore_all(&self.journal, &self.roots);
        if failed.is_empty() {
            let _ = std::fs::remove_file(&self.path);
        }
        failed
    }
}

/// One knob changed under the journal, put back when dropped (also on panic unwinding and
/// errors; after SIGKILL `latlab restore` does it).
pub struct KnobGuard {
    knobs: RefCell<Option<Knobs>>,
    file: PathBuf,
}

impl KnobGuard {
    /// Takes the lock and journals `file`'s original before anything changes.
    pub fn acquire(file: &Path) -> Result<KnobGuard> {
        KnobGuard::acquire_with(file, Knobs::new()?)
    }

    /// As [`KnobGuard::acquire`] with chosen knobs (tests).
    pub fn acquire_with(file: &Path, mut knobs: Knobs) -> Result<KnobGuard> {
        let real = knobs.remember(file)?;
        Ok(KnobGuard {
            knobs: RefCell::new(Some(knobs)),
            file: real,
        })
    }

    /// Writes `value` to the knob.
    pub fn set(&self, value: &str) -> Result<()> {
        match self.knobs.borrow_mut().as_mut() {
            Some(k) => k.set(&self.file, value),
            None => Err(Error::Env(format!(
                "{}: already restored",
                self.file.display()
            ))),
        }
    }

    /// Puts the original back now; returns what failed.
    pub fn restore(self) -> Vec<String> {
        self.knobs
            .borrow_mut()
            .take()
            .map(Knobs::restore)
            .unwrap_or_default()
    }
}

impl Drop for KnobGuard {
    fn drop(&mut self) {
        if let Some(k) = self.knobs.borrow_mut().take() {
            let failed = k.restore();
            if !failed.is_empty() {
                eprintln!(
                    "latlab: could not restore {}; run 'latlab restore'",
                    failed.join("; ")
                );
            }
        }
    }
}

fn restore_all(j: &Journal, roots: &[PathBuf]) -> Vec<String> {
    let mut failed = Vec::new();
    for (path, saved) in &j.originals {
        let Some(bytes) = saved.bytes() else {
            failed.push(format!("{path}: the journal's value is damaged"));
            continue;
        };
        // A journal is input too: it may only name knobs.
        let real = match resolve_in(Path::new(path), roots) {
            Ok(r) => r,
            Err(e) => {
                failed.push(e.to_string());
                continue;
            }
        };
        if let Err(e) = write_knob(&real, &bytes, roots) {
            failed.push(format!(
                "{path} (to '{}'): {e}",
                String::from_utf8_lossy(&bytes).trim_end()
            ));
        }
    }
    failed
}

/// `latlab restore`: replays a journal left by an interrupted run.
pub fn restore_from_journal() -> Result<String> {
    restore_journal_at(&journal_path(), &default_roots())
}

/// [`restore_from_journal`] for a chosen journal and roots (tests).
pub fn restore_journal_at(path: &Path, roots: &[PathBuf]) -> Result<String> {
    if read_journal(path)?.is_none() {
        return Ok(format!(
            "nothing to restore ({} does not exist)\n",
            path.display()
        ));
    }
    let _lock = take_lock(path).map_err(|e| {
        Error::Env(format!(
            "{e}; a running plan puts back its own settings when it ends"
        ))
    })?;
    // Read again under the lock: the owner may have finished meanwhile.
    let Some(j) = read_journal(path)? else {
        return Ok(format!(
            "nothing to restore ({} does not exist)\n",
            path.display()
        ));
    };
    let failed = restore_all(&j, roots);
    if !failed.is_empty() {
        return Err(Error::Env(format!(
            "could not restore: {}; the journal {} is kept",
            failed.join("; "),
            path.display()
        )));
    }
    let _ = std::fs::remove_file(path);
    let mut s = String::new();
    for (p, v) in &j.originals {
        let text = String::from_utf8_lossy(&v.bytes().unwrap_or_default()).into_owned();
        s.push_str(&format!("restored {p} = {}\n", text.trim_end()));
    }
    Ok(s)
}

/// A line for stderr when an unrestored journal exists and no latlab holds its lock (checked at
/// every start).
pub fn pending_notice() -> Option<String> {
    let path = journal_path();
    let j = read_journal(&path).ok()??;
    if lock_is_held(&path) {
        return None; // a plan is running right now and will restore its own settings
    }
    let files: Vec<&str> = j.originals.keys().map(String::as_str).collect();
    Some(format!(
        "latlab: a previous run was stopped before restoring {} setting(s) ({}); run 'latlab restore' to put them back",
        files.len(),
        files.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Tree {
        dir: tempfile::TempDir,
        root: PathBuf,
    }

    fn tree() -> Tree {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap().join("sys");
        std::fs::create_dir_all(root.join("a")).unwrap();
        Tree { dir, root }
    }

    impl Tree {
        fn journal(&self) -> PathBuf {
            self.dir.path().join("state/restore.json")
        }
        fn knobs(&self) -> Result<Knobs> {
            Knobs::open(self.journal(), vec![self.root.clone()])
        }
    }

    #[test]
    fn paths_outside_the_roots_or_with_dotdot_are_refused() {
        let t = tree();
        let roots = vec![t.root.clone()];
        let outside = t.dir.path().join("outside");
        std::fs::write(&outside, "x").unwrap();
        std::fs::write(t.root.join("a/k"), "1\n").unwrap();
        std::os::unix::fs::symlink(&outside, t.root.join("a/link")).unwrap();
        let dotdot = t.root.join("../outside");
        for bad in [
            dotdot.as_path(),
            outside.as_path(),
            &t.root.join("a/link"),
            Path::new("relative/knob"),
            &t.root,
        ] {
            assert!(
                matches!(resolve_in(bad, &roots), Err(KnobError::Outside(_))),
                "{} was accepted",
                bad.display()
            );
        }
        assert_eq!(
            resolve_in(&t.root.join("a/k"), &roots).unwrap(),
            t.root.join("a/k")
        );
        assert!(matches!(
            resolve_in(&t.root.join("a/missing"), &roots),
            Err(KnobError::Unusable(_))
        ));
        // The real roots: the examples.
        assert!(matches!(
            resolve(Path::new("/sys/../tmp/x")),
            Err(KnobError::Outside(_))
        ));
        assert!(matches!(
            resolve(Path::new("/tmp/x")),
            Err(KnobError::Outside(_))
        ));
    }

    #[test]
    fn sysctl_names_stay_under_proc_sys() {
        assert_eq!(
            sysctl_path("kernel.sched_rt_runtime_us").unwrap(),
            Path::new("/proc/sys/kernel/sched_rt_runtime_us")
        );
        assert_eq!(
            sysctl_path("fs/lease-break-time").unwrap(),
            Path::new("/proc/sys/fs/lease-break-time")
        );
        for bad in [
            "/etc/passwd",
            "",
            "kernel..x",
            "../../etc/x",
            "a/../b",
            "a b",
        ] {
            assert!(sysctl_path(bad).is_err(), "{bad} accepted");
        }
    }

    #[test]
    fn restore_is_byte_exact() {
        let t = tree();
        let cases: [&[u8]; 4] = [
            b"1\n",
            b"line one\nline two\n\n",
            b"no newline",
            b"\xff\x00bin",
        ];
        let files: Vec<PathBuf> = (0..cases.len())
            .map(|i| t.root.join(format!("a/k{i}")))
            .collect();
        for (f, c) in files.iter().zip(cases) {
            std::fs::write(f, c).unwrap();
        }
        let mut k = t.knobs().unwrap();
        for f in &files {
            k.set(f, "changed").unwrap();
            assert_eq!(std::fs::read(f).unwrap(), b"changed");
        }
        assert!(k.restore().is_empty());
        for (f, c) in files.iter().zip(cases) {
            assert_eq!(std::fs::read(f).unwrap(), c, "{}", f.display());
        }
        assert!(!t.journal().exists());
        // A bracketed choice list is restored to its chosen entry.
        assert_eq!(restore_value(b"always [madvise] never\n"), b"madvise");
        assert_eq!(restore_value(b"[a]\n[b]\n"), b"[a]\n[b]\n");
    }

    #[test]
    fn the_journal_survives_a_crash_and_restore_replays_it_byte_exact() {
        let t = tree();
        let f = t.root.join("a/k");
        std::fs::write(&f, "two\nlines\n").unwrap();
        let mut k = t.knobs().unwrap();
        k.set(&f, "x").unwrap();
        // A crash: the knobs are never restored, the lock dies with the process.
        drop(k);
        assert!(t.journal().exists());
        let text = std::fs::read_to_string(t.journal()).unwrap();
        assert!(text.contains(&hex(b"two\nlines\n")), "{text}");
        // A new owner is refused while the journal is there.
        let e = t.knobs().err().unwrap();
        assert!(e.to_string().contains("latlab restore"), "{e}");
        let out = restore_journal_at(&t.journal(), std::slice::from_ref(&t.root)).unwrap();
        assert!(out.contains("restored"), "{out}");
        assert_eq!(std::fs::read(&f).unwrap(), b"two\nlines\n");
        assert!(!t.journal().exists());
    }

    #[test]
    fn a_second_owner_is_refused_and_cannot_touch_the_first_journal() {
        let t = tree();
        let f = t.root.join("a/k");
        std::fs::write(&f, "orig\n").unwrap();
        let mut first = t.knobs().unwrap();
        first.set(&f, "first").unwrap();
        let before = std::fs::read(t.journal()).unwrap();
        let e = t.knobs().err().expect("second owner accepted");
        assert!(e.to_string().contains("one plan at a time"), "{e}");
        assert_eq!(e.exit_code(), 3);
        // restore refuses too while the owner lives.
        assert!(restore_journal_at(&t.journal(), std::slice::from_ref(&t.root)).is_err());
        assert_eq!(std::fs::read(t.journal()).unwrap(), before);
        assert!(first.restore().is_empty());
        assert_eq!(std::fs::read(&f).unwrap(), b"orig\n");
        // Free again.
        assert!(t.knobs().is_ok());
    }

    #[test]
    fn concurrent_starts_admit_exactly_one() {
        let t = tree();
        let journal = t.journal();
        let root = t.root.clone();
        let barrier = std::sync::Arc::new(std::sync::Barrier::new(8));
        let handles: Vec<_> = (0..8)
            .map(|_| {
                let (j, r, b) = (journal.clone(), root.clone(), barrier.clone());
                std::thread::spawn(move || {
                    b.wait();
                    let k = Knobs::open(j, vec![r]);
                    let ok = k.is_ok();
                    // Hold it long enough for every other start to give up.
                    std::thread::sleep(LOCK_PATIENCE * 2);
                    drop(k);
                    ok
                })
            })
            .collect();
        let won = handles
            .into_iter()
            .map(|h| h.join().unwrap())
            .filter(|x| *x)
            .count();
        assert_eq!(won, 1);
    }

    #[test]
    fn a_tampered_journal_cannot_write_outside_the_roots() {
        let t = tree();
        let victim = t.dir.path().join("victim");
        std::fs::write(&victim, "safe").unwrap();
        std::fs::create_dir_all(t.journal().parent().unwrap()).unwrap();
        let j = format!(
            "{{\"pid\": 1, \"originals\": {{\"{}\": {{\"hex\": \"{}\"}}}}}}",
            victim.display(),
            hex(b"owned")
        );
        std::fs::write(t.journal(), j).unwrap();
        let e = restore_journal_at(&t.journal(), std::slice::from_ref(&t.root)).unwrap_err();
        assert!(e.to_string().contains("victim"), "{e}");
        assert_eq!(std::fs::read(&victim).unwrap(), b"safe");
    }

    #[test]
    fn the_guard_restores_on_drop() {
        let t = tree();
        let f = t.root.join("a/k");
        std::fs::write(&f, "tsc\n").unwrap();
        {
            let g = KnobGuard::acquire_with(&f, t.knobs().unwrap()).unwrap();
            assert!(t.journal().exists(), "journaled before any change");
            g.set("hpet").unwrap();
            assert_eq!(std::fs::read(&f).unwrap(), b"hpet");
        }
        assert_eq!(std::fs::read(&f).unwrap(), b"tsc\n");
        assert!(!t.journal().exists());
    }

    #[test]
    fn old_text_journals_still_restore() {
        let s: Saved = serde_json::from_str("\"performance\"").unwrap();
        assert_eq!(s.bytes().unwrap(), b"performance");
        let s: Saved = serde_json::from_str("{\"hex\": \"310a\"}").unwrap();
        assert_eq!(s.bytes().unwrap(), b"1\n");
    }
}
