//! The deadline holds whatever the loads do: a thread that, at the measurement's planned end
//! (plus a short grace) or on Ctrl-C, asks every load to stop, so a real-time load that starves
//! a measuring thread can never keep the run going.

use latlab_core::rt::Control;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Grace after the planned end before loads are stopped: measuring threads normally notice
/// the deadline themselves well within it.
const GRACE: Duration = Duration::from_millis(200);

/// A running watchdog; `finish` ends it before the loads are reaped (so it never signals a
/// reused pid).
pub(crate) struct Watchdog {
    done: Option<mpsc::Sender<()>>,
    thread: Option<std::thread::JoinHandle<Vec<i32>>>,
}

impl Watchdog {
    /// Starts watching `pids` (load process groups); does nothing when there are none.
    pub(crate) fn start(pids: Vec<i32>, planned: Option<Duration>, control: Control) -> Watchdog {
        if pids.is_empty() {
            return Watchdog {
                done: None,
                thread: None,
            };
        }
        let (tx, rx) = mpsc::channel::<()>();
        let deadline = planned.map(|d| Instant::now() + d + GRACE);
        let thread = std::thread::Builder::new()
            .name("latlab-watchdog".into())
            .stack_size(latlab_core::sys::mem::HELPER_STACK)
            .spawn(move || loop {
                let now = Instant::now();
                if control.was_interrupted() || deadline.is_some_and(|d| now >= d) {
                    // Those still running when asked (one that ended before is a zombie of
                    // latlab's until the loads are stopped).
                    let alive: Vec<i32> = pids
                        .iter()
                        .copied()
                        .filter(|&p| latlab_core::sys::family::state(p).is_some_and(|c| c != 'Z'))
                        .collect();
                    latlab_core::sys::process::terminate_groups(&pids);
                    return alive;
                }
                match rx.recv_timeout(Duration::from_millis(20)) {
                    Err(mpsc::RecvTimeoutError::Timeout) => {}
                    _ => return Vec::new(),
                }
            })
            .ok();
        Watchdog {
            done: Some(tx),
            thread,
        }
    }

    /// Ends the watchdog and waits for it; the loads it had asked to stop while they ran (one
    /// of them that ended since did so because latlab asked).
    pub(crate) fn finish(mut self) -> Vec<i32> {
        drop(self.done.take());
        self.thread
            .take()
            .and_then(|t| t.join().ok())
            .unwrap_or_default()
    }
}
