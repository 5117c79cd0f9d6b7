//! `latlab noise`'s raw arguments (clap), lowered in `lower.rs`.

use crate::config::CpuSet;
use crate::config::{seconds, DisplayUnit};
use crate::driver::args::MeasureArgs;
use crate::error::Result;
use crate::trace::args::TraceArgs;
use clap::Args;

/// Arguments of `latlab noise`.
#[derive(Debug, Args)]
#[command(after_help = NOISE_AFTER_HELP)]
pub struct NoiseArgs {
    /// CPUs to measure (default: every online CPU but the main CPU; all when there is one).
    #[arg(long, value_name = "CPUSET")]
    pub cpus: Option<String>,
    /// CPU of the control thread (default 0, as in the seed).
    #[arg(long, value_name = "CPU")]
    pub main_cpu: Option<usize>,
    /// Length of each measurement: 5 (s), 500ms, 1m. Default 5 s.
    #[arg(value_parser = seconds, short = 'D', long, value_name = "TIME", allow_negative_numbers = true)]
    pub duration: Option<u64>,
    /// Gaps at or above this count as interruptions (µs or with unit). Default 1 µs.
    #[arg(long, value_name = "TIME", allow_negative_numbers = true)]
    pub threshold: Option<String>,
    /// Spinner policy: fifo (default), rr, other, batch, idle.
    #[arg(long)]
    pub policy: Option<crate::sys::policy::Policy>,
    /// Spinner priority (default 50, as in the seed).
    #[arg(short = 'p', long, allow_negative_numbers = true)]
    pub priority: Option<i32>,
    /// Timestamp: tsc (calibrated; default on x86 with constant TSC) or monotonic.
    #[arg(long, value_enum)]
    pub clock: Option<crate::measure::noise::config::NoiseClock>,
    /// Run a shell command on --disturb-cpu a third of the way into each measurement.
    #[arg(long, value_name = "CMD")]
    pub disturb: Option<String>,
    /// CPU for the disturbing command (default: the main CPU).
    #[arg(long, value_name = "CPU")]
    pub disturb_cpu: Option<usize>,
    /// Number of measurements, aggregated per CPU (outliers flagged, never dropped).
    #[arg(long, default_value_t = 1)]
    pub repeat: u32,
    /// Spin at RT priority on every CPU even with RT throttling off (the machine may hang).
    #[arg(long)]
    pub force: bool,
    /// Unit on screen.
    #[arg(long, value_enum, default_value_t = DisplayUnit::Us)]
    pub unit: DisplayUnit,

    /// Kernel tracing options (`--trace`): explain interruptions at or above the threshold.
    #[command(flatten)]
    pub trace: TraceArgs,

    /// Loads and where the result is kept.
    #[command(flatten)]
    pub common: MeasureArgs,
}

const NOISE_AFTER_HELP: &str = "\
Method: one thread per measured CPU, pinned, at SCHED_FIFO 50 by default, reads the timestamp
back to back and accounts every gap between two reads. A gap at or above --threshold is an
interruption: something (an interrupt, a kernel thread, another task) took the CPU away.

Seed 003 (per-CPU max gap with a disturbing command on CPU 0, repeated):
  latlab noise -D 1s --repeat 100 --disturb 'modprobe -r dummy; modprobe dummy'";

impl crate::driver::Lowering for NoiseArgs {
    type Config = crate::measure::noise::config::NoiseConfig;

    fn common(&self) -> &MeasureArgs {
        &self.common
    }

    fn lower(&self, online: &CpuSet) -> Result<Self::Config> {
        crate::measure::noise::config::NoiseConfig::from_args(
            self,
            online,
            crate::sys::tsc::available(),
        )
    }
}
