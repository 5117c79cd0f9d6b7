//! The kernel's timerlat tracer as the probe of a long-running measurement (`monitor` and
//! `qualify --engine timerlat`, rteval 3.10's default): one reader thread drains latlab's
//! instance and hands each CPU's thread latency to the same raw-sample rings and tallies the
//! cyclic probe feeds, so intervals, checkpoints, /metrics and verdicts read it unchanged.

use super::collect::{Collector, Limits};
use super::config::TimerlatConfig;
use super::records::Context;
use crate::driver::Ctx;
use latlab_core::error::{Error, Result};
use crate::measure::cyclic::worker::WorkerOut;
use latlab_core::rt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Duration;

/// Which probe a long-running measurement uses.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Engine {
    /// latlab's own cyclic threads, one per CPU (cyclictest's measurement).
    #[default]
    Cyclic,
    /// The kernel's timerlat tracer (its threads; latlab reads the thread latency).
    Timerlat,
}

/// The policy the probe's measuring threads run at: as asked for cyclic's; for the kernel's
/// timerlat threads SCHED_FIFO at a real-time priority asked for, else the kernel's 95.
pub(crate) fn thread_policy(
    engine: Engine,
    (policy, prio): (latlab_core::config::Policy, i32),
) -> (latlab_core::config::Policy, i32) {
    match engine {
        Engine::Cyclic => (policy, prio),
        Engine::Timerlat if policy.is_rt() && prio > 0 => (latlab_core::config::Policy::Fifo, prio),
        Engine::Timerlat => (latlab_core::config::Policy::Fifo, 95),
    }
}

/// The tracer started for a probe, not yet read.
pub(crate) struct Started {
    running: super::kernel::Running,
    collector: Collector,
    cpus: Vec<usize>,
}

/// Checks the period is one the tracer takes (`flag` names it in the refusal).
pub(crate) fn check_period(flag: &str, text: &str, period_ns: u64) -> Result<()> {
    if (super::config::MIN_PERIOD_NS..=super::config::MAX_PERIOD_NS).contains(&period_ns)
        && period_ns.is_multiple_of(1000)
    {
        Ok(())
    } else {
        Err(Error::flag(
            flag,
            text,
            "--engine timerlat: the kernel's timerlat period is a whole number of µs from 100 us to 1 s",
        ))
    }
}

/// What a command that probes with `--engine ENGINE` cannot do with the kernel's tracer (monitor
/// and qualify alike): a period it refuses (`text` as the user wrote `-i/--interval`), `--trace`.
pub(crate) fn check_engine(
    engine: Engine,
    text: &str,
    period_ns: u64,
    trace: &latlab_trace::args::TraceArgs,
) -> Result<()> {
    if engine != Engine::Timerlat {
        return Ok(());
    }
    check_period("-i/--interval", text, period_ns)?;
    if trace.threshold_ns()?.is_some() {
        return Err(Error::flag(
            "--trace",
            "",
            "--engine timerlat: the kernel's tracer has no --trace here yet; `latlab timerlat --threshold` explains its samples",
        ));
    }
    Ok(())
}

/// Starts the tracer on `cpus` at `period_ns` (its threads SCHED_FIFO `prio`), as
/// `latlab timerlat` does: root, the kernel's support and the holders checked, the settings
/// journaled in the run's held settings.
pub(crate) fn start(ctx: &mut Ctx<'_>, cpus: &[usize], period_ns: u64, prio: Option<i32>) -> Result<Started> {
    if latlab_core::sys::sched::euid() != 0 {
        return Err(Error::Env(
            "--engine timerlat needs root: it runs the kernel's timerlat tracer through tracefs; \
             --engine cyclic measures from user space"
                .into(),
        ));
    }
    latlab_trace::set_who("--engine timerlat");
    let fs = latlab_trace::tracefs::TraceFs::system(&latlab_core::io::state_dir())?;
    super::kernel::check_support(&fs.root, "--engine cyclic (the default)")?;
    let knobs = ctx.settings()?;
    let holders = super::kernel::holders(&fs.root);
    if !holders.is_empty() {
        return Err(super::kernel::busy(&holders));
    }
    let cfg = TimerlatConfig {
        cpus: cpus.to_vec(),
        period_ns,
        duration_ns: None,
        loops: None,
        prio,
        threshold_ns: None,
        unit: latlab_core::config::DisplayUnit::Us,
        quiet: true,
        json: None,
    };
    let running = super::kernel::start(&fs, knobs, &cfg)?;
    ctx.warnings().extend(running.warnings.iter().cloned());
    let layouts = super::records::Layouts::learn(&fs.root, &[])?;
    let pipes: Vec<_> = cpus.iter().map(|&c| (c, running.inst.pipe(c))).collect();
    let limits = Limits {
        loops: None,
        threshold_ns: None,
    };
    let collector = Collector::open(&pipes, layouts, limits)?;
    Ok(Started {
        running,
        collector,
        cpus: cpus.to_vec(),
    })
}

impl Started {
    /// Starts the reader thread behind `barrier` (it waits there once): each thread sample
    /// goes to its CPU's ring (counted lost when full) and tally, until `stop`. It returns,
    /// per CPU, what a cyclic worker would: the exact thread latency, and the samples the ring
    /// or the kernel's buffer lost.
    pub(crate) fn spawn(
        self,
        barrier: Arc<Barrier>,
        mut rings: Vec<Option<rtrb::Producer<u64>>>,
        tallies: Vec<Arc<crate::measure::monitor::tally::Tally>>,
        stop: Arc<AtomicBool>,
        bell: Arc<rt::Doorbell>,
    ) -> Result<std::thread::JoinHandle<Vec<(rt::Applied, WorkerOut)>>> {
        let Started {
            running,
            mut collector,
            cpus,
        } = self;
        std::thread::Builder::new()
            .name("latlab-timerlat".into())
            .spawn(move || {
                barrier.wait();
                let mut full = vec![0u64; cpus.len()];
                let mut sink = |i: usize, c: Context, seq: u64, ns: u64| {
                    if c != Context::Thread {
                        return;
                    }
                    if let Some(r) = rings.get_mut(i).and_then(Option::as_mut) {
                        if r.push(ns).is_err() {
                            full[i] += 1;
                        }
                    }
                    if let Some(t) = tallies.get(i) {
                        t.observe(ns, seq);
                    }
                };
                while !stop.load(Ordering::Acquire) {
                    if collector.drain_with(&mut sink) > 0 {
                        bell.ring();
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
                // The policy the kernel's threads ran at, read before they end.
                let applied: Vec<(latlab_core::config::Policy, i32)> = cpus
                    .iter()
                    .map(|c| {
                        running
                            .threads
                            .iter()
                            .find(|t| t.0 == *c)
                            .and_then(|t| latlab_core::sys::sched::policy_of(t.1))
                            .and_then(|(p, prio)| {
                                Some((latlab_core::config::Policy::from_libc(p)?, prio))
                            })
                            .unwrap_or((latlab_core::config::Policy::Fifo, 95))
                    })
                    .collect();
                running.stop();
                while collector.drain_with(&mut sink) > 0 {}
                // The buffers' files close first: an instance with a reader cannot go.
                let logs = collector.finish();
                drop(running);
                logs.into_iter()
                    .zip(full)
                    .zip(applied)
                    .map(|((log, full), (policy, prio))| {
                        let kernel_lost = log.produced(1).saturating_sub(log.rec[1].count);
                        let applied = rt::Applied {
                            policy,
                            prio,
                            cpu: Some(log.cpu),
                            pinned: true,
                            warnings: Vec::new(),
                        };
                        let out = WorkerOut {
                            rec: log.rec[1].clone(),
                            overruns: 0,
                            lost: full + kernel_lost,
                            linear: Vec::new(),
                            linear_overflow: 0,
                            tripped_at: None,
                            tripped_spike: None,
                            cpu: Some(log.cpu),
                            timeline: latlab_core::result::TimelineRecorder::new(
                                latlab_core::result::timeline::DEFAULT_WIDTH_NS,
                            )
                            .finish(0),
                            spikes_lost: 0,
                            deadline: None,
                        };
                        (applied, out)
                    })
                    .collect()
            })
            .map_err(|e| Error::Env(format!("cannot start the timerlat reader: {e}")))
    }
}

/// The measuring threads of a long-running measurement: cyclic's workers, or the tracer's
/// reader.
pub(crate) enum Threads {
    /// One cyclic worker per CPU.
    Workers(Vec<std::thread::JoinHandle<(rt::Applied, WorkerOut)>>),
    /// The timerlat reader, for every CPU.
    Tracer(std::thread::JoinHandle<Vec<(rt::Applied, WorkerOut)>>),
}

impl Threads {
    /// Wakes any asleep (they then see the stop flag).
    pub(crate) fn wake(&self) {
        match self {
            Threads::Workers(v) => v.iter().for_each(rt::wake),
            Threads::Tracer(h) => rt::wake(h),
        }
    }

    /// Collects what each kept, per CPU in order.
    pub fn join(self) -> Result<Vec<(rt::Applied, WorkerOut)>> {
        let panicked = |_| Error::Env("a measuring thread panicked".into());
        match self {
            Threads::Workers(v) => v.into_iter().map(|h| h.join().map_err(panicked)).collect(),
            Threads::Tracer(h) => h.join().map_err(panicked),
        }
    }
}
