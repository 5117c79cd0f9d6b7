//! A repeat's disturbing command (`--disturb`): started by the control thread a third of the
//! way into the measurement, on its own CPU; a plain thread waits for it so its end is exact,
//! and an interrupted run kills it.

use super::worker::Window;
use super::Disturbance;
use latlab_core::error::{Error, Result};
use latlab_core::sys;
use std::process::Child;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

/// The disturbing command of one measurement, from before it starts to its exit.
pub(super) struct Disturber<'a> {
    /// The shell command, if the run has one.
    cmd: Option<&'a str>,
    /// The CPU it is pinned to.
    cpu: usize,
    /// When it is due.
    at: Instant,
    /// Where its start and end are published to the spinners.
    window: Arc<Window>,
    /// The command once started, with its start (CLOCK_MONOTONIC ns).
    child: Option<(Child, u64)>,
    /// The thread waiting for its exit code.
    waiter: Option<JoinHandle<Option<i32>>>,
}

impl<'a> Disturber<'a> {
    /// A command `cmd` (if any) due at `at`, pinned to `cpu`.
    pub(super) fn new(cmd: Option<&'a str>, cpu: usize, at: Instant, window: Arc<Window>) -> Self {
        Disturber {
            cmd,
            cpu,
            at,
            window,
            child: None,
            waiter: None,
        }
    }

    /// Starts the command once it is due, and its waiter once it runs; a command that
    /// cannot start is a usage error.
    pub(super) fn poll(&mut self) -> Result<()> {
        if let (Some(cmd), None, None) = (self.cmd, &self.child, &self.waiter) {
            if Instant::now() >= self.at {
                let start = sys::clock::now_ns(libc::CLOCK_MONOTONIC);
                // Published before the command starts: the spinners tell each interruption
                // from now on as during it.
                self.window.start_ns.store(start, Ordering::Release);
                let c = sys::process::spawn_shell(cmd, Some(self.cpu)).map_err(|e| {
                    Error::Usage(format!("--disturb '{cmd}': cannot start: {e}"))
                })?;
                self.child = Some((c, start));
            }
        }
        if let Some((c, _)) = self.child.as_ref() {
            if self.waiter.is_none() {
                let pid = c.id();
                let window = self.window.clone();
                self.waiter = Some(std::thread::spawn(move || {
                    let code = sys::process::wait_exit_code(pid as i32);
                    window
                        .end_ns
                        .store(sys::clock::now_ns(libc::CLOCK_MONOTONIC), Ordering::Release);
                    code
                }));
            }
        }
        Ok(())
    }

    /// How the command ended, if it ran; one still running when the run was interrupted is
    /// killed first.
    pub(super) fn finish(self, interrupted: bool) -> Option<Disturbance> {
        let (Some((mut c, start)), Some(w)) = (self.child, self.waiter) else {
            return None;
        };
        if interrupted && self.window.end_ns.load(Ordering::Acquire) == 0 {
            sys::process::kill_group(&mut c);
        }
        let code = w.join().ok().flatten();
        Some(Disturbance {
            start_ns: start,
            end_ns: self.window.end_ns.load(Ordering::Acquire),
            exit_code: code,
        })
    }
}
