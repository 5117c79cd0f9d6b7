//! `latlab ipc`: how long one task takes to run after another wakes it, by POSIX message
//! queue, POSIX or SysV semaphore, sigwait, signal handler, futex, eventfd or pipe (rt-tests'
//! pmqtest, ptsematest, svsematest, sigwaittest and signaltest in one measurement). A sender
//! stamps the clock right before each send; the receiver reads it when it runs and answers on
//! the same mechanism, so every message is counted: one latency series per method, like
//! `cyclic`'s, with overruns when the answer came after the next send was due.

pub(crate) mod args;
pub(crate) mod methods;
mod pair;
pub(crate) mod report;
pub(crate) mod ring;

use latlab_core::config::{DisplayUnit, Policy, TaskKind};
use crate::driver::Ctx;
use latlab_core::error::{Error, Result};
use latlab_core::result::{Run, Series};
use latlab_core::rt::Applied;
use latlab_core::stats::Recorder;
use latlab_core::sys::{self, taskpair::SharedBox};
use methods::{Chan, Method, RECEIVER, SENDER};
use pair::{start_pair, Ended, Shared};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, SystemTime};

/// Validated `ipc` settings.
#[derive(Debug, Clone, serde::Serialize)]
pub(crate) struct IpcConfig {
    /// Methods, run one after the other.
    pub(crate) methods: Vec<Method>,
    /// CPU of the sender and of the receiver (None: not pinned).
    pub(crate) cpus: [Option<usize>; 2],
    /// Policy of both tasks.
    pub(crate) policy: Policy,
    /// Priority of the receiver.
    pub(crate) prio: i32,
    /// Priority of the sender (None: one below the receiver's).
    pub(crate) sender_prio: Option<i32>,
    /// The sender is a thread of latlab or a forked process.
    pub(crate) tasks: TaskKind,
    /// Time between sends (ns).
    pub(crate) interval_ns: u64,
    /// Messages per method (None: until the duration or Ctrl-C).
    pub(crate) loops: Option<u64>,
    /// Time per method (ns).
    pub(crate) duration_ns: Option<u64>,
    /// signaltest's ring of this many threads (`--method sigwait` only), None: a pair.
    pub(crate) ring: Option<usize>,
    /// Round trips per interval in a ring (back to back, as signaltest's 16).
    pub(crate) burst: u64,
    /// Unit on screen.
    pub(crate) unit: DisplayUnit,
}

impl IpcConfig {
    /// The sender's priority: as asked, else one below the receiver's (not below 1 for
    /// real-time policies).
    pub(crate) fn sender_prio(&self) -> i32 {
        if let Some(p) = self.sender_prio {
            p
        } else if self.policy.is_rt() {
            (self.prio - 1).max(1)
        } else {
            self.prio
        }
    }
}

/// What one method measured.
#[derive(Debug)]
pub(crate) struct MethodOut {
    /// The method.
    pub(crate) method: Method,
    /// Messages sent (each one timed by the receiver unless the run broke).
    pub(crate) sent: u64,
    /// Latencies (ns) seen by the receiver.
    pub(crate) rec: Recorder,
    /// Sends that were due while the previous answer had not come: whole intervals missed.
    pub(crate) overruns: u64,
    /// Wake-ups of the receiver that did not answer its "ready" (another process posted to
    /// or wrote into the channel): not timed.
    pub(crate) foreign: u64,
    /// What the sender and the receiver got (policy and priority in force).
    pub(crate) applied: [Applied; 2],
}

/// A finished `ipc` run.
pub(crate) struct IpcOutcome {
    /// The result model.
    pub(crate) run: Run,
    /// Per method.
    pub(crate) methods: Vec<MethodOut>,
}

/// Runs one method; with the reason when the pair broke before the end (what it timed is kept).
fn measure_one(
    ctx: &Ctx<'_>,
    cfg: &IpcConfig,
    method: Method,
) -> Result<(MethodOut, Option<String>, Option<String>)> {
    let refused = |e: std::io::Error| create_refused(method, e);
    let state = latlab_core::io::state_dir();
    let chan =
        Chan::new(method, cfg.tasks == TaskKind::Processes, Some(&state)).map_err(refused)?;
    if method == Method::SysvSem {
        // A second Ctrl-C ends latlab at once: its SysV set must not outlive it.
        latlab_core::rt::at_exit(sys::sysvsem::remove_live_sets);
    }
    let shared = Arc::new(
        SharedBox::new(Shared {
            chan,
            stamp: AtomicU64::new(0),
            sent: AtomicU64::new(0),
            quit: AtomicBool::new(false),
            broken: AtomicBool::new(false),
            child_ready: AtomicBool::new(false),
            waiting_since: AtomicU64::new(0),
            gave_up: Default::default(),
            unreaped: AtomicBool::new(false),
            sender_tid: Default::default(),
            receiver_tid: Default::default(),
            stalled: Default::default(),
        })
        .map_err(refused)?,
    );
    let barrier = Arc::new(Barrier::new(3));
    let handles = start_pair(ctx, cfg, &shared, &barrier)?;
    barrier.wait();
    // A side still waiting a second after a stop waits for a message that will not come (one
    // lost, taken by another process): both are woken with the pair marked broken. So is a
    // sender thread found not answering past the planned end (a forked sender has its own
    // watcher, which kills it), and a pair already broken whose sides still wait.
    let threads = cfg.tasks != TaskKind::Processes;
    let mut watch = pair::Watch::new(pair::Pace::of(cfg), threads);
    let mut stuck = || {
        let tid = shared.sender_tid.load(Ordering::SeqCst);
        let gave_up = threads.then(|| watch.stuck(&shared, tid)).flatten();
        if let Some(state) = gave_up {
            shared.gave_up.store(state, Ordering::SeqCst);
        }
        gave_up.is_some() || shared.broken.load(Ordering::SeqCst)
    };
    await_workers(ctx, &handles, &mut stuck, || pair::fail(&shared));
    let mut out = MethodOut {
        method,
        sent: 0,
        rec: Recorder::new(),
        overruns: 0,
        foreign: 0,
        applied: [fallback(), fallback()],
    };
    let mut no_sender = None;
    for (i, h) in handles.into_iter().enumerate() {
        let (applied, side) = h
            .join()
            .map_err(|_| Error::Env("an ipc thread panicked".into()))?;
        out.applied[i] = applied;
        match side {
            Ended::Receiver(r) => {
                out.rec = r.rec;
                out.overruns = r.overruns;
                out.foreign = r.foreign;
            }
            Ended::NoSender(why) => no_sender = Some(why),
            Ended::Sender | Ended::Failed => {}
        }
    }
    if let Some(why) = no_sender {
        return Err(Error::Env(format!("--method {}: {why}", method.name())));
    }
    out.sent = shared.sent.load(Ordering::SeqCst);
    let broken = broken_message(cfg, method, &shared, &out);
    // A stall the sender came back from (a run with no planned end waits for it) is said too.
    let stalled = shared.stalled.load(Ordering::SeqCst);
    let recovered = (broken.is_none() && stalled != 0).then(|| {
        format!(
            "--method {}: {}; it answered again",
            method.name(),
            pair::stalled_text(stalled, threads)
        )
    });
    Ok((out, broken, recovered))
}

/// The kernel's refusal to create the channel of `method`, with a hint where a system limit
/// is the cause.
fn create_refused(method: Method, e: std::io::Error) -> Error {
    let hint = match (method, e.raw_os_error()) {
        (Method::SysvSem, Some(libc::ENOSPC)) => {
            " (the system's SysV semaphore sets are used up: see kernel.sem, its 4th \
             field, semmni, in /proc/sys/kernel/sem)"
        }
        (Method::Pmq, Some(libc::ENOSPC)) => {
            " (the system's message queues are used up: raise \
             /proc/sys/fs/mqueue/queues_max)"
        }
        (Method::Pmq, Some(libc::EMFILE)) => {
            " (this user's message queue memory, RLIMIT_MSGQUEUE, is used up)"
        }
        _ => "",
    };
    Error::Env(format!(
        "--method {}: the kernel refused to create it: {e}{hint}",
        method.name()
    ))
}

/// What broke the pair, if it broke: a send or receive failed, after how many messages, and
/// why as far as the sides could tell.
fn broken_message(
    cfg: &IpcConfig,
    method: Method,
    shared: &Shared,
    out: &MethodOut,
) -> Option<String> {
    shared.broken.load(Ordering::SeqCst).then(|| {
        format!(
            "--method {}{}: a send or receive failed after {} message{}{}",
            method.name(),
            match (
                cfg.tasks,
                shared.gave_up.load(Ordering::SeqCst),
                shared.stalled.load(Ordering::SeqCst),
            ) {
                (tasks, 0, stalled) if stalled != 0 => format!(
                    " ({} until the stop)",
                    pair::stalled_text(stalled, tasks != TaskKind::Processes)
                ),
                (TaskKind::Processes, state, _) => format!(
                    " (--tasks processes: {})",
                    pair::gave_up_text(state, shared.unreaped.load(Ordering::SeqCst), false)
                ),
                (_, 0, _) => String::new(),
                (_, state, _) => format!(" ({})", pair::gave_up_text(state, false, true)),
            },
            out.sent,
            if out.sent == 1 { "" } else { "s" },
            if out.rec.count > 0 {
                "; the series keeps what was timed"
            } else {
                ""
            }
        )
    })
}

/// Waits until every worker has finished. Ctrl-C/SIGTERM land on another thread: on a stop
/// the workers' sleeps (which may be a long interval) are interrupted so they see it at once;
/// workers still running [`UNSTICK_AFTER`] later are handed to `unstick`, as they are at once
/// when `stuck` (asked at every poll) finds them waiting for what will not come. From then on
/// `unstick` is called at every poll until they end: another process may take each wake-up
/// it sends (a blocking `semop` on the same set).
fn await_workers<T>(
    ctx: &Ctx<'_>,
    handles: &[std::thread::JoinHandle<T>],
    stuck: &mut dyn FnMut() -> bool,
    unstick: impl Fn(),
) {
    latlab_core::rt::install_wake_handler();
    let mut woken: Option<std::time::Instant> = None;
    let mut unstuck = false;
    while !handles.iter().all(|h| h.is_finished()) {
        unstuck = unstuck || stuck();
        match woken {
            None if ctx.control().stop.load(Ordering::Relaxed) => {
                handles.iter().for_each(latlab_core::rt::wake);
                woken = Some(std::time::Instant::now());
            }
            Some(t) if t.elapsed() > UNSTICK_AFTER => unstuck = true,
            _ => {}
        }
        if unstuck {
            unstick();
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// How long after a stop the workers may still run before they are unstuck.
const UNSTICK_AFTER: Duration = Duration::from_secs(1);

fn fallback() -> Applied {
    Applied {
        policy: Policy::Other,
        prio: 0,
        cpu: None,
        pinned: false,
        warnings: Vec::new(),
    }
}

fn series_of(cfg: &IpcConfig, m: &MethodOut) -> Series {
    let mut s = series_fields(cfg, m);
    if m.foreign > 0 {
        if let Some(e) = s.extra.as_mut().and_then(|e| e.as_object_mut()) {
            e.insert("foreign".into(), m.foreign.into());
        }
    }
    s
}

fn series_fields(cfg: &IpcConfig, m: &MethodOut) -> Series {
    if let Some(n) = cfg.ring {
        let mut s = Series::from_recorder("sigwait-ring".into(), &m.rec);
        s.cpu = m.applied[0].cpu_for(cfg.cpus[0]);
        s.policy = m.applied[0].policy.to_string();
        s.prio = m.applied[0].prio;
        s.interval_ns = Some(cfg.interval_ns);
        s.overruns = m.overruns;
        s.extra = Some(serde_json::json!({
            "sent": m.sent,
            "ring": n,
            "burst": cfg.burst,
            "cpus": cfg.cpus,
        }));
        return s;
    }
    let mut s = Series::from_recorder(m.method.name().into(), &m.rec);
    s.cpu = m.applied[RECEIVER].cpu_for(cfg.cpus[RECEIVER]);
    s.policy = m.applied[RECEIVER].policy.to_string();
    s.prio = m.applied[RECEIVER].prio;
    s.interval_ns = Some(cfg.interval_ns);
    s.overruns = m.overruns;
    s.extra = Some(serde_json::json!({
        "sent": m.sent,
        "sender_cpu": m.applied[SENDER].cpu_for(cfg.cpus[SENDER]),
        "sender_policy": m.applied[SENDER].policy.to_string(),
        "sender_prio": m.applied[SENDER].prio,
        "tasks": cfg.tasks,
    }));
    s
}

fn run(cfg: &IpcConfig, ctx: &mut Ctx<'_>) -> Result<IpcOutcome> {
    let started = SystemTime::now();
    let t0 = std::time::Instant::now();
    let mut outs = Vec::new();
    let mut first_error = None;
    for &m in &cfg.methods {
        if ctx.control().should_stop() {
            break;
        }
        // A method the kernel refuses (its limits, a fork) is skipped; the others still run.
        let measured = match cfg.ring {
            Some(n) => ring::measure(ctx, cfg, n).map(|(o, broken)| (o, broken, None)),
            None => measure_one(ctx, cfg, m),
        };
        let (o, broken, recovered) = match measured {
            Ok(x) => x,
            Err(e) => {
                ctx.warn(format!("{e}; skipped"));
                first_error.get_or_insert(e);
                continue;
            }
        };
        // Placement refusals reach the warnings through the run's placement log, each once.
        if let Some(w) = recovered {
            ctx.warn(w);
        }
        if o.foreign > 0 {
            ctx.warn(format!(
                "--method {}: {} wake-up{} came without a message from its sender \
                 (another process posted to, wrote into or signalled the channel); not timed",
                m.name(),
                o.foreign,
                if o.foreign == 1 { "" } else { "s" }
            ));
        }
        match broken {
            // A broken pair ends its method only: the methods after it have channels of their
            // own. Nothing collected by any method: a plain failure.
            Some(why) if o.rec.count == 0 => {
                ctx.warn(format!("{why}; nothing was timed"));
                first_error.get_or_insert(Error::Env(why));
            }
            Some(why) => {
                ctx.warn(why);
                outs.push(o);
            }
            None => {
                if o.rec.count == 0 {
                    ctx.warn(format!(
                        "--method {}: no message was timed (the run ended before the first \
                         interval)",
                        m.name()
                    ));
                }
                outs.push(o)
            }
        }
    }
    if outs.is_empty() {
        if let Some(e) = first_error {
            return Err(e);
        }
    }
    let params = serde_json::to_value(cfg).unwrap_or_default();
    let run = Run {
        series: outs.iter().map(|m| series_of(cfg, m)).collect(),
        duration_s: t0.elapsed().as_secs_f64(),
        ..ctx.run_at(started, params)
    };
    Ok(IpcOutcome { run, methods: outs })
}

impl crate::driver::Measurement for IpcConfig {
    type Outcome = IpcOutcome;
    const KIND: &'static str = "ipc";

    fn planned(&self) -> Option<Duration> {
        let per = match (self.duration_ns, self.loops) {
            (Some(d), _) => d,
            (None, Some(n)) => n.saturating_mul(self.interval_ns),
            (None, None) => return None,
        };
        Some(Duration::from_nanos(
            per.saturating_mul(self.methods.len() as u64),
        ))
    }

    fn measured_cpus(&self) -> Option<latlab_core::config::CpuSet> {
        let cpus: Option<Vec<usize>> = self.cpus.iter().copied().collect();
        cpus.map(latlab_core::config::CpuSet::from_cpus)
    }

    fn footprint(&self) -> crate::driver::Footprint {
        let rt = self.policy.is_rt();
        crate::driver::Footprint {
            min_rt_prio: rt.then(|| self.sender_prio().min(self.prio)),
            rt: rt.then_some((self.policy, self.prio.max(self.sender_prio()))),
            mlock: true,
            dma_latency_us: None,
            rt_required: false,
        }
    }

    fn measure(&mut self, ctx: &mut Ctx<'_>) -> Result<IpcOutcome> {
        run(self, ctx)
    }

    fn result(o: &mut IpcOutcome) -> &mut Run {
        &mut o.run
    }

    fn render(&self, o: &IpcOutcome) -> crate::driver::Text {
        report::render(o, self).into()
    }
}

/// The CPUs in words, for the report.
fn cpus_text(c: [Option<usize>; 2]) -> String {
    match c {
        [Some(a), Some(b)] if a == b => format!("sender and receiver on CPU {a}"),
        [Some(a), Some(b)] => format!("sender on CPU {a}, receiver on CPU {b}"),
        [None, Some(b)] => format!("sender unpinned, receiver on CPU {b}"),
        [Some(a), None] => format!("sender on CPU {a}, receiver unpinned"),
        [None, None] => "unpinned".into(),
    }
}
