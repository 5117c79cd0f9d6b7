//! The table of measurements: the one place that lists every measurement latlab can run, with
//! its name, one-line help, the kind its runs are stored as, whether a plan may run it, and
//! (through its argument type's [`Lowering`]) how its arguments are parsed, checked and run.
//! Dispatch, the plan checker, the store's kinds, completions, man pages and `latlab help` all
//! read it; adding a measurement is its folder plus one entry here.

use crate::config::CpuSet;
use crate::driver::Lowering;
use crate::error::{Error, Result};
use crate::measure;

/// One measurement.
pub struct Entry {
    /// The subcommand (`latlab NAME`).
    pub name: &'static str,
    /// One line of help (`latlab help`).
    pub about: &'static str,
    /// The kind its runs are stored as (`runs list --kind`): its config's `Measurement::KIND`.
    pub kind: &'static str,
    /// Whether a plan (`latlab run`) may run it.
    pub plannable: bool,
    /// Adds its arguments to a clap command.
    args: fn(clap::Command) -> clap::Command,
    /// Lowers parsed arguments without running (the plan checker): the expected length of one
    /// run (ns) when known, or why a plan cannot run it.
    check: fn(&clap::ArgMatches, &CpuSet) -> std::result::Result<Option<u64>, String>,
    /// Lowers parsed arguments and runs the measurement through the driver.
    run: fn(&clap::ArgMatches, &CpuSet, Vec<String>) -> Result<()>,
    /// Renders a stored run of its kind as it printed it, when it can.
    show: fn(&crate::result::Run, crate::config::DisplayUnit) -> Option<String>,
    /// Lowers parsed arguments without running: the config's `Debug` text.
    lowered: fn(&clap::ArgMatches, &CpuSet) -> Result<String>,
}

impl std::fmt::Debug for Entry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Entry")
            .field("name", &self.name)
            .field("kind", &self.kind)
            .field("plannable", &self.plannable)
            .finish()
    }
}

const fn entry<A: Lowering>(name: &'static str, about: &'static str, plannable: bool) -> Entry {
    Entry {
        name,
        about,
        kind: <A::Config as crate::driver::Measurement>::KIND,
        plannable,
        args: A::augment_args,
        check: check::<A>,
        run: run::<A>,
        show: <A::Config as crate::driver::Measurement>::render_stored,
        lowered: lowered::<A>,
    }
}

fn lowered<A: Lowering>(m: &clap::ArgMatches, online: &CpuSet) -> Result<String> {
    Ok(format!("{:?}", parsed::<A>(m)?.lower(online)?))
}

fn parsed<A: Lowering>(m: &clap::ArgMatches) -> Result<A> {
    A::from_arg_matches(m).map_err(|e| Error::Usage(e.to_string()))
}

fn check<A: Lowering>(
    m: &clap::ArgMatches,
    online: &CpuSet,
) -> std::result::Result<Option<u64>, String> {
    let a = parsed::<A>(m).map_err(|e| e.to_string())?;
    for s in &a.common().loads.load {
        crate::load::LoadSpec::parse(s).map_err(|e| e.to_string())?;
    }
    let c = a.lower(online).map_err(|e| e.to_string())?;
    a.check_in_plan(&c)?;
    Ok(a.planned_ns(&c))
}

fn run<A: Lowering>(
    m: &clap::ArgMatches,
    online: &CpuSet,
    command_line: Vec<String>,
) -> Result<()> {
    parsed::<A>(m)?.run(online, command_line)
}

/// Every measurement, in the order `latlab help` lists them.
pub static TABLE: &[Entry] = &[
    entry::<measure::cyclic::args::CyclicArgs>(
        "cyclic",
        "Timer wake-up latency of periodic threads (cyclictest's measurement)",
        true,
    ),
    entry::<measure::noise::args::NoiseArgs>(
        "noise",
        "Per-CPU noise: what steals each CPU from a spinning thread (oslat's measurement, seed 003)",
        true,
    ),
    entry::<measure::ctxsw::args::CtxswArgs>(
        "ctxsw",
        "Context-switch cost by yield, pipe ring or futex, threads or processes (seed 000)",
        true,
    ),
    entry::<measure::clocks::args::ClocksArgs>(
        "clocks",
        "The cost of time: every clock's cost per call, resolution, granularity and path (vDSO or \
         kernel), under chosen clocksources; cross-CPU monotonicity",
        true,
    ),
    entry::<measure::tcp::args::TcpArgs>(
        "tcp",
        "Loopback TCP throughput (netperf TCP_STREAM) or request/response (TCP_RR) (seed 001)",
        true,
    ),
    entry::<measure::contend::args::ContendArgs>(
        "contend",
        "Per-CPU timing of a contended per-priority structure under mutex, spin, atomic or \
         per-CPU synchronisation, in the seed's table (seed 002)",
        true,
    ),
    entry::<measure::migrate::args::MigrateArgs>(
        "migrate",
        "RT push/pull stress and priority-order check (rt-migrate-test; seed 002)",
        true,
    ),
    entry::<measure::ipc::args::IpcArgs>(
        "ipc",
        "Wake-up latency from one task sending to the other running, by POSIX message queue, \
         POSIX or SysV semaphore, sigwait, signal, futex, eventfd or pipe (pmqtest, ptsematest, \
         svsematest, sigwaittest, signaltest)",
        true,
    ),
    entry::<measure::pi::args::PiArgs>(
        "pi",
        "Priority inversion, repeated: low holds a pthread mutex, high waits, medium spins on the \
         same CPU; --protocol inherit|none|protect; exit 1 when inversion happened (pi_stress, \
         pip_stress)",
        true,
    ),
    entry::<measure::sched::args::SchedArgs>(
        "sched",
        "Scheduling latency of any task, from tracepoints: per thread, wake-up latency, \
         preemption delay, wakers, and who ran instead of the worst (--pid, --tid, --comm, \
         --cgroup, --all, or -- CMD; perf sched latency, runqlat)",
        true,
    ),
    entry::<measure::load::args::LoadArgs>(
        "load",
        "Run a load that provokes latency, in the foreground: `latlab load hackbench` (one run, \
         prints Time: like hackbench), `latlab load cpu:threads=2 -D 10s`; kept as a run of kind \
         load with its achieved rate",
        true,
    ),
    entry::<crate::monitor::args::MonitorArgs>(
        "monitor",
        "Monitor latency continuously: cyclic threads on chosen CPUs, a Prometheus/OpenMetrics \
         endpoint, a snapshot run stored every few minutes (docs/monitoring.md)",
        false,
    ),
];

/// The entry named `name`.
pub fn find(name: &str) -> Option<&'static Entry> {
    TABLE.iter().find(|e| e.name == name)
}

/// The names a plan may run, in table order.
pub fn plannable() -> Vec<&'static str> {
    TABLE
        .iter()
        .filter(|e| e.plannable)
        .map(|e| e.name)
        .collect()
}

/// The kinds measurements store their runs as, in table order.
pub fn kinds() -> Vec<&'static str> {
    let mut v: Vec<&'static str> = Vec::new();
    for e in TABLE {
        if !v.contains(&e.kind) {
            v.push(e.kind);
        }
    }
    v
}

impl Entry {
    /// Its clap subcommand: name, help and arguments.
    pub fn command(&self) -> clap::Command {
        (self.args)(clap::Command::new(self.name))
            .about(self.about)
            .long_about(None)
            .mut_args(crate::driver::args::getopt_values)
    }

    /// Lowers its parsed arguments as the run would, without running: the expected length of
    /// one run (ns) when known, or the first problem.
    pub fn check(&self, m: &clap::ArgMatches) -> std::result::Result<Option<u64>, String> {
        self.no_option_as_value(m).map_err(|e| e.to_string())?;
        (self.check)(m, &CpuSet::online_here())
    }

    /// An option's value may start with `-` (`-i -5us`, `--json -`), but an option given where
    /// a value belongs (`--store --no-store`) is refused naming the option that lacks its value,
    /// instead of becoming a file called `--no-store`.
    fn no_option_as_value(&self, m: &clap::ArgMatches) -> Result<()> {
        let cmd = self.command();
        for a in cmd
            .get_arguments()
            .filter(|a| a.is_allow_hyphen_values_set())
        {
            let Ok(Some(raw)) = m.try_get_raw(a.get_id().as_str()) else {
                continue;
            };
            for v in raw {
                let v = v.to_string_lossy();
                let mut c = v.chars();
                let looks_like_option = c.next() == Some('-')
                    && c.next().is_some_and(|d| !(d.is_ascii_digit() || d == '.'));
                if looks_like_option {
                    let flag = crate::driver::args::flag_name(a);
                    return Err(Error::Usage(format!(
                        "{flag}: needs a value, but the next word is the option '{v}'"
                    )));
                }
            }
        }
        Ok(())
    }

    /// A stored run of its kind as it printed it (`runs show`), when it can render one.
    pub fn show(
        &self,
        run: &crate::result::Run,
        unit: crate::config::DisplayUnit,
    ) -> Option<String> {
        (self.show)(run, unit)
    }

    /// Lowers its parsed arguments against `online` without running: the config's `Debug`
    /// text, or the error the run would exit with (tests compare configs through it).
    pub fn lowered(&self, m: &clap::ArgMatches, online: &CpuSet) -> Result<String> {
        self.no_option_as_value(m)?;
        (self.lowered)(m, online)
    }

    /// Lowers its parsed arguments and runs it through the driver.
    pub fn run(&self, m: &clap::ArgMatches, command_line: Vec<String>) -> Result<()> {
        self.no_option_as_value(m)?;
        (self.run)(m, &CpuSet::online_here(), command_line)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_kinds_are_unique_and_every_command_builds() {
        let mut names: Vec<_> = TABLE.iter().map(|e| e.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), TABLE.len());
        for e in TABLE {
            e.command().debug_assert();
            assert!(
                !e.about.ends_with('.'),
                "{}: clap strips the full stop",
                e.name
            );
        }
        assert!(plannable().contains(&"cyclic"));
        assert!(!plannable().contains(&"monitor"));
        assert!(kinds().contains(&"monitor"));
    }
}
