//! Per-CPU figures a measuring thread publishes for the monitor's endpoint: fixed latency buckets
//! and counters in relaxed atomics, written by that one thread with plain loads and stores (no
//! lock, no allocation, no read-modify-write except when a new window maximum appears), read at
//! any time by the HTTP and snapshot threads.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Mantissas (×10) of the bounds in each decade: steps of 1 from 10, 2 from 20, 5 from 50, so
/// no bucket is more than 10 % wider than its lower bound and every 1-2-5 value is a bound.
const MANTISSAS: [u64; 35] = [
    10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 22, 24, 26, 28, 30, 32, 34, 36, 38, 40, 42, 44, 46,
    48, 50, 55, 60, 65, 70, 75, 80, 85, 90, 95,
];

/// Decades covered: 1 µs to 100 ms.
const DECADES: usize = 5;

/// Upper bounds of the latency buckets in ns, identical on every host so histograms aggregate
/// across a fleet: 35 per decade from 1 µs to 100 ms (1, 1.1, 1.2, ... 9.5 µs, 10 µs, ...), then
/// 100 ms; a last bucket takes everything above. A bucket's upper bound is at most 10 % above
/// its lower, so `histogram_quantile` (which interpolates inside one bucket) is within 10 % of
/// the exact quantile from 1 µs to 100 ms.
pub(crate) const BOUNDS_NS: [u64; 35 * DECADES + 1] = bounds();

const fn bounds() -> [u64; 35 * DECADES + 1] {
    let mut out = [0u64; 35 * DECADES + 1];
    let mut d = 0;
    let mut scale = 100u64;
    while d < DECADES {
        let mut i = 0;
        while i < MANTISSAS.len() {
            out[d * MANTISSAS.len() + i] = MANTISSAS[i] * scale;
            i += 1;
        }
        scale *= 10;
        d += 1;
    }
    out[35 * DECADES] = 100_000_000;
    out
}

/// Number of buckets: one per bound plus +Inf.
pub(crate) const BUCKETS: usize = BOUNDS_NS.len() + 1;

/// Schema of the native (sparse exponential) histogram: 2^3 = 8 buckets per power of two, each
/// bound 2^(1/8) = 1.09 times the one below, about the resolution of the fixed buckets (at most
/// 1.10) and of `histogram_quantile` over them.
pub(crate) const NATIVE_SCHEMA: i32 = 3;
/// Native index of the first bucket above the zero bucket: bucket `i` holds (2^((i-1)/8),
/// 2^(i/8)] seconds, so the zero bucket takes [0, 2^-24 s] (up to 59.6 ns, less than any
/// timer wake-up) and the first bucket starts there.
pub(crate) const NATIVE_FIRST: i32 = -24 * 8 + 1;
/// Native index of the last bucket, (2^(55/8), 2^7] = up to 128 s; a larger latency is counted
/// in it (the exact maximum is its own gauge).
pub(crate) const NATIVE_LAST: i32 = 7 * 8;
/// Native buckets kept per CPU.
pub(crate) const NATIVE_BUCKETS: usize = (NATIVE_LAST - NATIVE_FIRST + 1) as usize;
/// Upper bound of the zero bucket (s).
pub(crate) const NATIVE_ZERO_THRESHOLD: f64 = 1.0 / (1u64 << 24) as f64;

/// Upper bounds (ns, rounded down: a latency in whole ns is at most the bound exactly when it
/// is at most its floor) of the native buckets, first to last, and of the zero bucket first.
static NATIVE_BOUNDS_NS: std::sync::LazyLock<[u64; NATIVE_BUCKETS + 1]> =
    std::sync::LazyLock::new(|| {
        std::array::from_fn(|k| {
            let i = NATIVE_FIRST - 1 + k as i32;
            (2f64.powf(i as f64 / 8.0) * 1e9).floor() as u64
        })
    });

/// One measuring thread's published figures. Cache-line aligned so threads never share a line.
#[repr(align(64))]
#[derive(Debug)]
pub struct Tally {
    /// Latencies above this count as exceedances (u64::MAX: no threshold).
    pub(crate) threshold_ns: u64,
    /// Samples per bucket (not cumulative); the last is +Inf.
    pub(crate) buckets: [AtomicU64; BUCKETS],
    /// Samples per native bucket ([`NATIVE_FIRST`] first; the zero bucket is
    /// `native_zero`).
    pub(crate) native: [AtomicU64; NATIVE_BUCKETS],
    /// Samples in the native zero bucket (at most [`NATIVE_ZERO_THRESHOLD`]).
    pub(crate) native_zero: AtomicU64,
    /// The latest sample above the threshold: its number (the measuring loop's, from 1; 0:
    /// none yet), written after `spike_ns` so a reader that sees the same number before and
    /// after reading `spike_ns` read that sample's latency.
    pub(crate) spike_seq: AtomicU64,
    /// That sample's latency (ns).
    pub(crate) spike_ns: AtomicU64,
    /// Sum of samples (ns), wrapping.
    pub(crate) sum_ns: AtomicU64,
    /// Largest sample since the start (ns).
    pub(crate) max_ns: AtomicU64,
    /// Largest sample in the open window (ns); the window clock swaps in 0 when it closes one.
    pub(crate) window_max_ns: AtomicU64,
    /// Missed periods.
    pub(crate) overruns: AtomicU64,
    /// Samples the snapshot ring could not take (the snapshot thread fell behind).
    pub(crate) lost: AtomicU64,
    /// Samples above `threshold_ns`.
    pub(crate) exceeded: AtomicU64,
    /// Wake-ups made on another CPU than the pinned one (another process moved the thread).
    pub(crate) strayed: AtomicU64,
    /// The last such other CPU.
    pub(crate) strayed_cpu: AtomicU64,
}

impl Tally {
    /// A zeroed tally with an exceedance threshold (u64::MAX: none).
    pub fn new(threshold_ns: u64) -> Tally {
        Tally {
            threshold_ns,
            buckets: std::array::from_fn(|_| AtomicU64::new(0)),
            native: std::array::from_fn(|_| AtomicU64::new(0)),
            native_zero: AtomicU64::new(0),
            spike_seq: AtomicU64::new(0),
            spike_ns: AtomicU64::new(0),
            sum_ns: AtomicU64::new(0),
            max_ns: AtomicU64::new(0),
            window_max_ns: AtomicU64::new(0),
            overruns: AtomicU64::new(0),
            lost: AtomicU64::new(0),
            exceeded: AtomicU64::new(0),
            strayed: AtomicU64::new(0),
            strayed_cpu: AtomicU64::new(0),
        }
    }

    /// The bucket a latency falls in.
    #[inline(always)]
    pub(crate) fn bucket_of(ns: u64) -> usize {
        BOUNDS_NS.partition_point(|&b| b < ns)
    }

    /// The native bucket a latency falls in: `None` for the zero bucket, else its offset from
    /// [`NATIVE_FIRST`].
    #[inline(always)]
    pub(crate) fn native_of(ns: u64) -> Option<usize> {
        let b = &*NATIVE_BOUNDS_NS;
        match b.partition_point(|&x| x < ns) {
            0 => None,
            k => Some((k - 1).min(NATIVE_BUCKETS - 1)),
        }
    }

    /// Counts sample number `seq` (from 1). Only the owning thread calls this.
    #[inline(always)]
    pub fn observe(&self, ns: u64, seq: u64) {
        let b = &self.buckets[Self::bucket_of(ns)];
        b.store(b.load(Relaxed) + 1, Relaxed);
        let n = match Self::native_of(ns) {
            Some(i) => &self.native[i],
            None => &self.native_zero,
        };
        n.store(n.load(Relaxed) + 1, Relaxed);
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
            self.spike_seq.store(0, Relaxed);
            self.spike_ns.store(ns, std::sync::atomic::Ordering::Release);
            self.spike_seq
                .store(seq, std::sync::atomic::Ordering::Release);
        }
    }

    /// The latest sample above the threshold, (number, ns), if any (None while the owning
    /// thread is writing it: the next read has it).
    pub(crate) fn last_spike(&self) -> Option<(u64, u64)> {
        use std::sync::atomic::Ordering::Acquire;
        let seq = self.spike_seq.load(Acquire);
        let ns = self.spike_ns.load(Acquire);
        (seq != 0 && self.spike_seq.load(Acquire) == seq).then_some((seq, ns))
    }

    /// The native buckets now: zero bucket count, and per bucket from [`NATIVE_FIRST`] (not
    /// cumulative).
    pub(crate) fn read_native(&self) -> (u64, [u64; NATIVE_BUCKETS]) {
        (
            self.native_zero.load(Relaxed),
            std::array::from_fn(|i| self.native[i].load(Relaxed)),
        )
    }

    /// Publishes the owning thread's overrun count.
    #[inline(always)]
    pub(crate) fn set_overruns(&self, n: u64) {
        self.overruns.store(n, Relaxed);
    }

    /// Publishes the owning thread's lost-sample count.
    #[inline(always)]
    pub(crate) fn set_lost(&self, n: u64) {
        self.lost.store(n, Relaxed);
    }

    /// Publishes the owning thread's count of wake-ups on another CPU, and that CPU.
    #[inline(always)]
    pub(crate) fn set_strayed(&self, n: u64, cpu: usize) {
        self.strayed_cpu.store(cpu as u64, Relaxed);
        self.strayed.store(n, Relaxed);
    }

    /// The bucket counts now (not cumulative) and their total.
    pub(crate) fn read_buckets(&self) -> ([u64; BUCKETS], u64) {
        let b: [u64; BUCKETS] = std::array::from_fn(|i| self.buckets[i].load(Relaxed));
        let n = b.iter().sum();
        (b, n)
    }

    /// Takes the maximum since the previous call, starting a new window (only the window clock
    /// calls this; a scrape never does).
    pub(crate) fn take_window_max(&self) -> u64 {
        self.window_max_ns.swap(0, Relaxed)
    }
}

impl latlab_core::rt::Tap for Tally {
    #[inline(always)]
    fn observe(&self, ns: u64, seq: u64) {
        Tally::observe(self, ns, seq);
    }

    #[inline(always)]
    fn set_overruns(&self, n: u64) {
        Tally::set_overruns(self, n);
    }

    #[inline(always)]
    fn set_lost(&self, n: u64) {
        Tally::set_lost(self, n);
    }

    #[inline(always)]
    fn set_strayed(&self, n: u64, cpu: usize) {
        Tally::set_strayed(self, n, cpu);
    }
}

/// What each thread (measuring `cpus[i]`, publishing in `tallies[i]`) did on another CPU since
/// the counts in `seen`, which are brought up to date: a warning per thread that did.
pub(crate) fn strayed_since(tallies: &[std::sync::Arc<Tally>], cpus: &[usize], seen: &mut [u64]) -> Vec<String> {
    let mut said = Vec::new();
    for ((t, &cpu), seen) in tallies.iter().zip(cpus).zip(seen.iter_mut()) {
        let n = t.strayed.load(Relaxed);
        if n > *seen {
            said.push(format!(
                "cpu{cpu}: {} wake-ups ran on CPU {}, not on CPU {cpu} where its thread was pinned (another process moved it, perhaps and back): those samples do not come from where it was placed",
                n - *seen,
                t.strayed_cpu.load(Relaxed)
            ));
            *seen = n;
        }
    }
    said
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_upper_inclusive_and_overflow_goes_last() {
        assert_eq!(BOUNDS_NS[0], 1_000);
        assert_eq!(BOUNDS_NS[1], 1_100);
        assert_eq!(BOUNDS_NS[35], 10_000);
        assert_eq!(BOUNDS_NS[BOUNDS_NS.len() - 2], 95_000_000);
        assert!(BOUNDS_NS
            .windows(2)
            .all(|w| w[1] > w[0] && w[1] * 10 <= w[0] * 11));
        for ns in [5_000, 20_000, 50_000, 100_000, 1_000_000, 50_000_000] {
            assert!(BOUNDS_NS.contains(&ns), "{ns}");
        }
        assert_eq!(Tally::bucket_of(0), 0);
        assert_eq!(Tally::bucket_of(1_000), 0);
        assert_eq!(Tally::bucket_of(1_001), 1);
        assert_eq!(Tally::bucket_of(100_000_000), BUCKETS - 2);
        assert_eq!(Tally::bucket_of(100_000_001), BUCKETS - 1);
        assert_eq!(Tally::bucket_of(u64::MAX), BUCKETS - 1);
    }

    /// Prometheus's `histogram_quantile`: linear interpolation inside the bucket holding rank
    /// q·n (the first bucket starts at 0, a rank in +Inf answers the last finite bound).
    fn histogram_quantile(q: f64, counts: &[u64; BUCKETS]) -> f64 {
        let n: u64 = counts.iter().sum();
        let rank = q * n as f64;
        let mut cum = 0u64;
        for (i, &c) in counts.iter().enumerate() {
            if (cum + c) as f64 >= rank && c > 0 {
                if i == BUCKETS - 1 {
                    return BOUNDS_NS[i - 1] as f64;
                }
                let lo = if i == 0 { 0.0 } else { BOUNDS_NS[i - 1] as f64 };
                let hi = BOUNDS_NS[i] as f64;
                return lo + (hi - lo) * (rank - cum as f64) / c as f64;
            }
            cum += c;
        }
        f64::NAN
    }

    #[test]
    fn histogram_quantile_p99_is_within_10_percent_of_the_hdr_p99() {
        // Long-tailed latencies (lognormal bodies plus rare spikes) at several scales, from a
        // fixed-seed generator: the p99 read from the buckets as Prometheus reads it is within
        // 10 % of the exact p99 of the snapshot's HDR histogram of the same samples.
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut uniform = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 11) as f64 / (1u64 << 53) as f64
        };
        for (median_ns, sigma) in [
            (1_500.0, 0.3),
            (4_000.0, 0.8),
            (20_000.0, 1.2),
            (300_000.0, 0.5),
        ] {
            let t = Tally::new(u64::MAX);
            let mut rec = latlab_core::stats::Recorder::new();
            for i in 0..200_000u64 {
                // Box-Muller normal, then lognormal; every 500th sample a spike 30x the median.
                let z = (-2.0 * uniform().max(1e-300).ln()).sqrt()
                    * (2.0 * std::f64::consts::PI * uniform()).cos();
                let mut ns = (median_ns * (sigma * z).exp()) as u64;
                if i % 500 == 0 {
                    ns = (median_ns * 30.0) as u64;
                }
                t.observe(ns, 1);
                rec.record(ns);
            }
            let (b, _) = t.read_buckets();
            let est = histogram_quantile(0.99, &b);
            let exact = rec.hist.quantile(0.99) as f64;
            let err = (est - exact).abs() / exact;
            assert!(
                err <= 0.10,
                "median {median_ns}: buckets {est} vs HDR {exact} ({err:.3})"
            );
        }
    }

    #[test]
    fn observe_counts_max_window_and_threshold() {
        let t = Tally::new(50_000);
        for ns in [1_000, 60_000, 7_000_000, 2_000] {
            t.observe(ns, 1);
        }
        let (b, n) = t.read_buckets();
        assert_eq!(n, 4);
        assert_eq!(b[0], 1);
        assert_eq!(b[Tally::bucket_of(2_000)], 1);
        assert_eq!(b[Tally::bucket_of(60_000)], 1);
        assert_eq!(b[Tally::bucket_of(7_000_000)], 1);
        assert_eq!(t.max_ns.load(Relaxed), 7_000_000);
        assert_eq!(t.exceeded.load(Relaxed), 2);
        assert_eq!(t.take_window_max(), 7_000_000);
        assert_eq!(t.take_window_max(), 0);
        t.observe(3_000, 1);
        assert_eq!(t.take_window_max(), 3_000);
        assert_eq!(t.max_ns.load(Relaxed), 7_000_000);
    }
}
