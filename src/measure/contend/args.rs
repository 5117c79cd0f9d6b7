//! `latlab contend`'s raw arguments (clap), lowered in `lower.rs`.

use crate::config::seconds;
use crate::config::CpuSet;
use crate::driver::args::MeasureArgs;
use crate::error::Result;
use clap::Args;

/// Arguments of `latlab contend`.
#[derive(Debug, Args)]
pub struct ContendArgs {
    /// CPUs, one thread each (default: all online).
    #[arg(long, value_name = "CPUSET")]
    pub cpus: Option<String>,
    /// Synchronisation of the shared structure.
    #[arg(long, value_enum, default_value_t = crate::measure::contend::Sync::Mutex)]
    pub sync: crate::measure::contend::Sync,
    /// SCHED_FIFO priority shared by every thread.
    #[arg(short = 'p', long, default_value_t = 50, allow_negative_numbers = true)]
    pub priority: i32,
    /// Iterations per thread (default: run for --duration).
    #[arg(short = 'n', long)]
    pub iterations: Option<u64>,
    /// Run length when no iteration count is given.
    #[arg(value_parser = seconds, short = 'D', long, default_value = "2s", allow_negative_numbers = true)]
    pub duration: u64,
    /// Priority level every thread enqueues at.
    #[arg(long, default_value_t = 50)]
    pub level: usize,

    /// Loads and where the result is kept.
    #[command(flatten)]
    pub common: MeasureArgs,
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
