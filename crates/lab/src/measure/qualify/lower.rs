//! Lowers `latlab qualify`'s raw arguments into its validated config: every flag checked, each
//! failure an exit-2 message naming the flag and the value. Paths are made absolute, so a
//! qualification resumed from another directory (a service after a reboot) writes where the
//! first segment would have.

use super::args::QualifyArgs;
use super::QualifyConfig;
use latlab_core::config::{parse_time_ns, BareUnit, CpuSet};
use latlab_core::error::{Error, Result};
use std::path::{Path, PathBuf};

/// The loads of a qualification that names none (rteval's pair: hackbench and a build).
pub(crate) const DEFAULT_LOADS: [&str; 2] = ["hackbench", "build"];
/// The checkpoint interval when none is given.
pub(crate) const DEFAULT_CHECKPOINT_NS: u64 = 600_000_000_000;

pub(super) fn absolute(flag: &str, p: &Path) -> Result<PathBuf> {
    if p.as_os_str() == "-" {
        return Ok(p.to_path_buf());
    }
    std::path::absolute(p).map_err(|e| Error::flag(flag, p.display(), e))
}

impl QualifyConfig {
    /// Validates the arguments of a new qualification (exit 2 naming the flag).
    pub(crate) fn from_args(a: &QualifyArgs, online: &CpuSet) -> Result<QualifyConfig> {
        let (cpus, housekeeping) = measured_cpus(a, online)?;
        let interval_ns = interval_of(a)?;
        let duration_ns = duration_of(a)?;
        let checkpoint_ns = checkpoint_of(a)?;
        let prio = a.priority.unwrap_or(95);
        if !(0..=99).contains(&prio) {
            return Err(Error::flag(
                "-p/--priority",
                prio,
                "expected 0 (SCHED_OTHER) or 1-99",
            ));
        }
        let confidence = a.confidence.unwrap_or(0.95);
        if !(confidence > 0.5 && confidence < 1.0) {
            return Err(Error::flag(
                "--confidence",
                confidence,
                "must be between 0.5 and 1 (exclusive), e.g. 0.95",
            ));
        }
        let requirements = requirements_of(a)?;
        let loads = loads_of(a)?;
        crate::measure::timerlat::probe::check_engine(
            a.engine,
            a.interval.as_deref().unwrap_or(""),
            interval_ns,
            &a.trace,
        )?;
        let mut cfg = QualifyConfig {
            id: latlab_core::result::new_run_id(std::time::SystemTime::now()),
            cpus: cpus.iter().collect(),
            engine: a.engine,
            interval_ns,
            prio,
            duration_ns,
            checkpoint_ns,
            requirements,
            confidence,
            loads,
            housekeeping: housekeeping.map(|h| h.to_string()),
            trace_threshold_ns: a.trace.threshold_ns()?,
            trace_stacks: a.trace.trace_stacks,
            trace_save: a
                .trace
                .trace_save
                .as_deref()
                .map(|p| absolute("--trace-save", p))
                .transpose()?,
            on_threshold: a.trace.on_threshold.clone(),
            on_threshold_max: Some(u64::from(a.trace.actions_max()?)),
            trace_budget: a.trace.trace_budget.clone(),
            on_threshold_env: a
                .trace
                .on_threshold_env
                .iter()
                .map(|e| e.split_once('=').map_or(e.as_str(), |(n, _)| n).to_string())
                .collect(),
            junit: a.junit.as_deref().map(|p| absolute("--junit", p)).transpose()?,
            report: a.report.as_deref().map(|p| absolute("--report", p)).transpose()?,
            json: a
                .common
                .output
                .json
                .as_deref()
                .map(|p| absolute("--json", p))
                .transpose()?,
            tags: a.common.store.tag.clone(),
            mlock: !a.no_mlock,
            strict: a.common.rt.strict,
            quiet: a.common.quiet(),
            derived: Default::default(),
        };
        if let Some(p) = &cfg.trace_save {
            check_trace_save(p)?;
        }
        latlab_core::store::parse_tags(&cfg.tags)?;
        cfg.derive()?;
        // This segment passes the values as given (NAME=VALUE included).
        cfg.derived.limits = a.trace.limits()?;
        Ok(cfg)
    }

    /// Parses what the config keeps as text (requirements, `--on-threshold` rules): after
    /// lowering, and after reading a stored config back.
    pub(crate) fn derive(&mut self) -> Result<()> {
        self.derived.requirements = self
            .requirements
            .iter()
            .map(|r| {
                latlab_analysis::gate::requirement::Requirement::parse(r)
                    .map_err(|e| Error::flag("--require", r, e))
            })
            .collect::<Result<_>>()?;
        let trace = latlab_trace::args::TraceArgs {
            trace: self.trace_threshold_ns.is_some(),
            on_threshold: self.on_threshold.clone(),
            on_threshold_max: self.on_threshold_max,
            trace_budget: self.trace_budget.clone(),
            // Only the names are stored: latlab's own values, for the names it has.
            on_threshold_env: self
                .on_threshold_env
                .iter()
                .filter(|n| std::env::var_os(n).is_some())
                .cloned()
                .collect(),
            ..Default::default()
        };
        self.derived.actions = trace.actions()?;
        self.derived.limits = trace.limits()?;
        Ok(())
    }
}

/// A time flag's value (ns), None when not given; `bare` is the unit of a bare number.
fn time_of(flag: &str, v: &Option<String>, bare: BareUnit) -> Result<Option<u64>> {
    v.as_deref()
        .map(|t| parse_time_ns(t, bare).map_err(|e| Error::flag(flag, t, e)))
        .transpose()
}

/// The measured CPUs (`-a`, else the online ones `--housekeeping` leaves) and the
/// housekeeping ones.
fn measured_cpus(a: &QualifyArgs, online: &CpuSet) -> Result<(CpuSet, Option<CpuSet>)> {
    let housekeeping = a
        .common
        .loads
        .housekeeping
        .as_ref()
        .map(|h| h.online("--housekeeping", online))
        .transpose()?;
    let cpus = match (&a.affinity, &housekeeping) {
        (Some(v), _) => CpuSet::parse_online("-a/--affinity", v, online)?,
        (None, Some(h)) => online.difference(h),
        (None, None) => online.clone(),
    };
    if cpus.is_empty() {
        return Err(Error::flag(
            "--housekeeping",
            a.common
                .loads
                .housekeeping
                .as_ref()
                .map_or("", |h| h.text.as_str()),
            "leaves no CPU to measure; name the measured CPUs with -a",
        ));
    }
    Ok((cpus, housekeeping))
}

/// The measuring threads' period (`-i`, 1 ms unless given).
fn interval_of(a: &QualifyArgs) -> Result<u64> {
    let interval_ns = time_of("-i/--interval", &a.interval, BareUnit::Micros)?.unwrap_or(1_000_000);
    if !(10_000..=1_000_000_000).contains(&interval_ns) {
        return Err(Error::flag(
            "-i/--interval",
            a.interval.as_deref().unwrap_or(""),
            "between 10 µs and 1 s",
        ));
    }
    Ok(interval_ns)
}

/// The qualification's length (`-D`, required: a new one has no other).
fn duration_of(a: &QualifyArgs) -> Result<u64> {
    let Some(d) = a.duration.as_deref() else {
        return Err(Error::Usage(
            "-D/--duration: a qualification needs its length (-D 24h), or --resume to \
             continue one"
                .into(),
        ));
    };
    let duration_ns =
        parse_time_ns(d, BareUnit::Seconds).map_err(|e| Error::flag("-D/--duration", d, e))?;
    latlab_core::config::bounds::duration("-D/--duration", d, duration_ns)?;
    if duration_ns < 1_000_000_000 {
        return Err(Error::flag("-D/--duration", d, "at least 1 s"));
    }
    Ok(duration_ns)
}

/// The time between checkpoints (`--checkpoint-every`).
fn checkpoint_of(a: &QualifyArgs) -> Result<u64> {
    let checkpoint_ns = time_of("--checkpoint-every", &a.checkpoint_every, BareUnit::Seconds)?
        .unwrap_or(DEFAULT_CHECKPOINT_NS);
    if !(1_000_000_000..=86_400_000_000_000).contains(&checkpoint_ns) {
        return Err(Error::flag(
            "--checkpoint-every",
            a.checkpoint_every.as_deref().unwrap_or(""),
            "between 1 s and 1 day",
        ));
    }
    Ok(checkpoint_ns)
}

/// The `--require`s, one requirement each (a flag may list several).
fn requirements_of(a: &QualifyArgs) -> Result<Vec<String>> {
    let mut requirements = Vec::new();
    for r in &a.require {
        let list = latlab_analysis::gate::requirement::parse_list(r)
            .map_err(|e| Error::flag("--require", r, e))?;
        requirements.extend(list.into_iter().map(|q| q.text));
    }
    Ok(requirements)
}

/// A qualification's `--trace-save` keeps only a trace.dat.
fn check_trace_save(p: &Path) -> Result<()> {
    if !latlab_trace::dat::wanted(p) {
        return Err(Error::flag(
            "--trace-save",
            p.display(),
            "a qualification keeps only a trace.dat (FILE.dat: the last 64 MiB per CPU); a timeline of every spike of a day-long run would grow without bound",
        ));
    }
    Ok(())
}

/// The loads: `--load`s given, none with `--no-loads`, rteval's pair otherwise; each parsed.
fn loads_of(a: &QualifyArgs) -> Result<Vec<String>> {
    let loads = match (a.common.loads.load.is_empty(), a.no_loads) {
        (false, true) => {
            return Err(Error::Usage(
                "--no-loads and --load: give one of them".into(),
            ))
        }
        (false, false) => a.common.loads.load.clone(),
        (true, false) => DEFAULT_LOADS.iter().map(|s| s.to_string()).collect(),
        (true, true) => Vec::new(),
    };
    for l in &loads {
        crate::loadgen::LoadSpec::parse(l)?;
    }
    Ok(loads)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lower(args: &[&str]) -> Result<QualifyConfig> {
        let argv = ["latlab", "qualify"].iter().chain(args);
        let a: QualifyArgs = crate::driver::args::parse_args("qualify", argv).unwrap();
        QualifyConfig::from_args(&a, &CpuSet::from_cpus([0, 1, 2, 3]))
    }

    #[test]
    fn defaults_are_rtevals_and_housekeeping_leaves_the_rest_measured() {
        let c = lower(&["-D", "24h"]).unwrap();
        assert_eq!(c.cpus, [0, 1, 2, 3]);
        assert_eq!((c.prio, c.interval_ns), (95, 1_000_000));
        assert_eq!(c.checkpoint_ns, DEFAULT_CHECKPOINT_NS);
        assert_eq!(c.loads, ["hackbench", "build"]);
        let c = lower(&["-D", "1h", "--housekeeping", "0", "--no-loads"]).unwrap();
        assert_eq!(c.cpus, [1, 2, 3]);
        assert!(c.loads.is_empty());
        let c = lower(&["-D", "10s", "--checkpoint-every", "5s", "--require", "p99<1ms,max<10ms"])
            .unwrap();
        assert_eq!(c.checkpoint_ns, 5_000_000_000);
        assert_eq!(c.requirements, ["p99<1ms", "max<10ms"]);
        assert_eq!(c.derived.requirements.len(), 2);
        let c = lower(&["-D", "10s", "--report", "q.html"]).unwrap();
        assert!(c.report.unwrap().is_absolute());
    }

    #[test]
    fn bad_input_names_its_flag() {
        for (args, flag) in [
            (&["--no-loads"][..], "-D/--duration"),
            (&["-D", "0"], "-D/--duration"),
            (&["-D", "31d"], "-D/--duration"),
            (&["-D", "1h", "--checkpoint-every", "0"], "--checkpoint-every"),
            (&["-D", "1h", "--checkpoint-every", "2d"], "--checkpoint-every"),
            (&["-D", "1h", "--require", "p100<1us"], "--require"),
            (&["-D", "1h", "-p", "100"], "-p/--priority"),
            (&["-D", "1h", "-i", "1us"], "-i/--interval"),
            (&["-D", "1h", "--confidence", "NaN"], "--confidence"),
            (&["-D", "1h", "--housekeeping", "0-3"], "--housekeeping"),
            (&["-D", "1h", "--load", "cpu", "--no-loads"], "--no-loads"),
            (&["-D", "1h", "--load", "nope"], "--load"),
        ] {
            let e = lower(args).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{args:?}: {e}");
            assert!(e.to_string().contains(flag), "{args:?}: {e}");
        }
    }
}
