//! The real-time substrate every measurement shares: worker threads started pinned at a
//! policy/priority behind one barrier, a stop flag, a way to wake sleeping workers, and live
//! figures published through atomics for the display thread.

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
    /// Problems met while placing the thread.
    pub warnings: Vec<String>,
}

/// Places the calling thread: pin, set policy (falling back to SCHED_OTHER on refusal), and
/// prefault `stack_bytes` of stack.
pub fn place_current(p: &Placement, stack_bytes: usize) -> Applied {
    let mut warnings = Vec::new();
    if let Some(cpu) = p.cpu {
        if let Err(e) = sys::sched::pin_to_cpu(cpu) {
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
        checked(sys::sched::set_policy(policy, prio), || {
            format!("{}: could not return to SCHED_OTHER", p.name)
        });
    }
    sys::mem::prefault_stack(stack_bytes);
    Applied {
        policy,
        prio,
        warnings,
    }
}

/// Placement failures (a pin or a policy change refused) met on any thread during the run,
/// collected by the driver into the result's warnings (exit 3 under `--strict`).
static PLACEMENT_FAILURES: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

/// Records a failed pin or policy change (never silently dropped). Not for the hot path: only
/// thread set-up calls it.
pub fn placement_failed(what: String) {
    if let Ok(mut v) = PLACEMENT_FAILURES.lock() {
        if !v.contains(&what) {
            v.push(what);
        }
    }
}

/// Checks a placement call: an error becomes a recorded failure described by `what`.
pub fn checked(r: std::io::Result<()>, what: impl FnOnce() -> String) {
    if let Err(e) = r {
        placement_failed(format!("{}: {e}", what()));
    }
}

/// Takes the placement failures recorded so far.
pub fn take_placement_failures() -> Vec<String> {
    PLACEMENT_FAILURES
        .lock()
        .map(|mut v| std::mem::take(&mut *v))
        .unwrap_or_default()
}

/// Stack size given to measuring threads, prefaulted before the barrier.
pub const WORKER_STACK: usize = 256 * 1024;
/// How much of it is prefaulted.
pub const PREFAULT: usize = 128 * 1024;

/// Spawns one worker per placement. Each places itself, runs `setup` (allocate, prefault), waits
/// at a common barrier (the control thread is the last party), then runs `body`.
pub fn spawn_workers<S, T, R>(
    placements: &[Placement],
    barrier: Arc<Barrier>,
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
        let h = std::thread::Builder::new()
            .name(format!("latlab-{}", p.name))
            .stack_size(WORKER_STACK)
            .spawn(move || {
                let applied = place_current(&p, PREFAULT);
                let body = setup();
                b.wait();
                (applied, body())
            })?;
        handles.push(h);
    }
    Ok(handles)
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

/// Stop and interrupt flags shared between the control thread, workers and signal handlers.
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
    /// The process's one set of flags, with SIGINT and SIGTERM routed to them. The first call
    /// installs the handlers (main does it before anything else, so a signal in the first
    /// millisecond is never lost); a second SIGINT/SIGTERM ends the process at once (exit 130).
    pub fn with_signals() -> Control {
        static GLOBAL: std::sync::OnceLock<Control> = std::sync::OnceLock::new();
        GLOBAL
            .get_or_init(|| {
                let c = Control::default();
                // Blocked while the handlers go in: a signal in between waits for all of them.
                sys::process::with_signals_blocked(&[libc::SIGINT, libc::SIGTERM], || {
                    Self::register(&c)
                });
                c
            })
            .clone()
    }

    fn register(c: &Control) {
        for sig in [libc::SIGINT, libc::SIGTERM] {
            // The flags are set in the handler itself, so a measuring thread sees them even
            // when no other thread can run on its CPU.
            let _ = signal_hook::flag::register(sig, c.interrupted.clone());
            let _ = signal_hook::flag::register(sig, c.stop.clone());
            let _ = signal_hook::flag::register_usize(sig, c.signal.clone(), sig as usize);
        }
        // A second signal ends latlab at once (exit 130), but only one that comes a moment
        // after the first: `timeout -s INT` and a terminal both send a signal to the process
        // and its group, so one request can arrive twice within milliseconds, and it must not
        // throw away the result of the first.
        if let Ok(mut signals) = signal_hook::iterator::Signals::new([libc::SIGINT, libc::SIGTERM])
        {
            let _ = std::thread::Builder::new()
                .name("latlab-signals".into())
                .spawn(move || {
                    // Best effort: above the measuring threads, so a second Ctrl-C is seen
                    // even when they hold every CPU (refused without privilege; the first
                    // signal still works through the flags).
                    let _ = sys::sched::set_policy(Policy::Fifo, 99);
                    let mut first: Option<std::time::Instant> = None;
                    for sig in signals.forever() {
                        if EXIT_ON_FIRST_SIGNAL.load(Ordering::SeqCst) {
                            std::process::exit(128 + sig);
                        }
                        match first {
                            None => first = Some(std::time::Instant::now()),
                            Some(t) if t.elapsed() >= SECOND_SIGNAL_AFTER => {
                                if EXIT_ON_SECOND_SIGNAL.load(Ordering::Relaxed) {
                                    crate::note!("latlab: second interrupt: ending at once");
                                    crate::trace::cleanup_on_exit();
                                    std::process::exit(130);
                                }
                            }
                            Some(_) => {}
                        }
                    }
                });
        }
    }

    /// Makes the first SIGINT/SIGTERM end the process (exit 128 + the signal), for commands
    /// that measure nothing, change nothing and have nothing to save (compare, ministat, gate,
    /// runs, report ...): Ctrl-C must stop them at once, even while they wait on a pipe.
    pub fn exit_on_first_signal() {
        EXIT_ON_FIRST_SIGNAL.store(true, Ordering::SeqCst);
        // A signal that came before this call was only recorded: honour it now.
        let c = Control::with_signals();
        if c.was_interrupted() {
            let sig = c.signal.load(Ordering::SeqCst) as i32;
            std::process::exit(128 + if sig > 0 { sig } else { libc::SIGINT });
        }
    }

    /// Undoes `exit_on_first_signal` for the rest of a command that now has work to finish
    /// in order (a bundle import stops between two runs and says how far it got).
    pub fn exit_on_first_signal_off() {
        EXIT_ON_FIRST_SIGNAL.store(false, Ordering::SeqCst);
    }

    /// Keeps the process alive on a second signal (for `latlab run`, which must put its
    /// settings back whatever happens; its measurement child still ends at once).
    pub fn survive_second_signal() {
        EXIT_ON_SECOND_SIGNAL.store(false, Ordering::Relaxed);
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

/// A second SIGINT/SIGTERM sooner than this after the first is the same request delivered
/// twice (to the process and to its group), not a second Ctrl-C.
const SECOND_SIGNAL_AFTER: std::time::Duration = std::time::Duration::from_millis(500);

/// Whether a second signal ends the process at once.
static EXIT_ON_SECOND_SIGNAL: AtomicBool = AtomicBool::new(true);

/// Whether the first signal ends the process (set by `Control::exit_on_first_signal`).
static EXIT_ON_FIRST_SIGNAL: AtomicBool = AtomicBool::new(false);

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

/// What a measurement asks of the machine before its threads start.
#[derive(Debug, Clone)]
pub struct Needs {
    /// The highest real-time (policy, priority) any thread will use, if any.
    pub rt: Option<(Policy, i32)>,
    /// Lock memory.
    pub mlock: bool,
    /// Value to hold in /dev/cpu_dma_latency.
    pub dma_latency_us: Option<i32>,
    /// Fail (exit 3) instead of degrading with a warning.
    pub strict: bool,
}

/// `Needs::strict` for a measurement that cannot work at all without real-time scheduling.
pub const RT_REQUIRED: bool = true;

/// What `prepare` arranged.
#[derive(Debug)]
pub struct Prepared {
    /// False when real-time scheduling was refused: threads must run SCHED_OTHER.
    pub rt_granted: bool,
    /// The PM QoS request, held until dropped.
    pub dma: Option<sys::dma::DmaLatency>,
}

fn degrade(strict: bool, why: String, warnings: &mut Vec<String>) -> crate::Result<()> {
    if strict {
        return Err(crate::Error::Env(format!("--strict: {why}")));
    }
    warnings.push(why);
    Ok(())
}

/// Probes RT privilege, locks memory and holds `/dev/cpu_dma_latency`: each refusal becomes a
/// warning, or exit 3 under `--strict`.
pub fn prepare(n: &Needs, warnings: &mut Vec<String>) -> crate::Result<Prepared> {
    let mut rt_granted = true;
    if let Some((policy, prio)) = n.rt {
        if let Err(why) = sys::privilege::probe_policy(policy, prio) {
            if n.strict {
                return Err(crate::Error::Env(format!(
                    "real-time scheduling is required here (--strict, or a measurement that needs it): {why}"
                )));
            }
            warnings.push(format!("{why}; real-time threads fell back to SCHED_OTHER"));
            rt_granted = false;
        }
    }
    if n.mlock {
        if let Err(e) = sys::mem::mlockall() {
            let why = format!("mlockall failed ({e}); page faults may show up as latency. Raise RLIMIT_MEMLOCK or run as root");
            degrade(n.strict, why, warnings)?;
        }
    }
    let dma = match n.dma_latency_us {
        None => None,
        Some(v) => match sys::dma::DmaLatency::hold(v) {
            Ok(h) => Some(h),
            Err(e) => {
                let why = format!("/dev/cpu_dma_latency: {e}; CPU idle states were not limited (use --no-dma-latency to skip)");
                degrade(n.strict, why, warnings)?;
                None
            }
        },
    };
    Ok(Prepared { rt_granted, dma })
}
