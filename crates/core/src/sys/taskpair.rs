//! Inter-task plumbing for the context-switch methods: pipes, a futex word in shared memory,
//! and forked children. Everything here works for threads and for processes alike.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::AtomicU32;

/// A pipe (or socket pair) as two owned descriptors, closed when dropped. Tasks that run on
/// the other side of a fork, or in a hot loop, use the raw numbers (`rfd`/`wfd`) while the
/// owner keeps the pipe alive.
#[derive(Debug)]
pub struct Pipe {
    /// Read end.
    pub r: OwnedFd,
    /// Write end.
    pub w: OwnedFd,
}

impl Pipe {
    /// A new pipe (close-on-exec).
    pub fn new() -> std::io::Result<Pipe> {
        let mut fds = [0i32; 2];
        // SAFETY: fds is a valid two-int array.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(Pipe::from_raw(fds))
    }

    fn from_raw(fds: [i32; 2]) -> Pipe {
        // SAFETY: both descriptors were just created by the kernel for us and are owned by
        // nothing else.
        unsafe {
            Pipe {
                r: OwnedFd::from_raw_fd(fds[0]),
                w: OwnedFd::from_raw_fd(fds[1]),
            }
        }
    }

    /// The read end's number (valid while the pipe lives).
    pub fn rfd(&self) -> RawFd {
        self.r.as_raw_fd()
    }

    /// The write end's number (valid while the pipe lives).
    pub fn wfd(&self) -> RawFd {
        self.w.as_raw_fd()
    }
}

/// Writes one byte; false on error.
#[inline(always)]
pub fn put(fd: i32) -> bool {
    let b = 1u8;
    // SAFETY: writing one byte from a valid buffer.
    unsafe { libc::write(fd, (&b as *const u8).cast(), 1) == 1 }
}

/// Reads one byte; false on EOF or error.
#[inline(always)]
pub fn get(fd: i32) -> bool {
    let mut b = 0u8;
    // SAFETY: reading one byte into a valid buffer.
    unsafe { libc::read(fd, (&mut b as *mut u8).cast(), 1) == 1 }
}

/// Writes the one byte `b`; false on error.
#[inline(always)]
pub fn put_byte(fd: i32, b: u8) -> bool {
    // SAFETY: writing one byte from a valid buffer.
    unsafe { libc::write(fd, (&b as *const u8).cast(), 1) == 1 }
}

/// Reads one byte; None on EOF or error.
#[inline(always)]
pub fn get_byte(fd: i32) -> Option<u8> {
    let mut b = 0u8;
    // SAFETY: reading one byte into a valid buffer.
    (unsafe { libc::read(fd, (&mut b as *mut u8).cast(), 1) } == 1).then_some(b)
}

/// A connected pair of Unix stream sockets (close-on-exec), in the shape of a pipe.
pub fn socketpair() -> std::io::Result<Pipe> {
    let mut fds = [0i32; 2];
    // SAFETY: fds is a valid two-int array.
    if unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_STREAM | libc::SOCK_CLOEXEC,
            0,
            fds.as_mut_ptr(),
        )
    } != 0
    {
        return Err(std::io::Error::last_os_error());
    }
    Ok(Pipe::from_raw(fds))
}

/// Writes all of `buf`; false on error or a closed reader. No allocation (fork-safe).
pub fn write_all(fd: i32, buf: &[u8]) -> bool {
    let mut off = 0;
    while off < buf.len() {
        // SAFETY: writing from the valid slice buf[off..].
        let n = unsafe { libc::write(fd, buf[off..].as_ptr().cast(), buf.len() - off) };
        if n <= 0 {
            return false;
        }
        off += n as usize;
    }
    true
}

/// Reads and discards `total` bytes using `buf` as scratch; false on EOF or error first.
pub fn read_exactly(fd: i32, total: usize, buf: &mut [u8]) -> bool {
    let mut left = total;
    while left > 0 {
        let want = left.min(buf.len());
        // SAFETY: reading into the valid slice buf[..want].
        let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), want) };
        if n <= 0 {
            return false;
        }
        left -= n as usize;
    }
    true
}

/// Reads until `buf` is full or EOF/error; returns how many bytes arrived.
pub fn read_full(fd: i32, buf: &mut [u8]) -> usize {
    let mut off = 0;
    while off < buf.len() {
        // SAFETY: reading into the valid slice buf[off..].
        let n = unsafe { libc::read(fd, buf[off..].as_mut_ptr().cast(), buf.len() - off) };
        if n <= 0 {
            break;
        }
        off += n as usize;
    }
    off
}

/// Closes a raw descriptor that no `OwnedFd` holds in this process: a forked child's copies
/// of its parent's descriptors.
pub fn close(fd: i32) {
    // SAFETY: closing a descriptor this code owns; errors are irrelevant here.
    unsafe {
        libc::close(fd);
    }
}

/// One page of anonymous memory shared across fork, holding futex words.
pub struct SharedPage {
    ptr: *mut libc::c_void,
}

// SAFETY: the page is only accessed through atomics.
unsafe impl Send for SharedPage {}
// SAFETY: as above.
unsafe impl Sync for SharedPage {}

impl SharedPage {
    /// Maps a zeroed shared page.
    pub fn new() -> std::io::Result<SharedPage> {
        // SAFETY: anonymous shared mapping, no file.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                4096,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        Ok(SharedPage { ptr })
    }

    /// The `i`-th 32-bit word (i < 1024) as an atomic.
    pub fn word(&self, i: usize) -> &AtomicU32 {
        assert!(i < 1024);
        // SAFETY: in bounds of the page, aligned to 4, and only used atomically.
        unsafe { &*(self.ptr as *const AtomicU32).add(i) }
    }
}

impl Drop for SharedPage {
    fn drop(&mut self) {
        // SAFETY: unmapping the page mapped in new().
        unsafe {
            libc::munmap(self.ptr, 4096);
        }
    }
}

/// Sleeps while `*word == expected` (shared futex, works across processes).
#[inline(always)]
pub fn futex_wait(word: &AtomicU32, expected: u32) {
    // SAFETY: the address is a valid, live u32.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT,
            expected,
            std::ptr::null::<libc::timespec>(),
        );
    }
}

/// Wakes up to `n` waiters on `word`.
#[inline(always)]
pub fn futex_wake(word: &AtomicU32, n: i32) {
    // SAFETY: as above.
    unsafe {
        libc::syscall(libc::SYS_futex, word.as_ptr(), libc::FUTEX_WAKE, n);
    }
}

/// Forks a child that pins itself, takes `policy`/`prio`, dies with its parent, runs `body`
/// and exits. `body` runs in a copy of a multi-threaded process: it must only make plain
/// system calls (no allocation, no locks).
pub fn fork_task(
    cpu: Option<usize>,
    policy: libc::c_int,
    prio: i32,
    body: impl FnOnce(),
) -> std::io::Result<libc::pid_t> {
    let parent = super::process::getpid();
    let set = match cpu {
        Some(c) => Some(super::sched::cpu_set([c]).ok_or_else(|| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("CPU {c} is beyond what cpu_set_t holds"),
            )
        })?),
        None => None,
    };
    // SAFETY: the child only calls async-signal-safe functions and the caller's body, which the
    // contract above restricts to plain system calls, then _exit.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(std::io::Error::last_os_error());
    }
    if pid == 0 {
        // SAFETY: child side; see above.
        unsafe {
            super::process::die_with_parent(parent);
            // The parent owns Ctrl-C and SIGTERM and stops its children itself (a flag, a
            // closed pipe, SIGKILL); the child's copy of the parent's handlers must not run.
            libc::signal(libc::SIGINT, libc::SIG_IGN);
            libc::signal(libc::SIGTERM, libc::SIG_IGN);
            if let Some(set) = &set {
                libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), set);
            }
            let p = libc::sched_param {
                sched_priority: prio,
            };
            libc::sched_setscheduler(0, policy, &p);
        }
        // A panic in the body must never unwind into the parent's frames (copied into this
        // child): the guard's drop runs during unwinding and ends the child at once.
        let guard = ExitOnUnwind;
        body();
        std::mem::forget(guard);
        // SAFETY: leaving the child without running the parent's destructors.
        unsafe { libc::_exit(0) };
    }
    Ok(pid)
}

/// Ends a forked child at once if its body unwinds (dropped only during a panic).
struct ExitOnUnwind;

impl Drop for ExitOnUnwind {
    fn drop(&mut self) {
        // SAFETY: _exit is async-signal-safe and never returns.
        unsafe { libc::_exit(101) };
    }
}

/// How long [`kill_task`] waits for a killed task to die: a task frozen by a cgroup freezer
/// dies only once thawed, and latlab must not wait for that.
const KILL_REAPED_WITHIN: std::time::Duration = std::time::Duration::from_secs(1);

/// Kills and reaps a forked task; false when it was not dead within a second (frozen): it is
/// then left to end when thawed (init reaps it once latlab is gone).
pub fn kill_task(pid: libc::pid_t) -> bool {
    // SAFETY: signalling our own child.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    let t0 = std::time::Instant::now();
    loop {
        // SAFETY: polling our own child without blocking.
        match unsafe { libc::waitpid(pid, std::ptr::null_mut(), libc::WNOHANG) } {
            0 if t0.elapsed() < KILL_REAPED_WITHIN => {
                std::thread::sleep(std::time::Duration::from_millis(5))
            }
            0 => return false,
            _ => return true,
        }
    }
}

/// Reaps a forked task that is ending by itself.
pub fn wait_task(pid: libc::pid_t) {
    wait_task_status(pid);
}

/// Reaps a forked task that is ending by itself: `Some(code)` when it exited, None when a
/// signal ended it (or it could not be reaped).
pub(crate) fn wait_task_status(pid: libc::pid_t) -> Option<i32> {
    let mut status = 0;
    loop {
        // SAFETY: reaping our own child into a valid int.
        let r = unsafe { libc::waitpid(pid, &mut status, 0) };
        if r == pid {
            return libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status));
        }
        if r < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
            continue;
        }
        return None;
    }
}

/// Whether a forked task has ended (reaping it if so).
pub fn task_ended(pid: libc::pid_t) -> bool {
    try_wait_task(pid).is_some()
}

/// Reaps a forked task if it has ended, without blocking: None while it runs, else what
/// [`wait_task_status`] says (`Some(None)` also when it cannot be waited for).
pub fn try_wait_task(pid: libc::pid_t) -> Option<Option<i32>> {
    let mut status = 0;
    // SAFETY: polling our own child without blocking, into a valid int.
    match unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) } {
        0 => None,
        r if r == pid => Some(libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status))),
        _ => Some(None),
    }
}

/// A value in anonymous memory shared across `fork`: a forked child and its parent see (and
/// change) the same `T`. Only the creating process drops it (a child leaves with `_exit`).
pub struct SharedBox<T> {
    ptr: *mut T,
    len: usize,
}

// SAFETY: the value is reached only through `&T`, so it needs to be Sync to be shared.
unsafe impl<T: Sync> Send for SharedBox<T> {}
// SAFETY: as above.
unsafe impl<T: Sync> Sync for SharedBox<T> {}

impl<T> SharedBox<T> {
    /// Moves `v` into a fresh shared mapping.
    pub fn new(v: T) -> std::io::Result<SharedBox<T>> {
        assert!(std::mem::align_of::<T>() <= 4096);
        let len = std::mem::size_of::<T>().max(1).div_ceil(4096) * 4096;
        // SAFETY: anonymous shared mapping, no file.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        let ptr = ptr.cast::<T>();
        // SAFETY: the mapping is page-aligned, large enough and not yet initialised.
        unsafe { ptr.write(v) };
        Ok(SharedBox { ptr, len })
    }
}

impl<T> std::ops::Deref for SharedBox<T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: initialised in new() and alive until drop.
        unsafe { &*self.ptr }
    }
}

impl<T> Drop for SharedBox<T> {
    fn drop(&mut self) {
        // SAFETY: dropping the value written in new(), then unmapping its pages.
        unsafe {
            std::ptr::drop_in_place(self.ptr);
            libc::munmap(self.ptr.cast(), self.len);
        }
    }
}

/// sched_yield().
#[inline(always)]
pub fn yield_now() {
    // SAFETY: no arguments.
    unsafe {
        libc::sched_yield();
    }
}
