//! A read-only view of memory the kernel writes while latlab reads it (a BPF map created
//! with `BPF_F_MMAPABLE`, mapped shared): reads are volatile copies and acquire loads, so no
//! reference to memory that changes under it is ever handed out.

use std::os::fd::{AsRawFd, BorrowedFd};
use std::sync::atomic::{AtomicU64, Ordering};

/// `len` bytes of a descriptor's memory, mapped `PROT_READ` and `MAP_SHARED`; unmapped on
/// drop.
#[derive(Debug)]
pub struct SharedView {
    ptr: *mut libc::c_void,
    len: usize,
}

// SAFETY: the view is only read, through volatile copies and atomic loads; the mapping stays
// valid until drop, whichever thread holds it.
unsafe impl Send for SharedView {}
// SAFETY: as above: concurrent readers do not write.
unsafe impl Sync for SharedView {}

impl SharedView {
    /// Maps the first `len` bytes of `fd` read-only.
    pub fn map(fd: BorrowedFd<'_>, len: usize) -> std::io::Result<SharedView> {
        if len == 0 {
            return Err(std::io::Error::from(std::io::ErrorKind::InvalidInput));
        }
        // SAFETY: a fresh mapping chosen by the kernel; nothing else is at that address.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        Ok(SharedView { ptr, len })
    }

    /// Its length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it is empty (never: a mapping has at least one byte).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The 8-byte word at `off` (8-aligned), loaded with acquire ordering: what the writer
    /// stored before it is visible after. None outside the view or unaligned.
    pub fn load_u64(&self, off: usize) -> Option<u64> {
        if !off.is_multiple_of(8) || off.checked_add(8)? > self.len {
            return None;
        }
        // SAFETY: in bounds and aligned (the mapping is page-aligned); an AtomicU64 has the
        // layout of a u64, and the kernel's writes are whole aligned words.
        let a = unsafe { &*(self.ptr.cast::<u8>().add(off).cast::<AtomicU64>()) };
        Some(a.load(Ordering::Acquire))
    }

    /// Copies `out.len()` bytes from `off` (volatile: the compiler may not assume they stay
    /// put), then fences, so a load after it sees at least what the copy saw. False when out
    /// of bounds.
    pub fn copy(&self, off: usize, out: &mut [u8]) -> bool {
        let Some(end) = off.checked_add(out.len()) else {
            return false;
        };
        if end > self.len {
            return false;
        }
        let base = self.ptr.cast::<u8>();
        let words = if off.is_multiple_of(8) {
            out.len() / 8
        } else {
            0
        };
        for (i, chunk) in out.chunks_exact_mut(8).take(words).enumerate() {
            // SAFETY: off + 8 * i + 8 <= end <= len, and 8-aligned (the mapping is
            // page-aligned, `off` a multiple of 8).
            let w = unsafe { std::ptr::read_volatile(base.add(off + 8 * i).cast::<u64>()) };
            chunk.copy_from_slice(&w.to_ne_bytes());
        }
        for (i, b) in out.iter_mut().enumerate().skip(words * 8) {
            // SAFETY: off + i < end <= len.
            *b = unsafe { std::ptr::read_volatile(base.add(off + i)) };
        }
        std::sync::atomic::fence(Ordering::Acquire);
        true
    }
}

impl Drop for SharedView {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `map`, unmapped once.
        unsafe {
            libc::munmap(self.ptr, self.len);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn a_file_reads_back_and_bounds_are_kept() {
        let mut f = tempfile::tempfile().unwrap();
        let mut bytes = vec![0u8; 4096];
        bytes[8..16].copy_from_slice(&0x1122_3344_5566_7788u64.to_le_bytes());
        bytes[100] = 7;
        f.write_all(&bytes).unwrap();
        let v = SharedView::map(std::os::fd::AsFd::as_fd(&f), 4096).unwrap();
        assert_eq!(v.load_u64(8), Some(0x1122_3344_5566_7788));
        assert_eq!(v.load_u64(9), None);
        assert_eq!(v.load_u64(4096 - 4), None);
        let mut words = [0u8; 11];
        assert!(v.copy(8, &mut words));
        assert_eq!(words[..8], 0x1122_3344_5566_7788u64.to_le_bytes());
        let mut out = [0u8; 2];
        assert!(v.copy(99, &mut out));
        assert_eq!(out, [0, 7]);
        assert!(!v.copy(4095, &mut out));
        assert!(!v.copy(usize::MAX, &mut out));
    }
}
