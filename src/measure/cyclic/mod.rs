//! `latlab cyclic`: timer wake-up latency of periodic threads (seed 004, cyclictest's method).
//! This file sets the run up, starts the workers behind a barrier, watches the clock and the
//! signals, and builds the result; the loop itself is in `worker.rs`.

pub mod args;
pub mod config;
pub mod deadline;
mod lower;

pub mod report;
pub mod worker;

use crate::config::Policy;
use crate::driver::Ctx;
use crate::error::{Error, Result};
use crate::measure::cyclic::config::CyclicConfig;
use crate::result::{Run, Series};
use crate::rt::{self, Live, Placement};
use crate::samples::{self, SampleWriter, SeriesHeader};
use crate::stats::Recorder;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant, SystemTime};
use worker::{DeadlineJob, Worker, WorkerOut};

/// A finished `cyclic` run: the result plus what only the text report needs.
pub struct CyclicOutcome {
    /// The result model.
    pub run: Run,
    /// Per-thread linear µs histograms (`-h`), with their overflow counts.
    pub linear: Vec<(Vec<u64>, u64)>,
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
pub fn ring_capacity(interval_ns: u64) -> usize {
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
const SPIKE_RING: usize = 4096;

/// The CPUs `--trace` records: those the threads are pinned to, or all online CPUs when
/// any thread is free to move.
fn trace_cpus(cfg: &CyclicConfig) -> Vec<usize> {
    let mut v: Vec<usize> = cfg.threads.iter().filter_map(|t| t.cpu).collect();
    if v.len() < cfg.threads.len() {
        v = crate::config::CpuSet::online_here().iter().collect();
    }
    v.sort_unstable();
    v.dedup();
    v
}

fn drain_spikes(
    t: &mut crate::trace::spikes::Tracer,
    rings: &mut [rtrb::Consumer<crate::trace::spikes::RawSpike>],
) {
    for r in rings {
        while let Ok(s) = r.pop() {
            t.offer(s);
        }
    }
}

/// What a run with SCHED_DEADLINE threads prepares before they start.
struct DeadlineSetup {
    limits: deadline::Limits,
    /// Every deadline thread's reservation (for a refusal's numbers).
    reservations: Vec<crate::sys::deadline::DlParams>,
    /// SIGXCPU is counted, so threads may ask for SCHED_FLAG_DL_OVERRUN.
    signal: bool,
    /// `--hrtick`, held on for the run.
    hrtick: Option<crate::experiment::hrtick::Hrtick>,
}

/// Checks the kernel's limits, turns HRTICK on (`--hrtick`) and counts SIGXCPU, for a plan
/// with deadline threads.
fn prepare_deadline(cfg: &CyclicConfig, ctx: &Ctx<'_>) -> Result<Option<DeadlineSetup>> {
    let reservations: Vec<_> = deadline::threads(cfg).iter().map(|(_, p)| *p).collect();
    if reservations.is_empty() {
        return Ok(None);
    }
    let limits = deadline::Limits::read(
        &crate::sys::roots::Roots::host(),
        ctx.environment().cpus_online,
    );
    deadline::check_periods(cfg, &limits)?;
    let hrtick = if cfg.hrtick {
        Some(crate::experiment::hrtick::Hrtick::enable()?)
    } else {
        None
    };
    Ok(Some(DeadlineSetup {
        limits,
        reservations,
        signal: crate::sys::deadline::count_sigxcpu().is_ok(),
        hrtick,
    }))
}

/// Runs the measurement described by `cfg`.
pub fn run(mut cfg: CyclicConfig, ctx: &mut Ctx<'_>) -> Result<CyclicOutcome> {
    let mut warnings = Vec::new();
    adapt(&mut cfg, ctx);
    let n = cfg.threads.len();
    let mut dl_setup = prepare_deadline(&cfg, ctx)?;
    if dl_setup.is_some() {
        warnings.extend(cfg.notes.iter().cloned());
        warnings.extend(deadline::hrtick_advice(&cfg));
        warnings.extend(
            dl_setup
                .as_ref()
                .and_then(|d| d.hrtick.as_ref())
                .map(|h| h.warning()),
        );
    }
    let dl_signal = dl_setup.as_ref().is_some_and(|d| d.signal);
    // Set by each deadline thread before the barrier: whether it got its reservation (and the
    // overrun signal), or the kernel's refusal.
    let dl_results: Vec<Arc<std::sync::Mutex<Option<std::io::Result<bool>>>>> =
        (0..n).map(|_| Arc::default()).collect();

    let (producers, writer) = match &cfg.samples {
        None => (None, None),
        Some(path) => {
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
            let (prods, cons) = samples::rings(n, cap);
            (Some(prods), Some(SampleWriter::start(path, &hdr, cons)?))
        }
    };
    let mut producers = producers.map(|p| p.into_iter().map(Some).collect::<Vec<_>>());

    let control = ctx.control().clone();
    rt::install_wake_handler();
    let tripped = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicUsize::new(0));
    let bell = Arc::new(rt::Doorbell::default());
    let live: Vec<Arc<Live>> = (0..n).map(|_| Arc::new(Live::new())).collect();
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
    // --trace: the instance and its reader start before the threads, and one spike ring per
    // thread (preallocated; the control thread drains them).
    let mut tracer = match cfg.trace_threshold_ns {
        None => None,
        Some(th) => Some(
            crate::trace::spikes::Tracer::start_stacks(
                &trace_cpus(&cfg),
                th,
                cfg.threads.iter().map(|t| t.name.clone()).collect(),
                cfg.trace_stacks,
            )?
            .saving(cfg.trace_save.clone())
            .acting(
                cfg.trace_actions.clone(),
                cfg.trace_limits.clone(),
                control.stop.clone(),
            )
            .breaking(cfg.break_on_ns),
        ),
    };
    let (mut spike_prods, mut spike_cons): (Vec<_>, Vec<_>) = if tracer.is_some() {
        (0..n).map(|_| rtrb::RingBuffer::new(SPIKE_RING)).unzip()
    } else {
        (Vec::new(), Vec::new())
    };
    let mut spike_prods: Vec<Option<_>> = spike_prods.drain(..).map(Some).collect();
    let barrier = Arc::new(Barrier::new(n + 1));
    let hist_len = cfg.histogram_us.unwrap_or(0) as usize;
    let handles = ctx
        .spawn_workers(&placements, barrier.clone(), |i| {
            let t = &cfg.threads[i];
            let ring = producers.as_mut().and_then(|p| p[i].take());
            let (clock, interval_ns, relative) = (cfg.clock.id(), t.interval_ns, cfg.relative);
            let (loops, break_on_ns) = (
                cfg.loops.unwrap_or(u64::MAX),
                cfg.break_on_ns.unwrap_or(u64::MAX),
            );
            let (live, stop, tripped, done) = (
                live[i].clone(),
                control.stop.clone(),
                tripped.clone(),
                done.clone(),
            );
            let bell = bell.clone();
            let dl_plan = t.deadline;
            let dl_result = dl_results[i].clone();
            let spikes =
                spike_prods
                    .get_mut(i)
                    .and_then(Option::take)
                    .map(|ring| worker::SpikeOut {
                        threshold_ns: cfg.trace_threshold_ns.unwrap_or(u64::MAX),
                        series: i as u32,
                        cpu: t.cpu.map(|c| c as u32),
                        tid: 0,
                        ring,
                    });
            move || {
                let w = Worker {
                    clock,
                    interval_ns,
                    relative,
                    loops,
                    break_on_ns,
                    rec: Recorder::new(),
                    timeline: crate::result::TimelineRecorder::new(
                        crate::result::timeline::DEFAULT_WIDTH_NS,
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
        .map_err(|e| Error::Env(format!("cannot start measuring threads: {e}")))?;

    barrier.wait();
    // A deadline thread the kernel refused: stop the others at once; the refusal is the
    // result (exit 3).
    let refused = cfg.threads.iter().zip(&dl_results).find_map(|(t, r)| {
        match r.lock().ok()?.take() {
            Some(Err(e)) => Some((t.name.clone(), e)),
            Some(Ok(signal)) => {
                if signal != dl_signal {
                    warnings.push(format!("{}: the kernel does not know SCHED_FLAG_DL_OVERRUN; no SIGXCPU on overruns", t.name));
                }
                None
            }
            None => None,
        }
    });
    if refused.is_some() {
        control.stop.store(true, Ordering::Release);
    }
    let started = SystemTime::now();
    let t0 = Instant::now();
    let display = (!cfg.quiet && report::stdout_is_terminal() && !report::json_to_stdout(&cfg))
        .then(|| report::live_view(&cfg, live.clone(), control.stop.clone()));

    let deadline = cfg.duration_ns.map(|d| t0 + Duration::from_nanos(d));
    if let Some(t) = tracer.as_mut() {
        t.ends(control.interrupted.clone(), deadline);
    }
    loop {
        if control.was_interrupted() || deadline.is_some_and(|d| Instant::now() >= d) {
            control.stop.store(true, Ordering::Release);
        }
        if control.stop.load(Ordering::Acquire) || done.load(Ordering::Acquire) == n {
            break;
        }
        // Workers ring when they end; signals and the deadline are noticed within 100 ms.
        let left = deadline.map_or(Duration::from_millis(100), |d| {
            d.saturating_duration_since(Instant::now())
        });
        bell.wait(left.min(Duration::from_millis(100)));
        if let Some(t) = tracer.as_mut() {
            drain_spikes(t, &mut spike_cons);
            t.poll();
        }
    }
    control.stop.store(true, Ordering::Release);
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
        t.finish()
    });
    warnings.extend(trace.iter().flat_map(|t| t.warnings.iter().cloned()));

    let lost: Vec<u64> = outs.iter().map(|(_, o)| o.lost).collect();
    let samples_path = match (writer, &cfg.samples) {
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

    if let Some((name, e)) = refused {
        let (limits, reservations) = dl_setup
            .as_ref()
            .map(|d| (d.limits.clone(), d.reservations.clone()))
            .unwrap_or_default();
        let err = deadline::refusal(&name, &e, &reservations, &limits);
        if let Some(h) = dl_setup.and_then(|d| d.hrtick) {
            for f in h.restore() {
                crate::note!("latlab: --hrtick: could not restore {f}; run 'latlab restore'");
            }
        }
        return Err(err);
    }
    let sigxcpu = crate::sys::deadline::sigxcpu_count();
    // HRTICK goes back before the result is written.
    if let Some(h) = dl_setup.as_mut().and_then(|d| d.hrtick.take()) {
        for f in h.restore() {
            warnings.push(format!(
                "--hrtick: could not restore {f}; run 'latlab restore'"
            ));
        }
    }

    let mut series = Vec::with_capacity(n);
    let mut linear = Vec::with_capacity(n);
    let mut check_failure = None;
    for ((applied, out), plan) in outs.into_iter().zip(&cfg.threads) {
        warnings.extend(applied.warnings);
        let mut s = Series::from_recorder(plan.name.clone(), &out.rec);
        s.cpu = plan.cpu;
        s.policy = applied.policy.to_string();
        if let (Some(d), Some(p)) = (out.deadline, plan.deadline) {
            s.policy = Policy::Deadline.to_string();
            s.extra = Some(serde_json::json!({
                "runtime_ns": p.params.runtime_ns,
                "deadline_ns": p.params.deadline_ns,
                "period_ns": p.params.period_ns,
                "work_ns": p.work_ns,
                "jobs": d.jobs,
                "deadline_misses": d.misses,
                "runtime_overruns": d.runtime_overruns,
            }));
        }
        s.prio = applied.prio;
        s.interval_ns = Some(plan.interval_ns);
        s.overruns = out.overruns;
        s.lost_samples = out.lost;
        s.timeline = Some(out.timeline.clone());
        if let Some((lat, loop_no)) = out.tripped_at {
            let cpu = plan
                .cpu
                .or(out.cpu)
                .map_or("?".to_string(), |c| c.to_string());
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
    let interrupted = control.was_interrupted();
    let mut parameters = serde_json::to_value(&cfg).unwrap_or(serde_json::Value::Null);
    if let (Some(d), Some(map)) = (&dl_setup, parameters.as_object_mut()) {
        map.insert(
            "deadline".into(),
            serde_json::json!({
                "runtime_overruns_from": deadline::OVERRUN_METHOD,
                "dl_overrun_signal": d.signal,
                "sigxcpu": sigxcpu,
                "sched_rt_runtime_us": d.limits.rt_runtime_us,
                "sched_rt_period_us": d.limits.rt_period_us,
            }),
        );
    }
    ctx.warnings().extend(warnings);
    let run = Run {
        interrupted,
        check_failure,
        samples_path,
        series,
        duration_s: elapsed.as_secs_f64(),
        trace,
        ..ctx.run_at(started, parameters)
    };
    Ok(CyclicOutcome { run, linear })
}

impl crate::driver::Measurement for CyclicConfig {
    type Outcome = CyclicOutcome;
    const KIND: &'static str = "cyclic";

    fn planned(&self) -> Option<Duration> {
        self.duration_ns.map(Duration::from_nanos)
    }

    fn measured_cpus(&self) -> Option<crate::config::CpuSet> {
        let cpus: Option<Vec<usize>> = self.threads.iter().map(|t| t.cpu).collect();
        cpus.map(crate::config::CpuSet::from_cpus)
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

    fn render_stored(run: &Run, unit: crate::config::DisplayUnit) -> Option<String> {
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
        if let Some(t) = &o.run.trace {
            text.push_str(&crate::trace::spikes::why(t, self.unit));
        }
        text.into()
    }
}
