//! Validated values built from raw command-line arguments: CPU sets, policies, times, run plans.

pub mod bounds;
pub mod cpuset;
pub mod units;

/// Scheduling policies live with the scheduler calls in `sys`; re-exported for configs.
pub use crate::sys::policy::{self, Policy};
pub use cpuset::CpuSet;
pub use units::{parse_bytes, parse_offset_ns, parse_time_ns, seconds, BareUnit, DisplayUnit};

/// Whether a measurement's tasks are threads or processes (`--tasks`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TaskKind {
    /// Threads of latlab (shared address space: no TLB flush on a switch).
    Threads,
    /// Forked processes (separate address spaces).
    Processes,
}
