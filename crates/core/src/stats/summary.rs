//! The hot-path recorder (exact count/min/max/sum plus an HDR histogram) and the summary
//! statistics it yields.

use super::histogram::LatHistogram;
use serde::{Deserialize, Serialize};

/// Records latencies with no allocation: exact integer moments plus a histogram.
#[derive(Debug, Clone)]
pub struct Recorder {
    /// Number of samples.
    pub count: u64,
    /// Smallest sample (u64::MAX when empty).
    pub(crate) min: u64,
    /// Largest sample, exact (not bucketed).
    pub max: u64,
    /// Sum of samples.
    pub sum: u128,
    /// Sum of squared samples.
    pub(crate) sum_sq: u128,
    /// Full-range histogram.
    pub hist: LatHistogram,
}

impl Default for Recorder {
    fn default() -> Self {
        Self::new()
    }
}

impl Recorder {
    /// An empty recorder; the histogram is allocated here, not on first use.
    pub fn new() -> Self {
        Recorder {
            count: 0,
            min: u64::MAX,
            max: 0,
            sum: 0,
            sum_sq: 0,
            hist: LatHistogram::new(),
        }
    }

    /// Records one sample.
    #[inline(always)]
    pub fn record(&mut self, ns: u64) {
        self.count += 1;
        if ns < self.min {
            self.min = ns;
        }
        if ns > self.max {
            self.max = ns;
        }
        self.sum += ns as u128;
        self.sum_sq += (ns as u128) * (ns as u128);
        self.hist.record(ns);
    }

    /// Records `n` samples of `ns` (a histogram's bucket, read back).
    pub fn record_n(&mut self, ns: u64, n: u64) {
        if n == 0 {
            return;
        }
        self.count += n;
        self.min = self.min.min(ns);
        self.max = self.max.max(ns);
        self.sum += ns as u128 * n as u128;
        self.sum_sq += (ns as u128) * (ns as u128) * n as u128;
        self.hist.record_n(ns, n);
    }

    /// Empties the recorder, keeping its histogram's memory (no allocation).
    pub fn reset(&mut self) {
        self.count = 0;
        self.min = u64::MAX;
        self.max = 0;
        self.sum = 0;
        self.sum_sq = 0;
        self.hist.reset();
    }

    /// Adds everything `other` recorded.
    pub fn merge(&mut self, other: &Recorder) {
        if other.count == 0 {
            return;
        }
        self.count += other.count;
        self.sum += other.sum;
        self.sum_sq += other.sum_sq;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
        self.hist.add(&other.hist);
    }

    /// A recorder holding what a stored series summarised: its histogram, count, exact min and
    /// max, and the sums its mean and (sample) standard deviation imply (rounded), so stored
    /// intervals merge into one.
    pub fn from_stored(s: &Summary, hist: &super::HistogramData) -> Recorder {
        let n = s.count as f64;
        let sum = (s.mean_ns * n).round().max(0.0);
        let var = s.stddev_ns * s.stddev_ns;
        let sum_sq = ((n - 1.0).max(0.0) * var + n * s.mean_ns * s.mean_ns)
            .round()
            .max(0.0);
        Recorder {
            count: s.count,
            min: if s.count == 0 { u64::MAX } else { s.min_ns },
            max: s.max_ns,
            sum: sum as u128,
            sum_sq: sum_sq as u128,
            hist: LatHistogram::from_data(hist),
        }
    }

    /// Mean in ns (0 when empty).
    pub(crate) fn mean(&self) -> f64 {
        mean_of(self.count, self.sum)
    }

    /// Sample standard deviation in ns (n−1 denominator; 0 below two samples).
    pub(crate) fn stddev(&self) -> f64 {
        stddev_of(self.count, self.sum, self.sum_sq)
    }

    /// [`Recorder::summary`] and the histogram's [`LatHistogram::to_data`], with one pass over
    /// the histogram (the percentiles are read off the buckets).
    pub fn summary_and_data(&self) -> (Summary, super::HistogramData) {
        let data = self.hist.to_data();
        let summary = Summary {
            count: self.count,
            min_ns: if self.count == 0 { 0 } else { self.min },
            max_ns: self.max,
            mean_ns: self.mean(),
            stddev_ns: self.stddev(),
            percentiles: Percentiles::from_buckets(&data.buckets).capped(self.max),
        };
        (summary, data)
    }

    /// The summary of everything recorded.
    pub fn summary(&self) -> Summary {
        let empty = self.count == 0;
        Summary {
            count: self.count,
            min_ns: if empty { 0 } else { self.min },
            max_ns: self.max,
            mean_ns: self.mean(),
            stddev_ns: self.stddev(),
            percentiles: Percentiles::from_hist(&self.hist).capped(self.max),
        }
    }
}

fn mean_of(count: u64, sum: u128) -> f64 {
    if count == 0 {
        0.0
    } else {
        sum as f64 / count as f64
    }
}

fn stddev_of(count: u64, sum: u128, sum_sq: u128) -> f64 {
    if count < 2 {
        return 0.0;
    }
    let n = count as f64;
    // Exact integer arithmetic for n·Σx² − (Σx)², then one division.
    let num = (count as u128)
        .checked_mul(sum_sq)
        .and_then(|a| a.checked_sub(sum * sum));
    match num {
        Some(v) => (v as f64 / (n * (n - 1.0))).sqrt(),
        None => {
            let mean = sum as f64 / n;
            let var = (sum_sq as f64 - n * mean * mean) / (n - 1.0);
            var.max(0.0).sqrt()
        }
    }
}

/// What a [`Recorder`] of `values` would give as [`Recorder::summary_and_data`], without
/// filling one: `values` are sorted in place and each bucket's value comes from `shape`
/// (any latlab histogram: only its bucket layout is used). For a few values this skips
/// zeroing and scanning a histogram of ~350 KiB.
pub fn summarise_values(
    values: &mut [u64],
    shape: &LatHistogram,
) -> (Summary, super::HistogramData) {
    values.sort_unstable();
    let (mut sum, mut sum_sq) = (0u128, 0u128);
    let mut buckets: Vec<[u64; 2]> = Vec::new();
    for &v in values.iter() {
        sum += v as u128;
        sum_sq += (v as u128) * (v as u128);
        let b = shape.bucket_of(v);
        match buckets.last_mut() {
            Some(last) if last[0] == b => last[1] += 1,
            _ => buckets.push([b, 1]),
        }
    }
    let count = values.len() as u64;
    let max = values.last().copied().unwrap_or(0);
    let summary = Summary {
        count,
        min_ns: values.first().copied().unwrap_or(0),
        max_ns: max,
        mean_ns: mean_of(count, sum),
        stddev_ns: stddev_of(count, sum, sum_sq),
        percentiles: Percentiles::from_buckets(&buckets).capped(max),
    };
    (summary, super::HistogramData::of_buckets(buckets))
}

/// Summary statistics of one series, in nanoseconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Number of samples.
    pub count: u64,
    /// Exact minimum.
    pub min_ns: u64,
    /// Exact maximum.
    pub max_ns: u64,
    /// Exact mean.
    pub mean_ns: f64,
    /// Sample standard deviation (n−1).
    pub stddev_ns: f64,
    /// Percentiles from the HDR histogram (within 0.1%).
    pub percentiles: Percentiles,
}

/// The quantiles of [`Percentiles`], in its fields' order.
const QUANTILES: [f64; 5] = [0.5, 0.9, 0.99, 0.999, 0.9999];

/// The percentiles latlab reports, in ns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Percentiles {
    /// 50th percentile (median).
    pub p50: u64,
    /// 90th percentile.
    pub p90: u64,
    /// 99th percentile.
    pub p99: u64,
    /// 99.9th percentile.
    pub p99_9: u64,
    /// 99.99th percentile.
    pub p99_99: u64,
}

impl Percentiles {
    /// p50, p90, p99, p99.9 and p99.99, each where `count` samples support it (at least
    /// 10/(1 − q): 20, 100, 1000, 10 000, 100 000, the rule `compare` applies) and None where
    /// they do not: a table shows "-" rather than a p99.99 that is just the max.
    pub fn supported(&self, count: u64) -> [Option<u64>; 5] {
        let ok = |q: f64| count >= super::dist::min_n_for(q);
        [
            ok(0.5).then_some(self.p50),
            ok(0.9).then_some(self.p90),
            ok(0.99).then_some(self.p99),
            ok(0.999).then_some(self.p99_9),
            ok(0.9999).then_some(self.p99_99),
        ]
    }

    /// The same percentiles, none above `max` (a histogram bucket's top can exceed the exact
    /// maximum recorded in it).
    pub fn capped(self, max: u64) -> Self {
        Percentiles {
            p50: self.p50.min(max),
            p90: self.p90.min(max),
            p99: self.p99.min(max),
            p99_9: self.p99_9.min(max),
            p99_99: self.p99_99.min(max),
        }
    }

    /// Raises every percentile to at least `min`: a histogram of bucket floors (an imported
    /// table) can put them below the exact minimum the tool reported.
    pub fn floored(self, min: u64) -> Self {
        Percentiles {
            p50: self.p50.max(min),
            p90: self.p90.max(min),
            p99: self.p99.max(min),
            p99_9: self.p99_9.max(min),
            p99_99: self.p99_99.max(min),
        }
    }

    /// The percentiles [`Percentiles::from_hist`] reads off a histogram, read off its
    /// non-empty buckets (ascending `[value, count]`, as [`LatHistogram::to_data`] lists them):
    /// for each quantile q the first bucket where the running count reaches ⌈q·n⌉ (at least 1).
    pub(crate) fn from_buckets(buckets: &[[u64; 2]]) -> Self {
        let total: u64 = buckets.iter().map(|b| b[1]).sum();
        let mut out = [0u64; 5];
        let (mut seen, mut i) = (0u64, 0usize);
        for (o, q) in out.iter_mut().zip(QUANTILES) {
            let target = ((q * total as f64).ceil() as u64).max(1);
            while seen < target && i < buckets.len() {
                seen += buckets[i][1];
                i += 1;
            }
            *o = if total == 0 { 0 } else { buckets[i - 1][0] };
        }
        Percentiles::of(out)
    }

    /// Reads the percentiles off a histogram (all zero when empty).
    pub fn from_hist(h: &LatHistogram) -> Self {
        if h.is_empty() {
            return Percentiles::of([0; 5]);
        }
        Percentiles::of(h.quantiles(QUANTILES))
    }

    /// p50, p90, p99, p99.9 and p99.99 in that order.
    fn of([p50, p90, p99, p99_9, p99_99]: [u64; 5]) -> Self {
        Percentiles {
            p50,
            p90,
            p99,
            p99_9,
            p99_99,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_pass_and_recorder_free_summaries_agree_with_the_recorders() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut shape = Recorder::new();
        shape.record(7); // what a reused scratch held must not matter
        for round in 0..400 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let n = [0, 1, 2, 3, 10, 100, 1000, 4096][round % 8];
            let mut values: Vec<u64> = (0..n)
                .map(|i| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    match (x >> 3) % 6 {
                        0 => 0,
                        1 => x % 1000,
                        2 => x % 10_000_000,
                        3 => super::super::histogram::HIGHEST_NS + x % 1000,
                        4 => (1u64 << 50) - (i as u64),
                        _ => x % 5_000_000_000,
                    }
                })
                .collect();
            let mut r = Recorder::new();
            values.iter().for_each(|&v| r.record(v));
            let want = (r.summary(), r.hist.to_data());
            assert_eq!(r.summary_and_data(), want, "n={n}");
            assert_eq!(summarise_values(&mut values, &shape.hist), want, "n={n}");
        }
    }

    #[test]
    fn reset_empties_everything() {
        let mut r = Recorder::new();
        for v in [5, 7, 1_000_000] {
            r.record(v);
        }
        r.reset();
        assert_eq!(
            (r.count, r.min, r.max, r.sum, r.sum_sq),
            (0, u64::MAX, 0, 0, 0)
        );
        assert!(r.hist.is_empty());
        r.record(9);
        assert_eq!((r.count, r.min, r.max), (1, 9, 9));
        assert_eq!(r.hist.len(), 1);
    }

    fn naive(v: &[u64]) -> (u64, u64, f64, f64) {
        let n = v.len() as f64;
        let mean = v.iter().map(|&x| x as f64).sum::<f64>() / n;
        let var = v.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / (n - 1.0);
        (
            *v.iter().min().unwrap(),
            *v.iter().max().unwrap(),
            mean,
            var.sqrt(),
        )
    }

    #[test]
    fn percentiles_never_exceed_the_exact_max() {
        let mut r = Recorder::new();
        r.record(123_457);
        let s = r.summary();
        assert_eq!(s.max_ns, 123_457);
        assert_eq!(s.percentiles.p50, 123_457, "the bucket's top is 123_519");
        assert_eq!(s.percentiles.p99_99, 123_457);
    }

    #[test]
    fn matches_naive_reference() {
        let mut seed = 0x2545F4914F6CDD1Du64;
        let v: Vec<u64> = (0..5000)
            .map(|_| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                seed % 2_000_000
            })
            .collect();
        let mut r = Recorder::new();
        v.iter().for_each(|&x| r.record(x));
        let s = r.summary();
        let (min, max, mean, sd) = naive(&v);
        assert_eq!((s.count, s.min_ns, s.max_ns), (5000, min, max));
        assert!((s.mean_ns - mean).abs() < 1e-6 * mean);
        assert!((s.stddev_ns - sd).abs() < 1e-6 * sd);
        let mut sorted = v.clone();
        sorted.sort_unstable();
        let p99 = sorted[(0.99f64 * 5000.0).ceil() as usize - 1] as f64;
        assert!((s.percentiles.p99 as f64 - p99).abs() <= p99 * 1e-3 + 1.0);
    }

    #[test]
    fn a_percentile_is_shown_only_where_its_count_supports_it() {
        let mut r = Recorder::new();
        (1..=1987u64).for_each(|v| r.record(v * 1000));
        let s = r.summary();
        let got = s.percentiles.supported(s.count);
        assert!(got[..3].iter().all(Option::is_some), "{got:?}");
        assert_eq!(got[3..], [None, None]);
        assert_eq!(s.percentiles.supported(100_000).iter().flatten().count(), 5);
        assert_eq!(s.percentiles.supported(19).iter().flatten().count(), 0);
    }

    #[test]
    fn empty_and_single() {
        let mut r = Recorder::new();
        assert_eq!(r.summary().count, 0);
        assert_eq!(r.summary().min_ns, 0);
        r.record(42);
        let s = r.summary();
        assert_eq!((s.min_ns, s.max_ns, s.stddev_ns), (42, 42, 0.0));
    }
}
