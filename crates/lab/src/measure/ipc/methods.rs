//! The eight ways one task wakes another (rt-tests' pmqtest, ptsematest, svsematest,
//! sigwaittest, signaltest, plus futex, eventfd and pipe), each as a two-way channel: the
//! sender sends, the receiver wakes and answers on the same mechanism, as rt-tests does. The
//! sender's timestamp goes through shared memory; nothing here allocates after set-up.

use latlab_core::sys::ipcprim::{self, EventFd, MsgQueue, PosixSem};
use latlab_core::sys::sysvsem::SysvSem;
use latlab_core::sys::taskpair::{self, Pipe, SharedPage};
use std::sync::atomic::{AtomicI32, Ordering};

/// A wake-up mechanism.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Method {
    /// A POSIX message queue (pmqtest).
    Pmq,
    /// An unnamed POSIX semaphore (ptsematest's wake-up).
    PosixSem,
    /// A SysV semaphore (svsematest).
    SysvSem,
    /// A real-time signal taken with sigwait (sigwaittest).
    Sigwait,
    /// A real-time signal run by a handler while the receiver sleeps in sigsuspend.
    Signal,
    /// A futex word.
    Futex,
    /// An eventfd counter.
    Eventfd,
    /// A pipe.
    Pipe,
}

impl Method {
    /// Every method, in `--method all`'s order.
    pub(crate) const ALL: [Method; 8] = [
        Method::Pmq,
        Method::PosixSem,
        Method::SysvSem,
        Method::Sigwait,
        Method::Signal,
        Method::Futex,
        Method::Eventfd,
        Method::Pipe,
    ];

    /// Its name on the command line and as a series name.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Method::Pmq => "pmq",
            Method::PosixSem => "posix-sem",
            Method::SysvSem => "sysv-sem",
            Method::Sigwait => "sigwait",
            Method::Signal => "signal",
            Method::Futex => "futex",
            Method::Eventfd => "eventfd",
            Method::Pipe => "pipe",
        }
    }

    /// The method named `s`.
    pub(crate) fn parse(s: &str) -> Option<Method> {
        Method::ALL.into_iter().find(|m| m.name() == s)
    }
}

/// Runs `f` again while it fails with EINTR (a wake-up signal, not an error).
#[inline]
fn retry(f: impl Fn() -> bool) -> bool {
    loop {
        if f() {
            return true;
        }
        if std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return false;
        }
    }
}

/// The two sides of a channel.
pub(crate) const SENDER: usize = 0;
/// The receiving side.
pub(crate) const RECEIVER: usize = 1;

/// A two-way channel: `send(to)` wakes side `to`, `recv(me)` waits for a wake-up on side `me`.
pub(crate) enum Chan {
    /// One queue per side.
    Pmq([MsgQueue; 2]),
    /// One semaphore per side.
    PosixSem([PosixSem; 2]),
    /// One set, one semaphore per side.
    SysvSem(SysvSem),
    /// A signal per side, taken with sigwait; ids set by each side before the start.
    Sigwait {
        /// Signal of each side.
        sig: [i32; 2],
        /// Process and thread id of each side.
        tid: [[AtomicI32; 2]; 2],
        /// Another process's signal to latlab as a whole does not kill it.
        _harmless: ipcprim::Harmless,
    },
    /// As `Sigwait`, but the receiver's signal runs a handler (it sleeps in sigsuspend).
    Signal {
        /// Signal of each side.
        sig: [i32; 2],
        /// Process and thread id of each side.
        tid: [[AtomicI32; 2]; 2],
        /// The handler, uninstalled when the channel drops.
        _handler: ipcprim::HandlerGuard,
        /// Another process's signal to latlab as a whole does not kill it.
        _harmless: ipcprim::Harmless,
    },
    /// A token count per side in a futex word (words 0 and 1).
    Futex(SharedPage),
    /// One eventfd per side.
    Eventfd([EventFd; 2]),
    /// One pipe per side.
    Pipe([Pipe; 2]),
}

/// Per-thread state a side prepares before the start (signal sets and masks).
pub(crate) struct Side {
    me: usize,
    set: libc::sigset_t,
    suspend_mask: libc::sigset_t,
    handled: bool,
}

impl Chan {
    /// A new channel for `m`; `processes`: its sides will be in different processes (the
    /// channel itself must then live in shared memory, `SharedBox`); `registry`: where a SysV
    /// set is recorded so a killed latlab's can be removed later.
    pub(crate) fn new(
        m: Method,
        processes: bool,
        registry: Option<&std::path::Path>,
    ) -> std::io::Result<Chan> {
        let sigs = [ipcprim::rt_signal(2), ipcprim::rt_signal(3)];
        let id = || [AtomicI32::new(0), AtomicI32::new(0)];
        let tids = || [id(), id()];
        Ok(match m {
            Method::Pmq => Chan::Pmq([MsgQueue::new("s", 1)?, MsgQueue::new("r", 1)?]),
            Method::PosixSem => {
                Chan::PosixSem([PosixSem::new_in(processes)?, PosixSem::new_in(processes)?])
            }
            Method::SysvSem => Chan::SysvSem(SysvSem::new(2, registry)?),
            Method::Sigwait => Chan::Sigwait {
                sig: sigs,
                tid: tids(),
                _harmless: ipcprim::Harmless::install(&sigs)?,
            },
            Method::Signal => Chan::Signal {
                sig: sigs,
                tid: tids(),
                _handler: ipcprim::HandlerGuard::install(sigs[RECEIVER])?,
                // After the handler: only the sender's signal is still at its default.
                _harmless: ipcprim::Harmless::install(&sigs)?,
            },
            Method::Futex => Chan::Futex(SharedPage::new()?),
            Method::Eventfd => Chan::Eventfd([EventFd::new()?, EventFd::new()?]),
            Method::Pipe => Chan::Pipe([Pipe::new()?, Pipe::new()?]),
        })
    }

    /// Prepares the calling thread as side `me` (records its process and thread id, blocks its
    /// signal); call on that side's thread (in a forked child: in the child) before the start.
    pub(crate) fn side(&self, me: usize) -> std::io::Result<Side> {
        let mut s = Side {
            me,
            set: ipcprim::set_of(0),
            suspend_mask: ipcprim::set_of(0),
            handled: false,
        };
        match self {
            Chan::Sigwait { sig, tid, .. } | Chan::Signal { sig, tid, .. } => {
                tid[me][0].store(latlab_core::sys::process::getpid(), Ordering::SeqCst);
                tid[me][1].store(latlab_core::sys::sched::gettid(), Ordering::SeqCst);
                ipcprim::block_signals(&[sig[me]])?;
                s.set = ipcprim::set_of(sig[me]);
                if matches!(self, Chan::Signal { .. }) && me == RECEIVER {
                    s.handled = true;
                    s.suspend_mask = ipcprim::mask_without(sig[me]);
                }
            }
            _ => {}
        }
        Ok(s)
    }

    /// Wakes side `to`; false on error.
    #[inline]
    pub(crate) fn send(&self, to: usize, stamp: u64) -> bool {
        match self {
            Chan::Pmq(q) => q[to].send(stamp),
            Chan::PosixSem(s) => s[to].post(),
            Chan::SysvSem(s) => s.post(to as u16),
            Chan::Sigwait { sig, tid, .. } | Chan::Signal { sig, tid, .. } => {
                let [pid, tid] = &tid[to];
                ipcprim::signal_task(
                    pid.load(Ordering::Relaxed),
                    tid.load(Ordering::Relaxed),
                    sig[to],
                )
            }
            Chan::Futex(p) => {
                p.word(to).fetch_add(1, Ordering::Release);
                taskpair::futex_wake(p.word(to), 1);
                true
            }
            Chan::Eventfd(e) => e[to].post(),
            Chan::Pipe(p) => retry(|| taskpair::put(p[to].wfd())),
        }
    }

    /// Wakes side `to` without ever blocking (a full message queue means `to` has a wake-up
    /// waiting already): for ending a pair whose other side may be gone.
    pub(crate) fn nudge(&self, to: usize) {
        match self {
            Chan::Pmq(q) => {
                q[to].try_send(0);
            }
            _ => {
                self.send(to, 0);
            }
        }
    }

    /// Waits for a wake-up on `side`; `Some(t)` when it came, `t` being the moment the side
    /// ran (the handler's stamp for `signal`, else the clock read right after waking).
    #[inline]
    pub(crate) fn recv(&self, side: &Side) -> Option<u64> {
        let me = side.me;
        let ok = match self {
            Chan::Pmq(q) => q[me].recv().is_some(),
            Chan::PosixSem(s) => s[me].wait(),
            Chan::SysvSem(s) => s.wait(me as u16),
            Chan::Sigwait { .. } => ipcprim::wait_signal(&side.set),
            Chan::Signal { .. } if side.handled => {
                ipcprim::HANDLED_AT.store(0, Ordering::Relaxed);
                while ipcprim::HANDLED_AT.load(Ordering::Acquire) == 0 {
                    ipcprim::suspend(&side.suspend_mask);
                }
                return Some(ipcprim::HANDLED_AT.load(Ordering::Acquire));
            }
            Chan::Signal { .. } => ipcprim::wait_signal(&side.set),
            Chan::Futex(p) => {
                let w = p.word(me);
                loop {
                    let v = w.load(Ordering::Acquire);
                    if v == 0 {
                        taskpair::futex_wait(w, 0);
                    } else if w
                        .compare_exchange(v, v - 1, Ordering::AcqRel, Ordering::Relaxed)
                        .is_ok()
                    {
                        break true;
                    }
                }
            }
            Chan::Eventfd(e) => e[me].wait(),
            Chan::Pipe(p) => retry(|| taskpair::get(p[me].rfd())),
        };
        ok.then(|| latlab_core::sys::clock::now_ns(libc::CLOCK_MONOTONIC))
    }
}
