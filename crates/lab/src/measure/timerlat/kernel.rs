//! The kernel's timerlat tracer as `latlab timerlat` drives it: found (exit 3 naming the
//! kernel option where it is missing), refused while another tool holds it (the holder
//! named), configured through the run's journaled settings (`osnoise/`, machine-wide, put back
//! byte for byte), and run in latlab's own tracefs instance, which is journaled before it
//! exists and removed on every end (`latlab restore` after SIGKILL).

use super::config::TimerlatConfig;
use latlab_core::error::{Error, Result};
use crate::settings::Knobs;
use latlab_trace::tracefs::{Instance, TraceFs, TIMERLAT_SUFFIX};
use std::path::{Path, PathBuf};

/// The tracers that share the `osnoise/` settings and per-CPU threads: one user at a time.
pub(crate) const FAMILY: &[&str] = &["timerlat", "osnoise", "hwlat"];

/// Events traced beside the samples when spikes are explained: who ran, and the kernel's own
/// accounting of each interrupt, softirq and NMI (its `osnoise:` events).
pub(crate) const EXPLAIN_EVENTS: &[&str] = &[
    "sched/sched_switch",
    "osnoise/irq_noise",
    "osnoise/softirq_noise",
    "osnoise/nmi_noise",
];

/// What to do where the kernel has no timerlat tracer (`instead`: the user-space command).
pub(crate) fn missing(tracers: &str, instead: &str) -> Error {
    Error::Env(format!(
        "timerlat: this kernel has no timerlat tracer (it needs CONFIG_TIMERLAT_TRACER=y, \
         which Debian's linux-image-rt-amd64 has; available_tracers lists: {}). \
         {instead} measures timer wake-up latency from user space instead",
        if tracers.trim().is_empty() { "nothing" } else { tracers.trim() }
    ))
}

/// Exit 3 unless the kernel at `root` has the timerlat tracer (`instead`: what measures from
/// user space, for the message).
pub(crate) fn check_support(root: &Path, instead: &str) -> Result<()> {
    let p = root.join("available_tracers");
    let text = std::fs::read_to_string(&p)
        .map_err(|e| Error::Env(format!("timerlat: {}: {e}", p.display())))?;
    if text.split_whitespace().any(|t| t == "timerlat") {
        Ok(())
    } else {
        Err(missing(&text, instead))
    }
}

/// Every holder of a tracer of [`FAMILY`] under `root`: `instance NAME (timerlat)` or `the
/// top-level buffer (osnoise)`, with the processes that have files of it open.
pub(crate) fn holders(root: &Path) -> Vec<String> {
    let mut dirs = vec![(None, root.to_path_buf())];
    if let Ok(rd) = std::fs::read_dir(root.join("instances")) {
        let mut v: Vec<PathBuf> = rd.filter_map(|e| e.ok()).map(|e| e.path()).collect();
        v.sort();
        dirs.extend(v.into_iter().map(|p| {
            let n = p.file_name().map(|n| n.to_string_lossy().into_owned());
            (n, p)
        }));
    }
    let mut out = Vec::new();
    for (name, dir) in dirs {
        let Ok(t) = std::fs::read_to_string(dir.join("current_tracer")) else {
            continue;
        };
        let t = t.trim();
        if !FAMILY.contains(&t) {
            continue;
        }
        let who = match &name {
            Some(n) => format!("instance {n} ({t})"),
            None => format!("the top-level buffer ({t})"),
        };
        let procs = openers(&dir, name.is_none());
        let rtla = name.as_deref().is_some_and(|n| {
            ["timerlat_", "osnoise_", "hwnoise"].iter().any(|p| n.starts_with(p))
        });
        let procs = match (procs.is_empty(), rtla) {
            (true, true) => " — rtla's".to_string(),
            (true, false) => String::new(),
            (false, _) => format!(" — held by {}", procs.join(", ")),
        };
        out.push(format!("{who}{procs}"));
    }
    out
}

/// `comm:pid` of the processes with a file of tracefs directory `dir` open (`top`: the
/// top-level files only, not the instances').
fn openers(dir: &Path, top: bool) -> Vec<String> {
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return out;
    };
    for e in rd.filter_map(|e| e.ok()) {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        if pid == std::process::id() {
            continue;
        }
        let Ok(fds) = std::fs::read_dir(e.path().join("fd")) else {
            continue;
        };
        let holds = fds.filter_map(|f| f.ok()).any(|f| {
            std::fs::read_link(f.path()).is_ok_and(|t| {
                t.starts_with(dir) && !(top && t.starts_with(dir.join("instances")))
            })
        });
        if holds {
            let comm = std::fs::read_to_string(e.path().join("comm")).unwrap_or_default();
            out.push(format!("{}:{pid}", comm.trim()));
        }
        if out.len() >= 8 {
            break;
        }
    }
    out
}

/// The refusal while `holders` hold the tracer.
pub(crate) fn busy(holders: &[String]) -> Error {
    Error::Env(format!(
        "timerlat: the kernel's timerlat/osnoise tracer is in use by {}; it is machine-wide \
         (one set of osnoise/ settings and threads), so latlab does not take it over: run \
         again when it has ended",
        holders.join("; ")
    ))
}

/// The tracer running in latlab's instance.
#[derive(Debug)]
pub(crate) struct Running {
    /// The instance (removed when dropped).
    pub(crate) inst: Instance,
    /// The kernel's timerlat threads: (CPU, tid).
    pub(crate) threads: Vec<(usize, i32)>,
    /// Warnings for the result.
    pub(crate) warnings: Vec<String>,
}

impl Running {
    /// Stops the tracer (its threads end; the buffers stay readable until the instance goes).
    pub(crate) fn stop(&self) {
        let _ = latlab_trace::files::poke(&self.inst.reach.at("current_tracer"), "nop");
        self.inst.stop();
    }
}

/// Sets the `osnoise/` settings for `cfg` through `knobs` (journaled, put back by the driver),
/// creates latlab's instance and starts the timerlat tracer in it.
pub(crate) fn start(fs: &TraceFs, knobs: &mut Knobs, cfg: &TimerlatConfig) -> Result<Running> {
    let root = &fs.root;
    let o = root.join("osnoise");
    let list = latlab_core::config::CpuSet::from_cpus(cfg.cpus.iter().copied()).to_string();
    let print_stack = cfg.threshold_ns.map_or(0, |t| t.div_ceil(1000).max(1));
    let mut wanted = vec![
        ("cpus", list),
        ("timerlat_period_us", (cfg.period_ns / 1000).to_string()),
        ("stop_tracing_us", "0".to_string()),
        ("stop_tracing_total_us", "0".to_string()),
    ];
    if o.join("print_stack").exists() {
        wanted.push(("print_stack", print_stack.to_string()));
    }
    for (name, value) in &wanted {
        knobs.set(&o.join(name), value)?;
    }
    let events: Vec<String> = if cfg.threshold_ns.is_some() {
        EXPLAIN_EVENTS
            .iter()
            .filter(|e| root.join("events").join(e).is_dir())
            .map(|e| e.to_string())
            .collect()
    } else {
        Vec::new()
    };
    let buffer_kb = if events.is_empty() { 512 } else { 2048 };
    let journal = Some(latlab_trace::tracefs::journal_file(TIMERLAT_SUFFIX));
    let inst = fs.create_instance(TIMERLAT_SUFFIX, &cfg.cpus, &events, buffer_kb, journal)?;
    let cur = inst.dir.join("current_tracer");
    std::fs::write(&cur, "timerlat").map_err(|e| {
        Error::Env(format!(
            "timerlat: {}: write 'timerlat': {e} (another instance may have started an \
             osnoise-family tracer meanwhile)",
            cur.display()
        ))
    })?;
    let mut warnings = Vec::new();
    let threads = find_threads(&cfg.cpus);
    if threads.len() < cfg.cpus.len() {
        warnings.push(format!(
            "found {} of the kernel's {} timerlat threads by name",
            threads.len(),
            cfg.cpus.len()
        ));
    }
    if let Some(prio) = cfg.prio {
        for &(cpu, tid) in &threads {
            if let Err(e) = latlab_core::sys::sched::set_thread_policy(tid, libc::SCHED_FIFO, prio)
            {
                return Err(Error::Env(format!(
                    "-p/--priority: cannot make timerlat/{cpu} (tid {tid}) SCHED_FIFO {prio}: {e}"
                )));
            }
        }
    }
    Ok(Running {
        inst,
        threads,
        warnings,
    })
}

/// The kernel's `timerlat/N` threads of `cpus`, waited for briefly (the tracer starts them).
fn find_threads(cpus: &[usize]) -> Vec<(usize, i32)> {
    let t0 = std::time::Instant::now();
    loop {
        let mut found = Vec::new();
        if let Ok(rd) = std::fs::read_dir("/proc") {
            for e in rd.filter_map(|e| e.ok()) {
                let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
                    continue;
                };
                let comm = std::fs::read_to_string(e.path().join("comm")).unwrap_or_default();
                let Some(cpu) = comm.trim().strip_prefix("timerlat/").and_then(|c| c.parse().ok())
                else {
                    continue;
                };
                if cpus.contains(&cpu) {
                    found.push((cpu, pid));
                }
            }
        }
        found.sort();
        if found.len() >= cpus.len() || t0.elapsed() > std::time::Duration::from_secs(2) {
            return found;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Pins the calling thread (latlab's reader) to the online CPUs the tracer does not measure, so
/// its reading is not noise in what it reads; the warning when every CPU is measured. The
/// caller puts its thread state back after.
pub fn keep_off(cpus: &[usize], log: &latlab_core::rt::PlacementLog) -> Option<String> {
    let online = latlab_core::config::CpuSet::online_here();
    let hk = online.difference(&latlab_core::config::CpuSet::from_cpus(cpus.iter().copied()));
    if hk.is_empty() {
        return Some(format!(
            "every online CPU ({online}) is measured: latlab's reader runs on them too, and \
             its time there is in the samples (a thread named latlab)"
        ));
    }
    let what = format!("latlab's tracer reader: could not pin to CPUs {hk}");
    log.check(latlab_core::sys::sched::pin_to_cpus(hk.iter()), || what);
    None
}

/// The `osnoise/` settings latlab set for `cfg` that read otherwise now (another tool
/// started its tracer meanwhile: the samples after that are its settings').
pub(crate) fn changed_settings(
    root: &Path,
    cfg: &TimerlatConfig,
    t0: std::time::Instant,
) -> Vec<latlab_core::result::GroundChange> {
    let list = latlab_core::config::CpuSet::from_cpus(cfg.cpus.iter().copied()).to_string();
    let want = [
        ("cpus", list),
        ("timerlat_period_us", (cfg.period_ns / 1000).to_string()),
    ];
    let mut out = Vec::new();
    for (name, value) in want {
        let p = root.join("osnoise").join(name);
        let Ok(now) = std::fs::read_to_string(&p) else {
            continue;
        };
        if now.trim() != value {
            out.push(latlab_core::result::GroundChange {
                what: format!("osnoise/{name}"),
                from: value,
                to: now.trim().to_string(),
                at_s: Some(t0.elapsed().as_secs_f64()),
            });
        }
    }
    out
}
