//! Where the kernel's file interfaces are mounted: procfs, sysfs and (when latlab uses it)
//! tracefs. Every reader takes a `Roots` instead of a hard-coded "/sys", so tests can build a
//! fake tree in a temporary directory and point the code at it (below's custom procfs root is
//! the model). Knob *writes* stay confined to the real /sys and /proc/sys (crate::settings).

use std::path::{Path, PathBuf};

/// Mount points of procfs, sysfs and tracefs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Roots {
    /// procfs mount point, normally `/proc`.
    pub proc_root: PathBuf,
    /// sysfs mount point, normally `/sys`.
    pub sys_root: PathBuf,
    /// tracefs mount point, normally `/sys/kernel/tracing`.
    pub trace_root: PathBuf,
}

impl Default for Roots {
    fn default() -> Self {
        Roots::host()
    }
}

impl Roots {
    /// This machine's real mount points.
    pub fn host() -> Roots {
        Roots {
            proc_root: PathBuf::from("/proc"),
            sys_root: PathBuf::from("/sys"),
            trace_root: PathBuf::from("/sys/kernel/tracing"),
        }
    }

    /// A fake tree under `dir` (`dir/proc`, `dir/sys`, `dir/sys/kernel/tracing`), for tests.
    pub fn under(dir: &Path) -> Roots {
        Roots {
            proc_root: dir.join("proc"),
            sys_root: dir.join("sys"),
            trace_root: dir.join("sys/kernel/tracing"),
        }
    }

    /// `rel` under sysfs.
    pub fn sys_path(&self, rel: &str) -> PathBuf {
        self.sys_root.join(rel)
    }

    /// `rel` under procfs.
    pub fn proc_path(&self, rel: &str) -> PathBuf {
        self.proc_root.join(rel)
    }

    fn read(base: &Path, rel: &str) -> Option<String> {
        std::fs::read_to_string(base.join(rel))
            .ok()
            .map(|s| s.trim().to_string())
    }

    /// The trimmed content of `rel` under procfs, if readable.
    pub fn proc(&self, rel: &str) -> Option<String> {
        Self::read(&self.proc_root, rel)
    }

    /// The trimmed content of `rel` under sysfs, if readable.
    pub fn sys(&self, rel: &str) -> Option<String> {
        Self::read(&self.sys_root, rel)
    }
}
