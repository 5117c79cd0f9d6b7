//! `latlab ipc`'s raw arguments (clap) and their lowering into [`IpcConfig`]: every flag
//! checked, each failure an exit-2 message naming the flag and the value.

use super::methods::Method;
use super::IpcConfig;
use latlab_core::config::values;
use latlab_core::config::{CpuSet, Policy, TaskKind};
use crate::driver::args::groups::{
    more_help, Affinity, PeerCpus, RealTime, RingArg, TasksArg, Timing, UnitArg, AFFINITY,
};
use crate::driver::args::MeasureArgs;
use latlab_core::error::{Error, Result};
use clap::Args;

/// Arguments of `latlab ipc`. Times take units (ns, us, ms, s); a bare number is µs for the
/// interval and seconds for the duration, as in rt-tests.
#[derive(Debug, Args)]
#[command(after_help = IPC_AFTER_HELP)]
#[command(mut_arg("affinity", |a| more_help(a, "One CPU: both tasks run on it (rt-tests' -a \
    NUM). With --ring, the ring's threads alternate over one or two CPUs. Default: both tasks \
    on the last CPU latlab may use, as rt-tests' pairs run (the ring: unpinned). \
    (Two CPUs for the pair, sender first, is the old spelling of --sender-cpu/--receiver-cpu: \
    deprecated.)")))]
#[command(mut_arg("sender_cpu", |a| more_help(a, "The sender sends the message.")))]
#[command(mut_arg("receiver_cpu", |a| more_help(a, "The receiver's wake-up is measured.")))]
#[command(mut_arg("policy", |a| more_help(a, "Of both tasks: fifo, rr or other. Default fifo.")))]
#[command(mut_arg("priority", |a| more_help(a, "Of the receiver; the sender runs one below. \
    Default 80 (0 with --policy other).")))]
#[command(mut_arg("tasks", |a| more_help(a, "Here: the sender (rt-tests runs it as a thread).")))]
#[command(mut_arg("ring", |a| more_help(a, "signaltest's measurement: N threads, 2 to 64, pass \
    a signal round a ring (with --method sigwait); the series is the round-trip time.")))]
#[command(mut_arg("interval", |a| more_help(a, "Time between sends. Default 1000 (with --ring, \
    between bursts: 10ms, signaltest's pause).")))]
#[command(mut_arg("loops", |a| more_help(a, "Messages per method. Default: until --duration or \
    Ctrl-C.")))]
#[command(mut_arg("duration", |a| more_help(a, "Per method. Default: until --loops or Ctrl-C.")))]
pub(crate) struct IpcArgs {
    /// Methods, comma-separated: pmq, posix-sem, sysv-sem, sigwait, signal, futex, eventfd,
    /// pipe, or all (the default), run one after the other, one series each.
    #[arg(long, value_name = "METHODS", default_value = "all")]
    pub(crate) method: String,
    /// `-a/--affinity`.
    #[command(flatten)]
    pub(crate) affinity: Affinity,
    /// `--sender-cpu`, `--receiver-cpu`.
    #[command(flatten)]
    pub(crate) cpus: PeerCpus,
    /// `-p/--priority`, `--policy`.
    #[command(flatten)]
    pub(crate) rt: RealTime,
    /// Priority of the sender (default: one below the receiver's; rt-tests' programs run both
    /// at the same priority, so the receiver waits for the sender to block on the answer).
    #[arg(long, value_name = "PRIO", value_parser = values::priority)]
    pub(crate) sender_priority: Option<i32>,
    /// `--tasks`.
    #[command(flatten)]
    pub(crate) tasks: TasksArg,
    /// `--ring`.
    #[command(flatten)]
    pub(crate) ring: RingArg,
    /// With --ring: round trips back to back per interval (signaltest: 16), at most 100000.
    /// Default 16.
    #[arg(long, value_name = "K", value_parser = values::count)]
    pub(crate) burst: Option<u64>,
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

const IPC_AFTER_HELP: &str = "\
As pmqtest, ptsematest, svsematest and sigwaittest do it: at each interval the receiver tells
the sender it is ready (on the same mechanism) and waits; the sender, woken by that, reads
CLOCK_MONOTONIC, leaves it in shared memory and sends at once; the receiver reads the clock
when it runs (for `signal`, inside its handler). Every message is timed. A period the receiver
reaches late counts as an overrun (whole intervals missed).

rt-tests equivalents: pmqtest -> --method pmq; ptsematest -> posix-sem; svsematest ->
sysv-sem; sigwaittest -> sigwait; their -f -> --tasks processes; signaltest -t N ->
--method sigwait --ring N (round trips of one signal through N threads).";

/// The longest burst `--burst` takes.
const MAX_BURST: u64 = 100_000;

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
    Ok(latlab_core::config::distinct(out))
}

impl IpcArgs {
    /// Validates the arguments against the online CPUs.
    pub(crate) fn to_config(&self, online: &CpuSet) -> Result<IpcConfig> {
        let methods = parse_methods(&self.method)?;
        let cpus = self.cpus(online)?;
        use Policy::*;
        let policy = self.rt.policy.or(Fifo, &[Fifo, Rr, Other])?;
        let prio = self.rt.priority.for_policy(policy, 80)?;
        if let Some(p) = self.sender_priority {
            policy
                .check_prio(p)
                .map_err(|e| Error::Usage(format!("--sender-priority: {e}")))?;
        }
        let ring = match *self.ring {
            None => None,
            Some(n) => {
                let n = usize::try_from(n)
                    .ok()
                    .filter(|n| (2..=64).contains(n))
                    .ok_or_else(|| {
                        Error::flag("--ring", n, "expected a number of threads from 2 to 64")
                    })?;
                if methods != [Method::Sigwait] {
                    return Err(Error::flag(
                        "--ring",
                        n,
                        "the ring passes a signal with sigwait, as signaltest: use it with \
                         --method sigwait",
                    ));
                }
                if *self.tasks == TaskKind::Processes {
                    return Err(Error::flag(
                        "--ring",
                        n,
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
        let burst = match (self.burst, ring) {
            (None, _) => 16,
            (Some(v), None) => return Err(Error::flag("--burst", v, "only with --ring")),
            (Some(v), Some(_)) if v > MAX_BURST => {
                return Err(Error::flag(
                    "--burst",
                    v,
                    format!(
                        "at most {MAX_BURST} round trips back to back (signaltest's is 16; more \
                         leaves no pause to speak of)"
                    ),
                ))
            }
            (Some(v), Some(_)) => v,
        };
        let interval_ns = match &*self.timing.interval {
            None if ring.is_some() => 10_000_000,
            None => 1_000_000,
            Some(t) => {
                if t.ns < 1_000 {
                    return Err(Error::flag(
                        "-i/--interval",
                        t,
                        "must be at least 1 µs (a wake-up takes microseconds; the rt-tests \
                         programs take whole µs too)",
                    ));
                }
                latlab_core::config::bounds::duration("-i/--interval", t, t.ns)?
            }
        };
        let loops = *self.timing.loops;
        let duration_ns = *self.timing.duration;
        if let (Some(n), None) = (loops, duration_ns) {
            // With -D, the duration bounds the run, however many loops are asked.
            latlab_core::config::bounds::work("-l/--loops", n, u128::from(n), interval_ns)?;
        }
        Ok(IpcConfig {
            methods,
            cpus,
            policy,
            prio,
            sender_prio: self.sender_priority,
            tasks: *self.tasks,
            ring,
            burst,
            interval_ns,
            loops,
            duration_ns,
            unit: *self.unit,
        })
    }

    /// The CPUs of the sender and the receiver: `-a` with one CPU (both), `--sender-cpu` and
    /// `--receiver-cpu`, or the deprecated `-a S,R` (sender first, as given).
    fn cpus(&self, online: &CpuSet) -> Result<[Option<usize>; 2]> {
        let (sender, receiver) = self.cpus.online(online)?;
        let Some(given) = &self.affinity.affinity else {
            // Nothing placed: the pair shares one CPU, the last it may use, as pmqtest's,
            // ptsematest's and sigwaittest's pairs do (their -a/-S put a pair on one CPU), so
            // the first run reads like the peer's (apart, the wake-up crosses CPUs: 7x slower
            // here). The ring keeps to where the scheduler puts it.
            if sender.is_none() && receiver.is_none() && self.ring.is_none() {
                let last = online.iter().last();
                return Ok([last, last]);
            }
            return Ok([sender, receiver]);
        };
        if sender.is_some() || receiver.is_some() {
            return Err(Error::Usage(
                "-a/--affinity and --sender-cpu/--receiver-cpu exclude each other: give one \
                 CPU with -a, or place each task with its own flag"
                    .into(),
            ));
        }
        let set = self.affinity.online(online)?.unwrap_or_default();
        let text = given
            .as_ref()
            .map_or_else(|| set.to_string(), |l| l.text.clone());
        if let Some(pair) = self.old_pair() {
            return Ok([Some(pair[0]), Some(pair[1])]);
        }
        let mut cpus = set.iter();
        match (cpus.next(), cpus.next(), cpus.next()) {
            (Some(c), None, _) => Ok([Some(c), Some(c)]),
            // The ring alternates over two CPUs.
            (Some(a), Some(b), None) if self.ring.is_some() => Ok([Some(a), Some(b)]),
            _ => Err(Error::flag(
                AFFINITY,
                text,
                "give one CPU (both tasks), or place each task with --sender-cpu and \
                 --receiver-cpu",
            )),
        }
    }

    /// `-a S,R` as it was written (two CPU numbers, sender first), when it was.
    fn old_pair(&self) -> Option<[usize; 2]> {
        let Some(Some(l)) = &self.affinity.affinity else {
            return None;
        };
        let parts: Vec<usize> = l
            .text
            .split(',')
            .map(|p| p.trim().parse().ok())
            .collect::<Option<_>>()?;
        match parts[..] {
            [s, r] if s != r => Some([s, r]),
            _ => None,
        }
    }
}

impl crate::driver::Lowering for IpcArgs {
    type Config = IpcConfig;

    fn common(&self) -> &MeasureArgs {
        &self.common
    }

    fn deprecations(&self) -> Vec<String> {
        match self.old_pair() {
            Some([s, r]) if self.ring.is_none() => vec![format!(
                "ipc -a {s},{r} (the sender's CPU, then the receiver's) is deprecated: use \
                 --sender-cpu {s} --receiver-cpu {r}; -a will take only the CPUs measured"
            )],
            _ => Vec::new(),
        }
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
        let a: IpcArgs = crate::driver::args::parse_args("ipc", argv)
            .map_err(|e| Error::Usage(e.to_string()))?;
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
        // The explicit flags place the pair as the old -a S,R did; -a takes one CPU.
        assert_eq!(
            lower(&["--sender-cpu", "1", "--receiver-cpu", "0"])
                .unwrap()
                .cpus,
            [Some(1), Some(0)]
        );
        assert_eq!(
            lower(&["--receiver-cpu", "1"]).unwrap().cpus,
            [None, Some(1)]
        );
        // Nothing placed: the pair on one CPU (the last), as rt-tests' pairs run; the ring
        // unpinned.
        assert_eq!(lower(&["-l", "5"]).unwrap().cpus, [Some(1), Some(1)]);
        assert_eq!(
            lower(&["--ring", "3", "--method", "sigwait"]).unwrap().cpus,
            [None, None]
        );
        assert_eq!(
            lower(&["--ring", "3", "--method", "sigwait", "-a", "0-1"])
                .unwrap()
                .cpus,
            [Some(0), Some(1)]
        );
    }

    #[test]
    fn only_the_old_pair_spelling_is_deprecated() {
        use crate::driver::Lowering;
        let warned = |args: &[&str]| {
            let argv = ["latlab", "ipc"].iter().chain(args);
            let a: IpcArgs = crate::driver::args::parse_args("ipc", argv).unwrap();
            a.deprecations()
        };
        let w = warned(&["-a", "1,0"]);
        assert!(w[0].contains("--sender-cpu 1 --receiver-cpu 0"), "{w:?}");
        for args in [
            &["-a", "1"][..],
            &["-a", "1,1"],
            &["--sender-cpu", "1", "--receiver-cpu", "0"],
            &["--ring", "3", "--method", "sigwait", "-a", "0,1"],
        ] {
            assert!(warned(args).is_empty(), "{args:?}");
        }
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
            (&["-a", "0-1"], "-a/--affinity"),
            (&["-a", "1", "--sender-cpu", "0"], "-a/--affinity"),
            (&["--sender-cpu", "7"], "--sender-cpu"),
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
