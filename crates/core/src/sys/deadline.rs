//! SCHED_DEADLINE for the calling thread: `sched_setattr`/`sched_getattr` (no glibc wrapper,
//! so the raw system calls), `sched_yield` (how a deadline task ends its job and waits for its
//! next period), the thread's CPU clock (how much of its runtime a job used) and a process-wide
//! SIGXCPU counter for `SCHED_FLAG_DL_OVERRUN`.

use std::sync::atomic::{AtomicU64, Ordering};

/// The smallest runtime and deadline the kernel accepts (`1 << DL_SCALE` ns, 1024 ns).
pub const MIN_NS: u64 = 1 << 10;

/// A deadline task's reservation: `runtime` ns of CPU in every `period`, available within
/// `deadline` of the period's start.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DlParams {
    /// CPU time per period (ns).
    pub runtime_ns: u64,
    /// Relative deadline (ns) from the start of each period.
    pub deadline_ns: u64,
    /// Period (ns).
    pub period_ns: u64,
}

impl DlParams {
    /// The share of one CPU this reservation takes (runtime / period).
    pub fn bandwidth(&self) -> f64 {
        self.runtime_ns as f64 / self.period_ns.max(1) as f64
    }
}

/// What `sched_getattr` says of the calling thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg(test)]
pub(crate) struct Attr {
    /// `SCHED_*` policy.
    pub(crate) policy: u32,
    /// `SCHED_FLAG_*` flags.
    pub(crate) flags: u64,
    /// Runtime (ns; deadline tasks).
    pub(crate) runtime_ns: u64,
    /// Relative deadline (ns; deadline tasks).
    pub(crate) deadline_ns: u64,
    /// Period (ns; deadline tasks).
    pub(crate) period_ns: u64,
}

fn attr_for(p: &DlParams, flags: u64) -> libc::sched_attr {
    libc::sched_attr {
        size: std::mem::size_of::<libc::sched_attr>() as u32,
        sched_policy: libc::SCHED_DEADLINE as u32,
        sched_flags: flags,
        sched_nice: 0,
        sched_priority: 0,
        sched_runtime: p.runtime_ns,
        sched_deadline: p.deadline_ns,
        sched_period: p.period_ns,
    }
}

/// Makes the calling thread a SCHED_DEADLINE task. With `overrun_signal`, asks for
/// `SCHED_FLAG_DL_OVERRUN` (SIGXCPU when a job exhausts its runtime): install
/// [`count_sigxcpu`] first, or the signal's default action ends the process. Errors are the
/// kernel's: EBUSY (admission control), EPERM (privilege, or an affinity narrower than the
/// root domain), EINVAL (parameters out of the kernel's range, or a flag it lacks).
pub fn set_deadline(p: &DlParams, overrun_signal: bool) -> std::io::Result<()> {
    let flags = if overrun_signal {
        libc::SCHED_FLAG_DL_OVERRUN as u64
    } else {
        0
    };
    let attr = attr_for(p, flags);
    // SAFETY: pid 0 is the calling thread; attr is a valid, fully initialised sched_attr whose
    // size field is its own size; flags (the syscall's, not the attr's) must be 0.
    let r = unsafe {
        libc::syscall(
            libc::SYS_sched_setattr,
            0 as libc::pid_t,
            &attr as *const libc::sched_attr,
            0 as libc::c_uint,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Reads the calling thread's scheduling attributes.
#[cfg(test)]
pub(crate) fn get_attr() -> std::io::Result<Attr> {
    let a = super::sched::sched_attr_of(0)?;
    Ok(Attr {
        policy: a.sched_policy,
        flags: a.sched_flags,
        runtime_ns: a.sched_runtime,
        deadline_ns: a.sched_deadline,
        period_ns: a.sched_period,
    })
}

/// True when `a` is a deadline task with exactly `p`.
#[cfg(test)]
pub(crate) fn holds(a: &Attr, p: &DlParams) -> bool {
    a.policy == libc::SCHED_DEADLINE as u32
        && a.runtime_ns == p.runtime_ns
        && a.deadline_ns == p.deadline_ns
        && a.period_ns == p.period_ns
}

/// Ends the current job of a deadline task: the kernel throttles it until its next period.
#[inline(always)]
pub fn yield_now() {
    // SAFETY: no arguments; cannot fail on Linux.
    unsafe { libc::sched_yield() };
}

/// CPU time the calling thread has used (ns), from CLOCK_THREAD_CPUTIME_ID.
#[inline(always)]
pub fn thread_cpu_ns() -> u64 {
    super::clock::now_ns(libc::CLOCK_THREAD_CPUTIME_ID)
}

static SIGXCPU_SEEN: AtomicU64 = AtomicU64::new(0);

/// Counts every SIGXCPU the process receives from now on (idempotent) instead of dying of it.
/// The kernel sends it to the whole process, once per tick that finds a deadline task's
/// overrun flag set, so it tells that overruns happened, not which thread or how many.
pub fn count_sigxcpu() -> std::io::Result<()> {
    static ONCE: std::sync::OnceLock<Result<(), String>> = std::sync::OnceLock::new();
    let r = ONCE.get_or_init(|| {
        // SAFETY: the action only increments an atomic (async-signal-safe).
        unsafe {
            signal_hook::low_level::register(libc::SIGXCPU, || {
                SIGXCPU_SEEN.fetch_add(1, Ordering::Relaxed);
            })
        }
        .map(|_| ())
        .map_err(|e| e.to_string())
    });
    r.clone().map_err(std::io::Error::other)
}

/// SIGXCPU signals counted since [`count_sigxcpu`].
pub fn sigxcpu_count() -> u64 {
    SIGXCPU_SEEN.load(Ordering::Relaxed)
}

/// The CPUs the calling thread may run on.
pub fn affinity() -> Vec<usize> {
    // SAFETY: cpu_set_t is plain data; the kernel fills at most its size.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Vec::new();
        }
        (0..super::sched::MAX_CPUS)
            .filter(|&c| libc::CPU_ISSET(c, &set))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_attr_is_the_kernels_layout() {
        // SCHED_ATTR_SIZE_VER0: the kernel refuses any other size below it.
        assert_eq!(std::mem::size_of::<libc::sched_attr>(), 48);
        let a = attr_for(
            &DlParams {
                runtime_ns: 1,
                deadline_ns: 2,
                period_ns: 3,
            },
            4,
        );
        assert_eq!(a.sched_policy, 6);
        assert_eq!(
            (a.sched_runtime, a.sched_deadline, a.sched_period),
            (1, 2, 3)
        );
        assert_eq!(a.sched_flags, 4);
    }

    #[test]
    fn this_thread_reads_its_own_policy() {
        let a = get_attr().unwrap();
        assert_ne!(a.policy, libc::SCHED_DEADLINE as u32);
        assert!(!holds(
            &a,
            &DlParams {
                runtime_ns: 0,
                deadline_ns: 0,
                period_ns: 0
            }
        ));
    }
}
