//! The validated plan of a `timerlat` run (lowered from its arguments in `lower.rs`).

use latlab_core::config::DisplayUnit;
use serde::Serialize;
use std::path::PathBuf;

/// The shortest period the kernel's timerlat tracer takes (`timerlat_period_us` 100).
pub const MIN_PERIOD_NS: u64 = 100_000;
/// The longest (1 s).
pub const MAX_PERIOD_NS: u64 = 1_000_000_000;

/// Everything a `timerlat` run needs, validated.
#[derive(Debug, Clone, Serialize)]
pub struct TimerlatConfig {
    /// Measured CPUs (one kernel timerlat thread each).
    pub cpus: Vec<usize>,
    /// The tracer's period, ns (a whole number of µs).
    pub period_ns: u64,
    /// How long to run, ns (None: until --loops or Ctrl-C).
    pub duration_ns: Option<u64>,
    /// Periods counted per CPU (None: no limit).
    pub loops: Option<u64>,
    /// SCHED_FIFO priority given to the kernel's timerlat threads (None: the kernel's).
    pub prio: Option<i32>,
    /// Samples at or above this are explained (ns); None: no explanations.
    pub threshold_ns: Option<u64>,
    /// Display unit.
    pub unit: DisplayUnit,
    /// `-q`.
    pub quiet: bool,
    /// `--json`.
    pub json: Option<PathBuf>,
}
