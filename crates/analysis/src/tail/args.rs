//! `latlab tail`'s arguments, as the command line parses them (a row of
//! [`crate::COMMANDS`] adds them to `latlab tail`).

use clap::Args;
use latlab_core::config::DisplayUnit;

/// Arguments of `latlab tail`.
#[derive(Debug, Args)]
#[command(after_help = TAIL_AFTER_HELP)]
pub struct TailArgs {
    /// The data, pooled: run:ID, FILE.json, exp:ID, exp:ID/K=V, tag:K=V[,K=V], a raw sample
    /// log (--samples), or value files (one number per line, `-` for stdin); commas or spaces.
    #[arg(value_name = "RUN|FILE", required = true)]
    pub inputs: Vec<std::ffi::OsString>,
    /// Probabilities: the latency exceeded with probability P per sample (or per --per).
    #[arg(
        long,
        value_name = "P[,P...]",
        value_delimiter = ',',
        required = true,
        allow_hyphen_values = true,
        value_parser = probability
    )]
    pub at: Vec<f64>,
    /// Per unit of time (1h, 1d, 1y): P is the chance that the latency is exceeded at least
    /// once in that time, at the data's rate of samples.
    #[arg(long, value_name = "TIME", allow_hyphen_values = true)]
    pub per: Option<String>,
    /// Samples per second, for --per with value files and sample logs (runs carry theirs).
    #[arg(long, value_name = "HZ", allow_hyphen_values = true)]
    pub rate: Option<f64>,
    /// Confidence of the intervals (a fraction).
    #[arg(long, default_value_t = 0.95, allow_hyphen_values = true)]
    pub confidence: f64,
    /// Use only this series of each run (default: all series).
    #[arg(long, value_name = "NAME")]
    pub series: Option<String>,
    /// Take the samples as independent even when their order is known (no declustering).
    #[arg(long)]
    pub no_decluster: bool,
    /// Unit runs' latencies are shown in (JSON is always ns).
    #[arg(long, value_enum, default_value_t = DisplayUnit::Us)]
    pub unit: DisplayUnit,
    /// Column of value files to read (1-based).
    #[arg(short = 'C', long, default_value_t = 1)]
    pub column: usize,
    /// Delimiter characters of value files.
    #[arg(short = 'd', long, default_value = " \t")]
    pub delimiter: String,
    /// Print the answer as JSON.
    #[arg(long)]
    pub json: bool,
    /// Store to read stored runs from.
    #[arg(long)]
    pub store: Option<String>,
    /// Keep runs whose ground moved while they measured (a selector naming several runs
    /// leaves them out by default and says which).
    #[arg(long = "include-disturbed")]
    pub include_disturbed: bool,
}

const TAIL_AFTER_HELP: &str = "\
Peaks over threshold with a generalized Pareto fit. 20 thresholds are tried (from the top
2.5 % of samples, at most 5000, down to 30 clusters); at each, bursts are declustered (runs
declustering, run length from the Ferro-Segers extremal index; only where the sample order is
known: value files in line order, runs whose --samples log is complete), the GPD is fitted to
the cluster peaks by maximum likelihood and tested: Anderson-Darling (p-value from a table of
its null distribution with estimated parameters) and the stability of the shape against a
higher threshold. ForwardStop (FDR 0.10) picks the lowest threshold it does not reject. Intervals are profile-likelihood intervals that include the uncertainty
of the rate over the threshold. A run read from its histograms has no order: every exceedance
counts as independent (intervals too narrow if spikes come in bursts).

It refuses (exit 4, with the reason and what would help) when fewer than 30 clusters exceed
the thresholds, every threshold's fit is rejected, the shape leaves -0.5 ... 1, or a gap test
on the largest values finds a far-out second regime.

Exit codes: 0 answered, 2 bad usage, 4 refused.

Examples:
  latlab tail run:20260101T000000Z-ab12cd34 --at 1e-6,1e-9
  latlab tail run.json --at 0.5 --per 1d
  latlab tail latencies.txt --at 1e-5 --json";

/// A probability strictly between 0 and 1, refused as written (`1e-400` is not "0").
fn probability(text: &str) -> Result<f64, String> {
    let p: f64 = text
        .trim()
        .parse()
        .map_err(|_| "not a number (a probability such as 1e-6 or 0.001)".to_string())?;
    if p > 0.0 && p < 1.0 {
        Ok(p)
    } else {
        Err("a probability must lie strictly between 0 and 1 (1e-6, 0.001)".into())
    }
}
