//! `latlab migrate`'s raw arguments (clap), lowered in `lower.rs`.

use latlab_core::config::values::{self, Time};
use latlab_core::config::CpuSet;
use crate::driver::args::groups::{more_help, LoopsArg, PriorityArg, ThreadsArg};
use crate::driver::args::MeasureArgs;
use latlab_core::error::Result;
use clap::Args;

/// Arguments of `latlab migrate`.
#[derive(Debug, Args)]
#[command(mut_arg("threads", |a| more_help(a, "SCHED_FIFO threads, 2 to 64. Default: online \
    CPUs + 1.")))]
#[command(mut_arg("priority", |a| more_help(a, "Of the lowest thread; thread i runs at \
    PRIO + i. (--prio is kept as another name.)").alias("prio").default_value("2")))]
#[command(mut_arg("loops", |a| more_help(a, "Iterations, 1 to 100000.").default_value("20")))]
pub(crate) struct MigrateArgs {
    /// `-t/--threads N`.
    #[command(flatten)]
    pub(crate) threads: ThreadsArg,
    /// The old spelling of -t/--threads N (deprecated: elsewhere --tasks is threads or
    /// processes).
    #[arg(
        long = "tasks",
        value_name = "N",
        hide = true,
        conflicts_with = "threads",
        value_parser = values::count
    )]
    pub(crate) tasks: Option<u64>,
    /// `-p/--priority`.
    #[command(flatten)]
    pub(crate) priority: PriorityArg,
    /// `-l/--loops`.
    #[command(flatten)]
    pub(crate) loops: LoopsArg,
    /// Busy time of each thread per iteration: a bare number is µs.
    #[arg(short = 'r', long, value_name = "TIME", default_value = "20ms", value_parser = values::short_time)]
    pub(crate) run_time: Time,
    /// Pause between iterations: a bare number is µs.
    #[arg(short = 's', long, value_name = "TIME", default_value = "50ms", value_parser = values::short_time)]
    pub(crate) sleep_time: Time,
    /// Tolerance of the priority-order check: a bare number is µs.
    #[arg(long, value_name = "TIME", default_value = "1000us", value_parser = values::short_time)]
    pub(crate) max_err: Time,
    /// Test hook: lower the highest task below the lowest half-way through.
    #[arg(long, hide = true)]
    pub(crate) inject_inversion: bool,

    /// Output, loads and where the result is kept.
    #[command(flatten)]
    pub(crate) common: MeasureArgs,
}

impl crate::driver::Lowering for MigrateArgs {
    type Config = super::MigrateConfig;

    fn common(&self) -> &MeasureArgs {
        &self.common
    }

    fn deprecations(&self) -> Vec<String> {
        self.tasks
            .map(|n| {
                format!(
                    "migrate --tasks {n} is deprecated (elsewhere --tasks means threads or \
                     processes): use -t/--threads {n}; --tasks N goes in the next release"
                )
            })
            .into_iter()
            .collect()
    }

    fn lower(&self, online: &CpuSet) -> Result<Self::Config> {
        super::MigrateConfig::from_args(self, online)
    }
}
