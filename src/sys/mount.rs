//! Mounting tracefs (for `--trace`) and debugfs (for `cyclic --hrtick`) on a machine that has
//! not mounted them, in a mount namespace of latlab's own where it may have one.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

fn cpath(p: &Path) -> std::io::Result<CString> {
    CString::new(p.as_os_str().as_bytes())
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidInput, "NUL in path"))
}

/// `mount -t tracefs nodev <target>`.
pub fn mount_tracefs(target: &Path) -> std::io::Result<()> {
    mount_nodev(target, c"tracefs")
}

/// `mount -t debugfs nodev <target>`.
pub fn mount_debugfs(target: &Path) -> std::io::Result<()> {
    mount_nodev(target, c"debugfs")
}

fn mount_nodev(target: &Path, fs: &std::ffi::CStr) -> std::io::Result<()> {
    let t = cpath(target)?;
    let src = c"nodev";
    // SAFETY: all pointers are valid NUL-terminated strings that outlive the call; data is null.
    let r = unsafe { libc::mount(src.as_ptr(), t.as_ptr(), fs.as_ptr(), 0, std::ptr::null()) };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Moves this process into a mount namespace of its own whose mounts follow the host's but
/// never propagate back (`unshare --mount --propagation slave`), so a tracefs or debugfs latlab
/// mounts is seen by nobody else and goes with its last process. Must run before any thread
/// starts (the kernel refuses a multi-threaded caller). Needs CAP_SYS_ADMIN.
pub fn private_mounts() -> std::io::Result<()> {
    // SAFETY: plain system calls with constant arguments; no memory is shared with the kernel
    // beyond the static strings.
    unsafe {
        if libc::unshare(libc::CLONE_NEWNS) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        let root = c"/";
        if libc::mount(
            std::ptr::null(),
            root.as_ptr(),
            std::ptr::null(),
            libc::MS_REC | libc::MS_SLAVE,
            std::ptr::null(),
        ) != 0
        {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// The kernel's own file system `p` lies on, by name, when it is one whose files are the
/// kernel's settings and interfaces rather than data (proc, sysfs, tracefs, debugfs, cgroup,
/// configfs, securityfs, bpf, efivarfs, pstore); None for any other (or when `p` cannot be
/// read).
pub fn kernel_fs(p: &Path) -> Option<&'static str> {
    let c = cpath(p).ok()?;
    // SAFETY: `c` is a valid NUL-terminated path; statfs is plain data the kernel fills.
    let t = unsafe {
        let mut s: libc::statfs = std::mem::zeroed();
        if libc::statfs(c.as_ptr(), &mut s) != 0 {
            return None;
        }
        s.f_type as u64
    };
    const KINDS: [(u64, &str); 11] = [
        (0x9fa0, "proc"),
        (0x6265_6572, "sysfs"),
        (0x7472_6163, "tracefs"),
        (0x6462_6720, "debugfs"),
        (0x0027_e0eb, "cgroup"),
        (0x6367_7270, "cgroup2"),
        (0x6265_6570, "configfs"),
        (0x7363_6673, "securityfs"),
        (0xcafe_4a11, "bpf"),
        (0xde5e_81e4, "efivarfs"),
        (0x6165_676c, "pstore"),
    ];
    KINDS.iter().find(|k| k.0 == t).map(|k| k.1)
}
