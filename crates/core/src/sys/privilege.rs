//! Finds out, before a run, whether real-time scheduling will be granted, and why not.

use super::policy::Policy;

/// Tries `policy`/`prio` on a short-lived probe thread and explains a refusal.
///
/// This catches every reason at once: not root, RLIMIT_RTPRIO, and a cgroup without an RT
/// budget (CONFIG_RT_GROUP_SCHED with cpu.rt_runtime_us = 0), because the kernel answers.
pub fn probe_policy(policy: Policy, prio: i32) -> Result<(), String> {
    // A small stack: glibc keeps an ended thread's stack for reuse, and a later mlockall
    // would lock (and zero-fill) all of it.
    let result = std::thread::Builder::new()
        .name("latlab-probe".into())
        .stack_size(super::mem::PROBE_STACK)
        .spawn(move || super::sched::set_policy(policy, prio))
        .map_err(|e| {
            let hint = if e.raw_os_error() == Some(libc::EAGAIN) {
                super::procs::LIMIT_HINT
            } else {
                ""
            };
            format!("cannot start the privilege probe thread: {e}{hint}")
        })?
        .join()
        .map_err(|_| "privilege probe thread panicked".to_string())?;
    match result {
        Ok(()) => Ok(()),
        Err(e) => Err(explain(policy, prio, &e)),
    }
}

fn explain(policy: Policy, prio: i32, e: &std::io::Error) -> String {
    let mut why = format!("the kernel refused {policy} priority {prio}: {e}");
    if e.raw_os_error() == Some(libc::EPERM) {
        let euid = super::sched::euid();
        let rl = super::sched::rlimit_rtprio();
        if euid != 0 && (rl as i64) < prio as i64 {
            why.push_str(&format!(
                ". Run as root, or raise RLIMIT_RTPRIO (now {rl}) to at least {prio} \
                 (e.g. 'rtprio' in /etc/security/limits.conf), or grant CAP_SYS_NICE"
            ));
        } else {
            why.push_str(
                ". The cgroup may have no real-time budget: give it one \
                 (cpu.rt_runtime_us) or run from the root cgroup",
            );
        }
    }
    why
}
