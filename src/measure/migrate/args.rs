//! `latlab migrate`'s raw arguments (clap), lowered in `lower.rs`.

use crate::config::CpuSet;
use crate::driver::args::MeasureArgs;
use crate::error::Result;
use clap::Args;

/// Arguments of `latlab migrate`.
#[derive(Debug, Args)]
pub struct MigrateArgs {
    /// Number of SCHED_FIFO tasks (default: online CPUs + 1).
    #[arg(short = 't', long)]
    pub tasks: Option<usize>,
    /// Priority of the lowest task; task i runs at prio + i.
    #[arg(short = 'p', long, default_value_t = 2, allow_negative_numbers = true)]
    pub prio: i32,
    /// Iterations.
    #[arg(short = 'l', long, default_value_t = 20)]
    pub loops: usize,
    /// Busy time of each task per iteration (µs or with unit).
    #[arg(short = 'r', long, default_value = "20ms")]
    pub run_time: String,
    /// Pause between iterations.
    #[arg(short = 's', long, default_value = "50ms")]
    pub sleep_time: String,
    /// Tolerance of the priority-order check.
    #[arg(long, default_value = "1000us")]
    pub max_err: String,
    /// Test hook: lower the highest task below the lowest half-way through.
    #[arg(long, hide = true)]
    pub inject_inversion: bool,

    /// Loads and where the result is kept.
    #[command(flatten)]
    pub common: MeasureArgs,
}

impl crate::driver::Lowering for MigrateArgs {
    type Config = super::MigrateConfig;

    fn common(&self) -> &MeasureArgs {
        &self.common
    }

    fn lower(&self, online: &CpuSet) -> Result<Self::Config> {
        super::MigrateConfig::from_args(self, online)
    }
}
