//! The live view on a terminal, shared by every measurement: a non-RT thread redrawing lines
//! built from atomics at most 10 times a second, cleared (from column 0, so a `^C` echoed by
//! the terminal leaves nothing behind) before the final report. Never used in a pipe.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// True when stdout is a terminal (the live view and cursor codes are only used then).
pub fn stdout_is_terminal() -> bool {
    std::io::stdout().is_terminal()
}

/// A running live view.
pub struct LiveView {
    quit: Arc<AtomicBool>,
    handle: Option<std::thread::JoinHandle<()>>,
}

impl LiveView {
    /// Starts redrawing `lines()` until `stop` is set or `finish` is called.
    pub fn start(
        lines: impl Fn() -> Vec<String> + Send + 'static,
        stop: Arc<AtomicBool>,
    ) -> LiveView {
        let quit = Arc::new(AtomicBool::new(false));
        let q = quit.clone();
        let handle = std::thread::Builder::new()
            .name("latlab-live".into())
            .stack_size(crate::sys::mem::HELPER_STACK)
            .spawn(move || {
                // Never at the real-time priority of the thread that started it.
                // Lowering one's own policy is never refused.
                let _ = crate::sys::sched::set_policy(crate::config::Policy::Other, 0);
                let mut drawn = 0usize;
                while !q.load(Ordering::Acquire) && !stop.load(Ordering::Acquire) {
                    let mut out = String::new();
                    if drawn > 0 {
                        out.push_str(&format!("\r\x1b[{drawn}A"));
                    }
                    let l = lines();
                    for line in &l {
                        out.push_str("\x1b[2K");
                        out.push_str(line);
                        out.push('\n');
                    }
                    drawn = l.len();
                    let mut o = std::io::stdout().lock();
                    let _ = o.write_all(out.as_bytes());
                    let _ = o.flush();
                    drop(o);
                    std::thread::sleep(Duration::from_millis(100));
                }
                let mut o = std::io::stdout().lock();
                if drawn > 0 {
                    let _ = write!(o, "\r\x1b[{drawn}A\x1b[J");
                } else {
                    let _ = write!(o, "\r\x1b[2K");
                }
                let _ = o.flush();
            })
            .ok();
        LiveView { quit, handle }
    }

    /// Stops redrawing and clears the live lines.
    pub fn finish(mut self) {
        self.quit.store(true, Ordering::Release);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}
