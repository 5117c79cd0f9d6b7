//! `latlab clocks`: the cost of time (seeds 001 and 004). For every clock id, gettimeofday,
//! time and the raw TSC: cost per call, resolution and observed granularity, vDSO or kernel
//! entry; under each chosen clocksource (always restored); and a cross-CPU monotonicity check.

pub(crate) mod args;
mod lower;

pub use latlab_core::sys::timesrc as probes;

use latlab_core::config::{CpuSet, DisplayUnit};
use crate::driver::Ctx;
use latlab_core::error::Result;
use latlab_analysis::export::columns;
use latlab_core::result::{Run, Series};
use latlab_core::rt::Control;
use latlab_core::stats::Recorder;
use latlab_core::sys::tsc::Ticks;
use probes::Probe;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

/// Validated `clocks` settings.
#[derive(Debug, Clone, serde::Serialize)]
pub(crate) struct ClocksConfig {
    /// Sources to measure, by name.
    pub(crate) probes: Vec<String>,
    /// Clocksources to measure under (empty: the current one only).
    pub(crate) clocksources: Vec<String>,
    /// Seconds of cross-CPU monotonicity checking per checked clock (0: none).
    pub(crate) check_monotonic_ns: u64,
    /// Batches per source.
    pub(crate) batches: usize,
    /// Calls per batch.
    pub(crate) batch: usize,
    /// Unit on screen.
    pub(crate) unit: DisplayUnit,
}

/// What one source measured.
#[derive(Debug, Clone)]
pub(crate) struct ProbeResult {
    /// Source name.
    pub(crate) name: String,
    /// Clocksource in force.
    pub(crate) clocksource: String,
    /// Why it was skipped, if it was.
    pub(crate) unavailable: Option<String>,
    /// Per-call cost of each batch, ns.
    pub(crate) cost_ns: Vec<f64>,
    /// Per-call cost of the direct system call, median ns (None: not a system call).
    pub(crate) syscall_ns: Option<f64>,
    /// "vdso", "syscall" or "instruction".
    pub(crate) path: &'static str,
    /// clock_getres, ns.
    pub(crate) resolution_ns: Option<u64>,
    /// Smallest non-zero step seen between two reads, ns.
    pub(crate) granularity_ns: Option<f64>,
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_unstable_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

/// Calls timed between two checks of the stop flag inside a batch: the check costs one load
/// per 4096 calls, and a large `--batch` still ends within a second of Ctrl-C.
const CHUNK: usize = 4096;

/// Per-call cost in ns of `f`, one figure per batch. A batch cut short by `stop` is dropped.
fn cost(
    f: impl Fn() -> u64,
    ticks: Ticks,
    tpn: f64,
    batches: usize,
    per: usize,
    stop: &std::sync::atomic::AtomicBool,
) -> Vec<f64> {
    use std::sync::atomic::Ordering;
    let mut out = Vec::with_capacity(batches.min(1 << 20));
    for _ in 0..batches {
        let t1 = ticks.read();
        let mut left = per;
        while left > 0 {
            let n = left.min(CHUNK);
            for _ in 0..n {
                std::hint::black_box(f());
            }
            left -= n;
            if stop.load(Ordering::Relaxed) {
                return out;
            }
        }
        let t2 = ticks.read();
        out.push(t2.wrapping_sub(t1) as f64 / tpn / per as f64);
    }
    out
}

/// Smallest non-zero step between consecutive reads (in the source's units), within 50 ms.
fn granularity(p: Probe) -> Option<u64> {
    let t0 = Instant::now();
    let mut prev = p.read();
    let mut best: Option<u64> = None;
    let mut changes = 0;
    while t0.elapsed() < Duration::from_millis(50) && changes < 1000 {
        for _ in 0..256 {
            let v = p.read();
            if v != prev {
                let d = v.wrapping_sub(prev);
                best = Some(best.map_or(d, |b| b.min(d)));
                changes += 1;
                prev = v;
            }
        }
    }
    best
}

fn measure(
    p: Probe,
    cs: &str,
    cfg: &ClocksConfig,
    ticks: Ticks,
    tpn: f64,
    stop: &std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> ProbeResult {
    let mut r = ProbeResult {
        name: p.name().into(),
        clocksource: cs.into(),
        unavailable: p.unavailable(),
        cost_ns: Vec::new(),
        syscall_ns: None,
        path: "instruction",
        resolution_ns: p.resolution_ns(),
        granularity_ns: None,
    };
    if r.unavailable.is_some() {
        return r;
    }
    r.cost_ns = cost(|| p.read(), ticks, tpn, cfg.batches, cfg.batch, stop);
    if p.read_syscall().is_some() {
        let mut sys = cost(
            || p.read_syscall().unwrap_or(0),
            ticks,
            tpn,
            cfg.batches.min(500),
            cfg.batch,
            stop,
        );
        let s = median(&mut sys);
        let c = median(&mut r.cost_ns.clone());
        r.syscall_ns = Some(s);
        r.path = if c < 0.6 * s { "vdso" } else { "syscall" };
    }
    let unit_ns = match p {
        Probe::Rdtsc | Probe::Rdtscp => 1.0 / tpn,
        _ => 1.0,
    };
    r.granularity_ns = granularity(p).map(|g| g as f64 * unit_ns);
    r
}

/// A backward step seen by the monotonicity check.
#[derive(Debug, Clone, serde::Serialize)]
pub(crate) struct Backward {
    /// How far back, in the source's units (ns; ticks for rdtsc).
    pub(crate) size: u64,
    /// CPU that published the later value.
    pub(crate) from_cpu: usize,
    /// CPU that then read an earlier one.
    pub(crate) to_cpu: usize,
}

/// Result of the cross-CPU check of one source.
#[derive(Debug, Clone, serde::Serialize)]
pub(crate) struct MonoCheck {
    /// Source name.
    pub(crate) name: String,
    /// Comparisons made.
    pub(crate) comparisons: u64,
    /// Backward steps seen.
    pub(crate) backward_steps: u64,
    /// The first backward steps (at most 100 per CPU).
    pub(crate) examples: Vec<Backward>,
}

/// Threads on every CPU read `p` back to back; each first loads the latest published value,
/// then reads its clock (after that load has completed): reading less than a value another CPU
/// published earlier is a step back in time. Value and CPU are published together as
/// `value << 8 | cpu` (CPU numbers above 255 are reported modulo 256).
pub(crate) fn check_monotonic(
    p: Probe,
    cpus: &[usize],
    dur: Duration,
    stop_all: &Control,
    log: &latlab_core::rt::PlacementLog,
) -> MonoCheck {
    let last = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let handles: Vec<_> = cpus
        .iter()
        .map(|&cpu| {
            let (last, stop, log) = (last.clone(), stop.clone(), log.clone());
            std::thread::spawn(move || {
                log.check(latlab_core::sys::sched::pin_to_cpu(cpu), || {
                    format!("monotonicity check: pin to CPU {cpu} refused")
                });
                let mut ex = Vec::with_capacity(100);
                let (mut n, mut back) = (0u64, 0u64);
                while !stop.load(Ordering::Relaxed) {
                    let packed = last.load(Ordering::Acquire);
                    let (seen, from) = (packed >> 8, (packed & 0xff) as usize);
                    let t = p.read_ordered() & (u64::MAX >> 8);
                    n += 1;
                    if t < seen {
                        back += 1;
                        if ex.len() < 100 {
                            ex.push(Backward {
                                size: seen - t,
                                from_cpu: from,
                                to_cpu: cpu,
                            });
                        }
                    } else {
                        last.fetch_max(t << 8 | (cpu as u64 & 0xff), Ordering::AcqRel);
                    }
                }
                (n, back, ex)
            })
        })
        .collect();
    let t0 = Instant::now();
    while t0.elapsed() < dur && !stop_all.was_interrupted() {
        std::thread::sleep(Duration::from_millis(20).min(dur));
    }
    stop.store(true, Ordering::Release);
    let mut out = MonoCheck {
        name: p.name().into(),
        comparisons: 0,
        backward_steps: 0,
        examples: Vec::new(),
    };
    for h in handles {
        if let Ok((n, b, ex)) = h.join() {
            out.comparisons += n;
            out.backward_steps += b;
            out.examples.extend(ex);
        }
    }
    out
}

/// A finished `clocks` run.
pub(crate) struct ClocksOutcome {
    /// The result model.
    pub(crate) run: Run,
    /// Per clocksource and source.
    pub(crate) results: Vec<ProbeResult>,
    /// Monotonicity checks.
    pub(crate) checks: Vec<MonoCheck>,
}

/// Runs the measurement.
pub(crate) fn run(cfg: ClocksConfig, ctx: &mut Ctx<'_>) -> Result<ClocksOutcome> {
    let mut warnings = Vec::new();
    let control = ctx.control().clone();
    let ticks = Ticks::best();
    let tpn = ticks.per_ns(100);
    let started = SystemTime::now();
    let t0 = Instant::now();
    let probes: Vec<Probe> = cfg
        .probes
        .iter()
        .filter_map(|n| probes::by_name(n))
        .collect();
    let mut results = Vec::new();
    {
        let setting = if cfg.clocksources.is_empty() {
            None
        } else {
            Some(crate::settings::clocksource::writable(
                &latlab_core::sys::roots::Roots::host().sys_root,
            )?)
        };
        let sources: Vec<String> = if cfg.clocksources.is_empty() {
            vec![ctx.environment().clocksource.clone()]
        } else {
            cfg.clocksources.clone()
        };
        'outer: for cs in &sources {
            if let Some(path) = &setting {
                crate::settings::clocksource::switch(ctx.settings()?, path, cs)?;
                std::thread::sleep(Duration::from_millis(50));
            }
            for &p in &probes {
                if control.was_interrupted() {
                    break 'outer;
                }
                results.push(measure(p, cs, &cfg, ticks, tpn, &control.stop));
            }
        }
    }
    // The original clocksource goes back now, before the monotonicity checks (and, whatever
    // happened above, when the driver releases the run's settings).
    for f in ctx.restore_settings() {
        ctx.warn(format!("could not restore {f}; run 'latlab restore'"));
    }
    let checks = if cfg.check_monotonic_ns > 0 && !control.was_interrupted() {
        monotonic_checks(&cfg, &control, ctx.placement())
    } else {
        Vec::new()
    };
    let check_failure = backward_steps(&checks, &mut warnings);
    let interrupted = control.was_interrupted();
    let mut series: Vec<Series> = results
        .iter()
        .filter(|r| r.unavailable.is_none())
        .map(|r| series_of(r, &cfg, tpn))
        .collect();
    series.extend(checks.iter().map(check_series));
    let unavailable: Vec<serde_json::Value> = results
        .iter()
        .filter_map(|r| {
            r.unavailable
                .as_ref()
                .map(|why| serde_json::json!({"name": r.name, "why": why}))
        })
        .collect();
    let mut params = serde_json::to_value(&cfg).unwrap_or_default();
    params["unavailable"] = serde_json::json!(unavailable);
    params["ticks_per_ns"] = serde_json::json!(tpn);
    ctx.warnings().extend(warnings);
    let run = Run {
        interrupted,
        check_failure,
        series,
        duration_s: t0.elapsed().as_secs_f64(),
        ..ctx.run_at(started, params)
    };
    Ok(ClocksOutcome {
        run,
        results,
        checks,
    })
}

/// `--check-monotonic`: each asked-for clock that can be read, checked across the online
/// CPUs.
fn monotonic_checks(
    cfg: &ClocksConfig,
    control: &latlab_core::rt::Control,
    log: &latlab_core::rt::PlacementLog,
) -> Vec<MonoCheck> {
    let mut checks = Vec::new();
    let cpus: Vec<usize> = CpuSet::online_here().iter().collect();
    let dur = Duration::from_nanos(cfg.check_monotonic_ns);
    for name in ["monotonic", "monotonic_raw", "rdtsc"] {
        let Some(p) = probes::by_name(name).filter(|p| p.unavailable().is_none()) else {
            continue;
        };
        if !cfg.probes.iter().any(|n| n == name) {
            continue;
        }
        checks.push(check_monotonic(p, &cpus, dur, control, log));
    }
    checks
}

/// A warning for each clock that went backwards; the first one fails the run.
fn backward_steps(checks: &[MonoCheck], warnings: &mut Vec<String>) -> Option<String> {
    let mut check_failure = None;
    for c in checks {
        if c.backward_steps > 0 {
            let worst = c.examples.iter().max_by_key(|b| b.size);
            let msg = format!(
                "--check-monotonic: {} went backwards {} time(s) in {} comparisons{}",
                c.name,
                c.backward_steps,
                c.comparisons,
                worst
                    .map(|b| format!(
                        "; largest step {} (CPU {} then CPU {})",
                        b.size, b.from_cpu, b.to_cpu
                    ))
                    .unwrap_or_default()
            );
            warnings.push(msg.clone());
            check_failure.get_or_insert(msg);
        }
    }
    check_failure
}

/// A monotonicity check as a series: its backward steps, counted over its comparisons.
fn check_series(c: &MonoCheck) -> Series {
    let mut rec = Recorder::new();
    for b in &c.examples {
        rec.record(b.size);
    }
    let mut s = Series::from_recorder(format!("monotonic-check/{}", c.name), &rec);
    s.summary.count = c.comparisons;
    s.extra = Some(serde_json::to_value(c).unwrap_or_default());
    s
}

fn series_of(r: &ProbeResult, cfg: &ClocksConfig, tpn: f64) -> Series {
    let mut rec = Recorder::new();
    for &c in &r.cost_ns {
        rec.record(c.round() as u64);
    }
    let name = if cfg.clocksources.len() > 1 {
        format!("{}/{}", r.clocksource, r.name)
    } else {
        r.name.clone()
    };
    let mut s = Series::from_recorder(name, &rec);
    let mut v = r.cost_ns.clone();
    v.sort_unstable_by(f64::total_cmp);
    // None (null) for a probe the run was interrupted before: no cost was measured.
    let q = |q: f64, scale: f64| {
        v.get((((q * v.len() as f64).ceil() as usize).max(1) - 1).min(v.len().saturating_sub(1)))
            .map(|x| x * scale)
    };
    s.extra = Some(serde_json::json!({
        "clocksource": r.clocksource,
        "path": r.path,
        "resolution_ns": r.resolution_ns,
        "granularity_ns": r.granularity_ns,
        "cost_ns": {"min": q(0.0, 1.0), "median": q(0.5, 1.0), "p99": q(0.99, 1.0)},
        "cost_cycles": {"min": q(0.0, tpn), "median": q(0.5, tpn), "p99": q(0.99, tpn)},
        "syscall_ns": r.syscall_ns,
        "calls_per_batch": cfg.batch,
    }));
    s
}

/// The report: a table per clocksource, then the monotonicity checks.
pub(crate) fn render(o: &ClocksOutcome, cfg: &ClocksConfig) -> String {
    let mut s = format!(
        "latlab clocks  run {}{}\n",
        o.run.id,
        if o.run.interrupted {
            "  (interrupted)"
        } else {
            ""
        }
    );
    let f2 = |v: f64| format!("{v:.1}");
    let mut sources: Vec<&str> = o.results.iter().map(|r| r.clocksource.as_str()).collect();
    sources.dedup();
    let tpn = o.run.parameters["ticks_per_ns"].as_f64().unwrap_or(1.0);
    for cs in sources {
        s.push_str(&format!(
            "\nclocksource {cs}: cost per call in ns (cycles at {:.0} MHz)\n",
            tpn * 1000.0
        ));
        let mut rows = Vec::new();
        for r in o.results.iter().filter(|r| r.clocksource == cs) {
            if let Some(why) = &r.unavailable {
                rows.push(vec![
                    r.name.clone(),
                    "-".into(),
                    "-".into(),
                    "-".into(),
                    "-".into(),
                    "-".into(),
                    "-".into(),
                    format!("unavailable: {why}"),
                ]);
                continue;
            }
            let mut v = r.cost_ns.clone();
            // A probe the run was interrupted before has no cost: "-", never a made-up 0.0.
            let (min, med, p99, cycles) = if v.is_empty() {
                ("-".into(), "-".into(), "-".into(), "-".into())
            } else {
                let med = median(&mut v);
                let p99 = v[((0.99 * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1];
                (f2(v[0]), f2(med), f2(p99), format!("{:.0}", med * tpn))
            };
            rows.push(vec![
                r.name.clone(),
                min,
                med,
                p99,
                cycles,
                r.resolution_ns
                    .map_or("-".into(), |x| cfg.unit.fmt_ns_fine(x as f64)),
                r.granularity_ns
                    .map_or("-".into(), |x| cfg.unit.fmt_ns_fine(x)),
                r.path.to_string(),
            ]);
        }
        s.push_str(&columns::render(
            &[
                "clock",
                "min",
                "median",
                "p99",
                "cycles",
                &format!("resolution ({})", cfg.unit),
                &format!("granularity ({})", cfg.unit),
                "path",
            ],
            &rows,
        ));
    }
    if !cfg.clocksources.is_empty() {
        s.push_str("(the original clocksource was restored)\n");
    }
    for c in &o.checks {
        s.push_str(&format!(
            "\nmonotonic check {}: {} comparisons across CPUs, {} backward step(s)\n",
            c.name, c.comparisons, c.backward_steps
        ));
        for b in c.examples.iter().take(5) {
            s.push_str(&format!(
                "  back by {} (CPU {} then CPU {})\n",
                b.size, b.from_cpu, b.to_cpu
            ));
        }
    }
    for w in &o.run.warnings {
        s.push_str(&format!("warning: {w}\n"));
    }
    s
}

impl crate::driver::Measurement for ClocksConfig {
    type Outcome = ClocksOutcome;
    const KIND: &'static str = "clocks";

    fn planned(&self) -> Option<Duration> {
        None
    }

    fn footprint(&self) -> crate::driver::Footprint {
        crate::driver::Footprint::default()
    }

    fn measure(&mut self, ctx: &mut Ctx<'_>) -> Result<ClocksOutcome> {
        run(self.clone(), ctx)
    }

    fn result(o: &mut ClocksOutcome) -> &mut Run {
        &mut o.run
    }

    fn render(&self, o: &ClocksOutcome) -> crate::driver::Text {
        render(o, self).into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_probe_interrupted_before_its_first_batch_shows_no_cost() {
        let cfg = ClocksConfig {
            probes: vec!["monotonic".into()],
            clocksources: Vec::new(),
            check_monotonic_ns: 0,
            batches: 10,
            batch: 100,
            unit: DisplayUnit::Ns,
        };
        let probe = ProbeResult {
            name: "monotonic".into(),
            clocksource: "tsc".into(),
            unavailable: None,
            cost_ns: Vec::new(),
            syscall_ns: None,
            path: "vdso",
            resolution_ns: Some(1),
            granularity_ns: None,
        };
        let env = latlab_core::result::Environment::capture();
        let run = Run::new(
            "clocks",
            SystemTime::now(),
            Vec::new(),
            serde_json::json!({}),
            env,
        );
        let series = series_of(&probe, &cfg, 2.5);
        let o = ClocksOutcome {
            run,
            results: vec![probe],
            checks: Vec::new(),
        };
        let text = render(&o, &cfg);
        let row = text.lines().find(|l| l.starts_with("monotonic")).unwrap();
        let cells: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(cells[1..5], ["-", "-", "-", "-"], "{text}");
        let extra = series.extra.unwrap();
        assert!(extra["cost_ns"]["median"].is_null() && extra["cost_cycles"]["p99"].is_null());
    }
}
