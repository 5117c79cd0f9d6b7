//! The lifecycle every measurement shares through the driver, tested from outside through the
//! binary. The tests live by responsibility in `lifecycle_outputs.rs` (results saved before
//! anything is printed, atomic files, closed stdout), `lifecycle_signals.rs` (Ctrl-C ends every
//! measurement promptly with its result saved) and `lifecycle_children.rs` (loads never hold a
//! run past its end, nothing latlab starts outlives it); this file holds what they share.

use std::process::Child;
use std::time::{Duration, Instant};

/// True once `pid` has installed a SIGINT handler (so a signal is a clean stop, not a kill).
pub(crate) fn handles_sigint(pid: u32) -> bool {
    handles(pid, libc::SIGINT)
}

/// Whether process `pid` has a handler for `sig` (SigCgt of /proc/PID/status).
pub(crate) fn handles(pid: u32, sig: i32) -> bool {
    let Ok(s) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
        return false;
    };
    s.lines()
        .find_map(|l| l.strip_prefix("SigCgt:"))
        .and_then(|m| u64::from_str_radix(m.trim(), 16).ok())
        .is_some_and(|m| m & (1 << (sig - 1)) != 0)
}

pub(crate) fn signal(child: &Child, sig: i32) {
    // SAFETY: sending a signal to our own child.
    unsafe { libc::kill(child.id() as i32, sig) };
}

/// Waits for `child` to end within `limit`; kills it and fails if it does not.
pub(crate) fn ends_within(mut child: Child, limit: Duration, what: &str) -> std::process::Output {
    let t0 = Instant::now();
    while t0.elapsed() < limit {
        if let Ok(Some(_)) = child.try_wait() {
            return child.wait_with_output().unwrap();
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    signal(&child, libc::SIGKILL);
    let out = child.wait_with_output().unwrap();
    panic!(
        "{what} still ran {limit:?} after it was asked to stop: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}
