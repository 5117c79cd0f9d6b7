//! `latlab monitor`'s raw arguments (clap), lowered in `lower.rs`.

use latlab_core::config::values;
use latlab_core::config::CpuSet;
use crate::driver::args::groups::{
    more_help, Affinity, DurationArg, IntervalArg, NoMlock, PriorityArg, ThresholdArg,
};
use crate::driver::args::MeasureArgs;
use latlab_core::error::Result;
use clap::Args;
use std::path::PathBuf;

/// Arguments of `latlab monitor`. Times take units (ns, us, ms, s, m, h); a bare number is µs
/// for the interval and threshold and seconds for the duration, snapshot period and window.
#[derive(Debug, Args)]
#[command(mut_arg("affinity", |a| more_help(a, "One thread each. Default: every online CPU.")))]
#[command(mut_arg("interval", |a| more_help(a, "At least 10us. Default 1000.")))]
#[command(mut_arg("priority", |a| more_help(a, "SCHED_FIFO priority of the measuring threads \
    (0: SCHED_OTHER).").default_value("80")))]
#[command(mut_arg("threshold", |a| more_help(a, "Wake-ups later than this are counted \
    (latlab_threshold_exceeded_total).")))]
#[command(mut_arg("duration", |a| more_help(a, "Default: until SIGTERM or Ctrl-C.")))]
#[command(mut_arg("quiet", |a| more_help(a, "The monitor does not say where it serves (it \
    still does when --listen asks for port 0).")))]
#[command(mut_arg("json", |a| more_help(a, "Here: the last snapshot.")))]
pub(crate) struct MonitorArgs {
    /// `-a/--affinity`.
    #[command(flatten)]
    pub(crate) affinity: Affinity,
    /// `-i/--interval`.
    #[command(flatten)]
    pub(crate) interval: IntervalArg,
    /// `-p/--priority`.
    #[command(flatten)]
    pub(crate) priority: PriorityArg,
    /// The probe: cyclic (latlab's threads, one per CPU) or timerlat (the kernel's timerlat
    /// tracer, as rteval 3.10 measures; needs root and CONFIG_TIMERLAT_TRACER; its thread
    /// latency is what is counted).
    #[arg(long, value_enum, default_value_t = crate::measure::timerlat::probe::Engine::Cyclic)]
    pub(crate) engine: crate::measure::timerlat::probe::Engine,
    /// Address of the /metrics and /status endpoint. Default 127.0.0.1:9477 (loopback only);
    /// listening wider must be asked for, e.g. 0.0.0.0:9477. Port 0 picks a free port (printed).
    #[arg(long, value_name = "ADDR:PORT")]
    pub(crate) listen: Option<String>,
    /// Store a snapshot run (kind monitor) this often: a bare number is seconds, at least 1s.
    #[arg(long = "snapshot-every", value_name = "TIME", default_value = "5m", value_parser = values::run_length)]
    pub(crate) snapshot_every: u64,
    /// `--threshold`.
    #[command(flatten)]
    pub(crate) threshold: ThresholdArg,
    /// TLS and basic authentication for the endpoint: a YAML file in the Prometheus
    /// exporter-toolkit format (tls_server_config: cert_file, key_file; basic_auth_users: bcrypt
    /// hashes), as node_exporter reads it.
    #[arg(long = "web-config", value_name = "FILE")]
    pub(crate) web_config: Option<PathBuf>,
    /// Length of the fixed windows the window maxima and counts are kept over, aligned to the
    /// wall clock (every scraper reads the same value for the same window): a bare number is
    /// seconds, 1s to 1h.
    #[arg(long, value_name = "TIME", default_value = "10s", value_parser = values::run_length)]
    pub(crate) window: u64,
    /// Name of this monitor, stored as tag monitor=ID; without it, the host name.
    #[arg(long = "monitor-id", value_name = "ID")]
    pub(crate) monitor_id: Option<String>,
    /// `-D/--duration`.
    #[command(flatten)]
    pub(crate) duration: DurationArg,
    /// `--no-mlock`.
    #[command(flatten)]
    pub(crate) no_mlock: NoMlock,

    /// Kernel tracing (`--trace`): late wake-ups by cause and culprit group on the endpoint
    /// and in every snapshot.
    #[command(flatten)]
    pub trace: latlab_trace::args::TraceArgs,
    /// Culprit groups with a series of their own per CPU in latlab_culprit_late_seconds_total
    /// (the first that cause late time keep theirs; later ones are summed as group="other"),
    /// at most 1000. Default 10.
    #[arg(
        long = "trace-culprits",
        value_name = "N",
        requires = "trace",
        value_parser = values::count
    )]
    pub(crate) trace_culprits: Option<u64>,

    /// Output (the last snapshot), where snapshots are kept, extra tags (host= and monitor=
    /// are always added), loads.
    #[command(flatten)]
    pub(crate) common: MeasureArgs,
}

impl crate::driver::Lowering for MonitorArgs {
    type Config = super::MonitorConfig;

    fn common(&self) -> &MeasureArgs {
        &self.common
    }

    fn lower(&self, online: &CpuSet) -> Result<Self::Config> {
        let host = latlab_core::result::Environment::hostname();
        super::MonitorConfig::from_args(self, online, &host)
    }

    fn run(self, online: &CpuSet, command_line: Vec<String>) -> Result<()> {
        let config = self.lower(online)?;
        let mut common = self.common_options()?;
        common.tags = config.tags.clone();
        crate::driver::execute(config, &common, command_line)
    }
}
