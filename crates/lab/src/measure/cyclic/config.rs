//! The validated plan of a `cyclic` run: one `ThreadPlan` per measuring thread, built from the
//! plain flags and any `--group` specs.

use latlab_core::config::{DisplayUnit, Policy};
use latlab_core::sys::clock::Clock;
use serde::Serialize;
use std::path::PathBuf;

/// The most measuring threads latlab starts in one run.
pub(crate) const MAX_THREADS: usize = 1024;
/// The longest -h histogram (µs buckets).
pub(crate) const MAX_HIST_US: u64 = 1_000_000;

/// One measuring thread.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct ThreadPlan {
    /// Name shown in tables (`T0`, `T1`, ...).
    pub(crate) name: String,
    /// Scheduling policy.
    pub(crate) policy: Policy,
    /// Priority.
    pub(crate) prio: i32,
    /// CPU to pin to (None: not pinned).
    pub(crate) cpu: Option<usize>,
    /// Period in ns.
    pub(crate) interval_ns: u64,
    /// SCHED_DEADLINE threads: the reservation (its period is `interval_ns`) and the busy
    /// work each job does after recording its wake-up.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) deadline: Option<DeadlinePlan>,
}

/// What a SCHED_DEADLINE thread asks of the kernel and does each period.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub(crate) struct DeadlinePlan {
    /// runtime ≤ deadline ≤ period, each at least 1024 ns.
    #[serde(flatten)]
    pub params: latlab_core::sys::deadline::DlParams,
    /// CPU time each job spins after recording its wake-up (`--work`; 0: none).
    pub(crate) work_ns: u64,
}

/// Everything a `cyclic` run needs, validated.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct CyclicConfig {
    /// The threads.
    pub(crate) threads: Vec<ThreadPlan>,
    /// Clock slept on and read.
    pub(crate) clock: Clock,
    /// Relative instead of absolute sleeps.
    pub(crate) relative: bool,
    /// Wake-ups per thread, if bounded.
    pub(crate) loops: Option<u64>,
    /// Run length in ns, if bounded.
    pub(crate) duration_ns: Option<u64>,
    /// Stop when a latency exceeds this (ns).
    pub(crate) break_on_ns: Option<u64>,
    /// Linear µs histogram length for -h.
    pub(crate) histogram_us: Option<u64>,
    /// Lock memory.
    pub(crate) mlock: bool,
    /// Value held in /dev/cpu_dma_latency (None: untouched).
    pub(crate) dma_latency_us: Option<i32>,
    /// Fail rather than fall back.
    pub(crate) strict: bool,
    /// No live view.
    pub(crate) quiet: bool,
    /// Unit on screen.
    pub(crate) unit: DisplayUnit,
    /// JSON output path (`-` = stdout).
    pub(crate) json: Option<PathBuf>,
    /// Raw sample log path.
    pub(crate) samples: Option<PathBuf>,
    /// `--trace`: explain wake-ups at or above this latency (ns).
    pub(crate) trace_threshold_ns: Option<u64>,
    /// `--trace-save`: the timeline file.
    pub(crate) trace_save: Option<PathBuf>,
    /// `--on-threshold` rules.
    pub trace_actions: Vec<latlab_trace::actions::Rule>,
    /// `--on-threshold-max`, `--trace-budget`, `--on-threshold-env`.
    pub trace_limits: latlab_trace::actions::Limits,
    /// `--trace-stacks`.
    pub(crate) trace_stacks: bool,
    /// `--hrtick`: turn the scheduler's high-resolution tick on for the run (deadline only).
    pub(crate) hrtick: bool,
    /// What lowering had to change and the run must say (e.g. deadline threads unpinned).
    #[serde(skip)]
    pub(crate) notes: Vec<String>,
}
