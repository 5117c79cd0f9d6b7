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

/// Where the journal lives: `$LATLAB_JOURNAL`, else `$XDG_STATE_HOME/latlab/restore.json`
/// (`~/.local/state/...`).
pub fn journal_path() -> PathBuf {
    if let Some(p) = std::env::var_os("LATLAB_JOURNAL").filter(|v| !v.is_empty()) {
        return PathBuf::from(p);
    }
    let base = std::env::var_os("XDG_STATE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/state")))
        .unwrap_or_else(|| PathBuf::from("."));
    base.join("latlab/restore.json")
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
