//! `latlab ctxsw`'s raw arguments (clap), lowered in `lower.rs`.

use crate::config::CpuSet;
use crate::config::DisplayUnit;
use crate::driver::args::MeasureArgs;
use crate::error::Result;
use clap::Args;

/// Arguments of `latlab ctxsw`.
#[derive(Debug, Args)]
#[command(after_help = CTXSW_AFTER_HELP)]
pub struct CtxswArgs {
    /// Methods, comma-separated: yield, pipe, futex (default: all three).
    #[arg(long, value_enum, value_delimiter = ',')]
    pub method: Vec<crate::measure::ctxsw::Method>,
    /// Tasks are threads or forked processes.
    #[arg(long, value_enum, default_value_t = crate::measure::ctxsw::methods::TaskKind::Threads)]
    pub tasks: crate::measure::ctxsw::methods::TaskKind,
    /// CPUs the tasks are spread over, round-robin (default: the first online CPU, so every
    /// task shares one CPU).
    #[arg(long, value_name = "CPUSET")]
    pub cpus: Option<String>,
    /// Timed iterations per method.
    #[arg(short = 'n', long, default_value_t = 10_000)]
    pub iterations: usize,
    /// Untimed iterations first (the seed skips 10).
    #[arg(long, default_value_t = 100)]
    pub warmup: usize,
    /// Tasks in the pipe ring.
    #[arg(long, default_value_t = 2)]
    pub ring: usize,
    /// KiB of its own memory each pipe task touches per hop (lmbench's size).
    #[arg(long, value_name = "KB", default_value_t = 0)]
    pub touch: usize,
    /// Policy of every task (default fifo).
    #[arg(long)]
    pub policy: Option<crate::sys::policy::Policy>,
    /// Priority of every task (default 50).
    #[arg(short = 'p', long, allow_negative_numbers = true)]
    pub priority: Option<i32>,
    /// x86 port access phases for the yield method: none, all (none, 0x80, 0xffff as in the
    /// seed) or ports, comma-separated.
    #[arg(long, value_name = "PHASES")]
    pub ioperm: Option<String>,
    /// Enable the ports in the partner task too, not only the measuring one.
    #[arg(long)]
    pub ioperm_in_both: bool,
    /// Also print the seed's lines ("default no ioperm: scheduling latency: N cycles").
    #[arg(long)]
    pub seed_output: bool,
    /// Unit on screen.
    #[arg(long, value_enum, default_value_t = DisplayUnit::Us)]
    pub unit: DisplayUnit,

    /// Loads and where the result is kept.
    #[command(flatten)]
    pub common: MeasureArgs,
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
