//! Validated values built from raw command-line arguments: CPU sets, policies, times, run plans.

pub mod cpuset;
pub mod cyclic;
pub mod noise;
pub mod policy;
pub mod units;

pub use cpuset::CpuSet;
pub use policy::Policy;
pub use units::{parse_offset_ns, parse_time_ns, BareUnit, DisplayUnit};
