//! `latlab report`'s arguments, as the command line parses them (a row of
//! [`crate::COMMANDS`] adds them to `latlab report`).

use clap::Args;
use std::path::PathBuf;

/// Arguments of `latlab report`.
#[derive(Debug, Args)]
#[command(after_help = REPORT_AFTER_HELP)]
pub struct ReportArgs {
    /// Runs to show: run:ID (or a bare id), FILE.json, exp:ID, exp:ID/K=V, tag:K=V[,K=V];
    /// commas or spaces. Several are also compared, the first being the baseline; a selector
    /// naming several runs (exp:ID/K=V, tag:...) is one group. `exp:ID` alone = --experiment.
    /// With --fleet: only tag:K=V[,K=V] filters.
    #[arg(value_name = "RUN")]
    pub inputs: Vec<std::ffi::OsString>,
    /// Every run stored under this experiment id (tag experiment=ID, as `latlab run` stores
    /// them), grouped by their other tags and compared.
    #[arg(long, value_name = "ID", conflicts_with = "fleet")]
    pub experiment: Option<String>,
    /// One page for a fleet of monitors sharing a store: per host, the max and p99 of every
    /// snapshot over time, the hosts ranked by their worst snapshot, and the hosts whose last
    /// day differs from their previous week.
    #[arg(long)]
    pub fleet: bool,
    /// With --fleet: read the snapshots started since this long ago (7d, 12h) or this time
    /// (RFC 3339, UTC). Default 8d: the last day and the week before it.
    #[arg(
        long,
        value_name = "TIME",
        requires = "fleet",
        allow_hyphen_values = true
    )]
    pub since: Option<String>,
    /// The HTML file to write.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: PathBuf,
    /// The results store stored runs are read from.
    #[arg(long)]
    pub store: Option<String>,
    /// Keep runs whose ground moved while they measured (the clocksource, a plan's setting or
    /// another real-time task changed: `Run::ground`); a selector naming several runs leaves
    /// them out by default and says which.
    #[arg(long = "include-disturbed")]
    pub include_disturbed: bool,
    /// `linear`: also draw histograms in linear 1 µs bins with log y (OSADL's look), beside
    /// the log-x ones.
    #[arg(long, value_enum, default_value = "log")]
    pub hist: crate::report::HistMode,
}

const REPORT_AFTER_HELP: &str = "\
Examples:
  latlab report run.json -o report.html
  latlab report --experiment EXP -o exp.html
  latlab report --fleet --store postgres://latlab@db/latlab -o fleet.html
  latlab report --fleet --since 30d tag:site=lab -o fleet.html

--fleet reads the snapshots (runs of kind monitor) of every monitor in the store. A host is its
host tag; a host running several monitors (--monitor-id) gets a row per monitor. Each host's
last 24 h of snapshots are compared with the 7 days before them, the snapshot as the unit of
replication (Welch's t on each snapshot's p50, p99, p99.9, max and mean; Holm within a host,
Bonferroni across hosts); fewer than 5 snapshots on a side: cannot decide.";

