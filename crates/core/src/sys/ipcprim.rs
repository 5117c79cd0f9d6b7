//! The wake-up primitives rt-tests measures (pmqtest, ptsematest, sigwaittest, signaltest) as
//! small safe types: POSIX message queues, POSIX semaphores, eventfd, and thread-directed
//! real-time signals (svsematest's SysV sets are in `sysvsem`). Every blocking call retries on
//! EINTR and reports other failures as `false`, so a measuring loop can stay free of
//! allocation and formatting.

use std::io;
use std::sync::atomic::{AtomicU64, Ordering};

fn check(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

fn eintr() -> bool {
    io::Error::last_os_error().raw_os_error() == Some(libc::EINTR)
}

/// A POSIX message queue of 8-byte messages, unlinked at once (only its descriptor names it).
pub struct MsgQueue {
    mq: libc::mqd_t,
}

impl MsgQueue {
    /// Creates a queue holding up to `depth` messages (1..=10 fits the default msg_max).
    pub fn new(tag: &str, depth: i64) -> io::Result<MsgQueue> {
        let name = std::ffi::CString::new(format!("/latlab-{}-{tag}", std::process::id()))
            .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
        // SAFETY: a zeroed mq_attr is valid; the fields set are the ones mq_open reads.
        let mut attr: libc::mq_attr = unsafe { std::mem::zeroed() };
        attr.mq_maxmsg = depth;
        attr.mq_msgsize = 8;
        // SAFETY: name is a valid C string and attr a valid mq_attr.
        let mq = unsafe {
            libc::mq_open(
                name.as_ptr(),
                libc::O_RDWR | libc::O_CREAT | libc::O_EXCL | libc::O_CLOEXEC,
                0o600 as libc::mode_t,
                &attr as *const libc::mq_attr,
            )
        };
        if mq < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: unlinking the name just created; the descriptor keeps the queue.
        unsafe { libc::mq_unlink(name.as_ptr()) };
        Ok(MsgQueue { mq })
    }

    /// Sends one 8-byte message; false on error.
    #[inline]
    pub fn send(&self, v: u64) -> bool {
        let b = v.to_ne_bytes();
        loop {
            // SAFETY: sending 8 bytes from a valid buffer on our descriptor.
            if unsafe { libc::mq_send(self.mq, b.as_ptr().cast(), 8, 0) } == 0 {
                return true;
            }
            if !eintr() {
                return false;
            }
        }
    }

    /// Sends one message unless the queue is full (then the reader has a message waiting
    /// anyway); false on error or when full. Never blocks.
    pub fn try_send(&self, v: u64) -> bool {
        let b = v.to_ne_bytes();
        let past = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: sending 8 bytes from a valid buffer; a deadline in the past makes a full
        // queue answer ETIMEDOUT at once.
        unsafe { libc::mq_timedsend(self.mq, b.as_ptr().cast(), 8, 0, &past) == 0 }
    }

    /// Receives one message (blocking); None on error.
    #[inline]
    pub fn recv(&self) -> Option<u64> {
        let mut b = [0u8; 8];
        loop {
            // SAFETY: receiving at most 8 bytes into a valid buffer on our descriptor.
            let n = unsafe {
                libc::mq_receive(self.mq, b.as_mut_ptr().cast(), 8, std::ptr::null_mut())
            };
            if n == 8 {
                return Some(u64::from_ne_bytes(b));
            }
            if n >= 0 || !eintr() {
                return None;
            }
        }
    }
}

impl Drop for MsgQueue {
    fn drop(&mut self) {
        // SAFETY: closing our own descriptor.
        unsafe { libc::mq_close(self.mq) };
    }
}

/// An unnamed POSIX semaphore in its own shared page, so it never moves and (when made
/// `shared`) works across fork.
pub struct PosixSem {
    sem: super::taskpair::SharedBox<std::cell::UnsafeCell<libc::sem_t>>,
}

// SAFETY: sem_t is made for concurrent use through sem_post/sem_wait.
unsafe impl Send for PosixSem {}
// SAFETY: as above.
unsafe impl Sync for PosixSem {}

impl PosixSem {
    /// A process-private semaphore with value 0.
    pub fn new() -> io::Result<PosixSem> {
        PosixSem::new_in(false)
    }

    /// A semaphore with value 0; `shared`: usable by forked processes too (a non-private
    /// futex underneath, as ptsematest's threads do not need).
    pub fn new_in(shared: bool) -> io::Result<PosixSem> {
        // SAFETY: sem_init initialises the zeroed storage before any other use.
        let sem = super::taskpair::SharedBox::new(std::cell::UnsafeCell::new(unsafe {
            std::mem::zeroed()
        }))?;
        // SAFETY: the storage is valid and lives as long as self.
        check(unsafe { libc::sem_init(sem.get(), i32::from(shared), 0) })?;
        Ok(PosixSem { sem })
    }

    /// sem_post; false on error.
    #[inline]
    pub fn post(&self) -> bool {
        // SAFETY: an initialised semaphore.
        unsafe { libc::sem_post(self.sem.get()) == 0 }
    }

    /// sem_wait (retried on EINTR); false on error.
    #[inline]
    pub fn wait(&self) -> bool {
        loop {
            // SAFETY: an initialised semaphore.
            if unsafe { libc::sem_wait(self.sem.get()) } == 0 {
                return true;
            }
            if !eintr() {
                return false;
            }
        }
    }
}

impl Drop for PosixSem {
    fn drop(&mut self) {
        // SAFETY: no waiter is left when the owner drops it.
        unsafe { libc::sem_destroy(self.sem.get()) };
    }
}

/// An eventfd counter.
pub struct EventFd {
    fd: std::os::fd::OwnedFd,
}

impl EventFd {
    /// A counter at 0 (close-on-exec, blocking).
    pub fn new() -> io::Result<EventFd> {
        use std::os::fd::FromRawFd;
        // SAFETY: plain syscall.
        let fd = check(unsafe { libc::eventfd(0, libc::EFD_CLOEXEC) })?;
        // SAFETY: the descriptor was just created for us.
        Ok(EventFd {
            fd: unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) },
        })
    }

    /// Adds one.
    #[inline]
    pub fn post(&self) -> bool {
        use std::os::fd::AsRawFd;
        let v = 1u64;
        // SAFETY: writing 8 bytes from a valid u64.
        unsafe { libc::write(self.fd.as_raw_fd(), (&v as *const u64).cast(), 8) == 8 }
    }

    /// Reads (and resets) the counter, blocking while it is 0.
    #[inline]
    pub fn wait(&self) -> bool {
        use std::os::fd::AsRawFd;
        let mut v = 0u64;
        loop {
            // SAFETY: reading 8 bytes into a valid u64.
            let n = unsafe { libc::read(self.fd.as_raw_fd(), (&mut v as *mut u64).cast(), 8) };
            if n == 8 {
                return true;
            }
            if n >= 0 || !eintr() {
                return false;
            }
        }
    }
}

/// The real-time signal number `SIGRTMIN + n`.
pub fn rt_signal(n: i32) -> i32 {
    libc::SIGRTMIN() + n
}

fn sigset(sigs: &[i32]) -> libc::sigset_t {
    // SAFETY: sigemptyset initialises the set; sigaddset with valid signal numbers.
    unsafe {
        let mut s: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut s);
        for &g in sigs {
            libc::sigaddset(&mut s, g);
        }
        s
    }
}

/// Blocks `sigs` in the calling thread (so they stay pending for `wait_signal`).
pub fn block_signals(sigs: &[i32]) -> io::Result<()> {
    let s = sigset(sigs);
    // SAFETY: a valid set; the old mask is not wanted.
    let r = unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &s, std::ptr::null_mut()) };
    if r != 0 {
        return Err(io::Error::from_raw_os_error(r));
    }
    Ok(())
}

/// Sends `sig` to thread `tid` of process `tgid` (ours or a forked child's); false on error.
#[inline]
pub fn signal_task(tgid: i32, tid: i32, sig: i32) -> bool {
    // SAFETY: plain syscall.
    unsafe { libc::syscall(libc::SYS_tgkill, tgid, tid, sig) == 0 }
}

/// Waits for `sig` (which the caller has blocked) with sigwait; false on error.
#[inline]
pub fn wait_signal(set: &libc::sigset_t) -> bool {
    let mut got = 0;
    loop {
        // SAFETY: a valid set and out-pointer.
        let r = unsafe { libc::sigwait(set, &mut got) };
        if r == 0 {
            return true;
        }
        if r != libc::EINTR {
            return false;
        }
    }
}

/// What [`wait_signal_from`] took.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Took {
    /// A signal the expected process sent.
    Own,
    /// A signal another process sent (`kill`, `tgkill`, `sigqueue` from outside).
    Foreign,
    /// The wait failed.
    Failed,
}

/// Waits for a signal of `set` (which the caller has blocked) with sigwaitinfo, and says
/// whether process `pid` sent it.
#[inline]
pub fn wait_signal_from(set: &libc::sigset_t, pid: i32) -> Took {
    loop {
        // SAFETY: a valid set; `info` is plain data the kernel fills.
        let (r, info) = unsafe {
            let mut info: libc::siginfo_t = std::mem::zeroed();
            (libc::sigwaitinfo(set, &mut info), info)
        };
        if r > 0 {
            // SAFETY: every signal sigwaitinfo returns here was sent by a process (kill,
            // tgkill, sigqueue), whose siginfo carries the sender's pid.
            return if unsafe { info.si_pid() } == pid {
                Took::Own
            } else {
                Took::Foreign
            };
        }
        if io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return Took::Failed;
        }
    }
}

extern "C" fn harmless_handler(_: libc::c_int) {}

/// Keeps signals latlab exchanges between its own threads from ending the process when
/// another process sends them to it as a whole (`kill -RTMIN+2 PID`): such a signal goes to
/// a thread that does not block it, which by default would kill latlab with nothing saved.
/// Each of `sigs` still at its default action gets a handler that does nothing; threads
/// that block a signal still take it with sigwait. The default comes back when dropped.
pub struct Harmless {
    old: Vec<(i32, libc::sigaction)>,
}

impl Harmless {
    /// Installs the handler on each of `sigs` whose action is the default.
    pub fn install(sigs: &[i32]) -> io::Result<Harmless> {
        let mut h = Harmless { old: Vec::new() };
        for &sig in sigs {
            // SAFETY: querying, then installing a zeroed sigaction with a valid handler and
            // an empty mask; `old` is valid storage.
            unsafe {
                let mut old: libc::sigaction = std::mem::zeroed();
                check(libc::sigaction(sig, std::ptr::null(), &mut old))?;
                if old.sa_sigaction != libc::SIG_DFL {
                    continue;
                }
                let mut sa: libc::sigaction = std::mem::zeroed();
                sa.sa_sigaction = harmless_handler as *const () as usize;
                libc::sigemptyset(&mut sa.sa_mask);
                sa.sa_flags = libc::SA_RESTART;
                check(libc::sigaction(sig, &sa, std::ptr::null_mut()))?;
                h.old.push((sig, old));
            }
        }
        Ok(h)
    }
}

impl Drop for Harmless {
    fn drop(&mut self) {
        for (sig, old) in &self.old {
            // SAFETY: restoring the action saved at install.
            unsafe { libc::sigaction(*sig, old, std::ptr::null_mut()) };
        }
    }
}

/// A set holding `sig`, for `wait_signal` and `suspend_for`.
pub fn set_of(sig: i32) -> libc::sigset_t {
    sigset(&[sig])
}

/// The calling thread's signal mask with `sig` removed: what `suspend_for` sleeps with.
pub fn mask_without(sig: i32) -> libc::sigset_t {
    // SAFETY: reading the current mask into valid storage, then removing one signal.
    unsafe {
        let mut m: libc::sigset_t = std::mem::zeroed();
        libc::pthread_sigmask(libc::SIG_BLOCK, std::ptr::null(), &mut m);
        libc::sigdelset(&mut m, sig);
        m
    }
}

/// Sleeps with `mask` (sigsuspend) until a handled signal runs its handler.
#[inline]
pub fn suspend(mask: &libc::sigset_t) {
    // SAFETY: a valid mask; sigsuspend always returns -1/EINTR after a handler ran.
    unsafe { libc::sigsuspend(mask) };
}

/// When the handler installed by `HandlerGuard` last ran (CLOCK_MONOTONIC ns).
pub static HANDLED_AT: AtomicU64 = AtomicU64::new(0);

extern "C" fn stamp_handler(_: libc::c_int) {
    // clock_gettime is async-signal-safe; the store is a plain atomic.
    HANDLED_AT.store(
        super::clock::now_ns(libc::CLOCK_MONOTONIC),
        Ordering::Release,
    );
}

/// A handler on `sig` that stamps `HANDLED_AT`; the previous action comes back when dropped.
pub struct HandlerGuard {
    sig: i32,
    old: libc::sigaction,
}

impl HandlerGuard {
    /// Installs the stamping handler on `sig`.
    pub fn install(sig: i32) -> io::Result<HandlerGuard> {
        // SAFETY: a zeroed sigaction with a valid handler and empty mask; old is valid storage.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = stamp_handler as *const () as usize;
            libc::sigemptyset(&mut sa.sa_mask);
            sa.sa_flags = libc::SA_RESTART;
            let mut old: libc::sigaction = std::mem::zeroed();
            check(libc::sigaction(sig, &sa, &mut old))?;
            Ok(HandlerGuard { sig, old })
        }
    }
}

impl Drop for HandlerGuard {
    fn drop(&mut self) {
        // SAFETY: restoring the action saved at install.
        unsafe { libc::sigaction(self.sig, &self.old, std::ptr::null_mut()) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn primitives_pass_a_token() {
        let q = MsgQueue::new("t", 4).unwrap();
        assert!(q.send(42));
        assert_eq!(q.recv(), Some(42));
        let s = PosixSem::new().unwrap();
        assert!(s.post() && s.wait());
        let e = EventFd::new().unwrap();
        assert!(e.post() && e.post() && e.wait());
    }
}
