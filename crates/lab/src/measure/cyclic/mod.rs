//! `latlab cyclic`: timer wake-up latency of periodic threads (seed 004, cyclictest's method).
//! This file sets the run up, starts the workers behind a barrier, watches the clock and the
//! signals, and builds the result; the loop itself is in `worker.rs`.

pub(crate) mod args;
pub(crate) mod config;
pub(crate) mod deadline;
mod dl_run;
mod lower;

pub(crate) mod report;
pub(crate) mod worker;

use latlab_core::config::Policy;
use crate::driver::Ctx;
use latlab_core::error::{Error, Result};
use crate::measure::cyclic::config::CyclicConfig;
use latlab_core::result::{Run, Series};
use latlab_core::rt::{self, Live, Placement};
use latlab_core::samples::{self, SampleWriter, SeriesHeader};
use latlab_core::stats::Recorder;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant, SystemTime};
use worker::{DeadlineJob, Worker, WorkerOut};

/// A finished `cyclic` run: the result plus what only the text report needs.
pub(crate) struct CyclicOutcome {
    /// The result model.
    pub(crate) run: Run,
    /// Per-thread linear µs histograms (`-h`), with their overflow counts.
    pub(crate) linear: Vec<(Vec<u64>, u64)>,
}

/// Threads run SCHED_OTHER where real-time scheduling was refused (the driver recorded why).
fn adapt(cfg: &mut CyclicConfig, ctx: &Ctx<'_>) {
    if !ctx.rt_granted() {
        for t in cfg.threads.iter_mut().filter(|t| t.policy.is_rt()) {
            t.policy = Policy::Other;
            t.prio = 0;
        }
    }
}

/// Ring capacity: two seconds of samples at the thread's rate, at least 64 Ki entries.
/// `LATLAB_TEST_RING_CAPACITY` (at least 1024) overrides it, so a test can make the writer
/// fall behind on purpose and check that every lost sample is counted.
pub(crate) fn ring_capacity(interval_ns: u64) -> usize {
    if let Some(n) = std::env::var("LATLAB_TEST_RING_CAPACITY")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
    {
        return n.max(1024);
    }
    let per_2s = 2_000_000_000 / interval_ns.max(1);
    (per_2s as usize).clamp(1 << 16, 1 << 22)
}

/// Spikes one thread can hand over between two visits of the control thread.
const SPIKE_RING: usize = 16384;

/// The CPUs `--trace` records: those the threads are pinned to, or all online CPUs when
/// any thread is free to move.
fn trace_cpus(cfg: &CyclicConfig) -> Vec<usize> {
    let mut v: Vec<usize> = cfg.threads.iter().filter_map(|t| t.cpu).collect();
    if v.len() < cfg.threads.len() {
        v = latlab_core::config::CpuSet::online_here().iter().collect();
    }
    v.sort_unstable();
    v.dedup();
    v
}

fn drain_spikes(
    t: &mut latlab_trace::session::Tracer,
    rings: &mut [rtrb::Consumer<latlab_trace::session::RawSpike>],
) {
    for r in rings {
        while let Ok(s) = r.pop() {
            t.offer(s);
        }
    }
}

/// The raw sample log (`--samples`): one ring per thread and the writer thread draining them.
type SampleRings = (
    Option<Vec<Option<rtrb::Producer<u64>>>>,
    Option<SampleWriter>,
);

fn start_samples(cfg: &CyclicConfig) -> Result<SampleRings> {
    let Some(path) = &cfg.samples else {
        return Ok((None, None));
    };
    let hdr: Vec<SeriesHeader> = cfg
        .threads
        .iter()
        .map(|t| SeriesHeader {
            name: t.name.clone(),
            cpu: t.cpu,
        })
        .collect();
    let cap = cfg
        .threads
        .iter()
        .map(|t| ring_capacity(t.interval_ns))
        .max()
        .unwrap_or(1 << 16);
    let (prods, cons) = samples::rings(cfg.threads.len(), cap);
    let writer = SampleWriter::start(path, &hdr, cons)?;
    Ok((Some(prods.into_iter().map(Some).collect()), Some(writer)))
}

/// What the control thread shares with the measuring threads of one run.
struct Team {
    tripped: Arc<AtomicBool>,
    done: Arc<AtomicUsize>,
    bell: Arc<rt::Doorbell>,
    live: Vec<Arc<Live>>,
    /// Each deadline thread's switch, set before the barrier.
    dl: Vec<dl_run::Outcome>,
    barrier: Arc<Barrier>,
}

impl Team {
    fn new(n: usize) -> Team {
        Team {
            tripped: Arc::new(AtomicBool::new(false)),
            done: Arc::new(AtomicUsize::new(0)),
            bell: Arc::new(rt::Doorbell::default()),
            live: (0..n).map(|_| Arc::new(Live::new())).collect(),
            dl: (0..n).map(|_| Arc::default()).collect(),
            barrier: Arc::new(Barrier::new(n + 1)),
        }
    }
}

/// Spawns one placed worker per thread plan behind the team's barrier; each allocates and
/// prefaults everything (and switches to SCHED_DEADLINE) before it waits there.
fn spawn(
    cfg: &CyclicConfig,
    ctx: &Ctx<'_>,
    team: &Team,
    mut samples: Option<Vec<Option<rtrb::Producer<u64>>>>,
    mut spikes: Vec<Option<rtrb::Producer<latlab_trace::session::RawSpike>>>,
    dl_signal: bool,
) -> Result<Vec<std::thread::JoinHandle<(rt::Applied, WorkerOut)>>> {
    // A deadline thread starts as SCHED_OTHER and switches itself once set up.
    let placements: Vec<Placement> = cfg
        .threads
        .iter()
        .map(|t| Placement {
            name: t.name.clone(),
            cpu: t.cpu,
            policy: if t.deadline.is_some() {
                Policy::Other
            } else {
                t.policy
            },
            prio: t.prio,
        })
        .collect();
    let hist_len = cfg.histogram_us.unwrap_or(0) as usize;
    let stop = ctx.control().stop.clone();
    let log = ctx.placement().clone();
    ctx.spawn_workers(&placements, team.barrier.clone(), |i| {
        let t = &cfg.threads[i];
        let (clock, interval_ns, relative) = (cfg.clock.id(), t.interval_ns, cfg.relative);
        let (loops, break_on_ns) = (
            cfg.loops.unwrap_or(u64::MAX),
            cfg.break_on_ns.unwrap_or(u64::MAX),
        );
        let ring = samples.as_mut().and_then(|p| p[i].take());
        let (live, stop, tripped, done, bell) = (
            team.live[i].clone(),
            stop.clone(),
            team.tripped.clone(),
            team.done.clone(),
            team.bell.clone(),
        );
        let spikes = spikes
            .get_mut(i)
            .and_then(Option::take)
            .map(|ring| worker::SpikeOut {
                threshold_ns: cfg.trace_threshold_ns.unwrap_or(u64::MAX),
                series: i as u32,
                cpu: t.cpu.map(|c| c as u32),
                tid: 0,
                ring,
            });
        let (dl_plan, dl_result) = (t.deadline, team.dl[i].clone());
        let held = Some((t.name.clone(), log.clone()));
        move || {
            // Allocated on the measuring thread, placed and before the barrier.
            let w = Worker {
                clock,
                interval_ns,
                relative,
                loops,
                break_on_ns,
                rec: Recorder::new(),
                timeline: latlab_core::result::TimelineRecorder::new(
                    latlab_core::result::timeline::DEFAULT_WIDTH_NS,
                ),
                linear: vec![0; hist_len],
                ring,
                live,
                stop,
                tripped,
                done,
                bell,
                tally: None,
                spikes,
                held,
            };
            // Last thing before the barrier: everything is allocated and prefaulted.
            let switched = dl_plan.map(|d| deadline::switch(&d.params, dl_signal));
            let ok = matches!(switched, Some(Ok(_)));
            if let (Some(r), Ok(mut slot)) = (switched, dl_result.lock()) {
                *slot = Some(r);
            }
            move || match dl_plan {
                None => w.run(),
                Some(d) if ok => w.run_deadline(DeadlineJob {
                    deadline_ns: d.params.deadline_ns,
                    runtime_ns: d.params.runtime_ns,
                    work_ns: d.work_ns,
                }),
                Some(_) => w.skip(),
            }
        }
    })
    .map_err(|e| latlab_core::rt::start_error("cannot start measuring threads", e))
}

/// The control thread's watch: until the deadline, a signal or every worker's end, attributing
/// the spikes the workers hand over as the trace's reader gets past them.
fn watch(
    cfg: &CyclicConfig,
    control: &rt::Control,
    team: &Team,
    t0: Instant,
    tracer: &mut Option<latlab_trace::session::Tracer>,
    spike_cons: &mut [rtrb::Consumer<latlab_trace::session::RawSpike>],
) {
    let n = cfg.threads.len();
    let deadline = cfg.duration_ns.map(|d| t0 + Duration::from_nanos(d));
    if let Some(t) = tracer.as_mut() {
        t.ends(control.interrupted.clone(), deadline);
    }
    loop {
        if control.was_interrupted() || deadline.is_some_and(|d| Instant::now() >= d) {
            control.stop.store(true, Ordering::Release);
        }
        if control.stop.load(Ordering::Acquire) || team.done.load(Ordering::Acquire) == n {
            break;
        }
        // Workers ring when they end and the signal thread on SIGINT/SIGTERM, so this wakes
        // for the deadline, for a traced run's spikes (every 100 ms) and, as a fallback (a
        // SIGHUP, no signal thread), twice a second: not ten times a second on the CPUs it
        // measures.
        let every = Duration::from_millis(if tracer.is_some() { 100 } else { 500 });
        let left = deadline.map_or(every, |d| d.saturating_duration_since(Instant::now()));
        team.bell.wait(left.min(every));
        if let Some(t) = tracer.as_mut() {
            drain_spikes(t, spike_cons);
            t.poll();
        }
    }
    control.stop.store(true, Ordering::Release);
}

/// Runs the measurement described by `cfg`.
pub(crate) fn run(mut cfg: CyclicConfig, ctx: &mut Ctx<'_>) -> Result<CyclicOutcome> {
    let mut warnings = Vec::new();
    adapt(&mut cfg, ctx);
    let n = cfg.threads.len();
    let dl = dl_run::Setup::prepare(&cfg, ctx, &mut warnings)?;
    let (producers, writer) = start_samples(&cfg)?;
    let control = ctx.control().clone();
    rt::install_wake_handler();
    // --trace: the driver started the session (`trace_request`); one spike ring per thread
    // (preallocated; the control thread drains them).
    let mut tracer = ctx.take_tracer();
    let (spike_prods, mut spike_cons): (Vec<_>, Vec<_>) = if tracer.is_some() {
        (0..n)
            .map(|_| rtrb::RingBuffer::new(SPIKE_RING))
            .map(|(p, c)| (Some(p), c))
            .unzip()
    } else {
        (Vec::new(), Vec::new())
    };
    let team = Team::new(n);
    rt::ring_on_signal(&team.bell);
    let dl_signal = dl.as_ref().is_some_and(|d| d.signal);
    let handles = spawn(&cfg, ctx, &team, producers, spike_prods, dl_signal)?;
    team.barrier.wait();
    // A deadline thread the kernel refused: stop the others at once; the refusal is the
    // result (exit 3).
    let refused = dl
        .as_ref()
        .and_then(|d| d.refused(&cfg.threads, &team.dl, &mut warnings));
    if refused.is_some() {
        control.stop.store(true, Ordering::Release);
    }
    let started = SystemTime::now();
    let t0 = Instant::now();
    let display = (!cfg.quiet && report::stdout_is_terminal() && !report::json_to_stdout(&cfg))
        .then(|| report::live_view(&cfg, team.live.clone(), control.stop.clone()));
    watch(&cfg, &control, &team, t0, &mut tracer, &mut spike_cons);
    for h in &handles {
        rt::wake(h);
    }
    let elapsed = t0.elapsed();
    let mut outs: Vec<(rt::Applied, WorkerOut)> = Vec::with_capacity(n);
    for h in handles {
        outs.push(
            h.join()
                .map_err(|_| Error::Env("a measuring thread panicked".into()))?,
        );
    }
    if let Some(d) = display {
        d.finish();
    }
    let trace = tracer.map(|mut t| {
        drain_spikes(&mut t, &mut spike_cons);
        t.dropped(outs.iter().map(|(_, o)| o.spikes_lost).sum());
        for s in outs.iter().filter_map(|(_, o)| o.tripped_spike) {
            t.broke_on(s);
        }
        t.finish()
    });
    warnings.extend(trace.iter().flat_map(|t| t.warnings.iter().cloned()));
    let samples_path = finish_samples(writer, &cfg, &outs, &mut warnings)?;
    // A refused thread ends the run here (HRTICK goes back with the driver's settings).
    let sigxcpu = latlab_core::sys::deadline::sigxcpu_count();
    if let Some(d) = &dl {
        d.finish(refused)?;
    }
    let (series, linear, check_failure) = collect(&cfg, outs);
    let mut parameters = serde_json::to_value(&cfg).unwrap_or(serde_json::Value::Null);
    if let (Some(d), Some(map)) = (&dl, parameters.as_object_mut()) {
        let (verdict, warning) = d.kernel_check(&series, sigxcpu);
        warnings.extend(warning);
        map.insert("deadline".into(), d.parameters(sigxcpu, verdict));
    }
    ctx.warnings().extend(warnings);
    let run = Run {
        interrupted: control.was_interrupted(),
        check_failure,
        samples_path,
        series,
        duration_s: elapsed.as_secs_f64(),
        trace,
        ..ctx.run_at(started, parameters)
    };
    Ok(CyclicOutcome { run, linear })
}

/// Ends the sample log with each thread's lost count; a loss is a warning.
fn finish_samples(
    writer: Option<SampleWriter>,
    cfg: &CyclicConfig,
    outs: &[(rt::Applied, WorkerOut)],
    warnings: &mut Vec<String>,
) -> Result<Option<String>> {
    let lost: Vec<u64> = outs.iter().map(|(_, o)| o.lost).collect();
    let path = match (writer, &cfg.samples) {
        (Some(w), Some(p)) => {
            // A log that could not be written to the end (disk full, a reader that stopped)
            // is a warning of the run: the measurement itself is kept.
            if let Err(e) = w.finish(&lost) {
                warnings.push(format!(
                    "--samples {}: {e}; the log holds only the blocks written before",
                    p.display()
                ));
            }
            Some(p.display().to_string())
        }
        _ => None,
    };
    let total_lost: u64 = lost.iter().sum();
    if total_lost > 0 {
        warnings.push(format!("the sample log lost {total_lost} samples: its writer fell behind (per thread in lost_samples)"));
    }
    Ok(path)
}

/// Per-thread linear histograms (`-h`) with their overflow counts.
type Linear = Vec<(Vec<u64>, u64)>;

/// The series of the run, the `-h` histograms and `--break-on`'s failure, from what each
/// worker returned.
fn collect(
    cfg: &CyclicConfig,
    outs: Vec<(rt::Applied, WorkerOut)>,
) -> (Vec<Series>, Linear, Option<String>) {
    let mut series = Vec::with_capacity(outs.len());
    let mut linear = Vec::with_capacity(outs.len());
    let mut check_failure = None;
    for ((applied, out), plan) in outs.into_iter().zip(&cfg.threads) {
        // Placement failures reach the warnings through the run's placement log.
        let mut s = Series::from_recorder(plan.name.clone(), &out.rec);
        s.cpu = applied.cpu_for(plan.cpu);
        s.policy = applied.policy.to_string();
        if let Some(extra) = dl_run::series_extra(out.deadline, plan) {
            s.policy = Policy::Deadline.to_string();
            s.extra = Some(extra);
        }
        s.prio = applied.prio;
        s.interval_ns = Some(plan.interval_ns);
        s.overruns = out.overruns;
        s.lost_samples = out.lost;
        s.timeline = Some(out.timeline.clone());
        if let Some((lat, loop_no)) = out.tripped_at {
            let cpu = s.cpu.or(out.cpu).map_or("?".to_string(), |c| c.to_string());
            check_failure = Some(format!(
                "--break-on: {} on CPU {cpu} woke {} {} late at loop {loop_no} (threshold {} {})",
                plan.name,
                cfg.unit.fmt_ns(lat as f64),
                cfg.unit,
                cfg.unit.fmt_ns(cfg.break_on_ns.unwrap_or(0) as f64),
                cfg.unit
            ));
        }
        series.push(s);
        linear.push((out.linear, out.linear_overflow));
    }
    (series, linear, check_failure)
}

impl crate::driver::Measurement for CyclicConfig {
    type Outcome = CyclicOutcome;
    const KIND: &'static str = "cyclic";
    const FACTS: latlab_core::result::kind::Facts = latlab_core::result::kind::Facts {
        chart: latlab_core::result::kind::Chart::Histogram,
        ..latlab_core::result::kind::Facts::LATENCY
    };

    fn planned(&self) -> Option<Duration> {
        self.duration_ns.map(Duration::from_nanos)
    }

    fn planned_rate(&self) -> Option<f64> {
        // One wake-up per interval per thread (-l bounds the count, not the rate).
        let r: f64 = self
            .threads
            .iter()
            .map(|t| 1e9 / t.interval_ns.max(1) as f64)
            .sum();
        (r > 0.0).then_some(r)
    }

    fn trace_request(&self) -> Option<latlab_trace::session::Request> {
        Some(latlab_trace::session::Request {
            cpus: trace_cpus(self),
            threshold_ns: self.trace_threshold_ns?,
            names: self.threads.iter().map(|t| t.name.clone()).collect(),
            stacks: self.trace_stacks,
            save: self.trace_save.clone(),
            actions: self.trace_actions.clone(),
            limits: self.trace_limits.clone(),
            break_on: self.break_on_ns,
            needs_root: "--trace needs root (it reads the kernel's tracepoints through tracefs)",
            ..Default::default()
        })
    }

    fn measured_cpus(&self) -> Option<latlab_core::config::CpuSet> {
        let cpus: Option<Vec<usize>> = self.threads.iter().map(|t| t.cpu).collect();
        cpus.map(latlab_core::config::CpuSet::from_cpus)
    }

    fn footprint(&self) -> crate::driver::Footprint {
        crate::driver::Footprint {
            min_rt_prio: self
                .threads
                .iter()
                .filter(|t| t.policy.is_rt())
                .map(|t| t.prio)
                .min(),
            rt: self
                .threads
                .iter()
                .filter(|t| t.policy.is_rt())
                .map(|t| (t.policy, t.prio))
                .max_by_key(|x| x.1),
            mlock: self.mlock,
            dma_latency_us: self.dma_latency_us,
            rt_required: false,
        }
    }

    fn measure(&mut self, ctx: &mut Ctx<'_>) -> Result<CyclicOutcome> {
        run(self.clone(), ctx)
    }

    fn result(o: &mut CyclicOutcome) -> &mut Run {
        &mut o.run
    }

    fn render_stored(run: &Run, unit: latlab_core::config::DisplayUnit) -> Option<String> {
        let outcome = CyclicOutcome {
            run: run.clone(),
            linear: Vec::new(),
        };
        Some(report::render(&outcome, unit))
    }

    fn render(&self, o: &CyclicOutcome) -> crate::driver::Text {
        let mut text = String::new();
        if self.histogram_us.is_some() {
            text.push_str(&report::render_histogram(o));
        }
        text.push_str(&report::render(o, self.unit));
        text.push_str(&latlab_analysis::export::why::why_for(&o.run, self.unit, false));
        text.into()
    }
}
