//! `latlab qualify`'s raw arguments (clap), lowered in `lower.rs`; `--resume` reads the
//! qualification's own settings from the store instead (`resume.rs`).

use latlab_core::config::CpuSet;
use crate::driver::args::MeasureArgs;
use latlab_core::error::Result;
use latlab_trace::args::TraceArgs;
use clap::Args;
use std::path::PathBuf;

/// Arguments of `latlab qualify`. Times take units (ns, us, ms, s, m, h, d); a bare number is
/// µs for the interval and seconds for durations.
#[derive(Debug, Args)]
#[command(after_help = QUALIFY_AFTER_HELP)]
pub(crate) struct QualifyArgs {
    /// CPUs to measure, one cyclic thread each. Default: the online CPUs not in
    /// --housekeeping (all of them without it).
    #[arg(short = 'a', long = "affinity", value_name = "CPUSET")]
    pub(crate) affinity: Option<String>,
    /// Period of the measuring threads. Default 1000 µs.
    #[arg(short = 'i', long = "interval", value_name = "TIME")]
    pub(crate) interval: Option<String>,
    /// SCHED_FIFO priority of the measuring threads (0: SCHED_OTHER). Default 95 (rteval's).
    #[arg(
        short = 'p',
        long = "priority",
        value_name = "PRIO",
        allow_negative_numbers = true
    )]
    pub(crate) priority: Option<i32>,
    /// The probe: cyclic (latlab's threads, one per CPU) or timerlat (the kernel's timerlat
    /// tracer, as rteval 3.10 measures; needs root and CONFIG_TIMERLAT_TRACER; its thread
    /// latency is what is counted).
    #[arg(long, value_enum, default_value_t = crate::measure::timerlat::probe::Engine::Cyclic)]
    pub(crate) engine: crate::measure::timerlat::probe::Engine,
    /// How long to measure in all (segments added up): 30m, 12h, 24h, 3d. Needed for a new
    /// qualification.
    #[arg(short = 'D', long = "duration", value_name = "TIME")]
    pub(crate) duration: Option<String>,
    /// Store a checkpoint (the interval's histograms, exact max, counts, explained spikes and
    /// load statistics) this often: a kill loses at most this much. Default 10m, at least 1s.
    #[arg(long = "checkpoint-every", value_name = "TIME")]
    pub(crate) checkpoint_every: Option<String>,
    /// A requirement in gate's language, judged at the end on the checkpoint intervals as
    /// replicates: p99.99<100us, max<200us, rate(>50us)<1e-6. Repeatable.
    #[arg(long = "require", value_name = "REQ")]
    pub(crate) require: Vec<String>,
    /// Confidence of the verdicts. Default 0.95.
    #[arg(long, value_name = "LEVEL")]
    pub(crate) confidence: Option<f64>,
    /// Write the verdicts as JUnit XML (one testcase per requirement).
    #[arg(long, value_name = "FILE")]
    pub(crate) junit: Option<PathBuf>,
    /// Write the qualification report (self-contained HTML) to FILE.
    #[arg(long, value_name = "FILE")]
    pub(crate) report: Option<PathBuf>,
    /// Continue a qualification that was killed or interrupted (ID: its id, or any of its
    /// runs; without ID the newest unfinished one of this host) with its own settings, loads
    /// and id, for the rest of its duration.
    #[arg(long, value_name = "ID", num_args = 0..=1, default_missing_value = "")]
    pub(crate) resume: Option<String>,
    /// Resume the newest unfinished qualification of this host if there is one, else start a
    /// new one with these settings (for a service that is started again after a reboot).
    #[arg(long = "resume-or-start", conflicts_with = "resume")]
    pub(crate) resume_or_start: bool,
    /// Run no load (by default, without --load: hackbench and the build load, as rteval).
    #[arg(long = "no-loads")]
    pub(crate) no_loads: bool,
    /// Do not lock memory.
    #[arg(long = "no-mlock")]
    pub(crate) no_mlock: bool,

    /// Kernel tracing (`--trace`): spikes explained in every checkpoint.
    #[command(flatten)]
    pub(crate) trace: TraceArgs,

    /// Loads, housekeeping CPUs, the store and tags.
    #[command(flatten)]
    pub(crate) common: MeasureArgs,
}

const QUALIFY_AFTER_HELP: &str = "\
What it does: cyclic threads on the measured CPUs (one each, pinned, SCHED_FIFO), loads on the
housekeeping CPUs (default: hackbench and a parallel C build, as rteval), for -D in all. Every
--checkpoint-every the interval is stored as a run of its own (kind qualify, tagged
experiment=ID): a SIGKILL, an OOM kill or a power cut loses at most one interval, and
`latlab qualify --resume` continues it (after a reboot too). At the end the final result spans
every segment and records the gaps; each --require is judged with gate's semantics on the
intervals (exit 0 met, 1 violated, 4 undecided), written to --junit and --report.

  latlab qualify -D 24h --require 'p99.99<100us' --report q.html
  latlab qualify --resume                      # after a kill or a reboot
  latlab compare QUALIFICATION_A QUALIFICATION_B   # the intervals are the runs";

impl crate::driver::Lowering for QualifyArgs {
    type Config = super::QualifyConfig;

    fn common(&self) -> &MeasureArgs {
        &self.common
    }

    fn lower(&self, online: &CpuSet) -> Result<Self::Config> {
        super::QualifyConfig::from_args(self, online)
    }

    fn check_in_plan(&self, _config: &Self::Config) -> std::result::Result<(), String> {
        Err("a qualification is a run of its own (latlab qualify), not a plan's".into())
    }

    fn run(self, online: &CpuSet, command_line: Vec<String>) -> Result<()> {
        super::start(self, online, command_line)
    }
}
