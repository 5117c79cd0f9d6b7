//! `Dir`: a scratch directory for one test, removed when dropped, with the files hostile
//! tests feed latlab (FIFOs, dangling and planted links, directories where files belong).

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// A scratch directory (under the system's temporary directory, so that a test dropping to
/// `nobody` can be let in), removed with everything in it when dropped.
pub struct Dir {
    tmp: tempfile::TempDir,
}

impl Default for Dir {
    fn default() -> Self {
        Self::new()
    }
}

impl Dir {
    /// A new, empty scratch directory.
    pub fn new() -> Dir {
        Dir {
            tmp: tempfile::Builder::new()
                .prefix("latlab-it-")
                .tempdir()
                .expect("a scratch directory"),
        }
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        self.tmp.path()
    }

    /// A path in the directory (nothing is created).
    pub fn join(&self, name: impl AsRef<Path>) -> PathBuf {
        self.tmp.path().join(name)
    }

    /// Writes `contents` to `name` (parents created) and returns its path.
    pub fn write(&self, name: impl AsRef<Path>, contents: impl AsRef<[u8]>) -> PathBuf {
        let p = self.join(name);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(&p, contents).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        p
    }

    /// Creates the directory `name` and returns its path.
    pub fn mkdir(&self, name: impl AsRef<Path>) -> PathBuf {
        let p = self.join(name);
        std::fs::create_dir_all(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        p
    }

    /// Creates a FIFO `name` (mode 0600) and returns its path.
    pub fn fifo(&self, name: impl AsRef<Path>) -> PathBuf {
        let p = self.join(name);
        let c = CString::new(p.as_os_str().as_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        let r = unsafe { libc::mkfifo(c.as_ptr(), 0o600) };
        assert_eq!(r, 0, "mkfifo {}", p.display());
        p
    }

    /// Creates a symbolic link `name` pointing at `target` and returns the link's path.
    pub fn symlink(&self, target: impl AsRef<Path>, name: impl AsRef<Path>) -> PathBuf {
        let p = self.join(name);
        std::os::unix::fs::symlink(target, &p).unwrap();
        p
    }

    /// Creates a symbolic link `name` that points at nothing and returns its path.
    pub fn dangling_link(&self, name: impl AsRef<Path>) -> PathBuf {
        let gone = self.join(".nothing-here");
        assert!(!gone.exists());
        self.symlink(gone, name)
    }

    /// Opens the directory to every user (mode 0777), for a command run as `nobody`.
    pub fn open_to_all(&self) -> &Self {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(self.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
        self
    }

    /// The text of `name`.
    pub fn read(&self, name: impl AsRef<Path>) -> String {
        let p = self.join(name);
        std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
    }

    /// The names of what the directory holds, sorted.
    pub fn entries(&self) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(self.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }
}
