//! Where results leave the process: text to a stdout that may be closed (EPIPE is not an
//! error), notes to stderr that never panic, and files written atomically without following a
//! symlink someone planted.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// Writes `text` to stdout and flushes. A reader that went away (EPIPE, e.g. `| head -1` or
/// `| true`) is not an error: the result was already saved.
pub fn stdout(text: &str) -> std::io::Result<()> {
    to(&mut std::io::stdout().lock(), text)
}

/// Writes `text` to `o` (stdout, or a test's writer) and flushes; a reader that went away
/// (EPIPE) is not an error.
pub fn to(o: &mut dyn Write, text: &str) -> std::io::Result<()> {
    match o.write_all(text.as_bytes()).and_then(|_| o.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => r,
    }
}

/// Writes `text` to stderr, ignoring every error (a closed stderr must not stop a run).
pub fn stderr(text: &str) {
    let mut e = std::io::stderr().lock();
    let _ = e.write_all(text.as_bytes());
    let _ = e.flush();
}

/// Prints a line to stderr through [`stderr`] (never panics, unlike `eprintln!`).
#[macro_export]
macro_rules! note {
    ($($arg:tt)*) => {
        $crate::output::stderr(&format!("{}\n", format_args!($($arg)*)))
    };
}

/// The directory a file at `path` lives in (`.` for a bare name).
fn parent_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Checks, before any time is spent measuring, that a file can later be written at `path`
/// atomically: the directory exists and takes a new file, and `path` is not a directory.
pub fn check_writable(path: &Path) -> std::io::Result<()> {
    if path.is_dir() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::IsADirectory,
            "is a directory",
        ));
    }
    if let Ok(m) = std::fs::symlink_metadata(path) {
        let t = m.file_type();
        if !t.is_file() && !t.is_symlink() {
            // A device, FIFO or socket is written in place: it must open for writing. A FIFO
            // is not opened here (that would block until a reader comes).
            if !t.is_fifo() {
                OpenOptions::new()
                    .write(true)
                    .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
                    .open(path)?;
            }
            return Ok(());
        }
    }
    let dir = parent_of(path);
    if !dir.is_dir() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            format!("no directory {}", dir.display()),
        ));
    }
    let t = tempfile::Builder::new()
        .prefix(".latlab-")
        .tempfile_in(&dir)
        .map_err(|e| {
            std::io::Error::new(
                e.kind(),
                format!("cannot create a file in {}: {}", dir.display(), e.kind()),
            )
        })?;
    drop(t);
    Ok(())
}

/// Writes `bytes` to `path` atomically: a new file (O_EXCL, so never through a planted
/// symlink) in the same directory, synced, then renamed over `path` (a symlink at `path` is
/// replaced, not followed). Readers see the old content or the new, never a truncated file.
///
/// A path that names something other than a regular file or a symlink (`/dev/null`, a FIFO,
/// a terminal) is written in place, never replaced: renaming over `/dev/full` as root would
/// turn a device node into a file.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if let Ok(m) = std::fs::symlink_metadata(path) {
        let t = m.file_type();
        if !t.is_file() && !t.is_symlink() {
            if t.is_dir() {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::IsADirectory,
                    "is a directory",
                ));
            }
            let mut f = OpenOptions::new()
                .write(true)
                .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
                .open(path)?;
            return f.write_all(bytes).and_then(|_| f.flush());
        }
    }
    let mut t = tempfile::Builder::new()
        .prefix(".latlab-")
        .tempfile_in(parent_of(path))?;
    t.write_all(bytes)?;
    t.as_file().sync_data()?;
    use std::os::unix::fs::PermissionsExt;
    t.as_file()
        .set_permissions(std::fs::Permissions::from_mode(0o644))?;
    t.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// Creates (or truncates) `path` for writing without following a symlink in its last
/// component (O_NOFOLLOW): for logs that must be readable at their final path while written.
pub fn create_nofollow(path: &Path) -> std::io::Result<File> {
    OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .mode(0o644)
        .open(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_write_replaces_a_planted_symlink_instead_of_following_it() {
        let d = tempfile::tempdir().unwrap();
        let victim = d.path().join("victim");
        std::fs::write(&victim, b"keep").unwrap();
        let out = d.path().join("out.json");
        std::os::unix::fs::symlink(&victim, &out).unwrap();
        write_atomic(&out, b"new").unwrap();
        assert_eq!(std::fs::read(&victim).unwrap(), b"keep");
        assert_eq!(std::fs::read(&out).unwrap(), b"new");
        assert!(!std::fs::symlink_metadata(&out).unwrap().is_symlink());
    }

    #[test]
    fn device_nodes_are_written_in_place_never_replaced() {
        let null = Path::new("/dev/null");
        check_writable(null).unwrap();
        write_atomic(null, b"x").unwrap();
        assert!(std::fs::metadata(null)
            .unwrap()
            .file_type()
            .is_char_device());
    }

    #[test]
    fn nofollow_create_refuses_a_symlink() {
        let d = tempfile::tempdir().unwrap();
        let victim = d.path().join("victim");
        std::fs::write(&victim, b"keep").unwrap();
        let out = d.path().join("log");
        std::os::unix::fs::symlink(&victim, &out).unwrap();
        assert!(create_nofollow(&out).is_err());
        assert_eq!(std::fs::read(&victim).unwrap(), b"keep");
    }

    #[test]
    fn check_writable_names_directories_and_missing_parents() {
        let d = tempfile::tempdir().unwrap();
        assert!(check_writable(d.path()).is_err());
        assert!(check_writable(&d.path().join("no/such/x.json")).is_err());
        assert!(check_writable(&d.path().join("x.json")).is_ok());
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 0);
    }
}
