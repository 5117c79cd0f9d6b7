//! The SCHED_DEADLINE side of `cyclic`: the kernel's limits checked before threads start, each
//! thread's switch to SCHED_DEADLINE (with the overrun signal where the kernel has it), and
//! what a refusal means, with the numbers: admission control (EBUSY) names the bandwidth asked
//! and the limit from /proc/sys/kernel/sched_rt_*, a missing privilege (EPERM) what to do.

use super::config::{CyclicConfig, ThreadPlan};
use latlab_core::error::{Error, Result};
use latlab_core::sys::deadline::{self as dl, DlParams};
use latlab_core::sys::roots::Roots;

/// The runtime under which the kernel's tick-granular enforcement matters (cyclicdeadline's
/// threshold for demanding HRTICK).
pub(crate) const HRTICK_BELOW_NS: u64 = 2_000_000;

/// How runtime overruns are counted, for the result and the help.
pub(crate) const OVERRUN_METHOD: &str = "clock: a job whose CPU time (CLOCK_THREAD_CPUTIME_ID, from one wake-up to the next) exceeded the runtime";

/// The kernel's SCHED_DEADLINE limits, read from procfs.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Limits {
    /// `sched_rt_runtime_us` (-1: admission control off).
    pub(crate) rt_runtime_us: Option<i64>,
    /// `sched_rt_period_us`.
    pub(crate) rt_period_us: Option<i64>,
    /// `sched_deadline_period_min_us`.
    pub(crate) period_min_us: Option<u64>,
    /// `sched_deadline_period_max_us`.
    pub(crate) period_max_us: Option<u64>,
    /// CPUs online (the root domain, unless exclusive cpusets split it).
    pub(crate) cpus: usize,
}

impl Limits {
    /// Reads the limits under `roots`.
    pub(crate) fn read(roots: &Roots, cpus: usize) -> Limits {
        let num = |rel: &str| roots.proc(rel).and_then(|v| v.parse::<i64>().ok());
        Limits {
            rt_runtime_us: num("sys/kernel/sched_rt_runtime_us"),
            rt_period_us: num("sys/kernel/sched_rt_period_us"),
            period_min_us: num("sys/kernel/sched_deadline_period_min_us").map(|v| v as u64),
            period_max_us: num("sys/kernel/sched_deadline_period_max_us").map(|v| v as u64),
            cpus,
        }
    }

    /// The deadline bandwidth the kernel admits per CPU (None: no limit, or unknown).
    pub(crate) fn per_cpu(&self) -> Option<f64> {
        match (self.rt_runtime_us, self.rt_period_us) {
            (Some(r), Some(p)) if r >= 0 && p > 0 => Some(r as f64 / p as f64),
            _ => None,
        }
    }
}

/// The deadline threads of a plan with their reservations.
pub(crate) fn threads(cfg: &CyclicConfig) -> Vec<(&ThreadPlan, DlParams)> {
    cfg.threads
        .iter()
        .filter_map(|t| t.deadline.map(|d| (t, d.params)))
        .collect()
}

/// Refuses (exit 2) a period the kernel would refuse: outside
/// `sched_deadline_period_{min,max}_us`.
pub(crate) fn check_periods(cfg: &CyclicConfig, lim: &Limits) -> Result<()> {
    for (t, p) in threads(cfg) {
        let us = p.period_ns as f64 / 1000.0;
        if let Some(min) = lim.period_min_us.filter(|&m| p.period_ns < m * 1000) {
            return Err(Error::Usage(format!(
                "--period/-i: {}'s period {us} µs is shorter than this kernel's SCHED_DEADLINE minimum, {min} µs (/proc/sys/kernel/sched_deadline_period_min_us)",
                t.name
            )));
        }
        if let Some(max) = lim.period_max_us.filter(|&m| p.period_ns > m * 1000) {
            return Err(Error::Usage(format!(
                "--period/-i: {}'s period {us} µs is longer than this kernel's SCHED_DEADLINE maximum, {max} µs (/proc/sys/kernel/sched_deadline_period_max_us)",
                t.name
            )));
        }
    }
    Ok(())
}

/// Makes the calling thread a deadline task with `p`, asking for the overrun signal when
/// `signal` (and again without it when the kernel does not know the flag). Returns whether the
/// signal is on.
pub(crate) fn switch(p: &DlParams, signal: bool) -> std::io::Result<bool> {
    if signal {
        match dl::set_deadline(p, true) {
            Ok(()) => return Ok(true),
            // A kernel before 4.16 refuses SCHED_FLAG_DL_OVERRUN as unknown.
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {}
            Err(e) => return Err(e),
        }
    }
    dl::set_deadline(p, false).map(|()| false)
}

fn us(ns: u64) -> String {
    latlab_core::config::DisplayUnit::Us.fmt_ns(ns as f64)
}

/// The bandwidth the plan's deadline threads ask for, in CPUs, and how it adds up
/// (`2 × 200 µs / 1000 µs = 0.400`).
pub(crate) fn asked(reservations: &[DlParams]) -> (f64, String) {
    let mut groups: Vec<(DlParams, usize)> = Vec::new();
    for p in reservations {
        match groups.iter_mut().find(|(q, _)| q == p) {
            Some((_, n)) => *n += 1,
            None => groups.push((*p, 1)),
        }
    }
    let total: f64 = reservations.iter().map(DlParams::bandwidth).sum();
    let parts: Vec<String> = groups
        .iter()
        .map(|(p, n)| {
            format!(
                "{n} × runtime {} µs / period {} µs",
                us(p.runtime_ns),
                us(p.period_ns)
            )
        })
        .collect();
    (total, format!("{} = {total:.3} CPUs", parts.join(" + ")))
}

/// Why the kernel refused to make thread `name` a deadline task, with what to do: exit 3.
pub(crate) fn refusal(name: &str, e: &std::io::Error, reservations: &[DlParams], lim: &Limits) -> Error {
    let (total, sum) = asked(reservations);
    let why = match e.raw_os_error() {
        Some(libc::EBUSY) => {
            let limit = match (lim.per_cpu(), lim.rt_runtime_us, lim.rt_period_us) {
                (Some(bw), Some(r), Some(p)) => {
                    let cap = bw * lim.cpus as f64;
                    let fits = if total > cap {
                        "the run alone asks for more than that"
                    } else {
                        "the run alone fits, so other deadline tasks already hold the rest (or an exclusive cpuset makes the root domain smaller)"
                    };
                    format!(
                        "the kernel admits at most {bw:.3} per CPU × {} CPUs = {cap:.3} CPUs of deadline bandwidth (/proc/sys/kernel/sched_rt_runtime_us {r} / sched_rt_period_us {p}); {fits}",
                        lim.cpus
                    )
                }
                _ => "the kernel's limit (/proc/sys/kernel/sched_rt_runtime_us / sched_rt_period_us) could not be read".to_string(),
            };
            format!(
                "SCHED_DEADLINE admission control refused {name} (EBUSY): the run asks for a bandwidth of {sum}; {limit}. Lower --runtime, lengthen --period, run fewer threads, or raise /proc/sys/kernel/sched_rt_runtime_us"
            )
        }
        Some(libc::EPERM) => {
            let mine = dl::affinity();
            let narrow = if mine.len() < lim.cpus {
                format!(
                    "; this process may only run on {} of {} CPUs ({}), and the kernel refuses SCHED_DEADLINE to a task whose affinity is narrower than its root domain: run latlab without taskset/cpuset restrictions",
                    mine.len(),
                    lim.cpus,
                    latlab_core::config::CpuSet::from_cpus(mine.iter().copied())
                )
            } else {
                String::new()
            };
            format!(
                "the kernel refused SCHED_DEADLINE to {name} (EPERM): it needs root or CAP_SYS_NICE{narrow}"
            )
        }
        Some(libc::EINVAL) => format!(
            "the kernel refused {name}'s SCHED_DEADLINE parameters (EINVAL): runtime <= deadline <= period and the period within /proc/sys/kernel/sched_deadline_period_{{min,max}}_us are required, and the kernel must have SCHED_DEADLINE"
        ),
        _ => format!("sched_setattr(SCHED_DEADLINE) failed for {name}: {e}"),
    };
    Error::Env(why)
}

/// Warnings a deadline run records before it starts: short runtimes without `--hrtick`.
pub(crate) fn hrtick_advice(cfg: &CyclicConfig) -> Option<String> {
    if cfg.hrtick {
        return None;
    }
    let short = threads(cfg)
        .iter()
        .map(|(_, p)| p.runtime_ns)
        .filter(|&r| r < HRTICK_BELOW_NS)
        .min()?;
    Some(format!(
        "runtime {} µs is under 2 ms: unless the scheduler's HRTICK_DL feature is on, the kernel \
         throttles a deadline task only at the next tick, so a job may overrun its runtime by up \
         to a tick before it is stopped (--hrtick turns it on for the run)",
        us(short)
    ))
}

/// What the kernel said of the jobs the clock found over their runtime: its SIGXCPU signals
/// (`SCHED_FLAG_DL_OVERRUN`). The kernel marks a thread whose runtime ran out, but signals it
/// only when a tick finds it running, once for the whole process: a lower bound of the jobs
/// it throttled (zero is possible under overload with a long tick), not a per-thread count.
/// `agrees` when both are zero; `confirmed` when both are not; `unconfirmed` when the clock
/// counted jobs over runtime and no signal came (the tolerance: nothing is claimed either way);
/// `disagrees`, with a warning, when the kernel signalled an exhausted runtime and the clock
/// saw none. `not available` where the kernel sends no overrun signal.
pub(crate) fn kernel_check(over: u64, signal: bool, sigxcpu: u64) -> (&'static str, Option<String>) {
    if !signal {
        return ("not available", None);
    }
    match (over > 0, sigxcpu > 0) {
        (false, false) => ("agrees", None),
        (true, true) => ("confirmed", None),
        (true, false) => ("unconfirmed", None),
        (false, true) => (
            "disagrees",
            Some(format!(
                "the kernel sent {sigxcpu} SIGXCPU (SCHED_FLAG_DL_OVERRUN: a runtime exhausted) \
                 but no job used more than its runtime by the thread's CPU clock: the kernel's \
                 runtime accounting charged more than the clock counted"
            )),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clock_count_is_checked_against_the_kernels_signals() {
        assert_eq!(kernel_check(0, true, 0), ("agrees", None));
        assert_eq!(kernel_check(200, true, 40), ("confirmed", None));
        assert_eq!(kernel_check(6, false, 0), ("not available", None));
        // No signal is no proof: the kernel signals only when a tick finds the thread running.
        assert_eq!(kernel_check(6, true, 0), ("unconfirmed", None));
        let (v, w) = kernel_check(0, true, 3);
        assert_eq!(v, "disagrees");
        assert!(w.unwrap().contains("sent 3 SIGXCPU"));
    }

    fn p(r: u64, d: u64, per: u64) -> DlParams {
        DlParams {
            runtime_ns: r,
            deadline_ns: d,
            period_ns: per,
        }
    }

    fn lim() -> Limits {
        Limits {
            rt_runtime_us: Some(950_000),
            rt_period_us: Some(1_000_000),
            period_min_us: Some(100),
            period_max_us: Some(4_194_304),
            cpus: 2,
        }
    }

    #[test]
    fn the_bandwidth_asked_adds_up_per_kind_of_thread() {
        let (t, s) = asked(&[
            p(200_000, 1_000_000, 1_000_000),
            p(200_000, 1_000_000, 1_000_000),
            p(1_000_000, 2_000_000, 4_000_000),
        ]);
        assert!((t - 0.65).abs() < 1e-9);
        assert_eq!(
            s,
            "2 × runtime 200.0 µs / period 1000.0 µs + 1 × runtime 1000.0 µs / period 4000.0 µs = 0.650 CPUs"
        );
    }

    #[test]
    fn an_admission_refusal_gives_the_numbers_and_what_to_do() {
        let r = [p(1_000_000, 1_000_000, 1_000_000); 2];
        let e = refusal(
            "T1",
            &std::io::Error::from_raw_os_error(libc::EBUSY),
            &r,
            &lim(),
        );
        assert_eq!(e.exit_code(), 3);
        let m = e.to_string();
        for want in [
            "admission control refused T1 (EBUSY)",
            "= 2.000 CPUs",
            "at most 0.950 per CPU × 2 CPUs = 1.900 CPUs",
            "sched_rt_runtime_us 950000 / sched_rt_period_us 1000000",
            "the run alone asks for more than that",
            "Lower --runtime",
        ] {
            assert!(m.contains(want), "{want}: {m}");
        }
        // What fits alone was squeezed out by others.
        let e = refusal(
            "T0",
            &std::io::Error::from_raw_os_error(libc::EBUSY),
            &[p(100_000, 1_000_000, 1_000_000)],
            &lim(),
        );
        assert!(e.to_string().contains("other deadline tasks"), "{e}");
        let e = refusal(
            "T0",
            &std::io::Error::from_raw_os_error(libc::EPERM),
            &r,
            &lim(),
        );
        assert_eq!(e.exit_code(), 3);
        assert!(e.to_string().contains("CAP_SYS_NICE"), "{e}");
    }

    #[test]
    fn periods_outside_the_kernels_range_are_bad_input() {
        let mut c = crate::measure::cyclic::lower::test_config(&[
            "--policy",
            "deadline",
            "--period",
            "50us",
            "--runtime",
            "10us",
        ]);
        let e = check_periods(&c, &lim()).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(
            e.to_string().contains("sched_deadline_period_min_us"),
            "{e}"
        );
        c = crate::measure::cyclic::lower::test_config(&["--policy", "deadline", "--period", "5s"]);
        let e = check_periods(&c, &lim()).unwrap_err();
        assert!(e.to_string().contains("maximum"), "{e}");
        c = crate::measure::cyclic::lower::test_config(&["--policy", "deadline"]);
        check_periods(&c, &lim()).unwrap();
        assert!(hrtick_advice(&c).unwrap().contains("600.0 µs"));
    }

    #[test]
    fn limits_come_from_procfs() {
        let d = tempfile::tempdir().unwrap();
        let k = d.path().join("proc/sys/kernel");
        std::fs::create_dir_all(&k).unwrap();
        for (f, v) in [
            ("sched_rt_runtime_us", "-1"),
            ("sched_rt_period_us", "1000000"),
            ("sched_deadline_period_min_us", "100"),
        ] {
            std::fs::write(k.join(f), format!("{v}\n")).unwrap();
        }
        let l = Limits::read(&Roots::under(d.path()), 4);
        assert_eq!(l.rt_runtime_us, Some(-1));
        assert_eq!(l.per_cpu(), None);
        assert_eq!(l.period_min_us, Some(100));
        assert_eq!(l.period_max_us, None);
    }
}
