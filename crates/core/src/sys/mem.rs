//! Memory locking and stack prefaulting, so page faults never land inside a measurement.

/// Stack size for latlab's helper threads (signals, watchdog, live view, sample writer, store
/// opener, load report readers). `mlockall(MCL_CURRENT|MCL_FUTURE)` makes every page of every thread stack
/// present, zero-filled and locked, and std's default is 2 MiB: two idle helpers with default
/// stacks cost more start-up CPU than locking the whole binary. None of them recurses deeply.
pub const HELPER_STACK: usize = 256 * 1024;

/// Stack size for a thread that makes one system call and ends (the privilege probe).
pub const PROBE_STACK: usize = 64 * 1024;

/// Makes every thread allocate from the one main malloc arena. glibc gives each new thread
/// that allocates an arena of its own (a heap of at least 132 KiB); under `mlockall` every
/// page of each is made present and locked, which was a measurable part of a short run's
/// fixed cost, and no latlab thread allocates on a hot path where the arenas' lock could
/// matter (tcache serves small blocks without it). Call before any thread starts.
pub fn one_malloc_arena() {
    #[cfg(target_env = "gnu")]
    // SAFETY: mallopt only sets an allocator parameter; no thread is allocating yet.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 1);
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

/// Asks the kernel to back the (not yet touched) capacity of `v` with transparent huge pages,
/// so that filling a large array takes a few faults instead of one per 4 KiB page. Only a hint:
/// where THP is off or the call fails, nothing changes.
pub(crate) fn advise_huge_pages<T>(v: &mut Vec<T>) {
    const PAGE: usize = 4096;
    let start = v.as_mut_ptr() as usize;
    let end = start + v.capacity() * std::mem::size_of::<T>();
    let (lo, hi) = (start.next_multiple_of(PAGE), end / PAGE * PAGE);
    if hi > lo {
        // SAFETY: the range lies inside `v`'s allocation (whole pages of it); MADV_HUGEPAGE
        // changes how its pages are backed, never their contents.
        unsafe { libc::madvise(lo as *mut libc::c_void, hi - lo, libc::MADV_HUGEPAGE) };
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_huge_page_hint_keeps_the_array_as_it_was() {
        let mut v: Vec<f64> = Vec::new();
        super::advise_huge_pages(&mut v); // no allocation: nothing to advise
        let mut v: Vec<u8> = Vec::with_capacity(5 << 20);
        v.extend_from_slice(b"kept");
        let (p, cap) = (v.as_ptr(), v.capacity());
        super::advise_huge_pages(&mut v);
        assert_eq!((v.as_ptr(), v.capacity(), &v[..]), (p, cap, &b"kept"[..]));
        v.resize(5 << 20, 7);
        assert!(v[4..].iter().all(|&b| b == 7));
    }
}
