//! Statistics: the per-thread recorder used on the hot path, HDR histograms and summaries.

pub mod histogram;
pub mod summary;

pub use histogram::{HistogramData, LatHistogram};
pub use summary::{Percentiles, Recorder, Summary};
