//! `gate --extrapolate`: a rate requirement the counts cannot decide (too few samples to see
//! the rate at all) decided from the fitted tail (`crate::tail`), when the fit passes its
//! checks; when the tail refuses, the requirement stays undecided and the refusal says why.

use super::judge::Outcome;
use super::requirement::Requirement;
use crate::tail::{FitSummary, ReadOpts, RefusalSummary, Request};
use latlab_core::error::Result;
use latlab_core::result::Run;

/// What the fit says of the requirement.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Extrapolation {
    /// Met or violated from the fit's bounds; undecided when they straddle the limit or the
    /// tail cannot be modelled.
    pub outcome: Outcome,
    /// The fitted per-sample rate of the event, with one-sided bounds at the gate's
    /// confidence each (None when refused).
    pub rate: Option<(f64, f64, f64)>,
    /// The fit.
    pub fit: Option<FitSummary>,
    /// Why there is no fit.
    pub refusal: Option<RefusalSummary>,
    /// How the runs were read.
    pub notes: Vec<String>,
}

/// Fits the tail of `runs` (pooled; `series` only) and judges `req` on it at one-sided
/// `confidence`.
pub fn extrapolate(
    runs: &[(&Run, &str)],
    req: &Requirement,
    confidence: f64,
    series: Option<&str>,
) -> Result<Extrapolation> {
    let data = crate::tail::inputs::from_runs(
        runs,
        &ReadOpts {
            read: crate::dataset::ReadOpts {
                series: series.map(str::to_string),
                ..Default::default()
            },
            no_decluster: false,
        },
    )?;
    let mut r = Request::per_sample(&[]);
    // One-sided bounds at `confidence` each are the ends of a two-sided 2c − 1 interval.
    r.config.confidence = 2.0 * confidence - 1.0;
    let t = crate::tail::estimate(&data, &r)?;
    let rate = t.exceedance(req.threshold_ns() as f64);
    let outcome = match rate {
        Some((_, _, hi)) if hi < req.limit => Outcome::Met,
        Some((_, lo, _)) if lo > req.limit => Outcome::Violated,
        _ => Outcome::Undecided,
    };
    Ok(Extrapolation {
        outcome,
        rate,
        fit: t.fit,
        refusal: t.refusal,
        notes: t.notes,
    })
}
