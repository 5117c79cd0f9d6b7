//! `latlab timerlat`'s raw arguments (clap), lowered in `config.rs`.

use crate::driver::args::groups::{more_help, Affinity, ThresholdArg, Timing, UnitArg};
use crate::driver::args::MeasureArgs;
use latlab_core::error::Result;
use clap::Args;

/// Arguments of `latlab timerlat`.
#[derive(Debug, Args)]
#[command(after_help = TIMERLAT_AFTER_HELP)]
#[command(mut_arg("affinity", |a| more_help(a, "One kernel timerlat thread each. Default: \
    every online CPU.")))]
#[command(mut_arg("interval", |a| more_help(a, "The tracer's period (timerlat_period_us), \
    100 us to 1 s. Default 1000.")))]
#[command(mut_arg("loops", |a| more_help(a, "Each CPU stops counting after this many \
    periods.")))]
#[command(mut_arg("duration", |a| more_help(a, "Default: until --loops or Ctrl-C.")))]
#[command(mut_arg("threshold", |a| more_help(a, "Explain every sample at or above this \
    with the kernel's split (IRQ latency, thread delay, the blocking thread, the interrupts \
    and threads that ran, the stack at the IRQ): traces sched_switch and the osnoise noise \
    events in latlab's instance and sets osnoise/print_stack. Default: no explanations.")))]
pub(crate) struct TimerlatArgs {
    /// `-a/--affinity` (`--cpus`).
    #[command(flatten)]
    pub(crate) affinity: Affinity,
    /// `-D/--duration`, `-i/--interval`, `-l/--loops`.
    #[command(flatten)]
    pub(crate) timing: Timing,
    /// SCHED_FIFO priority of the kernel's timerlat threads, 1-99 (rtla's -P f:PRIO).
    /// Default: the kernel's own (FIFO 95).
    #[arg(short = 'p', long = "priority", value_name = "PRIO",
        value_parser = clap::value_parser!(i32).range(1..=99))]
    pub(crate) priority: Option<i32>,
    /// `--threshold`.
    #[command(flatten)]
    pub(crate) threshold: ThresholdArg,
    /// `--unit`.
    #[command(flatten)]
    pub(crate) unit: UnitArg,
    /// Output, loads and where the result is kept.
    #[command(flatten)]
    pub(crate) common: MeasureArgs,
}

const TIMERLAT_AFTER_HELP: &str = "\
Method: the kernel's own timerlat tracer (CONFIG_TIMERLAT_TRACER, rtla timerlat's source) runs
a kernel thread per measured CPU that arms a periodic timer. The kernel measures each period
twice: at the timer interrupt (series irq-N: how late the IRQ handler ran) and when the thread
runs (series thread-N: how late the woken thread got the CPU). latlab runs the tracer in its
own tracefs instance, reads every sample from the per-CPU raw buffers and says how many the
kernel produced and how many it read. The tracer and its osnoise/ settings are machine-wide:
another tool's rtla or tracer is refused, never taken over, and every setting is put back.

Where the kernel has no timerlat tracer, `latlab cyclic` measures wake-up latency from user
space instead.

rtla timerlat hist -c 1-3 -p 1000 -d 60 as latlab (with the kernel's split of every sample
over 100 us):
  latlab timerlat -a 1-3 -i 1000 -D 60 --threshold 100us";

impl crate::driver::Lowering for TimerlatArgs {
    type Config = super::config::TimerlatConfig;

    fn common(&self) -> &MeasureArgs {
        &self.common
    }

    fn lower(&self, online: &latlab_core::config::CpuSet) -> Result<Self::Config> {
        super::config::TimerlatConfig::from_args(self, online)
    }
}
