//! A measured task's latencies: kept one by one while few (most tasks of a busy system run a
//! handful of times), in a full HDR recorder once many.

use latlab_core::stats::Recorder;

/// Samples kept one by one while few (most tasks), in a full HDR recorder once many.
#[derive(Debug, Clone)]
pub(crate) enum Samples {
    /// Up to [`FEW`] values.
    Few(Vec<u64>),
    /// Beyond.
    Many(Box<Recorder>),
}

/// Values kept as a list before a task gets a histogram (a histogram is ~350 KiB).
pub(crate) const FEW: usize = 4096;

impl Default for Samples {
    fn default() -> Self {
        Samples::Few(Vec::new())
    }
}

impl Samples {
    /// Adds one value.
    pub(crate) fn record(&mut self, ns: u64) {
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
    pub(crate) fn count(&self) -> u64 {
        match self {
            Samples::Few(v) => v.len() as u64,
            Samples::Many(r) => r.count,
        }
    }

    /// Largest value (0 when empty).
    pub(crate) fn max(&self) -> u64 {
        match self {
            Samples::Few(v) => v.iter().copied().max().unwrap_or(0),
            Samples::Many(r) => r.max,
        }
    }

    /// Sum of the values.
    pub(crate) fn sum(&self) -> u128 {
        match self {
            Samples::Few(v) => v.iter().map(|&x| x as u128).sum(),
            Samples::Many(r) => r.sum,
        }
    }

    /// Adds every value to `r`.
    pub(crate) fn add_to(&self, r: &mut Recorder) {
        match self {
            Samples::Few(v) => v.iter().for_each(|&x| r.record(x)),
            Samples::Many(m) => r.merge(m),
        }
    }

    /// These values' summary and histogram: the task's own recorder's when it has one, else
    /// worked out from the values themselves (`shape`: any latlab histogram, for its bucket
    /// layout), so the many tasks of a busy system that ran a few times do not each get a
    /// ~350 KiB histogram made, zeroed and scanned.
    pub(crate) fn summarise(
        &self,
        shape: &latlab_core::stats::LatHistogram,
    ) -> (latlab_core::stats::Summary, latlab_core::stats::HistogramData) {
        match self {
            Samples::Many(r) => r.summary_and_data(),
            Samples::Few(v) => latlab_core::stats::summary::summarise_values(&mut v.clone(), shape),
        }
    }

    /// As a recorder.
    #[cfg(test)]
    pub(crate) fn recorder(&self) -> Recorder {
        let mut r = Recorder::new();
        self.add_to(&mut r);
        r
    }
}
