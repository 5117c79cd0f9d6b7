//! The validated plan of a `cyclic` run: one `ThreadPlan` per measuring thread, built from the
//! plain flags and any `--group` specs.

use latlab_core::config::{DisplayUnit, Policy};
use latlab_core::sys::clock::Clock;
use serde::Serialize;
use std::path::PathBuf;

/// The most measuring threads latlab starts in one run.
pub const MAX_THREADS: usize = 1024;
/// The longest -h histogram (µs buckets).
pub const MAX_HIST_US: u64 = 1_000_000;

/// One measuring thread.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ThreadPlan {
    /// Name shown in tables (`T0`, `T1`, ...).
    pub name: String,
    /// Scheduling policy.
    pub policy: Policy,
    /// Priority.
    pub prio: i32,
    /// CPU to pin to (None: not pinned).
    pub cpu: Option<usize>,
    /// Period in ns.
    pub interval_ns: u64,
    /// SCHED_DEADLINE threads: the reservation (its period is `interval_ns`) and the busy
    /// work each job does after recording its wake-up.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deadline: Option<DeadlinePlan>,
}

/// What a SCHED_DEADLINE thread asks of the kernel and does each period.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct DeadlinePlan {
    /// runtime ≤ deadline ≤ period, each at least 1024 ns.
    #[serde(flatten)]
    pub params: latlab_core::sys::deadline::DlParams,
    /// CPU time each job spins after recording its wake-up (`--work`; 0: none).
    pub work_ns: u64,
}

/// Everything a `cyclic` run needs, validated.
#[derive(Debug, Clone, Serialize)]
pub struct CyclicConfig {
    /// The threads.
    pub threads: Vec<ThreadPlan>,
    /// Clock slept on and read.
    pub clock: Clock,
    /// Relative instead of absolute sleeps.
    pub relative: bool,
    /// Wake-ups per thread, if bounded.
    pub loops: Option<u64>,
    /// Run length in ns, if bounded.
    pub duration_ns: Option<u64>,
    /// Stop when a latency exceeds this (ns).
    pub break_on_ns: Option<u64>,
    /// Linear µs histogram length for -h.
    pub histogram_us: Option<u64>,
    /// Lock memory.
    pub mlock: bool,
    /// Value held in /dev/cpu_dma_latency (None: untouched).
    pub dma_latency_us: Option<i32>,
    /// Fail rather than fall back.
    pub strict: bool,
    /// No live view.
    pub quiet: bool,
    /// Unit on screen.
    pub unit: DisplayUnit,
    /// JSON output path (`-` = stdout).
    pub json: Option<PathBuf>,
    /// Raw sample log path.
    pub samples: Option<PathBuf>,
    /// `--trace`: explain wake-ups at or above this latency (ns).
    pub trace_threshold_ns: Option<u64>,
    /// `--trace-save`: the timeline file.
    pub trace_save: Option<PathBuf>,
    /// `--on-threshold` rules.
    pub trace_actions: Vec<latlab_trace::actions::Rule>,
    /// `--on-threshold-max`, `--trace-budget`, `--on-threshold-env`.
    pub trace_limits: latlab_trace::actions::Limits,
    /// `--trace-stacks`.
    pub trace_stacks: bool,
    /// `--hrtick`: turn the scheduler's high-resolution tick on for the run (deadline only).
    pub hrtick: bool,
    /// What lowering had to change and the run must say (e.g. deadline threads unpinned).
    #[serde(skip)]
    pub notes: Vec<String>,
}
