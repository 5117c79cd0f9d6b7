//! `latlab pi`'s raw arguments (clap) and their lowering into [`PiConfig`]: every flag
//! checked, each failure an exit-2 message naming the flag and the value.

use super::PiConfig;
use latlab_core::config::values::{self, Time};
use latlab_core::config::CpuSet;
use crate::driver::args::groups::{more_help, Affinity, PriorityArg, Timing, UnitArg, AFFINITY};
use crate::driver::args::MeasureArgs;
use latlab_core::error::{Error, Result};
use latlab_core::sys::pimutex::Protocol;
use clap::Args;

/// Arguments of `latlab pi`. Times take units (ns, us, ms, s); a bare number is µs, except
/// the duration's (seconds).
#[derive(Debug, Args)]
#[command(after_help = PI_AFTER_HELP)]
#[command(mut_arg("affinity", |a| more_help(a, "pi measures one CPU, all three tasks on it: \
    the same as --cpu.")))]
#[command(mut_arg("priority", |a| more_help(a, "SCHED_FIFO priority of the high task, 3 to 99; \
    medium runs one below, low two below.").default_value("80")))]
#[command(mut_arg("interval", |a| more_help(a, "Time between cycles: at least twice the \
    critical section plus the spin.").default_value("20ms")))]
#[command(mut_arg("loops", |a| more_help(a, "Cycles to run. Default: until --duration.")))]
#[command(mut_arg("duration", |a| more_help(a, "Default 5s when -l is not given.")))]
pub(crate) struct PiArgs {
    /// The mutex's priority protocol: inherit (PTHREAD_PRIO_INHERIT), none, or protect
    /// (PTHREAD_PRIO_PROTECT, ceiling = the high task's priority).
    #[arg(long, value_enum, default_value_t = Protocol::Inherit)]
    pub(crate) protocol: Protocol,
    /// The CPU all three tasks share (default: the last online CPU).
    #[arg(long = "cpu", value_name = "CPU", value_parser = values::cpu, conflicts_with = "affinity")]
    pub(crate) cpu: Option<usize>,
    /// `-a/--affinity`: the same, as a set of one CPU.
    #[command(flatten)]
    pub(crate) affinity: Affinity,
    /// `-p/--priority`.
    #[command(flatten)]
    pub(crate) priority: PriorityArg,
    /// The low task's critical section: how long it spins holding the mutex, at most 100ms; a
    /// bare number is µs.
    #[arg(long = "cs", value_name = "TIME", default_value = "100us", value_parser = values::short_time)]
    pub(crate) critical_section: Time,
    /// How long the medium task spins each cycle, at most 100ms (under the RT throttle); a bare
    /// number is µs.
    #[arg(long, value_name = "TIME", default_value = "2ms", value_parser = values::short_time)]
    pub(crate) spin: Time,
    /// `-D/--duration`, `-i/--interval`, `-l/--loops`.
    #[command(flatten)]
    pub(crate) timing: Timing,
    /// `--unit`.
    #[command(flatten)]
    pub(crate) unit: UnitArg,

    /// Output, loads and where the result is kept.
    #[command(flatten)]
    pub(crate) common: MeasureArgs,
}

const PI_AFTER_HELP: &str = "\
Each cycle: low (FIFO p-2) locks the mutex, wakes high (p), which blocks on it, wakes medium
(p-1), which spins, then spins its critical section and unlocks. A cycle is an inversion when
medium started while high was waiting; any inversion fails the run (exit 1), as pi_stress
fails. With inherit or protect, high waits about one critical section.";

impl PiArgs {
    /// Validates the arguments against the online CPUs.
    pub(crate) fn to_config(&self, online: &CpuSet) -> Result<PiConfig> {
        let cpu = match (self.cpu, self.affinity.online(online)?) {
            (Some(c), _) if !online.contains(c) => {
                return Err(Error::flag(
                    "--cpu",
                    c,
                    format!("CPU is not online (online: {online})"),
                ))
            }
            (Some(c), _) => c,
            (None, None) => online.iter().last().unwrap_or(0),
            (None, Some(set)) => {
                let cpus: Vec<usize> = set.iter().collect();
                match cpus[..] {
                    [c] => c,
                    _ => {
                        return Err(Error::flag(
                            self.affinity.given().map_or(AFFINITY, |g| g.0),
                            set,
                            "give one CPU: the inversion needs all three tasks on it",
                        ))
                    }
                }
            }
        };
        let prio = self.priority.unwrap_or(80);
        if !(3..=99).contains(&prio) {
            return Err(Error::flag(
                "-p/--priority",
                prio,
                "use 3 to 99 (medium and low run one and two below)",
            ));
        }
        let (cs, spin) = (&self.critical_section, &self.spin);
        for (flag, t) in [("--spin", spin), ("--cs", cs)] {
            if t.ns > 100_000_000 {
                return Err(Error::flag(
                    flag,
                    t,
                    "at most 100ms (a longer real-time spin meets the RT throttle)",
                ));
            }
        }
        let interval = self.timing.interval.as_ref();
        let interval_ns = interval.map_or(20_000_000, |t| t.ns);
        if interval_ns < 2 * (cs.ns + spin.ns) {
            return Err(Error::flag(
                "-i/--interval",
                interval.map_or("20ms", |t| &t.text),
                format!(
                    "must be at least twice the critical section plus the spin ({} µs)",
                    2 * (cs.ns + spin.ns) / 1000
                ),
            ));
        }
        let loops = *self.timing.loops;
        if let Some(n) = loops {
            latlab_core::config::bounds::work("-l/--loops", n, u128::from(n), interval_ns)?;
        }
        let duration_ns = match *self.timing.duration {
            None if loops.is_none() => Some(5_000_000_000),
            d => d,
        };
        Ok(PiConfig {
            protocol: self.protocol,
            cpu,
            prio,
            cs_ns: cs.ns,
            spin_ns: spin.ns,
            interval_ns,
            loops,
            duration_ns,
            unit: *self.unit,
        })
    }
}

impl crate::driver::Lowering for PiArgs {
    type Config = PiConfig;

    fn common(&self) -> &MeasureArgs {
        &self.common
    }

    fn lower(&self, online: &CpuSet) -> Result<PiConfig> {
        self.to_config(online)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lower(args: &[&str]) -> Result<PiConfig> {
        let argv = ["latlab", "pi"].iter().chain(args);
        let a: PiArgs =
            crate::driver::args::parse_args("pi", argv).map_err(|e| Error::Usage(e.to_string()))?;
        a.to_config(&CpuSet::from_cpus([0, 1]))
    }

    #[test]
    fn defaults_and_bad_flags() {
        let c = lower(&[]).unwrap();
        assert_eq!((c.cpu, c.prio, c.protocol), (1, 80, Protocol::Inherit));
        assert_eq!(c.duration_ns, Some(5_000_000_000));
        assert_eq!(lower(&["-l", "7"]).unwrap().duration_ns, None);
        assert_eq!(lower(&["--cpu", "0"]).unwrap().cpu, 0);
        assert_eq!(lower(&["-a", "0"]).unwrap().cpu, 0);
        // A bare number is µs, as the help says (the default is 2ms = 2000).
        assert_eq!(lower(&["--spin", "2"]).unwrap().spin_ns, 2_000);
        assert_eq!(lower(&[]).unwrap().spin_ns, 2_000_000);
        for (args, flag) in [
            (&["-a", "0,1"][..], "-a/--affinity"),
            (&["-p", "2"], "-p/--priority"),
            (&["--spin", "1s"], "--spin"),
            (&["--cs", "0"], "--cs"),
            (&["-i", "1ms"], "-i/--interval"),
            (&["-l", "-3"], "-l/--loops"),
            (&["--cpu", "7"], "--cpu"),
        ] {
            let e = lower(args).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{args:?}");
            assert!(e.to_string().contains(flag), "{args:?}: {e}");
        }
    }
}
