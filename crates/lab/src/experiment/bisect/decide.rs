//! One bisection step's statistics: is a kernel like the known-good one or like the known-bad
//! one? Each boot gives one figure (the boot is the replicate); the candidate's figures are
//! compared with both ends by Welch's t on their logarithms, as `compare` compares runs.

use latlab_core::stats::dist::Dist;
use latlab_core::stats::hypothesis::welch;

/// What a step found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Decision {
    /// Proven unlike the bad end and not proven unlike the good one.
    Good,
    /// Proven worse than the good end and not proven unlike the bad one.
    Bad,
    /// Neither yet (more boots may decide), or both (in between: more boots will not).
    Open,
}

/// A test of `v` against `base`: (p, v worse than base), on the ratio scale.
fn test(base: &[f64], v: &[f64], conf: f64, higher_is_better: bool) -> (f64, bool) {
    let logs = |x: &[f64]| Dist::from_values(x.iter().map(|y| y.max(1e-12).ln()).collect());
    let w = welch(&logs(base), &logs(v), conf);
    let worse = if higher_is_better {
        w.diff < 0.0
    } else {
        w.diff > 0.0
    };
    (if w.p.is_finite() { w.p } else { 1.0 }, worse)
}

/// The p-values of a candidate against the good and the bad end, and the decision at the
/// two-sided level `1 - conf`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Step {
    /// p against the good end.
    pub(crate) p_good: f64,
    /// p against the bad end.
    pub(crate) p_bad: f64,
    /// What they decide.
    pub(crate) decision: Decision,
}

/// Decides `cand` (one figure per boot) against `good` and `bad`.
pub(crate) fn decide(
    good: &[f64],
    bad: &[f64],
    cand: &[f64],
    conf: f64,
    higher_is_better: bool,
) -> Step {
    if good.len() < 2 || bad.len() < 2 || cand.len() < 2 {
        return Step {
            p_good: 1.0,
            p_bad: 1.0,
            decision: Decision::Open,
        };
    }
    let alpha = 1.0 - conf;
    let (p_good, worse_than_good) = test(good, cand, conf, higher_is_better);
    let (p_bad, worse_than_bad) = test(bad, cand, conf, higher_is_better);
    let unlike_good = p_good < alpha && worse_than_good;
    let unlike_bad = p_bad < alpha && !worse_than_bad;
    let decision = match (unlike_good, unlike_bad) {
        (true, false) => Decision::Bad,
        (false, true) => Decision::Good,
        _ => Decision::Open,
    };
    Step {
        p_good,
        p_bad,
        decision,
    }
}

/// Whether the bad end is proven worse than the good one: (proven, p).
pub(crate) fn ends_differ(good: &[f64], bad: &[f64], conf: f64, higher: bool) -> (bool, f64) {
    if good.len() < 2 || bad.len() < 2 {
        return (false, 1.0);
    }
    let (p, worse) = test(good, bad, conf, higher);
    (p < 1.0 - conf && worse, p)
}

/// The next level to try strictly between `lo` and `hi`: the untried one nearest the middle
/// (the lower on a tie), None when every one between was skipped.
pub(crate) fn next(lo: usize, hi: usize, skipped: &[usize]) -> Option<usize> {
    let mid = (lo + hi) as f64 / 2.0;
    (lo + 1..hi)
        .filter(|i| !skipped.contains(i))
        .min_by(|a, b| {
            let (da, db) = ((*a as f64 - mid).abs(), (*b as f64 - mid).abs());
            da.total_cmp(&db).then(a.cmp(b))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_candidate_like_one_end_is_that_end() {
        let good = [70.0, 68.0, 72.0];
        let bad = [700.0, 690.0, 720.0];
        assert_eq!(
            decide(&good, &bad, &[69.0, 71.0], 0.95, false).decision,
            Decision::Good
        );
        assert_eq!(
            decide(&good, &bad, &[705.0, 698.0], 0.95, false).decision,
            Decision::Bad
        );
        // One boot decides nothing; nor does a candidate as spread as both ends.
        assert_eq!(
            decide(&good, &bad, &[69.0], 0.95, false).decision,
            Decision::Open
        );
        assert_eq!(
            decide(&good, &bad, &[60.0, 900.0], 0.95, false).decision,
            Decision::Open
        );
        // Higher is better: the same numbers read the other way.
        assert_eq!(
            decide(&bad, &good, &[69.0, 71.0], 0.95, true).decision,
            Decision::Bad
        );
        assert!(ends_differ(&good, &bad, 0.95, false).0);
        assert!(
            !ends_differ(&bad, &good, 0.95, false).0,
            "better is not bad"
        );
    }

    #[test]
    fn identical_ends_are_never_proven_different_at_more_than_alpha() {
        use rand::{RngExt, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let mut proven = 0;
        for _ in 0..2000 {
            let g: Vec<f64> = (0..3).map(|_| 100.0 * rng.random_range(0.8..1.2)).collect();
            let b: Vec<f64> = (0..3).map(|_| 100.0 * rng.random_range(0.8..1.2)).collect();
            proven += usize::from(ends_differ(&g, &b, 0.95, false).0);
        }
        // One-sided use of a two-sided 5 % test: at most about 2.5 % (plus chance).
        assert!(proven < 2000 * 4 / 100, "{proven} of 2000");
    }

    #[test]
    fn the_search_halves_and_steps_round_skips() {
        assert_eq!(next(0, 4, &[]), Some(2));
        assert_eq!(next(0, 3, &[]), Some(1));
        assert_eq!(next(0, 4, &[2]), Some(1));
        assert_eq!(next(0, 2, &[1]), None);
        assert_eq!(next(2, 3, &[]), None);
    }
}
