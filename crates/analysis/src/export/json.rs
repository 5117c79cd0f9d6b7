//! JSON output of a `Run` (schema latlab.run/1, docs/json-schema.md) to a file or stdout.

use latlab_core::error::{Error, Result};
use latlab_core::result::Run;
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
        latlab_core::output::check_writable(path)
            .map_err(|e| Error::Usage(format!("--json {}: {e}", path.display())))?;
        Ok(JsonSink::File(path.to_path_buf()))
    }

    /// True when the JSON goes to stdout (the text report then goes to stderr).
    pub fn is_stdout(&self) -> bool {
        matches!(self, JsonSink::Stdout)
    }

    /// Writes the run (see [`JsonSink::text`]): a file atomically (temp file + rename), stdout
    /// through a writer for which a closed pipe is not an error.
    pub fn write(&self, run: &Run) -> Result<()> {
        let text = Self::text(run)?;
        match self {
            JsonSink::Stdout => {
                latlab_core::output::stdout(&text).map_err(|e| Error::io("stdout", e))
            }
            JsonSink::File(p) => latlab_core::output::write_atomic(p, text.as_bytes())
                .map_err(|e| Error::io(p.display().to_string(), e)),
        }
    }

    /// The run as written: pretty-printed to the third level (the run's fields, each series'
    /// fields, the trace's fields and one line per spike, process or bucket list), everything
    /// deeper on one line, and a final newline. Indenting every level made a `sched --all`
    /// result twice its size (76 MB where this is 37) and its writing a third of the run's CPU.
    pub fn text(run: &Run) -> Result<String> {
        let mut out = Vec::with_capacity(1 << 16);
        let mut ser = serde_json::Serializer::with_formatter(&mut out, Layered::new(PRETTY_LEVELS));
        serde::Serialize::serialize(run, &mut ser)
            .map_err(|e| Error::Env(format!("JSON encoding failed: {e}")))?;
        out.push(b'\n');
        String::from_utf8(out).map_err(|e| Error::Env(format!("JSON encoding failed: {e}")))
    }
}

/// Levels of nesting [`JsonSink::text`] writes one member per line.
const PRETTY_LEVELS: usize = 3;

/// serde_json's pretty layout (two-space indent) down to `levels` of nesting, its compact one
/// below.
struct Layered {
    depth: usize,
    levels: usize,
    has_value: bool,
}

impl Layered {
    fn new(levels: usize) -> Layered {
        Layered {
            depth: 0,
            levels,
            has_value: false,
        }
    }

    fn open<W: ?Sized + std::io::Write>(&mut self, w: &mut W, c: &[u8]) -> std::io::Result<()> {
        self.depth += 1;
        self.has_value = false;
        w.write_all(c)
    }

    fn close<W: ?Sized + std::io::Write>(&mut self, w: &mut W, c: &[u8]) -> std::io::Result<()> {
        let pretty = self.depth <= self.levels;
        self.depth -= 1;
        if pretty && self.has_value {
            w.write_all(b"\n")?;
            indent(w, self.depth)?;
        }
        w.write_all(c)
    }

    fn member<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        if self.depth <= self.levels {
            w.write_all(if first { b"\n" } else { b",\n" })?;
            indent(w, self.depth)
        } else if first {
            Ok(())
        } else {
            w.write_all(b",")
        }
    }
}

fn indent<W: ?Sized + std::io::Write>(w: &mut W, n: usize) -> std::io::Result<()> {
    for _ in 0..n {
        w.write_all(b"  ")?;
    }
    Ok(())
}

impl serde_json::ser::Formatter for Layered {
    fn begin_array<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.open(w, b"[")
    }

    fn end_array<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.close(w, b"]")
    }

    fn begin_array_value<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        self.member(w, first)
    }

    fn end_array_value<W: ?Sized + std::io::Write>(&mut self, _w: &mut W) -> std::io::Result<()> {
        self.has_value = true;
        Ok(())
    }

    fn begin_object<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.open(w, b"{")
    }

    fn end_object<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.close(w, b"}")
    }

    fn begin_object_key<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        self.member(w, first)
    }

    fn begin_object_value<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        w.write_all(if self.depth <= self.levels {
            b": "
        } else {
            b":"
        })
    }

    fn end_object_value<W: ?Sized + std::io::Write>(&mut self, _w: &mut W) -> std::io::Result<()> {
        self.has_value = true;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layered(v: &serde_json::Value, levels: usize) -> String {
        let mut out = Vec::new();
        let mut ser = serde_json::Serializer::with_formatter(&mut out, Layered::new(levels));
        serde::Serialize::serialize(v, &mut ser).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn pretty_to_the_chosen_level_and_compact_below() {
        let v = serde_json::json!({
            "a": 1,
            "empty": [],
            "none": {},
            "spikes": [{"c": [{"k": "x", "n": 2}], "d": []}, {"c": []}],
        });
        // Every level pretty: exactly serde_json's pretty printer.
        assert_eq!(layered(&v, 99), serde_json::to_string_pretty(&v).unwrap());
        // None: exactly its compact one.
        assert_eq!(layered(&v, 0), serde_json::to_string(&v).unwrap());
        assert_eq!(
            layered(&v, 2),
            "{\n  \"a\": 1,\n  \"empty\": [],\n  \"none\": {},\n  \"spikes\": [\n    {\"c\":[{\"k\":\"x\",\"n\":2}],\"d\":[]},\n    {\"c\":[]}\n  ]\n}"
        );
        // Whatever the layout, the same value.
        for levels in 0..5 {
            let back: serde_json::Value = serde_json::from_str(&layered(&v, levels)).unwrap();
            assert_eq!(back, v);
        }
    }
}
