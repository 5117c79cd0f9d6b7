//! A data set as a sorted list of distinct values with counts, so a latency histogram of
//! millions of samples and a file of twelve throughput figures are compared the same way.

use super::histogram::HistogramData;

/// Sorted distinct values with their cumulative counts.
#[derive(Debug, Clone, PartialEq)]
pub struct Dist {
    /// Distinct values, ascending.
    pub(crate) values: Vec<f64>,
    /// `cum[i]` = number of samples ≤ `values[i]`.
    pub(crate) cum: Vec<u64>,
}

impl Dist {
    /// From raw values (any order; must be finite).
    pub fn from_values(mut v: Vec<f64>) -> Dist {
        v.sort_unstable_by(f64::total_cmp);
        let mut values = Vec::new();
        let mut cum = Vec::new();
        for (i, x) in v.iter().enumerate() {
            if values.last() == Some(x) {
                *cum.last_mut().expect("pushed with the value") = i as u64 + 1;
            } else {
                values.push(*x);
                cum.push(i as u64 + 1);
            }
        }
        Dist { values, cum }
    }

    /// From (value, count) pairs, e.g. HDR histogram buckets; values are scaled by `scale`.
    pub fn from_counts(pairs: impl IntoIterator<Item = (f64, u64)>, scale: f64) -> Dist {
        let mut p: Vec<(f64, u64)> = pairs
            .into_iter()
            .filter(|&(_, c)| c > 0)
            .map(|(v, c)| (v * scale, c))
            .collect();
        p.sort_unstable_by(|a, b| a.0.total_cmp(&b.0));
        let mut values: Vec<f64> = Vec::with_capacity(p.len());
        let mut cum: Vec<u64> = Vec::with_capacity(p.len());
        let mut total = 0u64;
        for (v, c) in p {
            total = total.saturating_add(c);
            if values.last() == Some(&v) {
                *cum.last_mut().expect("pushed with the value") = total;
            } else {
                values.push(v);
                cum.push(total);
            }
        }
        Dist { values, cum }
    }

    /// From a stored HDR histogram (bucket values in ns), scaled by `scale`.
    pub fn from_histogram(h: &HistogramData, scale: f64) -> Dist {
        Dist::from_counts(h.buckets.iter().map(|&[v, c]| (v as f64, c)), scale)
    }

    /// The same counts with every value multiplied by `k` (> 0).
    pub(crate) fn scaled(&self, k: f64) -> Dist {
        Dist {
            values: self.values.iter().map(|v| v * k).collect(),
            cum: self.cum.clone(),
        }
    }

    /// Merges several distributions.
    pub fn merge(parts: &[Dist]) -> Dist {
        let pairs: Vec<(f64, u64)> = parts.iter().flat_map(|d| d.pairs()).collect();
        Dist::from_counts(pairs, 1.0)
    }

    /// (value, count) pairs.
    pub fn pairs(&self) -> impl Iterator<Item = (f64, u64)> + '_ {
        self.values
            .iter()
            .zip(&self.cum)
            .scan(0u64, |prev, (&v, &c)| {
                let n = c - *prev;
                *prev = c;
                Some((v, n))
            })
    }

    /// Number of samples.
    pub fn n(&self) -> u64 {
        self.cum.last().copied().unwrap_or(0)
    }

    /// The sample of rank `k` (1-based) in sorted order.
    pub fn at_rank(&self, k: u64) -> f64 {
        let k = k.clamp(1, self.n().max(1));
        let i = self.cum.partition_point(|&c| c < k);
        self.values[i.min(self.values.len() - 1)]
    }

    /// The q-quantile as the order statistic of rank ⌈q·n⌉ (at least 1).
    pub fn quantile(&self, q: f64) -> f64 {
        self.at_rank(quantile_rank(q, self.n()))
    }

    /// Smallest value.
    pub fn min(&self) -> f64 {
        self.values[0]
    }

    /// Largest value.
    pub fn max(&self) -> f64 {
        self.values[self.values.len() - 1]
    }

    /// Arithmetic mean, exact to the last digits even with a large common offset (1e9 + small
    /// noise): the sum is taken of the values less one of them, compensated (`moments`).
    pub fn mean(&self) -> f64 {
        let shift = self.shift();
        shift + self.moments(shift).0
    }

    /// Sample variance (n − 1): the corrected two-pass algorithm over compensated sums
    /// (infinite only when it is beyond a double: deviations of 1e160).
    pub fn var(&self) -> f64 {
        let (_, v, k) = self.scaled_moments(self.shift());
        v * k * k
    }

    /// A value of the set to measure from (its median): subtracting it cancels a common offset
    /// exactly.
    pub(crate) fn shift(&self) -> f64 {
        if self.values.is_empty() {
            0.0
        } else {
            self.quantile(0.5)
        }
    }

    /// (mean − `shift`, sample variance), both from Neumaier-compensated sums of the values
    /// less `shift`; the variance's second pass is corrected by the first pass's residual
    /// (Chan, Golub & LeVeque's corrected two-pass algorithm). `shift` should lie inside the
    /// data (two sets measured from one shift give a difference of means without cancelling
    /// their offset).
    pub(crate) fn moments(&self, shift: f64) -> (f64, f64) {
        let (m, v, k) = self.scaled_moments(shift);
        (m, v * k * k)
    }

    /// [`moments`](Self::moments) with the variance of the deviations divided by a power of
    /// two `k` (exactly): (mean − `shift`, variance / k², k). Squares of deviations of 1e160
    /// would overflow and leave a variance of 0; scaled, the standard deviation is `k·√v`.
    fn scaled_moments(&self, shift: f64) -> (f64, f64, f64) {
        let n = self.n() as f64;
        if n == 0.0 {
            return (f64::NAN, 0.0, 1.0);
        }
        let mut s = Neumaier::default();
        for (v, c) in self.pairs() {
            s.add((v - shift) * c as f64);
        }
        let m = s.total() / n;
        if n < 2.0 {
            return (m, 0.0, 1.0);
        }
        let widest = self
            .pairs()
            .map(|(v, _)| ((v - shift) - m).abs())
            .fold(0.0f64, f64::max);
        // The power of two at or below the widest deviation (1 for none, or a non-finite one).
        let k = if widest.is_finite() && widest > 0.0 {
            2f64.powi(widest.log2().floor() as i32)
        } else {
            1.0
        };
        let (mut ss, mut r) = (Neumaier::default(), Neumaier::default());
        for (v, c) in self.pairs() {
            let d = ((v - shift) - m) / k;
            ss.add(d * d * c as f64);
            r.add(d * c as f64);
        }
        let r = r.total();
        (m, ((ss.total() - r * r / n) / (n - 1.0)).max(0.0), k)
    }

    /// Sample standard deviation.
    pub fn stddev(&self) -> f64 {
        let (_, v, k) = self.scaled_moments(self.shift());
        v.sqrt() * k
    }
}

/// A compensated (Kahan–Babuška–Neumaier) running sum: the rounding error of each addition is
/// kept and added back at the end, so a million terms sum to within an ulp or two.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Neumaier {
    sum: f64,
    comp: f64,
}

impl Neumaier {
    /// Adds `x`.
    pub(crate) fn add(&mut self, x: f64) {
        let t = self.sum + x;
        if self.sum.abs() >= x.abs() {
            self.comp += (self.sum - t) + x;
        } else {
            self.comp += (x - t) + self.sum;
        }
        self.sum = t;
    }

    /// The sum.
    pub(crate) fn total(&self) -> f64 {
        self.sum + self.comp
    }
}

/// Rank ⌈q·n⌉ clamped to 1..=n.
pub(crate) fn quantile_rank(q: f64, n: u64) -> u64 {
    ((q * n as f64).ceil() as u64).clamp(1, n.max(1))
}

/// The smallest N for which the q-quantile is estimable: at least 10 samples beyond it.
pub fn min_n_for(q: f64) -> u64 {
    // 1 − 0.9999 is 9.9999999999989e-5 in binary: without the relative nudge p99.99 would
    // need 100 001.
    (10.0 / (1.0 - q) * (1.0 - 1e-12)).ceil() as u64
}

#[cfg(test)]
mod tests {

    #[test]
    fn huge_deviations_do_not_overflow_the_standard_deviation() {
        let mut v: Vec<f64> = (1..=20).map(f64::from).collect();
        v.push(1e160);
        let d = Dist::from_values(v.clone());
        let n = v.len() as f64;
        let mean = v.iter().sum::<f64>() / n;
        let want = (v.iter().map(|x| ((x - mean) / 1e150).powi(2)).sum::<f64>() / (n - 1.0)).sqrt()
            * 1e150;
        assert!(
            (d.stddev() / want - 1.0).abs() < 1e-12,
            "{} vs {want}",
            d.stddev()
        );
        // Beyond a double, the variance says so rather than 0.
        assert_eq!(d.var(), f64::INFINITY);
        // Ordinary data is unchanged by the scaling.
        let d = Dist::from_values(vec![1.0, 2.0, 3.0, 4.0]);
        assert_eq!(d.var(), 5.0 / 3.0);
    }

    use super::*;

    #[test]
    fn counts_and_ranks() {
        let d = Dist::from_values(vec![3.0, 1.0, 2.0, 2.0, 5.0]);
        assert_eq!(d.values, vec![1.0, 2.0, 3.0, 5.0]);
        assert_eq!(d.cum, vec![1, 3, 4, 5]);
        assert_eq!(d.n(), 5);
        assert_eq!(
            (d.at_rank(1), d.at_rank(2), d.at_rank(3), d.at_rank(5)),
            (1.0, 2.0, 2.0, 5.0)
        );
        assert_eq!(d.quantile(0.5), 2.0);
        assert_eq!(d.quantile(0.99), 5.0);
        assert!((d.mean() - 2.6).abs() < 1e-12);
        assert!((d.var() - 2.3).abs() < 1e-12);
        let m = Dist::merge(&[d.clone(), d.clone()]);
        assert_eq!(m.n(), 10);
        assert_eq!(m.cum, vec![2, 6, 8, 10]);
    }

    /// Mean and variance of 1e9 + noise against the exact values of the same f64 values
    /// (Python's fractions): mean − 1e9 = 0.0037648323953151704, variance 1.0139069487958947.
    #[test]
    fn moments_are_exact_under_a_large_offset() {
        let d = crate::stats::hypothesis::tests::offset_set(1, 0.0);
        assert_eq!(d.n(), 100_000);
        let (m, v) = d.moments(1e9);
        assert!((m - MEAN_MINUS_1E9).abs() < 1e-13, "{m}");
        assert!((v / VAR - 1.0).abs() < 1e-12, "{v}");
        assert!((d.mean() - (1e9 + MEAN_MINUS_1E9)).abs() <= 1.2e-7);
        assert!((d.var() / VAR - 1.0).abs() < 1e-12);
    }

    const MEAN_MINUS_1E9: f64 = 0.0037648323953151704;
    const VAR: f64 = 1.0139069487958947;

    #[test]
    fn estimable_sizes() {
        assert_eq!(min_n_for(0.999), 10_000);
        assert_eq!(min_n_for(0.99), 1000);
        assert_eq!(min_n_for(0.9999), 100_000);
        assert_eq!(min_n_for(0.5), 20);
        assert_eq!(min_n_for(0.9), 100);
    }
}
