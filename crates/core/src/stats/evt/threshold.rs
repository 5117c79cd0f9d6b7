//! Where the tail starts: candidate thresholds and the sequential goodness-of-fit rule that
//! picks one.
//!
//! Candidates leave between `max` (at most 2.5 % of the samples, at most 5000) and `min`
//! exceedances, geometrically spaced (20 of them). At each the exceedances are declustered,
//! the GPD fitted to the cluster peaks and tested twice: does the GPD fit (Anderson-Darling,
//! `gof`), and is its shape stable (`shape_pvalues`: a tail that is not yet in its limit
//! shows as a shape that drifts as the threshold rises, which a goodness-of-fit test at one
//! threshold cannot see)? The smaller p-value, doubled (Bonferroni), is the threshold's.
//! ForwardStop
//! (G'Sell, Wager, Chouldechova & Tibshirani 2016; applied to thresholds by Bader, Yan & Zhang
//! 2018, Annals of Applied Statistics 12(1)) then rejects the lowest k̂ thresholds, k̂ the
//! largest k with −(1/k)·Σᵢ≤ₖ ln(1 − pᵢ) ≤ α, which controls the false discovery rate of the
//! rejections at α. The threshold chosen is the (k̂+1)-th, the lowest not rejected; its own
//! p-value is then above 1 − e^(−α) (else the mean would have stayed at most α). When every
//! candidate is rejected the fit is rejected.

/// Candidate exceedance counts, largest first: geometric from `max` down to `min`, at most
/// `count` of them, distinct.
pub(crate) fn counts(max: usize, min: usize, count: usize) -> Vec<usize> {
    if max < min || max == 0 {
        return Vec::new();
    }
    if max == min || count < 2 {
        return vec![max];
    }
    let r = (min as f64 / max as f64).powf(1.0 / (count - 1) as f64);
    let mut out: Vec<usize> = (0..count)
        .map(|i| ((max as f64) * r.powi(i as i32)).round() as usize)
        .map(|k| k.clamp(min, max))
        .collect();
    out.dedup();
    out
}

/// Shape-stability p-values for candidates `(xi, clusters)`, lowest threshold first. Above a
/// threshold where the GPD holds, the shape estimates at higher thresholds move like
/// independent increments (Wadsworth 2016, JASA 111): ξ̂ᵢ − ξ̂ⱼ for a higher threshold j has
/// variance (1 + ξ)²·(1/nⱼ − 1/nᵢ). Each candidate is compared with the one above it that
/// keeps about a quarter of its clusters (the highest one when none is that far); two-sided
/// normal p-value, 1 where no candidate lies far enough above (fewer than half the
/// clusters).
pub(crate) fn shape_pvalues(c: &[(f64, f64)]) -> Vec<f64> {
    use statrs::distribution::{ContinuousCDF, Normal};
    let norm = Normal::standard();
    (0..c.len())
        .map(|i| {
            let (xi, n) = c[i];
            let far = (i + 1..c.len())
                .find(|&j| c[j].1 <= n / 4.0)
                .or_else(|| (i + 1..c.len()).last())
                .filter(|&j| c[j].1 <= n / 2.0);
            let Some(j) = far else { return 1.0 };
            let (xj, nj) = c[j];
            let sd = (1.0 + xi.max(-0.5)) * (1.0 / nj - 1.0 / n).sqrt();
            let z = ((xi - xj) / sd).abs();
            (2.0 * (1.0 - norm.cdf(z))).min(1.0)
        })
        .collect()
}

/// ForwardStop: how many of the ordered hypotheses (p-values from the lowest threshold up)
/// are rejected at false discovery rate `alpha`.
pub(crate) fn forward_stop(p: &[f64], alpha: f64) -> usize {
    let mut sum = 0.0;
    let mut k_hat = 0;
    for (i, &pi) in p.iter().enumerate() {
        sum += -(1.0 - pi.clamp(0.0, 1.0)).ln();
        if sum / (i + 1) as f64 <= alpha {
            k_hat = i + 1;
        }
    }
    k_hat
}

/// The index chosen among candidates with p-values `p` (lowest threshold first): the lowest
/// that ForwardStop does not reject; None when it rejects them all.
pub(crate) fn choose(p: &[f64], alpha: f64) -> Option<usize> {
    let k = forward_stop(p, alpha);
    (k < p.len()).then_some(k)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_geometric_and_distinct() {
        let c = counts(5000, 50, 20);
        assert_eq!((c[0], *c.last().unwrap(), c.len()), (5000, 50, 20));
        assert!(c.windows(2).all(|w| w[0] > w[1]));
        assert_eq!(counts(60, 50, 20).last(), Some(&50));
        assert!(counts(40, 50, 20).is_empty());
    }

    #[test]
    fn a_drifting_shape_is_unstable_and_a_steady_one_is_not() {
        let steady = [
            (0.1, 1000.0),
            (0.12, 500.0),
            (0.09, 250.0),
            (0.1, 120.0),
            (0.11, 60.0),
        ];
        assert!(shape_pvalues(&steady).iter().all(|&p| p > 0.5));
        let drift = [
            (0.3, 1000.0),
            (0.2, 500.0),
            (0.05, 250.0),
            (0.0, 120.0),
            (0.0, 60.0),
        ];
        let p = shape_pvalues(&drift);
        assert!(p[0] < 1e-3, "{p:?}");
        assert_eq!(p[4], 1.0, "nothing above the last");
    }

    #[test]
    fn forward_stop_rejects_the_bad_low_thresholds() {
        // Two tiny p-values then good fits: both rejected, the third chosen.
        let p = [1e-6, 1e-4, 0.6, 0.3, 0.8];
        assert_eq!(forward_stop(&p, 0.1), 2);
        assert_eq!(choose(&p, 0.1), Some(2));
        assert!(p[2] > 1.0 - (-0.1f64).exp());
        // All good: nothing rejected.
        assert_eq!(forward_stop(&[0.5, 0.7, 0.2], 0.1), 0);
        // All bad: no threshold.
        assert_eq!(choose(&[1e-5, 1e-6, 1e-9], 0.1), None);
        // A rejection after a good fit still counts while the running mean stays small.
        assert_eq!(choose(&[1e-6, 0.01, 0.5], 0.1), Some(2));
    }
}
