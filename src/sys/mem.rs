//! Memory locking and stack prefaulting, so page faults never land inside a measurement.

/// Stack size for latlab's helper threads (signals, privilege probe, watchdog, live view,
/// sample writer). `mlockall(MCL_CURRENT|MCL_FUTURE)` makes every page of every thread stack
/// present, zero-filled and locked, and std's default is 2 MiB: two idle helpers with default
/// stacks cost more start-up CPU than locking the whole binary. None of them recurses deeply.
pub const HELPER_STACK: usize = 256 * 1024;

/// Stack size for a thread that makes one system call and ends (the privilege probe).
pub const PROBE_STACK: usize = 64 * 1024;

/// Keeps the memory the process frees for its next allocations instead of handing it back to
/// the kernel and faulting zeroed pages in again (glibc trims the heap's top past 128 KiB and
/// maps each block over 128 KiB on its own). A replay that allocates and frees per attributed
/// delay spent a tenth of its CPU clearing pages; a measurement under `mlockall` keeps what it
/// locked. Blocks up to 32 MiB come from the heap; the heap is trimmed past 256 MiB free.
pub fn keep_freed_memory() {
    #[cfg(target_env = "gnu")]
    // SAFETY: mallopt only sets the allocator's parameters (called before threads start).
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 32 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 256 << 20);
    }
}

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
