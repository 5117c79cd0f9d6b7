//! The flags measurements share, each defined once (name, short letter, value parser, unit,
//! help), in small groups a measurement flattens into its arguments: timing (`-D`, `-i`, `-l`),
//! output (`-q`, `--json`; `--unit`), store (`--store`, `--no-store`, `--tag`), real-time
//! (`--strict`; `-p`, `--policy`), load (`--load`, `--housekeeping`), the measured CPUs (`-a`)
//! and a few more that several measurements take. A measurement that has no use for a member
//! flattens the members it has; the same flag means the same thing with the same parser
//! everywhere. What differs per measurement (a default, what the priority applies to) is added
//! to the help by the measurement (`#[command(mut_arg(..., |a| more_help(a, ...)))]`).
//!
//! Each one-flag group dereferences to its value, so `*a.timing.duration` is the `-D` given.

use clap::Args;
use latlab_core::config::values::{self, CpuList, Time};
use latlab_core::config::{DisplayUnit, Policy, TaskKind};
use std::path::PathBuf;

/// Appends `text` to a shared flag's help: a measurement's own words about it (its default,
/// what it applies to). A default stated here must be the code's; `tests/it/grammar.rs` checks.
pub(crate) fn more_help(a: clap::Arg, text: &str) -> clap::Arg {
    // clap drops a one-line doc comment's full stop; it is put back between the two.
    let help = a.get_help().map(ToString::to_string).unwrap_or_default();
    let help = help.trim_end();
    let stop = if help.is_empty() || help.ends_with('.') {
        ""
    } else {
        "."
    };
    a.help(format!("{help}{stop} {text}"))
}

/// A one-flag group: dereferences to its value.
macro_rules! deref_to {
    ($group:ty, $field:ident, $t:ty) => {
        impl std::ops::Deref for $group {
            type Target = $t;
            fn deref(&self) -> &$t {
                &self.$field
            }
        }
    };
}

/// The short name of the run length flag, defined here once (a plan's `--set duration=`
/// rewrites it in a measurement's arguments).
pub(crate) const DURATION_SHORT: char = 'D';
/// The long name of the run length flag.
pub(crate) const DURATION_LONG: &str = "duration";

/// `-D/--duration`: how long to run.
#[derive(Debug, Args, Clone, Default)]
pub(crate) struct DurationArg {
    /// How long to run: a bare number is seconds (10 = 10 s), or 500ms, 5m, 1h.
    #[arg(
        short = DURATION_SHORT,
        long = DURATION_LONG,
        value_name = "TIME",
        value_parser = values::run_length
    )]
    pub(crate) duration: Option<u64>,
}
deref_to!(DurationArg, duration, Option<u64>);

/// `-i/--interval`: the period of the measuring task.
#[derive(Debug, Args, Clone, Default)]
pub(crate) struct IntervalArg {
    /// Period of the measuring task: a bare number is µs (cyclictest's -i: 1000 = 1 ms), or
    /// 500us, 1ms.
    #[arg(
        short = 'i',
        long = "interval",
        value_name = "TIME",
        value_parser = values::short_time
    )]
    pub(crate) interval: Option<Time>,
}
deref_to!(IntervalArg, interval, Option<Time>);

/// `-l/--loops`: how many periods (wake-ups, messages, cycles) to measure.
#[derive(Debug, Args, Clone, Default)]
pub(crate) struct LoopsArg {
    /// Stop after this many periods (wake-ups, messages, cycles).
    #[arg(short = 'l', long = "loops", value_name = "N", value_parser = values::count)]
    pub(crate) loops: Option<u64>,
}
deref_to!(LoopsArg, loops, Option<u64>);

/// The timing group: `-D`, `-i`, `-l`.
#[derive(Debug, Args, Clone, Default)]
pub(crate) struct Timing {
    /// `-D/--duration`.
    #[command(flatten)]
    pub(crate) duration: DurationArg,
    /// `-i/--interval`.
    #[command(flatten)]
    pub(crate) interval: IntervalArg,
    /// `-l/--loops`.
    #[command(flatten)]
    pub(crate) loops: LoopsArg,
}

/// The output every measurement has: `-q/--quiet` and `--json`.
#[derive(Debug, Args, Clone, Default)]
pub(crate) struct Output {
    /// Print only the final result: no live view, no progress notes (warnings and errors are
    /// still printed).
    #[arg(short = 'q', long = "quiet")]
    pub(crate) quiet: bool,
    /// Write the result as JSON (schema latlab.run/1, docs/json-schema.md) to FILE, or `-` for
    /// stdout.
    #[arg(long = "json", value_name = "FILE")]
    pub(crate) json: Option<PathBuf>,
}

/// `--unit`: the unit of times on screen (the JSON is always in ns).
#[derive(Debug, Args, Clone)]
pub(crate) struct UnitArg {
    /// Unit of latencies on screen (the JSON is always in ns).
    #[arg(long = "unit", value_enum, default_value_t = DisplayUnit::Us)]
    pub(crate) unit: DisplayUnit,
}
deref_to!(UnitArg, unit, DisplayUnit);

/// Where a measurement's result is kept.
#[derive(Debug, Args, Clone, Default)]
pub(crate) struct StoreArgs {
    /// The results store: sqlite:PATH, or a PostgreSQL server as postgres://USER@HOST/DB or a
    /// libpq "host=... dbname=..." string (password from PGPASSWORD or ~/.pgpass, never on the
    /// command line). Without --store: $LATLAB_STORE, else $XDG_DATA_HOME/latlab/results.db.
    #[arg(long = "store", value_name = "STORE", global = false)]
    pub(crate) store: Option<String>,
    /// Do not store the result.
    #[arg(long = "no-store")]
    pub(crate) no_store: bool,
    /// Tag the stored run (repeatable): --tag kernel=6.1 --tag patch=vec-lock.
    #[arg(long = "tag", value_name = "KEY=VALUE")]
    pub(crate) tag: Vec<String>,
}

/// Loads run during a measurement.
#[derive(Debug, Args, Clone, Default)]
pub(crate) struct Loads {
    /// Run a load during the measurement: hackbench, cpu, memory, io, net or exec, with
    /// options (hackbench:groups=10,loops=100; io:path=/dev/vda,direct=1; exec:CMD).
    /// Repeatable; loads warm up before the start and are reaped after it.
    #[arg(long = "load", value_name = "KIND[:OPTS]")]
    pub(crate) load: Vec<String>,
    /// Confine every --load to these CPUs (a load's own cpus=LIST wins), as rteval keeps its
    /// loads on housekeeping CPUs; a warning is recorded when they overlap the measured CPUs.
    #[arg(long = "housekeeping", value_name = "CPUSET", value_parser = values::cpus)]
    pub(crate) housekeeping: Option<CpuList>,
}

/// `--strict`, the real-time member every measurement has.
#[derive(Debug, Args, Clone, Default)]
pub(crate) struct Strict {
    /// Fail (exit 3) instead of falling back with a warning when real-time scheduling, memory
    /// locking, thread placement or the DMA latency request is refused.
    #[arg(long = "strict")]
    pub(crate) strict: bool,
}

/// `-p/--priority`: the real-time priority of the measuring task(s).
#[derive(Debug, Args, Clone, Default)]
pub(crate) struct PriorityArg {
    /// Real-time priority of the measuring task, 1-99 (0 with a policy that is not real-time).
    #[arg(
        short = 'p',
        long = "priority",
        value_name = "PRIO",
        value_parser = values::priority
    )]
    pub(crate) priority: Option<i32>,
}
deref_to!(PriorityArg, priority, Option<i32>);

/// `--policy`: the scheduling policy of the measuring task(s).
#[derive(Debug, Args, Clone, Default)]
pub(crate) struct PolicyArg {
    /// Scheduling policy: fifo, rr, other, batch, idle or deadline (which of them this
    /// measurement can set is said below).
    #[arg(long = "policy", value_name = "POLICY", value_parser = Policy::parse_any)]
    pub(crate) policy: Option<Policy>,
}
deref_to!(PolicyArg, policy, Option<Policy>);

impl PolicyArg {
    /// The policy given, else `default`; one this measurement cannot set is exit 2 naming
    /// `--policy`.
    pub(crate) fn or(&self, default: Policy, allowed: &[Policy]) -> latlab_core::Result<Policy> {
        let p = self.policy.unwrap_or(default);
        if !allowed.contains(&p) {
            let names: Vec<String> = allowed.iter().map(ToString::to_string).collect();
            return Err(latlab_core::Error::flag(
                "--policy",
                p,
                format!("use {}", names.join(", ")),
            ));
        }
        Ok(p)
    }
}

impl PriorityArg {
    /// The priority given, else `rt_default` under a real-time policy and 0 under another;
    /// checked against the policy (exit 2 naming `-p/--priority`).
    pub(crate) fn for_policy(&self, policy: Policy, rt_default: i32) -> latlab_core::Result<i32> {
        let prio = self
            .priority
            .unwrap_or(if policy.is_rt() { rt_default } else { 0 });
        policy
            .check_prio(prio)
            .map_err(|e| latlab_core::Error::Usage(format!("-p/--priority: {e}")))?;
        Ok(prio)
    }
}

/// The real-time group's per-measurement members: `-p/--priority` and `--policy` (`--strict`
/// is with the options every measurement has).
#[derive(Debug, Args, Clone, Default)]
pub(crate) struct RealTime {
    /// `-p/--priority`.
    #[command(flatten)]
    pub(crate) priority: PriorityArg,
    /// `--policy`.
    #[command(flatten)]
    pub(crate) policy: PolicyArg,
}

/// `-a/--affinity`: the CPUs measured.
#[derive(Debug, Args, Clone, Default)]
pub(crate) struct Affinity {
    /// The CPUs measured (0-3,6; 0-15:2); without a list, every online CPU.
    #[arg(
        short = 'a',
        long = "affinity",
        value_name = "CPUSET",
        num_args = 0..=1,
        value_parser = values::cpus
    )]
    pub(crate) affinity: Option<Option<CpuList>>,
    /// Another name of -a/--affinity (noise's, ctxsw's and contend's before -a): messages
    /// name the spelling given.
    #[arg(
        long = "cpus",
        value_name = "CPUSET",
        hide = true,
        conflicts_with = "affinity",
        value_parser = values::cpus
    )]
    pub(crate) cpus: Option<CpuList>,
}

impl Affinity {
    /// The flag given, as it was spelled, and its list (None inside: `-a` alone).
    pub(crate) fn given(&self) -> Option<(&'static str, Option<&CpuList>)> {
        match (&self.affinity, &self.cpus) {
            (Some(a), _) => Some((AFFINITY, a.as_ref())),
            (None, Some(c)) => Some(("--cpus", Some(c))),
            (None, None) => None,
        }
    }

    /// The CPUs given, checked online (None: not given; `-a` alone: every online CPU).
    pub(crate) fn online(
        &self,
        online: &latlab_core::config::CpuSet,
    ) -> latlab_core::Result<Option<latlab_core::config::CpuSet>> {
        match self.given() {
            None => Ok(None),
            Some((_, None)) => Ok(Some(online.clone())),
            Some((flag, Some(l))) => l.online(flag, online).map(Some),
        }
    }
}

/// How `-a/--affinity` is named in messages.
pub(crate) const AFFINITY: &str = "-a/--affinity";

/// `--threshold`: the latency from which a measurement counts or explains a delay.
#[derive(Debug, Args, Clone, Default)]
pub(crate) struct ThresholdArg {
    /// Latencies at or above this count: a bare number is µs, or 50us, 1ms.
    #[arg(long = "threshold", value_name = "TIME", value_parser = values::short_time)]
    pub(crate) threshold: Option<Time>,
}
deref_to!(ThresholdArg, threshold, Option<Time>);

/// `--repeat`: how many runs.
#[derive(Debug, Args, Clone)]
pub(crate) struct RepeatArg {
    /// Number of runs, kept in one result.
    #[arg(long = "repeat", value_name = "N", default_value = "1", value_parser = values::count)]
    pub(crate) repeat: u64,
}
deref_to!(RepeatArg, repeat, u64);

/// `-n/--iterations`: timed iterations.
#[derive(Debug, Args, Clone, Default)]
pub(crate) struct IterationsArg {
    /// Timed iterations.
    #[arg(
        short = 'n',
        long = "iterations",
        value_name = "N",
        value_parser = values::count
    )]
    pub(crate) iterations: Option<u64>,
}
deref_to!(IterationsArg, iterations, Option<u64>);

/// `--tasks`: threads or processes.
#[derive(Debug, Args, Clone)]
pub(crate) struct TasksArg {
    /// Tasks are threads of latlab or forked processes (their own address spaces).
    #[arg(long = "tasks", value_enum, default_value_t = TaskKind::Threads)]
    pub(crate) tasks: TaskKind,
}
deref_to!(TasksArg, tasks, TaskKind);

/// `--sender-cpu`, `--receiver-cpu`: where a measurement's two tasks run.
#[derive(Debug, Args, Clone, Default)]
pub(crate) struct PeerCpus {
    /// Pin the sender to this CPU.
    #[arg(long = "sender-cpu", value_name = "CPU", value_parser = values::cpu)]
    pub(crate) sender_cpu: Option<usize>,
    /// Pin the receiver to this CPU.
    #[arg(long = "receiver-cpu", value_name = "CPU", value_parser = values::cpu)]
    pub(crate) receiver_cpu: Option<usize>,
}

impl PeerCpus {
    /// (sender, receiver), each checked online (exit 2 naming its flag).
    pub(crate) fn online(
        &self,
        online: &latlab_core::config::CpuSet,
    ) -> latlab_core::Result<(Option<usize>, Option<usize>)> {
        let check = |flag: &str, c: Option<usize>| match c {
            Some(c) if !online.contains(c) => Err(latlab_core::Error::flag(
                flag,
                c,
                format!("CPU is not online (online: {online})"),
            )),
            c => Ok(c),
        };
        Ok((
            check("--sender-cpu", self.sender_cpu)?,
            check("--receiver-cpu", self.receiver_cpu)?,
        ))
    }
}

/// `--no-mlock`.
#[derive(Debug, Args, Clone, Default)]
pub(crate) struct NoMlock {
    /// Do not lock memory (mlockall is the default).
    #[arg(long = "no-mlock")]
    pub(crate) no_mlock: bool,
}

/// `--ring`: how many tasks pass a token (ctxsw's pipes, ipc's signal) round a ring.
#[derive(Debug, Args, Clone, Default)]
pub(crate) struct RingArg {
    /// Tasks in the ring.
    #[arg(long = "ring", value_name = "N", value_parser = values::count)]
    pub(crate) ring: Option<u64>,
}
deref_to!(RingArg, ring, Option<u64>);

/// `-t/--threads [N]`: how many measuring threads.
#[derive(Debug, Args, Clone, Default)]
pub(crate) struct ThreadsArg {
    /// Number of measuring threads.
    #[arg(
        short = 't',
        long = "threads",
        value_name = "N",
        num_args = 0..=1,
        value_parser = values::count
    )]
    pub(crate) threads: Option<Option<u64>>,
}
deref_to!(ThreadsArg, threads, Option<Option<u64>>);
