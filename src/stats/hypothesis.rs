//! Two-sample tests for latency comparisons: Mann-Whitney U (exact without ties for small
//! samples, normal approximation with tie and continuity correction otherwise), Welch's t, and
//! Holm–Bonferroni adjustment. Two-sided throughout.
//!
//! statrs has no Mann-Whitney test, and the usual hand-written exact p-value is wrong when the
//! first sample is the smaller one; this one is symmetric by construction and pinned to
//! reference values from SciPy in the tests below.

use super::dist::Dist;
use statrs::distribution::{ContinuousCDF, Normal, StudentsT};

/// Largest n1·n2 for which the exact distribution is used (no ties).
pub const EXACT_LIMIT: u64 = 2500;

/// Result of a Mann-Whitney U test of `b` against `a`.
#[derive(Debug, Clone, PartialEq)]
pub struct MannWhitney {
    /// U statistic of `b`: pairs (a, b) with b > a, plus half the ties.
    pub u_b: f64,
    /// P(B > A) + ½P(B = A): the probability of superiority (0.5 = no shift).
    pub prob_b_greater: f64,
    /// Two-sided p-value.
    pub p: f64,
    /// True when the exact distribution was used.
    pub exact: bool,
}

/// Mann-Whitney U of `b` vs `a` by one merge pass over both sorted distributions.
pub fn mann_whitney(a: &Dist, b: &Dist) -> MannWhitney {
    let (n1, n2) = (a.n() as f64, b.n() as f64);
    // Walk distinct values in order; accumulate rank sum of b and the tie term Σ(t³ − t).
    let (mut i, mut j) = (0usize, 0usize);
    // U of b is counted directly (each b sample scores the a samples below it, half of those
    // equal): a difference of rank sums cancels catastrophically when one set is 1e13 times
    // the other.
    let (mut a_below, mut u_b, mut ties) = (0f64, 0f64, 0f64);
    let pa: Vec<(f64, u64)> = a.pairs().collect();
    let pb: Vec<(f64, u64)> = b.pairs().collect();
    while i < pa.len() || j < pb.len() {
        let v = match (pa.get(i), pb.get(j)) {
            (Some(x), Some(y)) => x.0.min(y.0),
            (Some(x), None) => x.0,
            (None, Some(y)) => y.0,
            (None, None) => unreachable!(),
        };
        let ca = if pa.get(i).is_some_and(|x| x.0 == v) {
            i += 1;
            pa[i - 1].1
        } else {
            0
        };
        let cb = if pb.get(j).is_some_and(|y| y.0 == v) {
            j += 1;
            pb[j - 1].1
        } else {
            0
        };
        let (ca, cb) = (ca as f64, cb as f64);
        u_b += cb * (a_below + ca / 2.0);
        a_below += ca;
        let t = ca + cb;
        if t > 1.0 {
            ties += t * t * t - t;
        }
    }
    let prob = u_b / (n1 * n2);
    let no_ties = ties == 0.0;
    if no_ties && a.n().saturating_mul(b.n()) <= EXACT_LIMIT {
        let p = exact_p(a.n() as usize, b.n() as usize, u_b.round() as usize);
        return MannWhitney {
            u_b,
            prob_b_greater: prob,
            p,
            exact: true,
        };
    }
    let n = n1 + n2;
    let mu = n1 * n2 / 2.0;
    let var = n1 * n2 / 12.0 * ((n + 1.0) - ties / (n * (n - 1.0)));
    let p = if var <= 0.0 {
        1.0
    } else {
        let z = ((u_b - mu).abs() - 0.5).max(0.0) / var.sqrt();
        let norm = Normal::new(0.0, 1.0).expect("standard normal");
        (2.0 * norm.sf(z)).min(1.0)
    };
    MannWhitney {
        u_b,
        prob_b_greater: prob,
        p,
        exact: false,
    }
}

/// Two-sided exact p-value of U = u for sample sizes m, n without ties:
/// 2·P(U ≥ max(u, mn − u)), from the count of arrangements by U (symmetric in m and n).
pub fn exact_p(m: usize, n: usize, u: usize) -> f64 {
    let max_u = m * n;
    // f[k][u] for the current n: number of sequences of k a's among (k + n_cur) with U = u.
    // Build with the recurrence f(m, n, u) = f(m − 1, n, u − n) + f(m, n − 1, u).
    let mut table = vec![vec![0f64; max_u + 1]; m + 1];
    for row in table.iter_mut() {
        row[0] = 1.0; // n = 0: only U = 0
    }
    for nn in 1..=n {
        let mut next = vec![vec![0f64; max_u + 1]; m + 1];
        next[0][0] = 1.0;
        for mm in 1..=m {
            for uu in 0..=mm * nn {
                let mut c = table[mm][uu]; // last element is from the n-sample
                if uu >= nn {
                    c += next[mm - 1][uu - nn]; // last element is from the m-sample
                }
                next[mm][uu] = c;
            }
        }
        table = next;
    }
    let counts = &table[m];
    let total: f64 = counts.iter().sum();
    let hi = u.max(max_u - u.min(max_u));
    let tail: f64 = counts[hi.min(max_u)..].iter().sum();
    (2.0 * tail / total).min(1.0)
}

/// Welch's unequal-variance t-test of mean(b) − mean(a).
#[derive(Debug, Clone, PartialEq)]
pub struct Welch {
    /// mean(b) − mean(a).
    pub diff: f64,
    /// Confidence interval of the difference.
    pub ci: (f64, f64),
    /// Welch–Satterthwaite degrees of freedom.
    pub df: f64,
    /// Two-sided p-value.
    pub p: f64,
}

/// Welch's t-test at `confidence` (e.g. 0.95). Values anywhere in f64's range are handled:
/// near its ends the test runs on values scaled by a power of two (exact, and the t statistic
/// does not change), and a test that cannot be computed has NaN p-value and interval.
pub fn welch(a: &Dist, b: &Dist, confidence: f64) -> Welch {
    let big = [a.min(), a.max(), b.min(), b.max()]
        .iter()
        .fold(0f64, |m, v| m.max(v.abs()));
    if big.is_finite() && big > 1e100 {
        let e = (big.log2().ceil() as i32).clamp(1, 1023);
        let w = welch_unscaled(
            &a.scaled(2f64.powi(-e)),
            &b.scaled(2f64.powi(-e)),
            confidence,
        );
        let k = 2f64.powi(e);
        return Welch {
            diff: w.diff * k,
            ci: (w.ci.0 * k, w.ci.1 * k),
            df: w.df,
            p: w.p,
        };
    }
    welch_unscaled(a, b, confidence)
}

fn welch_unscaled(a: &Dist, b: &Dist, confidence: f64) -> Welch {
    let (na, nb) = (a.n() as f64, b.n() as f64);
    let (va, vb) = (a.var() / na, b.var() / nb);
    let diff = b.mean() - a.mean();
    let se2 = va + vb;
    if se2 == 0.0 {
        let p = if diff == 0.0 { 1.0 } else { 0.0 };
        return Welch {
            diff,
            ci: (diff, diff),
            df: f64::INFINITY,
            p,
        };
    }
    let df = se2 * se2 / (va * va / (na - 1.0) + vb * vb / (nb - 1.0));
    let Ok(t) = StudentsT::new(0.0, 1.0, df) else {
        return Welch {
            diff,
            ci: (f64::NAN, f64::NAN),
            df,
            p: f64::NAN,
        };
    };
    let p = (2.0 * t.sf((diff / se2.sqrt()).abs())).min(1.0);
    let q = super::student::t_quantile(1.0 - (1.0 - confidence) / 2.0, df);
    let half = q * se2.sqrt();
    Welch {
        diff,
        ci: (diff - half, diff + half),
        df,
        p,
    }
}

/// Holm–Bonferroni adjusted p-values, in the input order.
pub fn holm(p: &[f64]) -> Vec<f64> {
    let k = p.len();
    let mut idx: Vec<usize> = (0..k).collect();
    idx.sort_by(|&x, &y| p[x].total_cmp(&p[y]));
    let mut out = vec![0.0; k];
    let mut running = 0f64;
    for (rank, &i) in idx.iter().enumerate() {
        let adj = ((k - rank) as f64 * p[i]).min(1.0);
        running = running.max(adj);
        out[i] = running;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(v: &[f64]) -> Dist {
        Dist::from_values(v.to_vec())
    }

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol * b.abs().max(1e-300)
    }

    // Reference values: scipy.stats.mannwhitneyu(b, a, alternative="two-sided",
    // method="exact" / "asymptotic", use_continuity=True), SciPy 1.17.1.
    #[test]
    fn exact_small_samples_match_scipy() {
        let a = d(&[1.1, 2.3, 3.5, 4.2]);
        let b = d(&[5.0, 6.1, 7.7]);
        let r = mann_whitney(&a, &b);
        assert!(r.exact);
        assert_eq!(r.u_b, 12.0);
        assert!(close(r.p, 0.05714285714285714, 1e-12), "{}", r.p);
        // Swapped: same p, U = n1·n2 − U, probability of superiority mirrored.
        let s = mann_whitney(&b, &a);
        assert_eq!(s.u_b, 0.0);
        assert!(close(s.p, r.p, 1e-12));
        assert!(close(s.prob_b_greater, 1.0 - r.prob_b_greater, 1e-12));
    }

    #[test]
    fn the_same_shape_at_any_scale_is_no_shift() {
        // One set 1e13 times the other's counts, same shape: U is exactly n1·n2/2 either way.
        let shape = [(10.0, 3u64), (20.0, 5), (40.0, 2), (900.0, 1)];
        let small = Dist::from_counts(shape, 1.0);
        let huge = Dist::from_counts(shape.map(|(v, c)| (v, c * 10_000_000_000_000)), 1.0);
        for (a, b) in [(&small, &huge), (&huge, &small)] {
            let r = mann_whitney(a, b);
            assert_eq!(r.prob_b_greater, 0.5, "{r:?}");
            assert!(r.p > 0.99, "{r:?}");
        }
    }

    #[test]
    fn exact_interleaved_matches_scipy() {
        let a = d(&[1.0, 3.0, 5.0, 7.0, 9.0, 11.0]);
        let b = d(&[2.0, 4.0, 6.0, 8.0, 10.0, 12.5, 14.0, 15.0]);
        let r = mann_whitney(&a, &b);
        assert!(r.exact);
        assert_eq!(r.u_b, 33.0);
        assert!(close(r.p, 0.2823842823842824, 1e-12), "{}", r.p);
    }

    #[test]
    fn exact_with_the_smaller_sample_first_matches_scipy() {
        // The case statrs gets wrong: a two-element sample below a seven-element one.
        let small = d(&[0.5, 0.7]);
        let big = d(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]);
        for (a, b, u) in [(&big, &small, 0.0), (&small, &big, 14.0)] {
            let r = mann_whitney(a, b);
            assert!(r.exact);
            assert_eq!(r.u_b, u);
            assert!(close(r.p, 0.05555555555555555, 1e-12), "{}", r.p);
        }
    }

    #[test]
    fn large_samples_with_ties_match_scipy() {
        let a: Vec<f64> = (0..300u64)
            .map(|i| (i * 7919 % 1009) as f64 / 10.0)
            .collect();
        let b: Vec<f64> = (0..400u64)
            .map(|i| (i * 104_729 % 1013) as f64 / 10.0 + 3.0)
            .collect();
        let r = mann_whitney(&d(&a), &d(&b));
        assert!(!r.exact);
        assert_eq!(r.u_b, 63553.5);
        assert!(close(r.p, 0.1796118992997885, 1e-9), "{}", r.p);
    }

    #[test]
    fn ties_use_normal_approximation_like_scipy() {
        let a = d(&[1.0, 2.0, 2.0, 3.0, 3.0, 3.0, 4.0]);
        let b = d(&[3.0, 3.0, 4.0, 4.0, 5.0, 5.0, 6.0]);
        let r = mann_whitney(&a, &b);
        assert!(!r.exact);
        assert_eq!(r.u_b, 43.0);
        assert!(close(r.p, 0.01785429278938296, 1e-9), "{}", r.p);
    }

    #[test]
    fn welch_matches_scipy() {
        // scipy.stats.ttest_ind(b, a, equal_var=False)
        let a = d(&[20.1, 22.3, 19.8, 21.0, 20.5]);
        let b = d(&[23.0, 24.1, 22.8, 25.2, 23.9, 24.4]);
        let w = welch(&a, &b, 0.95);
        assert!(close(w.diff, 3.16, 1e-12));
        assert!(close(w.p, 0.0004878735516763953, 1e-6), "{}", w.p);
        assert!(close(w.df, 8.280497658085201, 1e-9), "{}", w.df);
    }

    #[test]
    fn holm_adjusts_in_order() {
        let adj = holm(&[0.01, 0.04, 0.03]);
        assert!(close(adj[0], 0.03, 1e-12));
        assert!(close(adj[2], 0.06, 1e-12));
        assert!(close(adj[1], 0.06, 1e-12));
    }
}
