//! JSON output of a `Run` (schema latlab.run/1, docs/json-schema.md) to a file or stdout.

use crate::error::{Error, Result};
use crate::result::Run;
use std::fs::File;
use std::io::Write;
use std::path::Path;

/// Where the JSON goes, opened before the run so a bad path fails before measuring.
pub enum JsonSink {
    /// Standard output.
    Stdout,
    /// A file already created (truncated).
    File(File, String),
}

impl JsonSink {
    /// Opens `path` (`-` for stdout), failing with exit 2 naming `--json` and the path.
    pub fn open(path: &Path) -> Result<JsonSink> {
        if path.as_os_str() == "-" {
            return Ok(JsonSink::Stdout);
        }
        let p = path.display().to_string();
        let f = File::create(path).map_err(|e| Error::Usage(format!("--json {p}: {e}")))?;
        Ok(JsonSink::File(f, p))
    }

    /// Writes the run, pretty-printed, and syncs a file to disk.
    pub fn write(self, run: &Run) -> Result<()> {
        let text = serde_json::to_string_pretty(run)
            .map_err(|e| Error::Env(format!("JSON encoding failed: {e}")))?;
        match self {
            JsonSink::Stdout => {
                let mut o = std::io::stdout().lock();
                writeln!(o, "{text}").map_err(|e| Error::io("stdout", e))
            }
            JsonSink::File(mut f, p) => f
                .write_all(text.as_bytes())
                .and_then(|_| f.write_all(b"\n"))
                .and_then(|_| f.sync_data())
                .map_err(|e| Error::io(p, e)),
        }
    }
}
