//! Mounting tracefs (for `--trace`) and debugfs (for `cyclic --hrtick`) on a machine that has
//! not mounted them, in a mount namespace of latlab's own where it may have one.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

fn cpath(p: &Path) -> std::io::Result<CString> {
    CString::new(p.as_os_str().as_bytes())
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidInput, "NUL in path"))
}

/// Whether `p` lies on a tracefs filesystem (statfs(2) says `TRACEFS_MAGIC`), as a directory
/// `latlab restore` acts on must: a journal naming anything else is not followed.
pub fn on_tracefs(p: &Path) -> bool {
    const TRACEFS_MAGIC: i64 = 0x7472_6163;
    let Ok(c) = cpath(p) else {
        return false;
    };
    // SAFETY: statfs fills the zeroed struct it is given; the path is NUL-terminated.
    unsafe {
        let mut s: libc::statfs = std::mem::zeroed();
        libc::statfs(c.as_ptr(), &mut s) == 0 && s.f_type as i64 == TRACEFS_MAGIC
    }
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

/// Commits every file system's dirty data to its disk (`sync(2)`): before a kexec, which
/// would drop what the page cache still holds.
pub fn sync_all() {
    // SAFETY: sync takes no arguments and cannot fail.
    unsafe { libc::sync() }
}
