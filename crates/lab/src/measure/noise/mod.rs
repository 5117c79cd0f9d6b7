//! `latlab noise`: what steals each CPU (seed 003; oslat's and sysjitter's measurement). This
//! file runs the repeats, the control thread and the disturbing command; the loop is in
//! `worker.rs`, the tables in `report.rs`.

pub(crate) mod args;
pub(crate) mod config;
mod lower;
pub(crate) mod osnoise;

pub(crate) mod report;
pub(crate) mod worker;

use latlab_core::config::Policy;
use crate::driver::Ctx;
use latlab_core::error::{Error, Result};
use crate::measure::noise::config::{NoiseClock, NoiseConfig};
use latlab_core::result::{Environment, Run, Series, Timeline};
use latlab_core::rt::{self, Control, Live, Placement};
use latlab_core::stats::dist::Dist;
use latlab_core::stats::{LatHistogram, Percentiles, Recorder, Summary};
use latlab_core::sys;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant, SystemTime};
use worker::{Source, SpinOut, Spinner};

/// A repeat's disturbing command: when it ran (CLOCK_MONOTONIC ns) and how it ended.
#[derive(Debug, Clone, serde::Serialize)]
pub(crate) struct Disturbance {
    /// Start.
    pub(crate) start_ns: u64,
    /// End (0 if it was still running when the run was interrupted and killed).
    pub(crate) end_ns: u64,
    /// Exit status, if it exited.
    pub(crate) exit_code: Option<i32>,
}

/// A finished `noise` run.
pub(crate) struct NoiseOutcome {
    /// The result model (series aggregated over repeats).
    pub(crate) run: Run,
    /// Per repeat, per measured CPU.
    pub(crate) repeats: Vec<Vec<SpinOut>>,
    /// Per repeat, the disturbance if one ran.
    pub(crate) disturbances: Vec<Option<Disturbance>>,
    /// TSC ticks per ns (1.0 with the monotonic clock).
    pub(crate) ticks_per_ns: f64,
}

/// Refuses or warns about RT spinning that could starve the machine.
fn safety(cfg: &NoiseConfig, env: &Environment, warnings: &mut Vec<String>) -> Result<()> {
    if !cfg.policy.is_rt() {
        return Ok(());
    }
    let all = cfg.cpus.len() >= env.cpus_online && env.cpus_online > 0;
    let throttle_off = env.sched_rt_runtime_us == Some(-1);
    if all && throttle_off && !cfg.force {
        return Err(Error::Env(format!(
            "refusing to spin at {} priority {} on every CPU with RT throttling off \
             (sched_rt_runtime_us = -1): nothing else could run. Leave a CPU out with --cpus, \
             use --policy other, enable throttling, or pass --force",
            cfg.policy, cfg.prio
        )));
    }
    if all {
        let w = format!(
            "spinning at {} priority {} on every CPU: other tasks run only when RT throttling \
             allows{}",
            cfg.policy,
            cfg.prio,
            env.rt_throttle_warning()
                .map(|t| format!(" ({t})"))
                .unwrap_or_default()
        );
        latlab_core::note!("latlab: warning: {w}");
        warnings.push(w);
    }
    if let (Some(rt), Some(p)) = (env.sched_rt_runtime_us, env.sched_rt_period_us) {
        if rt >= 0 && rt < p && cfg.duration_ns > rt as u64 * 1000 {
            warnings.push(format!(
                "measurements longer than sched_rt_runtime_us ({rt} us) are throttled: expect gaps of {} us \
                 caused by latlab's own RT priority",
                p - rt
            ));
        }
    }
    Ok(())
}

/// Runs the measurement described by `cfg`.
pub(crate) fn run(mut cfg: NoiseConfig, ctx: &mut Ctx<'_>) -> Result<NoiseOutcome> {
    if cfg.engine != crate::measure::noise::config::NoiseEngine::Spin {
        return osnoise::run(&cfg, ctx);
    }
    let environment = ctx.environment().clone();
    let mut warnings = Vec::new();
    // Real time refused: the spinners run SCHED_OTHER, and no real-time warning applies.
    let rt_granted = ctx.rt_granted();
    if !rt_granted {
        cfg.policy = Policy::Other;
        cfg.prio = 0;
    }
    safety(&cfg, &environment, &mut warnings)?;
    let (source, ticks_per_ns) = match cfg.clock {
        NoiseClock::Tsc => (Source::Tsc, sys::tsc::calibrate(100)),
        NoiseClock::Monotonic => (Source::Monotonic, 1.0),
    };
    let control = ctx.control().clone();
    // The control thread sits on the main CPU above the spinners, so it can always stop them;
    // its own state is put back on every way out.
    let mut saved = sys::sched::ThreadState::save();
    if let Err(e) = sys::sched::pin_to_cpu(cfg.main_cpu) {
        warnings.push(format!(
            "the control thread could not move to CPU {}: {e}",
            cfg.main_cpu
        ));
    }
    if rt_granted && cfg.policy.is_rt() {
        if let Err(e) = sys::sched::set_policy(Policy::Fifo, 99) {
            warnings.push(format!("the control thread could not become SCHED_FIFO 99 ({e}); spinners end at their deadline by themselves"));
        }
        if cfg.prio >= 99 && cfg.cpus.contains(&cfg.main_cpu) {
            warnings.push(format!(
                "the spinner on CPU {} (the control thread's CPU) ran at priority 98, not 99, so the control thread can always stop the run",
                cfg.main_cpu
            ));
        }
    }
    let started = SystemTime::now();
    let t_start = Instant::now();
    let mut repeats = Vec::new();
    let mut disturbances = Vec::new();
    // --trace: spinners starve an ordinary reader, so each CPU keeps a whole measurement
    // (at most two minutes) and interruptions are attributed after it.
    let mut tracer = ctx.take_tracer();
    // Windows are saved after each measurement (the spinners starve the reader meanwhile):
    // a signal ends the saving, one window cut where it was.
    if let Some(t) = tracer.as_mut() {
        t.ends(control.interrupted.clone(), None);
    }
    for r in 0..cfg.repeat {
        // The first repeat always runs (it ends at once when a signal came already), so an
        // early Ctrl-C still gives a saved, interrupted result.
        if r > 0 && control.was_interrupted() {
            break;
        }
        // Every event of the measurement is kept until its interruptions are explained, however
        // long the reader takes to catch up once the spinners let it run.
        if let Some(t) = tracer.as_ref() {
            t.hold_from(sys::clock::now_ns(libc::CLOCK_MONOTONIC));
        }
        let (outs, dist) = one_measurement(&cfg, source, ticks_per_ns, &control, ctx.placement())?;
        if let (Some(t), Some(th)) = (tracer.as_mut(), cfg.trace_threshold_ns) {
            offer_interruptions(t, &cfg.cpus, &outs, th);
        }
        if !cfg.quiet && cfg.repeat > 1 {
            latlab_core::note!(
                "{}",
                report::repeat_line(r + 1, cfg.repeat, &cfg, &outs, cfg.unit)
            );
        }
        repeats.push(outs);
        disturbances.push(dist);
    }
    saved.restore();
    let trace = tracer.map(latlab_trace::session::Tracer::finish);
    warnings.extend(trace.iter().flat_map(|t| t.warnings.iter().cloned()));
    if repeats.is_empty() {
        return Err(Error::Env(
            "interrupted before the first measurement finished".into(),
        ));
    }
    let interrupted = control.was_interrupted();
    let mut params = serde_json::to_value(&cfg).unwrap_or(serde_json::Value::Null);
    params["ticks_per_ns"] = serde_json::json!(ticks_per_ns);
    params["repeats_done"] = serde_json::json!(repeats.len());
    let series = build_series(&cfg, &environment, &repeats, &disturbances, &mut warnings);
    // A disturbing command that failed did not disturb as intended: say so in the result.
    for (r, d) in disturbances.iter().enumerate() {
        if let Some(c) = d.as_ref().and_then(|d| d.exit_code).filter(|&c| c != 0) {
            warnings.push(format!(
                "repeat {}: --disturb command exited with status {c}",
                r + 1
            ));
        }
    }
    ctx.warnings().extend(warnings);
    let run = Run {
        interrupted,
        series,
        duration_s: t_start.elapsed().as_secs_f64(),
        trace,
        ..ctx.run_at(started, params)
    };
    Ok(NoiseOutcome {
        run,
        repeats,
        disturbances,
        ticks_per_ns,
    })
}

/// Hands a measurement's interruptions at or above `th` to the tracer and attributes them.
fn offer_interruptions(
    t: &mut latlab_trace::session::Tracer,
    cpus: &[usize],
    outs: &[SpinOut],
    th: u64,
) {
    for (i, (o, &cpu)) in outs.iter().zip(cpus).enumerate() {
        for (k, e) in o.events.iter().enumerate().filter(|(_, e)| e.dur_ns >= th) {
            t.offer(latlab_trace::session::RawSpike {
                series: i as u32,
                cpu: cpu as u32,
                expected: e.start_ns,
                actual: e.start_ns + e.dur_ns,
                seq: k as u64 + 1,
                tid: 0,
            });
        }
    }
    t.settle(Duration::from_secs(2));
}

/// One measurement: spinners on every measured CPU for the configured duration.
fn one_measurement(
    cfg: &NoiseConfig,
    source: Source,
    tpn: f64,
    control: &Control,
    log: &rt::PlacementLog,
) -> Result<(Vec<SpinOut>, Option<Disturbance>)> {
    let stop = Arc::new(AtomicBool::new(false));
    let placements: Vec<Placement> = cfg
        .cpus
        .iter()
        .map(|&c| Placement {
            name: format!("cpu{c}"),
            cpu: Some(c),
            policy: cfg.policy,
            // The control thread runs at FIFO 99 on the main CPU: the spinner there stays
            // below it so Ctrl-C is always seen (warned about in `run`).
            prio: if c == cfg.main_cpu && cfg.policy.is_rt() {
                cfg.prio.min(98)
            } else {
                cfg.prio
            },
        })
        .collect();
    let barrier = Arc::new(Barrier::new(placements.len() + 1));
    let lives: Vec<Arc<Live>> = placements.iter().map(|_| Arc::new(Live::new())).collect();
    let threshold_ticks = ((cfg.threshold_ns as f64) * tpn).ceil().max(1.0) as u64;
    let spin_ticks = ((cfg.duration_ns as f64) * tpn) as u64;
    let window = Arc::new(worker::Window::default());
    let handles = rt::spawn_workers(&placements, barrier.clone(), log, |i| {
        let (stop, live) = (stop.clone(), lives[i].clone());
        let interrupt = control.stop.clone();
        let window = window.clone();
        let (name, log) = (placements[i].name.clone(), log.clone());
        move || {
            let s = Spinner {
                source,
                ticks_per_ns: tpn,
                threshold_ticks,
                stop,
                interrupt,
                spin_ticks,
                live,
                window,
            };
            move || {
                // A placement another process changes while it spins is said.
                let placed = rt::Held::read();
                let watch = placed.watch(&name);
                let out = s.run(rt::Stray::for_held(&placed));
                if let Some(moved) = placed.moved(&name, watch) {
                    log.failed(moved);
                }
                let checks = out.iterations / 256;
                if let Some(away) = out.stray.said(&name, checks, "checks (one per 256 spins)") {
                    log.failed(away);
                }
                out
            }
        }
    })
    .map_err(|e| latlab_core::rt::start_error("cannot start spinning threads", e))?;
    barrier.wait();
    let t0 = Instant::now();
    let display = (!cfg.quiet
        && latlab_core::live::stdout_is_terminal()
        && cfg.json.as_deref().is_none_or(|j| j.as_os_str() != "-"))
    .then(|| report::live_view(cfg, lives.clone(), stop.clone()));
    let deadline = t0 + Duration::from_nanos(cfg.duration_ns);
    let disturb_at = t0 + Duration::from_nanos(cfg.duration_ns / 3);
    let mut child: Option<(std::process::Child, u64)> = None;
    let mut waiter: Option<std::thread::JoinHandle<Option<i32>>> = None;
    while Instant::now() < deadline && !control.was_interrupted() {
        if let (Some(cmd), None, None) = (&cfg.disturb, &child, &waiter) {
            if Instant::now() >= disturb_at {
                let start = sys::clock::now_ns(libc::CLOCK_MONOTONIC);
                // Published before the command starts: the spinners tell each interruption
                // from now on as during it.
                window.start_ns.store(start, Ordering::Release);
                match sys::process::spawn_shell(cmd, Some(cfg.disturb_cpu)) {
                    Ok(c) => child = Some((c, start)),
                    Err(e) => {
                        stop.store(true, Ordering::Release);
                        for h in handles {
                            let _ = h.join();
                        }
                        return Err(Error::Usage(format!(
                            "--disturb '{cmd}': cannot start: {e}"
                        )));
                    }
                }
            }
        }
        if let Some((c, _)) = child.as_mut() {
            if waiter.is_none() {
                // A plain thread waits for the command so its end time is exact.
                let pid = c.id();
                let window = window.clone();
                waiter = Some(std::thread::spawn(move || {
                    let code = sys::process::wait_exit_code(pid as i32);
                    window
                        .end_ns
                        .store(sys::clock::now_ns(libc::CLOCK_MONOTONIC), Ordering::Release);
                    code
                }));
            }
        }
        let left = deadline.saturating_duration_since(Instant::now());
        std::thread::sleep(left.min(Duration::from_millis(20)));
    }
    stop.store(true, Ordering::Release);
    let mut outs = Vec::with_capacity(cfg.cpus.len());
    for h in handles {
        let (applied, mut o) = h
            .join()
            .map_err(|_| Error::Env("a spinning thread panicked".into()))?;
        o.ran_on = applied.cpu;
        outs.push(o);
    }
    if let Some(d) = display {
        d.finish();
    }
    let dist = match (child, waiter) {
        (Some((mut c, start)), Some(w)) => {
            if control.was_interrupted() && window.end_ns.load(Ordering::Acquire) == 0 {
                sys::process::kill_group(&mut c);
            }
            let code = w.join().ok().flatten();
            Some(Disturbance {
                start_ns: start,
                end_ns: window.end_ns.load(Ordering::Acquire),
                exit_code: code,
            })
        }
        _ => None,
    };
    Ok((outs, dist))
}

/// Per-CPU series aggregated over repeats, with the noise figures in `extra`.
fn build_series(
    cfg: &NoiseConfig,
    env: &Environment,
    repeats: &[Vec<SpinOut>],
    dists: &[Option<Disturbance>],
    warnings: &mut Vec<String>,
) -> Vec<Series> {
    let throttle_ns = match (env.sched_rt_runtime_us, env.sched_rt_period_us) {
        (Some(rt), Some(p)) if rt >= 0 && rt < p && cfg.policy.is_rt() => {
            Some(((p - rt) * 1000) as u64)
        }
        _ => None,
    };
    let mut out = Vec::new();
    for (i, &cpu) in cfg.cpus.iter().enumerate() {
        let per: Vec<&SpinOut> = repeats.iter().map(|r| &r[i]).collect();
        let mut gaps = LatHistogram::new();
        let mut intr = Recorder::new();
        let (mut iters, mut runtime, mut dropped, mut max) = (0u64, 0u64, 0u64, 0u64);
        // A gap the length of the RT-throttling window is latlab's own doing (its SCHED_FIFO
        // spinner was throttled), not the system's: the headline max leaves it out.
        let own = |d: u64| throttle_ns.is_some_and(|w| d.abs_diff(w) * 10 <= w);
        let system_max = |o: &SpinOut| {
            if own(o.max_gap_ns) {
                o.events
                    .iter()
                    .map(|e| e.dur_ns)
                    .filter(|&d| !own(d))
                    .max()
                    .unwrap_or(0)
            } else {
                o.max_gap_ns
            }
        };
        let mut raw_max = 0u64;
        for o in &per {
            gaps.add(&o.gaps);
            intr.merge(&o.interruptions);
            iters += o.iterations;
            runtime += o.runtime_ns;
            dropped += o.events_dropped;
            max = max.max(system_max(o));
            raw_max = raw_max.max(o.max_gap_ns);
        }
        let maxes: Vec<u64> = per.iter().map(|o| system_max(o)).collect();
        let outliers = report::outliers(&maxes);
        let d = Dist::from_histogram(&gaps.to_data(), 1.0);
        let summary = Summary {
            count: iters,
            min_ns: if iters > 0 { d.min() as u64 } else { 0 },
            max_ns: max,
            mean_ns: if iters > 0 {
                runtime as f64 / iters as f64
            } else {
                0.0
            },
            stddev_ns: d.stddev(),
            percentiles: Percentiles::from_hist(&gaps).capped(max),
        };
        let secs = runtime as f64 / 1e9;
        let is = intr.summary();
        let throttled: Vec<u64> = throttle_ns
            .map(|w| {
                per.iter()
                    .flat_map(|o| o.events.iter())
                    .filter(|e| e.dur_ns.abs_diff(w) * 10 <= w)
                    .map(|e| e.dur_ns)
                    .collect()
            })
            .unwrap_or_default();
        if let Some(&g) = throttled.first() {
            warnings.push(format!(
                "CPU {cpu}: {} gap(s) of about {} us (e.g. {} us) equal the RT-throttling window \
                 (sched_rt_period_us - sched_rt_runtime_us): caused by latlab's own RT priority, \
                 not by the system; left out of the max gap (with them: {} us)",
                throttled.len(),
                throttle_ns.unwrap_or(0) / 1000,
                g / 1000,
                raw_max / 1000
            ));
        }
        let disturb = report::disturbance_split(&per, dists);
        let extra = serde_json::json!({
            "loops_per_sec": if secs > 0.0 { iters as f64 / secs } else { 0.0 },
            "runtime_ns": runtime,
            "threshold_ns": cfg.threshold_ns,
            "interruptions": {
                "count": is.count,
                "per_sec": if secs > 0.0 { is.count as f64 / secs } else { 0.0 },
                "min_ns": is.min_ns,
                "median_ns": is.percentiles.p50,
                "mean_ns": is.mean_ns,
                "p90_ns": is.percentiles.p90,
                "p99_ns": is.percentiles.p99,
                "p99_9_ns": is.percentiles.p99_9,
                "max_ns": is.max_ns,
                "total_ns": intr.sum as u64,
                "available_pct": if runtime > 0 { 100.0 * (1.0 - intr.sum as f64 / runtime as f64) } else { 0.0 },
            },
            "per_repeat_max_ns": maxes,
            "outlier_repeats": outliers,
            "events_dropped": dropped,
            "rt_throttle_gaps": throttled.len(),
            "max_with_own_gaps_ns": raw_max,
            "disturbance": disturb,
        });
        if dropped > 0 {
            warnings.push(format!("CPU {cpu}: {dropped} interruptions smaller than the largest {} of their repeat have no time stamp (all are counted, during and outside a --disturb command too; only the largest are offered to --trace)", worker::EVENTS));
        }
        out.push(Series {
            name: format!("cpu{cpu}"),
            // Where the spinner really ran (read back), not the CPU it was meant for.
            cpu: per.iter().find_map(|o| o.ran_on).or(Some(cpu)),
            policy: cfg.policy.to_string(),
            prio: cfg.prio,
            interval_ns: None,
            unit: "ns".into(),
            summary,
            overruns: 0,
            lost_samples: 0,
            histogram: gaps.to_data(),
            extra: Some(extra),
            timeline: Timeline::concat(
                &per.iter()
                    .filter_map(|o| o.timeline.clone())
                    .collect::<Vec<_>>(),
            ),
        });
    }
    out
}

impl crate::driver::Measurement for NoiseConfig {
    type Outcome = NoiseOutcome;
    const KIND: &'static str = "noise";
    const FACTS: latlab_core::result::kind::Facts = latlab_core::result::kind::Facts {
        chart: latlab_core::result::kind::Chart::Gaps,
        histogram_caption: Some("gaps between loop iterations"),
        timeline_caption: Some(
            "interruptions only (gaps at or above the threshold); repeats follow one another",
        ),
        ..latlab_core::result::kind::Facts::LATENCY
    };

    fn planned(&self) -> Option<Duration> {
        Some(Duration::from_nanos(
            self.duration_ns.saturating_mul(self.repeat as u64),
        ))
    }

    fn trace_request(&self) -> Option<latlab_trace::session::Request> {
        Some(latlab_trace::session::Request {
            cpus: self.cpus.clone(),
            threshold_ns: self.trace_threshold_ns?,
            names: self.cpus.iter().map(|c| format!("cpu{c}")).collect(),
            // Spinners starve an ordinary reader: each CPU keeps a whole measurement (at most
            // two minutes) and interruptions are attributed after it.
            keep_ns: Some(
                self.duration_ns
                    .saturating_add(2_000_000_000)
                    .min(120_000_000_000),
            ),
            spinner: true,
            save: self.trace_save.clone(),
            actions: self.trace_actions.clone(),
            limits: self.trace_limits.clone(),
            needs_root: "--trace needs root (it reads the kernel's tracepoints through tracefs)",
            ..Default::default()
        })
    }

    fn measured_cpus(&self) -> Option<latlab_core::config::CpuSet> {
        Some(latlab_core::config::CpuSet::from_cpus(self.cpus.iter().copied()))
    }

    fn footprint(&self) -> crate::driver::Footprint {
        crate::driver::Footprint {
            min_rt_prio: self.policy.is_rt().then_some(self.prio),
            rt: self
                .policy
                .is_rt()
                .then_some((self.policy, self.prio.max(1))),
            mlock: true,
            dma_latency_us: None,
            rt_required: false,
        }
    }

    fn measure(&mut self, ctx: &mut Ctx<'_>) -> Result<NoiseOutcome> {
        run(self.clone(), ctx)
    }

    fn result(o: &mut NoiseOutcome) -> &mut Run {
        &mut o.run
    }

    fn render(&self, o: &NoiseOutcome) -> crate::driver::Text {
        if self.engine != crate::measure::noise::config::NoiseEngine::Spin {
            return osnoise::render(&o.run, self.unit).into();
        }
        let mut text = report::render(o, self);
        text.push_str(&latlab_analysis::export::why::why_for(&o.run, self.unit, false));
        text.into()
    }
}
