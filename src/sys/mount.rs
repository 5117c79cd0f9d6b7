//! Mounting and unmounting tracefs (for `--trace`) and debugfs (for `cyclic --hrtick`) on a
//! machine that has not mounted them.

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

/// `umount <target>`.
pub fn umount(target: &Path) -> std::io::Result<()> {
    let t = cpath(target)?;
    // SAFETY: t is a valid NUL-terminated string that outlives the call.
    let r = unsafe { libc::umount2(t.as_ptr(), 0) };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}
