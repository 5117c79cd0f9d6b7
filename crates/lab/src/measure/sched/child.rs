//! The command `latlab sched -- CMD` runs: started once tracing is on, in latlab's own process
//! group (so a Ctrl-C at the terminal reaches it, as under `perf stat -- CMD`), its exit status
//! passed on, and never left running (nor anything it started, a daemon that double-forked
//! or called `setsid` included) when latlab stops it.

use latlab_core::error::{Error, Result};
use std::os::unix::process::ExitStatusExt;
use std::time::{Duration, Instant};

/// A running command.
pub(crate) struct Child {
    c: std::process::Child,
}

/// How long a command asked to stop (SIGTERM) gets before SIGKILL.
const GRACE: Duration = Duration::from_secs(1);

/// The running command's pid (0: none), for the exit hook of a second Ctrl-C.
static RUNNING: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

/// On a second Ctrl-C (latlab ends at once): the command and everything it started get
/// SIGKILL, so none outlives the SIGTERM the first one sent.
fn kill_on_exit() {
    let root = RUNNING.swap(0, std::sync::atomic::Ordering::SeqCst);
    if root > 0 {
        let mut family = descendants(root);
        family.push(root);
        latlab_core::sys::family::signal_all(&family, libc::SIGKILL);
    }
}

/// Its status as a shell reports it: the exit code, or 128 + the signal that killed it.
fn code(s: std::process::ExitStatus) -> i32 {
    s.code().unwrap_or_else(|| 128 + s.signal().unwrap_or(0))
}

impl Child {
    /// Runs `argv` (exit 2 naming it when it cannot be executed).
    pub(crate) fn spawn(argv: &[String]) -> Result<Child> {
        let (cmd, args) = argv
            .split_first()
            .ok_or_else(|| Error::Usage("--: no command after it".into()))?;
        let c = std::process::Command::new(cmd)
            .args(args)
            .spawn()
            .map_err(|e| Error::flag("--", cmd, format!("cannot run it: {e}")))?;
        RUNNING.store(c.id() as i32, std::sync::atomic::Ordering::SeqCst);
        latlab_core::rt::at_exit(kill_on_exit);
        Ok(Child { c })
    }

    /// Its process id.
    pub(crate) fn pid(&self) -> i32 {
        self.c.id() as i32
    }

    /// Its status once it has exited (reaped), else None.
    pub(crate) fn try_status(&mut self) -> Option<i32> {
        self.c.try_wait().ok().flatten().map(code)
    }

    /// Ends it and everything it started: SIGTERM to each, then SIGKILL to what is left after
    /// a grace period; reaps it and returns its status.
    pub(crate) fn stop(&mut self) -> i32 {
        let root = self.pid();
        let mut family = descendants(root);
        if let Some(s) = self.try_status() {
            latlab_core::sys::family::signal_all(&family, libc::SIGKILL);
            return s;
        }
        family.push(root);
        latlab_core::sys::family::signal_all(&family, libc::SIGTERM);
        let t = Instant::now();
        while t.elapsed() < GRACE {
            if self.c.try_wait().ok().flatten().is_some() {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        // What the command started meanwhile, or what ignored SIGTERM.
        for p in descendants(root) {
            if !family.contains(&p) {
                family.push(p);
            }
        }
        latlab_core::sys::family::signal_all(&family, libc::SIGKILL);
        let s = self.c.wait().map(code).unwrap_or(128 + libc::SIGKILL);
        RUNNING.store(0, std::sync::atomic::Ordering::SeqCst);
        s
    }
}

/// What the command left running when it exited by itself.
#[derive(Debug, Default)]
pub(crate) struct Leftovers {
    /// How many processes were ended.
    pub(crate) ended: usize,
    /// Those that could not be, even by SIGKILL (uninterruptible, frozen).
    pub(crate) left: Vec<i32>,
}

impl Child {
    /// After the command exited by itself: ends what it left running (SIGTERM, SIGKILL after
    /// the grace period) and says what that was.
    pub(crate) fn end_leftovers(&mut self) -> Leftovers {
        let left = descendants(self.pid());
        if left.is_empty() {
            return Leftovers::default();
        }
        // Each one found gone (reaped here when it is latlab's) is signalled no more: its pid
        // may be another process's by then.
        let mut live = left.clone();
        let wait_gone = |live: &mut Vec<i32>| {
            let t = Instant::now();
            while t.elapsed() < GRACE && !live.is_empty() {
                live.retain(|&p| !latlab_core::sys::family::gone(p));
                std::thread::sleep(Duration::from_millis(10));
            }
        };
        latlab_core::sys::family::signal_all(&live, libc::SIGTERM);
        wait_gone(&mut live);
        latlab_core::sys::family::signal_all(&live, libc::SIGKILL);
        RUNNING.store(0, std::sync::atomic::Ordering::SeqCst);
        // Those SIGKILL cannot end at once (uninterruptible, frozen) are not counted as ended.
        wait_gone(&mut live);
        Leftovers {
            ended: left.len() - live.len(),
            left: live,
        }
    }
}

/// Every live process the command started: its descendants, and those latlab adopted as a
/// subreaper when their parent died first (a double fork, a `setsid`), which the parent ids
/// no longer tie to it.
fn descendants(root: i32) -> Vec<i32> {
    use latlab_core::sys::family;
    let proc = std::path::Path::new("/proc");
    let t = family::table(proc);
    let mut out = family::descendants(&t, root);
    if let Some(me) = family::me(proc) {
        for p in family::adopted_strays(&t, me, root, family::inherited()) {
            if !out.contains(&p) {
                out.push(p);
            }
        }
    }
    out
}
