//! The validated plan of a `noise` run.

use latlab_core::config::{DisplayUnit, Policy};
use serde::Serialize;
use std::path::PathBuf;

/// The most repeats one run accepts.
pub(crate) const MAX_REPEAT: u32 = 100_000;

/// Timestamp the spinners read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum NoiseClock {
    /// The calibrated TSC (x86 with constant, nonstop TSC); the default where available.
    Tsc,
    /// clock_gettime(CLOCK_MONOTONIC), through the vDSO.
    Monotonic,
}

/// What measures the noise.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum NoiseEngine {
    /// latlab's spinners in user space (oslat's measurement); the default, on any kernel.
    #[default]
    Spin,
    /// The kernel's osnoise tracer (rtla osnoise): its threads, its classes and counts.
    Osnoise,
    /// The osnoise tracer with interrupts off (rtla hwnoise): what is left is hardware.
    Hwnoise,
}

/// Everything a `noise` run needs, validated.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct NoiseConfig {
    /// Measured CPUs.
    pub(crate) cpus: Vec<usize>,
    /// CPU of the control thread.
    pub(crate) main_cpu: usize,
    /// Spinner policy.
    pub(crate) policy: Policy,
    /// Spinner priority.
    pub(crate) prio: i32,
    /// Length of one measurement, ns.
    pub(crate) duration_ns: u64,
    /// Interruption threshold, ns.
    pub(crate) threshold_ns: u64,
    /// Timestamp source.
    pub(crate) clock: NoiseClock,
    /// What measures (`--engine`).
    pub(crate) engine: NoiseEngine,
    /// Measurements to run.
    pub(crate) repeat: u32,
    /// Disturbing command, run a third of the way into each measurement.
    pub(crate) disturb: Option<String>,
    /// CPU the disturbing command is pinned to.
    pub(crate) disturb_cpu: usize,
    /// Allow RT spinning on every CPU with RT throttling off.
    pub(crate) force: bool,
    /// Fail instead of falling back.
    pub(crate) strict: bool,
    /// No live view, no per-repeat lines.
    pub(crate) quiet: bool,
    /// Unit on screen.
    pub(crate) unit: DisplayUnit,
    /// JSON output.
    pub(crate) json: Option<PathBuf>,
    /// `--trace`: explain interruptions at or above this length (ns).
    pub(crate) trace_threshold_ns: Option<u64>,
    /// `--trace-save`: the timeline file.
    pub(crate) trace_save: Option<PathBuf>,
    /// `--on-threshold` rules.
    pub trace_actions: Vec<latlab_trace::actions::Rule>,
    /// `--on-threshold-max`, `--trace-budget`, `--on-threshold-env`.
    pub trace_limits: latlab_trace::actions::Limits,
}
