//! Spikes come in bursts: declustering turns the exceedances of a threshold into independent
//! clusters, each represented by its peak. The extremal index (Ferro & Segers 2003, the
//! intervals estimator) says how much exceedances cluster — 1 / the mean cluster size — and
//! sets the run length of runs declustering (their automatic declustering, section 6): the
//! ⌈θ·N⌉ − S largest gaps between exceedances separate clusters, the others lie within them.
//!
//! Only data in sample order can be declustered. Data without an order (a run stored only as
//! HDR histograms) count every exceedance as its own cluster: see `crate::stats::evt`.

/// One sample above a threshold: its value, its series and its position in that series.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Exceedance {
    /// The sample's value.
    pub value: f64,
    /// Which series (thread) it belongs to: clusters never span series.
    pub series: u32,
    /// Its position in its series (sample index), when the data have an order.
    pub pos: u64,
}

/// Clusters of exceedances and what was estimated on the way.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Declustered {
    /// Each cluster's largest value.
    pub(crate) peaks: Vec<f64>,
    /// The intervals estimate of the extremal index (None: no order, or too few gaps).
    pub(crate) theta: Option<f64>,
    /// Runs declustering's run length: gaps longer than this separate clusters (None: every
    /// exceedance is its own cluster).
    pub(crate) run_length: Option<u64>,
}

/// Ferro & Segers' intervals estimator of the extremal index from the gaps between successive
/// exceedances (in samples, each ≥ 1), capped at 1; None without a gap.
pub(crate) fn extremal_index(gaps: &[u64]) -> Option<f64> {
    if gaps.is_empty() {
        return None;
    }
    let m = gaps.len() as f64;
    let max = gaps.iter().copied().max().unwrap_or(0);
    let theta = if max <= 2 {
        let s: f64 = gaps.iter().map(|&t| t as f64).sum();
        let s2: f64 = gaps.iter().map(|&t| (t as f64) * (t as f64)).sum();
        2.0 * s * s / (m * s2)
    } else {
        let s: f64 = gaps.iter().map(|&t| t as f64 - 1.0).sum();
        let s2: f64 = gaps
            .iter()
            .map(|&t| (t as f64 - 1.0) * (t as f64 - 2.0))
            .sum();
        2.0 * s * s / (m * s2)
    };
    Some(theta.min(1.0))
}

/// Declusters `exc`, which must be sorted by (series, pos). With `ordered` false every
/// exceedance is its own cluster.
pub(crate) fn decluster(exc: &[Exceedance], ordered: bool) -> Declustered {
    if !ordered || exc.len() < 2 {
        return Declustered {
            peaks: exc.iter().map(|e| e.value).collect(),
            theta: None,
            run_length: None,
        };
    }
    let mut gaps = Vec::with_capacity(exc.len());
    let mut series = 1usize;
    for w in exc.windows(2) {
        if w[0].series == w[1].series {
            gaps.push(w[1].pos.saturating_sub(w[0].pos).max(1));
        } else {
            series += 1;
        }
    }
    let Some(theta) = extremal_index(&gaps) else {
        return Declustered {
            peaks: exc.iter().map(|e| e.value).collect(),
            theta: None,
            run_length: None,
        };
    };
    let n = exc.len();
    let clusters = ((theta * n as f64).ceil() as usize).clamp(series, n);
    let between = clusters - series;
    let run_length = if between >= gaps.len() {
        None
    } else {
        let mut sorted = gaps.clone();
        sorted.sort_unstable_by(|a, b| b.cmp(a));
        Some(sorted[between])
    };
    let mut peaks = Vec::with_capacity(clusters);
    let mut cur = exc[0].value;
    for w in exc.windows(2) {
        let split = w[0].series != w[1].series
            || run_length.is_none_or(|r| w[1].pos.saturating_sub(w[0].pos) > r);
        if split {
            peaks.push(cur);
            cur = w[1].value;
        } else {
            cur = cur.max(w[1].value);
        }
    }
    peaks.push(cur);
    Declustered {
        peaks,
        theta: Some(theta),
        run_length,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(series: u32, pos: u64, value: f64) -> Exceedance {
        Exceedance { value, series, pos }
    }

    #[test]
    fn the_intervals_estimator_on_known_gaps() {
        // Isolated exceedances far apart: theta capped at 1.
        assert_eq!(extremal_index(&[100, 250, 80, 300]), Some(1.0));
        // Pairs: gaps 1 inside, 100 between, repeated. Σ(T-1) = 3·99, Σ(T-1)(T-2) = 3·99·98,
        // m = 7 gaps (4 of 1, 3 of 100): 2·(297)²/(7·29106) = 0.866
        let g = [1, 100, 1, 100, 1, 100, 1];
        let t = extremal_index(&g).unwrap();
        assert!(
            (t - 2.0 * 297.0f64.powi(2) / (7.0 * 29106.0)).abs() < 1e-12,
            "{t}"
        );
        // All gaps ≤ 2: the first formula.
        let t = extremal_index(&[1, 2, 1, 2]).unwrap();
        assert!((t - (2.0f64 * 36.0 / (4.0 * 10.0)).min(1.0)).abs() < 1e-12);
        assert_eq!(extremal_index(&[]), None);
    }

    #[test]
    fn bursts_become_one_cluster_each_and_series_never_join() {
        // 200 bursts of 3 consecutive samples (the middle one the peak), exponential gaps of
        // mean 1000 between bursts (a fixed LCG, so the test is deterministic).
        let mut exc = Vec::new();
        let mut state = 12345u64;
        let mut pos = 0u64;
        for b in 0..200u64 {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let u = ((state >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
            pos += 3 + (-u.ln() * 1000.0) as u64;
            exc.push(at(0, pos, 1.0));
            exc.push(at(0, pos + 1, 5.0 + b as f64));
            exc.push(at(0, pos + 2, 2.0));
        }
        exc.push(at(1, 3, 9.0));
        exc.push(at(1, 4, 1.0));
        let d = decluster(&exc, true);
        let t = d.theta.unwrap();
        assert!(t > 0.25 && t < 0.45, "{t}");
        // Bursts are never split (each peak is a burst's middle sample); bursts closer than
        // the run length may merge.
        assert!(
            d.peaks.len() >= 150 && d.peaks.len() <= 201,
            "{}",
            d.peaks.len()
        );
        assert!(d.peaks[..d.peaks.len() - 1].iter().all(|&p| p >= 5.0));
        assert_eq!(*d.peaks.last().unwrap(), 9.0, "series 1 is its own cluster");
        assert!(d.run_length.unwrap() >= 1);
        // Without order: every exceedance is a cluster.
        let u = decluster(&exc, false);
        assert_eq!((u.peaks.len(), u.theta), (602, None));
    }

    #[test]
    fn independent_exceedances_stay_apart() {
        let exc: Vec<_> = (0..50u64)
            .map(|i| at(0, i * 37 + (i * i) % 11, i as f64))
            .collect();
        let d = decluster(&exc, true);
        assert_eq!(d.peaks.len(), 50);
        assert_eq!(d.theta, Some(1.0));
    }
}
