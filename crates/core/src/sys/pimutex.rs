//! A pthread mutex with a chosen priority protocol (none, inherit, protect), for `latlab pi`'s
//! inversion scenario: the kernel's rt-mutex priority inheritance is what it exercises.

use std::cell::UnsafeCell;
use std::io;

extern "C" {
    // In glibc but not declared by the libc crate for it.
    fn pthread_mutexattr_setprioceiling(
        attr: *mut libc::pthread_mutexattr_t,
        prioceiling: libc::c_int,
    ) -> libc::c_int;
}

/// The mutex's priority protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    /// PTHREAD_PRIO_NONE: the holder keeps its own priority (inversion can happen).
    None,
    /// PTHREAD_PRIO_INHERIT: the holder runs at the highest waiter's priority.
    Inherit,
    /// PTHREAD_PRIO_PROTECT: the holder runs at the mutex's ceiling while it holds it.
    Protect,
}

/// A process-private pthread mutex, boxed so it never moves.
pub struct PiMutex {
    m: Box<UnsafeCell<libc::pthread_mutex_t>>,
}

// SAFETY: a pthread mutex is made to be shared between threads.
unsafe impl Send for PiMutex {}
// SAFETY: as above.
unsafe impl Sync for PiMutex {}

fn ok(r: libc::c_int) -> io::Result<()> {
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::from_raw_os_error(r))
    }
}

impl PiMutex {
    /// A mutex with `protocol` (and, for `Protect`, priority ceiling `ceiling`).
    pub fn new(protocol: Protocol, ceiling: i32) -> io::Result<PiMutex> {
        let m = Box::new(UnsafeCell::new(libc::PTHREAD_MUTEX_INITIALIZER));
        // SAFETY: attr is initialised by pthread_mutexattr_init before use and destroyed after;
        // the mutex storage is valid and lives as long as self.
        unsafe {
            let mut attr: libc::pthread_mutexattr_t = std::mem::zeroed();
            ok(libc::pthread_mutexattr_init(&mut attr))?;
            let p = match protocol {
                Protocol::None => libc::PTHREAD_PRIO_NONE,
                Protocol::Inherit => libc::PTHREAD_PRIO_INHERIT,
                Protocol::Protect => libc::PTHREAD_PRIO_PROTECT,
            };
            let mut r = libc::pthread_mutexattr_setprotocol(&mut attr, p);
            if r == 0 && protocol == Protocol::Protect {
                r = pthread_mutexattr_setprioceiling(&mut attr, ceiling);
            }
            if r == 0 {
                r = libc::pthread_mutex_init(m.get(), &attr);
            }
            libc::pthread_mutexattr_destroy(&mut attr);
            ok(r)?;
        }
        Ok(PiMutex { m })
    }

    /// Locks (blocking); an error (EINVAL: the caller's priority is above the ceiling) is
    /// returned as is.
    #[inline]
    pub fn lock(&self) -> io::Result<()> {
        // SAFETY: an initialised mutex.
        ok(unsafe { libc::pthread_mutex_lock(self.m.get()) })
    }

    /// Unlocks a mutex the caller holds.
    #[inline]
    pub fn unlock(&self) {
        // SAFETY: an initialised mutex the caller holds.
        unsafe { libc::pthread_mutex_unlock(self.m.get()) };
    }
}

impl Drop for PiMutex {
    fn drop(&mut self) {
        // SAFETY: nobody holds or waits for it when its owner drops it.
        unsafe { libc::pthread_mutex_destroy(self.m.get()) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_protocol_locks() {
        for p in [Protocol::None, Protocol::Inherit] {
            let m = PiMutex::new(p, 0).unwrap();
            m.lock().unwrap();
            m.unlock();
        }
        // A ceiling mutex is created whatever the caller's priority (locking may be refused).
        PiMutex::new(Protocol::Protect, 50).unwrap();
    }
}
