//! One segment of a qualification: the monitor's probe (cyclic's worker per measured CPU,
//! publishing through tallies and sample rings) measures without a pause while the control
//! thread, pinned to the housekeeping CPUs, drains the rings into the open interval and, every
//! `--checkpoint-every`, stores it as a run of its own: histograms, exact max, counts, the
//! spikes explained so far and the loads' statistics. At the end the last interval is stored,
//! then the final result (`summary.rs`), the JUnit file and the report.

use super::progress::{Now, Progress};
use super::summary::{self, Segment};
use super::{QualifyConfig, QualifyOutcome};
use latlab_core::config::Policy;
use crate::driver::Ctx;
use latlab_core::error::{Error, Result};
use crate::measure::cyclic::worker::WorkerOut;
use crate::measure::monitor::causes::{Causes, DEFAULT_TOP};
use crate::measure::monitor::snapshot::{self, Interval, TraceNow};
use crate::measure::monitor::tally::Tally;
use crate::measure::monitor::{self, probe, traced, Probe};
use latlab_core::result::qualification::{Qualification, State};
use latlab_core::result::sysfacts::SystemFacts;
use latlab_core::result::LoadReport;
use latlab_core::rt;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

/// Spikes one thread can hand over between two visits of the control thread.
const SPIKE_RING: usize = 4096;

/// This boot's id.
fn boot_id() -> String {
    latlab_core::sys::roots::Roots::default()
        .proc("sys/kernel/random/boot_id")
        .unwrap_or_default()
}

/// This process's resident memory (kB).
fn rss_kb() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    s.lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// What the loads did since the previous checkpoint, per load.
fn load_deltas(now: &[Option<LoadReport>], prev: &mut [Option<LoadReport>]) -> Vec<LoadReport> {
    now.iter()
        .zip(prev.iter_mut())
        .filter_map(|(n, p)| {
            let n = n.as_ref()?;
            let (c0, s0) = p.as_ref().map_or((0, 0.0), |p| (p.count, p.seconds));
            let mut d = n.clone();
            d.count = n.count.saturating_sub(c0);
            d.seconds = (n.seconds - s0).max(0.0);
            d.rate_per_s = if d.seconds > 0.0 {
                d.count as f64 / d.seconds
            } else {
                0.0
            };
            d.note = None;
            *p = Some(n.clone());
            Some(d)
        })
        .collect()
}

/// The checkpoints of one segment and what it collects for the final result.
struct Checkpoints<'c> {
    cfg: &'c QualifyConfig,
    snap: snapshot::Context<'c>,
    interval: Interval,
    seq: u64,
    first_started: String,
    facts: SystemFacts,
    boot_id: String,
    loads: Vec<Option<LoadReport>>,
    cost_ms: Option<f64>,
    seg: Segment,
    failures: u64,
}

impl Checkpoints<'_> {
    /// Seconds measured in all, earlier segments included.
    fn measured_s(&self) -> f64 {
        self.cfg.measured_before_s() + self.seg.measured_s
    }

    /// Ends the open interval and stores it (unless it holds no sample); returns the line to
    /// say, or None when nothing was stored.
    fn take(
        &mut self,
        ctx: &mut Ctx<'_>,
        tallies: &[Arc<Tally>],
        warnings: &[String],
        trace: Option<TraceNow>,
    ) -> Option<String> {
        let seq = self.seq + 1;
        let mut run = self
            .interval
            .take(&self.snap, ctx, seq, tallies, warnings.to_vec(), trace);
        if run.series.iter().all(|s| s.summary.count == 0) {
            return None;
        }
        self.seq = seq;
        run.loads = load_deltas(&ctx.load_progress(), &mut self.loads);
        summary::add_loads(&mut self.seg.loads, &run.loads);
        self.seg.measured_s += run.duration_s;
        if self.first_started.is_empty() {
            self.first_started = run.started.clone();
        }
        run.qualification = Some(Box::new(Qualification {
            id: self.cfg.id.clone(),
            state: State::InProgress,
            segment: self.seg.number,
            interval: Some(seq),
            planned_s: self.cfg.duration_ns as f64 / 1e9,
            measured_s: self.measured_s(),
            first_started: self.first_started.clone(),
            host: run.environment.hostname.clone(),
            boot_id: self.boot_id.clone(),
            pid: std::process::id(),
            checkpoint_ms: self.cost_ms,
            rss_kb: rss_kb(),
            system: Some(self.facts.clone()),
            intervals: Vec::new(),
            gaps: Vec::new(),
            verdicts: Vec::new(),
            changed: Vec::new(),
        }));
        for (all, c) in self
            .seg
            .counts
            .iter_mut()
            .zip(summary::counts(self.cfg, &run, seq))
        {
            all.extend(c);
        }
        if let Some(t) = &run.trace {
            self.seg.spikes.extend(t.spikes.iter().cloned());
            self.seg.actions.extend(t.actions.iter().cloned());
        }
        self.seg.intervals.extend(summary::figures(&run));
        let t0 = Instant::now();
        let tags = [
            ("experiment", self.cfg.id.as_str()),
            (super::resume::TAG_ROLE, "interval"),
        ];
        let stored = ctx.keep_tagged(&run, &tags);
        self.cost_ms = Some(t0.elapsed().as_secs_f64() * 1e3);
        let n: u64 = run.series.iter().map(|s| s.summary.count).sum();
        Some(match stored {
            Ok(()) => format!(
                "checkpoint {seq} stored (run {}, {n} samples, {:.0} ms to store)",
                run.id,
                self.cost_ms.unwrap_or(0.0)
            ),
            Err(e) => {
                self.failures += 1;
                format!("checkpoint {seq} NOT stored: {e}")
            }
        })
    }
}

impl<'c> Checkpoints<'c> {
    /// The checkpoints of a segment that starts now.
    fn new(
        cfg: &'c QualifyConfig,
        (policy, prio): (Policy, i32),
        tallies: &[Arc<Tally>],
        started: SystemTime,
        facts: SystemFacts,
    ) -> Checkpoints<'c> {
        let before = cfg.derived.before.as_ref();
        Checkpoints {
            cfg,
            snap: snapshot::Context {
                cpus: &cfg.cpus,
                interval_ns: cfg.interval_ns,
                policy,
                prio,
                parameters: serde_json::to_value(cfg).unwrap_or(serde_json::Value::Null),
            },
            interval: Interval::new(tallies),
            seq: before
                .and_then(|b| b.intervals.iter().map(|i| i.seq).max())
                .unwrap_or(0),
            first_started: before.map(|b| b.first_started.clone()).unwrap_or_default(),
            boot_id: boot_id(),
            loads: vec![None; cfg.loads.len()],
            cost_ms: None,
            seg: Segment {
                number: before.map_or(0, |b| b.segments) + 1,
                started: latlab_core::result::rfc3339(started),
                boot_id: boot_id(),
                facts: facts.clone(),
                intervals: Vec::new(),
                counts: vec![Vec::new(); cfg.derived.requirements.len()],
                recs: Vec::new(),
                measured_s: 0.0,
                spikes: Vec::new(),
                actions: Vec::new(),
                trace: None,
                interrupted: false,
                loads: Vec::new(),
            },
            facts,
            failures: 0,
        }
    }
}

/// The maximum so far per CPU: earlier segments' and this one's threads'.
fn maxima(cfg: &QualifyConfig, tallies: &[Arc<Tally>]) -> Vec<(usize, u64)> {
    cfg.cpus
        .iter()
        .zip(tallies)
        .map(|(&c, t)| {
            let before = cfg
                .derived
                .before
                .as_ref()
                .and_then(|b| b.merged.iter().find(|m| m.0 == c).map(|m| m.1.max))
                .unwrap_or(0);
            (c, before.max(t.max_ns.load(Ordering::Relaxed)))
        })
        .collect()
}

/// Spikes so far (wake-ups over the trace threshold), None without `--trace`.
fn spikes(cfg: &QualifyConfig, tallies: &[Arc<Tally>]) -> Option<u64> {
    cfg.trace_threshold_ns?;
    let before: u64 = cfg
        .derived
        .before
        .as_ref()
        .map_or(0, |b| b.intervals.iter().map(|i| i.spikes).sum());
    Some(before + tallies.iter().map(|t| t.exceeded.load(Ordering::Relaxed)).sum::<u64>())
}

/// Runs one segment until its share of the duration is measured or a signal stops it.
pub(crate) fn run(cfg: &QualifyConfig, ctx: &mut Ctx<'_>) -> Result<QualifyOutcome> {
    let mut warnings = std::mem::take(ctx.warnings());
    let policy = probe::policy(cfg.engine, (cfg.policy(), cfg.prio), ctx.rt_granted());
    let mut saved_state = latlab_core::sys::sched::ThreadState::save();
    warnings.extend(monitor::pin_housekeeping(
        &cfg.cpus,
        "the control thread's checkpoints and progress reports",
        ctx.placement(),
    ));
    let n = cfg.cpus.len();
    let control = ctx.control().clone();
    let mut tracer = ctx.take_tracer();
    let causes = tracer
        .as_ref()
        .map(|_| Arc::new(Causes::new(&cfg.cpus, DEFAULT_TOP)));
    let (spike_prods, mut spike_cons) = traced::spike_rings(tracer.is_some(), n, SPIKE_RING);
    let tallies = probe::tallies(n, cfg.trace_threshold_ns);
    let facts = SystemFacts::capture(&cfg.cpus);
    let progress = Progress::new(
        cfg.duration_ns as f64 / 1e9,
        cfg.measured_before_s(),
        cfg.quiet,
    );
    let probe = Probe {
        cpus: &cfg.cpus,
        interval_ns: cfg.interval_ns,
        trace_threshold_ns: cfg.trace_threshold_ns,
        engine: cfg.engine,
    };
    let (running, mut consumers) = probe.start(policy, ctx, &tallies, spike_prods)?;
    let started = SystemTime::now();
    let mut cp = Checkpoints::new(cfg, policy, &tallies, started, facts);
    let t0 = Instant::now();
    let deadline = t0 + cfg.remaining();
    let every = Duration::from_nanos(cfg.checkpoint_ns);
    let mut next_checkpoint = t0 + every;
    let mut next_tick = t0;
    loop {
        cp.interval.drain(&mut consumers);
        if let (Some(t), Some(c)) = (tracer.as_mut(), &causes) {
            traced::trace_step(t, &mut spike_cons, c, &mut cp.interval);
        }
        if control.was_interrupted() || Instant::now() >= deadline {
            control.stop.store(true, Ordering::Release);
        }
        if control.stop.load(Ordering::Acquire) || running.all_done() {
            break;
        }
        if Instant::now() >= next_checkpoint {
            let trace = traced::now(tracer.as_ref(), causes.as_deref());
            if let Some(line) = cp.take(ctx, &tallies, &warnings, trace) {
                let max = maxima(cfg, &tallies);
                progress.checkpoint(&line, &cp.now(&max, &tallies));
            }
            next_checkpoint = monitor::next_ahead(next_checkpoint, every);
        }
        if Instant::now() >= next_tick {
            let max = maxima(cfg, &tallies);
            progress.tick(&cp.now(&max, &tallies));
            next_tick += Duration::from_secs(1);
        }
        let left = deadline.saturating_duration_since(Instant::now());
        running.bell.wait(left.min(Duration::from_millis(100)));
    }
    progress.finish();
    let outs = running.stop(&control)?;
    saved_state.restore();
    cp.interval.drain(&mut consumers);
    let spikes_lost = outs.iter().map(|(_, o)| o.spikes_lost).sum();
    let trace = match (tracer.take(), &causes) {
        (Some(t), Some(c)) => Some(traced::finish_trace(
            t,
            &mut spike_cons,
            spikes_lost,
            c,
            &mut cp.interval,
            &mut warnings,
        )),
        _ => None,
    };
    cp.seg.trace = trace.as_ref().map(|t| t.header.clone());
    if let Some(line) = cp.take(ctx, &tallies, &warnings, trace) {
        let max = maxima(cfg, &tallies);
        let now = Now {
            // The interval just taken ended the measuring: no open one to add.
            measured_s: cp.measured_s(),
            ..cp.now(&max, &tallies)
        };
        progress.checkpoint(&line, &now);
    }
    finish(cfg, ctx, cp, outs, warnings, policy)
}

impl Checkpoints<'_> {
    /// The progress figures now, with the maxima `max`.
    fn now<'m>(&self, max: &'m [(usize, u64)], tallies: &[Arc<Tally>]) -> Now<'m> {
        Now {
            measured_s: self.measured_s() + self.interval_age(),
            max,
            spikes: spikes(self.cfg, tallies),
            checkpoints: self.seq,
        }
    }

    /// Seconds the open interval has run.
    fn interval_age(&self) -> f64 {
        self.interval
            .started()
            .elapsed()
            .map_or(0.0, |d| d.as_secs_f64())
    }
}

/// The final result of the segment: stored with its state, the JUnit file and the report
/// written, the lock let go of when the qualification is finished.
fn finish(
    cfg: &QualifyConfig,
    ctx: &mut Ctx<'_>,
    mut cp: Checkpoints<'_>,
    outs: Vec<(rt::Applied, WorkerOut)>,
    mut warnings: Vec<String>,
    (policy, prio): (Policy, i32),
) -> Result<QualifyOutcome> {
    let control = ctx.control().clone();
    let lost: u64 = outs.iter().map(|(_, o)| o.lost).sum();
    if lost > 0 {
        warnings.push(format!(
            "the control thread lost {lost} samples (it fell behind); the checkpoints miss them, the final series does not"
        ));
    }
    if cp.failures > 0 {
        warnings.push(format!(
            "{} checkpoint(s) could not be stored; a kill before the end would have lost them",
            cp.failures
        ));
    }
    cp.seg.recs = probe::per_cpu(outs, &cfg.cpus);
    cp.seg.interrupted = control.was_interrupted();
    let started = humantime::parse_rfc3339(&cp.seg.started).unwrap_or_else(|_| SystemTime::now());
    let parameters = serde_json::to_value(cfg).unwrap_or(serde_json::Value::Null);
    let mut base = ctx.run_with(started, parameters, warnings);
    // Its own id, whatever the intervals' (a run id comes from a start time).
    base.id = latlab_core::result::new_run_id(SystemTime::now());
    let (run, cases) = summary::finish(cfg, base, cp.seg, policy, prio);
    let q = run.qualification.as_deref();
    let state = q.map_or(State::Interrupted, |q| q.state);
    // The driver stores it (with the loads' final reports and its warnings), tagged with its
    // state.
    ctx.tag_result(super::resume::TAG_ROLE, super::resume::role(state));
    let mut written = Vec::new();
    // JUnit is the verdict of a finished qualification (an interrupted one has none yet, and
    // a service's unit tests for the file to know it is done).
    if let Some(p) = cfg.junit.as_ref().filter(|_| state == State::Finished) {
        latlab_core::output::write_atomic(p, latlab_analysis::gate::junit::xml(&cases).as_bytes())
            .map_err(|e| Error::io(p.display().to_string(), e))?;
        written.push(format!("JUnit {}", p.display()));
    }
    if let Some(p) = &cfg.report {
        latlab_core::output::write_atomic(p, latlab_analysis::report::qualify::page(&run).as_bytes())
            .map_err(|e| Error::io(p.display().to_string(), e))?;
        written.push(format!("report {}", p.display()));
    }
    // Finished or interrupted, no process measures it any more: its lock file goes (the
    // lock is still held until this process ends, so no other takes it meanwhile).
    if let Some(l) = &cfg.derived.lock {
        l.release();
    }
    let verdicts = q.map(|q| q.verdicts.as_slice()).unwrap_or_default();
    let violated = verdicts.iter().any(|v| v.verdict == "violated");
    let undecided = verdicts.iter().any(|v| v.verdict == "undecided")
        || (state == State::Interrupted && !verdicts.is_empty() && !violated);
    Ok(QualifyOutcome {
        run,
        undecided,
        written,
    })
}
