//! Socket options the TCP measurement sets, on raw descriptors.

/// Sets an integer socket option.
pub fn set_int(fd: i32, level: libc::c_int, opt: libc::c_int, v: i32) -> std::io::Result<()> {
    // SAFETY: passing a valid int and its size.
    let r = unsafe {
        libc::setsockopt(
            fd,
            level,
            opt,
            (&v as *const i32).cast(),
            std::mem::size_of::<i32>() as libc::socklen_t,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Reads an integer socket option.
pub fn get_int(fd: i32, level: libc::c_int, opt: libc::c_int) -> Option<i32> {
    let mut v = 0i32;
    let mut len = std::mem::size_of::<i32>() as libc::socklen_t;
    // SAFETY: valid out-pointers of the right size.
    let r = unsafe { libc::getsockopt(fd, level, opt, (&mut v as *mut i32).cast(), &mut len) };
    (r == 0).then_some(v)
}
