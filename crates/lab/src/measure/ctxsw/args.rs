//! `latlab ctxsw`'s raw arguments (clap), lowered in `lower.rs`.

use latlab_core::config::values;
use latlab_core::config::CpuSet;
use crate::driver::args::groups::{
    more_help, Affinity, IterationsArg, RealTime, RingArg, TasksArg, UnitArg,
};
use crate::driver::args::MeasureArgs;
use latlab_core::error::Result;
use clap::Args;

/// Arguments of `latlab ctxsw`.
#[derive(Debug, Args)]
#[command(after_help = CTXSW_AFTER_HELP)]
#[command(mut_arg("affinity", |a| more_help(a, "The tasks are spread over them, round-robin. \
    Default: the first online CPU, so every task shares one CPU.")))]
#[command(mut_arg("iterations", |a| a.default_value("10000")))]
#[command(mut_arg("tasks", |a| more_help(a, "Every task, of the ring or of the pair.")))]
#[command(mut_arg("policy", |a| more_help(a, "Of every task: fifo, rr, other, batch or idle. \
    Default fifo.")))]
#[command(mut_arg("priority", |a| more_help(a, "Of every task. Default 50.")))]
#[command(mut_arg("ring", |a| a.default_value("2")))]
pub(crate) struct CtxswArgs {
    /// Methods, comma-separated: yield, pipe, futex (default: all three).
    #[arg(long, value_enum, value_delimiter = ',')]
    pub(crate) method: Vec<crate::measure::ctxsw::Method>,
    /// `--tasks`.
    #[command(flatten)]
    pub(crate) tasks: TasksArg,
    /// `-a/--affinity` (`--cpus`).
    #[command(flatten)]
    pub(crate) affinity: Affinity,
    /// `-n/--iterations`.
    #[command(flatten)]
    pub(crate) iterations: IterationsArg,
    /// Untimed iterations first (the seed skips 10).
    #[arg(long, value_name = "N", default_value = "100", value_parser = values::amount)]
    pub(crate) warmup: u64,
    /// `--ring`.
    #[command(flatten)]
    pub(crate) ring: RingArg,
    /// KiB of its own memory each pipe task touches per hop (lmbench's size).
    #[arg(long, value_name = "KB", default_value = "0", value_parser = values::amount)]
    pub(crate) touch: u64,
    /// `-p/--priority`, `--policy`.
    #[command(flatten)]
    pub(crate) rt: RealTime,
    /// x86 port access phases for the yield method: none, all (none, 0x80, 0xffff as in the
    /// seed) or ports, comma-separated.
    #[arg(long, value_name = "PHASES")]
    pub(crate) ioperm: Option<String>,
    /// Enable the ports in the partner task too, not only the measuring one.
    #[arg(long)]
    pub(crate) ioperm_in_both: bool,
    /// Also print the seed's lines ("default no ioperm: scheduling latency: N cycles").
    #[arg(long)]
    pub(crate) seed_output: bool,
    /// `--unit`.
    #[command(flatten)]
    pub(crate) unit: UnitArg,

    /// Output, loads and where the result is kept.
    #[command(flatten)]
    pub(crate) common: MeasureArgs,
}

const CTXSW_AFTER_HELP: &str = "\
yield: two SCHED_FIFO tasks pinned to one CPU yield to each other; a sample is the time
around sched_yield, two switches. pipe: a token goes round a ring of tasks through pipes; the
cost of the same pipe work and memory touching without switching is measured on its own and
subtracted (lmbench). futex: a wake/wait ping-pong, two switches per round trip. Costs are
shown per switch; the raw round trips are in the JSON.

Seed 000: latlab ctxsw --ioperm all --seed-output";

impl crate::driver::Lowering for CtxswArgs {
    type Config = super::CtxswConfig;

    fn common(&self) -> &MeasureArgs {
        &self.common
    }

    fn lower(&self, online: &CpuSet) -> Result<Self::Config> {
        super::CtxswConfig::from_args(self, online)
    }
}
