//! Raw arguments of the commands that manage stored runs and plans: runs, run.

use clap::{Args, Subcommand, ValueEnum};
use latlab_core::config::DisplayUnit;
use std::path::PathBuf;

/// `latlab runs` subcommands.
#[derive(Debug, Subcommand)]
pub enum RunsCmd {
    /// List stored runs, newest first.
    List {
        /// Only this kind: a measurement's (the table of measurements), or an imported tool's.
        #[arg(long, value_parser = clap::builder::PossibleValuesParser::new(stored_kinds()))]
        kind: Option<String>,
        /// Only runs with this tag (repeatable).
        #[arg(long = "tag", value_name = "KEY=VALUE")]
        tag: Vec<String>,
        /// Only runs measured on this host.
        #[arg(long)]
        host: Option<String>,
        /// Only runs started since this long ago (7d, 12h) or this time (RFC 3339, UTC).
        #[arg(long, value_name = "TIME", allow_hyphen_values = true)]
        since: Option<String>,
        /// The store.
        #[arg(long)]
        store: Option<String>,
        /// One line per experiment instead of per run: its id, first start, plan, kind, run
        /// count and levels with their runs (the other filters choose the runs counted).
        #[arg(long)]
        experiments: bool,
    },
    /// Print a stored run: the table its measurement printed (a per-series summary for other
    /// kinds), or with --json its whole JSON result with its tags.
    Show {
        /// Run id.
        id: String,
        /// Print the raw run and its tags as JSON instead of the summary.
        #[arg(long)]
        json: bool,
        /// Unit for latencies in the summary.
        #[arg(long, value_enum, default_value_t = DisplayUnit::Us)]
        unit: DisplayUnit,
        /// Explain one spike of the run: its number (`seq`), as a monitor's exemplar names it
        /// (with a monitor snapshot, the next snapshots are searched too).
        #[arg(long, value_name = "SEQ", conflicts_with = "json")]
        spike: Option<u64>,
        /// With --spike: only the spike on this CPU (a number is per CPU).
        #[arg(long, requires = "spike")]
        cpu: Option<usize>,
        /// The store.
        #[arg(long)]
        store: Option<String>,
    },
    /// Write runs as a bundle (JSON) to stdout, for `runs import` elsewhere.
    Export {
        /// Runs: run:ID (or a bare id), exp:ID, exp:ID/K=V, tag:K=V[,K=V]; commas or spaces.
        #[arg(required_unless_present = "all")]
        ids: Vec<String>,
        /// Every run in the store (not with a run list: one or the other).
        #[arg(long, conflicts_with = "ids")]
        all: bool,
        /// The store.
        #[arg(long)]
        store: Option<String>,
    },
    /// Import a bundle; runs already present are skipped (idempotent). With --from, import
    /// another tool's output as new runs tagged tool=NAME.
    Import {
        /// The bundle file (`-` for stdin), or the tool's output with --from.
        file: PathBuf,
        /// The store.
        #[arg(long)]
        store: Option<String>,
        /// Read FILE as this tool's output: cyclictest/oslat --json, rtla timerlat/osnoise hist
        /// text, hackbench's text (one run per Time: line), iperf3 -J.
        #[arg(long, value_enum, value_name = "TOOL")]
        from: Option<latlab_analysis::import::Tool>,
        /// Tag the imported runs (repeatable), besides tool=NAME.
        #[arg(long = "tag", value_name = "KEY=VALUE", requires = "from")]
        tag: Vec<String>,
        /// More files of the same tool (with --from): imported in order, each reported.
        #[arg(value_name = "FILE", requires = "from")]
        more: Vec<PathBuf>,
        /// Most runs one import may create (hackbench makes one per `Time:` line).
        #[arg(long, value_name = "N", default_value_t = latlab_analysis::import::DEFAULT_MAX_RUNS, requires = "from", allow_hyphen_values = true)]
        max_runs: u64,
    },
    /// List the stored runs that do not read back as latlab runs (stored by an older latlab:
    /// selectors leave them out with a warning); exit 1 when there are any.
    Check {
        /// The store.
        #[arg(long)]
        store: Option<String>,
    },
    /// Delete a stored run.
    Delete {
        /// Run id.
        id: String,
        /// The store.
        #[arg(long)]
        store: Option<String>,
    },
}

/// Arguments of `latlab bisect`.
#[derive(Debug, Args)]
pub struct BisectArgs {
    /// A plan whose one factor is a boot factor (boot = true) listing the kernels in order:
    /// the first known good, the last known bad.
    pub plan: PathBuf,
    /// The results store every boot's run goes to (one experiment).
    #[arg(long)]
    pub store: Option<String>,
    /// Override a plan key without editing the file (repeatable), as `latlab run --set`.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// Boots of one kernel before its step is skipped as undecided (2 to 100).
    #[arg(long, default_value_t = 6, value_name = "N")]
    pub max_boots: u32,
    /// Confidence of each decision, in percent.
    #[arg(long, default_value_t = 95.0, value_name = "PCT")]
    pub confidence: f64,
    /// Decide this one kernel (an image's path, rt, generic or a linux-image-* package)
    /// against the plan's first (good) and last (bad) kernels, with `git bisect run`'s exit
    /// codes: 0 good, 1 bad, 125 undecided or cannot boot, 128 bad usage.
    #[arg(long, value_name = "KERNEL")]
    pub candidate: Option<String>,
    /// The candidate's kernel command line.
    #[arg(long, default_value = "", value_name = "ARGS", requires = "candidate")]
    pub cmdline: String,
}

/// Arguments of `latlab run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The plan file (see examples/).
    pub plan: PathBuf,
    /// The results store the runs go to.
    #[arg(long)]
    pub store: Option<String>,
    /// Check the plan as the run would and print the runs it would make (shell-quoted) and
    /// the time it will take, changing nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Override a plan key without editing the file (repeatable): repeats=3, duration=2s,
    /// order=interleaved, seed=7, metric=max, or a dotted key such as design.repeats=3.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// When another latlab holds the machine's settings lock (a plan, `clocks
    /// --clocksource`, `cyclic --hrtick`, `restore`, whatever its user), wait for it instead of
    /// refusing (exit 3 naming the holder). Ctrl-C ends the wait.
    #[arg(long)]
    pub wait: bool,
    /// A run whose ground moved (the clocksource, a plan's setting or RT throttling changed, a
    /// load ended early, or latlab was stopped while it measured; see docs/promises.md):
    /// rerun it (left out of the analysis, made again up to twice), keep it (marked disturbed)
    /// or stop the plan.
    #[arg(long, value_enum, default_value = "rerun", value_name = "WHAT")]
    pub on_disturbed: latlab_lab::experiment::runner::OnDisturbed,
    /// A plan that boots its kernels by kexec (`[kexec]`) is continued after each boot, from
    /// its state on disk: continue the one under way, else start it (what
    /// contrib/latlab-kexec.service runs at boot).
    #[arg(long)]
    pub resume_or_start: bool,
}

/// Every kind a stored run can have: the measurements' (from the table), then the tools runs
/// are imported from.
pub fn stored_kinds() -> Vec<&'static str> {
    let mut v = crate::table::kinds();
    v.extend(
        latlab_analysis::import::Tool::value_variants()
            .iter()
            .map(|t| t.name()),
    );
    v
}
