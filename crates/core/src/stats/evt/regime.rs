//! A second regime in the tail: a rare mode far beyond the rest (a firmware stall, a periodic
//! housekeeping job) that a single generalized Pareto fit would average away into a confident
//! wrong extrapolation. Detected by a gap test on the upper order statistics:
//!
//! For m = 1 … M (M = min(5, N/10)) the GPD is refitted without the m largest peaks. Given the
//! (m+1)-th largest, the m above it are independent draws from the tail beyond it, so the
//! probability that even the smallest of them lies as far out as observed is
//! `p_m = (S(z_(m)) / S(z_(m+1)))^m` under that fit (S the survival function), uniform when
//! the model holds. The test's p-value is the Bonferroni bound `M · min p_m`.
//!
//! The refit is uncertain (a shape estimated from 30 peaks is ±0.4), and a tail fitted too
//! light makes the top look far out when it is not. So p_m is computed at the upper end of the
//! shape's 95 % interval, ξ̂ + 1.96·(1 + ξ̂)/√k (ξ̂ taken as 0 when negative: a bounded refit
//! puts its endpoint just above the rest, which would make any value beyond look impossible),
//! with the scale refitted at that shape. The test is conservative for a single tail and still
//! decisive for a mode far beyond it.

use super::gpd;

/// Result of the gap test.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Gap {
    /// Bonferroni-adjusted p-value (1 when nothing was tested).
    pub p: f64,
    /// How many top values the smallest p_m set apart.
    pub(crate) m: usize,
}

/// The gap test on peaks `z` sorted descending (all > 0).
pub(crate) fn gap_test(z_desc: &[f64]) -> Gap {
    let n = z_desc.len();
    let big_m = (n / 10).min(5);
    let mut best = Gap { p: 1.0, m: 0 };
    for m in 1..=big_m {
        let rest = &z_desc[m..];
        let Some(f) = gpd::fit(rest) else {
            continue;
        };
        // The refit's shape is uncertain, and a lighter tail than the truth would make the top
        // look far out: the test takes the upper end of the shape's 95 % interval (and no
        // bounded tail: a refit's endpoint sits just above the rest), with the scale fitted
        // at that shape.
        let k = rest.len() as f64;
        let xi = f.xi.max(0.0) + 1.96 * (1.0 + f.xi.max(0.0)) / k.sqrt();
        let sigma = gpd::fit_scale(rest, xi);
        let ls_top = gpd::log_sf(z_desc[m - 1], sigma, xi);
        let ls_next = gpd::log_sf(z_desc[m], sigma, xi);
        // Past the refitted endpoint the top values are impossible under the fit: p = 0.
        let p = if ls_top == f64::NEG_INFINITY {
            0.0
        } else {
            (m as f64 * (ls_top - ls_next)).exp().min(1.0)
        };
        if p < best.p {
            best = Gap { p, m };
        }
    }
    if big_m > 0 {
        best.p = (best.p * big_m as f64).min(1.0);
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    fn desc(mut v: Vec<f64>) -> Vec<f64> {
        v.sort_by(|a, b| b.total_cmp(a));
        v
    }

    #[test]
    fn a_far_mode_is_found_and_a_plain_tail_is_not() {
        // Exponential quantiles (no randomness): a plain tail.
        let n = 300;
        let plain: Vec<f64> = (1..=n)
            .map(|i| -((i as f64 - 0.5) / n as f64).ln())
            .collect();
        let g = gap_test(&desc(plain.clone()));
        assert!(g.p > 0.2, "{g:?}");
        // Three values ten times beyond the rest.
        let mut far = plain;
        far.truncate(n - 3);
        far.extend([60.0, 62.0, 65.0]);
        let g = gap_test(&desc(far));
        assert!(g.p < 1e-6 && g.m == 3, "{g:?}");
    }
}
