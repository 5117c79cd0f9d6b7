//! Memory locking and stack prefaulting, so page faults never land inside a measurement.

/// Locks all current and future pages of the process (`mlockall(MCL_CURRENT|MCL_FUTURE)`).
pub fn mlockall() -> Result<(), std::io::Error> {
    // SAFETY: plain syscall with constant flags.
    let r = unsafe { libc::mlockall(libc::MCL_CURRENT | libc::MCL_FUTURE) };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Touches `bytes` of the calling thread's stack so its pages are present before measuring.
#[inline(never)]
pub fn prefault_stack(bytes: usize) {
    const CHUNK: usize = 4096;
    let buf = [0u8; CHUNK];
    std::hint::black_box(&buf);
    if bytes > CHUNK {
        prefault_stack(bytes - CHUNK);
    }
}
