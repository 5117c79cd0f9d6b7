//! `latlab ipc`: how long one task takes to run after another wakes it, by POSIX message
//! queue, POSIX or SysV semaphore, sigwait, signal handler, futex, eventfd or pipe (rt-tests'
//! pmqtest, ptsematest, svsematest, sigwaittest and signaltest in one measurement). A sender
//! stamps the clock right before each send; the receiver reads it when it runs and answers on
//! the same mechanism, so every message is counted: one latency series per method, like
//! `cyclic`'s, with overruns when the answer came after the next send was due.

pub mod args;
pub mod methods;
pub mod report;

use crate::config::{DisplayUnit, Policy};
use crate::driver::Ctx;
use crate::error::{Error, Result};
use crate::result::{Run, Series};
use crate::rt::{Applied, Placement};
use crate::stats::Recorder;
use crate::sys::clock;
use methods::{Chan, Method, RECEIVER, SENDER};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, SystemTime};

/// Validated `ipc` settings.
#[derive(Debug, Clone, serde::Serialize)]
pub struct IpcConfig {
    /// Methods, run one after the other.
    pub methods: Vec<Method>,
    /// CPU of the sender and of the receiver (None: not pinned).
    pub cpus: [Option<usize>; 2],
    /// Policy of both tasks.
    pub policy: Policy,
    /// Priority of the receiver.
    pub prio: i32,
    /// Priority of the sender (None: one below the receiver's).
    pub sender_prio: Option<i32>,
    /// Time between sends (ns).
    pub interval_ns: u64,
    /// Messages per method (None: until the duration or Ctrl-C).
    pub loops: Option<u64>,
    /// Time per method (ns).
    pub duration_ns: Option<u64>,
    /// Unit on screen.
    pub unit: DisplayUnit,
}

impl IpcConfig {
    /// The sender's priority: as asked, else one below the receiver's (not below 1 for
    /// real-time policies).
    pub fn sender_prio(&self) -> i32 {
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
pub struct MethodOut {
    /// The method.
    pub method: Method,
    /// Messages sent (each one timed by the receiver unless the run broke).
    pub sent: u64,
    /// Latencies (ns) seen by the receiver.
    pub rec: Recorder,
    /// Sends that were due while the previous answer had not come: whole intervals missed.
    pub overruns: u64,
    /// What the sender and the receiver got (policy and priority in force).
    pub applied: [Applied; 2],
}

/// A finished `ipc` run.
pub struct IpcOutcome {
    /// The result model.
    pub run: Run,
    /// Per method.
    pub methods: Vec<MethodOut>,
}

/// What the two tasks share besides the channel.
struct Shared {
    chan: Chan,
    stamp: AtomicU64,
    quit: AtomicBool,
    broken: AtomicBool,
}

struct SenderOut {
    sent: u64,
    overruns: u64,
}

/// Starts the sender and the receiver for one method, pinned and at their priorities, behind
/// a barrier the caller passes last: the one place a run's threads are set up.
#[allow(clippy::type_complexity)]
fn start_pair(
    ctx: &Ctx<'_>,
    cfg: &IpcConfig,
    shared: &Arc<Shared>,
    barrier: &Arc<Barrier>,
) -> Result<Vec<std::thread::JoinHandle<(Applied, Ended)>>> {
    let placements = [
        Placement {
            name: "ipc-sender".into(),
            cpu: cfg.cpus[SENDER],
            policy: cfg.policy,
            prio: cfg.sender_prio(),
        },
        Placement {
            name: "ipc-receiver".into(),
            cpu: cfg.cpus[RECEIVER],
            policy: cfg.policy,
            prio: cfg.prio,
        },
    ];
    let (interval, loops, duration, stop) = (
        cfg.interval_ns,
        cfg.loops.unwrap_or(u64::MAX),
        cfg.duration_ns,
        ctx.control().stop.clone(),
    );
    ctx.spawn_workers(&placements, barrier.clone(), |i| {
        let sh = shared.clone();
        let stop = stop.clone();
        move || {
            let side = sh.chan.side(i);
            if side.is_err() {
                sh.broken.store(true, Ordering::SeqCst);
            }
            let rec = Recorder::new();
            move || match (i, side) {
                (SENDER, Err(_)) => {
                    sh.quit.store(true, Ordering::SeqCst);
                    sh.chan.send(RECEIVER, 0);
                    Ended::Failed
                }
                (_, Err(_)) => Ended::Failed,
                (SENDER, Ok(s)) => {
                    Ended::Sender(send_loop(&sh, &s, interval, loops, duration, &stop))
                }
                (_, Ok(s)) => Ended::Receiver(receive_loop(&sh, &s, rec)),
            }
        }
    })
    .map_err(|e| Error::io("spawning the ipc threads", e))
}

/// What a thread hands back.
enum Ended {
    Sender(SenderOut),
    Receiver(Recorder),
    Failed,
}

/// Sends at each interval until `loops`, the duration or the stop flag, then tells the
/// receiver to quit. Waits for each answer before the next send.
fn send_loop(
    sh: &Shared,
    side: &methods::Side,
    interval: u64,
    loops: u64,
    duration: Option<u64>,
    stop: &AtomicBool,
) -> SenderOut {
    let clk = libc::CLOCK_MONOTONIC;
    let begin = clock::now_ns(clk);
    let end = duration.map_or(u64::MAX, |d| begin.saturating_add(d));
    let mut next = begin + interval;
    let (mut sent, mut overruns) = (0u64, 0u64);
    while sent < loops && !stop.load(Ordering::Relaxed) && !sh.broken.load(Ordering::Relaxed) {
        if next >= end {
            break;
        }
        while clock::sleep_until_ns(clk, next) == libc::EINTR && !stop.load(Ordering::Relaxed) {}
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let t = clock::now_ns(clk);
        sh.stamp.store(t, Ordering::Release);
        if !sh.chan.send(RECEIVER, t) {
            sh.broken.store(true, Ordering::SeqCst);
            break;
        }
        sent += 1;
        if sh.chan.recv(side).is_none() {
            sh.broken.store(true, Ordering::SeqCst);
            break;
        }
        next += interval;
        let now = clock::now_ns(clk);
        if now >= next {
            let missed = (now - next) / interval + 1;
            overruns += missed;
            next += missed * interval;
        }
    }
    sh.quit.store(true, Ordering::SeqCst);
    sh.chan.send(RECEIVER, 0);
    SenderOut { sent, overruns }
}

/// Times each wake-up against the sender's stamp and answers, until told to quit.
fn receive_loop(sh: &Shared, side: &methods::Side, mut rec: Recorder) -> Recorder {
    while let Some(now) = sh.chan.recv(side) {
        if sh.quit.load(Ordering::Acquire) {
            break;
        }
        rec.record(now.saturating_sub(sh.stamp.load(Ordering::Acquire)));
        if !sh.chan.send(SENDER, 0) {
            break;
        }
    }
    rec
}

fn measure_one(ctx: &Ctx<'_>, cfg: &IpcConfig, method: Method) -> Result<MethodOut> {
    let chan = Chan::new(method).map_err(|e| {
        Error::Env(format!(
            "--method {}: the kernel refused to create it: {e}",
            method.name()
        ))
    })?;
    let shared = Arc::new(Shared {
        chan,
        stamp: AtomicU64::new(0),
        quit: AtomicBool::new(false),
        broken: AtomicBool::new(false),
    });
    let barrier = Arc::new(Barrier::new(3));
    let handles = start_pair(ctx, cfg, &shared, &barrier)?;
    barrier.wait();
    let mut out = MethodOut {
        method,
        sent: 0,
        rec: Recorder::new(),
        overruns: 0,
        applied: [fallback(), fallback()],
    };
    for (i, h) in handles.into_iter().enumerate() {
        let (applied, side) = h
            .join()
            .map_err(|_| Error::Env("an ipc thread panicked".into()))?;
        out.applied[i] = applied;
        match side {
            Ended::Sender(s) => {
                out.sent = s.sent;
                out.overruns = s.overruns;
            }
            Ended::Receiver(r) => out.rec = r,
            Ended::Failed => {}
        }
    }
    if shared.broken.load(Ordering::SeqCst) {
        return Err(Error::Env(format!(
            "--method {}: a send or receive failed after {} messages",
            method.name(),
            out.sent
        )));
    }
    Ok(out)
}

fn fallback() -> Applied {
    Applied {
        policy: Policy::Other,
        prio: 0,
        warnings: Vec::new(),
    }
}

fn series_of(cfg: &IpcConfig, m: &MethodOut) -> Series {
    let mut s = Series::from_recorder(m.method.name().into(), &m.rec);
    s.cpu = cfg.cpus[RECEIVER];
    s.policy = m.applied[RECEIVER].policy.to_string();
    s.prio = m.applied[RECEIVER].prio;
    s.interval_ns = Some(cfg.interval_ns);
    s.overruns = m.overruns;
    s.extra = Some(serde_json::json!({
        "sent": m.sent,
        "sender_cpu": cfg.cpus[SENDER],
        "sender_policy": m.applied[SENDER].policy.to_string(),
        "sender_prio": m.applied[SENDER].prio,
    }));
    s
}

fn run(cfg: &IpcConfig, ctx: &mut Ctx<'_>) -> Result<IpcOutcome> {
    let started = SystemTime::now();
    let t0 = std::time::Instant::now();
    let mut outs = Vec::new();
    for &m in &cfg.methods {
        if ctx.control().should_stop() {
            break;
        }
        let o = measure_one(ctx, cfg, m)?;
        for a in &o.applied {
            for w in &a.warnings {
                ctx.warn(w.clone());
            }
        }
        outs.push(o);
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

    fn measured_cpus(&self) -> Option<crate::config::CpuSet> {
        let cpus: Option<Vec<usize>> = self.cpus.iter().copied().collect();
        cpus.map(crate::config::CpuSet::from_cpus)
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
        [Some(a), Some(b)] if a == b => format!("CPU {a}"),
        [Some(a), Some(b)] => format!("sender CPU {a}, receiver CPU {b}"),
        _ => "unpinned".into(),
    }
}
