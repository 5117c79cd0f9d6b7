//! `latlab contend`'s raw arguments (clap), lowered in `lower.rs`.

use latlab_core::config::values;
use latlab_core::config::CpuSet;
use crate::driver::args::groups::{more_help, Affinity, DurationArg, IterationsArg, PriorityArg};
use crate::driver::args::MeasureArgs;
use latlab_core::error::Result;
use clap::Args;

/// Arguments of `latlab contend`.
#[derive(Debug, Args)]
#[command(mut_arg("affinity", |a| more_help(a, "One thread each. Default: every online CPU.")))]
#[command(mut_arg("priority", |a| more_help(a, "SCHED_FIFO, shared by every thread.")
    .default_value("50")))]
#[command(mut_arg("iterations", |a| more_help(a, "Per thread (default: run for --duration).")))]
#[command(mut_arg("duration", |a| more_help(a, "When no iteration count is given.")
    .default_value("2s")))]
pub(crate) struct ContendArgs {
    /// `-a/--affinity` (`--cpus`).
    #[command(flatten)]
    pub(crate) affinity: Affinity,
    /// Synchronisation of the shared structure.
    #[arg(long, value_enum, default_value_t = crate::measure::contend::Sync::Mutex)]
    pub(crate) sync: crate::measure::contend::Sync,
    /// `-p/--priority`.
    #[command(flatten)]
    pub(crate) priority: PriorityArg,
    /// `-n/--iterations`.
    #[command(flatten)]
    pub(crate) iterations: IterationsArg,
    /// `-D/--duration`.
    #[command(flatten)]
    pub(crate) duration: DurationArg,
    /// Priority level every thread enqueues at.
    #[arg(long, value_name = "N", default_value = "50", value_parser = values::amount)]
    pub(crate) level: u64,

    /// Output, loads and where the result is kept.
    #[command(flatten)]
    pub(crate) common: MeasureArgs,
}

impl crate::driver::Lowering for ContendArgs {
    type Config = super::ContendConfig;

    fn common(&self) -> &MeasureArgs {
        &self.common
    }

    fn lower(&self, online: &CpuSet) -> Result<Self::Config> {
        super::ContendConfig::from_args(self, online)
    }
}
