//! `latlab noise`: what steals each CPU (seed 003; oslat's and sysjitter's measurement). This
//! file runs the repeats and the control thread; the loop is in `worker.rs`, the disturbing
//! command in `disturb.rs`, the result's series in `series.rs`, the tables in `report.rs`.

pub(crate) mod args;
pub(crate) mod config;
mod disturb;
mod lower;
pub(crate) mod osnoise;

pub(crate) mod report;
mod series;
pub(crate) mod worker;

use latlab_core::config::Policy;
use crate::driver::Ctx;
use latlab_core::error::{Error, Result};
use crate::measure::noise::config::{NoiseClock, NoiseConfig, NoiseEngine};
use disturb::Disturber;
use latlab_core::result::{Environment, Run};
use latlab_core::rt::{self, Control, Live, Placement};
use latlab_core::sys;
use series::build_series;
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
    if cfg.engine != NoiseEngine::Spin {
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
    let mut saved = place_control(&cfg, rt_granted, &mut warnings);
    let started = SystemTime::now();
    let t_start = Instant::now();
    // --trace: spinners starve an ordinary reader, so each CPU keeps a whole measurement
    // (at most two minutes) and interruptions are attributed after it.
    let mut tracer = ctx.take_tracer();
    // Windows are saved after each measurement (the spinners starve the reader meanwhile):
    // a signal ends the saving, one window cut where it was.
    if let Some(t) = tracer.as_mut() {
        t.ends(control.interrupted.clone(), None);
    }
    let clock = (source, ticks_per_ns);
    let (repeats, disturbances) =
        measure_repeats(&cfg, clock, &control, ctx.placement(), tracer.as_mut())?;
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
    warn_failed_disturbances(&disturbances, &mut warnings);
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

/// Puts the control thread on the main CPU and, for real-time spinners, above them (FIFO 99),
/// so it can always stop them. The returned state puts it back, on every way out.
fn place_control(
    cfg: &NoiseConfig,
    rt_granted: bool,
    warnings: &mut Vec<String>,
) -> sys::sched::ThreadState {
    let saved = sys::sched::ThreadState::save();
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
    saved
}

/// What the repeats measured: per repeat, each CPU's spinner, and the disturbance if one ran.
type Measured = (Vec<Vec<SpinOut>>, Vec<Option<Disturbance>>);

/// Runs the measurements one after another, until `cfg.repeat` of them or a signal, and
/// offers each one's interruptions to the tracer.
fn measure_repeats(
    cfg: &NoiseConfig,
    (source, ticks_per_ns): (Source, f64),
    control: &Control,
    log: &rt::PlacementLog,
    mut tracer: Option<&mut latlab_trace::session::Tracer>,
) -> Result<Measured> {
    let mut repeats = Vec::new();
    let mut disturbances = Vec::new();
    for r in 0..cfg.repeat {
        // The first repeat always runs (it ends at once when a signal came already), so an
        // early Ctrl-C still gives a saved, interrupted result.
        if r > 0 && control.was_interrupted() {
            break;
        }
        // Every event of the measurement is kept until its interruptions are explained, however
        // long the reader takes to catch up once the spinners let it run.
        if let Some(t) = tracer.as_deref() {
            t.hold_from(sys::clock::now_ns(libc::CLOCK_MONOTONIC));
        }
        let (outs, dist) = one_measurement(cfg, source, ticks_per_ns, control, log)?;
        if let (Some(t), Some(th)) = (tracer.as_deref_mut(), cfg.trace_threshold_ns) {
            offer_interruptions(t, &cfg.cpus, &outs, th);
        }
        if !cfg.quiet && cfg.repeat > 1 {
            latlab_core::note!(
                "{}",
                report::repeat_line(r + 1, cfg.repeat, cfg, &outs, cfg.unit)
            );
        }
        repeats.push(outs);
        disturbances.push(dist);
    }
    Ok((repeats, disturbances))
}

/// A disturbing command that failed did not disturb as intended: says so in the result.
fn warn_failed_disturbances(disturbances: &[Option<Disturbance>], warnings: &mut Vec<String>) {
    for (r, d) in disturbances.iter().enumerate() {
        if let Some(c) = d.as_ref().and_then(|d| d.exit_code).filter(|&c| c != 0) {
            warnings.push(format!(
                "repeat {}: --disturb command exited with status {c}",
                r + 1
            ));
        }
    }
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

/// What the control thread shares with the spinners of one measurement.
struct Shared {
    /// The run-wide stop flag.
    stop: Arc<AtomicBool>,
    /// Each spinner's live figures, for the display.
    lives: Vec<Arc<Live>>,
    /// When the disturbing command ran.
    window: Arc<worker::Window>,
    /// The start barrier; the control thread is its last party.
    barrier: Arc<Barrier>,
}

/// A spinner's thread, as `rt::spawn_workers` returns it.
type SpinHandle = std::thread::JoinHandle<(rt::Applied, SpinOut)>;

/// One measurement: spinners on every measured CPU for the configured duration.
fn one_measurement(
    cfg: &NoiseConfig,
    source: Source,
    tpn: f64,
    control: &Control,
    log: &rt::PlacementLog,
) -> Result<(Vec<SpinOut>, Option<Disturbance>)> {
    let placements = placements(cfg);
    let shared = Shared {
        stop: Arc::new(AtomicBool::new(false)),
        lives: placements.iter().map(|_| Arc::new(Live::new())).collect(),
        window: Arc::new(worker::Window::default()),
        barrier: Arc::new(Barrier::new(placements.len() + 1)),
    };
    let handles = spawn_spinners(cfg, &placements, &shared, (source, tpn), control, log)?;
    shared.barrier.wait();
    let t0 = Instant::now();
    let display = (!cfg.quiet
        && latlab_core::live::stdout_is_terminal()
        && cfg.json.as_deref().is_none_or(|j| j.as_os_str() != "-"))
    .then(|| report::live_view(cfg, shared.lives.clone(), shared.stop.clone()));
    let deadline = t0 + Duration::from_nanos(cfg.duration_ns);
    let disturb_at = t0 + Duration::from_nanos(cfg.duration_ns / 3);
    let mut disturber = Disturber::new(
        cfg.disturb.as_deref(),
        cfg.disturb_cpu,
        disturb_at,
        shared.window.clone(),
    );
    while Instant::now() < deadline && !control.was_interrupted() {
        if let Err(e) = disturber.poll() {
            shared.stop.store(true, Ordering::Release);
            for h in handles {
                let _ = h.join();
            }
            return Err(e);
        }
        let left = deadline.saturating_duration_since(Instant::now());
        std::thread::sleep(left.min(Duration::from_millis(20)));
    }
    shared.stop.store(true, Ordering::Release);
    let outs = join_spinners(handles, cfg.cpus.len())?;
    if let Some(d) = display {
        d.finish();
    }
    Ok((outs, disturber.finish(control.was_interrupted())))
}

/// Where each measured CPU's spinner runs.
fn placements(cfg: &NoiseConfig) -> Vec<Placement> {
    cfg.cpus
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
        .collect()
}

/// Starts one spinner per placement; each waits at the start barrier.
fn spawn_spinners(
    cfg: &NoiseConfig,
    placements: &[Placement],
    shared: &Shared,
    (source, tpn): (Source, f64),
    control: &Control,
    log: &rt::PlacementLog,
) -> Result<Vec<SpinHandle>> {
    let threshold_ticks = ((cfg.threshold_ns as f64) * tpn).ceil().max(1.0) as u64;
    let spin_ticks = ((cfg.duration_ns as f64) * tpn) as u64;
    rt::spawn_workers(placements, shared.barrier.clone(), log, |i| {
        let (stop, live) = (shared.stop.clone(), shared.lives[i].clone());
        let interrupt = control.stop.clone();
        let window = shared.window.clone();
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
            move || spin_watched(s, &name, &log)
        }
    })
    .map_err(|e| latlab_core::rt::start_error("cannot start spinning threads", e))
}

/// Runs a spinner and logs a placement another process changed while it spun.
fn spin_watched(s: Spinner, name: &str, log: &rt::PlacementLog) -> SpinOut {
    let placed = rt::Held::read();
    let watch = placed.watch(name);
    let out = s.run(rt::Stray::for_held(&placed));
    if let Some(moved) = placed.moved(name, watch) {
        log.failed(moved);
    }
    let checks = out.iterations / 256;
    if let Some(away) = out.stray.said(name, checks, "checks (one per 256 spins)") {
        log.failed(away);
    }
    out
}

/// Each spinner's outcome, with the CPU it really ran on.
fn join_spinners(handles: Vec<SpinHandle>, n: usize) -> Result<Vec<SpinOut>> {
    let mut outs = Vec::with_capacity(n);
    for h in handles {
        let (applied, mut o) = h
            .join()
            .map_err(|_| Error::Env("a spinning thread panicked".into()))?;
        o.ran_on = applied.cpu;
        outs.push(o);
    }
    Ok(outs)
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
        if self.engine != NoiseEngine::Spin {
            return osnoise::render(&o.run, self.unit).into();
        }
        let mut text = report::render(o, self);
        text.push_str(&latlab_analysis::export::why::why_for(&o.run, self.unit, false));
        text.into()
    }
}
