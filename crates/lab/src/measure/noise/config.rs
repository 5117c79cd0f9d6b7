//! The validated plan of a `noise` run.

use latlab_core::config::{DisplayUnit, Policy};
use serde::Serialize;
use std::path::PathBuf;

/// The most repeats one run accepts.
pub const MAX_REPEAT: u32 = 100_000;

/// Timestamp the spinners read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum NoiseClock {
    /// The calibrated TSC (x86 with constant, nonstop TSC); the default where available.
    Tsc,
    /// clock_gettime(CLOCK_MONOTONIC), through the vDSO.
    Monotonic,
}

/// What measures the noise.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum NoiseEngine {
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
pub struct NoiseConfig {
    /// Measured CPUs.
    pub cpus: Vec<usize>,
    /// CPU of the control thread.
    pub main_cpu: usize,
    /// Spinner policy.
    pub policy: Policy,
    /// Spinner priority.
    pub prio: i32,
    /// Length of one measurement, ns.
    pub duration_ns: u64,
    /// Interruption threshold, ns.
    pub threshold_ns: u64,
    /// Timestamp source.
    pub clock: NoiseClock,
    /// What measures (`--engine`).
    pub engine: NoiseEngine,
    /// Measurements to run.
    pub repeat: u32,
    /// Disturbing command, run a third of the way into each measurement.
    pub disturb: Option<String>,
    /// CPU the disturbing command is pinned to.
    pub disturb_cpu: usize,
    /// Allow RT spinning on every CPU with RT throttling off.
    pub force: bool,
    /// Fail instead of falling back.
    pub strict: bool,
    /// No live view, no per-repeat lines.
    pub quiet: bool,
    /// Unit on screen.
    pub unit: DisplayUnit,
    /// JSON output.
    pub json: Option<PathBuf>,
    /// `--trace`: explain interruptions at or above this length (ns).
    pub trace_threshold_ns: Option<u64>,
    /// `--trace-save`: the timeline file.
    pub trace_save: Option<PathBuf>,
    /// `--on-threshold` rules.
    pub trace_actions: Vec<latlab_trace::actions::Rule>,
    /// `--on-threshold-max`, `--trace-budget`, `--on-threshold-env`.
    pub trace_limits: latlab_trace::actions::Limits,
}
