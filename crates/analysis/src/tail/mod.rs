//! `latlab tail`: the latency exceeded with a given probability per sample, or per unit of
//! time, beyond what the data saw — with an interval, or a refusal that says why not. The
//! statistics live in `latlab_core::stats::evt`; this module reads the inputs (`inputs`,
//! `samplelog`), asks the fitted tail for each level and renders the answer (`render`).
//!
//! [`estimate`] is the library entry point other commands use (report, compare, gate, and a
//! qualification's report): data in, a [`Report`] out, refusals included.

pub mod args;
mod command;
mod from_run;
mod part;
mod values;
pub mod inputs;
pub mod render;
pub(crate) mod samplelog;

#[cfg(test)]
mod holdout;

pub use inputs::{Loaded, ReadOpts};
use latlab_core::error::{Error, Result};
use latlab_core::stats::evt::{self, Candidate, Method, Model, Refusal};

/// A unit of time for `--per`.
#[derive(Debug, Clone, PartialEq)]
pub struct Per {
    /// As written (`1d`).
    pub(crate) text: String,
    /// Its length in seconds.
    pub(crate) seconds: f64,
}

impl Per {
    /// Parses `1h`, `1d`, `1y` (any humantime duration: `30min`, `2weeks`); exit 2 naming
    /// `--per` when it is not one or is zero.
    pub fn parse(text: &str) -> Result<Per> {
        let d = humantime::parse_duration(text.trim())
            .map_err(|e| Error::flag("--per", text, format!("{e} (a unit of time: 1h, 1d, 1y)")))?;
        let seconds = d.as_secs_f64();
        if seconds <= 0.0 {
            return Err(Error::flag("--per", text, "must be longer than zero"));
        }
        Ok(Per {
            text: text.trim().to_string(),
            seconds,
        })
    }
}

/// What to estimate.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// Probabilities: per sample, or with `per` per unit of time (each in (0, 1)).
    pub at: Vec<f64>,
    /// Per unit of time (None: per sample).
    pub per: Option<Per>,
    /// Samples per second, overriding the runs' own rate (value files and sample logs need
    /// it for `per`).
    pub rate: Option<f64>,
    /// Estimation settings (confidence of the intervals among them).
    pub config: evt::Config,
}

impl Request {
    /// A per-sample request at `at` with the default settings.
    pub fn per_sample(at: &[f64]) -> Request {
        Request {
            at: at.to_vec(),
            per: None,
            rate: None,
            config: evt::Config::default(),
        }
    }
}

/// Checks probabilities given to `flag`: each strictly between 0 and 1.
pub fn check_probabilities(flag: &str, ps: &[f64]) -> Result<()> {
    if ps.is_empty() {
        return Err(Error::Usage(format!(
            "{flag}: give at least one probability"
        )));
    }
    for &p in ps {
        if !(p > 0.0 && p < 1.0) {
            return Err(Error::flag(
                flag,
                p,
                "a probability must lie strictly between 0 and 1 (1e-6, 0.001)",
            ));
        }
    }
    Ok(())
}

/// One level asked for.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Quantile {
    /// The probability asked for (per sample, or per unit of time with `per`).
    pub(crate) p: f64,
    /// The latency exceeded with that probability (None: not answerable, see `method`).
    pub value: Option<f64>,
    /// Lower bound of its interval.
    pub low: Option<f64>,
    /// Upper bound (None: the data do not bound it).
    pub high: Option<f64>,
    /// `gpd` (beyond the threshold, from the fit), `empirical` (inside the data) or `body`
    /// (below the part of the data the tail keeps: not answered here).
    pub(crate) method: Method,
}

/// The fitted tail, as the JSON shows it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct FitSummary {
    /// The threshold chosen.
    pub threshold: f64,
    /// GPD shape.
    pub xi: f64,
    /// GPD scale.
    pub(crate) sigma: f64,
    /// Samples above the threshold.
    pub(crate) exceedances: usize,
    /// Independent clusters above it (= exceedances without sample order).
    pub clusters: usize,
    /// Extremal index (None: no sample order).
    pub(crate) extremal_index: Option<f64>,
    /// Runs declustering's run length in samples (None: none applied).
    pub(crate) run_length: Option<u64>,
    /// Anderson-Darling p-value of the fit.
    pub gof_p: f64,
    /// Gap test p-value for a second regime.
    pub(crate) gap_p: f64,
}

/// A refusal as the JSON shows it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct RefusalSummary {
    /// Which rule refused: too_few, fit_rejected, shape, second_regime.
    pub kind: evt::RefusalKind,
    /// Why.
    pub reason: String,
    /// What would help.
    pub help: String,
}

/// The answer of `latlab tail`.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Report {
    /// `ns` for runs and sample logs; empty for value files (their own unit).
    pub unit: String,
    /// The inputs.
    pub(crate) inputs: Vec<String>,
    /// Samples in all.
    pub(crate) samples: u64,
    /// Whether the sample order was used (bursts declustered).
    pub(crate) ordered: bool,
    /// Samples per second (runs' samples over their measured time, or `--rate`).
    pub(crate) rate_hz: Option<f64>,
    /// `--per` as given.
    pub(crate) per: Option<String>,
    /// Confidence of the intervals.
    pub(crate) confidence: f64,
    /// One entry per probability asked for (empty when refused).
    pub quantiles: Vec<Quantile>,
    /// The fit (None when refused).
    pub fit: Option<FitSummary>,
    /// Why the tail cannot be modelled (None when it can).
    pub refusal: Option<RefusalSummary>,
    /// Every threshold tried, lowest first.
    pub(crate) candidates: Vec<Candidate>,
    /// How the inputs were read.
    pub notes: Vec<String>,
    /// The fitted model, for charts and further questions.
    #[serde(skip)]
    pub(crate) model: Option<Model>,
    /// The data's largest values, descending (for charts, refused or not).
    #[serde(skip)]
    pub(crate) top: Vec<f64>,
}

impl Report {
    /// The per-sample probability of exceeding `x` with its interval (estimate, low, high),
    /// None when refused.
    pub fn exceedance(&self, x: f64) -> Option<(f64, f64, f64)> {
        self.model.as_ref().map(|m| m.exceedance(x))
    }
}

/// Estimates the tail of `data` at the levels `req` asks for. Exit 2 when `per` needs a rate
/// the data do not have; a refusal is a report with `refusal` set (not an error).
pub fn estimate(data: &Loaded, req: &Request) -> Result<Report> {
    let rate = match req.rate {
        Some(r) => Some(r),
        None => data.seconds.map(|s| data.sample.n as f64 / s),
    };
    if req.per.is_some() && rate.is_none() {
        return Err(Error::Usage(
            "--per needs the samples' rate: runs carry it; for value files and sample logs give \
             --rate HZ"
                .into(),
        ));
    }
    let mut r = Report {
        unit: if data.ns { "ns".into() } else { String::new() },
        inputs: data.names.clone(),
        samples: data.sample.n,
        ordered: data.sample.ordered,
        rate_hz: rate,
        per: req.per.as_ref().map(|p| p.text.clone()),
        confidence: req.config.confidence,
        quantiles: Vec::new(),
        fit: None,
        refusal: None,
        candidates: Vec::new(),
        notes: data.notes.clone(),
        model: None,
        top: {
            let mut v: Vec<f64> = data.sample.top.iter().map(|e| e.value).collect();
            v.sort_by(|a, b| b.total_cmp(a));
            v
        },
    };
    match evt::estimate(&data.sample, &req.config) {
        Err(Refusal {
            kind,
            reason,
            help,
            candidates,
        }) => {
            r.refusal = Some(RefusalSummary { kind, reason, help });
            r.candidates = candidates;
        }
        Ok(m) => {
            for &p in &req.at {
                let l = match (&req.per, rate) {
                    (Some(per), Some(hz)) => {
                        // P(at least one episode in a unit) = p, episodes a Poisson process.
                        let episodes = -(-p).ln_1p();
                        m.per_samples(episodes, hz * per.seconds)
                    }
                    _ => m.per_sample(p),
                };
                r.quantiles.push(Quantile {
                    p,
                    value: l.value,
                    low: l.low,
                    high: l.high,
                    method: l.method,
                });
            }
            r.fit = Some(FitSummary {
                threshold: m.threshold,
                xi: m.fit.xi,
                sigma: m.fit.sigma,
                exceedances: m.exceedances,
                clusters: m.clusters,
                extremal_index: m.extremal_index,
                run_length: m.run_length,
                gof_p: m.gof_p,
                gap_p: m.gap.p,
            });
            r.candidates = m.candidates.clone();
            r.model = Some(m);
        }
    }
    Ok(r)
}

/// The tail of runs already loaded (a report's, a qualification's), each with its name: their
/// sample logs are used where complete, else their histograms.
pub fn estimate_runs(runs: &[(&latlab_core::result::Run, &str)], req: &Request) -> Result<Report> {
    let data = inputs::from_runs(runs, &ReadOpts::default())?;
    estimate(&data, req)
}
