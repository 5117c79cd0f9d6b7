//! The command `latlab sched -- CMD` runs: started once tracing is on, in latlab's own process
//! group (so a Ctrl-C at the terminal reaches it, as under `perf stat -- CMD`), its exit status
//! passed on, and never left running when latlab alone is asked to stop.

use crate::error::{Error, Result};
use std::os::unix::process::ExitStatusExt;
use std::time::{Duration, Instant};

/// A running command.
pub struct Child {
    c: std::process::Child,
}

/// How long a command asked to stop (SIGTERM) gets before SIGKILL.
const GRACE: Duration = Duration::from_secs(1);

/// Its status as a shell reports it: the exit code, or 128 + the signal that killed it.
fn code(s: std::process::ExitStatus) -> i32 {
    s.code().unwrap_or_else(|| 128 + s.signal().unwrap_or(0))
}

impl Child {
    /// Runs `argv` (exit 2 naming it when it cannot be executed).
    pub fn spawn(argv: &[String]) -> Result<Child> {
        let (cmd, args) = argv
            .split_first()
            .ok_or_else(|| Error::Usage("--: no command after it".into()))?;
        std::process::Command::new(cmd)
            .args(args)
            .spawn()
            .map(|c| Child { c })
            .map_err(|e| Error::flag("--", cmd, format!("cannot run it: {e}")))
    }

    /// Its process id.
    pub fn pid(&self) -> i32 {
        self.c.id() as i32
    }

    /// Its status once it has exited (reaped), else None.
    pub fn try_status(&mut self) -> Option<i32> {
        self.c.try_wait().ok().flatten().map(code)
    }

    /// Ends it: SIGTERM, then SIGKILL after a grace period; reaps it and returns its status.
    pub fn stop(&mut self) -> i32 {
        if let Some(s) = self.try_status() {
            return s;
        }
        crate::sys::process::signal(self.pid(), libc::SIGTERM);
        let t = Instant::now();
        while t.elapsed() < GRACE {
            if let Some(s) = self.try_status() {
                return s;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.c.kill();
        self.c.wait().map(code).unwrap_or(128 + libc::SIGKILL)
    }
}
