//! The file operations on a tracefs instance that its creation, its teardown and its watch
//! share: reaching it in a way a detached mount does not break, writing an existing control
//! file, and removing an instance directory.

use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// An instance directory, named by its path (`dir`, for messages and journals), and reached
/// through an open descriptor of its parent `instances` directory (`/proc/self/fd/N/<name>`).
/// A lazy unmount of tracefs (`umount -l`) while latlab traces takes the path away but not
/// the instance, which goes on recording; through the descriptor latlab still watches, stops
/// and removes it. Where the descriptor cannot be had, the path is used.
#[derive(Debug, Clone)]
pub struct Reach {
    /// The instance's path as mounted when it was made.
    pub(crate) dir: PathBuf,
    /// The same directory through the descriptor (or `dir` itself).
    via: PathBuf,
    /// The descriptor `via` goes through, open while any clone lives.
    _anchor: Option<Arc<OwnedFd>>,
}

impl Reach {
    /// Reaches `dir` through a descriptor of its parent, opened now.
    pub(crate) fn new(dir: PathBuf) -> Reach {
        let anchor = dir.parent().and_then(|p| {
            std::fs::OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_PATH | libc::O_DIRECTORY)
                .open(p)
                .ok()
        });
        let fd_dir = Path::new("/proc/self/fd");
        match (anchor, dir.file_name()) {
            (Some(f), Some(name)) if fd_dir.is_dir() => {
                let fd = OwnedFd::from(f);
                let via = fd_dir.join(fd.as_raw_fd().to_string()).join(name);
                Reach {
                    dir,
                    via,
                    _anchor: Some(Arc::new(fd)),
                }
            }
            _ => Reach {
                via: dir.clone(),
                dir,
                _anchor: None,
            },
        }
    }

    /// The file `rel` of the instance, reached through the descriptor.
    pub fn at(&self, rel: impl AsRef<Path>) -> PathBuf {
        self.via.join(rel)
    }

    /// The instance directory itself, reached through the descriptor.
    pub(crate) fn via(&self) -> &Path {
        &self.via
    }

    /// The path a message names for `p`, one of [`Reach::at`]'s: under `dir`, as mounted.
    pub(crate) fn shown(&self, p: &Path) -> PathBuf {
        p.strip_prefix(&self.via)
            .map(|r| {
                if r.as_os_str().is_empty() {
                    self.dir.clone()
                } else {
                    self.dir.join(r)
                }
            })
            .unwrap_or_else(|_| p.to_path_buf())
    }
}

/// Writes an existing control file (never creates one).
pub fn poke(p: &Path, v: &str) -> std::io::Result<()> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_instance_is_reached_after_its_path_is_gone() {
        let d = tempfile::tempdir().unwrap();
        let inst = d.path().join("mnt/instances");
        std::fs::create_dir_all(inst.join("latlab-1")).unwrap();
        std::fs::write(inst.join("latlab-1/tracing_on"), "1").unwrap();
        let r = Reach::new(inst.join("latlab-1"));
        assert!(r.via().starts_with("/proc/self/fd"), "{r:?}");
        // The mount point moves away (as a detached mount's path does): the descriptor still
        // reaches the directory, and messages still name it as it was.
        std::fs::rename(d.path().join("mnt"), d.path().join("gone")).unwrap();
        assert!(!r.dir.exists());
        poke(&r.at("tracing_on"), "0").unwrap();
        assert_eq!(
            std::fs::read_to_string(d.path().join("gone/instances/latlab-1/tracing_on")).unwrap(),
            "0"
        );
        assert_eq!(r.shown(&r.at("tracing_on")), r.dir.join("tracing_on"));
        assert_eq!(r.shown(r.via()), r.dir);
        std::fs::remove_file(r.at("tracing_on")).unwrap();
        remove_instance(r.via()).unwrap();
        assert!(!d.path().join("gone/instances/latlab-1").exists());
        // A parent that cannot be opened: the path itself.
        let p = Reach::new(d.path().join("none/latlab-2"));
        assert_eq!(p.via(), p.dir.as_path());
    }
}
