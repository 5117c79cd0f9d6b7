//! The validated plan of a `noise` run.

use super::{parse_time_ns, BareUnit, CpuSet, DisplayUnit, Policy};
use crate::cli::NoiseArgs;
use crate::error::{Error, Result};
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
}

impl NoiseConfig {
    /// Validates raw arguments against the online CPUs.
    pub fn from_args(a: &NoiseArgs, online: &CpuSet, tsc_ok: bool) -> Result<NoiseConfig> {
        let main_cpu = a
            .main_cpu
            .unwrap_or_else(|| online.iter().next().unwrap_or(0));
        if !online.contains(main_cpu) {
            return Err(Error::flag(
                "--main-cpu",
                main_cpu,
                format!("CPU is not online (online: {online})"),
            ));
        }
        let cpus: Vec<usize> = match &a.cpus {
            Some(v) => CpuSet::parse_online("--cpus", v, online)?.iter().collect(),
            None if online.len() > 1 => online.iter().filter(|&c| c != main_cpu).collect(),
            None => online.iter().collect(),
        };
        let policy: Policy = match &a.policy {
            Some(p) => p.parse().map_err(|e| Error::flag("--policy", p, e))?,
            None => Policy::Fifo,
        };
        let prio = a.priority.unwrap_or(if policy.is_rt() { 50 } else { 0 });
        policy
            .check_prio(prio)
            .map_err(|e| Error::Usage(format!("-p/--priority: {e}")))?;
        let duration_ns = match &a.duration {
            Some(v) => parse_time_ns(v, BareUnit::Seconds)
                .map_err(|e| Error::flag("-D/--duration", v, e))?,
            None => 5_000_000_000,
        };
        let threshold_ns = match &a.threshold {
            Some(v) => {
                parse_time_ns(v, BareUnit::Micros).map_err(|e| Error::flag("--threshold", v, e))?
            }
            None => 1_000,
        };
        if a.repeat == 0 || a.repeat > MAX_REPEAT {
            return Err(Error::flag(
                "--repeat",
                a.repeat,
                format!("use 1 to {MAX_REPEAT}"),
            ));
        }
        let clock = match a.clock {
            Some(NoiseClock::Tsc) if !tsc_ok => {
                return Err(Error::Env(
                    "--clock tsc: this CPU has no constant, nonstop TSC (or is not x86_64); use --clock monotonic".into(),
                ))
            }
            Some(c) => c,
            None if tsc_ok => NoiseClock::Tsc,
            None => NoiseClock::Monotonic,
        };
        let disturb_cpu = a.disturb_cpu.unwrap_or(main_cpu);
        if !online.contains(disturb_cpu) {
            return Err(Error::flag(
                "--disturb-cpu",
                disturb_cpu,
                format!("CPU is not online (online: {online})"),
            ));
        }
        if let Some(cmd) = &a.disturb {
            let first = cmd.split_whitespace().next().unwrap_or("");
            if first.is_empty() {
                return Err(Error::flag("--disturb", "''", "empty command"));
            }
            let plain = !cmd.contains(['|', ';', '&', '$', '`', '(', '<', '>', '=']);
            if plain && !crate::sys::process::command_exists(first) {
                return Err(Error::flag(
                    "--disturb",
                    cmd,
                    format!("command '{first}' not found on PATH"),
                ));
            }
        }
        Ok(NoiseConfig {
            cpus,
            main_cpu,
            policy,
            prio,
            duration_ns,
            threshold_ns,
            clock,
            repeat: a.repeat,
            disturb: a.disturb.clone(),
            disturb_cpu,
            force: a.force,
            strict: a.strict,
            quiet: a.quiet,
            unit: a.unit,
            json: a.json.clone(),
            trace_threshold_ns: super::cyclic::trace_threshold(&a.trace)?,
            trace_save: a.trace.trace_save.clone(),
        })
    }
}
