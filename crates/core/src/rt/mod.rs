//! The real-time substrate every measurement shares: worker threads started pinned at a
//! policy/priority behind one barrier, a stop flag, a way to wake sleeping workers, and live
//! figures published through atomics for the display thread.

mod held;
pub mod policy;
mod prepare;

pub use held::{Held, Stray};
pub use prepare::{degrade, prepare, Needs, Prepared};

use crate::config::Policy;
use crate::sys;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier};

/// Live figures of one worker, written only by that worker (plain stores, no RMW), read by the
/// display thread. Cache-line aligned so workers never share a line.
#[repr(align(64))]
#[derive(Debug, Default)]
pub struct Live {
    /// Samples so far.
    pub count: AtomicU64,
    /// Last sample (ns).
    pub cur: AtomicU64,
    /// Smallest sample (ns; u64::MAX before the first).
    pub min: AtomicU64,
    /// Largest sample (ns).
    pub max: AtomicU64,
    /// Sum of samples (ns), wrapping.
    pub sum: AtomicU64,
}

impl Live {
    /// A fresh slot.
    pub fn new() -> Live {
        Live {
            min: AtomicU64::new(u64::MAX),
            ..Default::default()
        }
    }

    /// Publishes the worker's running figures.
    #[inline(always)]
    pub fn publish(&self, count: u64, cur: u64, min: u64, max: u64, sum: u64) {
        self.count.store(count, Ordering::Relaxed);
        self.cur.store(cur, Ordering::Relaxed);
        self.min.store(min, Ordering::Relaxed);
        self.max.store(max, Ordering::Relaxed);
        self.sum.store(sum, Ordering::Relaxed);
    }
}

/// Per-sample figures a measuring thread also publishes to a reader outside the run (the
/// monitor's endpoint): called from the hot loop, so implementations are plain atomic stores,
/// no lock, no allocation.
pub trait Tap: Send + Sync {
    /// Latency sample number `seq` (from 1; ns).
    fn observe(&self, ns: u64, seq: u64);
    /// The thread's running count of overruns.
    fn set_overruns(&self, n: u64);
    /// The thread's running count of samples its raw log lost.
    fn set_lost(&self, n: u64);
    /// The thread's running count of wake-ups made on another CPU than its pinned one (see
    /// [`Stray`]), and the first such CPU.
    fn set_strayed(&self, _n: u64, _cpu: usize) {}
}

/// How a worker thread is to be placed and scheduled.
#[derive(Debug, Clone)]
pub struct Placement {
    /// Thread name (shows in `ps -L`).
    pub name: String,
    /// CPU to pin to.
    pub cpu: Option<usize>,
    /// Policy to run at.
    pub policy: Policy,
    /// Priority to run at.
    pub prio: i32,
}

/// What a worker actually got, which may differ from what was asked.
#[derive(Debug, Clone)]
pub struct Applied {
    /// Policy in force.
    pub policy: Policy,
    /// Priority in force.
    pub prio: i32,
    /// The CPU the thread was on once placed, read back from the kernel (its one allowed CPU
    /// when the pin held, else the CPU it happened to be on): the CPU a result names.
    pub cpu: Option<usize>,
    /// Whether the pin that was asked for held (true when none was asked).
    pub pinned: bool,
    /// Problems met while placing the thread (also in the run's placement log).
    pub warnings: Vec<String>,
}

impl Applied {
    /// The CPU a result names for a thread that asked for `asked`: the CPU read back when a
    /// CPU was asked for (where it really ran, even when the pin was refused), none when the
    /// thread was never meant to be pinned.
    pub fn cpu_for(&self, asked: Option<usize>) -> Option<usize> {
        asked.and(self.cpu).or(asked)
    }
}

/// Places the calling thread: pin, set policy (falling back to SCHED_OTHER on refusal), and
/// prefault `stack_bytes` of stack. Every refusal goes to `log` (the run's placement log,
/// which the driver turns into warnings, or exit 3 under `--strict`) and to the returned
/// `warnings`.
pub fn place_current(p: &Placement, stack_bytes: usize, log: &PlacementLog) -> Applied {
    let mut warnings = Vec::new();
    let mut pinned = true;
    if let Some(cpu) = p.cpu {
        if let Err(e) = sys::sched::pin_to_cpu(cpu) {
            pinned = false;
            warnings.push(format!("{}: could not pin to CPU {cpu}: {e}", p.name));
        }
    }
    let (mut policy, mut prio) = (p.policy, p.prio);
    if let Err(e) = sys::sched::set_policy(p.policy, p.prio) {
        warnings.push(format!(
            "{}: {} priority {} refused ({e}); fell back to SCHED_OTHER",
            p.name, p.policy, p.prio
        ));
        policy = Policy::Other;
        prio = 0;
        log.check(sys::sched::set_policy(policy, prio), || {
            format!("{}: could not return to SCHED_OTHER", p.name)
        });
    }
    let cpu = read_back_cpu();
    if !pinned {
        if let Some(w) = warnings.first_mut() {
            if let Some(c) = cpu {
                w.push_str(&format!("; it ran unpinned, on CPU {c} when it started"));
            }
        }
    }
    for w in &warnings {
        log.failed(w.clone());
    }
    sys::mem::prefault_stack(stack_bytes);
    Applied {
        policy,
        prio,
        cpu,
        pinned,
        warnings,
    }
}

/// The CPU the calling thread is confined to (its affinity holds one CPU), else the one it is
/// on now.
pub(crate) fn read_back_cpu() -> Option<usize> {
    match sys::sched::affinity() {
        Ok(v) if v.len() == 1 => Some(v[0]),
        _ => sys::sched::current_cpu(),
    }
}

/// Where one run's placement failures go (a pin, a policy change or a CPU move refused on any
/// of its threads): a handle the driver makes for each run and hands out through its `Ctx`,
/// so nothing of one run leaks into another. The driver records them as warnings, or ends the
/// run with exit 3 under `--strict`.
#[derive(Debug, Clone, Default)]
pub struct PlacementLog(
    Arc<std::sync::Mutex<Vec<String>>>,
    /// Under `--strict`: the run's stop flag, set at the first failure (the run ends there
    /// rather than measuring to its end only to be refused).
    Option<Arc<AtomicBool>>,
);

impl PlacementLog {
    /// A log that stops the run at its first failure (`--strict`) by setting `stop`.
    pub fn stopping(stop: Arc<AtomicBool>) -> PlacementLog {
        PlacementLog(Arc::default(), Some(stop))
    }

    /// Records a failure (never silently dropped; a repeat of the same text is kept once).
    /// Not for the hot path: only thread set-up calls it.
    pub fn failed(&self, what: String) {
        if let Ok(mut v) = self.0.lock() {
            if !v.contains(&what) {
                v.push(what);
            }
        }
        if let Some(stop) = &self.1 {
            stop.store(true, Ordering::Release);
        }
    }

    /// Checks a placement call: an error becomes a recorded failure described by `what`.
    pub fn check(&self, r: std::io::Result<()>, what: impl FnOnce() -> String) {
        if let Err(e) = r {
            self.failed(format!("{}: {e}", what()));
        }
    }

    /// The failures recorded so far (kept).
    pub fn failures(&self) -> Vec<String> {
        self.0.lock().map(|v| v.clone()).unwrap_or_default()
    }
}

/// Stack size given to measuring threads, prefaulted before the barrier.
pub(crate) const WORKER_STACK: usize = 256 * 1024;
/// How much of it is prefaulted.
pub const PREFAULT: usize = 128 * 1024;

/// Spawns one worker per placement. Each places itself, runs `setup` (allocate, prefault), waits
/// at a common barrier (the control thread is the last party), then runs `body`.
pub fn spawn_workers<S, T, R>(
    placements: &[Placement],
    barrier: Arc<Barrier>,
    log: &PlacementLog,
    mut make: impl FnMut(usize) -> S,
) -> std::io::Result<Vec<std::thread::JoinHandle<(Applied, R)>>>
where
    S: FnOnce() -> T + Send + 'static,
    T: FnOnce() -> R,
    R: Send + 'static,
{
    let mut handles = Vec::with_capacity(placements.len());
    for (i, p) in placements.iter().enumerate() {
        let setup = make(i);
        let b = barrier.clone();
        let p = p.clone();
        let log = log.clone();
        let h = std::thread::Builder::new()
            .name(format!("latlab-{}", p.name))
            .stack_size(WORKER_STACK)
            .spawn(move || {
                let applied = place_current(&p, PREFAULT, &log);
                let body = setup();
                b.wait();
                (applied, body())
            })?;
        handles.push(h);
    }
    Ok(handles)
}

/// A refusal to start a task (thread or process), naming the limit when that is the cause:
/// EAGAIN from clone/fork means RLIMIT_NPROC or the cgroup's pids.max is reached.
pub fn start_error(what: &str, e: std::io::Error) -> crate::error::Error {
    if e.raw_os_error() == Some(libc::EAGAIN) {
        crate::error::Error::Env(format!("{what}: {e}{}", crate::sys::procs::LIMIT_HINT))
    } else {
        crate::error::Error::io(what, e)
    }
}

/// Installs a no-op SIGUSR2 handler so `wake` can interrupt a worker's sleep (clock_nanosleep
/// then returns EINTR and the worker sees the stop flag).
pub fn install_wake_handler() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let flag = Arc::new(AtomicBool::new(false));
        let _ = signal_hook::flag::register(libc::SIGUSR2, flag);
    });
}

/// Interrupts the sleep of the thread behind `handle`.
pub fn wake<T>(handle: &std::thread::JoinHandle<T>) {
    sys::process::interrupt_thread(handle, libc::SIGUSR2);
}

/// Set when a second Ctrl-C or SIGTERM came to a process that survives it (a plan, which puts
/// its settings back first): whatever it still waits for (a `post` hook) is cut short.
static SECOND_SIGNAL: AtomicBool = AtomicBool::new(false);

/// Records a second signal that the process survives (the driver's signal thread).
pub fn note_second_signal() {
    SECOND_SIGNAL.store(true, Ordering::SeqCst);
}

/// Whether a second Ctrl-C or SIGTERM came (see [`note_second_signal`]).
pub fn second_signal_received() -> bool {
    SECOND_SIGNAL.load(Ordering::SeqCst)
}

/// Work to do before latlab ends at once on a second Ctrl-C (remove a tracing instance, say),
/// registered by the layer that made it; the driver's signal thread runs them.
static EXIT_HOOKS: std::sync::Mutex<Vec<fn()>> = std::sync::Mutex::new(Vec::new());

/// Registers `f` to run before latlab ends at once on a second signal (idempotent per `f`).
pub fn at_exit(f: fn()) {
    if let Ok(mut v) = EXIT_HOOKS.lock() {
        if !v.iter().any(|g| std::ptr::fn_addr_eq(*g, f)) {
            v.push(f);
        }
    }
}

/// Runs the hooks `at_exit` registered (the driver calls it right before exiting).
pub fn run_exit_hooks() {
    let hooks = EXIT_HOOKS.lock().map(|v| v.clone()).unwrap_or_default();
    for f in hooks {
        f();
    }
}

/// Stop and interrupt flags shared between the control thread, workers and signal handlers.
/// Only the driver routes signals to them (`driver::signals`).
#[derive(Debug, Clone, Default)]
pub struct Control {
    /// Set to end the run; workers check it every loop.
    pub stop: Arc<AtomicBool>,
    /// Set by SIGINT/SIGTERM.
    pub interrupted: Arc<AtomicBool>,
    /// The number of the last SIGINT/SIGTERM received (0: none).
    pub signal: Arc<std::sync::atomic::AtomicUsize>,
}

impl Control {
    /// The exit status of a process ended by the signal received: 128 + its number (130
    /// when none was recorded).
    pub fn signal_exit_code(&self) -> i32 {
        let sig = self.signal.load(Ordering::SeqCst) as i32;
        128 + if sig > 0 { sig } else { libc::SIGINT }
    }

    /// True once a signal asked the run to end.
    pub fn was_interrupted(&self) -> bool {
        self.interrupted.load(Ordering::Relaxed)
    }

    /// True once the run should end (a signal, or a deadline the control thread saw).
    pub fn should_stop(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// Sleeps up to `d`, waking early (within 10 ms) when a signal asks the run to end.
    /// Returns false when interrupted.
    pub fn sleep(&self, d: std::time::Duration) -> bool {
        let end = std::time::Instant::now() + d;
        loop {
            if self.was_interrupted() {
                return false;
            }
            let left = end.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                return true;
            }
            std::thread::sleep(left.min(std::time::Duration::from_millis(10)));
        }
    }
}

/// Doorbells the signal thread rings on SIGINT/SIGTERM (see [`ring_on_signal`]).
static SIGNAL_BELLS: std::sync::Mutex<Vec<std::sync::Weak<Doorbell>>> =
    std::sync::Mutex::new(Vec::new());

/// Has `bell` rung on every SIGINT/SIGTERM while it lives, so a control thread can wait on it
/// for its workers' end and still answer a Ctrl-C at once, instead of waking to poll.
pub fn ring_on_signal(bell: &Arc<Doorbell>) {
    if let Ok(mut bells) = SIGNAL_BELLS.lock() {
        bells.retain(|b| b.strong_count() > 0);
        bells.push(Arc::downgrade(bell));
    }
}

/// Rings every live bell registered with [`ring_on_signal`] (the signal thread, per signal).
pub fn ring_signal_bells() {
    if let Ok(bells) = SIGNAL_BELLS.lock() {
        bells
            .iter()
            .filter_map(|b| b.upgrade())
            .for_each(|b| b.ring());
    }
}

/// Lets workers wake the control thread when they end, so it need not poll often.
#[derive(Debug, Default)]
pub struct Doorbell {
    lock: std::sync::Mutex<bool>,
    cv: std::sync::Condvar,
}

impl Doorbell {
    /// Rings (called by a worker after its loop, never inside it).
    pub fn ring(&self) {
        if let Ok(mut rung) = self.lock.lock() {
            *rung = true;
            self.cv.notify_all();
        }
    }

    /// Waits until rung or `timeout` passes; clears the bell.
    pub fn wait(&self, timeout: std::time::Duration) {
        if let Ok(mut rung) = self.lock.lock() {
            if !*rung {
                if let Ok((g, _)) = self.cv.wait_timeout(rung, timeout) {
                    rung = g;
                } else {
                    return;
                }
            }
            *rung = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signal_rings_the_registered_bells_that_live() {
        let bell = Arc::new(Doorbell::default());
        ring_on_signal(&bell);
        ring_on_signal(&Arc::new(Doorbell::default())); // dropped at once: skipped
        ring_signal_bells();
        // Rung before the wait: it returns at once (a minute would fail the test run).
        let t = std::time::Instant::now();
        bell.wait(std::time::Duration::from_secs(60));
        assert!(t.elapsed() < std::time::Duration::from_secs(30));
    }
}
