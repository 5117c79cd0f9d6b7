//! `latlab pi`: the classic priority inversion (pi_stress, pip_stress), repeated. Three
//! SCHED_FIFO tasks share one CPU: low takes a pthread mutex and wakes high, which blocks on
//! it, then wakes medium, which spins. Without a protocol medium runs while high waits
//! (inversion); with priority inheritance low runs at high's priority and high waits only for
//! low's critical section. Each cycle's wait of high is timed; a cycle counts as an inversion
//! when medium started running while high was waiting (a fact of scheduling order, not a
//! threshold on time), and any inversion fails the run (exit 1).

pub(crate) mod args;
pub(crate) mod report;

use latlab_core::config::{DisplayUnit, Policy};
use crate::driver::Ctx;
use latlab_core::error::{Error, Result};
use latlab_core::result::{Run, Series};
use latlab_core::rt::{Applied, Placement};
use latlab_core::stats::Recorder;
use latlab_core::sys::clock;
use latlab_core::sys::ipcprim::PosixSem;
use latlab_core::sys::pimutex::{PiMutex, Protocol};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, SystemTime};

/// Validated `pi` settings.
#[derive(Debug, Clone, serde::Serialize)]
pub(crate) struct PiConfig {
    /// The mutex's protocol.
    pub(crate) protocol: Protocol,
    /// The one CPU all three tasks share.
    pub(crate) cpu: usize,
    /// SCHED_FIFO priority of the high task (medium one below, low two below).
    pub(crate) prio: i32,
    /// Low's critical section (ns of spinning while it holds the mutex).
    pub(crate) cs_ns: u64,
    /// Medium's spin per cycle (ns).
    pub(crate) spin_ns: u64,
    /// Time between cycles (ns).
    pub(crate) interval_ns: u64,
    /// Cycles to run (None: until the duration or Ctrl-C).
    pub(crate) loops: Option<u64>,
    /// How long to run (ns; None: until the loops or Ctrl-C).
    pub(crate) duration_ns: Option<u64>,
    /// Unit on screen.
    pub(crate) unit: DisplayUnit,
}

/// A finished `pi` run.
pub(crate) struct PiOutcome {
    /// The result model.
    pub(crate) run: Run,
    /// Cycles low completed.
    pub(crate) cycles: u64,
    /// Cycles in which medium ran while high waited.
    pub(crate) inversions: u64,
    /// Times medium spun.
    pub(crate) medium_runs: u64,
}

struct Shared {
    mutex: PiMutex,
    wake_high: PosixSem,
    wake_medium: PosixSem,
    medium_started: AtomicU64,
    quit: AtomicBool,
}

enum Ended {
    Low(u64),
    Medium(u64),
    High(Recorder, u64),
}

/// The protocol's name on the command line.
pub(crate) fn protocol_name(p: Protocol) -> &'static str {
    match p {
        Protocol::None => "none",
        Protocol::Inherit => "inherit",
        Protocol::Protect => "protect",
    }
}

const LOW: usize = 0;
const MEDIUM: usize = 1;

fn spin_until(t: u64) {
    while clock::now_ns(libc::CLOCK_MONOTONIC) < t {
        std::hint::spin_loop();
    }
}

fn low_loop(sh: &Shared, cfg: &PiConfig, stop: &AtomicBool) -> u64 {
    let clk = libc::CLOCK_MONOTONIC;
    let begin = clock::now_ns(clk);
    let end = cfg
        .duration_ns
        .map_or(u64::MAX, |d| begin.saturating_add(d));
    let loops = cfg.loops.unwrap_or(u64::MAX);
    let mut next = begin + cfg.interval_ns;
    let mut cycles = 0;
    while cycles < loops && next < end && !stop.load(Ordering::Relaxed) {
        while clock::sleep_until_ns(clk, next) == libc::EINTR && !stop.load(Ordering::Relaxed) {}
        if stop.load(Ordering::Relaxed) {
            break;
        }
        sh.medium_started.store(0, Ordering::SeqCst);
        if sh.mutex.lock().is_err() {
            break;
        }
        sh.wake_high.post();
        sh.wake_medium.post();
        spin_until(clock::now_ns(clk) + cfg.cs_ns);
        sh.mutex.unlock();
        cycles += 1;
        next += cfg.interval_ns;
        let now = clock::now_ns(clk);
        if now >= next {
            next += ((now - next) / cfg.interval_ns + 1) * cfg.interval_ns;
        }
    }
    sh.quit.store(true, Ordering::SeqCst);
    sh.wake_high.post();
    sh.wake_medium.post();
    cycles
}

fn medium_loop(sh: &Shared, spin_ns: u64) -> u64 {
    let mut runs = 0;
    while sh.wake_medium.wait() && !sh.quit.load(Ordering::SeqCst) {
        let t = clock::now_ns(libc::CLOCK_MONOTONIC);
        sh.medium_started.store(t, Ordering::SeqCst);
        spin_until(t + spin_ns);
        runs += 1;
    }
    runs
}

fn high_loop(sh: &Shared, mut rec: Recorder) -> (Recorder, u64) {
    let mut inversions = 0;
    while sh.wake_high.wait() && !sh.quit.load(Ordering::SeqCst) {
        let t0 = clock::now_ns(libc::CLOCK_MONOTONIC);
        if sh.mutex.lock().is_err() {
            break;
        }
        let t1 = clock::now_ns(libc::CLOCK_MONOTONIC);
        sh.mutex.unlock();
        rec.record(t1 - t0);
        let m = sh.medium_started.load(Ordering::SeqCst);
        if m != 0 && m >= t0 && m <= t1 {
            inversions += 1;
        }
    }
    (rec, inversions)
}

/// Starts low, medium and high on the one CPU at their priorities behind a barrier the caller
/// passes last: the one place a run's threads are set up.
fn start_three(
    ctx: &Ctx<'_>,
    cfg: &PiConfig,
    sh: &Arc<Shared>,
    barrier: &Arc<Barrier>,
) -> Result<Vec<std::thread::JoinHandle<(Applied, Ended)>>> {
    let placements: Vec<Placement> = ["pi-low", "pi-medium", "pi-high"]
        .iter()
        .enumerate()
        .map(|(i, name)| Placement {
            name: (*name).into(),
            cpu: Some(cfg.cpu),
            policy: Policy::Fifo,
            prio: cfg.prio - 2 + i as i32,
        })
        .collect();
    let stop = ctx.control().stop.clone();
    ctx.spawn_workers(&placements, barrier.clone(), |i| {
        let (sh, cfg, stop) = (sh.clone(), cfg.clone(), stop.clone());
        move || {
            let rec = Recorder::new();
            move || match i {
                LOW => Ended::Low(low_loop(&sh, &cfg, &stop)),
                MEDIUM => Ended::Medium(medium_loop(&sh, cfg.spin_ns)),
                _ => {
                    let (r, n) = high_loop(&sh, rec);
                    Ended::High(r, n)
                }
            }
        }
    })
    .map_err(|e| latlab_core::rt::start_error("spawning the pi threads", e))
}

fn run(cfg: &PiConfig, ctx: &mut Ctx<'_>) -> Result<PiOutcome> {
    let io = |e| {
        Error::Env(format!(
            "--protocol {}: the mutex was refused: {e}",
            protocol_name(cfg.protocol)
        ))
    };
    let sh = Arc::new(Shared {
        mutex: PiMutex::new(cfg.protocol, cfg.prio).map_err(io)?,
        wake_high: PosixSem::new().map_err(io)?,
        wake_medium: PosixSem::new().map_err(io)?,
        medium_started: AtomicU64::new(0),
        quit: AtomicBool::new(false),
    });
    let started = SystemTime::now();
    let t0 = std::time::Instant::now();
    let barrier = Arc::new(Barrier::new(4));
    let handles = start_three(ctx, cfg, &sh, &barrier)?;
    barrier.wait();
    let (mut cycles, mut medium_runs, mut inversions) = (0, 0, 0);
    let mut rec = Recorder::new();
    let mut applied = Vec::new();
    for h in handles {
        let (a, e) = h
            .join()
            .map_err(|_| Error::Env("a pi thread panicked".into()))?;
        applied.push(a);
        match e {
            Ended::Low(n) => cycles = n,
            Ended::Medium(n) => medium_runs = n,
            Ended::High(r, n) => (rec, inversions) = (r, n),
        }
    }
    // Placement failures reach the warnings through the run's placement log.
    let mut s = Series::from_recorder("high-wait".into(), &rec);
    s.cpu = applied[2].cpu_for(Some(cfg.cpu));
    s.policy = applied[2].policy.to_string();
    s.prio = applied[2].prio;
    s.interval_ns = Some(cfg.interval_ns);
    s.extra = Some(serde_json::json!({
        "protocol": cfg.protocol,
        "cycles": cycles,
        "inversions": inversions,
        "medium_runs": medium_runs,
        "critical_section_ns": cfg.cs_ns,
        "medium_spin_ns": cfg.spin_ns,
    }));
    let mut run = Run {
        series: vec![s],
        duration_s: t0.elapsed().as_secs_f64(),
        ..ctx.run_at(started, serde_json::to_value(cfg).unwrap_or_default())
    };
    if inversions > 0 {
        run.check_failure = Some(format!(
            "priority inversion: in {inversions} of {cycles} cycles the medium task ran while the \
             high task waited for the mutex (protocol {}); the longest wait was {} ns",
            protocol_name(cfg.protocol),
            run.series[0].summary.max_ns
        ));
    }
    Ok(PiOutcome {
        run,
        cycles,
        inversions,
        medium_runs,
    })
}

impl crate::driver::Measurement for PiConfig {
    type Outcome = PiOutcome;
    const KIND: &'static str = "pi";

    fn planned(&self) -> Option<Duration> {
        match (self.duration_ns, self.loops) {
            (Some(d), _) => Some(Duration::from_nanos(d)),
            (None, Some(n)) => Some(Duration::from_nanos(
                n.saturating_add(1).saturating_mul(self.interval_ns),
            )),
            (None, None) => None,
        }
    }

    fn measured_cpus(&self) -> Option<latlab_core::config::CpuSet> {
        Some(latlab_core::config::CpuSet::from_cpus([self.cpu]))
    }

    fn footprint(&self) -> crate::driver::Footprint {
        crate::driver::Footprint {
            min_rt_prio: Some(self.prio - 2),
            rt: Some((Policy::Fifo, self.prio)),
            mlock: true,
            dma_latency_us: None,
            rt_required: true,
        }
    }

    fn measure(&mut self, ctx: &mut Ctx<'_>) -> Result<PiOutcome> {
        run(self, ctx)
    }

    fn result(o: &mut PiOutcome) -> &mut Run {
        &mut o.run
    }

    fn render(&self, o: &PiOutcome) -> crate::driver::Text {
        report::render(o, self).into()
    }
}
