//! A measured task's latencies: kept one by one while few (most tasks of a busy system run a
//! handful of times), in a full HDR recorder once many.

use crate::stats::Recorder;

/// Samples kept one by one while few (most tasks), in a full HDR recorder once many.
#[derive(Debug, Clone)]
pub enum Samples {
    /// Up to [`FEW`] values.
    Few(Vec<u64>),
    /// Beyond.
    Many(Box<Recorder>),
}

/// Values kept as a list before a task gets a histogram (a histogram is ~350 KiB).
pub const FEW: usize = 4096;

impl Default for Samples {
    fn default() -> Self {
        Samples::Few(Vec::new())
    }
}

impl Samples {
    /// Adds one value.
    pub fn record(&mut self, ns: u64) {
        match self {
            Samples::Few(v) if v.len() < FEW => v.push(ns),
            Samples::Few(v) => {
                let mut r = Recorder::new();
                for &x in v.iter() {
                    r.record(x);
                }
                r.record(ns);
                *self = Samples::Many(Box::new(r));
            }
            Samples::Many(r) => r.record(ns),
        }
    }

    /// Values recorded.
    pub fn count(&self) -> u64 {
        match self {
            Samples::Few(v) => v.len() as u64,
            Samples::Many(r) => r.count,
        }
    }

    /// Largest value (0 when empty).
    pub fn max(&self) -> u64 {
        match self {
            Samples::Few(v) => v.iter().copied().max().unwrap_or(0),
            Samples::Many(r) => r.max,
        }
    }

    /// Sum of the values.
    pub fn sum(&self) -> u128 {
        match self {
            Samples::Few(v) => v.iter().map(|&x| x as u128).sum(),
            Samples::Many(r) => r.sum,
        }
    }

    /// Adds every value to `r`.
    pub fn add_to(&self, r: &mut Recorder) {
        match self {
            Samples::Few(v) => v.iter().for_each(|&x| r.record(x)),
            Samples::Many(m) => r.merge(m),
        }
    }

    /// `f` of these values as a recorder: the task's own when it has one, else `scratch`
    /// emptied and filled (a recorder's histogram is ~350 KiB: one for every task of a busy
    /// system would be made, zeroed and freed again).
    pub fn with_recorder<T>(&self, scratch: &mut Recorder, f: impl FnOnce(&Recorder) -> T) -> T {
        match self {
            Samples::Many(r) => f(r),
            Samples::Few(v) => {
                scratch.reset();
                v.iter().for_each(|&x| scratch.record(x));
                f(scratch)
            }
        }
    }

    /// As a recorder.
    pub fn recorder(&self) -> Recorder {
        let mut r = Recorder::new();
        self.add_to(&mut r);
        r
    }
}
