//! A full-range HDR latency histogram (1 ns .. 1 h at 3 significant digits) and its
//! serialisable form. Nothing is lost to an overflow bucket: values above one hour are clamped
//! into the top bucket and the exact maximum is kept by the recorder beside it.

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Highest value the histogram resolves: one hour in nanoseconds.
pub const HIGHEST_NS: u64 = 3_600_000_000_000;
/// Significant decimal digits kept (relative error at most 0.1%).
pub(crate) const SIGFIG: u8 = 3;

/// An HDR histogram of nanosecond values, preallocated: `record` never allocates.
#[derive(Clone)]
pub struct LatHistogram {
    h: Histogram<u64>,
}

impl std::fmt::Debug for LatHistogram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "LatHistogram(n={})", self.h.len())
    }
}

impl Default for LatHistogram {
    fn default() -> Self {
        Self::new()
    }
}

impl LatHistogram {
    /// A new empty histogram covering 1 ns .. 1 h.
    pub fn new() -> Self {
        let mut h = Histogram::new_with_bounds(1, HIGHEST_NS, SIGFIG)
            .expect("constant histogram bounds are valid");
        h.auto(false);
        LatHistogram { h }
    }

    /// Records one value; values beyond one hour land in the top bucket.
    #[inline(always)]
    pub fn record(&mut self, ns: u64) {
        let v = if ns > HIGHEST_NS { HIGHEST_NS } else { ns };
        // Cannot fail: v is within the bounds fixed at construction.
        let _ = self.h.record(v);
    }

    /// Records `count` copies of `ns`.
    pub fn record_n(&mut self, ns: u64, count: u64) {
        let v = ns.min(HIGHEST_NS);
        let _ = self.h.record_n(v, count);
    }

    /// Number of values recorded.
    #[cfg(test)]
    pub(crate) fn len(&self) -> u64 {
        self.h.len()
    }

    /// True when nothing was recorded.
    pub(crate) fn is_empty(&self) -> bool {
        self.h.is_empty()
    }

    /// The value at quantile `q` (0..=1): the highest value equivalent to the sample of rank
    /// ceil(q·n), so within 0.1% of the exact order statistic.
    pub fn quantile(&self, q: f64) -> u64 {
        self.h.value_at_quantile(q)
    }

    /// [`LatHistogram::quantile`] of each of `qs` (ascending), in one pass over the buckets.
    pub(crate) fn quantiles<const N: usize>(&self, qs: [f64; N]) -> [u64; N] {
        let mut out = [0; N];
        for (o, v) in out.iter_mut().zip(self.h.value_at_quantiles(qs)) {
            *o = v;
        }
        out
    }

    /// Empties the histogram, keeping its memory.
    pub(crate) fn reset(&mut self) {
        self.h.reset();
    }

    /// Adds every value of `other`.
    pub fn add(&mut self, other: &LatHistogram) {
        let _ = self.h.add(&other.h);
    }

    /// The serialisable form: each non-empty bucket as `[value, count]`.
    pub fn to_data(&self) -> HistogramData {
        HistogramData::of_buckets(
            self.h
                .iter_recorded()
                .map(|v| [v.value_iterated_to(), v.count_at_value()])
                .collect(),
        )
    }

    /// The value a bucket of [`LatHistogram::to_data`] stands for when it holds `ns`: the
    /// highest value equivalent to it (values beyond one hour: the top bucket's).
    pub(crate) fn bucket_of(&self, ns: u64) -> u64 {
        self.h.highest_equivalent(ns.min(HIGHEST_NS))
    }

    /// Rebuilds a histogram from its serialisable form.
    pub(crate) fn from_data(d: &HistogramData) -> Self {
        let mut h = LatHistogram::new();
        for [v, c] in &d.buckets {
            h.record_n(*v, *c);
        }
        h
    }
}

impl HistogramData {
    /// latlab's histogram parameters with these buckets (ascending, non-empty).
    pub(crate) fn of_buckets(buckets: Vec<[u64; 2]>) -> HistogramData {
        HistogramData {
            format: "hdr-buckets/1".into(),
            lowest_ns: 1,
            highest_ns: HIGHEST_NS,
            significant_digits: SIGFIG,
            buckets,
        }
    }
}

/// A histogram as stored in results: HDR parameters and the non-empty buckets, each
/// `[highest value equivalent to the bucket in ns, count]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HistogramData {
    /// Always `hdr-buckets/1`.
    pub(crate) format: String,
    /// Lowest discernible value (ns).
    pub lowest_ns: u64,
    /// Highest trackable value (ns).
    pub highest_ns: u64,
    /// Significant decimal digits.
    pub significant_digits: u8,
    /// Non-empty buckets as `[value_ns, count]`.
    pub buckets: Vec<[u64; 2]>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_through_data() {
        let mut h = LatHistogram::new();
        for v in [
            0u64,
            1,
            5,
            999,
            1000,
            1001,
            123_456,
            7_000_000,
            50_000_000_000,
            u64::MAX,
        ] {
            h.record(v);
        }
        let d = h.to_data();
        let back = LatHistogram::from_data(&d);
        assert_eq!(back.to_data(), d);
        assert_eq!(back.len(), 10);
        let json = serde_json::to_string(&d).unwrap();
        let d2: HistogramData = serde_json::from_str(&json).unwrap();
        assert_eq!(d2, d);
    }

    #[test]
    fn quantiles_within_resolution_of_exact() {
        let mut h = LatHistogram::new();
        let mut v: Vec<u64> = (0..10_000u64).map(|i| (i * 7919) % 100_003 + 17).collect();
        for &x in &v {
            h.record(x);
        }
        v.sort_unstable();
        for q in [0.5, 0.9, 0.99, 0.999] {
            let rank = ((q * v.len() as f64).ceil() as usize).max(1) - 1;
            let exact = v[rank] as f64;
            let got = h.quantile(q) as f64;
            assert!(
                (got - exact).abs() <= exact * 1e-3 + 1.0,
                "q={q} exact={exact} got={got}"
            );
        }
    }

    #[test]
    fn one_pass_quantiles_are_the_single_ones() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for n in [1u64, 2, 3, 10, 999, 20_000] {
            let mut h = LatHistogram::new();
            for _ in 0..n {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                h.record((1 + (x % 5_000_000)) >> (x % 20));
            }
            let qs = [0.0, 0.5, 0.9, 0.99, 0.999, 0.9999, 1.0];
            let one = h.quantiles(qs);
            assert_eq!(one, qs.map(|q| h.quantile(q)), "n={n}");
        }
        assert_eq!(LatHistogram::new().quantiles([0.5, 0.99]), [0, 0]);
    }
}
