//! `latlab cyclic`'s raw arguments (clap), lowered in `lower.rs`.

use latlab_core::config::values::{self, Time};
use latlab_core::config::CpuSet;
use crate::driver::args::groups::{
    more_help, Affinity, NoMlock, RealTime, ThreadsArg, Timing, UnitArg,
};
use crate::driver::args::MeasureArgs;
use latlab_core::error::Result;
use latlab_core::sys::clock::Clock;
use latlab_trace::args::TraceArgs;
use clap::Args;
use std::path::PathBuf;

/// Arguments of `latlab cyclic`. Times take units (ns, us, ms, s, m, h); a bare number is µs for
/// intervals, thresholds and deadline times and seconds for the duration, as in cyclictest.
#[derive(Debug, Args)]
#[command(after_help = CYCLIC_AFTER_HELP, disable_help_flag = true)]
#[command(mut_arg("threads", |a| more_help(a, "Without N, one per CPU (of --affinity, or all \
    online CPUs), each pinned to its CPU. Default 1.")))]
#[command(mut_arg("priority", |a| more_help(a, "Of the first thread (0 means SCHED_OTHER, as \
    in cyclictest). Default 80 for real-time policies.")))]
#[command(mut_arg("policy", |a| more_help(a, "Default fifo (other with -p 0). deadline: \
    SCHED_DEADLINE threads with --runtime/--deadline/--period (see below).")))]
#[command(mut_arg("interval", |a| more_help(a, "Of the first thread. Default 1000.")))]
#[command(mut_arg("loops", |a| more_help(a, "Each thread stops after this many wake-ups. \
    Default: run until --duration or Ctrl-C.")))]
#[command(mut_arg("duration", |a| more_help(a, "Default: until --loops or Ctrl-C.")))]
#[command(mut_arg("affinity", |a| more_help(a, "The threads are pinned round-robin to them.")))]
pub(crate) struct CyclicArgs {
    /// `-t/--threads [N]`.
    #[command(flatten)]
    pub(crate) threads: ThreadsArg,

    /// `-p/--priority`, `--policy`.
    #[command(flatten)]
    pub(crate) rt: RealTime,

    /// SCHED_DEADLINE runtime: CPU time each thread is given per period (with --policy
    /// deadline); a bare number is µs. Without it, 60 % of the deadline, as cyclicdeadline.
    #[arg(long, value_name = "TIME", value_parser = values::short_time)]
    pub(crate) runtime: Option<Time>,

    /// SCHED_DEADLINE relative deadline: each job must be done this long after its period
    /// starts (with --policy deadline); a bare number is µs. Default: the period.
    #[arg(long, value_name = "TIME", value_parser = values::short_time)]
    pub(crate) deadline: Option<Time>,

    /// SCHED_DEADLINE period (with --policy deadline; the same as -i, give one of them); a bare
    /// number is µs. Default 1000.
    #[arg(long, value_name = "TIME", value_parser = values::short_time)]
    pub(crate) period: Option<Time>,

    /// With --policy deadline: CPU time each job spins after recording its wake-up; a bare
    /// number is µs. Default 0. More than --runtime overloads the thread on purpose: its jobs
    /// are throttled and miss.
    #[arg(long, value_name = "TIME", value_parser = values::short_time_or_zero)]
    pub(crate) work: Option<Time>,

    /// With --policy deadline: turn the scheduler's high-resolution tick on for the run
    /// (HRTICK_DL, or HRTICK on kernels with one flag) through debugfs sched/features,
    /// journaled and put back like a plan's knob. Short runtimes need it.
    #[arg(long)]
    pub(crate) hrtick: bool,

    /// Give each further thread one priority less than the one before (80, 79, 78 ...).
    #[arg(long)]
    pub(crate) priospread: bool,

    /// `-D/--duration`, `-i/--interval`, `-l/--loops`.
    #[command(flatten)]
    pub(crate) timing: Timing,

    /// Added to the period of each further thread (cyclictest's distance); a bare number is µs.
    /// Default 500.
    #[arg(
        short = 'd',
        long = "distance",
        value_name = "TIME",
        value_parser = values::short_time_or_zero
    )]
    pub(crate) distance: Option<Time>,

    /// `-a/--affinity`.
    #[command(flatten)]
    pub(crate) affinity: Affinity,

    /// Lock memory with mlockall (the default; kept for cyclictest users).
    #[arg(short = 'm', long = "mlock", conflicts_with = "no_mlock")]
    pub(crate) mlock: bool,

    /// `--no-mlock`.
    #[command(flatten)]
    pub(crate) no_mlock: NoMlock,

    /// Print a cyclictest-style histogram with 1 µs buckets up to this many µs.
    #[arg(short = 'h', long = "histogram", value_name = "US", value_parser = values::count)]
    pub(crate) histogram: Option<u64>,

    /// Stop the run when a latency exceeds this (a bare number is µs); reports thread, CPU,
    /// value and loop, and exits 1.
    #[arg(short = 'b', long = "break-on", value_name = "TIME", value_parser = values::short_time)]
    pub(crate) break_on: Option<Time>,

    /// Clock to sleep on and read.
    #[arg(long, value_enum, default_value_t = Clock::Monotonic)]
    pub(crate) clock: Clock,

    /// Relative sleeps (expected wake-up = time before the sleep + period) instead of absolute.
    #[arg(long)]
    pub(crate) relative: bool,

    /// A group of threads: policy=fifo,threads=16,prio=80,priospread,interval=1000us,offset=50us,
    /// affinity=0-1 (deadline groups: runtime=, deadline=, period=, work=; bare times are µs).
    /// Repeatable; keys left out take the values of the plain flags.
    #[arg(long = "group", value_name = "SPEC")]
    pub(crate) group: Vec<String>,

    /// `--unit`.
    #[command(flatten)]
    pub(crate) unit: UnitArg,

    /// Layout of the --json file: latlab's, or cyclictest's (rt-tests) for existing parsers.
    #[arg(long, value_enum, default_value = "latlab", value_name = "FORMAT")]
    pub(crate) json_format: JsonFormat,

    /// Write every latency of every thread to FILE (binary, docs/samples-format.md).
    #[arg(long, value_name = "FILE")]
    pub(crate) samples: Option<PathBuf>,

    /// Hold /dev/cpu_dma_latency at this many µs during the run.
    #[arg(long = "dma-latency", value_name = "US", default_value = "0", value_parser = values::amount)]
    pub(crate) dma_latency: u64,

    /// Do not touch /dev/cpu_dma_latency.
    #[arg(long = "no-dma-latency")]
    pub(crate) no_dma_latency: bool,

    /// Print help (-h is the histogram, as in cyclictest).
    #[arg(long, action = clap::ArgAction::Help)]
    pub(crate) help: Option<bool>,

    /// Kernel tracing options (`--trace`).
    #[command(flatten)]
    pub(crate) trace: TraceArgs,

    /// Output, loads and where the result is kept.
    #[command(flatten)]
    pub(crate) common: MeasureArgs,
}

const CYCLIC_AFTER_HELP: &str = "\
Method: each thread sleeps with clock_nanosleep(TIMER_ABSTIME) until its next period and records
latency = wake-up time - expected time, in ns. A wake-up so late that whole periods passed counts
those periods as overruns; the true maximum is always kept.

SCHED_DEADLINE (--policy deadline, as rt-tests' cyclicdeadline): each thread becomes a deadline
task (runtime <= deadline <= period, each at least 1024 ns; -d adds to each further thread's period)
and ends every job with sched_yield(); latency = time it runs - start of its period (an early
wake-up re-anchors the periods, as cyclicdeadline does). Per thread: misses = jobs that ended
after period start + deadline, and runtime overruns = jobs whose CPU time (the thread's CPU clock)
exceeded the runtime (column 'over runtime'; interrupt time the kernel charges to the thread is in
that clock, so it is not the kernel's throttling); both from the clock. SCHED_FLAG_DL_OVERRUN is
asked for where the kernel has it, and the SIGXCPU signals it sends (one per process, per tick
that finds a runtime exhausted, so not per thread) are counted beside them and checked against
the column (parameters.deadline.runtime_overruns_kernel_check: agrees, confirmed, unconfirmed
where the clock counted overruns and no signal came, which proves nothing, or disagrees with a
warning where the kernel signalled and the clock counted none). Deadline threads cannot be
pinned narrower than their root domain (the kernel refuses), so -a/-t N are not applied to them:
they run unpinned and the result says so. Admission control (EBUSY) is exit 3 with the bandwidth
asked and the limit (/proc/sys/kernel/sched_rt_runtime_us / sched_rt_period_us).
  latlab cyclic --policy deadline --runtime 200us --deadline 1ms --period 1ms -D 10s
  latlab cyclic --group policy=deadline,threads=2,runtime=2ms,period=5ms -D 10s

Seed 004 (16 FIFO + 16 OTHER tasks) as one command:
  latlab cyclic -D 60s \\
    --group policy=fifo,threads=16,prio=80,priospread,interval=1000us,offset=50us \\
    --group policy=other,threads=16,interval=1000us,offset=500us";

/// Layouts of `cyclic --json`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum JsonFormat {
    /// latlab.run/1 (docs/json-schema.md).
    Latlab,
    /// cyclictest's --json layout (rt-tests).
    RtTests,
}

impl crate::driver::Lowering for CyclicArgs {
    type Config = crate::measure::cyclic::config::CyclicConfig;

    fn common(&self) -> &MeasureArgs {
        &self.common
    }

    fn lower(&self, online: &CpuSet) -> Result<Self::Config> {
        crate::measure::cyclic::config::CyclicConfig::from_args(self, online)
    }

    fn run(self, online: &CpuSet, command_line: Vec<String>) -> Result<()> {
        let rt_tests = self.json_format == JsonFormat::RtTests;
        let json = self.common.output.json.clone();
        if rt_tests && json.as_deref().is_none_or(|p| p.as_os_str() == "-") {
            return Err(latlab_core::error::Error::Usage(
                "--json-format rt-tests needs --json FILE (a file, not stdout)".into(),
            ));
        }
        let config = self.lower(online)?;
        let r = crate::driver::execute(config, &self.common_options()?, command_line);
        match (&json, rt_tests) {
            (Some(p), true) if p.exists() => latlab_analysis::export::rt_tests::rewrite_file(p).and(r),
            _ => r,
        }
    }
}
