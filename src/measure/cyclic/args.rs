//! `latlab cyclic`'s raw arguments (clap), lowered in `lower.rs`.

use crate::config::CpuSet;
use crate::config::{seconds, DisplayUnit};
use crate::driver::args::MeasureArgs;
use crate::error::Result;
use crate::sys::clock::Clock;
use crate::trace::args::TraceArgs;
use clap::Args;
use std::path::PathBuf;

/// Arguments of `latlab cyclic`. Times take units (ns, us, ms, s, m, h); a bare number is µs for
/// intervals and thresholds and seconds for durations, as in cyclictest.
#[derive(Debug, Args)]
#[command(after_help = CYCLIC_AFTER_HELP, disable_help_flag = true)]
pub struct CyclicArgs {
    /// Number of measuring threads; without N, one per CPU (of --affinity, or all online CPUs),
    /// each pinned to its CPU.
    #[arg(short = 't', long = "threads", value_name = "N", num_args = 0..=1)]
    pub threads: Option<Option<String>>,

    /// Priority of the first thread (1-99 for fifo/rr; 0 means SCHED_OTHER as in cyclictest).
    /// Default 80 for real-time policies.
    #[arg(
        short = 'p',
        long = "priority",
        value_name = "PRIO",
        allow_negative_numbers = true
    )]
    pub priority: Option<i32>,

    /// Scheduling policy: fifo, rr, other, batch, idle, deadline. Default fifo (other when
    /// -p 0). deadline: SCHED_DEADLINE threads with --runtime/--deadline/--period (see below).
    #[arg(long, value_name = "POLICY", value_parser = crate::sys::policy::Policy::parse_any)]
    pub policy: Option<crate::sys::policy::Policy>,

    /// SCHED_DEADLINE runtime: CPU time each thread is given per period (with --policy
    /// deadline). Default 60 % of the deadline, as cyclicdeadline.
    #[arg(long, value_name = "TIME", allow_negative_numbers = true)]
    pub runtime: Option<String>,

    /// SCHED_DEADLINE relative deadline: each job must be done this long after its period
    /// starts (with --policy deadline). Default: the period.
    #[arg(long, value_name = "TIME", allow_negative_numbers = true)]
    pub deadline: Option<String>,

    /// SCHED_DEADLINE period (with --policy deadline; the same as -i, give one of them).
    /// Default 1000 µs.
    #[arg(long, value_name = "TIME", allow_negative_numbers = true)]
    pub period: Option<String>,

    /// With --policy deadline: CPU time each job spins after recording its wake-up (default 0).
    /// More than --runtime overloads the thread on purpose: its jobs are throttled and miss.
    #[arg(long, value_name = "TIME", allow_negative_numbers = true)]
    pub work: Option<String>,

    /// With --policy deadline: turn the scheduler's high-resolution tick on for the run
    /// (HRTICK_DL, or HRTICK on kernels with one flag) through debugfs sched/features,
    /// journaled and put back like a plan's knob. Short runtimes need it.
    #[arg(long)]
    pub hrtick: bool,

    /// Give each further thread one priority less than the one before (80, 79, 78 ...).
    #[arg(long)]
    pub priospread: bool,

    /// Period of the first thread: 1000 (µs), 500us, 1ms. Default 1000 µs.
    #[arg(
        short = 'i',
        long = "interval",
        value_name = "TIME",
        allow_negative_numbers = true
    )]
    pub interval: Option<String>,

    /// Added to the period of each further thread (cyclictest's distance). Default 500 µs.
    #[arg(
        short = 'd',
        long = "distance",
        value_name = "TIME",
        allow_negative_numbers = true
    )]
    pub distance: Option<String>,

    /// Stop each thread after this many wake-ups. Default: run until --duration or Ctrl-C.
    #[arg(
        short = 'l',
        long = "loops",
        value_name = "N",
        allow_negative_numbers = true
    )]
    pub loops: Option<String>,

    /// Stop after this long: 10 (s), 10s, 5m, 1h. Default: until --loops or Ctrl-C.
    #[arg(
        value_parser = seconds,
        short = 'D',
        long = "duration",
        value_name = "TIME",
        allow_negative_numbers = true
    )]
    pub duration: Option<u64>,

    /// Pin threads round-robin to these CPUs (0-3,6); without a list, to all online CPUs.
    #[arg(short = 'a', long = "affinity", value_name = "CPUSET", num_args = 0..=1)]
    pub affinity: Option<Option<String>>,

    /// Lock memory with mlockall (the default; kept for cyclictest users).
    #[arg(short = 'm', long = "mlock")]
    pub mlock: bool,

    /// Do not lock memory.
    #[arg(long = "no-mlock", conflicts_with = "mlock")]
    pub no_mlock: bool,

    /// No live view; print only the final result.
    #[arg(short = 'q', long = "quiet")]
    pub quiet: bool,

    /// Print a cyclictest-style histogram with 1 µs buckets up to this many µs.
    #[arg(short = 'h', long = "histogram", value_name = "US")]
    pub histogram: Option<String>,

    /// Stop the run when a latency exceeds this (µs or with unit); reports thread, CPU, value and
    /// loop, and exits 1.
    #[arg(short = 'b', long = "break-on", value_name = "TIME")]
    pub break_on: Option<String>,

    /// Clock to sleep on and read.
    #[arg(long, value_enum, default_value_t = Clock::Monotonic)]
    pub clock: Clock,

    /// Relative sleeps (expected wake-up = time before the sleep + period) instead of absolute.
    #[arg(long)]
    pub relative: bool,

    /// A group of threads: policy=fifo,threads=16,prio=80,priospread,interval=1000us,offset=50us,
    /// affinity=0-1 (deadline groups: runtime=, deadline=, period=, work=). Repeatable; keys
    /// left out take the values of the plain flags.
    #[arg(long = "group", value_name = "SPEC")]
    pub group: Vec<String>,

    /// Unit for latencies on screen.
    #[arg(long, value_enum, default_value_t = DisplayUnit::Us)]
    pub unit: DisplayUnit,

    /// Write the whole result as JSON (schema latlab.run/1) to FILE, or `-` for stdout.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,

    /// Layout of the --json file: latlab's, or cyclictest's (rt-tests) for existing parsers.
    #[arg(long, value_enum, default_value = "latlab", value_name = "FORMAT")]
    pub json_format: JsonFormat,

    /// Write every latency of every thread to FILE (binary, docs/samples-format.md).
    #[arg(long, value_name = "FILE")]
    pub samples: Option<PathBuf>,

    /// Hold /dev/cpu_dma_latency at this many µs during the run. Default 0.
    #[arg(long = "dma-latency", value_name = "US", default_value_t = 0)]
    pub dma_latency: i32,

    /// Do not touch /dev/cpu_dma_latency.
    #[arg(long = "no-dma-latency")]
    pub no_dma_latency: bool,

    /// Print help (-h is the histogram, as in cyclictest).
    #[arg(long, action = clap::ArgAction::Help)]
    pub help: Option<bool>,

    /// Kernel tracing options (`--trace`).
    #[command(flatten)]
    pub trace: TraceArgs,

    /// Loads and where the result is kept.
    #[command(flatten)]
    pub common: MeasureArgs,
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
pub enum JsonFormat {
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

    fn json(&self) -> Option<&std::path::Path> {
        self.json.as_deref()
    }

    fn lower(&self, online: &CpuSet) -> Result<Self::Config> {
        crate::measure::cyclic::config::CyclicConfig::from_args(self, online)
    }

    fn run(self, online: &CpuSet, command_line: Vec<String>) -> Result<()> {
        let rt_tests = self.json_format == JsonFormat::RtTests;
        if rt_tests && self.json.as_deref().is_none_or(|p| p.as_os_str() == "-") {
            return Err(crate::error::Error::Usage(
                "--json-format rt-tests needs --json FILE (a file, not stdout)".into(),
            ));
        }
        let config = self.lower(online)?;
        let r = crate::driver::execute(
            config,
            &self.common.to_common(self.json.as_deref())?,
            command_line,
        );
        match (&self.json, rt_tests) {
            (Some(p), true) if p.exists() => crate::export::rt_tests::rewrite_file(p).and(r),
            _ => r,
        }
    }
}
