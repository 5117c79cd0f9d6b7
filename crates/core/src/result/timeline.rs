//! The compact timeline every series can carry: per interval (1 s by default, doubled as often
//! as needed so a long run keeps at most [`CAPACITY`] intervals), the number of samples, their
//! maximum and a high percentile. It lets reports plot latency over time without the raw
//! sample log. The recorder is preallocated and cheap enough for a measuring loop.

use serde::{Deserialize, Serialize};

/// Intervals kept before neighbours are merged pairwise (a 24 h run ends at 64 s intervals).
pub(crate) const CAPACITY: usize = 2048;
/// Default interval width, ns.
pub const DEFAULT_WIDTH_NS: u64 = 1_000_000_000;
/// The percentile kept per interval.
pub(crate) const PERCENTILE: f64 = 99.0;
/// Log-linear buckets used to estimate the percentile of one interval (8 per octave).
const BUCKETS: usize = 496;

/// A series' values over time, interval by interval (all vectors have the same length).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Timeline {
    /// Width of each interval, ns. Interval `i` covers `[i*width, (i+1)*width)` from the start.
    pub interval_ns: u64,
    /// Which percentile `pct` holds (99).
    pub percentile: f64,
    /// Samples per interval.
    pub count: Vec<u64>,
    /// Largest value per interval (0 when empty), in the series' unit.
    pub max: Vec<u64>,
    /// The percentile per interval, an upper estimate within 12.5% and never above `max`;
    /// where intervals were merged, the larger of theirs.
    pub pct: Vec<u64>,
}

impl Timeline {
    /// Number of intervals.
    pub fn len(&self) -> usize {
        self.count.len()
    }

    /// True when there are no intervals.
    pub fn is_empty(&self) -> bool {
        self.count.is_empty()
    }

    /// This timeline with intervals `factor` times wider (merging neighbours).
    pub fn coarsened(&self, factor: usize) -> Timeline {
        let f = factor.max(1);
        let chunk = |v: &[u64], add: bool| -> Vec<u64> {
            v.chunks(f)
                .map(|c| {
                    if add {
                        c.iter().sum()
                    } else {
                        c.iter().copied().max().unwrap_or(0)
                    }
                })
                .collect()
        };
        Timeline {
            interval_ns: self.interval_ns.saturating_mul(f as u64),
            percentile: self.percentile,
            count: chunk(&self.count, true),
            max: chunk(&self.max, false),
            pct: chunk(&self.pct, false),
        }
    }

    /// Consecutive timelines (e.g. repeats) joined end to end, at the widest interval of them.
    pub fn concat(parts: &[Timeline]) -> Option<Timeline> {
        let width = parts.iter().map(|t| t.interval_ns).max()?;
        let mut out = Timeline {
            interval_ns: width,
            percentile: parts[0].percentile,
            count: Vec::new(),
            max: Vec::new(),
            pct: Vec::new(),
        };
        for p in parts {
            let f = (width / p.interval_ns.max(1)).max(1) as usize;
            let c = p.coarsened(f);
            out.count.extend(c.count);
            out.max.extend(c.max);
            out.pct.extend(c.pct);
        }
        Some(out)
    }
}

fn bucket(v: u64) -> usize {
    if v < 8 {
        return v as usize;
    }
    let e = 63 - v.leading_zeros() as usize;
    let sub = ((v >> (e - 3)) & 7) as usize;
    (e - 2) * 8 + sub
}

fn bucket_upper(b: usize) -> u64 {
    if b < 8 {
        return b as u64;
    }
    let (e, sub) = (b / 8 + 2, (b % 8) as u128);
    let up = ((8 + sub + 1) << (e - 3)) - 1;
    up.min(u64::MAX as u128) as u64
}

/// A zeroed vector whose pages are present: written once here, before the measuring loop
/// (zeroed allocations may be mapped lazily; black_box keeps the writes).
fn touched<T: Copy + Default>(n: usize) -> Vec<T> {
    let mut v = vec![T::default(); n];
    v.iter_mut()
        .for_each(|x| *x = std::hint::black_box(T::default()));
    v
}

/// Builds a [`Timeline`] from samples as they come; everything is allocated by `new`.
#[derive(Debug, Clone)]
pub struct TimelineRecorder {
    width: u64,
    start: u64,
    cur: usize,
    cur_end: u64,
    cur_count: u64,
    cur_max: u64,
    hist: Vec<u32>,
    count: Vec<u64>,
    max: Vec<u64>,
    pct: Vec<u64>,
    len: usize,
}

impl TimelineRecorder {
    /// A recorder with intervals of `width_ns` (at least 1 ms), starting at time 0.
    pub fn new(width_ns: u64) -> TimelineRecorder {
        let width = width_ns.max(1_000_000);
        TimelineRecorder {
            width,
            start: 0,
            cur: 0,
            cur_end: width,
            cur_count: 0,
            cur_max: 0,
            hist: touched(BUCKETS),
            count: touched(CAPACITY),
            max: touched(CAPACITY),
            pct: touched(CAPACITY),
            len: 0,
        }
    }

    /// Sets the time (ns, any clock) that interval 0 starts at.
    pub fn start_at(&mut self, now_ns: u64) {
        self.start = now_ns;
    }

    /// Records `value` observed at time `now_ns` (same clock as `start_at`).
    #[inline]
    pub fn record(&mut self, now_ns: u64, value: u64) {
        let rel = now_ns.saturating_sub(self.start);
        if rel >= self.cur_end {
            self.roll(rel);
        }
        self.cur_count += 1;
        if value > self.cur_max {
            self.cur_max = value;
        }
        let b = bucket(value);
        self.hist[b] = self.hist[b].saturating_add(1);
    }

    #[cold]
    fn roll(&mut self, rel: u64) {
        self.flush();
        let mut idx = (rel / self.width) as usize;
        while idx >= CAPACITY {
            self.halve();
            idx = (rel / self.width) as usize;
        }
        self.cur = idx;
        self.cur_end = (idx as u64 + 1).saturating_mul(self.width);
    }

    fn flush(&mut self) {
        let i = self.cur;
        self.len = self.len.max(i + 1);
        if self.cur_count == 0 {
            return;
        }
        let rank = ((PERCENTILE / 100.0) * self.cur_count as f64)
            .ceil()
            .max(1.0) as u64;
        let mut seen = 0u64;
        let mut p = self.cur_max;
        for (b, &c) in self.hist.iter().enumerate() {
            seen += c as u64;
            if seen >= rank {
                p = bucket_upper(b).min(self.cur_max);
                break;
            }
        }
        self.count[i] += self.cur_count;
        self.max[i] = self.max[i].max(self.cur_max);
        self.pct[i] = self.pct[i].max(p);
        self.hist.iter_mut().for_each(|c| *c = 0);
        self.cur_count = 0;
        self.cur_max = 0;
    }

    fn halve(&mut self) {
        for i in 0..CAPACITY / 2 {
            self.count[i] = self.count[2 * i] + self.count[2 * i + 1];
            self.max[i] = self.max[2 * i].max(self.max[2 * i + 1]);
            self.pct[i] = self.pct[2 * i].max(self.pct[2 * i + 1]);
        }
        for i in CAPACITY / 2..CAPACITY {
            self.count[i] = 0;
            self.max[i] = 0;
            self.pct[i] = 0;
        }
        self.len = self.len.div_ceil(2);
        self.cur /= 2;
        self.width = self.width.saturating_mul(2);
    }

    /// The timeline of everything recorded, covering up to `end_ns` (same clock as `start_at`).
    pub fn finish(mut self, end_ns: u64) -> Timeline {
        let rel = end_ns.saturating_sub(self.start);
        if rel > self.cur_end {
            self.roll(rel - 1);
        }
        self.flush();
        let n = self.len;
        Timeline {
            interval_ns: self.width,
            percentile: PERCENTILE,
            count: self.count[..n].to_vec(),
            max: self.max[..n].to_vec(),
            pct: self.pct[..n].to_vec(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    #[test]
    fn buckets_bound_their_values() {
        for v in [
            0u64,
            1,
            7,
            8,
            9,
            15,
            16,
            17,
            100,
            1023,
            1024,
            123_456_789,
            u64::MAX,
        ] {
            let b = bucket(v);
            assert!(b < BUCKETS, "{v}");
            assert!(bucket_upper(b) >= v, "{v}");
            assert!(bucket_upper(b) as f64 <= v as f64 * 1.125 + 1.0, "{v}");
            if b > 0 {
                assert!(bucket_upper(b - 1) < v, "{v}");
            }
        }
    }

    #[test]
    fn counts_max_and_percentile_per_interval() {
        let mut r = TimelineRecorder::new(S);
        r.start_at(5);
        for i in 0..1000u64 {
            r.record(5 + i * 1_000_000, if i == 500 { 90_000 } else { 1000 + i });
        }
        // Nothing in second 1, three samples in second 2.
        for v in [10, 20, 30] {
            r.record(5 + 2 * S + 7, v);
        }
        let t = r.finish(5 + 3 * S);
        assert_eq!(t.count, vec![1000, 0, 3]);
        assert_eq!(t.max, vec![90_000, 0, 30]);
        assert_eq!(t.pct[1], 0);
        assert!(t.pct[0] >= 1989 && t.pct[0] <= 2240, "{}", t.pct[0]);
        assert_eq!(t.pct[2], 30);
        assert_eq!(t.interval_ns, S);
    }

    #[test]
    fn long_runs_coarsen_and_keep_totals() {
        let mut r = TimelineRecorder::new(S);
        let secs = CAPACITY as u64 * 3 + 5;
        for s in 0..secs {
            r.record(s * S, s);
        }
        let t = r.finish(secs * S);
        assert_eq!(t.interval_ns, 4 * S);
        assert!(t.len() <= CAPACITY);
        assert_eq!(t.count.iter().sum::<u64>(), secs);
        assert_eq!(*t.max.last().unwrap(), secs - 1);
        assert_eq!(t.max[0], 3);
    }

    #[test]
    fn finish_covers_a_quiet_end_and_concat_joins() {
        let mut r = TimelineRecorder::new(S);
        r.record(0, 1);
        let t = r.finish(4 * S);
        assert_eq!(t.count, vec![1, 0, 0, 0]);
        let both = Timeline::concat(&[t.clone(), t.coarsened(2)]).unwrap();
        assert_eq!(both.interval_ns, 2 * S);
        assert_eq!(both.count, vec![1, 0, 1, 0]);
        let json = serde_json::to_string(&both).unwrap();
        let back: Timeline = serde_json::from_str(&json).unwrap();
        assert_eq!(back, both);
    }
}
