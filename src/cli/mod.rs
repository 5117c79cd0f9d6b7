//! Raw command-line arguments (clap derive). No validation here beyond types: see `config`.

use crate::config::DisplayUnit;
use crate::sys::clock::Clock;
use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

/// latlab — a latency lab for Linux.
#[derive(Debug, Parser)]
#[command(name = "latlab", version, about, long_about = None, propagate_version = true)]
pub struct Cli {
    /// The measurement or tool to run.
    #[command(subcommand)]
    pub command: Command,
}

/// latlab's subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Timer wake-up latency of periodic threads (cyclictest's measurement).
    #[command(disable_help_flag = true)]
    Cyclic(Box<CyclicArgs>),
    /// Per-CPU noise: what steals each CPU from a spinning thread (oslat's measurement, seed 003).
    Noise(NoiseArgs),
    /// Context-switch cost by yield, pipe ring or futex, threads or processes (seed 000).
    Ctxsw(CtxswArgs),
    /// The cost of time: every clock's cost per call, resolution, granularity and path
    /// (vDSO or kernel), under chosen clocksources; cross-CPU monotonicity.
    Clocks(ClocksArgs),
    /// Loopback TCP throughput (netperf TCP_STREAM) or request/response (TCP_RR) (seed 001).
    Tcp(TcpArgs),
    /// Per-CPU timing of a contended per-priority structure under mutex, spin, atomic or per-CPU
    /// synchronisation, in the seed's table (seed 002).
    Contend(ContendArgs),
    /// RT push/pull stress and priority-order check (rt-migrate-test; seed 002).
    Migrate(MigrateArgs),
    /// Compare data sets: quantiles with bootstrap intervals, Mann-Whitney U, Welch's t,
    /// Holm–Bonferroni; or ministat's output with --ministat.
    Compare(CompareArgs),
    /// FreeBSD's ministat, byte for byte: `latlab ministat [-C column] [-c confidence]
    /// [-d delimiter(s)] [-Ans] [-w width] [file ...]`. Also `latlab compare --ministat ...`.
    #[command(disable_help_flag = true)]
    Ministat(MinistatArgs),
    /// Run a load that provokes latency, in the foreground: `latlab load hackbench` (one run,
    /// prints Time: like hackbench), `latlab load cpu:threads=2 -D 10s`.
    Load(LoadArgs),
    /// Runs one --load in a worker process (internal).
    #[command(hide = true)]
    LoadWorker(LoadWorkerArgs),
    /// Run an experiment plan (TOML): factors x levels x repeats, knobs restored, runs stored
    /// under one experiment id, each level compared with the baseline.
    Run(RunArgs),
    /// Put back system settings a plan changed and could not restore (after a crash or kill).
    Restore,
    /// The results store: list, show, export, import, delete runs.
    #[command(subcommand)]
    Runs(RunsCmd),
    /// Read a raw sample log written by `--samples`: summary per series, or CSV.
    Samples(SamplesArgs),
    /// One self-contained HTML page (inline SVG, no script) of runs, an experiment or a
    /// comparison: environment, histograms, maximum over time, percentiles, verdicts.
    Report(ReportArgs),
    /// One chart of a run as SVG or PNG: histogram, maximum over time, or cumulative
    /// distribution.
    Plot(PlotArgs),
    /// Judge a latency requirement on runs for CI: met (exit 0), violated (exit 1) or
    /// undecided (exit 4), with exact binomial bounds; --plan-for says how long to measure.
    Gate(GateArgs),
    /// Print a shell completion script: `latlab completions bash > /etc/bash_completion.d/latlab`.
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Write man pages (latlab.1, latlab-SUBCOMMAND.1) into DIR, e.g. /usr/local/share/man/man1.
    Man {
        /// Directory the pages go to (created if missing).
        dir: PathBuf,
    },
    /// Monitor latency continuously: cyclic threads on chosen CPUs, a Prometheus/OpenMetrics
    /// endpoint, a snapshot run stored every few minutes (docs/monitoring.md).
    Monitor(Box<MonitorArgs>),
}

/// Arguments of `latlab cyclic`. Times take units (ns, us, ms, s, m, h); a bare number is µs for
/// intervals and thresholds and seconds for durations, as in cyclictest.
#[derive(Debug, Args)]
#[command(after_help = CYCLIC_AFTER_HELP)]
pub struct CyclicArgs {
    /// Loads and where the result is kept.
    #[command(flatten)]
    pub common: MeasureArgs,

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

    /// Scheduling policy: fifo, rr, other, batch, idle. Default fifo (other when -p 0).
    #[arg(long, value_name = "POLICY")]
    pub policy: Option<crate::sys::policy::Policy>,

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
    /// affinity=0-1. Repeatable; keys left out take the values of the plain flags.
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

    /// Fail (exit 3) instead of falling back when RT scheduling, mlock or the DMA latency
    /// request is not granted.
    #[arg(long)]
    pub strict: bool,

    /// Print help (-h is the histogram, as in cyclictest).
    #[arg(long, action = clap::ArgAction::Help)]
    pub help: Option<bool>,

    /// Kernel tracing options (`--trace`).
    #[command(flatten)]
    pub trace: TraceArgs,
}

/// `--trace`: attribute every spike to IRQs, softirqs and threads from kernel tracepoints.
#[derive(Debug, Args, Clone, Default)]
pub struct TraceArgs {
    /// Trace the measured CPUs (private tracefs instance; needs root) and explain every
    /// latency at or above --trace-threshold: IRQ, softirq and thread interference, the
    /// blocking task and an unattributed rest. Adds `trace` to the JSON and a "why" summary.
    #[arg(long)]
    pub trace: bool,

    /// Latency from which a wake-up is explained (µs or with unit). Default 100us.
    #[arg(long = "trace-threshold", value_name = "TIME", requires = "trace")]
    pub trace_threshold: Option<String>,

    /// Write each explained spike's events (from 1 ms before the expected wake-up to the
    /// actual one) to FILE as a readable timeline; a FILE ending in `.dat` gets the raw trace
    /// instead (the run's last 64 MiB per CPU), in trace-cmd's trace.dat format.
    #[arg(long = "trace-save", value_name = "FILE", requires = "trace")]
    pub trace_save: Option<std::path::PathBuf>,

    /// When a spike reaches US (µs, or with a unit): `trace` (save its window as a trace.dat
    /// beside --trace-save, or as latlab-PID-spike-N.dat), `shell:CMD` (sh -c CMD with
    /// LATLAB_CPU, LATLAB_LATENCY_NS/_US, LATLAB_SERIES, LATLAB_SEQ, LATLAB_PID), `signal:PID:SIG`
    /// or `stop` (end the run). Repeatable; each firing is recorded in the JSON.
    #[arg(long = "on-threshold", value_name = "US:ACTION", requires = "trace")]
    pub on_threshold: Vec<String>,

    /// Most firings of each --on-threshold rule in a run (default 10).
    #[arg(long = "on-threshold-max", value_name = "N", requires = "trace")]
    pub on_threshold_max: Option<u32>,

    /// Record the kernel stack of what the CPU ran when each measuring thread was woken
    /// (a stacktrace trigger), named from /proc/kallsyms; attached to every spike, the
    /// worst one's shown (cyclic only).
    #[arg(long = "trace-stacks", requires = "trace")]
    pub trace_stacks: bool,
}

const CYCLIC_AFTER_HELP: &str = "\
Method: each thread sleeps with clock_nanosleep(TIMER_ABSTIME) until its next period and records
latency = wake-up time - expected time, in ns. A wake-up so late that whole periods passed counts
those periods as overruns; the true maximum is always kept.

Seed 004 (16 FIFO + 16 OTHER tasks) as one command:
  latlab cyclic -D 60s \\
    --group policy=fifo,threads=16,prio=80,priospread,interval=1000us,offset=50us \\
    --group policy=other,threads=16,interval=1000us,offset=500us";

/// Arguments of `latlab samples`.
#[derive(Debug, Args)]
pub struct SamplesArgs {
    /// The sample log written by `--samples`.
    pub file: PathBuf,
    /// Print every sample as CSV (series,cpu,loop,latency_ns) instead of a summary.
    #[arg(long)]
    pub csv: bool,
    /// Unit for the summary.
    #[arg(long, value_enum, default_value_t = DisplayUnit::Us)]
    pub unit: DisplayUnit,
}

/// Arguments of `latlab ministat`: passed through unparsed to ministat's own option rules.
#[derive(Debug, Args)]
pub struct MinistatArgs {
    /// ministat's flags and files (file names need not be UTF-8).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
    pub args: Vec<std::ffi::OsString>,
}

/// Arguments of `latlab compare` (tail-aware mode; `--ministat` switches to ministat's exact
/// command line and output).
#[derive(Debug, Args)]
#[command(after_help = COMPARE_AFTER_HELP)]
pub struct CompareArgs {
    /// Data sets, the first is the baseline: [LABEL=]PATH[,PATH...]. A PATH is a value file (one
    /// number per line, `#` comments; `-` for stdin), a latlab JSON result, or run:ID for a
    /// stored run.
    #[arg(value_name = "SET", required = true)]
    pub sets: Vec<std::ffi::OsString>,
    /// For JSON results: the whole latency distribution, or one figure per run.
    #[arg(long, value_enum, default_value_t = crate::compare::inputs::Metric::Latency)]
    pub metric: crate::compare::inputs::Metric,
    /// For JSON results: use only this series (default: all series merged).
    #[arg(long, value_name = "NAME")]
    pub series: Option<String>,
    /// Unit JSON latencies are shown in.
    #[arg(long, value_enum, default_value_t = DisplayUnit::Us)]
    pub unit: DisplayUnit,
    /// Column of value files to read (1-based).
    #[arg(short = 'C', long, default_value_t = 1)]
    pub column: usize,
    /// Delimiter characters of value files.
    #[arg(short = 'd', long, default_value = " \t")]
    pub delimiter: String,
    /// Confidence level in per cent.
    #[arg(short = 'c', long, default_value_t = 95.0)]
    pub confidence: f64,
    /// Bootstrap replicates for quantile intervals.
    #[arg(long, default_value_t = 10_000)]
    pub bootstrap: usize,
    /// Seed of the bootstrap generator (printed, so results are reproducible).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Larger values are better (throughput); by default smaller is better (latency).
    #[arg(long)]
    pub higher_is_better: bool,
    /// Output format.
    #[arg(long, value_enum, default_value_t = crate::compare::render::Format::Table)]
    pub format: crate::compare::render::Format,
    /// Switch to ministat's exact command line and output (`latlab compare --ministat a b`).
    #[arg(long)]
    pub ministat: bool,
    /// Store to read `run:ID` sets from.
    #[arg(long)]
    pub store: Option<String>,
    /// With one latlab run on a side, test its samples as if they were independent (they are
    /// not: spikes come in bursts and run-to-run variation is invisible); without it, one run
    /// a side shows its figures but proves no difference.
    #[arg(long)]
    pub assume_independent_samples: bool,
}

const COMPARE_AFTER_HELP: &str = "\
Per set: N, min, p50, p90, p99, p99.9, max, mean, stddev. Against the baseline: differences of
p50, p99 and p99.9 with percentile-bootstrap intervals (each set resampled exactly through its
order statistics, so a million samples cost no more than ten), Welch's t for the mean, and the
Mann-Whitney U test for the whole distribution with P(set > baseline). With several sets,
intervals are Bonferroni-split and p-values Holm-adjusted. A quantile is compared only when
every set has at least 10/(1-q) samples (p99.9: 10000).

The run is the unit of replication. Sets of latlab results with at least two runs each are
compared through per-run figures (each run's p50, p99, p99.9 and mean, Welch's t across runs).
With one run on a side, run-to-run variation is unknown and no difference is proven, unless
--assume-independent-samples tests the samples themselves (optimistic: samples are bursty).
Value files are taken as one replicate per value, as ministat does.

Examples:
  latlab compare before.txt after.txt
  latlab compare base=run1.json,run2.json new=run3.json,run4.json --metric p99
  latlab compare --ministat -c 99 preempt preempt.tsc";

/// Arguments of `latlab noise`.
#[derive(Debug, Args)]
#[command(after_help = NOISE_AFTER_HELP)]
pub struct NoiseArgs {
    /// Loads and where the result is kept.
    #[command(flatten)]
    pub common: MeasureArgs,

    /// CPUs to measure (default: every online CPU but the main CPU; all when there is one).
    #[arg(long, value_name = "CPUSET")]
    pub cpus: Option<String>,
    /// CPU of the control thread (default 0, as in the seed).
    #[arg(long, value_name = "CPU")]
    pub main_cpu: Option<usize>,
    /// Length of each measurement: 5 (s), 500ms, 1m. Default 5 s.
    #[arg(value_parser = seconds, short = 'D', long, value_name = "TIME", allow_negative_numbers = true)]
    pub duration: Option<u64>,
    /// Gaps at or above this count as interruptions (µs or with unit). Default 1 µs.
    #[arg(long, value_name = "TIME", allow_negative_numbers = true)]
    pub threshold: Option<String>,
    /// Spinner policy: fifo (default), rr, other, batch, idle.
    #[arg(long)]
    pub policy: Option<crate::sys::policy::Policy>,
    /// Spinner priority (default 50, as in the seed).
    #[arg(short = 'p', long, allow_negative_numbers = true)]
    pub priority: Option<i32>,
    /// Timestamp: tsc (calibrated; default on x86 with constant TSC) or monotonic.
    #[arg(long, value_enum)]
    pub clock: Option<crate::config::noise::NoiseClock>,
    /// Run a shell command on --disturb-cpu a third of the way into each measurement.
    #[arg(long, value_name = "CMD")]
    pub disturb: Option<String>,
    /// CPU for the disturbing command (default: the main CPU).
    #[arg(long, value_name = "CPU")]
    pub disturb_cpu: Option<usize>,
    /// Number of measurements, aggregated per CPU (outliers flagged, never dropped).
    #[arg(long, default_value_t = 1)]
    pub repeat: u32,
    /// Spin at RT priority on every CPU even with RT throttling off (the machine may hang).
    #[arg(long)]
    pub force: bool,
    /// Fail (exit 3) instead of falling back when RT scheduling or mlock is refused.
    #[arg(long)]
    pub strict: bool,
    /// No live view and no per-repeat lines.
    #[arg(short = 'q', long)]
    pub quiet: bool,
    /// Unit on screen.
    #[arg(long, value_enum, default_value_t = DisplayUnit::Us)]
    pub unit: DisplayUnit,
    /// Write the result as JSON to FILE, or `-` for stdout.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,

    /// Kernel tracing options (`--trace`): explain interruptions at or above the threshold.
    #[command(flatten)]
    pub trace: TraceArgs,
}

const NOISE_AFTER_HELP: &str = "\
Method: one thread per measured CPU, pinned, at SCHED_FIFO 50 by default, reads the timestamp
back to back and accounts every gap between two reads. A gap at or above --threshold is an
interruption: something (an interrupt, a kernel thread, another task) took the CPU away.

Seed 003 (per-CPU max gap with a disturbing command on CPU 0, repeated):
  latlab noise -D 1s --repeat 100 --disturb 'modprobe -r dummy; modprobe dummy'";

/// Arguments of `latlab ctxsw`.
#[derive(Debug, Args)]
#[command(after_help = CTXSW_AFTER_HELP)]
pub struct CtxswArgs {
    /// Loads and where the result is kept.
    #[command(flatten)]
    pub common: MeasureArgs,

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
    /// Fail (exit 3) instead of falling back when RT scheduling or mlock is refused.
    #[arg(long)]
    pub strict: bool,
    /// Unit on screen.
    #[arg(long, value_enum, default_value_t = DisplayUnit::Us)]
    pub unit: DisplayUnit,
    /// Write the result as JSON to FILE, or `-` for stdout.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

const CTXSW_AFTER_HELP: &str = "\
yield: two SCHED_FIFO tasks pinned to one CPU yield to each other; a sample is the time
around sched_yield, two switches. pipe: a token goes round a ring of tasks through pipes; the
cost of the same pipe work and memory touching without switching is measured on its own and
subtracted (lmbench). futex: a wake/wait ping-pong, two switches per round trip. Costs are
shown per switch; the raw round trips are in the JSON.

Seed 000: latlab ctxsw --ioperm all --seed-output";

/// Arguments of `latlab clocks`.
#[derive(Debug, Args)]
pub struct ClocksArgs {
    /// Loads and where the result is kept.
    #[command(flatten)]
    pub common: MeasureArgs,

    /// Sources to measure, comma-separated (default: all): realtime, monotonic, monotonic_raw,
    /// boottime, tai, realtime_coarse, monotonic_coarse, process_cputime, thread_cputime,
    /// gettimeofday, time, rdtsc, rdtscp.
    #[arg(long, value_name = "LIST")]
    pub clocks: Option<String>,
    /// Measure under each of these clocksources (e.g. tsc,kvm-clock, or all); the original is
    /// restored afterwards, also on Ctrl-C and errors.
    #[arg(long, value_name = "LIST")]
    pub clocksource: Option<String>,
    /// Also check monotonicity across CPUs for this long (monotonic, monotonic_raw, rdtsc);
    /// a backward step fails the check (exit 1).
    #[arg(long, value_name = "SECONDS")]
    pub check_monotonic: Option<String>,
    /// Batches timed per source.
    #[arg(long, default_value_t = 2000)]
    pub batches: usize,
    /// Calls per batch.
    #[arg(long, default_value_t = 100)]
    pub batch: usize,
    /// Unit for resolution and granularity (costs per call are always in ns). Sub-microsecond
    /// values keep three significant digits in us.
    #[arg(long, value_enum, default_value_t = DisplayUnit::Ns)]
    pub unit: DisplayUnit,
    /// Write the result as JSON to FILE, or `-` for stdout.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

/// Arguments of `latlab load`.
#[derive(Debug, Args)]
pub struct LoadArgs {
    /// KIND[:key=value,...]: hackbench (groups, fds, loops, datasize, mode=process|thread,
    /// ipc=socket|pipe), cpu (threads, policy, prio), memory (threads, size), io (path, direct,
    /// block, size), net (size), exec:CMD.
    pub spec: String,
    /// Run this long (default: hackbench does one run; others run until Ctrl-C).
    #[arg(value_parser = seconds, short = 'D', long, value_name = "TIME")]
    pub duration: Option<u64>,
}

/// Arguments of the hidden `load-worker`.
#[derive(Debug, Args)]
pub struct LoadWorkerArgs {
    /// The load spec.
    pub spec: String,
}

/// Arguments of `latlab tcp`.
#[derive(Debug, Args)]
pub struct TcpArgs {
    /// Loads and where the result is kept.
    #[command(flatten)]
    pub common: MeasureArgs,
    /// stream (throughput) or rr (request/response).
    #[arg(long, value_enum, default_value_t = crate::measure::tcp::Mode::Stream)]
    pub mode: crate::measure::tcp::Mode,
    /// Length of each run: 10 (s), 500ms.
    #[arg(
        value_parser = seconds,
        short = 'D',
        long,
        default_value = "10s",
        allow_negative_numbers = true
    )]
    pub duration: u64,
    /// Bytes per send (stream; default 128k, as iperf3's TCP default, so the two compare at equal sends).
    #[arg(short = 'm', long, value_name = "SIZE")]
    pub send_size: Option<String>,
    /// Request size (rr; default 1).
    #[arg(short = 'r', long, value_name = "SIZE")]
    pub request_size: Option<String>,
    /// Response size (rr; default 1).
    #[arg(long, value_name = "SIZE")]
    pub response_size: Option<String>,
    /// Sender socket buffer (SO_SNDBUF).
    #[arg(short = 's', long, value_name = "SIZE")]
    pub send_buffer: Option<String>,
    /// Receiver socket buffer (SO_RCVBUF).
    #[arg(short = 'S', long, value_name = "SIZE")]
    pub recv_buffer: Option<String>,
    /// Set TCP_NODELAY on the sender.
    #[arg(long)]
    pub nodelay: bool,
    /// Pin the sender (client) to this CPU.
    #[arg(long, value_name = "CPU")]
    pub sender_cpu: Option<usize>,
    /// Pin the receiver (server) to this CPU.
    #[arg(long, value_name = "CPU")]
    pub receiver_cpu: Option<usize>,
    /// Receiver in a thread or in a forked process.
    #[arg(long, value_enum, default_value_t = crate::measure::ctxsw::methods::TaskKind::Threads)]
    pub tasks: crate::measure::ctxsw::methods::TaskKind,
    /// Runs; with more than one, stdout gets one figure per line (for latlab compare or
    /// ministat) and the table goes to stderr.
    #[arg(long, default_value_t = 1)]
    pub repeat: u32,
    /// Loopback address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    pub address: String,
    /// Port (0: any free one).
    #[arg(long, default_value_t = 0)]
    pub port: u16,
    /// Unit for round trips.
    #[arg(long, value_enum, default_value_t = DisplayUnit::Us)]
    pub unit: DisplayUnit,
    /// Write the result as JSON to FILE, or `-` for stdout.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

/// Arguments of `latlab contend`.
#[derive(Debug, Args)]
pub struct ContendArgs {
    /// Loads and where the result is kept.
    #[command(flatten)]
    pub common: MeasureArgs,
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
    /// Write the result as JSON to FILE, or `-` for stdout.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

/// Arguments of `latlab migrate`.
#[derive(Debug, Args)]
pub struct MigrateArgs {
    /// Loads and where the result is kept.
    #[command(flatten)]
    pub common: MeasureArgs,
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
    /// Write the result as JSON to FILE, or `-` for stdout.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

/// Options every measurement takes: loads to run during it and where its result is kept.
#[derive(Debug, Args, Clone)]
pub struct MeasureArgs {
    /// Where results are kept.
    #[command(flatten)]
    pub store: StoreArgs,
    /// Run a load during the measurement: hackbench, cpu, memory, io, net or exec, with
    /// options (hackbench:groups=10,loops=100; io:path=/dev/vda,direct=1; exec:CMD).
    /// Repeatable; loads warm up before the start and are reaped after it.
    #[arg(long = "load", value_name = "KIND[:OPTS]")]
    pub load: Vec<String>,
}

/// Where a measurement's result is kept.
#[derive(Debug, Args, Clone)]
pub struct StoreArgs {
    /// The results store: sqlite:PATH, or a PostgreSQL server as postgres://USER@HOST/DB or a
    /// libpq "host=... dbname=..." string (password from PGPASSWORD or ~/.pgpass, never on the
    /// command line). Default: $LATLAB_STORE, else $XDG_DATA_HOME/latlab/results.db.
    #[arg(long = "store", value_name = "STORE", global = false)]
    pub store: Option<String>,
    /// Do not store the result.
    #[arg(long = "no-store")]
    pub no_store: bool,
    /// Tag the stored run (repeatable): --tag kernel=6.1 --tag patch=vec-lock.
    #[arg(long = "tag", value_name = "KEY=VALUE")]
    pub tag: Vec<String>,
}

/// `latlab runs` subcommands.
#[derive(Debug, Subcommand)]
pub enum RunsCmd {
    /// List stored runs, newest first.
    List {
        /// Only this kind: a measurement (cyclic, noise, ctxsw, clocks, tcp, contend, migrate)
        /// or an imported tool (cyclictest, oslat, hackbench, iperf3).
        #[arg(long, value_parser = clap::builder::PossibleValuesParser::new(crate::store::KINDS))]
        kind: Option<String>,
        /// Only runs with this tag (repeatable).
        #[arg(long = "tag", value_name = "KEY=VALUE")]
        tag: Vec<String>,
        /// Only runs measured on this host.
        #[arg(long)]
        host: Option<String>,
        /// The store.
        #[arg(long)]
        store: Option<String>,
    },
    /// Print a stored run: the table its measurement printed (a per-series summary for other
    /// kinds), or with --json its whole JSON result with its tags.
    Show {
        /// Run id.
        id: String,
        /// Print the raw run and its tags as JSON instead of the summary.
        #[arg(long)]
        json: bool,
        /// Unit for latencies in the summary.
        #[arg(long, value_enum, default_value_t = DisplayUnit::Us)]
        unit: DisplayUnit,
        /// The store.
        #[arg(long)]
        store: Option<String>,
    },
    /// Write runs as a bundle (JSON) to stdout, for `runs import` elsewhere.
    Export {
        /// Run ids.
        #[arg(required_unless_present = "all")]
        ids: Vec<String>,
        /// Every run in the store.
        #[arg(long)]
        all: bool,
        /// The store.
        #[arg(long)]
        store: Option<String>,
    },
    /// Import a bundle; runs already present are skipped (idempotent). With --from, import
    /// another tool's output as new runs tagged tool=NAME.
    Import {
        /// The bundle file (`-` for stdin), or the tool's output with --from.
        file: PathBuf,
        /// The store.
        #[arg(long)]
        store: Option<String>,
        /// Read FILE as this tool's output: cyclictest/oslat --json, rtla timerlat/osnoise hist
        /// text, hackbench's text (one run per Time: line), iperf3 -J.
        #[arg(long, value_enum, value_name = "TOOL")]
        from: Option<crate::import::Tool>,
        /// Tag the imported runs (repeatable), besides tool=NAME.
        #[arg(long = "tag", value_name = "KEY=VALUE", requires = "from")]
        tag: Vec<String>,
    },
    /// Delete a stored run.
    Delete {
        /// Run id.
        id: String,
        /// The store.
        #[arg(long)]
        store: Option<String>,
    },
}

/// Arguments of `latlab run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The plan file (see examples/).
    pub plan: PathBuf,
    /// The results store the runs go to.
    #[arg(long)]
    pub store: Option<String>,
    /// Check the plan as the run would and print the runs it would make (shell-quoted) and
    /// the time it will take, changing nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Override a plan key without editing the file (repeatable): repeats=3, duration=2s,
    /// order=interleaved, seed=7, metric=max, or a dotted key such as design.repeats=3.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
}

/// Arguments of `latlab report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Runs to show: stored ids, run:ID, or result files (FILE.json). Several runs are also
    /// compared, the first being the baseline.
    #[arg(value_name = "RUN")]
    pub inputs: Vec<String>,
    /// Every run stored under this experiment id (tag experiment=ID, as `latlab run` stores
    /// them), grouped by their other tags and compared.
    #[arg(long, value_name = "ID")]
    pub experiment: Option<String>,
    /// The HTML file to write.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: PathBuf,
    /// The results store stored runs are read from.
    #[arg(long)]
    pub store: Option<String>,
}

/// Arguments of `latlab gate`.
#[derive(Debug, Args)]
#[command(after_help = GATE_AFTER_HELP)]
pub struct GateArgs {
    /// The requirement: pQ<TIME (p99.9<100us) or rate(>TIME)<RATE (rate(>200us)<1e-6).
    #[arg(value_name = "REQUIREMENT", required_unless_present = "plan_for")]
    pub requirement: Option<String>,
    /// Runs judged together: latlab JSON results, or stored runs (run:ID or ID).
    #[arg(value_name = "RUN")]
    pub inputs: Vec<PathBuf>,
    /// Confidence of each one-sided bound (a fraction).
    #[arg(long, default_value_t = 0.95)]
    pub confidence: f64,
    /// Use only this series of each run (default: all series).
    #[arg(long, value_name = "NAME")]
    pub series: Option<String>,
    /// Accept a verdict from a single run, treating its samples as independent.
    #[arg(long)]
    pub assume_independent_samples: bool,
    /// Print how many samples (how long at --rate) a run needs to decide this requirement.
    #[arg(long, value_name = "REQUIREMENT")]
    pub plan_for: Option<String>,
    /// Samples per second, for --plan-for.
    #[arg(long, value_name = "HZ")]
    pub rate: Option<f64>,
    /// Print the judgement as JSON.
    #[arg(long)]
    pub json: bool,
    /// Store to read run ids from.
    #[arg(long)]
    pub store: Option<String>,
}

/// Arguments of `latlab plot`.
#[derive(Debug, Args)]
pub struct PlotArgs {
    /// The run: a stored id, run:ID, or a result file (FILE.json).
    #[arg(value_name = "RUN")]
    pub input: String,
    /// The chart.
    #[arg(long, value_enum, default_value = "hist")]
    pub kind: crate::report::PlotKind,
    /// The SVG file to write.
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
    /// A PNG file to write (the same chart at twice its size).
    #[arg(long, value_name = "FILE")]
    pub png: Option<PathBuf>,
    /// The results store a stored run is read from.
    #[arg(long)]
    pub store: Option<String>,
}

pub mod commands;
pub mod docs;
pub mod lower;

/// Parses a duration (`10s`, `500ms`, `1h`; a bare number is seconds) into nanoseconds, for
/// clap: a bad value is an exit-2 message naming the flag.
pub fn seconds(v: &str) -> Result<u64, String> {
    crate::config::parse_time_ns(v, crate::config::BareUnit::Seconds)
}

const GATE_AFTER_HELP: &str = "\
Each requirement is a rate: p99.9<100us means at most 0.1% of samples at or above 100 us.
Events are counted in the runs' HDR histograms (a bucket straddling the threshold counts as
an event for the upper bound only; the exact maximum clears buckets below it). The pooled rate
gets exact one-sided Clopper-Pearson bounds (zero events: about 3/n at 95%, the rule of three);
with two or more runs, a t bound over the runs' own rates widens them when runs disagree.
met: upper bound < limit. violated: lower bound > limit. undecided otherwise, with how many
more samples (and seconds at the runs' rate) would decide.

The run is the unit of replication: on one run the outcome is printed but the verdict is
undecided (exit 4) unless --assume-independent-samples.

Exit codes: 0 met, 1 violated, 2 bad usage, 3 environment, 4 undecided.

Examples:
  latlab gate 'p99.9<100us' r1.json r2.json r3.json
  latlab gate 'rate(>200us)<1e-6' run:ab12 run:cd34 --confidence 0.99
  latlab gate --plan-for 'p99.99<50us' --rate 1000";

/// Layouts of `cyclic --json`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum JsonFormat {
    /// latlab.run/1 (docs/json-schema.md).
    Latlab,
    /// cyclictest's --json layout (rt-tests).
    RtTests,
}

/// Arguments of `latlab monitor`. Times take units (ns, us, ms, s, m, h); a bare number is µs
/// for the interval and threshold and seconds for durations.
#[derive(Debug, Args)]
pub struct MonitorArgs {
    /// Where snapshots are kept, extra tags (host= and monitor= are always added), loads.
    #[command(flatten)]
    pub common: MeasureArgs,
    /// CPUs to measure, one thread each (default: all online CPUs).
    #[arg(short = 'a', long = "affinity", value_name = "CPUSET")]
    pub affinity: Option<String>,
    /// Period of the measuring threads. Default 1000 µs.
    #[arg(short = 'i', long = "interval", value_name = "TIME")]
    pub interval: Option<String>,
    /// SCHED_FIFO priority of the measuring threads (0: SCHED_OTHER). Default 80.
    #[arg(
        short = 'p',
        long = "priority",
        value_name = "PRIO",
        allow_negative_numbers = true
    )]
    pub priority: Option<i32>,
    /// Address of the /metrics and /status endpoint. Default 127.0.0.1:9477 (loopback only);
    /// listening wider must be asked for, e.g. 0.0.0.0:9477. Port 0 picks a free port (printed).
    #[arg(long, value_name = "ADDR:PORT")]
    pub listen: Option<String>,
    /// Store a snapshot run (kind monitor) this often. Default 5m.
    #[arg(long = "snapshot-every", value_name = "TIME")]
    pub snapshot_every: Option<String>,
    /// Count wake-ups later than this (latlab_threshold_exceeded_total).
    #[arg(long, value_name = "TIME")]
    pub threshold: Option<String>,
    /// Name of this monitor, stored as tag monitor=ID (default: the host name).
    #[arg(long = "monitor-id", value_name = "ID")]
    pub monitor_id: Option<String>,
    /// Stop after this long (default: until SIGTERM or Ctrl-C).
    #[arg(short = 'D', long = "duration", value_name = "TIME")]
    pub duration: Option<String>,
    /// Do not lock memory.
    #[arg(long = "no-mlock")]
    pub no_mlock: bool,
    /// Write the last snapshot as JSON to FILE, or `-` for stdout.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Fail (exit 3) instead of falling back when RT scheduling or mlock is not granted.
    #[arg(long)]
    pub strict: bool,
}
