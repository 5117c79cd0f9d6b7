//! `latlab ipc`'s raw arguments (clap) and their lowering into [`IpcConfig`]: every flag
//! checked, each failure an exit-2 message naming the flag and the value.

use super::methods::Method;
use super::IpcConfig;
use crate::config::{parse_time_ns, seconds, BareUnit, CpuSet, DisplayUnit, Policy, TaskKind};
use crate::driver::args::MeasureArgs;
use crate::error::{Error, Result};
use clap::Args;

/// Arguments of `latlab ipc`. Times take units (ns, us, ms, s); a bare number is µs for the
/// interval and seconds for the duration, as in rt-tests.
#[derive(Debug, Args)]
#[command(after_help = IPC_AFTER_HELP)]
pub struct IpcArgs {
    /// Methods, comma-separated: pmq, posix-sem, sysv-sem, sigwait, signal, futex, eventfd,
    /// pipe, or all (the default), run one after the other, one series each.
    #[arg(long, value_name = "METHODS", default_value = "all")]
    pub method: String,
    /// One CPU for both tasks, or two: the sender's, then the receiver's (default: unpinned).
    #[arg(short = 'a', long = "affinity", value_name = "CPUSET")]
    pub affinity: Option<String>,
    /// Policy of both tasks: fifo, rr, other (default fifo).
    #[arg(long)]
    pub policy: Option<crate::sys::policy::Policy>,
    /// Priority of the receiver; the sender runs one below (default 80 for fifo/rr).
    #[arg(short = 'p', long, allow_negative_numbers = true)]
    pub priority: Option<i32>,
    /// Priority of the sender (default: one below the receiver's; rt-tests' programs run both
    /// at the same priority, so the receiver waits for the sender to block on the answer).
    #[arg(long, value_name = "PRIO", allow_negative_numbers = true)]
    pub sender_priority: Option<i32>,
    /// The sender is a thread of latlab (the default, as rt-tests runs it) or a forked
    /// process (its own address space: the wake-up crosses processes).
    #[arg(long, value_enum, default_value_t = TaskKind::Threads)]
    pub tasks: TaskKind,
    /// signaltest's measurement: N threads pass a signal round a ring (with `--method
    /// sigwait`); the series is the round-trip time. Threads alternate over the `-a` CPUs.
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub ring: Option<String>,
    /// With --ring: round trips back to back per interval (signaltest: 16). Default 16.
    #[arg(long, value_name = "K", allow_negative_numbers = true)]
    pub burst: Option<String>,
    /// Time between sends: 1000 (µs), 500us, 1ms. Default 1000 µs (with --ring, between
    /// bursts: 10 ms, signaltest's pause).
    #[arg(
        short = 'i',
        long = "interval",
        value_name = "TIME",
        allow_negative_numbers = true
    )]
    pub interval: Option<String>,
    /// Messages per method. Default: until --duration or Ctrl-C.
    #[arg(
        short = 'l',
        long = "loops",
        value_name = "N",
        allow_negative_numbers = true
    )]
    pub loops: Option<String>,
    /// Time per method: 10 (s), 10s, 5m. Default: until --loops or Ctrl-C.
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

const IPC_AFTER_HELP: &str = "\
As pmqtest, ptsematest, svsematest and sigwaittest do it: at each interval the receiver tells
the sender it is ready (on the same mechanism) and waits; the sender, woken by that, reads
CLOCK_MONOTONIC, leaves it in shared memory and sends at once; the receiver reads the clock
when it runs (for `signal`, inside its handler). Every message is timed. A period the receiver
reaches late counts as an overrun (whole intervals missed).

rt-tests equivalents: pmqtest -> --method pmq; ptsematest -> posix-sem; svsematest ->
sysv-sem; sigwaittest -> sigwait; their -f -> --tasks processes; signaltest -t N ->
--method sigwait --ring N (round trips of one signal through N threads).";

fn parse_methods(v: &str) -> Result<Vec<Method>> {
    let mut out = Vec::new();
    for part in v.split(',').map(str::trim) {
        if part == "all" {
            out.extend(Method::ALL);
            continue;
        }
        let m = Method::parse(part).ok_or_else(|| {
            Error::flag(
                "--method",
                part,
                "use pmq, posix-sem, sysv-sem, sigwait, signal, futex, eventfd, pipe or all",
            )
        })?;
        out.push(m);
    }
    let mut seen = Vec::new();
    out.retain(|m| {
        let new = !seen.contains(m);
        seen.push(*m);
        new
    });
    Ok(out)
}

impl IpcArgs {
    /// Validates the arguments against the online CPUs.
    pub fn to_config(&self, online: &CpuSet) -> Result<IpcConfig> {
        let methods = parse_methods(&self.method)?;
        let cpus = match &self.affinity {
            None => [None, None],
            Some(v) => {
                // In the order given (sender, then receiver): not a set, which would sort it.
                let usage = "give one CPU (both tasks) or two, sender first: 1 or 0,1";
                let parts: Vec<&str> = v.split(',').map(str::trim).collect();
                if parts.is_empty() || parts.len() > 2 {
                    return Err(Error::flag("-a/--affinity", v, usage));
                }
                let mut cpus = Vec::new();
                for p in parts {
                    let c: usize = p
                        .parse()
                        .map_err(|_| Error::flag("-a/--affinity", v, usage))?;
                    // Checked against the online CPUs the way every other -a is.
                    CpuSet::parse_online("-a/--affinity", p, online)?;
                    cpus.push(c);
                }
                match cpus[..] {
                    [c] => [Some(c), Some(c)],
                    [s, r] => [Some(s), Some(r)],
                    _ => return Err(Error::flag("-a/--affinity", v, usage)),
                }
            }
        };
        let policy: Policy = self.policy.unwrap_or(Policy::Fifo);
        if !matches!(policy, Policy::Fifo | Policy::Rr | Policy::Other) {
            return Err(Error::flag("--policy", policy, "use fifo, rr or other"));
        }
        let prio = self.priority.unwrap_or(if policy.is_rt() { 80 } else { 0 });
        policy
            .check_prio(prio)
            .map_err(|e| Error::Usage(format!("-p/--priority: {e}")))?;
        if let Some(p) = self.sender_priority {
            policy
                .check_prio(p)
                .map_err(|e| Error::Usage(format!("--sender-priority: {e}")))?;
        }
        let ring = match &self.ring {
            None => None,
            Some(v) => {
                let n: usize = v
                    .trim()
                    .parse()
                    .ok()
                    .filter(|n| (2..=64).contains(n))
                    .ok_or_else(|| {
                        Error::flag("--ring", v, "expected a number of threads from 2 to 64")
                    })?;
                if methods != [Method::Sigwait] {
                    return Err(Error::flag(
                        "--ring",
                        v,
                        "the ring passes a signal with sigwait, as signaltest: use it with \
                         --method sigwait",
                    ));
                }
                if self.tasks == TaskKind::Processes {
                    return Err(Error::flag(
                        "--ring",
                        v,
                        "the ring's tasks are threads, as signaltest's (no --tasks processes)",
                    ));
                }
                if let Some(p) = self.sender_priority {
                    return Err(Error::flag(
                        "--sender-priority",
                        p,
                        "the ring's threads all run at -p/--priority, as signaltest's",
                    ));
                }
                Some(n)
            }
        };
        let burst = match (&self.burst, ring) {
            (None, _) => 16,
            (Some(v), None) => return Err(Error::flag("--burst", v, "only with --ring")),
            (Some(v), Some(_)) => v.trim().parse().ok().filter(|&k| k > 0).ok_or_else(|| {
                Error::flag("--burst", v, "expected a whole number greater than zero")
            })?,
        };
        let interval_ns = match &self.interval {
            None if ring.is_some() => 10_000_000,
            None => 1_000_000,
            Some(v) => {
                let ns = parse_time_ns(v, BareUnit::Micros)
                    .map_err(|e| Error::flag("-i/--interval", v, e))?;
                if ns < 1_000 {
                    return Err(Error::flag(
                        "-i/--interval",
                        v,
                        "must be at least 1 µs (a wake-up takes microseconds; the rt-tests \
                         programs take whole µs too)",
                    ));
                }
                crate::config::bounds::duration("-i/--interval", v, ns)?
            }
        };
        let loops = match &self.loops {
            None => None,
            Some(v) => {
                let n: u64 = v.trim().parse().ok().filter(|&n| n > 0).ok_or_else(|| {
                    Error::flag("-l/--loops", v, "expected a whole number greater than zero")
                })?;
                // With -D, the duration bounds the run, however many loops are asked.
                if self.duration.is_none() {
                    crate::config::bounds::work("-l/--loops", v, u128::from(n), interval_ns)?;
                }
                Some(n)
            }
        };
        let duration_ns = match self.duration {
            None => None,
            Some(0) => return Err(Error::flag("-D/--duration", 0, "must be greater than zero")),
            Some(d) => Some(crate::config::bounds::duration("-D/--duration", d, d)?),
        };
        Ok(IpcConfig {
            methods,
            cpus,
            policy,
            prio,
            sender_prio: self.sender_priority,
            tasks: self.tasks,
            ring,
            burst,
            interval_ns,
            loops,
            duration_ns,
            unit: self.unit,
        })
    }
}

impl crate::driver::Lowering for IpcArgs {
    type Config = IpcConfig;

    fn common(&self) -> &MeasureArgs {
        &self.common
    }

    fn lower(&self, online: &CpuSet) -> Result<IpcConfig> {
        self.to_config(online)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lower(args: &[&str]) -> Result<IpcConfig> {
        let argv = ["latlab", "ipc"].iter().chain(args);
        let a: IpcArgs = crate::driver::args::parse_args("ipc", argv).unwrap();
        a.to_config(&CpuSet::from_cpus([0, 1]))
    }

    #[test]
    fn methods_and_cpus() {
        let c = lower(&["--method", "pmq,all", "-a", "0,1", "-l", "5"]).unwrap();
        assert_eq!(c.methods.len(), 8);
        assert_eq!(c.methods[0], Method::Pmq);
        assert_eq!(c.cpus, [Some(0), Some(1)]);
        assert_eq!(c.sender_prio(), 79);
        assert_eq!(lower(&["-a", "1"]).unwrap().cpus, [Some(1), Some(1)]);
        // Sender first, as given.
        assert_eq!(lower(&["-a", "1,0"]).unwrap().cpus, [Some(1), Some(0)]);
        // -D bounds the run: a huge -l is fine with it.
        assert!(lower(&["-l", "18446744073709551615", "-D", "1"]).is_ok());
        assert_eq!(
            lower(&["--sender-priority", "80"]).unwrap().sender_prio(),
            80
        );
    }

    #[test]
    fn bad_flags_name_themselves() {
        for (args, flag) in [
            (&["--method", "smoke"][..], "--method"),
            (&["-a", "0-1,3"], "-a/--affinity"),
            (&["-a", "0,1,1"], "-a/--affinity"),
            (&["-a", "0-1"], "-a/--affinity"),
            (&["-a", "7"], "-a/--affinity"),
            (&["-i", "1ns"], "-i/--interval"),
            (&["-i", "0"], "-i/--interval"),
            (&["-l", "0"], "-l/--loops"),
            (&["-p", "100"], "-p/--priority"),
            (&["--policy", "batch"], "--policy"),
            (&["--sender-priority", "0"], "--sender-priority"),
            (&["--ring", "1", "--method", "sigwait"], "--ring"),
            (&["--ring", "3", "--method", "pmq"], "--ring"),
            (&["--ring", "3"], "--ring"),
            (
                &["--ring", "3", "--method", "sigwait", "--tasks", "processes"],
                "--ring",
            ),
            (&["--burst", "4"], "--burst"),
            (
                &[
                    "--ring",
                    "3",
                    "--method",
                    "sigwait",
                    "--sender-priority",
                    "9",
                ],
                "--sender-priority",
            ),
            (
                &["--ring", "3", "--method", "sigwait", "--burst", "0"],
                "--burst",
            ),
        ] {
            let e = lower(args).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{args:?}");
            assert!(e.to_string().contains(flag), "{args:?}: {e}");
        }
    }
}
