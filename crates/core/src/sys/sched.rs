//! Scheduling policy, priority and CPU affinity of the calling thread.

use super::policy::Policy;

/// Pins the calling thread to one CPU.
pub fn pin_to_cpu(cpu: usize) -> Result<(), std::io::Error> {
    // SAFETY: cpu_set_t is plain data; CPU_SET bounds are checked below.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if cpu >= 8 * std::mem::size_of::<libc::cpu_set_t>() {
            return Err(std::io::Error::from_raw_os_error(libc::EINVAL));
        }
        libc::CPU_SET(cpu, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Pins the calling thread to a set of CPUs.
pub fn pin_to_cpus(cpus: impl IntoIterator<Item = usize>) -> Result<(), std::io::Error> {
    // SAFETY: as in pin_to_cpu.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for cpu in cpus {
            if cpu < 8 * std::mem::size_of::<libc::cpu_set_t>() {
                libc::CPU_SET(cpu, &mut set);
            }
        }
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// The CPUs the calling thread may run on.
pub fn affinity() -> Result<Vec<usize>, std::io::Error> {
    // SAFETY: cpu_set_t is plain data filled by the kernel; CPU_ISSET reads within it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok((0..8 * std::mem::size_of::<libc::cpu_set_t>())
            .filter(|&c| libc::CPU_ISSET(c, &set))
            .collect())
    }
}

/// Sets the calling thread's scheduling policy and priority.
pub fn set_policy(policy: Policy, prio: i32) -> Result<(), std::io::Error> {
    set_policy_raw(policy.as_libc(), prio)
}

/// As [`set_policy`], with the `SCHED_*` constant.
pub fn set_policy_raw(policy: libc::c_int, prio: i32) -> Result<(), std::io::Error> {
    set_thread_policy(0, policy, prio)
}

/// Sets thread `tid`'s policy (`SCHED_*`) and priority (0: the calling thread).
pub fn set_thread_policy(tid: i32, policy: libc::c_int, prio: i32) -> Result<(), std::io::Error> {
    let param = libc::sched_param {
        sched_priority: prio,
    };
    // SAFETY: a thread id (0: the calling thread); param is a valid sched_param.
    let r = unsafe { libc::sched_setscheduler(tid, policy, &param) };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// The calling thread's scheduling policy (`SCHED_*`, without `SCHED_RESET_ON_FORK`) and
/// priority; None when the kernel does not say.
pub(crate) fn policy_now() -> Option<(libc::c_int, i32)> {
    // SAFETY: pid 0 is the calling thread; sched_param is plain data the kernel fills.
    unsafe {
        let policy = libc::sched_getscheduler(0);
        let mut p = libc::sched_param { sched_priority: 0 };
        if policy < 0 || libc::sched_getparam(0, &mut p) != 0 {
            return None;
        }
        Some((policy & !libc::SCHED_RESET_ON_FORK, p.sched_priority))
    }
}

/// What `sched_getattr` says of thread `tid` (0: the calling thread); there is no glibc
/// wrapper, so the raw system call.
pub(crate) fn sched_attr_of(tid: libc::pid_t) -> std::io::Result<libc::sched_attr> {
    // SAFETY: sched_attr is plain data; all zeroes is a valid value.
    let mut a: libc::sched_attr = unsafe { std::mem::zeroed() };
    let size = std::mem::size_of::<libc::sched_attr>() as libc::c_uint;
    // SAFETY: `a` is writable and `size` bytes long; a tid that is gone is an error.
    let r = unsafe {
        libc::syscall(
            libc::SYS_sched_getattr,
            tid,
            &mut a as *mut libc::sched_attr,
            size,
            0 as libc::c_uint,
        )
    };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(a)
}

/// The policy (without the reset-on-fork flag) and priority of thread `tid` now; None when it
/// is gone or cannot be read.
pub fn policy_of(tid: i32) -> Option<(libc::c_int, i32)> {
    // One call where two were (it is polled through every measurement, see rt::policy); the
    // reset-on-fork flag is in its flags, not in the policy.
    match sched_attr_of(tid) {
        Ok(a) => return Some((a.sched_policy as libc::c_int, a.sched_priority as i32)),
        Err(e) if e.raw_os_error() != Some(libc::ENOSYS) => return None,
        Err(_) => {}
    }
    // SAFETY: sched_param is plain data the kernel fills; a tid that is gone is an error.
    unsafe {
        let policy = libc::sched_getscheduler(tid);
        let mut p = libc::sched_param { sched_priority: 0 };
        if policy < 0 || libc::sched_getparam(tid, &mut p) != 0 {
            return None;
        }
        Some((policy & !libc::SCHED_RESET_ON_FORK, p.sched_priority))
    }
}

/// The CPU the calling thread is running on now.
pub fn current_cpu() -> Option<usize> {
    // SAFETY: no arguments.
    let c = unsafe { libc::sched_getcpu() };
    (c >= 0).then_some(c as usize)
}

/// The soft RLIMIT_RTPRIO of the process.
pub(crate) fn rlimit_rtprio() -> u64 {
    let mut rl = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: rl is a valid rlimit.
    unsafe { libc::getrlimit(libc::RLIMIT_RTPRIO, &mut rl) };
    rl.rlim_cur
}

/// The effective user id.
pub fn euid() -> u32 {
    // SAFETY: no arguments.
    unsafe { libc::geteuid() }
}

/// The most CPUs a `cpu_set_t` holds; higher CPU numbers are refused, never a panic.
pub(crate) const MAX_CPUS: usize = 8 * std::mem::size_of::<libc::cpu_set_t>();

/// A `cpu_set_t` holding `cpus`, or None when one is beyond [`MAX_CPUS`]. Built before a fork
/// so the child only passes it to the kernel.
pub(crate) fn cpu_set(cpus: impl IntoIterator<Item = usize>) -> Option<libc::cpu_set_t> {
    // SAFETY: cpu_set_t is plain data; all-zero is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for cpu in cpus {
        if cpu >= MAX_CPUS {
            return None;
        }
        // SAFETY: cpu is within the set's bits (checked above).
        unsafe { libc::CPU_SET(cpu, &mut set) };
    }
    Some(set)
}

/// The calling thread's affinity and policy, restored by [`ThreadState::restore`] (or on drop),
/// so a measurement that moves its control thread gives it back as it found it.
pub struct ThreadState {
    affinity: libc::cpu_set_t,
    policy: libc::c_int,
    prio: i32,
    restored: bool,
}

impl ThreadState {
    /// Saves the calling thread's state.
    pub fn save() -> ThreadState {
        // SAFETY: plain-data out-parameters of the right sizes; pid 0 is the calling thread.
        unsafe {
            let mut affinity: libc::cpu_set_t = std::mem::zeroed();
            libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut affinity);
            let policy = libc::sched_getscheduler(0);
            let mut p = libc::sched_param { sched_priority: 0 };
            libc::sched_getparam(0, &mut p);
            ThreadState {
                affinity,
                policy: policy.max(0),
                prio: p.sched_priority,
                restored: false,
            }
        }
    }

    /// Puts the saved state back on the calling thread (the one that saved it).
    pub fn restore(&mut self) {
        if self.restored {
            return;
        }
        self.restored = true;
        let p = libc::sched_param {
            sched_priority: self.prio,
        };
        // SAFETY: restoring values read by `save` on this thread.
        unsafe {
            libc::sched_setscheduler(0, self.policy, &p);
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &self.affinity);
        }
    }
}

impl Drop for ThreadState {
    fn drop(&mut self) {
        self.restore();
    }
}

/// The calling thread's id (what the kernel's trace events call its pid).
pub fn gettid() -> i32 {
    // SAFETY: no arguments; cannot fail.
    unsafe { libc::gettid() }
}
