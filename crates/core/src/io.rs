//! Small, shared file I/O that every layer may use: opening an input only when it is a regular
//! file (never waiting on a FIFO or reading a device that never ends), reading it with a size
//! limit, and where latlab keeps its restore journal. It imports nothing of latlab's but the
//! error type and `output`'s words for a file's type.

use crate::error::{Error, Result};
use std::fs::{File, FileType, OpenOptions};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

pub(crate) use crate::output::kind_of;

fn refuse(t: &FileType, want: &str) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::InvalidInput,
        format!("{}, not {want}", kind_of(t)),
    )
}

/// Opens `path` for reading when it is a regular file (or, with `block_devices`, a block
/// device), and only then: its type is looked at before it is opened, and again on the open
/// file. The open never waits: O_NONBLOCK, so a FIFO without a writer cannot hold latlab at
/// `open`, and a FIFO, a character device (`/dev/zero`) or a directory is refused. A regular
/// file larger than `limit` bytes is refused before a byte is read. The error says what the
/// path is; callers name the path and the flag.
pub fn open_typed(path: &Path, limit: Option<u64>, block_devices: bool) -> std::io::Result<File> {
    let fits = |t: &FileType| t.is_file() || (block_devices && t.is_block_device());
    let want = if block_devices {
        "a regular file or a block device"
    } else {
        "a regular file"
    };
    let m = std::fs::metadata(path)?;
    if !fits(&m.file_type()) {
        return Err(refuse(&m.file_type(), want));
    }
    let f = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC)
        .open(path)?;
    // The path may have been swapped between the two looks: the open file decides.
    let m = f.metadata()?;
    if !fits(&m.file_type()) {
        return Err(refuse(&m.file_type(), want));
    }
    if let Some(limit) = limit.filter(|_| m.file_type().is_file()) {
        if m.len() > limit {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!(
                    "{} bytes, larger than latlab reads ({limit} bytes)",
                    m.len()
                ),
            ));
        }
    }
    Ok(f)
}

/// [`open_typed`] for a regular file as bad input: exit 2 naming the path.
pub fn open_input(path: &Path, limit: Option<u64>) -> Result<File> {
    open_typed(path, limit, false).map_err(|e| Error::Usage(format!("{}: {e}", path.display())))
}

/// Reads a whole file as UTF-8 text, refusing one larger than `limit` bytes before reading it
/// all, and anything but a regular file (`/dev/zero`, a FIFO, a directory: exit 2 at once,
/// never a wait). `-` is stdin. Errors are bad input (exit 2) naming the file.
pub fn read_text_limited(path: &Path, limit: u64, what: &str) -> Result<String> {
    use std::io::Read;
    let name = path.display().to_string();
    let mut bytes = Vec::new();
    let r = if path.as_os_str() == "-" {
        std::io::stdin()
            .lock()
            .take(limit + 1)
            .read_to_end(&mut bytes)
    } else {
        let f = open_typed(path, Some(limit), false).map_err(|e| match e.kind() {
            std::io::ErrorKind::InvalidInput => Error::Usage(format!("{name}: {e}; not a {what}")),
            _ => Error::Usage(format!("{name}: {e}")),
        })?;
        f.take(limit + 1).read_to_end(&mut bytes)
    };
    r.map_err(|e| Error::Usage(format!("{name}: {e}")))?;
    if bytes.len() as u64 > limit {
        return Err(Error::Usage(format!(
            "{name}: larger than {limit} bytes; not a {what}"
        )));
    }
    String::from_utf8(bytes).map_err(|e| {
        Error::Usage(format!(
            "{name}: not UTF-8 text (byte {}); not a {what}",
            e.utf8_error().valid_up_to()
        ))
    })
}

/// The directory of the journal, where latlab keeps its other crash-recovery state too
/// (tracing instances, SysV set records): `.` when the journal is a bare file name.
pub fn state_dir() -> PathBuf {
    let j = journal_path();
    match j.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// The machine-wide directory of latlab's settings lock and journal: one per machine, whatever
/// the user or state directory, and per boot (`/run` is emptied at boot, exactly when the
/// kernel's settings go back to their boot values, so a journal never outlives what it
/// describes).
pub const MACHINE_DIR: &str = "/run/latlab";

/// Where the journal lives: `$LATLAB_JOURNAL` (tests, and a user who wants another place),
/// else `/run/latlab/restore.json` ([`MACHINE_DIR`], created as root), else — for a user who
/// may not create it and so cannot change system settings anyway — their own
/// `$XDG_STATE_HOME/latlab/restore.json`.
pub fn journal_path() -> PathBuf {
    if let Some(p) = std::env::var_os("LATLAB_JOURNAL").filter(|v| !v.is_empty()) {
        return PathBuf::from(p);
    }
    let machine = Path::new(MACHINE_DIR);
    if machine_dir_usable(machine) {
        return machine.join("restore.json");
    }
    user_state_dir().join("restore.json")
}

/// The machine-wide settings lock, `/run/latlab/restore.lock`, where this process may use
/// [`MACHINE_DIR`] (root); None for a user who may not (and so cannot change system settings).
/// Every latlab that changes a system setting holds it, wherever its journal is.
pub fn machine_lock_path() -> Option<PathBuf> {
    let machine = Path::new(MACHINE_DIR);
    machine_dir_usable(machine).then(|| machine.join("restore.lock"))
}

/// Refuses a `$LATLAB_JOURNAL` that cannot be a journal (exit 2): anything but a regular file
/// where it exists (a directory, a FIFO, a link, dangling or not).
pub fn check_journal_env() -> crate::error::Result<()> {
    let Some(p) = std::env::var_os("LATLAB_JOURNAL").filter(|v| !v.is_empty()) else {
        return Ok(());
    };
    let path = PathBuf::from(&p);
    let bad = |why: &str| {
        Err(crate::error::Error::Usage(format!(
            "LATLAB_JOURNAL {}: {why}",
            crate::output::printable(&path.display().to_string())
        )))
    };
    match std::fs::symlink_metadata(&path) {
        Ok(m) if m.file_type().is_file() => Ok(()),
        Ok(_) => {
            bad("not a regular file (a directory, FIFO or link cannot be the settings journal)")
        }
        // Missing: made where it is first needed (its directory too, as the default's is).
        Err(_) => Ok(()),
    }
}

/// Whether `dir` can hold the machine-wide state: a real directory owned by root that this
/// process may write (made, 0755, when missing and this process is root).
fn machine_dir_usable(dir: &Path) -> bool {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt};
    if std::fs::symlink_metadata(dir).is_err() {
        let _ = std::fs::DirBuilder::new().mode(0o755).create(dir);
    }
    match std::fs::symlink_metadata(dir) {
        Ok(m) if m.is_dir() && m.uid() == 0 => {
            // Writable by this process: root (the owner) only, as the mode says. /proc/self
            // belongs to the process's effective user.
            std::fs::metadata("/proc/self").is_ok_and(|me| me.uid() == m.uid())
        }
        _ => false,
    }
}

/// The user's own state directory, `$XDG_STATE_HOME/latlab` (`~/.local/state/latlab`): where
/// latlab kept its journal before it became machine-wide, and a non-root user's now.
pub fn user_state_dir() -> PathBuf {
    let base = std::env::var_os("XDG_STATE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/state")))
        .unwrap_or_else(|| PathBuf::from("."));
    base.join("latlab")
}

/// Durable state a feature can leave behind when latlab is killed (a tracing instance, a SysV
/// set, a changed setting, a mount), and how `latlab restore` puts it back. A feature with such
/// state exports one of these; the table of measurements lists them (`crate::table::RESTORERS`)
/// and `latlab restore` runs them in that order, knowing nothing else about any of them.
#[derive(Debug, Clone, Copy)]
pub struct Restorer {
    /// What it puts back, for messages (`tracing instances`).
    pub name: &'static str,
    /// Puts back what dead latlab processes left, given the state directory: one line per
    /// thing done, none when nothing of its kind was left.
    pub run: fn(&Path) -> crate::error::Result<Vec<String>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_regular_files_are_read_and_never_waited_on() {
        let d = tempfile::tempdir().unwrap();
        let fifo = d.path().join("fifo");
        assert!(std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success());
        for (p, says) in [
            (fifo.as_path(), "a FIFO"),
            (Path::new("/dev/zero"), "a character device"),
            (d.path(), "a directory"),
        ] {
            let e = read_text_limited(p, 100, "plan").unwrap_err().to_string();
            assert!(
                e.contains(says) && e.contains(&p.display().to_string()),
                "{e}"
            );
        }
        let big = d.path().join("big");
        std::fs::write(&big, vec![b'x'; 101]).unwrap();
        let e = read_text_limited(&big, 100, "plan")
            .unwrap_err()
            .to_string();
        assert!(e.contains("101 bytes"), "{e}");
        std::fs::write(&big, b"ok").unwrap();
        assert_eq!(read_text_limited(&big, 100, "plan").unwrap(), "ok");
        let dangling = d.path().join("link");
        std::os::unix::fs::symlink(d.path().join("gone"), &dangling).unwrap();
        assert!(read_text_limited(&dangling, 100, "plan").is_err());
    }
}
