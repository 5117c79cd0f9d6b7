//! `latlab noise`'s raw arguments (clap), lowered in `lower.rs`.

use latlab_core::config::values;
use latlab_core::config::CpuSet;
use crate::driver::args::groups::{
    more_help, Affinity, DurationArg, RealTime, RepeatArg, ThresholdArg, UnitArg,
};
use crate::driver::args::MeasureArgs;
use latlab_core::error::Result;
use latlab_trace::args::TraceArgs;
use clap::Args;

/// Arguments of `latlab noise`.
#[derive(Debug, Args)]
#[command(after_help = NOISE_AFTER_HELP)]
#[command(mut_arg("affinity", |a| more_help(a, "One spinning thread each. Default: every \
    online CPU but the main CPU (all when there is one).")))]
#[command(mut_arg("duration", |a| more_help(a, "Of each measurement. Default 5.")))]
#[command(mut_arg("threshold", |a| more_help(a, "Gaps at or above this count as \
    interruptions. Default 1.")))]
#[command(mut_arg("policy", |a| more_help(a, "Of the spinners: fifo, rr, other, batch or idle. \
    Default fifo.")))]
#[command(mut_arg("priority", |a| more_help(a, "Of the spinners. Default 50 (as in the seed).")))]
#[command(mut_arg("repeat", |a| more_help(a, "Measurements, aggregated per CPU (outliers \
    flagged, never dropped).")))]
#[command(mut_arg("quiet", |a| more_help(a, "No per-repeat lines either.")))]
pub(crate) struct NoiseArgs {
    /// `-a/--affinity` (`--cpus`).
    #[command(flatten)]
    pub(crate) affinity: Affinity,
    /// CPU of the control thread. Default: the first online CPU (0, as in the seed).
    #[arg(long, value_name = "CPU", value_parser = values::cpu)]
    pub(crate) main_cpu: Option<usize>,
    /// `-D/--duration`.
    #[command(flatten)]
    pub(crate) duration: DurationArg,
    /// `--threshold`.
    #[command(flatten)]
    pub(crate) threshold: ThresholdArg,
    /// `-p/--priority`, `--policy`.
    #[command(flatten)]
    pub(crate) rt: RealTime,
    /// Timestamp: tsc (calibrated; the default on x86 with constant TSC) or monotonic.
    #[arg(long, value_enum)]
    pub(crate) clock: Option<crate::measure::noise::config::NoiseClock>,
    /// What measures: spin (latlab's spinners, the default: any kernel), osnoise (the
    /// kernel's osnoise tracer, as rtla osnoise: the kernel's classes and counts; needs root
    /// and CONFIG_OSNOISE_TRACER) or hwnoise (the same with interrupts off, as rtla hwnoise;
    /// Linux 6.2+).
    #[arg(long, value_enum, default_value_t = crate::measure::noise::config::NoiseEngine::Spin)]
    pub(crate) engine: crate::measure::noise::config::NoiseEngine,
    /// Run a shell command on --disturb-cpu a third of the way into each measurement.
    #[arg(long, value_name = "CMD")]
    pub(crate) disturb: Option<String>,
    /// CPU for the disturbing command (default: the main CPU).
    #[arg(long, value_name = "CPU", value_parser = values::cpu)]
    pub(crate) disturb_cpu: Option<usize>,
    /// `--repeat`.
    #[command(flatten)]
    pub(crate) repeat: RepeatArg,
    /// Spin at RT priority on every CPU even with RT throttling off (the machine may hang).
    #[arg(long)]
    pub(crate) force: bool,
    /// `--unit`.
    #[command(flatten)]
    pub(crate) unit: UnitArg,

    /// Kernel tracing options (`--trace`): explain interruptions at or above the threshold.
    #[command(flatten)]
    pub(crate) trace: TraceArgs,

    /// Output, loads and where the result is kept.
    #[command(flatten)]
    pub(crate) common: MeasureArgs,
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
            latlab_core::sys::tsc::available(),
        )
    }
}
