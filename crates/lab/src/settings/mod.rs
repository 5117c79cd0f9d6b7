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

pub(crate) mod clocksource;
mod file;
pub(crate) mod hrtick;
mod journal;
mod path;

pub(crate) use file::{check_restorable, check_writable, restore_value};
pub(crate) use journal::{Journal, Saved};
pub(crate) use latlab_core::io::journal_path;
pub(crate) use path::{debugfs_root_override, resolve, resolve_in, sysctl_path, KnobError};

use file::{read_knob, write_knob};
use journal::{lock_is_held, read_journal, Lock};
use latlab_core::error::{Error, Result};
use path::default_roots;
use std::collections::BTreeMap;
use std::fs::File;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// Changes files and remembers how they were, on disk, while holding the journal's lock.
pub(crate) struct Knobs {
    path: PathBuf,
    journal: Journal,
    roots: Vec<PathBuf>,
    /// The journal's lock; None for a plan that writes no setting ([`Knobs::idle`]).
    lock: Option<Lock>,
}

impl Knobs {
    /// Takes the lock and starts a journal at [`journal_path`]; refuses while another latlab
    /// holds the lock, or when an unrestored journal exists.
    pub(crate) fn new() -> Result<Knobs> {
        let journal = journal_path();
        let lock = journal::take_lock_waiting(&journal, None, true)?;
        Knobs::locked(journal, default_roots(), lock)
    }

    /// As [`Knobs::new`], waiting for another latlab's lock for as long as `keep_waiting`
    /// answers true (`latlab run --wait`).
    pub(crate) fn new_waiting(keep_waiting: &dyn Fn() -> bool) -> Result<Knobs> {
        let journal = journal_path();
        let lock = journal::take_lock_waiting(&journal, Some(keep_waiting), true)?;
        Knobs::locked(journal, default_roots(), lock)
    }

    /// As [`Knobs::new`], with a chosen journal and roots (tests use a temporary tree).
    #[cfg(test)]
    pub(crate) fn open(journal: PathBuf, roots: Vec<PathBuf>) -> Result<Knobs> {
        let lock = journal::take_lock(&journal)?;
        Knobs::locked(journal, roots, lock)
    }

    fn locked(journal: PathBuf, roots: Vec<PathBuf>, lock: Lock) -> Result<Knobs> {
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
                set: BTreeMap::new(),
            },
            roots,
            lock: Some(lock),
        })
    }

    /// Settings for a plan that changes none (its levels are kernels, booted elsewhere): no
    /// lock is taken and no journal written, so such plans do not keep other latlabs from
    /// this machine's settings; setting anything through it is refused.
    pub(crate) fn idle() -> Knobs {
        Knobs {
            path: PathBuf::new(),
            journal: Journal::default(),
            roots: Vec::new(),
            lock: None,
        }
    }

    /// The files changed so far (real paths).
    pub(crate) fn files(&self) -> Vec<PathBuf> {
        self.journal.originals.keys().map(PathBuf::from).collect()
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
    pub(crate) fn remember(&mut self, file: &Path) -> Result<PathBuf> {
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
    /// The value is read back: a write the kernel accepted but did not apply (an unknown
    /// clocksource leaves the old one) is an error (exit 3) naming the file, the value and what
    /// the kernel kept, so a plan never records a level that was not in force.
    pub(crate) fn set(&mut self, file: &Path, value: &str) -> Result<()> {
        if self.lock.is_none() {
            return Err(Error::Env(format!(
                "internal: {} set by a plan that holds no settings lock",
                file.display()
            )));
        }
        let real = self.remember(file)?;
        write_knob(&real, value.as_bytes(), &self.roots)
            .map_err(|e| Error::Env(format!("cannot set {} to '{value}': {e}", real.display())))?;
        let now = read_knob(&real, &self.roots)?;
        let held = String::from_utf8_lossy(&now);
        if !holds(value, &held) {
            return Err(Error::Env(format!(
                "{}: the kernel did not take '{value}' (it kept '{}'); the level would not be \
                 what was in force",
                real.display(),
                held.trim()
            )));
        }
        let key = real.to_str().unwrap_or_default().to_string();
        self.journal.set.insert(key, Saved::of(&now));
        self.persist()
    }

    /// Turns scheduler feature `name` on in a `sched_features`-style file, which takes one
    /// `NAME` or `NO_NAME` per write and reads back as the whole list. What is journaled is
    /// `NO_NAME`, the write that turns it back off, so a restore (here or by `latlab restore`)
    /// gives the kernel back the list it had. The list is read back: `name` must be on.
    /// Returns false, changing and journaling nothing, when it was on already; an error when
    /// the file has no such feature or the kernel did not take it.
    pub(crate) fn enable_feature(&mut self, file: &Path, name: &str) -> Result<bool> {
        let real = resolve_in(file, &self.roots).map_err(|e| e.into_error(""))?;
        let orig = read_knob(&real, &self.roots)?;
        let has = |text: &str, word: &str| text.split_whitespace().any(|w| w == word);
        let text = String::from_utf8_lossy(&orig).into_owned();
        if has(&text, name) {
            return Ok(false);
        }
        let off = format!("NO_{name}");
        if !has(&text, &off) {
            return Err(Error::Env(format!(
                "{}: the kernel has no {name} scheduler feature (the file lists: {})",
                real.display(),
                text.trim()
            )));
        }
        let key = real.to_str().unwrap_or_default().to_string();
        self.journal
            .originals
            .insert(key, Saved::of(off.as_bytes()));
        self.persist()?;
        write_knob(&real, name.as_bytes(), &self.roots)
            .map_err(|e| Error::Env(format!("cannot set {} to '{name}': {e}", real.display())))?;
        let now = read_knob(&real, &self.roots)?;
        if !has(&String::from_utf8_lossy(&now), name) {
            return Err(Error::Env(format!(
                "{}: the kernel did not turn {name} on (it reads '{}')",
                real.display(),
                String::from_utf8_lossy(&now).trim()
            )));
        }
        Ok(true)
    }

    /// Writes every original back and removes the journal; returns what failed (the journal
    /// is then kept for `latlab restore`).
    pub(crate) fn restore(self) -> Vec<String> {
        if self.lock.is_none() {
            return Vec::new();
        }
        let failed = restore_all(&self.journal, &self.roots);
        if failed.is_empty() {
            let _ = std::fs::remove_file(&self.path);
        }
        failed
    }
}

/// Whether the kernel offers `level` for the setting `file`, before anything is written (a
/// plan's `--dry-run` and its start): a clocksource must be in `available_clocksource`, a
/// governor in `scaling_available_governors`, a number in the range the kernel accepts where it
/// has a known one (`sched_rt_runtime_us` from -1 to the period, `sched_rt_period_us` from 1),
/// and any setting that reads as a number must get a number. The reason when it does not.
pub(crate) fn check_level(file: &Path, level: &str) -> std::result::Result<(), LevelRefused> {
    let sibling = |name: &str| {
        let p = file.with_file_name(name);
        std::fs::read_to_string(&p).ok().map(|t| (p, t))
    };
    let name = file.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let offered = match name {
        "current_clocksource" => sibling("available_clocksource"),
        "scaling_governor" => sibling("scaling_available_governors"),
        _ => None,
    };
    if let Some((p, list)) = offered {
        if !list.split_whitespace().any(|w| w == level.trim()) {
            return Err(LevelRefused::NotOffered(format!(
                "'{level}' for {} is not offered by this kernel ({} lists: {})",
                file.display(),
                p.display(),
                list.trim()
            )));
        }
        return Ok(());
    }
    let now = std::fs::read_to_string(file).unwrap_or_default();
    // A menu with the choice in force bracketed (`always [madvise] never`): one of its words.
    let words: Vec<&str> = now.split_whitespace().collect();
    if words.len() > 1
        && words
            .iter()
            .filter(|w| w.starts_with('[') && w.ends_with(']'))
            .count()
            == 1
    {
        let choices: Vec<&str> = words
            .iter()
            .map(|w| w.trim_start_matches('[').trim_end_matches(']'))
            .collect();
        if !choices.contains(&level.trim()) {
            return Err(LevelRefused::Invalid(format!(
                "'{level}' for {} is not one of its choices ({})",
                file.display(),
                choices.join(", ")
            )));
        }
        return Ok(());
    }
    if now.trim().parse::<i64>().is_ok() && level.trim().parse::<i64>().is_err() {
        return Err(LevelRefused::Invalid(format!(
            "'{level}' is not a number, and {} holds one ({})",
            file.display(),
            now.trim()
        )));
    }
    let Ok(v) = level.trim().parse::<i64>() else {
        return Ok(());
    };
    let range = match name {
        "sched_rt_runtime_us" => {
            let period = std::fs::read_to_string(file.with_file_name("sched_rt_period_us"))
                .ok()
                .and_then(|t| t.trim().parse::<i64>().ok())
                .unwrap_or(i64::from(i32::MAX));
            Some((-1, period))
        }
        "sched_rt_period_us" => Some((1, i64::from(i32::MAX))),
        _ => None,
    };
    match range {
        Some((lo, hi)) if v < lo || v > hi => Err(LevelRefused::Invalid(format!(
            "{v} is outside what the kernel accepts for {} ({lo} to {hi})",
            file.display()
        ))),
        _ => Ok(()),
    }
}

/// Why [`check_level`] refused a level.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum LevelRefused {
    /// A choice this machine does not offer (a clocksource or governor it lacks): its
    /// environment cannot do it.
    NotOffered(String),
    /// Not a value the setting takes anywhere (not on its menu, not a number, out of range):
    /// bad input.
    Invalid(String),
}

impl LevelRefused {
    /// The reason, in words.
    pub(crate) fn text(&self) -> &str {
        match self {
            LevelRefused::NotOffered(t) | LevelRefused::Invalid(t) => t,
        }
    }
}

impl std::fmt::Display for LevelRefused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.text())
    }
}

/// Whether a knob reading `now` holds the `value` written: the same text (blanks aside), the
/// same number, or the bracketed choice of a sysfs menu (`always [madvise] never`).
pub(crate) fn holds(value: &str, now: &str) -> bool {
    let (w, r) = (value.trim(), now.trim());
    if w == r {
        return true;
    }
    let words = |s: &str| s.split_whitespace().map(str::to_string).collect::<Vec<_>>();
    if words(w) == words(r) {
        return true;
    }
    if r.split_whitespace().any(|t| t == format!("[{w}]")) {
        return true;
    }
    matches!((w.parse::<i128>(), r.parse::<i128>()), (Ok(a), Ok(b)) if a == b)
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

/// The exit hook of a second Ctrl-C (which runs no destructors): replays this process's own
/// journal, if it has one, and removes it once every original is back.
pub(crate) fn restore_own_on_exit() {
    let path = journal_path();
    let Ok(Some(j)) = read_journal(&path) else {
        return;
    };
    if j.pid != std::process::id() {
        return;
    }
    let failed = restore_all(&j, &default_roots());
    if failed.is_empty() {
        let _ = std::fs::remove_file(&path);
    } else {
        latlab_core::note!(
            "latlab: could not restore {}; run 'latlab restore'",
            failed.join("; ")
        );
    }
}

/// Settings an interrupted plan (or `--hrtick`, or a clocksource switch) journaled, for
/// `latlab restore`: each one restored is a line; no journal, none.
/// A journal in another directory (a user's own, where latlab kept it before it became
/// machine-wide) is restored once, unless it was written before the machine last booted: the
/// kernel's settings went back to their boot values then, and writing its originals now would
/// put back stale ones (it is removed, and said).
pub const RESTORER: latlab_core::io::Restorer = latlab_core::io::Restorer {
    name: "system settings",
    run: |dir| {
        let path = if dir == latlab_core::io::state_dir() {
            journal_path()
        } else {
            dir.join("restore.json")
        };
        if let Some(line) = forget_if_stale(&path) {
            return Ok(vec![line]);
        }
        let text = restore_journal_at(&path, &default_roots())?;
        Ok(if text.starts_with("nothing to restore") {
            Vec::new()
        } else {
            text.lines().map(str::to_string).collect()
        })
    },
};

/// Removes the journal at `path` when it was written before this boot; says so.
fn forget_if_stale(path: &Path) -> Option<String> {
    let written = std::fs::symlink_metadata(path).ok()?.modified().ok()?;
    let btime = latlab_core::sys::procs::boot_unix_s(Path::new("/proc"))?;
    let boot = std::time::UNIX_EPOCH + std::time::Duration::from_secs(btime);
    if written >= boot {
        return None;
    }
    std::fs::remove_file(path).ok()?;
    Some(format!(
        "removed {}: written before this boot, when the kernel's settings went back to their \
         boot values (nothing restored from it)",
        path.display()
    ))
}

/// [`restore_from_journal`] for a chosen journal and roots (tests).
pub(crate) fn restore_journal_at(path: &Path, roots: &[PathBuf]) -> Result<String> {
    restore_journal_in(path, roots, false)
}

/// [`restore_journal_at`]; `system`: the system's own settings, under the machine-wide lock too.
fn restore_journal_in(path: &Path, roots: &[PathBuf], system: bool) -> Result<String> {
    if read_journal(path)?.is_none() {
        return Ok(format!(
            "nothing to restore ({} does not exist)\n",
            path.display()
        ));
    }
    let _lock = journal::take_lock_waiting(path, None, system).map_err(|e| {
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
    // A file that no longer holds what latlab set was changed by someone since: said, and
    // put back to its original all the same (what `restore` promises).
    let mut s = String::new();
    for (p, set) in &j.set {
        let (Some(set), Some(orig)) = (set.bytes(), j.originals.get(p).and_then(Saved::bytes))
        else {
            continue;
        };
        let Ok(real) = resolve_in(Path::new(p), roots) else {
            continue;
        };
        let now = read_knob(&real, roots).unwrap_or_default();
        let text = |b: &[u8]| String::from_utf8_lossy(b).trim().to_string();
        if text(&now) != text(&set) && text(&now) != text(&orig) {
            s.push_str(&format!(
                "note: {p} held '{}', not the '{}' latlab had set: changed since by someone \
                 else; put back to '{}' all the same\n",
                text(&now),
                text(&set),
                text(&orig)
            ));
        }
    }
    let failed = restore_all(&j, roots);
    if !failed.is_empty() {
        return Err(Error::Env(format!(
            "could not restore: {}; the journal {} is kept",
            failed.join("; "),
            path.display()
        )));
    }
    let _ = std::fs::remove_file(path);
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
    use super::file::hex;
    use super::journal::LOCK_PATIENCE;
    use super::*;

    #[test]
    fn a_value_holds_as_the_kernel_shows_it_and_not_otherwise() {
        assert!(holds("tsc", "tsc\n"));
        assert!(holds("1", " 1\n"));
        assert!(holds("0010", "10"));
        assert!(holds("madvise", "always [madvise] never\n"));
        assert!(holds("950000 1000000", "950000\t1000000\n"));
        assert!(!holds("no-such-clocksource", "tsc\n"));
        assert!(!holds("madvise", "[always] madvise never"));
        assert!(!holds("2", "1"));
    }

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
    fn idle_settings_take_no_lock_and_set_nothing() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("knob");
        std::fs::write(&f, "1\n").unwrap();
        let mut k = Knobs::idle();
        let e = k.set(&f, "2").unwrap_err();
        assert!(e.to_string().contains("holds no settings lock"), "{e}");
        assert!(k.files().is_empty());
        assert!(k.restore().is_empty());
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "1\n");
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

    /// A setting someone changed after the run was killed: restore says so, and puts the
    /// original back all the same; one left as latlab set it is restored without a word.
    #[test]
    fn restore_says_when_a_setting_was_changed_since_latlab_set_it() {
        let t = tree();
        let (f, g) = (t.root.join("a/k"), t.root.join("a/j"));
        std::fs::write(&f, "45\n").unwrap();
        std::fs::write(&g, "7\n").unwrap();
        let mut k = t.knobs().unwrap();
        k.set(&f, "101").unwrap();
        k.set(&g, "8").unwrap();
        drop(k);
        std::fs::write(&f, "33\n").unwrap();
        let out = restore_journal_at(&t.journal(), std::slice::from_ref(&t.root)).unwrap();
        assert!(
            out.contains("held '33', not the '101' latlab had set")
                && out.contains("put back to '45'"),
            "{out}"
        );
        assert!(!out.contains("held '8'"), "{out}");
        assert_eq!(std::fs::read(&f).unwrap(), b"45\n");
        assert_eq!(std::fs::read(&g).unwrap(), b"7\n");
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
        // The holder is named: this very process, with its command line.
        let me = format!("pid {}", std::process::id());
        assert!(
            e.to_string()
                .contains("one owner of system settings per machine"),
            "{e}"
        );
        assert!(e.to_string().contains(&me), "{e}");
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
    fn a_level_the_kernel_does_not_offer_is_refused_before_anything_is_written() {
        let d = tempfile::tempdir().unwrap();
        let cs = d.path().join("current_clocksource");
        std::fs::write(&cs, "tsc\n").unwrap();
        std::fs::write(
            d.path().join("available_clocksource"),
            "tsc kvm-clock acpi_pm \n",
        )
        .unwrap();
        assert!(check_level(&cs, "kvm-clock").is_ok());
        let e = check_level(&cs, "hpet").unwrap_err();
        assert!(matches!(e, LevelRefused::NotOffered(_)), "{e}");
        let e = e.to_string();
        assert!(
            e.contains("not offered") && e.contains("tsc kvm-clock"),
            "{e}"
        );
        // A word off a sysfs menu is bad input (exit 2), not a machine that cannot.
        let thp = d.path().join("enabled");
        std::fs::write(&thp, "always [madvise] never\n").unwrap();
        assert!(check_level(&thp, "never").is_ok());
        let e = check_level(&thp, "sometimes").unwrap_err();
        assert!(matches!(e, LevelRefused::Invalid(_)), "{e}");
        assert!(
            e.text()
                .contains("not one of its choices (always, madvise, never)"),
            "{e}"
        );
        let rt = d.path().join("sched_rt_runtime_us");
        std::fs::write(&rt, "950000\n").unwrap();
        std::fs::write(d.path().join("sched_rt_period_us"), "1000000\n").unwrap();
        assert!(check_level(&rt, "-1").is_ok() && check_level(&rt, "1000000").is_ok());
        assert!(check_level(&rt, "1000001")
            .unwrap_err()
            .text()
            .contains("outside"));
        assert!(check_level(&rt, "-2").is_err());
        assert!(check_level(&rt, "fast")
            .unwrap_err()
            .text()
            .contains("not a number"));
        let other = d.path().join("swappiness");
        std::fs::write(&other, "60\n").unwrap();
        assert!(check_level(&other, "10").is_ok() && check_level(&other, "x").is_err());
    }

    #[test]
    fn held_settings_are_journaled_before_a_change_and_restored() {
        let t = tree();
        let f = t.root.join("a/k");
        std::fs::write(&f, "tsc\n").unwrap();
        let mut k = t.knobs().unwrap();
        k.set(&f, "hpet").unwrap();
        assert!(t.journal().exists(), "journaled before the change");
        assert_eq!(std::fs::read(&f).unwrap(), b"hpet");
        assert!(k.restore().is_empty());
        assert_eq!(std::fs::read(&f).unwrap(), b"tsc\n");
        assert!(!t.journal().exists());
    }

    #[test]
    fn a_feature_is_turned_on_and_the_write_that_turns_it_off_is_journaled() {
        let t = tree();
        let f = t.root.join("a/features");
        let list = "GENTLE_FAIR_SLEEPERS NO_HRTICK NO_HRTICK_DL WAKEUP_PREEMPTION \n";
        std::fs::write(&f, list).unwrap();
        let mut k = t.knobs().unwrap();
        assert!(k.enable_feature(&f, "HRTICK_DL").unwrap());
        // A plain file keeps the last write; the kernel's file would list every feature.
        assert_eq!(std::fs::read(&f).unwrap(), b"HRTICK_DL");
        let j = read_journal(&t.journal()).unwrap().unwrap();
        let saved: Vec<Vec<u8>> = j.originals.values().map(|s| s.bytes().unwrap()).collect();
        assert_eq!(saved, vec![b"NO_HRTICK_DL".to_vec()]);
        assert!(k.restore().is_empty());
        assert_eq!(std::fs::read(&f).unwrap(), b"NO_HRTICK_DL");
        assert!(!t.journal().exists());
        // Already on: nothing written, nothing journaled.
        std::fs::write(&f, "HRTICK_DL NO_HRTICK\n").unwrap();
        let mut k = t.knobs().unwrap();
        assert!(!k.enable_feature(&f, "HRTICK_DL").unwrap());
        assert!(!t.journal().exists());
        // No such feature: exit 3 naming the file, nothing journaled.
        let e = k.enable_feature(&f, "NOPE").unwrap_err();
        assert_eq!(e.exit_code(), 3);
        assert!(e.to_string().contains("features"), "{e}");
        assert!(k.restore().is_empty());
        assert_eq!(std::fs::read(&f).unwrap(), b"HRTICK_DL NO_HRTICK\n");
    }

    #[test]
    fn old_text_journals_still_restore() {
        let s: Saved = serde_json::from_str("\"performance\"").unwrap();
        assert_eq!(s.bytes().unwrap(), b"performance");
        let s: Saved = serde_json::from_str("{\"hex\": \"310a\"}").unwrap();
        assert_eq!(s.bytes().unwrap(), b"1\n");
    }
}
