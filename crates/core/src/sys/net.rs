//! Socket calls on raw descriptors: options the TCP measurement sets, and what the store's
//! PostgreSQL time limit needs (which descriptor is a connected socket; shutting one down).

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

/// Whether `fd` is a socket with a peer (a connected one).
pub(crate) fn is_connected_socket(fd: i32) -> bool {
    // SAFETY: fstat and getpeername only fill the buffers given; a descriptor closed since it
    // was named makes them fail, which reads as "not a connected socket".
    unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        if libc::fstat(fd, &mut st) != 0 || st.st_mode & libc::S_IFMT != libc::S_IFSOCK {
            return false;
        }
        let mut addr: libc::sockaddr_storage = std::mem::zeroed();
        let mut len = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
        libc::getpeername(
            fd,
            (&mut addr as *mut libc::sockaddr_storage).cast(),
            &mut len,
        ) == 0
    }
}

/// Shuts a socket down both ways: a call blocked reading it returns, the descriptor stays open.
/// The caller must own `fd` (a descriptor reused by another file would be shut instead).
pub(crate) fn shutdown(fd: i32) {
    // SAFETY: shutdown changes no memory; on a descriptor that is not a socket it fails.
    unsafe { libc::shutdown(fd, libc::SHUT_RDWR) };
}
