//! What a file given to an analysis command is, told by its first bytes: a latlab result, a
//! raw sample log or a value file, opened without ever waiting on a FIFO or a device.

use latlab_core::error::{Error, Result};
use latlab_core::result::Run;
use std::io::Read;
use std::path::Path;

/// What a file's first bytes say it is.
enum Kind {
    Json,
    Log,
    Values,
}

/// Bytes looked at to tell a file's kind (and cyclictest's histogram text).
const HEAD: usize = 4096;

/// A file read as what its first bytes say.
pub(crate) enum File {
    /// A latlab JSON result, parsed.
    Run(Box<Run>),
    /// A raw sample log (`--samples`): a reader from its start.
    Log(Box<dyn Read>),
    /// A value file: a reader from its start and its size.
    Values(Box<dyn Read>, Option<u64>),
}

/// Opens a regular file (`io::open_typed`: a FIFO, a device or a directory is refused, never
/// waited on; no size limit, since sample logs are large and each kind bounds its own
/// reading) and reads it as what its first bytes say: a latlab result is parsed, a sample log
/// or a value file is a reader from its start.
pub(crate) fn open(p: &Path) -> Result<File> {
    let name = p.display().to_string();
    // The system's words (a dangling link and a loop of links say different things).
    let mut f = latlab_core::io::open_typed(p, None, false)
        .map_err(|e| Error::Usage(format!("{name}: {e}")))?;
    let meta = f
        .metadata()
        .map_err(|e| Error::Usage(format!("{name}: {e}")))?;
    let mut head = vec![0u8; HEAD];
    let mut n = 0;
    while n < head.len() {
        match f.read(&mut head[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(Error::Usage(format!("{name}: {e}"))),
        }
    }
    head.truncate(n);
    let kind = if head.starts_with(latlab_core::samples::MAGIC) {
        Kind::Log
    } else if head.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{') {
        Kind::Json
    } else {
        refuse_histogram_text(&head, &name)?;
        Kind::Values
    };
    let size = meta.is_file().then_some(meta.len());
    let reader: Box<dyn Read> = Box::new(std::io::Cursor::new(head).chain(f));
    Ok(match kind {
        Kind::Json => File::Run(Box::new(read_json(reader, &name)?)),
        Kind::Log => File::Log(reader),
        Kind::Values => File::Values(reader, size),
    })
}

/// Reads a file that must be a latlab JSON result.
pub(crate) fn read_run(p: &Path) -> Result<Run> {
    match open(p)? {
        File::Run(run) => Ok(*run),
        _ => Err(Error::Usage(format!(
            "{}: not a latlab result (a JSON object)",
            p.display()
        ))),
    }
}

/// A latlab JSON result from a reader (at most `MAX_JSON_BYTES`).
fn read_json(r: impl Read, name: &str) -> Result<Run> {
    let limit = latlab_core::result::MAX_JSON_BYTES;
    let mut bytes = Vec::new();
    r.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Error::Usage(format!("{name}: {e}")))?;
    if bytes.len() as u64 > limit {
        return Err(Error::Usage(format!(
            "{name}: larger than {} MiB: not a latlab result",
            limit >> 20
        )));
    }
    let text = String::from_utf8(bytes)
        .map_err(|_| Error::Usage(format!("{name}: not UTF-8: not a latlab result")))?;
    Run::parse(&text, name)
}

/// Refuses cyclictest's `-h` text output given as a file of values: read as values, its
/// first column is the buckets' numbers (0, 1, 2 ... whatever was measured), so two such files
/// would always compare the same.
fn refuse_histogram_text(head: &[u8], name: &str) -> Result<()> {
    let text = String::from_utf8_lossy(head);
    if text.lines().any(|l| l.trim_end() == "# Histogram") {
        return Err(Error::Usage(format!(
            "{name}: this is cyclictest's histogram output (-h), not one value per line (its first \
             column would be read as the buckets' numbers): run cyclictest with --json=FILE, \
             `latlab runs import --from cyclictest FILE`, and compare the stored runs"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(dir: &Path, name: &str, body: &[u8]) -> std::path::PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, body).unwrap();
        p
    }

    #[test]
    fn a_file_is_what_its_first_bytes_say() {
        let d = std::env::temp_dir().join(format!("latlab-file-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        assert!(matches!(
            open(&file(&d, "v.txt", b"3\n1\n2\n")).unwrap(),
            File::Values(_, Some(6))
        ));
        let mut log = latlab_core::samples::MAGIC.to_vec();
        log.extend_from_slice(&[0; 16]);
        assert!(matches!(
            open(&file(&d, "s.bin", &log)).unwrap(),
            File::Log(_)
        ));
        let e = open(&file(&d, "h.txt", b"# Histogram\n000000 1\n"))
            .err()
            .unwrap();
        assert!(e.to_string().contains("histogram output (-h)"), "{e}");
        let e = open(&file(&d, "r.json", b"  {\"not\": 1}")).err().unwrap();
        assert!(e.to_string().contains("r.json"), "{e}");
        let e = read_run(&file(&d, "w.txt", b"1\n")).err().unwrap();
        assert!(e.to_string().contains("w.txt: not a latlab result"), "{e}");
        let e = open(&d.join("missing")).err().unwrap();
        assert!(e.to_string().contains("missing: No such file"), "{e}");
        std::fs::remove_dir_all(&d).unwrap();
    }
}
