//! The `--trace` options a measurement flattens into its arguments (clap).

use clap::Args;
use latlab_core::config::{parse_time_ns, BareUnit};
use latlab_core::error::{Error, Result};

/// `--trace`: attribute every spike to IRQs, softirqs and threads from kernel tracepoints.
#[derive(Debug, Args, Clone, Default)]
pub struct TraceArgs {
    /// Trace the measured CPUs (private tracefs instance; needs root) and explain every
    /// latency at or above --trace-threshold: IRQ, softirq and thread interference, the
    /// blocking task and an unattributed rest. Adds `trace` to the JSON and a "why" summary.
    #[arg(long)]
    pub trace: bool,

    /// Latency from which a wake-up is explained: a bare number is µs. Default 100.
    #[arg(
        long = "trace-threshold",
        value_name = "TIME",
        requires = "trace",
        value_parser = latlab_core::config::values::short_time
    )]
    pub trace_threshold: Option<latlab_core::config::values::Time>,

    /// Write each explained spike's events (from 1 ms before the expected wake-up to the
    /// actual one) to FILE as a readable timeline; a FILE ending in `.dat` gets the raw trace
    /// instead (the run's last 64 MiB per CPU), in trace-cmd's trace.dat format.
    #[arg(long = "trace-save", value_name = "FILE", requires = "trace")]
    pub trace_save: Option<std::path::PathBuf>,

    /// When a spike reaches US (a bare number is µs, or with a unit): `trace` (save its window as a trace.dat
    /// beside --trace-save, or as latlab-PID-spike-N.dat), `shell:CMD` (sh -c CMD with
    /// LATLAB_CPU, LATLAB_LATENCY_NS/_US, LATLAB_SERIES, LATLAB_SEQ, LATLAB_PID), `signal:PID:SIG`
    /// or `stop` (end the run). Repeatable; each firing is recorded in the JSON.
    #[arg(long = "on-threshold", value_name = "US:ACTION", requires = "trace")]
    pub on_threshold: Vec<String>,

    /// Most firings of each --on-threshold rule in a run. Default 10.
    #[arg(
        long = "on-threshold-max",
        value_name = "N",
        requires = "trace",
        value_parser = latlab_core::config::values::count
    )]
    pub on_threshold_max: Option<u64>,

    /// Bytes `--trace-save` and `trace` actions may write in one run (k, M, G; default 64M):
    /// windows beyond it are not saved (counted), a trace.dat beyond it keeps its newest pages.
    #[arg(long = "trace-budget", value_name = "SIZE", requires = "trace")]
    pub trace_budget: Option<String>,

    /// A variable `shell:` actions get (repeatable): NAME (latlab's value) or NAME=VALUE. They
    /// get only PATH, HOME, USER, LOGNAME, LANG, LC_ALL, TZ, TERM and the LATLAB_* ones
    /// otherwise (never PGPASSWORD or LATLAB_STORE unless named here). A VALUE given here is
    /// redacted in the stored command line, but `ps` shows it while latlab runs: for a secret,
    /// export it and give its NAME.
    #[arg(
        long = "on-threshold-env",
        value_name = "NAME[=VALUE]",
        requires = "trace"
    )]
    pub on_threshold_env: Vec<String>,

    /// Record the kernel stack of what the CPU ran when each measuring thread was woken
    /// (a stacktrace trigger), named from /proc/kallsyms; attached to every spike, the
    /// worst one's shown (cyclic and monitor).
    #[arg(long = "trace-stacks", requires = "trace")]
    pub trace_stacks: bool,
}

impl TraceArgs {
    /// The validated `--on-threshold` rules (a `signal:` target is checked to exist now), with
    /// the files they and `--trace-save` will write checked before anything is measured.
    pub fn actions(&self) -> Result<Vec<crate::actions::Rule>> {
        let rules = self
            .on_threshold
            .iter()
            .map(|v| {
                crate::actions::parse(v, |x| {
                    parse_time_ns(x, BareUnit::Micros)
                        .map_err(|e| Error::flag("--on-threshold", x, e))
                })
            })
            .collect::<Result<Vec<_>>>()?;
        crate::actions::check_targets(&rules)?;
        if let Some(p) = &self.trace_save {
            // Not a directory, FIFO or device (windows are written beside it, named after it).
            latlab_core::output::check_output(p, false)
                .map_err(|e| Error::flag("--trace-save", p.display(), e))?;
        } else if rules
            .iter()
            .any(|r| r.action == crate::actions::Action::Trace)
        {
            let here = std::path::Path::new("latlab-spike.dat");
            latlab_core::output::check_output(here, false).map_err(|e| {
                Error::flag(
                    "--on-threshold",
                    "trace",
                    format!("windows are saved in the current directory: {e}"),
                )
            })?;
        }
        Ok(rules)
    }

    /// The bounds of the run's actions: `--on-threshold-max`, `--trace-budget`,
    /// `--on-threshold-env`.
    pub fn limits(&self) -> Result<crate::actions::Limits> {
        let budget = match self.trace_budget.as_deref() {
            None => crate::actions::DEFAULT_BUDGET,
            Some(v) => latlab_core::config::parse_bytes(v)
                .filter(|&b| b > 0)
                .ok_or_else(|| {
                    Error::flag(
                        "--trace-budget",
                        v,
                        "expected a size above zero (bytes, or with k, M, G)",
                    )
                })?,
        };
        Ok(crate::actions::Limits {
            max: self.actions_max()?,
            budget,
            env: self
                .on_threshold_env
                .iter()
                .map(|e| crate::actions::parse_env(e))
                .collect::<Result<_>>()?,
        })
    }

    /// The validated `--on-threshold-max`.
    pub fn actions_max(&self) -> Result<u32> {
        match self.on_threshold_max {
            Some(n) => u32::try_from(n)
                .map_err(|_| Error::flag("--on-threshold-max", n, "at most 4294967295")),
            None => Ok(crate::actions::DEFAULT_MAX),
        }
    }

    /// The validated `--trace-threshold` (None without `--trace`).
    pub fn threshold_ns(&self) -> Result<Option<u64>> {
        if !self.trace {
            return Ok(None);
        }
        Ok(Some(
            self.trace_threshold
                .as_ref()
                .map_or(crate::session::DEFAULT_THRESHOLD_NS, |t| t.ns),
        ))
    }
}
