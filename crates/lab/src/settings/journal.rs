//! The on-disk journal of original values, and the exclusive lock that makes one plan at a time
//! its only owner: written (hex, synced) before the first change, removed only after every
//! original is back.

use super::file::{hex, unhex};
use latlab_core::error::{Error, Result};
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Largest journal read back.
pub(super) const MAX_JOURNAL_BYTES: u64 = 16 << 20;
/// How long a start waits for a lock held for a moment (e.g. by another process's check).
pub(super) const LOCK_PATIENCE: Duration = Duration::from_millis(500);
/// The lock file that guards a journal: beside it, `.lock` instead of its extension.
pub(crate) fn lock_path(journal: &Path) -> PathBuf {
    journal.with_extension("lock")
}

/// One journaled original: the exact bytes to write back (hex), and for people a text form.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(untagged)]
pub(crate) enum Saved {
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
    pub(super) fn of(bytes: &[u8]) -> Saved {
        Saved::Bytes {
            hex: hex(bytes),
            text: String::from_utf8_lossy(bytes).into_owned(),
        }
    }

    /// The bytes to write back (None: a damaged hex string).
    pub(crate) fn bytes(&self) -> Option<Vec<u8>> {
        match self {
            Saved::Bytes { hex, .. } => unhex(hex),
            Saved::Text(t) => Some(t.as_bytes().to_vec()),
        }
    }
}

/// The journal: original contents of every file latlab changed, by real path.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct Journal {
    /// Process that wrote it.
    pub(crate) pid: u32,
    /// Original of each changed file.
    pub(crate) originals: BTreeMap<String, Saved>,
    /// What latlab last set each file to (absent in older journals): `latlab restore` says
    /// when a file no longer holds it (someone changed it since the run was killed).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) set: BTreeMap<String, Saved>,
}

/// The exclusive right to change settings: an `flock` on the journal's lock file and, for the
/// system's own settings, on the machine-wide one ([`latlab_core::io::machine_lock_path`]) whatever
/// the journal; released when dropped (or when the process dies, however it dies).
#[derive(Debug)]
pub(super) struct Lock {
    _machine: Option<File>,
    _file: File,
}

/// The journal's lock alone (a chosen tree of files, as tests use).
#[cfg(test)]
pub(super) fn take_lock(journal: &Path) -> Result<Lock> {
    take_lock_waiting(journal, None, false)
}

/// [`take_lock`]; `system`: the system's settings, so the machine-wide lock first (one owner
/// per machine, whatever `LATLAB_JOURNAL`, `XDG_STATE_HOME` or user). With `keep_waiting`, a
/// lock another latlab holds is waited for (said once) for as long as it answers true (a
/// signal makes it false: the wait ends, exit 3).
pub(super) fn take_lock_waiting(
    journal: &Path,
    keep_waiting: Option<&dyn Fn() -> bool>,
    system: bool,
) -> Result<Lock> {
    if let Some(d) = journal.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(d).map_err(|e| Error::Env(format!("{}: {e}", d.display())))?;
    }
    let lp = lock_path(journal);
    // The same file is locked once (two descriptors of one file would lock each other out).
    let machine = match latlab_core::io::machine_lock_path().filter(|m| system && *m != lp) {
        Some(m) => Some(lock_file(&m, keep_waiting)?),
        None => None,
    };
    let file = lock_file(&lp, keep_waiting)?;
    Ok(Lock {
        _machine: machine,
        _file: file,
    })
}

/// An exclusive `flock` on the lock file `lp` (created 0600, never through a link), with the
/// holder's pid written in it.
fn lock_file(lp: &Path, keep_waiting: Option<&dyn Fn() -> bool>) -> Result<File> {
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(lp)
        .map_err(|e| Error::Env(format!("{}: {e}", lp.display())))?;
    let t0 = Instant::now();
    let mut said = false;
    loop {
        match f.try_lock() {
            Ok(()) => break,
            Err(std::fs::TryLockError::WouldBlock) if t0.elapsed() < LOCK_PATIENCE => {
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(std::fs::TryLockError::WouldBlock) => {
                let holder = holder(&mut f);
                match keep_waiting {
                    Some(keep) if keep() => {
                        if !said {
                            latlab_core::note!(
                                "latlab: waiting for the settings lock {} held by {holder}",
                                lp.display()
                            );
                            said = true;
                        }
                        std::thread::sleep(Duration::from_millis(100));
                    }
                    Some(_) => {
                        return Err(Error::Env(format!(
                            "interrupted while waiting for the settings lock {} held by {holder}",
                            lp.display()
                        )))
                    }
                    None => {
                        return Err(Error::Env(format!(
                            "another latlab holds the machine's system settings: {holder} has \
                             {} locked; one owner of system settings per machine (one \
                             plan at a time, whatever the user or state directory): wait for it to end, or pass --wait",
                            lp.display()
                        )))
                    }
                }
            }
            Err(std::fs::TryLockError::Error(e)) => {
                return Err(Error::Env(format!("{}: cannot lock: {e}", lp.display())))
            }
        }
    }
    // Name the holder for the message a second start prints.
    let _ = f.set_len(0);
    let _ = f.write_all(std::process::id().to_string().as_bytes());
    Ok(f)
}

/// Who holds the lock file `f`, in words (its pid is written in it).
fn holder(f: &mut File) -> String {
    use std::io::Seek;
    let mut text = String::new();
    let _ = f.seek(std::io::SeekFrom::Start(0));
    let _ = (&*f).take(64).read_to_string(&mut text);
    match text.trim().parse::<i32>() {
        Ok(pid) => latlab_core::sys::procs::describe(Path::new("/proc"), pid),
        Err(_) => "another process".into(),
    }
}

/// True while some process holds the lock of `journal`.
pub(super) fn lock_is_held(journal: &Path) -> bool {
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

pub(super) fn read_journal(path: &Path) -> Result<Option<Journal>> {
    // Never waits at open (a FIFO planted at the path), and reads only a regular file.
    let f = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
    {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::Env(format!("{}: {e}", path.display()))),
    };
    if !f.metadata().is_ok_and(|m| m.is_file()) {
        return Err(Error::Env(format!(
            "{}: not a regular file; not a latlab journal",
            path.display()
        )));
    }
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
