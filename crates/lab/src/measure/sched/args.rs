//! `latlab sched`'s raw arguments (clap) and their lowering into [`SchedConfig`]: exactly one
//! target, every flag checked, each failure an exit-2 message naming the flag.

use super::target::{self, Target};
use super::SchedConfig;
use latlab_core::config::CpuSet;
use crate::driver::args::groups::{more_help, Affinity, DurationArg, ThresholdArg, UnitArg};
use crate::driver::args::MeasureArgs;
use latlab_core::error::{Error, Result};
use clap::Args;
use std::path::{Path, PathBuf};

/// Arguments of `latlab sched`. Times take units (ns, us, ms, s); a bare number is µs, except
/// the duration's (seconds).
#[derive(Debug, Args)]
#[command(after_help = SCHED_AFTER_HELP)]
#[command(mut_arg("affinity", |a| more_help(a, "Only delays on these CPUs are measured (a \
    task's wake-up counts on the CPU it was switched in on); scheduler events are read on every \
    CPU. Default: every CPU.")))]
#[command(mut_arg("duration", |a| more_help(a, "Default: until the command (or every --pid \
    process) exits, or Ctrl-C.")))]
#[command(mut_arg("threshold", |a| more_help(a, "Delays at or over this are explained (who ran \
    instead). Default 100.")))]
pub(crate) struct SchedArgs {
    /// Every thread of these processes (and threads they start later).
    #[arg(long, value_name = "PID[,PID]")]
    pub(crate) pid: Option<String>,
    /// These threads.
    #[arg(long, value_name = "TID[,TID]")]
    pub(crate) tid: Option<String>,
    /// Tasks with this name (15 bytes, as `ps -L -o comm` shows), including ones that start
    /// later.
    #[arg(long, value_name = "NAME")]
    pub(crate) comm: Option<String>,
    /// Tasks in this cgroup (v2) or below it: /sys/fs/cgroup/PATH or PATH.
    #[arg(long, value_name = "PATH")]
    pub(crate) cgroup: Option<String>,
    /// Every task (latlab's own excepted); the event rate is printed.
    #[arg(long)]
    pub(crate) all: bool,
    /// `-a/--affinity`.
    #[command(flatten)]
    pub(crate) affinity: Affinity,
    /// `-D/--duration`.
    #[command(flatten)]
    pub(crate) duration: DurationArg,
    /// `--threshold`.
    #[command(flatten)]
    pub(crate) threshold: ThresholdArg,
    /// `--unit`.
    #[command(flatten)]
    pub(crate) unit: UnitArg,
    /// The command to run and measure (after `--`), with every thread and child it makes;
    /// latlab ends when it exits and exits with its status.
    #[arg(last = true, value_name = "CMD")]
    pub(crate) command: Vec<String>,

    /// Loads and where the result is kept.
    #[command(flatten)]
    pub(crate) common: MeasureArgs,
}

const SCHED_AFTER_HELP: &str = "\
Per task, from the sched tracepoints (root; tracefs is mounted if needed):
  wake-up latency   sched_waking -> switched in (the series' values)
  preemption delay  switched out while runnable -> switched in again
  run time, migrations, and who woke it (a task, an IRQ, a softirq, an hrtimer).
Delays over --threshold are explained as --trace explains a spike: the IRQs, softirqs and
threads (by command, with their real priority) that held the CPU instead.
Engines: where the kernel takes BPF, programs on the tracepoints aggregate in kernel (counts
and maxima exact, quantiles within an eighth of an octave; a delay's explanation names the
tasks its CPU ran, not IRQs); else every event is read through tracefs and replayed.
LATLAB_TRACER=tracefs or =bpf chooses; the run's parameters.engine says which ran.
Examples:
  latlab sched --comm myloop -D 30s
  latlab sched -a 1 -- ./my-control-loop --rate 1000
  latlab gate 'p99.9<100us' run:ID";

/// Where the cgroup v2 hierarchy is mounted (`/sys/fs/cgroup`, or `/sys/fs/cgroup/unified` on
/// a hybrid host), from /proc/mounts.
fn cgroup2_mount() -> Option<PathBuf> {
    let m = std::fs::read_to_string("/proc/mounts").ok()?;
    m.lines().find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        (f.len() > 2 && f[2] == "cgroup2").then(|| PathBuf::from(f[1]))
    })
}

/// Where `--pid`, `--tid` and `--cgroup` are looked up (tests point these at a fake tree).
pub(crate) struct Roots<'a> {
    /// /proc.
    pub(crate) proc: &'a Path,
    /// The cgroup2 mount.
    pub(crate) cgroup: &'a Path,
}

impl SchedArgs {
    /// Validates the arguments against the online CPUs and the system's /proc.
    pub(crate) fn to_config(&self, online: &CpuSet) -> Result<SchedConfig> {
        let cgroup =
            match (&self.cgroup, cgroup2_mount()) {
                (Some(_), None) => return Err(Error::Env(
                    "--cgroup: no cgroup v2 hierarchy is mounted (/proc/mounts has no cgroup2); \
                     mount one (mount -t cgroup2 none /sys/fs/cgroup) or use --pid"
                        .into(),
                )),
                (_, m) => m.unwrap_or_else(|| PathBuf::from("/sys/fs/cgroup")),
            };
        self.to_config_in(
            online,
            &Roots {
                proc: Path::new("/proc"),
                cgroup: &cgroup,
            },
        )
    }

    /// As [`SchedArgs::to_config`], looking tasks up under `roots`.
    pub(crate) fn to_config_in(&self, online: &CpuSet, roots: &Roots<'_>) -> Result<SchedConfig> {
        let given = [
            self.pid.is_some(),
            self.tid.is_some(),
            self.comm.is_some(),
            self.cgroup.is_some(),
            self.all,
            !self.command.is_empty(),
        ];
        let n = given.iter().filter(|&&g| g).count();
        if n == 0 {
            return Err(Error::Usage(
                "latlab sched: give a target: --pid, --tid, --comm, --cgroup, --all, or -- CMD \
                 (an empty `--` runs nothing)"
                    .into(),
            ));
        }
        if n > 1 {
            return Err(Error::Usage(
                "latlab sched: give one target: --pid, --tid, --comm, --cgroup, --all and -- CMD \
                 exclude each other"
                    .into(),
            ));
        }
        let target = if let Some(v) = &self.pid {
            Target::Pid(target::ids("--pid", v, roots.proc)?)
        } else if let Some(v) = &self.tid {
            Target::Tid(target::ids("--tid", v, roots.proc)?)
        } else if let Some(v) = &self.comm {
            Target::Comm(target::comm_name(v)?)
        } else if let Some(v) = &self.cgroup {
            Target::Cgroup(target::cgroup(v, roots.cgroup)?)
        } else if self.all {
            Target::All
        } else {
            let cmd = &self.command[0];
            if cmd.is_empty() || !latlab_core::sys::process::command_exists(cmd) {
                return Err(Error::flag(
                    "--",
                    cmd,
                    "no such command (not an executable file, nor on PATH)",
                ));
            }
            Target::Command(self.command.clone())
        };
        let cpus = self
            .affinity
            .online(online)?
            .map(|set| set.iter().collect());
        let threshold_ns = self
            .threshold
            .as_ref()
            .map_or(latlab_trace::session::DEFAULT_THRESHOLD_NS, |t| t.ns);
        Ok(SchedConfig {
            target,
            cpus,
            duration_ns: *self.duration,
            threshold_ns,
            unit: *self.unit,
            notes: self
                .comm
                .as_ref()
                .filter(|v| v.len() > target::COMM_LEN)
                .map(|v| {
                    format!(
                        "--comm {v:?}: the kernel keeps {} bytes of a task's name; matching {:?}",
                        target::COMM_LEN,
                        target::comm_name(v).unwrap_or_default()
                    )
                })
                .into_iter()
                .collect(),
            engine: super::engine::Engine::Tracefs,
        })
    }
}

impl crate::driver::Lowering for SchedArgs {
    type Config = SchedConfig;

    fn common(&self) -> &MeasureArgs {
        &self.common
    }

    fn lower(&self, online: &CpuSet) -> Result<SchedConfig> {
        // Its tracing is not `--trace`'s: its messages name the command.
        latlab_trace::set_who("latlab sched");
        let mut c = self.to_config(online)?;
        let (engine, note) = super::engine::choose()?;
        c.engine = engine;
        c.notes.extend(note);
        Ok(c)
    }

    fn check_in_plan(&self, c: &SchedConfig) -> std::result::Result<(), String> {
        match (&c.target, c.duration_ns) {
            (Target::Command(_), _) | (_, Some(_)) => Ok(()),
            _ => Err("sched in a plan needs -D/--duration or a command (-- CMD)".into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lower(args: &[&str]) -> Result<SchedConfig> {
        let argv = ["latlab", "sched"].iter().chain(args);
        let a: SchedArgs = crate::driver::args::parse_args("sched", argv)
            .map_err(|e| Error::Usage(e.to_string()))?;
        a.to_config(&CpuSet::from_cpus([0, 1]))
    }

    #[test]
    fn targets_and_bad_flags() {
        let me = std::process::id().to_string();
        assert_eq!(
            lower(&["--pid", &me]).unwrap().target,
            Target::Pid(vec![me.parse().unwrap()])
        );
        let c = lower(&["--comm", "x", "-a", "1", "-D", "2", "--threshold", "1ms"]).unwrap();
        assert_eq!(
            (c.cpus, c.duration_ns, c.threshold_ns),
            (Some(vec![1]), Some(2_000_000_000), 1_000_000)
        );
        assert!(c.notes.is_empty());
        // A name longer than the kernel keeps is cut to 15 bytes, and the run says so.
        let c = lower(&["--comm", "a-very-long-task-name"]).unwrap();
        assert_eq!(c.target, Target::Comm("a-very-long-tas".into()));
        assert!(c.notes[0].contains("15 bytes"), "{:?}", c.notes);
        assert_eq!(
            lower(&["--", "sleep", "1"]).unwrap().target,
            Target::Command(vec!["sleep".into(), "1".into()])
        );
        for (args, needle) in [
            (&[][..], "give a target"),
            (&["--all", "--comm", "x"], "give one target"),
            (&["--pid", "999999999"], "--pid 999999999"),
            (&["--tid", "0"], "--tid 0"),
            (&["--cgroup", "no/such/group"], "--cgroup no/such/group"),
            (&["--all", "-a", "7"], "-a/--affinity"),
            (&["--all", "--threshold", "0"], "--threshold"),
            (&["--", "/no/such/program"], "-- /no/such/program"),
        ] {
            let e = lower(args).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{args:?}");
            assert!(e.to_string().contains(needle), "{args:?}: {e}");
        }
    }
}
