//! Statistics: the per-thread recorder used on the hot path, HDR histograms and summaries,
//! ministat's comparison, and the tests latency comparisons need.

pub mod bootstrap;
pub mod cfmt;
pub mod dist;
pub mod evt;
pub mod histogram;
pub mod hypothesis;
pub mod ministat;
pub mod student;
pub mod summary;

pub use histogram::{HistogramData, LatHistogram};
pub use summary::{Percentiles, Recorder, Summary};
