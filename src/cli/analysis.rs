//! Raw arguments of the commands that read results: samples, ministat, compare, report, gate,
//! plot.

use clap::Args;
use latlab_core::config::DisplayUnit;
use std::path::PathBuf;

/// Arguments of `latlab samples`.
#[derive(Debug, Args)]
pub struct SamplesArgs {
    /// The sample log written by `--samples`.
    pub file: PathBuf,
    /// Print every sample as CSV (series,cpu,loop,latency_ns) instead of a summary.
    #[arg(long)]
    pub csv: bool,
    /// Unit for the summary.
    #[arg(long, value_enum, default_value_t = DisplayUnit::Us)]
    pub unit: DisplayUnit,
}

/// Arguments of `latlab ministat`: passed through unparsed to ministat's own option rules.
#[derive(Debug, Args)]
pub struct MinistatArgs {
    /// ministat's flags and files (file names need not be UTF-8).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
    pub args: Vec<std::ffi::OsString>,
}

/// Arguments of `latlab compare` (tail-aware mode; `--ministat` switches to ministat's exact
/// command line and output).
#[derive(Debug, Args)]
#[command(after_help = COMPARE_AFTER_HELP)]
pub struct CompareArgs {
    /// Data sets, the first is the baseline: [LABEL=]ITEM[,ITEM...] (commas or spaces). An ITEM
    /// is a value file (one number per line, `#` comments; `-` for stdin), a latlab JSON
    /// result, or stored runs: run:ID, exp:ID, exp:ID/K=V (one level), tag:K=V[,K=V].
    #[arg(value_name = "SET", required_unless_present = "experiment")]
    pub sets: Vec<std::ffi::OsString>,
    /// Compare every level of this experiment with its baseline, per metric over the runs
    /// (`compare exp:ID` alone does the same).
    #[arg(long, value_name = "ID")]
    pub experiment: Option<String>,
    /// For JSON results: the whole latency distribution, or one figure per run.
    #[arg(long, value_enum, default_value_t = latlab_analysis::compare::inputs::Metric::Latency)]
    pub metric: latlab_analysis::compare::inputs::Metric,
    /// For JSON results: use only this series (default: all series merged).
    #[arg(long, value_name = "NAME")]
    pub series: Option<String>,
    /// Unit JSON latencies are shown in.
    #[arg(long, value_enum, default_value_t = DisplayUnit::Us)]
    pub unit: DisplayUnit,
    /// Column of value files to read (1-based).
    #[arg(short = 'C', long, default_value_t = 1)]
    pub column: usize,
    /// Delimiter characters of value files.
    #[arg(short = 'd', long, default_value = " \t")]
    pub delimiter: String,
    /// Confidence level in per cent.
    #[arg(short = 'c', long, default_value_t = 95.0)]
    pub confidence: f64,
    /// Bootstrap replicates for quantile intervals.
    #[arg(long, default_value_t = 10_000)]
    pub bootstrap: usize,
    /// Seed of the bootstrap generator (printed, so results are reproducible).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Larger values are better (throughput); by default smaller is better (latency).
    #[arg(long)]
    pub higher_is_better: bool,
    /// Output format.
    #[arg(long, value_enum, default_value_t = latlab_analysis::compare::render::Format::Table)]
    pub format: latlab_analysis::compare::render::Format,
    /// Switch to ministat's exact command line and output (`latlab compare --ministat a b`).
    #[arg(long)]
    pub ministat: bool,
    /// Store to read `run:ID` sets from.
    #[arg(long)]
    pub store: Option<String>,
    /// Keep runs whose ground moved while they measured (the clocksource, a plan's setting or
    /// another real-time task changed: `Run::ground`); a selector naming several runs leaves
    /// them out by default and says which.
    #[arg(long = "include-disturbed")]
    pub include_disturbed: bool,
    /// With one latlab run on a side, test its samples as if they were independent (they are
    /// not: spikes come in bursts and run-to-run variation is invisible); without it, one run
    /// a side shows its figures but proves no difference.
    #[arg(long)]
    pub assume_independent_samples: bool,
    /// Also estimate each set's latency exceeded with probability P per sample, beyond the
    /// data where P is rarer than the data show (`latlab tail`'s fit, with its interval or its
    /// refusal).
    #[arg(long, value_name = "P", allow_hyphen_values = true)]
    pub tail_at: Option<f64>,
}

const COMPARE_AFTER_HELP: &str = "\
Per set: N, min, p50, p90, p99, p99.9, max, mean, stddev. Against the baseline: differences of
p50, p99 and p99.9 with percentile-bootstrap intervals (each set resampled exactly through its
order statistics, so a million samples cost no more than ten), Welch's t for the mean, and the
Mann-Whitney U test for the whole distribution with P(set > baseline) (exact with ties up to 20
a side). With several sets, intervals are Bonferroni-split and p-values Holm-adjusted. A
quantile is compared (and shown) only when every set has at least 10/(1-q) samples (p99.9:
10000). The change in % has an interval for the ratio set / baseline (the bootstrap replicates'
ratio; Fieller's for the mean), so it never passes -100 %.

The run is the unit of replication. Sets of latlab results with at least two runs each are
compared through per-run figures: each run's p50, p99, p99.9, max and mean, one row per metric,
on the ratio scale: Welch's t on the logarithms of the per-run figures (run-to-run variation of
latency figures is a factor and their logs are near symmetric; the interval of the ratio of
geometric means never passes -100 %; 5 runs a side are too few for a bootstrap over runs),
Holm across metrics x sets with each interval at the level of the Holm step that decided it.
Baseline and value are the geometric means of the per-run figures, the interval in the unit is
the ratio's times the baseline. `--experiment EXP` compares every level of an experiment with
its baseline. Text and Markdown print baseline, value and difference at one precision (they add
up as shown) and end with a sentence per set to paste: the conditions (measurement, runs x
duration, load, kernel), then per metric before -> after, the change with its interval, the
test and the adjusted p, or what would decide it.
With one run on a side, run-to-run variation is unknown and no difference is proven, unless
--assume-independent-samples tests the samples themselves (optimistic: samples are bursty).
Value files are taken as one replicate per value, as ministat does.

Examples:
  latlab compare before.txt after.txt
  latlab compare base=run1.json,run2.json new=run3.json,run4.json --metric p99
  latlab compare --experiment EXP --format markdown
  latlab compare exp:EXP/clocksource=tsc exp:EXP/clocksource=hpet
  latlab compare --ministat -c 99 preempt preempt.tsc";

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
    pub hist: latlab_analysis::report::HistMode,
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

/// Arguments of `latlab gate`.
#[derive(Debug, Args)]
#[command(after_help = GATE_AFTER_HELP)]
pub struct GateArgs {
    /// The requirement: pQ<TIME (p99.9<100us), max<TIME (max<10ms) or rate(>TIME)<RATE
    /// (rate(>200us)<1e-6); several separated by commas (p99.9<100us,max<10ms).
    #[arg(value_name = "REQUIREMENT", required_unless_present = "plan_for")]
    pub requirement: Option<String>,
    /// Runs judged together: FILE.json, run:ID (or a bare id), exp:ID, exp:ID/K=V,
    /// tag:K=V[,K=V]; commas or spaces.
    #[arg(value_name = "RUN")]
    pub inputs: Vec<PathBuf>,
    /// Confidence of each one-sided bound (a fraction).
    #[arg(long, default_value_t = 0.95)]
    pub confidence: f64,
    /// Use only this series of each run (default: all series).
    #[arg(long, value_name = "NAME")]
    pub series: Option<String>,
    /// Accept a verdict from a single run, treating its samples as independent.
    #[arg(long)]
    pub assume_independent_samples: bool,
    /// Print how many samples (how long at --rate) a run needs to decide this requirement.
    #[arg(long, value_name = "REQUIREMENT")]
    pub plan_for: Option<String>,
    /// Samples per second, for --plan-for.
    #[arg(long, value_name = "HZ")]
    pub rate: Option<f64>,
    /// Print the judgement as JSON.
    #[arg(long)]
    pub json: bool,
    /// Also write the verdicts as JUnit XML (one testcase per requirement: violated is a
    /// failure, undecided skipped), for GitLab's and Jenkins' test reports.
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Exit for `git bisect run`: 0 met, 1 violated, 125 undecided (skip this commit); bad
    /// usage 128 (stops the bisection), no privilege or kernel support 125.
    #[arg(long)]
    pub bisect: bool,
    /// Store to read run ids from.
    #[arg(long)]
    pub store: Option<String>,
    /// Keep runs whose ground moved while they measured (the clocksource, a plan's setting or
    /// another real-time task changed: `Run::ground`); a selector naming several runs leaves
    /// them out by default and says which.
    #[arg(long = "include-disturbed")]
    pub include_disturbed: bool,
    /// When the counts cannot decide (the rate lies beyond the data), decide from the fitted
    /// tail (`latlab tail`) if the fit passes its checks; else undecided, saying why.
    #[arg(long)]
    pub extrapolate: bool,
}

const GATE_AFTER_HELP: &str = "\
max<10ms is met when every run's exact maximum is below 10 ms and violated when any run's is
at or above it (one run: shown, but undecided unless --assume-independent-samples). Runs
imported without a histogram (pmqtest, cyclictest without -h) hold only min, mean and max:
max<TIME judges them, pQ and rate requirements cannot.

Each other requirement is a rate: p99.9<100us means at most 0.1% of samples at or above 100 us.
Events are counted in the runs' HDR histograms (a bucket straddling the threshold counts as
an event for the upper bound only; the exact maximum clears buckets below it). The pooled rate
gets exact one-sided Clopper-Pearson bounds (zero events: about 3/n at 95%, the rule of three);
with two or more runs, a t bound over the runs' own rates widens them when runs disagree.
met: upper bound < limit. violated: lower bound > limit. undecided otherwise, with how many
more samples (and seconds at the runs' rate) would decide.

The run is the unit of replication: on one run the outcome is printed but the verdict is
undecided (exit 4) unless --assume-independent-samples.

Several requirements (p99.9<100us,max<10ms) are judged on the same runs: exit 1 when any is
violated, else 4 when any is undecided. --junit FILE writes one JUnit testcase per
requirement; --bisect maps met/violated/undecided to 0/1/125 for `git bisect run`.

--extrapolate: an undecided requirement is judged on the runs' fitted tail (peaks over
threshold, generalized Pareto; see latlab tail --help): met when the fit's upper bound of the
rate is below the limit, violated when its lower bound is above (profile-likelihood bounds,
one-sided at --confidence each). A tail that cannot be modelled leaves it undecided, with the
reason. The single-run rule applies to the fit too.

Exit codes: 0 met, 1 violated, 2 bad usage, 3 environment, 4 undecided.

Examples:
  latlab gate 'p99.9<100us' r1.json r2.json r3.json
  latlab gate 'p99.9<100us,max<10ms' exp:EXP/kernel=new --junit gate.xml
  latlab gate --bisect 'max<1ms' a.json b.json c.json   # the last step of a bisect script
  latlab gate 'rate(>200us)<1e-6' run:ab12 run:cd34 --confidence 0.99
  latlab gate --plan-for 'p99.99<50us' --rate 1000";

/// Arguments of `latlab plot`.
#[derive(Debug, Args)]
pub struct PlotArgs {
    /// The run: a stored id, run:ID, or a result file (FILE.json).
    #[arg(value_name = "RUN")]
    pub input: String,
    /// The chart.
    #[arg(long, value_enum, default_value = "hist")]
    pub kind: latlab_analysis::report::PlotKind,
    /// The SVG file to write.
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
    /// A PNG file to write (the same chart at twice its size).
    #[arg(long, value_name = "FILE")]
    pub png: Option<PathBuf>,
    /// The results store a stored run is read from.
    #[arg(long)]
    pub store: Option<String>,
}
