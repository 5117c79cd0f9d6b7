//! Small, shared file I/O that every layer may use: reading an input with a size limit (so
//! `/dev/zero` or a huge file is refused at once, naming it) and where latlab keeps its restore
//! journal. It imports nothing of latlab's but the error type.

use crate::error::{Error, Result};
use std::path::{Path, PathBuf};

/// Reads a whole file as UTF-8 text, refusing one larger than `limit` bytes before reading it
/// all (`/dev/zero` fails at once). `-` is stdin. Errors are bad input (exit 2) naming the file.
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
        std::fs::File::open(path).and_then(|f| f.take(limit + 1).read_to_end(&mut bytes))
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
