//! `latlab timerlat`: timer latency as the kernel itself measures it on real-time kernels —
//! its timerlat tracer (rtla timerlat's source), split per CPU into the timer interrupt's
//! latency and the thread's — kept, compared and explained like every other latlab run. This
//! file runs the tracer and builds the result; the tracer's setup is in `kernel.rs`, the
//! reading in `collect.rs`, the explanations in `explain.rs`, the text in `report.rs`.

pub(crate) mod args;
pub(crate) mod collect;
pub(crate) mod config;
pub(crate) mod explain;
pub(crate) mod kernel;
mod lower;
pub(crate) mod probe;
pub(crate) mod records;
pub(crate) mod report;

use crate::driver::Ctx;
use latlab_core::error::{Error, Result};
use latlab_core::result::{Run, Series};
use collect::{Collector, CpuLog, Limits};
use config::TimerlatConfig;
use std::time::{Duration, Instant, SystemTime};

/// The series' contexts, in the order `CpuLog` keeps them.
pub(crate) const CONTEXTS: [&str; 3] = ["irq", "thread", "user"];

/// A finished `timerlat` run.
pub(crate) struct TimerlatOutcome {
    /// The result model.
    pub(crate) run: Run,
}

/// Runs the measurement described by `cfg`.
pub(crate) fn run(cfg: &TimerlatConfig, ctx: &mut Ctx<'_>) -> Result<TimerlatOutcome> {
    latlab_trace::set_who("latlab timerlat");
    if latlab_core::sys::sched::euid() != 0 {
        return Err(Error::Env(
            "latlab timerlat needs root: it runs the kernel's timerlat tracer through tracefs \
             (run it with sudo), or measure from user space with `latlab cyclic`"
                .into(),
        ));
    }
    let fs = latlab_trace::tracefs::TraceFs::system(&latlab_core::io::state_dir())?;
    kernel::check_support(&fs.root, "`latlab cyclic`")?;
    let control = ctx.control().clone();
    // The settings lock first (one latlab at a time changes osnoise/), then the holders:
    // another tool's tracer is refused, never taken over.
    let knobs = ctx.settings()?;
    let holders = kernel::holders(&fs.root);
    if !holders.is_empty() {
        return Err(kernel::busy(&holders));
    }
    let running = kernel::start(&fs, knobs, cfg)?;
    let mut saved = latlab_core::sys::sched::ThreadState::save();
    let off = kernel::keep_off(&cfg.cpus, ctx.placement());
    // The run's length counts from the tracer's start, as rtla's -d does.
    let started = SystemTime::now();
    let t0 = Instant::now();
    let explain: Vec<String> = if cfg.threshold_ns.is_some() {
        kernel::EXPLAIN_EVENTS
            .iter()
            .filter(|e| fs.root.join("events").join(e).is_dir())
            .map(|e| e.to_string())
            .collect()
    } else {
        Vec::new()
    };
    let layouts = records::Layouts::learn(&fs.root, &explain)?;
    let pipes: Vec<(usize, std::path::PathBuf)> =
        cfg.cpus.iter().map(|&c| (c, running.inst.pipe(c))).collect();
    let limits = Limits {
        loops: cfg.loops,
        threshold_ns: cfg.threshold_ns,
    };
    let mut col = Collector::open(&pipes, layouts, limits)?;
    let deadline = cfg.duration_ns.map(|d| t0 + Duration::from_nanos(d));
    loop {
        col.drain();
        if col.done() || control.stop.load(std::sync::atomic::Ordering::Relaxed) {
            break;
        }
        let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
        if left == Some(Duration::ZERO) {
            break;
        }
        std::thread::sleep(left.map_or(Duration::from_millis(20), |l| l.min(Duration::from_millis(20))));
    }
    // What another tool changed of the machine-wide settings meanwhile disturbs the run.
    let ground = kernel::changed_settings(&fs.root, cfg, t0);
    // Stop the tracer, then read what its buffers still hold.
    running.stop();
    while col.drain() > 0 {}
    let logs = col.finish();
    saved.restore();
    let mut warnings = running.warnings.clone();
    warnings.extend(off);
    let threads = running.threads.clone();
    drop(running);
    let series = build_series(cfg, &logs, &threads, &mut warnings);
    let mut params = serde_json::to_value(cfg).unwrap_or(serde_json::Value::Null);
    params["engine"] = serde_json::json!("kernel timerlat tracer");
    let trace = cfg.threshold_ns.map(|th| trace_report(cfg, th, &logs));
    ctx.warnings().extend(warnings);
    let mut run = Run {
        interrupted: control.was_interrupted(),
        series,
        duration_s: t0.elapsed().as_secs_f64(),
        trace,
        ..ctx.run_at(started, params)
    };
    for g in &ground {
        run.warnings.push(format!(
            "{} changed from {} to {} while latlab measured (another tool's tracer): the run \
             is disturbed",
            g.what, g.from, g.to
        ));
    }
    run.ground.extend(ground);
    Ok(TimerlatOutcome { run })
}

/// Per CPU, a series per context the kernel sampled (`irq-N`, `thread-N`, `user-N`), each
/// saying how many samples the kernel produced and how many latlab read.
fn build_series(
    cfg: &TimerlatConfig,
    logs: &[CpuLog],
    threads: &[(usize, i32)],
    warnings: &mut Vec<String>,
) -> Vec<Series> {
    let mut out = Vec::new();
    for log in logs {
        let tid = threads.iter().find(|t| t.0 == log.cpu).map(|t| t.1);
        let (policy, prio) = tid
            .and_then(latlab_core::sys::sched::policy_of)
            .and_then(|(p, prio)| Some((latlab_core::config::Policy::from_libc(p)?.to_string(), prio)))
            .unwrap_or(("fifo".into(), cfg.prio.unwrap_or(95)));
        for (i, ctx) in CONTEXTS.iter().enumerate() {
            let produced = log.produced(i);
            // The user-space context exists only where a user thread ran (`timerlat_fd`).
            if i == 2 && produced == 0 && log.rec[i].count == 0 {
                continue;
            }
            let read = log.rec[i].count;
            let mut s = Series::from_recorder(format!("{ctx}-{}", log.cpu), &log.rec[i]);
            s.cpu = Some(log.cpu);
            s.policy = policy.clone();
            s.prio = prio;
            s.interval_ns = Some(cfg.period_ns);
            s.lost_samples = produced.saturating_sub(read);
            s.extra = Some(serde_json::json!({
                "context": ctx,
                "produced": produced,
                "read": read,
                "thread_tid": tid,
            }));
            if s.lost_samples > 0 {
                warnings.push(format!(
                    "CPU {}: the kernel produced {produced} {ctx} samples and latlab read {read}: \
                     {} lost (the tracer's ring buffer overwrote them before they were read)",
                    log.cpu, s.lost_samples
                ));
            }
            out.push(s);
        }
        if log.restarts > 0 {
            warnings.push(format!(
                "CPU {}: the kernel's sample numbering restarted {} time(s) (another tool \
                 restarted the tracer, or the CPU went offline and back): the samples after \
                 it are counted in the same series",
                log.cpu, log.restarts
            ));
        }
        if log.seq[1].first > 2 && log.restarts == 0 {
            warnings.push(format!(
                "CPU {}: the first thread sample read was number {}: the kernel's earlier ones \
                 were not in the buffer",
                log.cpu, log.seq[1].first
            ));
        }
        if log.missed > 0 {
            warnings.push(format!(
                "CPU {}: the kernel's ring buffer lost {} events",
                log.cpu, log.missed
            ));
        }
        if log.bad_pages > 0 {
            warnings.push(format!(
                "CPU {}: {} buffer pages did not parse (their records up to the fault were kept)",
                log.cpu, log.bad_pages
            ));
        }
        if log.rec[1].count == 0 {
            warnings.push(format!(
                "CPU {}: no thread samples were read (the tracer's thread never ran there)",
                log.cpu
            ));
        }
    }
    out
}

/// The explanations as the trace part of the run, which reports, `why`, the monitor's causes
/// and the HTML report read.
fn trace_report(cfg: &TimerlatConfig, th: u64, logs: &[CpuLog]) -> latlab_core::result::trace::TraceReport {
    let mut spikes: Vec<_> = logs.iter().flat_map(|l| l.spikes.iter().cloned()).collect();
    spikes.sort_by_key(|s| (s.cpu, s.seq));
    let per_cpu = latlab_core::result::culprits::summarise(&spikes, &cfg.cpus);
    latlab_core::result::trace::TraceReport {
        threshold_ns: th,
        cpus: cfg.cpus.clone(),
        events: logs.iter().map(|l| l.records).sum(),
        lost_events: logs.iter().map(|l| l.missed).sum(),
        spikes_dropped: logs.iter().map(|l| l.spikes_dropped).sum(),
        spikes,
        per_cpu,
        ..Default::default()
    }
}

impl crate::driver::Measurement for TimerlatConfig {
    type Outcome = TimerlatOutcome;
    const KIND: &'static str = "timerlat";

    fn planned(&self) -> Option<Duration> {
        let by_loops = self
            .loops
            .map(|l| Duration::from_nanos(l.saturating_mul(self.period_ns)));
        match (self.duration_ns.map(Duration::from_nanos), by_loops) {
            (Some(d), Some(l)) => Some(d.min(l)),
            (d, l) => d.or(l),
        }
    }

    fn planned_rate(&self) -> Option<f64> {
        Some(2.0 * self.cpus.len() as f64 * 1e9 / self.period_ns as f64)
    }

    fn measured_cpus(&self) -> Option<latlab_core::config::CpuSet> {
        Some(latlab_core::config::CpuSet::from_cpus(self.cpus.iter().copied()))
    }

    /// latlab pins nothing: the kernel's threads measure.
    fn pinned_cpus(&self) -> Option<latlab_core::config::CpuSet> {
        None
    }

    fn footprint(&self) -> crate::driver::Footprint {
        crate::driver::Footprint {
            min_rt_prio: None,
            rt: None,
            mlock: false,
            dma_latency_us: None,
            rt_required: false,
        }
    }

    fn measure(&mut self, ctx: &mut Ctx<'_>) -> Result<TimerlatOutcome> {
        run(self, ctx)
    }

    fn result(o: &mut TimerlatOutcome) -> &mut Run {
        &mut o.run
    }

    fn render(&self, o: &TimerlatOutcome) -> crate::driver::Text {
        let mut text = report::render(&o.run, self.unit);
        text.push_str(&latlab_analysis::export::why::why_for(&o.run, self.unit, true));
        text.into()
    }

    fn render_stored(run: &Run, unit: latlab_core::config::DisplayUnit) -> Option<String> {
        Some(report::render(run, unit))
    }
}
