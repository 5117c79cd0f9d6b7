//! Waiting on several descriptors at once (poll(2)): the monitor's endpoint watches its
//! listening socket and every connection still sending its request from one thread, without
//! a polling sleep.

use std::time::Duration;

pub use libc::{pollfd, POLLERR, POLLHUP, POLLIN, POLLNVAL, POLLOUT};

/// A `pollfd` asking for `events` on `fd`.
pub fn watch(fd: std::os::fd::RawFd, events: i16) -> pollfd {
    pollfd {
        fd,
        events,
        revents: 0,
    }
}

/// Waits until one of `fds` is ready or `timeout` passes (EINTR counts as nothing ready);
/// returns how many are ready, their `revents` set.
pub fn poll(fds: &mut [pollfd], timeout: Duration) -> std::io::Result<usize> {
    let ms = timeout.as_millis().min(i32::MAX as u128) as libc::c_int;
    // SAFETY: `fds` is a valid, exclusively borrowed array of `fds.len()` pollfd structs.
    let r = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
    if r < 0 {
        let e = std::io::Error::last_os_error();
        if e.kind() == std::io::ErrorKind::Interrupted {
            return Ok(0);
        }
        return Err(e);
    }
    Ok(r as usize)
}
