//! `latlab noise --engine osnoise|hwnoise`: per-CPU noise as the kernel's osnoise tracer
//! measures it (rtla osnoise, rtla hwnoise) — its threads spin, and it classifies every noise
//! itself (hardware, NMI, IRQ, softirq, thread) — run in latlab's own tracefs instance with
//! the machine-wide settings journaled and put back, the holders refused as for timerlat.

use super::config::{NoiseConfig, NoiseEngine};
use super::NoiseOutcome;
use crate::driver::Ctx;
use latlab_core::error::{Error, Result};
use crate::measure::timerlat::records::{Layouts, Noise, Pipes, Rec};
use latlab_core::result::{Run, Series};
use latlab_core::stats::Recorder;
use crate::settings::Knobs;
use latlab_core::rt::Control;
use latlab_trace::tracefs::{Instance, TraceFs, OSNOISE_SUFFIX};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant, SystemTime};

/// Events traced: every noise at or above the threshold, and the kernel's accounting of each
/// interrupt, softirq, NMI and thread.
const EVENTS: &[&str] = &[
    "osnoise/sample_threshold",
    "osnoise/irq_noise",
    "osnoise/softirq_noise",
    "osnoise/nmi_noise",
    "osnoise/thread_noise",
];

/// The kernel's counts, in `Rec::Period`'s order.
const COUNTS: [&str; 5] = ["hw", "nmi", "irq", "softirq", "thread"];

/// One CPU's noise.
#[derive(Default)]
struct Cpu {
    samples: Recorder,
    hardware: u64,
    periods: u64,
    noise_ns: u64,
    runtime_ns: u64,
    max_single_ns: u64,
    counts: [u64; 5],
    classes: BTreeMap<(&'static str, String), (u64, u64)>,
}

impl Cpu {
    fn take(&mut self, r: Rec) {
        match r {
            Rec::Threshold { ns, interference } => {
                self.samples.record(ns);
                if interference == 0 {
                    self.hardware += 1;
                }
            }
            Rec::Period {
                noise_ns,
                runtime_ns,
                max_ns,
                counts,
            } => {
                // The tracer's period summary is in µs (its sample events are in ns).
                self.periods += 1;
                self.noise_ns += noise_ns.saturating_mul(1000);
                self.runtime_ns += runtime_ns.saturating_mul(1000);
                self.max_single_ns = self.max_single_ns.max(max_ns.saturating_mul(1000));
                for (a, b) in self.counts.iter_mut().zip(counts) {
                    *a += b;
                }
            }
            Rec::Noise { class, name, ns } => {
                let kind = match class {
                    Noise::Irq => "irq",
                    Noise::Softirq => "softirq",
                    Noise::Nmi => "nmi",
                    Noise::Thread => "thread",
                };
                // Threads by command (their pids vary); interrupts by name.
                let name = name.as_str().into_owned();
                let name = match class {
                    Noise::Thread => name.rsplit_once(':').map_or(name.clone(), |x| x.0.to_string()),
                    _ => name,
                };
                let e = self.classes.entry((kind, name)).or_default();
                e.0 += 1;
                e.1 += ns;
            }
            _ => {}
        }
    }
}

fn tracer_name(e: NoiseEngine) -> &'static str {
    if e == NoiseEngine::Hwnoise {
        "hwnoise"
    } else {
        "osnoise"
    }
}

/// Runs `cfg` on the osnoise tracer.
pub(crate) fn run(cfg: &NoiseConfig, ctx: &mut Ctx<'_>) -> Result<NoiseOutcome> {
    latlab_trace::set_who("noise --engine osnoise");
    let what = tracer_name(cfg.engine);
    if latlab_core::sys::sched::euid() != 0 {
        return Err(Error::Env(format!(
            "noise --engine {what} needs root: it runs the kernel's osnoise tracer through \
             tracefs; the default engine (--engine spin) measures from user space"
        )));
    }
    let fs = TraceFs::system(&latlab_core::io::state_dir())?;
    let root = fs.root.clone();
    check_tracer(cfg, &root, what)?;
    let knobs = ctx.settings()?;
    let holders = crate::measure::timerlat::kernel::holders(&root);
    if !holders.is_empty() {
        return Err(crate::measure::timerlat::kernel::busy(&holders));
    }
    let period_us = configure(cfg, knobs, &root)?;
    let events: Vec<String> = EVENTS
        .iter()
        .filter(|e| root.join("events").join(e).is_dir())
        .map(|e| e.to_string())
        .collect();
    let journal = Some(latlab_trace::tracefs::journal_file(OSNOISE_SUFFIX));
    let inst = fs.create_instance(OSNOISE_SUFFIX, &cfg.cpus, &events, 2048, journal)?;
    let cur = inst.dir.join("current_tracer");
    std::fs::write(&cur, "osnoise")
        .map_err(|e| Error::Env(format!("noise --engine {what}: {}: {e}", cur.display())))?;
    let mut saved = latlab_core::sys::sched::ThreadState::save();
    let off = crate::measure::timerlat::kernel::keep_off(&cfg.cpus, ctx.placement());
    let started = SystemTime::now();
    let t0 = Instant::now();
    let control = ctx.control().clone();
    let read = collect(cfg, &root, inst, &events, &control, t0)?;
    saved.restore();
    let mut warnings: Vec<String> = off.into_iter().collect();
    if read.missed > 0 {
        warnings.push(format!("the kernel's ring buffer lost {} events", read.missed));
    }
    if read.bad > 0 {
        warnings.push(format!("{} buffer pages did not parse", read.bad));
    }
    let series = cfg
        .cpus
        .iter()
        .zip(&read.cpus)
        .map(|(&c, d)| series(cfg, c, d))
        .collect();
    let mut params = serde_json::to_value(cfg).unwrap_or(serde_json::Value::Null);
    params["engine_tracer"] = format!("kernel {what} tracer").into();
    params["period_us"] = period_us.into();
    ctx.warnings().extend(warnings);
    let run = Run {
        interrupted: control.was_interrupted(),
        series,
        duration_s: t0.elapsed().as_secs_f64(),
        ..ctx.run_at(started, params)
    };
    Ok(NoiseOutcome {
        run,
        repeats: Vec::new(),
        disturbances: Vec::new(),
        ticks_per_ns: 1.0,
    })
}

/// Refuses a kernel without the osnoise tracer, or, for hwnoise, without its options.
fn check_tracer(cfg: &NoiseConfig, root: &Path, what: &str) -> Result<()> {
    let tracers = std::fs::read_to_string(root.join("available_tracers")).unwrap_or_default();
    if !tracers.split_whitespace().any(|t| t == "osnoise") {
        return Err(Error::Env(format!(
            "noise --engine {what}: this kernel has no osnoise tracer (it needs \
             CONFIG_OSNOISE_TRACER=y, which Debian's linux-image-rt-amd64 has; available_tracers \
             lists: {}). `latlab noise` (--engine spin) measures from user space instead",
            tracers.trim()
        )));
    }
    let o = root.join("osnoise");
    if cfg.engine == NoiseEngine::Hwnoise && !o.join("options").exists() {
        return Err(Error::Env(format!(
            "noise --engine hwnoise: this kernel's osnoise tracer has no {} (interrupts-off \
             noise, OSNOISE_IRQ_DISABLE, came with Linux 6.2): use --engine osnoise, whose \
             `hw` count is the noise nothing in the kernel explains",
            o.join("options").display()
        )));
    }
    Ok(())
}

/// Sets the tracer's machine-wide knobs for `cfg` (journaled, put back after the run) and
/// returns the period it runs, µs.
fn configure(cfg: &NoiseConfig, knobs: &mut Knobs, root: &Path) -> Result<u64> {
    let o = root.join("osnoise");
    // Ten periods a run at least (rtla's 1 s at most), so a short run still has the kernel's
    // per-period counts.
    let period_us = (cfg.duration_ns / 10_000).clamp(1_000, 1_000_000);
    let list = latlab_core::config::CpuSet::from_cpus(cfg.cpus.iter().copied()).to_string();
    // The kernel keeps runtime <= period at every write: the one that shrinks goes first.
    let now_period: u64 = std::fs::read_to_string(o.join("period_us"))
        .ok()
        .and_then(|t| t.trim().parse().ok())
        .unwrap_or(0);
    let (first, second) = if period_us < now_period {
        ("runtime_us", "period_us")
    } else {
        ("period_us", "runtime_us")
    };
    for (name, value) in [
        ("cpus", list),
        (first, period_us.to_string()),
        (second, period_us.to_string()),
        ("stop_tracing_us", "0".into()),
        ("stop_tracing_total_us", "0".into()),
    ] {
        knobs.set(&o.join(name), &value)?;
    }
    knobs.set(
        &root.join("tracing_thresh"),
        &cfg.threshold_ns.div_ceil(1000).max(1).to_string(),
    )?;
    if cfg.engine == NoiseEngine::Hwnoise {
        knobs.enable_feature(&o.join("options"), "OSNOISE_IRQ_DISABLE")?;
    }
    Ok(period_us)
}

/// What the tracer's pipes gave: each CPU's noise, and the events lost or unparsed.
struct Collected {
    cpus: Vec<Cpu>,
    missed: u64,
    bad: u64,
}

/// Reads the instance's pipes until the run's end or a signal, then stops the tracer, reads
/// what is left and removes the instance.
fn collect(
    cfg: &NoiseConfig,
    root: &Path,
    inst: Instance,
    events: &[String],
    control: &Control,
    t0: Instant,
) -> Result<Collected> {
    let layouts = Layouts::learn_for(root, "ftrace/osnoise", events)?;
    let paths: Vec<_> = cfg.cpus.iter().map(|&c| inst.pipe(c)).collect();
    let mut pipes = Pipes::open(&paths, layouts)?;
    let mut cpus: Vec<Cpu> = cfg.cpus.iter().map(|_| Cpu::default()).collect();
    let mut drain = |cpus: &mut [Cpu]| pipes.drain(&mut |i, _, r| cpus[i].take(r));
    let deadline = t0 + Duration::from_nanos(cfg.duration_ns);
    while !control.stop.load(std::sync::atomic::Ordering::Relaxed) && Instant::now() < deadline {
        drain(&mut cpus);
        let left = deadline.saturating_duration_since(Instant::now());
        std::thread::sleep(left.min(Duration::from_millis(50)));
    }
    let _ = latlab_trace::files::poke(&inst.reach.at("current_tracer"), "nop");
    inst.stop();
    while drain(&mut cpus) > 0 {}
    let (missed, bad): (u64, u64) = (pipes.missed.iter().sum(), pipes.bad_pages.iter().sum());
    drop(pipes);
    drop(inst);
    Ok(Collected { cpus, missed, bad })
}

/// CPU `c`'s series: the noises at or above the threshold (count, exact max, histogram),
/// with the kernel's periods, totals, counts and classes.
fn series(cfg: &NoiseConfig, c: usize, d: &Cpu) -> Series {
    let mut s = Series::from_recorder(format!("cpu{c}"), &d.samples);
    s.cpu = Some(c);
    s.policy = "fifo".into();
    let avail = (d.runtime_ns > 0)
        .then(|| 100.0 * (1.0 - d.noise_ns as f64 / d.runtime_ns as f64));
    let counts: serde_json::Map<String, serde_json::Value> = COUNTS
        .iter()
        .zip(d.counts)
        .map(|(k, v)| (k.to_string(), v.into()))
        .collect();
    let mut classes: Vec<serde_json::Value> = d
        .classes
        .iter()
        .map(|((k, n), (count, ns))| serde_json::json!({"kind": k, "name": n, "count": count, "ns": ns}))
        .collect();
    classes.sort_by_key(|v| std::cmp::Reverse(v["ns"].as_u64().unwrap_or(0)));
    classes.truncate(32);
    s.extra = Some(serde_json::json!({
        "engine": tracer_name(cfg.engine),
        "threshold_ns": cfg.threshold_ns,
        "periods": d.periods,
        "runtime_ns": d.runtime_ns,
        "noise_ns": d.noise_ns,
        "cpu_available_percent": avail,
        "max_single_ns": d.max_single_ns,
        "hardware_samples": d.hardware,
        "kernel_counts": counts,
        "classes": classes,
    }));
    s
}

/// The table, as rtla osnoise top prints it, with the largest classes under it.
pub(crate) fn render(run: &Run, unit: latlab_core::config::DisplayUnit) -> String {
    use std::fmt::Write;
    let tracer = run
        .series
        .first()
        .and_then(|s| s.extra.as_ref())
        .and_then(|e| e["engine"].as_str())
        .unwrap_or("osnoise");
    let mut out = format!(
        "noise: the kernel's {tracer} tracer, {} CPUs{}\n",
        run.series.len(),
        if run.interrupted { ", interrupted" } else { "" }
    );
    let _ = writeln!(
        out,
        "{:>5} {:>8} {:>10} {:>8} {:>9} {:>10} {:>7} {:>6} {:>8} {:>8} {:>7}",
        "CPU", "periods", "noise", "% avail", "samples", "max single", "HW", "NMI", "IRQ", "softirq", "thread"
    );
    for s in &run.series {
        let e = s.extra.clone().unwrap_or_default();
        let k = &e["kernel_counts"];
        let _ = writeln!(
            out,
            "{:>5} {:>8} {:>10} {:>8} {:>9} {:>10} {:>7} {:>6} {:>8} {:>8} {:>7}",
            s.cpu.map_or("-".into(), |c| c.to_string()),
            e["periods"].to_string(),
            unit.fmt_ns(e["noise_ns"].as_f64().unwrap_or(0.0)),
            e["cpu_available_percent"]
                .as_f64()
                .map_or("-".into(), |p| format!("{p:.5}")),
            s.summary.count,
            unit.fmt_ns(e["max_single_ns"].as_f64().unwrap_or(0.0)),
            k["hw"].to_string(),
            k["nmi"].to_string(),
            k["irq"].to_string(),
            k["softirq"].to_string(),
            k["thread"].to_string()
        );
    }
    for s in &run.series {
        let classes = s.extra.as_ref().and_then(|e| e["classes"].as_array().cloned());
        let top: Vec<String> = classes
            .unwrap_or_default()
            .iter()
            .take(3)
            .map(|c| {
                format!(
                    "{} {} ({} times, {})",
                    c["kind"].as_str().unwrap_or(""),
                    c["name"].as_str().unwrap_or(""),
                    c["count"],
                    unit.fmt_ns(c["ns"].as_f64().unwrap_or(0.0))
                )
            })
            .collect();
        if !top.is_empty() {
            let _ = writeln!(out, "  {}: {}", s.name, top.join(", "));
        }
    }
    out
}
