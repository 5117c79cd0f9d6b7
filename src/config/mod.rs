//! Validated values built from raw command-line arguments: CPU sets, policies, times, run plans.

pub mod bounds;
pub mod cpuset;
pub mod units;

/// Scheduling policies live with the scheduler calls in `sys`; re-exported for configs.
pub use crate::sys::policy::{self, Policy};
pub use cpuset::CpuSet;
pub use units::{parse_offset_ns, parse_time_ns, seconds, BareUnit, DisplayUnit};
