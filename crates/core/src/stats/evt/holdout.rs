//! Held-out calibration: a tail fitted on one part of the data predicts how many samples of
//! another part exceed given levels; the prediction is checked against the count. Used by the
//! fast synthetic check in the test suite and by `bench/tail.py holdout` on real runs.

use super::Model;

/// One level checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Check {
    /// The expected count the level was chosen for.
    pub expected: f64,
    /// The level (the fit's estimate of the value exceeded `expected` times in the held-out
    /// part).
    pub level: f64,
    /// The 95 % interval of the count: the fit's rate interval, widened by the Poisson
    /// scatter of clusters (each `cluster_size` samples).
    pub interval: (f64, f64),
    /// Samples of the held-out part above the level.
    pub observed: u64,
}

impl Check {
    /// Whether the observed count lies in the predicted interval.
    pub fn inside(&self) -> bool {
        let o = self.observed as f64;
        o >= self.interval.0 && o <= self.interval.1
    }
}

/// Count interval for expected counts from `lo` to `hi` samples in clusters of `size`: the
/// 2.5 % Poisson quantile of the lower, the 97.5 % of the upper, in samples.
fn poisson_counts(lo: f64, hi: f64, size: f64) -> (f64, f64) {
    use statrs::distribution::{DiscreteCDF, Poisson};
    let q = |mu: f64, p: f64| {
        if mu.is_nan() || mu <= 0.0 {
            return 0.0;
        }
        Poisson::new(mu).map_or(f64::INFINITY, |d| d.inverse_cdf(p) as f64)
    };
    (q(lo / size, 0.025) * size, q(hi / size, 0.975) * size)
}

/// For each expected count, the level the fit puts there in `held_out` samples (None where
/// the fit gives no level), with the predicted interval and the observed count.
pub fn check(m: &Model, held_out: &[f64], expected: &[f64]) -> Vec<Check> {
    let n = held_out.len() as f64;
    expected
        .iter()
        .filter_map(|&e| {
            let level = m.per_sample(e / n).value?;
            let (_, lo, hi) = m.exceedance(level);
            Some(Check {
                expected: e,
                level,
                interval: poisson_counts(lo * n, hi * n, m.cluster_size()),
                observed: held_out.iter().filter(|&&x| x > level).count() as u64,
            })
        })
        .collect()
}
