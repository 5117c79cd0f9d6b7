//! `latlab pi`'s raw arguments (clap) and their lowering into [`PiConfig`]: every flag
//! checked, each failure an exit-2 message naming the flag and the value.

use super::PiConfig;
use crate::config::{parse_time_ns, seconds, BareUnit, CpuSet, DisplayUnit};
use crate::driver::args::MeasureArgs;
use crate::error::{Error, Result};
use crate::sys::pimutex::Protocol;
use clap::Args;

/// Arguments of `latlab pi`. Times take units (ns, us, ms, s); a bare number is µs, except
/// the duration's (seconds).
#[derive(Debug, Args)]
#[command(after_help = PI_AFTER_HELP)]
pub struct PiArgs {
    /// The mutex's priority protocol: inherit (PTHREAD_PRIO_INHERIT), none, or protect
    /// (PTHREAD_PRIO_PROTECT, ceiling = the high task's priority).
    #[arg(long, value_enum, default_value_t = Protocol::Inherit)]
    pub protocol: Protocol,
    /// The CPU all three tasks share (default: the last online CPU).
    #[arg(short = 'a', long = "affinity", value_name = "CPU")]
    pub affinity: Option<String>,
    /// SCHED_FIFO priority of the high task; medium runs one below, low two below (default 80).
    #[arg(short = 'p', long, allow_negative_numbers = true)]
    pub priority: Option<i32>,
    /// The low task's critical section: how long it spins holding the mutex. Default 100 µs.
    #[arg(long = "cs", value_name = "TIME", allow_negative_numbers = true)]
    pub critical_section: Option<String>,
    /// How long the medium task spins each cycle (at most 100 ms, under the RT throttle).
    /// Default 2 ms.
    #[arg(long, value_name = "TIME", allow_negative_numbers = true)]
    pub spin: Option<String>,
    /// Time between cycles: at least twice the critical section plus the spin. Default 20 ms.
    #[arg(short = 'i', long, value_name = "TIME", allow_negative_numbers = true)]
    pub interval: Option<String>,
    /// Cycles to run. Default: until --duration (5 s when neither is given).
    #[arg(short = 'l', long, value_name = "N", allow_negative_numbers = true)]
    pub loops: Option<String>,
    /// How long to run: 10 (s), 10s, 5m.
    #[arg(
        value_parser = seconds,
        short = 'D',
        long = "duration",
        value_name = "TIME",
        allow_negative_numbers = true
    )]
    pub duration: Option<u64>,
    /// Unit on screen.
    #[arg(long, value_enum, default_value_t = DisplayUnit::Us)]
    pub unit: DisplayUnit,

    /// Loads and where the result is kept.
    #[command(flatten)]
    pub common: MeasureArgs,
}

const PI_AFTER_HELP: &str = "\
Each cycle: low (FIFO p-2) locks the mutex, wakes high (p), which blocks on it, wakes medium
(p-1), which spins, then spins its critical section and unlocks. A cycle is an inversion when
medium started while high was waiting; any inversion fails the run (exit 1), as pi_stress
fails. With inherit or protect, high waits about one critical section.";

fn time(flag: &str, v: &Option<String>, default_ns: u64) -> Result<u64> {
    match v {
        None => Ok(default_ns),
        Some(v) => {
            let ns = parse_time_ns(v, BareUnit::Micros).map_err(|e| Error::flag(flag, v, e))?;
            if ns == 0 {
                return Err(Error::flag(flag, v, "must be greater than zero"));
            }
            Ok(ns)
        }
    }
}

impl PiArgs {
    /// Validates the arguments against the online CPUs.
    pub fn to_config(&self, online: &CpuSet) -> Result<PiConfig> {
        let cpu = match &self.affinity {
            None => online.iter().last().unwrap_or(0),
            Some(v) => {
                let set = CpuSet::parse_online("-a/--affinity", v, online)?;
                if set.len() != 1 {
                    return Err(Error::flag(
                        "-a/--affinity",
                        v,
                        "give one CPU: the inversion needs all three tasks on it",
                    ));
                }
                let first = set.iter().next().unwrap_or(0);
                first
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
        let cs_ns = time("--cs", &self.critical_section, 100_000)?;
        let spin_ns = time("--spin", &self.spin, 2_000_000)?;
        if spin_ns > 100_000_000 {
            return Err(Error::flag(
                "--spin",
                self.spin.as_deref().unwrap_or(""),
                "at most 100ms (a longer real-time spin meets the RT throttle)",
            ));
        }
        if cs_ns > 100_000_000 {
            return Err(Error::flag(
                "--cs",
                self.critical_section.as_deref().unwrap_or(""),
                "at most 100ms (a longer real-time spin meets the RT throttle)",
            ));
        }
        let interval_ns = time("-i/--interval", &self.interval, 20_000_000)?;
        if interval_ns < 2 * (cs_ns + spin_ns) {
            return Err(Error::flag(
                "-i/--interval",
                self.interval.as_deref().unwrap_or("20ms"),
                format!(
                    "must be at least twice the critical section plus the spin ({} µs)",
                    2 * (cs_ns + spin_ns) / 1000
                ),
            ));
        }
        let loops = match &self.loops {
            None => None,
            Some(v) => {
                let n: u64 = v.trim().parse().ok().filter(|&n| n > 0).ok_or_else(|| {
                    Error::flag("-l/--loops", v, "expected a whole number greater than zero")
                })?;
                crate::config::bounds::work("-l/--loops", v, u128::from(n), interval_ns)?;
                Some(n)
            }
        };
        let duration_ns = match self.duration {
            None if loops.is_none() => Some(5_000_000_000),
            None => None,
            Some(0) => return Err(Error::flag("-D/--duration", 0, "must be greater than zero")),
            Some(d) => Some(crate::config::bounds::duration("-D/--duration", d, d)?),
        };
        Ok(PiConfig {
            protocol: self.protocol,
            cpu,
            prio,
            cs_ns,
            spin_ns,
            interval_ns,
            loops,
            duration_ns,
            unit: self.unit,
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
        let a: PiArgs = crate::driver::args::parse_args("pi", argv).unwrap();
        a.to_config(&CpuSet::from_cpus([0, 1]))
    }

    #[test]
    fn defaults_and_bad_flags() {
        let c = lower(&[]).unwrap();
        assert_eq!((c.cpu, c.prio, c.protocol), (1, 80, Protocol::Inherit));
        assert_eq!(c.duration_ns, Some(5_000_000_000));
        assert_eq!(lower(&["-l", "7"]).unwrap().duration_ns, None);
        for (args, flag) in [
            (&["-a", "0,1"][..], "-a/--affinity"),
            (&["-p", "2"], "-p/--priority"),
            (&["--spin", "1s"], "--spin"),
            (&["--cs", "0"], "--cs"),
            (&["-i", "1ms"], "-i/--interval"),
            (&["-l", "-3"], "-l/--loops"),
        ] {
            let e = lower(args).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{args:?}");
            assert!(e.to_string().contains(flag), "{args:?}: {e}");
        }
    }
}
