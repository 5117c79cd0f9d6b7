//! JSON output of a `Run` (schema latlab.run/1, docs/json-schema.md) to a file or stdout.

use crate::error::{Error, Result};
use crate::result::Run;
use std::path::{Path, PathBuf};

/// Where the JSON goes, checked before the run so a bad path fails before measuring.
#[derive(Debug, Clone)]
pub enum JsonSink {
    /// Standard output.
    Stdout,
    /// A file, written atomically when the run ends (a failed run leaves the old one intact).
    File(PathBuf),
}

impl JsonSink {
    /// Checks `path` (`-` for stdout), failing with exit 2 naming `--json` and the path.
    pub fn open(path: &Path) -> Result<JsonSink> {
        if path.as_os_str() == "-" {
            return Ok(JsonSink::Stdout);
        }
        crate::output::check_writable(path)
            .map_err(|e| Error::Usage(format!("--json {}: {e}", path.display())))?;
        Ok(JsonSink::File(path.to_path_buf()))
    }

    /// True when the JSON goes to stdout (the text report then goes to stderr).
    pub fn is_stdout(&self) -> bool {
        matches!(self, JsonSink::Stdout)
    }

    /// Writes the run, pretty-printed: a file atomically (temp file + rename), stdout through
    /// a writer for which a closed pipe is not an error.
    pub fn write(&self, run: &Run) -> Result<()> {
        let text = Self::text(run)?;
        match self {
            JsonSink::Stdout => crate::output::stdout(&text).map_err(|e| Error::io("stdout", e)),
            JsonSink::File(p) => crate::output::write_atomic(p, text.as_bytes())
                .map_err(|e| Error::io(p.display().to_string(), e)),
        }
    }

    /// The run as written: pretty-printed JSON and a final newline.
    pub fn text(run: &Run) -> Result<String> {
        let mut text = serde_json::to_string_pretty(run)
            .map_err(|e| Error::Env(format!("JSON encoding failed: {e}")))?;
        text.push('\n');
        Ok(text)
    }
}
