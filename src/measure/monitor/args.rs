//! `latlab monitor`'s raw arguments (clap), lowered in `lower.rs`.

use crate::config::CpuSet;
use crate::driver::args::MeasureArgs;
use crate::error::Result;
use clap::Args;
use std::path::PathBuf;

/// Arguments of `latlab monitor`. Times take units (ns, us, ms, s, m, h); a bare number is µs
/// for the interval and threshold and seconds for durations.
#[derive(Debug, Args)]
pub struct MonitorArgs {
    /// CPUs to measure, one thread each (default: all online CPUs).
    #[arg(short = 'a', long = "affinity", value_name = "CPUSET")]
    pub affinity: Option<String>,
    /// Period of the measuring threads. Default 1000 µs.
    #[arg(short = 'i', long = "interval", value_name = "TIME")]
    pub interval: Option<String>,
    /// SCHED_FIFO priority of the measuring threads (0: SCHED_OTHER). Default 80.
    #[arg(
        short = 'p',
        long = "priority",
        value_name = "PRIO",
        allow_negative_numbers = true
    )]
    pub priority: Option<i32>,
    /// Address of the /metrics and /status endpoint. Default 127.0.0.1:9477 (loopback only);
    /// listening wider must be asked for, e.g. 0.0.0.0:9477. Port 0 picks a free port (printed).
    #[arg(long, value_name = "ADDR:PORT")]
    pub listen: Option<String>,
    /// Store a snapshot run (kind monitor) this often. Default 5m.
    #[arg(long = "snapshot-every", value_name = "TIME")]
    pub snapshot_every: Option<String>,
    /// Count wake-ups later than this (latlab_threshold_exceeded_total).
    #[arg(long, value_name = "TIME")]
    pub threshold: Option<String>,
    /// TLS and basic authentication for the endpoint: a YAML file in the Prometheus
    /// exporter-toolkit format (tls_server_config: cert_file, key_file; basic_auth_users: bcrypt
    /// hashes), as node_exporter reads it.
    #[arg(long = "web-config", value_name = "FILE")]
    pub web_config: Option<PathBuf>,
    /// Length of the fixed windows the window maxima and counts are kept over, aligned to the
    /// wall clock (every scraper reads the same value for the same window). Default 10s.
    #[arg(long, value_name = "TIME")]
    pub window: Option<String>,
    /// Name of this monitor, stored as tag monitor=ID (default: the host name).
    #[arg(long = "monitor-id", value_name = "ID")]
    pub monitor_id: Option<String>,
    /// Stop after this long (default: until SIGTERM or Ctrl-C).
    #[arg(short = 'D', long = "duration", value_name = "TIME")]
    pub duration: Option<String>,
    /// Do not lock memory.
    #[arg(long = "no-mlock")]
    pub no_mlock: bool,
    /// Write the last snapshot as JSON to FILE, or `-` for stdout.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,

    /// Kernel tracing (`--trace`): late wake-ups by cause and culprit group on the endpoint
    /// and in every snapshot.
    #[command(flatten)]
    pub trace: crate::trace::args::TraceArgs,
    /// Culprit groups with a series of their own per CPU in latlab_culprit_late_seconds_total
    /// (the first that cause late time keep theirs; later ones are summed as group="other").
    /// Default 10.
    #[arg(long = "trace-culprits", value_name = "N", requires = "trace")]
    pub trace_culprits: Option<usize>,

    /// Where snapshots are kept, extra tags (host= and monitor= are always added), loads.
    #[command(flatten)]
    pub common: MeasureArgs,
}

impl crate::driver::Lowering for MonitorArgs {
    type Config = super::MonitorConfig;

    fn common(&self) -> &MeasureArgs {
        &self.common
    }

    fn json(&self) -> Option<&std::path::Path> {
        self.json.as_deref()
    }

    fn lower(&self, online: &CpuSet) -> Result<Self::Config> {
        let host = crate::result::Environment::hostname();
        super::MonitorConfig::from_args(self, online, &host)
    }

    fn run(self, online: &CpuSet, command_line: Vec<String>) -> Result<()> {
        let config = self.lower(online)?;
        let mut common = self.common.to_common(self.json.as_deref())?;
        common.tags = config.tags.clone();
        crate::driver::execute(config, &common, command_line)
    }
}
