//! Per-CPU figures a measuring thread publishes for the monitor's endpoint: fixed latency buckets
//! and counters in relaxed atomics, written by that one thread with plain loads and stores (no
//! lock, no allocation, no read-modify-write except when a new window maximum appears), read at
//! any time by the HTTP and snapshot threads.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Upper bounds of the latency buckets in ns (classic, identical on every host so histograms
/// aggregate across a fleet): 5, 10, 20, 50, 100, 200, 500 µs, 1, 2, 5, 10, 20, 50, 100 ms; a
/// last bucket takes everything above.
pub const BOUNDS_NS: [u64; 14] = [
    5_000,
    10_000,
    20_000,
    50_000,
    100_000,
    200_000,
    500_000,
    1_000_000,
    2_000_000,
    5_000_000,
    10_000_000,
    20_000_000,
    50_000_000,
    100_000_000,
];

/// Number of buckets: one per bound plus +Inf.
pub const BUCKETS: usize = BOUNDS_NS.len() + 1;

/// One measuring thread's published figures. Cache-line aligned so threads never share a line.
#[repr(align(64))]
#[derive(Debug)]
pub struct Tally {
    /// Latencies above this count as exceedances (u64::MAX: no threshold).
    pub threshold_ns: u64,
    /// Samples per bucket (not cumulative); the last is +Inf.
    pub buckets: [AtomicU64; BUCKETS],
    /// Sum of samples (ns), wrapping.
    pub sum_ns: AtomicU64,
    /// Largest sample since the start (ns).
    pub max_ns: AtomicU64,
    /// Largest sample since the reader last took it (ns); the reader swaps in 0.
    pub window_max_ns: AtomicU64,
    /// Missed periods.
    pub overruns: AtomicU64,
    /// Samples the snapshot ring could not take (the snapshot thread fell behind).
    pub lost: AtomicU64,
    /// Samples above `threshold_ns`.
    pub exceeded: AtomicU64,
}

impl Tally {
    /// A zeroed tally with an exceedance threshold (u64::MAX: none).
    pub fn new(threshold_ns: u64) -> Tally {
        Tally {
            threshold_ns,
            buckets: std::array::from_fn(|_| AtomicU64::new(0)),
            sum_ns: AtomicU64::new(0),
            max_ns: AtomicU64::new(0),
            window_max_ns: AtomicU64::new(0),
            overruns: AtomicU64::new(0),
            lost: AtomicU64::new(0),
            exceeded: AtomicU64::new(0),
        }
    }

    /// The bucket a latency falls in.
    #[inline(always)]
    pub fn bucket_of(ns: u64) -> usize {
        BOUNDS_NS.partition_point(|&b| b < ns)
    }

    /// Counts one sample. Only the owning thread calls this.
    #[inline(always)]
    pub fn observe(&self, ns: u64) {
        let b = &self.buckets[Self::bucket_of(ns)];
        b.store(b.load(Relaxed) + 1, Relaxed);
        self.sum_ns
            .store(self.sum_ns.load(Relaxed).wrapping_add(ns), Relaxed);
        if ns > self.max_ns.load(Relaxed) {
            self.max_ns.store(ns, Relaxed);
        }
        if ns > self.window_max_ns.load(Relaxed) {
            // The reader may reset it concurrently: an atomic max never loses either side.
            self.window_max_ns.fetch_max(ns, Relaxed);
        }
        if ns > self.threshold_ns {
            self.exceeded
                .store(self.exceeded.load(Relaxed) + 1, Relaxed);
        }
    }

    /// Publishes the owning thread's overrun count.
    #[inline(always)]
    pub fn set_overruns(&self, n: u64) {
        self.overruns.store(n, Relaxed);
    }

    /// Publishes the owning thread's lost-sample count.
    #[inline(always)]
    pub fn set_lost(&self, n: u64) {
        self.lost.store(n, Relaxed);
    }

    /// The bucket counts now (not cumulative) and their total.
    pub fn read_buckets(&self) -> ([u64; BUCKETS], u64) {
        let b: [u64; BUCKETS] = std::array::from_fn(|i| self.buckets[i].load(Relaxed));
        let n = b.iter().sum();
        (b, n)
    }

    /// Takes the maximum since the previous call, starting a new window.
    pub fn take_window_max(&self) -> u64 {
        self.window_max_ns.swap(0, Relaxed)
    }
}

impl crate::rt::Tap for Tally {
    #[inline(always)]
    fn observe(&self, ns: u64) {
        Tally::observe(self, ns);
    }

    #[inline(always)]
    fn set_overruns(&self, n: u64) {
        Tally::set_overruns(self, n);
    }

    #[inline(always)]
    fn set_lost(&self, n: u64) {
        Tally::set_lost(self, n);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_upper_inclusive_and_overflow_goes_last() {
        assert_eq!(Tally::bucket_of(0), 0);
        assert_eq!(Tally::bucket_of(5_000), 0);
        assert_eq!(Tally::bucket_of(5_001), 1);
        assert_eq!(Tally::bucket_of(100_000_000), 13);
        assert_eq!(Tally::bucket_of(100_000_001), 14);
        assert_eq!(Tally::bucket_of(u64::MAX), 14);
    }

    #[test]
    fn observe_counts_max_window_and_threshold() {
        let t = Tally::new(50_000);
        for ns in [1_000, 60_000, 7_000_000, 2_000] {
            t.observe(ns);
        }
        let (b, n) = t.read_buckets();
        assert_eq!(n, 4);
        assert_eq!(b[0], 2);
        assert_eq!(b[4], 1);
        assert_eq!(b[10], 1);
        assert_eq!(t.max_ns.load(Relaxed), 7_000_000);
        assert_eq!(t.exceeded.load(Relaxed), 2);
        assert_eq!(t.take_window_max(), 7_000_000);
        assert_eq!(t.take_window_max(), 0);
        t.observe(3_000);
        assert_eq!(t.take_window_max(), 3_000);
        assert_eq!(t.max_ns.load(Relaxed), 7_000_000);
    }
}
