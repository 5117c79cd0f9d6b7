//! The validated plan of a `timerlat` run (lowered from its arguments in `lower.rs`).

use latlab_core::config::DisplayUnit;
use serde::Serialize;
use std::path::PathBuf;

/// The shortest period the kernel's timerlat tracer takes (`timerlat_period_us` 100).
pub(crate) const MIN_PERIOD_NS: u64 = 100_000;
/// The longest (1 s).
pub(crate) const MAX_PERIOD_NS: u64 = 1_000_000_000;

/// Everything a `timerlat` run needs, validated.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct TimerlatConfig {
    /// Measured CPUs (one kernel timerlat thread each).
    pub(crate) cpus: Vec<usize>,
    /// The tracer's period, ns (a whole number of µs).
    pub(crate) period_ns: u64,
    /// How long to run, ns (None: until --loops or Ctrl-C).
    pub(crate) duration_ns: Option<u64>,
    /// Periods counted per CPU (None: no limit).
    pub(crate) loops: Option<u64>,
    /// SCHED_FIFO priority given to the kernel's timerlat threads (None: the kernel's).
    pub(crate) prio: Option<i32>,
    /// Samples at or above this are explained (ns); None: no explanations.
    pub(crate) threshold_ns: Option<u64>,
    /// Display unit.
    pub(crate) unit: DisplayUnit,
    /// `-q`.
    pub(crate) quiet: bool,
    /// `--json`.
    pub(crate) json: Option<PathBuf>,
}
