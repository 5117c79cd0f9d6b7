//! Where the kernel's file interfaces are mounted: procfs, sysfs and (when latlab uses it)
//! tracefs. Every reader takes a `Roots` instead of a hard-coded "/sys", so tests can build a
//! fake tree in a temporary directory and point the code at it (below's custom procfs root is
//! the model). Knob *writes* stay confined to the real /sys and /proc/sys (latlab_lab::settings).

use std::path::{Path, PathBuf};

/// Mount points of procfs, sysfs and tracefs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Roots {
    /// procfs mount point, normally `/proc`.
    pub proc_root: PathBuf,
    /// sysfs mount point, normally `/sys`.
    pub sys_root: PathBuf,
    /// tracefs mount point, normally `/sys/kernel/tracing`.
    pub(crate) trace_root: PathBuf,
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

    /// `rel` under `/boot` beside procfs (`dir/boot` of a fake tree under `dir`), where
    /// distributions keep each kernel's `config-RELEASE`.
    pub fn boot_path(&self, rel: &str) -> PathBuf {
        self.proc_root
            .parent()
            .unwrap_or(Path::new("/"))
            .join("boot")
            .join(rel)
    }

    fn read(base: &Path, rel: &str) -> Option<String> {
        std::fs::read_to_string(base.join(rel))
            .ok()
            .map(|s| s.trim().to_string())
    }

    /// The first processor's block of procfs's `cpuinfo` (up to its blank line), if readable.
    /// The kernel formats the file a processor at a time as it is read, and each block may cost
    /// a cross-CPU call (the clock speed): reading one block stays cheap on a machine of
    /// hundreds of CPUs, where the whole file takes milliseconds.
    pub fn cpuinfo_first(&self) -> Option<String> {
        use std::io::Read;
        let mut f = std::fs::File::open(self.proc_path("cpuinfo")).ok()?;
        let mut text = Vec::with_capacity(4096);
        let mut buf = [0u8; 4096];
        loop {
            let n = match f.read(&mut buf) {
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => return None,
            };
            let from = text.len().saturating_sub(1);
            text.extend_from_slice(&buf[..n]);
            if let Some(i) = memchr::memmem::find(&text[from..], b"\n\n") {
                text.truncate(from + i + 1);
                break;
            }
            if n == 0 || text.len() >= 1 << 16 {
                break;
            }
        }
        Some(String::from_utf8_lossy(&text).into_owned())
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

#[cfg(test)]
mod tests {
    #[test]
    fn cpuinfo_first_is_the_first_processor_only() {
        let d = tempfile::tempdir().unwrap();
        let r = super::Roots::under(d.path());
        std::fs::create_dir_all(&r.proc_root).unwrap();
        assert_eq!(r.cpuinfo_first(), None);
        let block = |i: usize| format!("processor\t: {i}\nflags\t\t: fpu{}\n\n", " x".repeat(3000));
        let all: String = (0..4).map(block).collect();
        std::fs::write(r.proc_path("cpuinfo"), &all).unwrap();
        let first = r.cpuinfo_first().unwrap();
        assert_eq!(first, block(0).trim_end_matches('\n').to_string() + "\n");
        // No blank line at all (one processor, or a kernel that ends the file without one).
        std::fs::write(r.proc_path("cpuinfo"), "processor\t: 0\nflags\t: fpu").unwrap();
        assert_eq!(r.cpuinfo_first().unwrap(), "processor\t: 0\nflags\t: fpu");
    }
}
