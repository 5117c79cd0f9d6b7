//! `latlab gate`'s arguments, as the command line parses them (a row of
//! [`crate::COMMANDS`] adds them to `latlab gate`).

use clap::Args;
use std::path::PathBuf;

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

