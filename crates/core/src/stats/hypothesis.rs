//! Two-sample tests for latency comparisons: Mann-Whitney U (exact for small samples: without
//! ties up to n1·n2 = 2500, with ties the exact permutation distribution of the mid-rank sum up
//! to 20 a side, as R's coin and exactRankTests compute it; normal approximation with tie and
//! continuity correction beyond), Welch's t, and Holm–Bonferroni adjustment. Two-sided
//! throughout.
//!
//! statrs has no Mann-Whitney test, and the usual hand-written exact p-value is wrong when the
//! first sample is the smaller one; this one is symmetric by construction and pinned to
//! reference values from SciPy in the tests below.

use super::dist::Dist;
use statrs::distribution::{ContinuousCDF, Normal, StudentsT};

/// Largest n1·n2 for which the exact distribution is used (no ties).
pub(crate) const EXACT_LIMIT: u64 = 2500;

/// Largest sample on either side for which tied samples get the exact permutation
/// distribution (C(40, 20) arrangements at most, counted by a small dynamic programme).
pub(crate) const EXACT_TIES_LIMIT: u64 = 20;

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
    // (a count, b count) per distinct value, for the exact distribution under ties.
    let mut groups: Vec<(u64, u64)> = Vec::new();
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
        if groups.len() <= (2 * EXACT_TIES_LIMIT) as usize {
            groups.push((ca, cb));
        }
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
    if a.n() <= EXACT_TIES_LIMIT && b.n() <= EXACT_TIES_LIMIT {
        return MannWhitney {
            u_b,
            prob_b_greater: prob,
            p: exact_ties_p(&groups, b.n(), u_b),
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
pub(crate) fn exact_p(m: usize, n: usize, u: usize) -> f64 {
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

/// Two-sided exact permutation p-value of b's U = `u_b` when samples tie: every way of
/// choosing which `n2` of the pooled samples are b's is equally likely; b's mid-rank sum is
/// counted over them per tie group (`groups`: a's and b's count of each distinct value, in
/// order), and p = 2·min(P(R ≤ r), P(R ≥ r)), at most 1 (SciPy's permutation test and
/// coin's exact test agree on it).
pub(crate) fn exact_ties_p(groups: &[(u64, u64)], n2: u64, u_b: f64) -> f64 {
    let n2 = n2 as usize;
    let total: u64 = groups.iter().map(|g| g.0 + g.1).sum();
    // Twice a mid-rank is an integer: 2·(ranks before) + size + 1.
    let max_s = 2 * (total as usize) * n2 + 1;
    // dp[k][s]: arrangements with k of b's samples placed and twice their rank sum s.
    let mut dp = vec![vec![0u64; max_s + 1]; n2 + 1];
    dp[0][0] = 1;
    let mut before = 0u64;
    for &(ca, cb) in groups {
        let t = ca + cb;
        let r2 = (2 * before + t + 1) as usize;
        let mut next = vec![vec![0u64; max_s + 1]; n2 + 1];
        for (k, row) in dp.iter().enumerate() {
            for (s, &ways) in row.iter().enumerate().filter(|x| *x.1 > 0) {
                for j in 0..=(t as usize).min(n2 - k) {
                    let s2 = s + j * r2;
                    if s2 <= max_s {
                        next[k + j][s2] += ways * binomial(t, j as u64);
                    }
                }
            }
        }
        dp = next;
        before += t;
    }
    let counts = &dp[n2];
    let all: u64 = counts.iter().sum();
    // Twice b's rank sum: 2·U + n2·(n2 + 1).
    let obs = ((2.0 * u_b).round() as usize) + n2 * (n2 + 1);
    let le: u64 = counts[..=obs.min(max_s)].iter().sum();
    let ge: u64 = counts[obs.min(max_s + 1)..].iter().sum();
    (2.0 * le.min(ge) as f64 / all as f64).min(1.0)
}

/// C(n, k), exact for the sizes the exact tests use (n ≤ 40).
fn binomial(n: u64, k: u64) -> u64 {
    let k = k.min(n - k.min(n));
    (0..k).fold(1u64, |acc, i| acc * (n - i) / (i + 1))
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
    /// Interval of the ratio mean(b) / mean(a) at the same confidence (Fieller's, with the
    /// same t quantile, so it holds 1 exactly when `ci` holds 0), cut at 0 below since both
    /// sets are non-negative. None when a set holds negative values or mean(a) is not
    /// distinguishable from 0 (the ratio is then unbounded).
    pub ratio_ci: Option<(f64, f64)>,
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
            ratio_ci: w.ratio_ci,
        };
    }
    welch_unscaled(a, b, confidence)
}

fn welch_unscaled(a: &Dist, b: &Dist, confidence: f64) -> Welch {
    let (na, nb) = (a.n() as f64, b.n() as f64);
    // Each mean measured from one of its own values, the two values' difference taken apart:
    // a common offset (1e9 + noise) cancels exactly instead of costing the difference its
    // last digits, and swapping the sets negates the difference exactly.
    let (sa, sb) = (a.shift(), b.shift());
    let ((ma, va), (mb, vb)) = (a.moments(sa), b.moments(sb));
    let (va, vb) = (va / na, vb / nb);
    let diff = (sb - sa) + (mb - ma);
    let se2 = va + vb;
    let positive = a.min() >= 0.0 && b.min() >= 0.0;
    let (mean_a, mean_b) = (sa + ma, sb + mb);
    if se2 == 0.0 {
        let p = if diff == 0.0 { 1.0 } else { 0.0 };
        let r = mean_b / mean_a;
        return Welch {
            diff,
            ci: (diff, diff),
            df: f64::INFINITY,
            p,
            ratio_ci: (positive && mean_a > 0.0).then_some((r, r)),
        };
    }
    let df = se2 * se2 / (va * va / (na - 1.0) + vb * vb / (nb - 1.0));
    let Ok(t) = StudentsT::new(0.0, 1.0, df) else {
        return Welch {
            diff,
            ci: (f64::NAN, f64::NAN),
            df,
            p: f64::NAN,
            ratio_ci: None,
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
        ratio_ci: fieller((mean_a, va), (mean_b, vb), q)
            .filter(|_| positive)
            .map(|(lo, hi)| (lo.max(0.0), hi)),
    }
}

/// Fieller's interval for mean_b / mean_a from (mean, squared standard error) of each,
/// independent, with quantile `q`: the ρ where (mean_b − ρ·mean_a)² ≤ q²·(se_b² + ρ²·se_a²).
/// None when mean_a is within q standard errors of 0 (the set is then unbounded).
pub(crate) fn fieller(a: (f64, f64), b: (f64, f64), q: f64) -> Option<(f64, f64)> {
    let ((ma, sa2), (mb, sb2)) = (a, b);
    let q2 = q * q;
    let aa = ma * ma - q2 * sa2;
    if aa.is_nan() || aa <= 0.0 {
        return None;
    }
    // Half the discriminant of aa·ρ² − 2·ma·mb·ρ + (mb² − q²·sb²).
    let disc = q2 * (ma * ma * sb2 + mb * mb * sa2) - q2 * q2 * sa2 * sb2;
    if disc.is_nan() || disc < 0.0 {
        return None;
    }
    let (mid, half) = (ma * mb / aa, disc.sqrt() / aa);
    Some((mid - half, mid + half))
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
pub(crate) mod tests {
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

    // Reference values: scipy.stats.mannwhitneyu(b, a, alternative="two-sided",
    // method=scipy.stats.PermutationMethod(n_resamples=numpy.inf)), SciPy 1.17.1: the exact
    // permutation distribution, ties included.
    #[test]
    fn ties_in_small_samples_use_the_exact_permutation_distribution() {
        let cases: [(&[f64], &[f64], f64, f64); 6] = [
            (&[0.0, 0.0, 0.0], &[2.0, 2.0, 2.0], 9.0, 0.1),
            (
                &[1.0, 2.0, 2.0, 3.0],
                &[2.0, 3.0, 3.0, 4.0, 5.0],
                17.0,
                0.15873015873015872,
            ),
            (
                &[1.0, 2.0, 2.0, 3.0, 3.0, 3.0, 4.0],
                &[3.0, 3.0, 4.0, 4.0, 5.0, 5.0, 6.0],
                43.0,
                0.02156177156177156,
            ),
            (&[5.0; 5], &[5.0, 5.0, 5.0, 5.0, 6.0], 15.0, 1.0),
            (
                &[0.0, 2.0, 4.0, 1.0, 3.0, 0.0, 2.0, 4.0, 1.0, 3.0],
                &[1.0, 4.0, 1.0, 4.0, 1.0, 4.0, 1.0, 4.0, 1.0, 4.0],
                60.0,
                0.516778886747927,
            ),
            (
                &[0.0, 1.0, 2.0, 3.0, 0.0, 1.0, 2.0, 3.0, 0.0, 1.0, 2.0, 3.0],
                &[1.0, 3.0, 5.0, 2.0, 4.0, 1.0, 3.0, 5.0, 2.0, 4.0, 1.0],
                97.5,
                0.05487849073796038,
            ),
        ];
        for (a, b, u, p) in cases {
            for (x, y, u) in [(a, b, u), (b, a, (a.len() * b.len()) as f64 - u)] {
                let r = mann_whitney(&d(x), &d(y));
                assert!(r.exact, "{x:?} {y:?}");
                assert_eq!(r.u_b, u, "{x:?} {y:?}");
                assert!(close(r.p, p, 1e-12), "{x:?} {y:?}: {} vs {p}", r.p);
            }
        }
    }

    /// With three samples a side the exact test can never reach p < 0.05 (its smallest p is
    /// 0.1), so identical groups are never "proven" different, ties or not.
    #[test]
    fn three_against_three_never_rejects() {
        for bits in 0u32..4096 {
            let v: Vec<f64> = (0..6).map(|i| f64::from((bits >> (2 * i)) & 3)).collect();
            let r = mann_whitney(&d(&v[..3]), &d(&v[3..]));
            assert!(r.p >= 0.1 - 1e-12, "{v:?}: {}", r.p);
        }
    }

    #[test]
    fn twenty_a_side_with_ties_is_exact_and_symmetric() {
        let a: Vec<f64> = (0..20).map(|i| f64::from(i % 7)).collect();
        let b: Vec<f64> = (0..20).map(|i| f64::from(i % 5 + 1)).collect();
        let (r, s) = (mann_whitney(&d(&a), &d(&b)), mann_whitney(&d(&b), &d(&a)));
        assert!(r.exact && s.exact);
        assert!(close(r.p, s.p, 1e-12) && r.p > 0.0 && r.p <= 1.0);
        // 21 a side: the normal approximation again.
        let a: Vec<f64> = (0..21).map(|i| f64::from(i % 7)).collect();
        assert!(!mann_whitney(&d(&a), &d(&b)).exact);
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

    /// Values with a large common offset (1e9 + Irwin-Hall noise, 10⁵ a side): the means'
    /// difference keeps its digits. Reference: the exact mean and variance of the same f64
    /// values (Python's fractions), then scipy.stats.t.sf (SciPy 1.17.1): p = 0.08396364148555507
    /// (SciPy's own ttest_ind, summing pairwise, gives 0.083962535).
    #[test]
    fn welch_keeps_its_digits_under_a_large_offset() {
        let w = welch(&offset_set(1, 0.0), &offset_set(2, 0.0115), 0.95);
        assert!(close(w.diff, 0.0077495298194885254, 1e-9), "{}", w.diff);
        assert!(close(w.df, 199983.84789165217, 1e-9), "{}", w.df);
        // The t distribution's tail at 2·10⁵ degrees of freedom is good to about 1e-9 here.
        assert!(close(w.p, 0.08396364148555507, 1e-8), "{}", w.p);
    }

    /// 10⁵ values 1e9 + (sum of 12 uniforms − 6), the uniforms from a 32-bit LCG (the same
    /// arithmetic as the Python reference, so the same f64 values).
    pub(crate) fn offset_set(seed: u64, shift: f64) -> Dist {
        let mut s = seed;
        let v = (0..100_000)
            .map(|_| {
                let mut z = 0.0;
                for _ in 0..12 {
                    s = (s * 1_664_525 + 1_013_904_223) % (1 << 32);
                    z += s as f64 / 4_294_967_296.0;
                }
                1e9 + (z - 6.0) + shift
            })
            .collect();
        Dist::from_values(v)
    }

    /// Fieller's ratio interval holds 1 exactly when Welch's difference interval holds 0 (the
    /// same t quantile), never goes below 0 for non-negative data, and is None when the
    /// baseline mean is not distinguishable from 0.
    #[test]
    fn the_ratio_interval_agrees_with_the_difference_interval() {
        let sets: [(&[f64], &[f64]); 4] = [
            (
                &[20.1, 22.3, 19.8, 21.0, 20.5],
                &[23.0, 24.1, 22.8, 25.2, 23.9, 24.4],
            ),
            (&[10.0, 11.0, 9.0, 10.5], &[10.2, 10.9, 9.4, 10.1]),
            (&[2400.0, 900.0, 5000.0], &[1400.0, 100.0, 300.0]),
            (&[1.0, 1.0, 100.0], &[1.0, 1.0, 1.0]),
        ];
        for (a, b) in sets {
            let w = welch(&d(a), &d(b), 0.95);
            let holds0 = w.ci.0 <= 0.0 && w.ci.1 >= 0.0;
            match w.ratio_ci {
                Some((lo, hi)) => {
                    assert!(lo >= 0.0 && lo <= hi, "{a:?} {b:?}: {lo} {hi}");
                    assert_eq!(holds0, lo <= 1.0 && hi >= 1.0, "{a:?} {b:?}: {w:?}");
                }
                None => assert!(holds0, "an unbounded ratio proves nothing: {w:?}"),
            }
        }
        // A hand-checked case: means 10 and 12, squared standard errors 1 and 1, q = 2:
        // (12 − 10ρ)² = 4(1 + ρ²) ⇔ 96ρ² − 240ρ + 140 = 0 ⇔ ρ = (240 ± √3840)/192.
        let (lo, hi) = fieller((10.0, 1.0), (12.0, 1.0), 2.0).unwrap();
        let r = 3840f64.sqrt();
        assert!(close(lo, (240.0 - r) / 192.0, 1e-12) && close(hi, (240.0 + r) / 192.0, 1e-12));
        assert_eq!(fieller((1.0, 1.0), (12.0, 1.0), 2.0), None);
    }

    #[test]
    fn holm_adjusts_in_order() {
        let adj = holm(&[0.01, 0.04, 0.03]);
        assert!(close(adj[0], 0.03, 1e-12));
        assert!(close(adj[2], 0.06, 1e-12));
        assert!(close(adj[1], 0.06, 1e-12));
    }
}
