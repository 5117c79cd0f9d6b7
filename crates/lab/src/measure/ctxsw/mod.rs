//! `latlab ctxsw`: the cost of a context switch (seed 000), by `yield`, `pipe` and `futex`,
//! between threads or processes, on one CPU or several; with the seed's `ioperm` phases.

pub(crate) mod args;
mod lower;

pub(crate) mod methods;

use latlab_core::config::{CpuSet, DisplayUnit, Policy};
use crate::driver::Ctx;
use latlab_core::error::{Error, Result};
use latlab_analysis::export::columns;
use latlab_core::result::{Run, Series};

use latlab_core::stats::Recorder;
use latlab_core::sys::{self, tsc::Ticks};
use methods::{Prep, Raw, Setup, TaskKind};
use std::sync::Arc;
use std::time::{Instant, SystemTime};

/// A way of forcing switches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Method {
    /// Two SCHED_FIFO tasks on one CPU yielding to each other (the seed's method).
    Yield,
    /// A token passed round a ring of tasks through pipes (lmbench lat_ctx).
    Pipe,
    /// A futex wake/wait ping-pong.
    Futex,
}

/// Validated `ctxsw` settings.
#[derive(Debug, Clone, serde::Serialize)]
pub(crate) struct CtxswConfig {
    /// Methods to run, in order.
    pub(crate) methods: Vec<Method>,
    /// Threads or processes.
    pub(crate) tasks: TaskKind,
    /// CPUs the tasks are spread over.
    pub(crate) cpus: Vec<usize>,
    /// Timed iterations per method.
    pub(crate) iterations: usize,
    /// Untimed iterations first.
    pub(crate) warmup: usize,
    /// Tasks in the pipe ring.
    pub(crate) ring: usize,
    /// KiB each pipe task touches per hop.
    pub(crate) touch_kb: usize,
    /// Policy.
    pub(crate) policy: Policy,
    /// Priority.
    pub(crate) prio: i32,
    /// ioperm phases (None = no port access; Some(p) = port p enabled).
    pub(crate) ioperm: Vec<Option<u32>>,
    /// Enable ports in the partner task too.
    pub(crate) ioperm_both: bool,
    /// Print the seed's lines.
    pub(crate) seed_output: bool,
    /// Unit on screen.
    pub(crate) unit: DisplayUnit,
    /// Fail instead of falling back.
    pub(crate) strict: bool,
}

/// One measured method (or ioperm phase).
pub(crate) struct MethodResult {
    /// Series name: `yield`, `pipe`, `futex`, `yield+ioperm0x80` ...
    pub(crate) name: String,
    /// The raw ticks.
    pub(crate) raw: Raw,
}

/// A finished `ctxsw` run.
pub(crate) struct CtxswOutcome {
    /// The result model.
    pub(crate) run: Run,
    /// Raw results per method.
    pub(crate) results: Vec<MethodResult>,
    /// Ticks per ns.
    pub(crate) ticks_per_ns: f64,
}

/// Parses `--ioperm`: `none`, `all` (none, 0x80, 0xffff as in the seed) or a list of ports.
pub(crate) fn parse_ioperm(v: &str) -> Result<Vec<Option<u32>>> {
    let mut out = Vec::new();
    for part in v.split(',').map(str::trim) {
        match part {
            "none" => out.push(None),
            "all" => out.extend([None, Some(0x80), Some(0xffff)]),
            p => {
                let n = if let Some(h) = p.strip_prefix("0x").or_else(|| p.strip_prefix("0X")) {
                    u32::from_str_radix(h, 16)
                } else {
                    p.parse()
                };
                let n = n.map_err(|_| {
                    Error::flag("--ioperm", p, "expected none, all, or a port like 0x80")
                })?;
                if n > 0xffff {
                    return Err(Error::flag("--ioperm", p, "ports go up to 0xffff"));
                }
                out.push(Some(n));
            }
        }
    }
    Ok(latlab_core::config::distinct(out))
}

/// Fails early (exit 3) when the kernel cannot grant port access, from a throwaway thread.
fn probe_ioperm(ports: &[Option<u32>]) -> Result<()> {
    for p in ports.iter().flatten() {
        let p = *p;
        std::thread::spawn(move || sys::ioperm::enable(p))
            .join()
            .map_err(|_| Error::Env("ioperm probe panicked".into()))??;
    }
    Ok(())
}

fn prep_for(port: Option<u32>) -> Prep {
    Arc::new(move || {
        if let Some(p) = port {
            let _ = sys::ioperm::enable(p);
        }
    })
}

/// Runs the methods.
pub(crate) fn run(mut cfg: CtxswConfig, ctx: &mut Ctx<'_>) -> Result<CtxswOutcome> {
    let mut warnings = Vec::new();
    if cfg.ioperm.iter().any(Option::is_some) {
        probe_ioperm(&cfg.ioperm)?;
    }
    if !ctx.rt_granted() {
        cfg.policy = Policy::Other;
        cfg.prio = 0;
        warnings.push("without SCHED_FIFO, sched_yield need not switch tasks: yield figures are not context switches".into());
    }
    // The control thread keeps off the measured CPUs where it can.
    let mut saved = sys::sched::ThreadState::save();
    let online = CpuSet::online_here();
    let spare: Vec<usize> = online.iter().filter(|c| !cfg.cpus.contains(c)).collect();
    if !spare.is_empty() {
        ctx.placement().check(sys::sched::pin_to_cpus(spare), || {
            "ctxsw control thread: could not move off the measured CPUs".into()
        });
    }
    let ticks = Ticks::best();
    let tpn = ticks.per_ns(100);
    let setup = Setup {
        kind: cfg.tasks,
        cpus: cfg.cpus.clone(),
        policy: cfg.policy.as_libc(),
        prio: cfg.prio,
        iterations: cfg.iterations,
        warmup: cfg.warmup,
        ticks,
        stop: ctx.control().stop.clone(),
        log: ctx.placement().clone(),
    };
    let started = SystemTime::now();
    let t0 = Instant::now();
    let results = run_methods(&cfg, &setup);
    saved.restore();
    let results = results?;
    for r in results.iter().filter(|r| r.raw.foreign > 0) {
        warnings.push(format!(
            "--method {}: {} byte{} another process wrote into the ring's pipes {} dropped, not \
             passed on as a second token; the round trips they came in took a read more",
            r.name,
            r.raw.foreign,
            if r.raw.foreign == 1 { "" } else { "s" },
            if r.raw.foreign == 1 { "was" } else { "were" }
        ));
    }
    let series = results.iter().map(|r| series_of(r, &cfg, tpn)).collect();
    let mut params = serde_json::to_value(&cfg).unwrap_or_default();
    params["ticks_per_ns"] = serde_json::json!(tpn);
    params["tick_source"] = serde_json::json!(if ticks == Ticks::Tsc {
        "tsc"
    } else {
        "monotonic"
    });
    ctx.warnings().extend(warnings);
    let run = Run {
        series,
        duration_s: t0.elapsed().as_secs_f64(),
        ..ctx.run_at(started, params)
    };
    Ok(CtxswOutcome {
        run,
        results,
        ticks_per_ns: tpn,
    })
}

/// Times each method of `cfg` in turn, until a signal.
fn run_methods(cfg: &CtxswConfig, setup: &Setup) -> Result<Vec<MethodResult>> {
    let mut results = Vec::new();
    // A method not begun when the run is stopped is not begun at all: each one allocates and
    // locks room for all its samples first (800 MB for 10^8 iterations), seconds of work
    // after Ctrl-C for a method that would then time nothing.
    for &m in &cfg.methods {
        if stopped(setup) {
            break;
        }
        match m {
            Method::Yield => yield_phases(cfg, setup, &mut results)?,
            Method::Pipe => {
                let raw = methods::pipe_ring(setup, cfg.ring, cfg.touch_kb).map_err(io)?;
                results.push(MethodResult {
                    name: "pipe".into(),
                    raw,
                });
            }
            Method::Futex => {
                let raw = methods::futex_pair(setup).map_err(io)?;
                results.push(MethodResult {
                    name: "futex".into(),
                    raw,
                });
            }
        }
    }
    Ok(results)
}

/// Whether the run was stopped.
fn stopped(setup: &Setup) -> bool {
    setup.stop.load(std::sync::atomic::Ordering::Relaxed)
}

/// A task set that could not be set up.
fn io(e: std::io::Error) -> latlab_core::error::Error {
    latlab_core::rt::start_error("cannot set up the tasks", e)
}

/// The yield method, once per `--ioperm` phase (once without `--ioperm`).
fn yield_phases(
    cfg: &CtxswConfig,
    setup: &Setup,
    results: &mut Vec<MethodResult>,
) -> Result<()> {
    let phases: Vec<Option<u32>> = if cfg.ioperm.is_empty() {
        vec![None]
    } else {
        cfg.ioperm.clone()
    };
    for port in phases {
        if stopped(setup) {
            break;
        }
        let partner = if cfg.ioperm_both {
            prep_for(port)
        } else {
            prep_for(None)
        };
        let raw = methods::yield_pair(setup, prep_for(port), partner).map_err(io)?;
        let name = match port {
            None if cfg.ioperm.is_empty() => "yield".to_string(),
            None => "yield+no-ioperm".to_string(),
            Some(p) => format!("yield+ioperm{p:#x}"),
        };
        results.push(MethodResult { name, raw });
    }
    Ok(())
}

fn tick_stats(v: &[u64]) -> serde_json::Value {
    let mut s = v.to_vec();
    s.sort_unstable();
    let n = s.len().max(1);
    let at = |q: f64| {
        s.get((((q * n as f64).ceil() as usize).max(1) - 1).min(n - 1))
            .copied()
            .unwrap_or(0)
    };
    serde_json::json!({
        "min": s.first().copied().unwrap_or(0),
        "median": at(0.5),
        "mean": s.iter().sum::<u64>() as f64 / n as f64,
        "p99": at(0.99),
        "max": s.last().copied().unwrap_or(0),
    })
}

/// A series of per-switch costs in ns; raw round trips in ticks go to `extra`.
fn series_of(r: &MethodResult, cfg: &CtxswConfig, tpn: f64) -> Series {
    let mut rec = Recorder::new();
    for &x in &r.raw.samples {
        let ns = methods::per_switch(x, r.raw.overhead_per_sample, r.raw.switches_per_sample) / tpn;
        rec.record(ns.round() as u64);
    }
    let mut s = Series::from_recorder(r.name.clone(), &rec);
    s.cpu = cfg.cpus.first().copied();
    s.policy = cfg.policy.to_string();
    s.prio = cfg.prio;
    s.extra = Some(serde_json::json!({
        "tasks": cfg.tasks,
        "cpus": cfg.cpus,
        "switches_per_sample": r.raw.switches_per_sample,
        "overhead_ticks_per_sample": r.raw.overhead_per_sample,
        "overhead_ns_per_sample": r.raw.overhead_per_sample as f64 / tpn,
        "sample_ticks": tick_stats(&r.raw.samples),
        "ticks_per_ns": tpn,
    }));
    if r.raw.foreign > 0 {
        if let Some(e) = s.extra.as_mut().and_then(|e| e.as_object_mut()) {
            e.insert("foreign".into(), r.raw.foreign.into());
        }
    }
    s
}

/// The report: per method, per-switch cost in ns and cycles; the seed's lines on request.
pub(crate) fn render(o: &CtxswOutcome, cfg: &CtxswConfig) -> String {
    let u = cfg.unit;
    let mut s = format!(
        "latlab ctxsw  {} on CPU(s) {}  {} {}  {} iterations (+{} warm-up)  run {}\n",
        match cfg.tasks {
            TaskKind::Threads => "threads",
            TaskKind::Processes => "processes",
        },
        CpuSet::from_cpus(cfg.cpus.iter().copied()),
        cfg.policy,
        cfg.prio,
        cfg.iterations,
        cfg.warmup,
        o.run.id
    );
    s.push_str(&format!(
        "per context switch, {u} and TSC cycles ({:.0} MHz); raw = one round trip\n",
        o.ticks_per_ns * 1000.0
    ));
    let mut rows = Vec::new();
    for (r, ser) in o.results.iter().zip(&o.run.series) {
        let m = &ser.summary;
        // A method that measured nothing (interrupted at once) has no figures.
        let none = m.count == 0;
        let cyc = |ns: f64| {
            if none {
                "-".to_string()
            } else {
                format!("{:.0}", ns * o.ticks_per_ns)
            }
        };
        let us = |ns: f64| if none { "-".to_string() } else { u.fmt_ns(ns) };
        let raw_min = r.raw.samples.iter().min().copied();
        rows.push(vec![
            r.name.clone(),
            m.count.to_string(),
            format!("{}", r.raw.switches_per_sample),
            us(m.min_ns as f64),
            us(m.percentiles.p50 as f64),
            us(m.mean_ns),
            m.percentiles.supported(m.count)[2].map_or("-".to_string(), |p| u.fmt_ns(p as f64)),
            us(m.max_ns as f64),
            cyc(m.min_ns as f64),
            cyc(m.percentiles.p50 as f64),
            raw_min.map_or("-".to_string(), |c| c.to_string()),
            u.fmt_ns(r.raw.overhead_per_sample as f64 / o.ticks_per_ns),
        ]);
    }
    s.push_str(&columns::render(
        &[
            "method",
            "samples",
            "switches",
            "min",
            "median",
            "mean",
            "p99",
            "max",
            "min cyc",
            "median cyc",
            "raw min cyc",
            "overhead",
        ],
        &rows,
    ));
    if cfg.seed_output {
        s.push('\n');
        for r in &o.results {
            if let Some(phase) = r.name.strip_prefix("yield") {
                let label = match phase {
                    "" | "+no-ioperm" => "default no ioperm".to_string(),
                    p => format!("turning on port {} ioperm", p.trim_start_matches("+ioperm")),
                };
                let min = r.raw.samples.iter().min().copied().unwrap_or(0);
                s.push_str(&format!("{label}: scheduling latency: {min} cycles\n"));
            }
        }
    }
    for w in &o.run.warnings {
        s.push_str(&format!("warning: {w}\n"));
    }
    s
}

impl crate::driver::Measurement for CtxswConfig {
    type Outcome = CtxswOutcome;
    const KIND: &'static str = "ctxsw";

    fn planned(&self) -> Option<std::time::Duration> {
        None
    }

    fn measured_cpus(&self) -> Option<latlab_core::config::CpuSet> {
        Some(latlab_core::config::CpuSet::from_cpus(self.cpus.iter().copied()))
    }

    fn footprint(&self) -> crate::driver::Footprint {
        crate::driver::Footprint {
            min_rt_prio: self.policy.is_rt().then_some(self.prio),
            rt: self.policy.is_rt().then_some((self.policy, self.prio)),
            mlock: true,
            dma_latency_us: None,
            rt_required: false,
        }
    }

    fn measure(&mut self, ctx: &mut Ctx<'_>) -> Result<CtxswOutcome> {
        run(self.clone(), ctx)
    }

    fn result(o: &mut CtxswOutcome) -> &mut Run {
        &mut o.run
    }

    fn render(&self, o: &CtxswOutcome) -> crate::driver::Text {
        render(o, self).into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ioperm_phases() {
        assert_eq!(
            parse_ioperm("all").unwrap(),
            vec![None, Some(0x80), Some(0xffff)]
        );
        assert_eq!(parse_ioperm("none,0x80").unwrap(), vec![None, Some(0x80)]);
        assert!(parse_ioperm("0x10000")
            .unwrap_err()
            .to_string()
            .contains("0xffff"));
        assert!(parse_ioperm("port80").is_err());
    }
}
