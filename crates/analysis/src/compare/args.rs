//! `latlab compare`'s arguments, as the command line parses them (a row of
//! [`crate::COMMANDS`] adds them to `latlab compare`).

use clap::Args;
use latlab_core::config::DisplayUnit;

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
    #[arg(long, value_enum, default_value_t = crate::compare::inputs::Metric::Latency)]
    pub metric: crate::compare::inputs::Metric,
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
    #[arg(long, value_enum, default_value_t = crate::compare::render::Format::Table)]
    pub format: crate::compare::render::Format,
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

