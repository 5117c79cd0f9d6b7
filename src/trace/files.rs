//! The two file operations on a tracefs instance that its creation and its teardown share:
//! writing an existing control file, and removing an instance directory.

use std::path::Path;

/// Writes an existing control file (never creates one).
pub(super) fn poke(p: &Path, v: &str) -> std::io::Result<()> {
    use std::io::Write;
    std::fs::OpenOptions::new()
        .write(true)
        .open(p)?
        .write_all(v.as_bytes())
}

/// Removes an instance directory (tracefs refuses while a reader holds a pipe open: retried
/// briefly). A missing directory is fine, and so is one another process is removing at that
/// moment (tracefs answers ENODEV).
pub(super) fn remove_instance(dir: &Path) -> std::io::Result<()> {
    for _ in 0..50 {
        match std::fs::remove_dir(dir) {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) if e.raw_os_error() == Some(libc::ENODEV) => return Ok(()),
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
                std::thread::sleep(std::time::Duration::from_millis(20))
            }
            Err(e) => return Err(e),
        }
    }
    std::fs::remove_dir(dir)
}
