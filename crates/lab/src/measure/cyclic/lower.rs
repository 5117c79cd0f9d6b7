//! Lowers `latlab cyclic`'s raw arguments (cli) into its validated config: every flag checked, each
//! failure an exit-2 message naming the flag and the value.

use super::args::CyclicArgs;
use latlab_core::config::values::Time;
use latlab_core::config::{parse_offset_ns, parse_time_ns, BareUnit, CpuSet, Policy};
use latlab_core::error::{Error, Result};
use crate::measure::cyclic::config::{
    CyclicConfig, DeadlinePlan, ThreadPlan, MAX_HIST_US, MAX_THREADS,
};
use latlab_core::sys::clock::Clock;
use latlab_core::sys::deadline::{DlParams, MIN_NS};

/// Settings shared by the plain flags and the groups.
#[derive(Debug, Clone)]
struct GroupSpec {
    policy: Policy,
    prio: i32,
    threads: usize,
    priospread: bool,
    interval_ns: u64,
    offset_ns: u64,
    affinity: Option<CpuSet>,
    dl: DlSpec,
}

/// A time given for a deadline setting, with the flag (or group key) that gave it, so a
/// refusal names it.
#[derive(Debug, Clone)]
struct Given {
    ns: u64,
    flag: String,
    text: String,
}

/// The deadline settings of a group: what was given (None: the default) and where the period
/// came from.
#[derive(Debug, Clone, Default)]
struct DlSpec {
    runtime: Option<Given>,
    deadline: Option<Given>,
    work: Option<Given>,
    period_flag: String,
    period_text: String,
}

/// The runtime a deadline thread gets by default: 60 % of its deadline (cyclicdeadline's).
pub(crate) const DEFAULT_RUNTIME_PERCENT: u64 = 60;

/// Checks one deadline thread's reservation: each time at least the kernel's 1024 ns,
/// runtime ≤ deadline ≤ period, work ≤ period. An error names the flag at fault.
fn check_deadline(
    runtime: &Given,
    deadline: &Given,
    period: &Given,
    work: Option<&Given>,
) -> Result<()> {
    for g in [period, deadline, runtime] {
        if g.ns < MIN_NS {
            return Err(Error::flag(
                &g.flag,
                &g.text,
                format!("must be at least {MIN_NS} ns (the kernel's smallest SCHED_DEADLINE time)"),
            ));
        }
    }
    let us = |ns: u64| latlab_core::config::DisplayUnit::Us.fmt_ns(ns as f64);
    if deadline.ns > period.ns {
        return Err(Error::flag(
            &deadline.flag,
            &deadline.text,
            format!(
                "the deadline ({} µs) is longer than the period ({} µs, {}); SCHED_DEADLINE needs runtime <= deadline <= period",
                us(deadline.ns), us(period.ns), period.flag
            ),
        ));
    }
    if runtime.ns > deadline.ns {
        return Err(Error::flag(
            &runtime.flag,
            &runtime.text,
            format!(
                "the runtime ({} µs) is longer than the deadline ({} µs, {}); SCHED_DEADLINE needs runtime <= deadline <= period",
                us(runtime.ns), us(deadline.ns), deadline.flag
            ),
        ));
    }
    if let Some(w) = work.filter(|w| w.ns > period.ns) {
        return Err(Error::flag(
            &w.flag,
            &w.text,
            format!(
                "more work per job ({} µs) than the period ({} µs) can never keep up",
                us(w.ns),
                us(period.ns)
            ),
        ));
    }
    Ok(())
}

impl CyclicConfig {
    /// Validates raw arguments against the online CPUs.
    pub(crate) fn from_args(a: &CyclicArgs, online: &CpuSet) -> Result<CyclicConfig> {
        let base = base_group(a, online)?;
        let groups = groups(a, base, online)?;
        let (threads, notes) = plan_threads(a, &groups)?;
        let loops = *a.timing.loops;
        let duration_ns = *a.timing.duration;
        let break_on_ns = a.break_on.as_ref().map(|t| t.ns);
        let histogram_us = histogram_us(a.histogram)?;
        let dma_latency = i32::try_from(a.dma_latency)
            .map_err(|_| Error::flag("--dma-latency", a.dma_latency, "at most 2147483647 µs"))?;
        let trace_threshold_ns = a.trace.threshold_ns()?;
        if trace_threshold_ns.is_some() && a.clock != Clock::Monotonic {
            return Err(Error::flag(
                "--trace",
                "",
                "needs --clock monotonic (trace events carry CLOCK_MONOTONIC times)",
            ));
        }
        check_deadline_flags(a, threads.iter().any(|t| t.deadline.is_some()))?;
        if let Some(n) = loops {
            let longest = threads.iter().map(|t| t.interval_ns).max().unwrap_or(1);
            latlab_core::config::bounds::work("-l/--loops", n, u128::from(n), longest)?;
        }
        Ok(CyclicConfig {
            threads,
            clock: a.clock,
            relative: a.relative,
            loops,
            duration_ns,
            break_on_ns,
            histogram_us,
            mlock: !a.no_mlock.no_mlock,
            dma_latency_us: (!a.no_dma_latency).then_some(dma_latency),
            strict: a.common.strict(),
            quiet: a.common.quiet(),
            unit: *a.unit,
            json: a.common.output.json.clone(),
            samples: a.samples.clone(),
            trace_threshold_ns,
            trace_save: a.trace.trace_save.clone(),
            trace_actions: a.trace.actions()?,
            trace_limits: a.trace.limits()?,
            trace_stacks: a.trace.trace_stacks,
            hrtick: a.hrtick,
            notes,
        })
    }
}

/// The group the plain flags describe (`-p`, `-i`/`--period`, `-d`, `-a`, `-t`, the deadline
/// times); each `--group` starts from it.
fn base_group(a: &CyclicArgs, online: &CpuSet) -> Result<GroupSpec> {
    let policy = match *a.rt.policy {
        Some(p) => p,
        None if *a.rt.priority == Some(0) => Policy::Other,
        None => Policy::Fifo,
    };
    let prio = a.rt.priority.unwrap_or(if policy.is_rt() { 80 } else { 0 });
    let (interval_ns, dl) = period_and_deadline(a)?;
    let distance_ns = a.distance.as_ref().map_or(500_000, |t| t.ns);
    let affinity = a.affinity.online(online)?;
    let (threads, per_cpu) = match *a.threads {
        None => (1, false),
        Some(None) => (affinity.as_ref().unwrap_or(online).len(), true),
        Some(Some(n)) => (usize::try_from(n).unwrap_or(usize::MAX), false),
    };
    if threads > MAX_THREADS {
        return Err(Error::flag(
            "-t/--threads",
            threads,
            format!("latlab runs at most {MAX_THREADS} measuring threads"),
        ));
    }
    Ok(GroupSpec {
        policy,
        prio,
        threads,
        priospread: a.priospread,
        interval_ns,
        offset_ns: distance_ns,
        // `-t` without N pins one thread to each CPU.
        affinity: if per_cpu && affinity.is_none() {
            Some(online.clone())
        } else {
            affinity
        },
        dl,
    })
}

/// The period (`-i/--interval` or `--period`, not both) and the deadline times, each with
/// the flag that gave it.
fn period_and_deadline(a: &CyclicArgs) -> Result<(u64, DlSpec)> {
    let interval = a.timing.interval.as_ref();
    if let (Some(_), Some(p)) = (interval, &a.period) {
        return Err(Error::flag(
            "--period",
            p,
            "-i/--interval sets the period too; give one of them",
        ));
    }
    let (period_flag, period_text) = match (interval, &a.period) {
        (_, Some(p)) => ("--period", p.text.clone()),
        (Some(i), None) => ("-i/--interval", i.text.clone()),
        (None, None) => ("-i/--interval", "1000".to_string()),
    };
    let interval_ns = a.period.as_ref().or(interval).map_or(1_000_000, |t| t.ns);
    if let Some(why) = bad_period(interval_ns) {
        return Err(Error::flag(period_flag, &period_text, why));
    }
    let given = |flag: &str, v: &Option<Time>| -> Option<Given> {
        v.as_ref().map(|t| Given {
            ns: t.ns,
            flag: flag.to_string(),
            text: t.text.clone(),
        })
    };
    let dl = DlSpec {
        runtime: given("--runtime", &a.runtime),
        deadline: given("--deadline", &a.deadline),
        // No work is a valid amount of work.
        work: given("--work", &a.work),
        period_flag: period_flag.to_string(),
        period_text,
    };
    Ok((interval_ns, dl))
}

/// The groups measured: the `--group` specs, or the plain flags' group alone; together at
/// most [`MAX_THREADS`] threads.
fn groups(a: &CyclicArgs, base: GroupSpec, online: &CpuSet) -> Result<Vec<GroupSpec>> {
    let groups: Vec<GroupSpec> = if a.group.is_empty() {
        vec![base]
    } else {
        let mut g = Vec::new();
        for spec in &a.group {
            g.push(parse_group(spec, &base, online)?);
        }
        g
    };
    let asked = groups
        .iter()
        .fold(0usize, |n, g| n.saturating_add(g.threads));
    if asked > MAX_THREADS {
        return Err(Error::Usage(format!(
            "{asked} threads requested: latlab runs at most {MAX_THREADS} measuring threads"
        )));
    }
    Ok(groups)
}

/// Every group's threads, numbered across groups, and the notes the run will print about
/// them.
fn plan_threads(a: &CyclicArgs, groups: &[GroupSpec]) -> Result<(Vec<ThreadPlan>, Vec<String>)> {
    let mut threads = Vec::new();
    let mut notes = Vec::new();
    for g in groups {
        let flag = if a.group.is_empty() {
            "-p/--priority"
        } else {
            "--group"
        };
        expand_group(g, flag, &mut threads)?;
        if g.policy == Policy::Deadline && g.affinity.is_some() && notes.is_empty() {
            notes.push(
                "SCHED_DEADLINE threads cannot be pinned to CPUs narrower than their root \
                 domain (sched_setattr refuses a pinned thread with EPERM, and \
                 sched_setaffinity a deadline thread with EBUSY): they ran unpinned, so \
                 -a/-t/affinity= were not applied to them"
                    .to_string(),
            );
        }
    }
    Ok((threads, notes))
}

/// Deadline-only flags without a deadline thread, and `--relative` with one, are refused.
fn check_deadline_flags(a: &CyclicArgs, any_dl: bool) -> Result<()> {
    if !any_dl {
        fn text(t: &Option<Time>) -> Option<&str> {
            t.as_ref().map(|t| t.text.as_str())
        }
        let plain = [
            ("--runtime", text(&a.runtime)),
            ("--deadline", text(&a.deadline)),
            ("--period", text(&a.period)),
            ("--work", text(&a.work)),
            ("--hrtick", a.hrtick.then_some("")),
        ];
        if let Some((flag, v)) = plain.iter().find_map(|(f, v)| v.map(|v| (f, v))) {
            return Err(Error::flag(
                flag,
                v,
                "is a SCHED_DEADLINE setting: it needs --policy deadline (or a group with policy=deadline)",
            ));
        }
    }
    if any_dl && a.relative {
        return Err(Error::flag(
            "--relative",
            "",
            "deadline threads wake at the kernel's period starts, not after relative sleeps; drop --relative with --policy deadline",
        ));
    }
    Ok(())
}

/// `-h/--histogram N`, bounded.
fn histogram_us(histogram: Option<u64>) -> Result<Option<u64>> {
    match histogram {
        Some(n) if n > MAX_HIST_US => Err(Error::flag(
            "-h/--histogram",
            n,
            format!(
                "at most {MAX_HIST_US} µs buckets; the full range is always kept in the HDR \
                 histogram"
            ),
        )),
        h => Ok(h),
    }
}

fn expand_group(g: &GroupSpec, flag: &str, out: &mut Vec<ThreadPlan>) -> Result<()> {
    g.policy
        .check_prio(g.prio)
        .map_err(|e| Error::Usage(format!("{flag}: {e}")))?;
    if g.priospread && g.policy.is_rt() {
        let last = g.prio - (g.threads as i32 - 1);
        if last < 1 {
            return Err(Error::Usage(format!(
                "--priospread: {} threads from priority {} would go below priority 1",
                g.threads, g.prio
            )));
        }
    }
    let cpus: Vec<usize> = g.affinity.iter().flat_map(|s| s.iter()).collect();
    for k in 0..g.threads {
        let idx = out.len();
        let prio = if g.priospread && g.policy.is_rt() {
            g.prio - k as i32
        } else {
            g.prio
        };
        let interval_ns = g
            .interval_ns
            .checked_add(g.offset_ns.saturating_mul(k as u64))
            .filter(|&v| v <= 3_600_000_000_000)
            .ok_or_else(|| Error::Usage(format!("thread {idx}: period beyond one hour")))?;
        let deadline = (g.policy == Policy::Deadline)
            .then(|| deadline_plan(&g.dl, interval_ns))
            .transpose()?;
        out.push(ThreadPlan {
            name: format!("T{idx}"),
            policy: g.policy,
            prio,
            // Deadline threads cannot be pinned (the run says so).
            cpu: (!cpus.is_empty() && deadline.is_none()).then(|| cpus[k % cpus.len()]),
            interval_ns,
            deadline,
        });
    }
    Ok(())
}

/// One deadline thread's reservation for period `period_ns`: the deadline defaults to the
/// period, the runtime to 60 % of the deadline; checked, naming the flag at fault.
fn deadline_plan(dl: &DlSpec, period_ns: u64) -> Result<DeadlinePlan> {
    let period = Given {
        ns: period_ns,
        flag: dl.period_flag.clone(),
        text: dl.period_text.clone(),
    };
    let deadline = dl.deadline.clone().unwrap_or_else(|| period.clone());
    let runtime = dl.runtime.clone().unwrap_or_else(|| Given {
        ns: deadline.ns * DEFAULT_RUNTIME_PERCENT / 100,
        flag: deadline.flag.clone(),
        text: deadline.text.clone(),
    });
    check_deadline(&runtime, &deadline, &period, dl.work.as_ref())?;
    Ok(DeadlinePlan {
        params: DlParams {
            runtime_ns: runtime.ns,
            deadline_ns: deadline.ns,
            period_ns,
        },
        work_ns: dl.work.as_ref().map_or(0, |w| w.ns),
    })
}

/// Parses `key=value,...` group specs; keys: policy, threads, prio, priospread, interval
/// (alias period), offset, affinity (alias cpus), and for deadline groups runtime, deadline,
/// work.
fn parse_group(spec: &str, base: &GroupSpec, online: &CpuSet) -> Result<GroupSpec> {
    let mut r = GroupReader {
        spec,
        online,
        g: GroupSpec {
            threads: 1,
            priospread: false,
            offset_ns: 0,
            ..base.clone()
        },
        prio_given: false,
        dl_keys: Vec::new(),
    };
    for item in spec.split(',').map(str::trim) {
        if item.is_empty() {
            return Err(r.bad("empty item (stray comma?)".into()));
        }
        let (k, v) = match item.split_once('=') {
            Some((k, v)) => (k.trim(), Some(v.trim())),
            None => (item, None),
        };
        r.item(k, v)?;
    }
    r.finish(base)
}

/// One `--group` spec being read: the group so far and what its keys said.
struct GroupReader<'s> {
    spec: &'s str,
    online: &'s CpuSet,
    g: GroupSpec,
    /// Whether `prio=` was given (else a policy change picks its default).
    prio_given: bool,
    /// The deadline-only keys given, refused unless the policy is deadline.
    dl_keys: Vec<&'s str>,
}

impl<'s> GroupReader<'s> {
    /// A refusal naming the spec.
    fn bad(&self, why: String) -> Error {
        Error::Usage(format!("--group '{}': {why}", self.spec))
    }

    /// How a refusal of a deadline time names key `k`.
    fn key_flag(&self, k: &str) -> String {
        format!("--group '{}': {k}=", self.spec)
    }

    /// The value of key `k`, which needs one.
    fn need(&self, k: &str, v: Option<&'s str>) -> Result<&'s str> {
        v.ok_or_else(|| self.bad(format!("'{k}' needs a value ({k}=...)")))
    }

    /// Takes one `k[=v]` item.
    fn item(&mut self, k: &'s str, v: Option<&'s str>) -> Result<()> {
        match k {
            "policy" => {
                let v = self.need(k, v)?;
                self.g.policy = Policy::parse_any(v).map_err(|e| self.bad(e))?;
            }
            "threads" | "t" => self.threads(self.need(k, v)?)?,
            "prio" | "priority" | "p" => {
                let v = self.need(k, v)?;
                self.g.prio = v
                    .parse()
                    .map_err(|_| self.bad(format!("prio={v}: not a whole number")))?;
                self.prio_given = true;
            }
            "priospread" => {
                self.g.priospread = match v {
                    None | Some("true") | Some("1") | Some("yes") => true,
                    Some("false") | Some("0") | Some("no") => false,
                    Some(x) => return Err(self.bad(format!("priospread={x}: use true or false"))),
                }
            }
            "interval" | "i" | "period" => self.period(k, self.need(k, v)?)?,
            "runtime" | "deadline" | "work" => self.deadline_time(k, self.need(k, v)?)?,
            "offset" | "distance" | "d" => {
                let v = self.need(k, v)?;
                self.g.offset_ns = parse_offset_ns(v, BareUnit::Micros)
                    .map_err(|e| self.bad(format!("offset={v}: {e}")))?;
            }
            "affinity" | "cpus" | "a" => self.affinity(self.need(k, v)?)?,
            other => {
                return Err(self.bad(format!(
                    "unknown key '{other}' (use policy, threads, prio, priospread, interval, offset, affinity; deadline groups also runtime, deadline, period, work)"
                )))
            }
        }
        Ok(())
    }

    /// `threads=N`, or `all`: one per CPU of the group's affinity.
    fn threads(&mut self, v: &str) -> Result<()> {
        self.g.threads = if v == "all" {
            self.g.affinity.as_ref().unwrap_or(self.online).len()
        } else {
            v.parse()
                .ok()
                .filter(|&n: &usize| n > 0)
                .ok_or_else(|| self.bad(format!("threads={v}: expected a whole number > 0")))?
        };
        Ok(())
    }

    /// `interval=`/`period=`: the group's period, which a deadline refusal names.
    fn period(&mut self, k: &'s str, v: &str) -> Result<()> {
        self.g.interval_ns =
            parse_time_ns(v, BareUnit::Micros).map_err(|e| self.bad(format!("{k}={v}: {e}")))?;
        if let Some(why) = bad_period(self.g.interval_ns) {
            return Err(self.bad(format!("{k}={v}: {why}")));
        }
        self.g.dl.period_flag = self.key_flag(k);
        self.g.dl.period_text = v.to_string();
        if k == "period" {
            self.dl_keys.push("period");
        }
        Ok(())
    }

    /// `runtime=`, `deadline=` or `work=`: a deadline thread's time.
    fn deadline_time(&mut self, k: &'s str, v: &str) -> Result<()> {
        let ns = if k == "work" {
            parse_offset_ns(v, BareUnit::Micros)
        } else {
            parse_time_ns(v, BareUnit::Micros)
        }
        .map_err(|e| self.bad(format!("{k}={v}: {e}")))?;
        let given = Some(Given {
            ns,
            flag: self.key_flag(k),
            text: v.to_string(),
        });
        match k {
            "runtime" => self.g.dl.runtime = given,
            "deadline" => self.g.dl.deadline = given,
            _ => self.g.dl.work = given,
        }
        self.dl_keys.push(k);
        Ok(())
    }

    /// `affinity=CPUS`, every one online.
    fn affinity(&mut self, v: &str) -> Result<()> {
        let set = CpuSet::parse(v).map_err(|e| self.bad(format!("affinity={v}: {e}")))?;
        let off = set.difference(self.online);
        if !off.is_empty() {
            return Err(self.bad(format!(
                "affinity={v}: CPU(s) {off} are not online (online: {})",
                self.online
            )));
        }
        self.g.affinity = Some(set);
        Ok(())
    }

    /// The group read, once its keys agree with its policy.
    fn finish(mut self, base: &GroupSpec) -> Result<GroupSpec> {
        if let Some(k) = self.dl_keys.first().filter(|_| self.g.policy != Policy::Deadline) {
            return Err(self.bad(format!(
                "{k}= is a SCHED_DEADLINE setting: it needs policy=deadline"
            )));
        }
        if !self.prio_given && base.policy.is_rt() != self.g.policy.is_rt() {
            self.g.prio = if self.g.policy.is_rt() { 80 } else { 0 };
        }
        Ok(self.g)
    }
}

/// Why a measuring task's period cannot be `ns`, if it cannot: under a microsecond (the
/// smallest cyclictest can ask for) every wake-up is an overrun, and over an hour a run
/// never reports.
fn bad_period(ns: u64) -> Option<&'static str> {
    if ns < 1_000 {
        Some("at least 1us: a shorter period only overruns (every wake-up is late)")
    } else if ns > 3_600_000_000_000 {
        Some("at most one hour")
    } else {
        None
    }
}

/// A config from `latlab cyclic ARGS` on two online CPUs (tests of the modules beside).
#[cfg(test)]
pub(crate) fn test_config(args: &[&str]) -> CyclicConfig {
    let mut v = vec!["latlab", "cyclic"];
    v.extend_from_slice(args);
    let a: CyclicArgs = crate::driver::args::parse_args("cyclic", v).unwrap();
    CyclicConfig::from_args(&a, &CpuSet::parse("0-1").unwrap()).unwrap()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(args: &[&str]) -> Result<CyclicConfig> {
        let mut v = vec!["latlab", "cyclic"];
        v.extend_from_slice(args);
        // A value clap itself refuses (a typed parser) is exit 2 naming the flag too.
        let a: CyclicArgs = crate::driver::args::parse_args("cyclic", v)
            .map_err(|e| Error::Usage(e.to_string()))?;
        CyclicConfig::from_args(&a, &CpuSet::parse("0-1").unwrap())
    }

    #[test]
    fn seed_004_groups() {
        let c = cfg(&[
            "--group",
            "policy=fifo,threads=16,prio=80,priospread,interval=1000us,offset=50us",
            "--group",
            "policy=other,threads=16,interval=1000us,offset=500us",
        ])
        .unwrap();
        assert_eq!(c.threads.len(), 32);
        assert_eq!(c.threads[0].prio, 80);
        assert_eq!(c.threads[15].prio, 65);
        assert_eq!(c.threads[15].interval_ns, 1_750_000);
        assert_eq!(c.threads[16].policy, Policy::Other);
        assert_eq!(c.threads[16].prio, 0);
        assert_eq!(c.threads[17].interval_ns, 1_500_000);
        assert_eq!(c.threads[31].name, "T31");
    }

    #[test]
    fn cyclictest_style_flags() {
        let c = cfg(&["-t", "-p", "90", "-i", "200", "-l", "10"]).unwrap();
        assert_eq!(c.threads.len(), 2);
        assert_eq!(c.threads[1].cpu, Some(1));
        assert_eq!(c.threads[1].interval_ns, 700_000);
        assert_eq!(c.loops, Some(10));
        let c = cfg(&["-p", "0"]).unwrap();
        assert_eq!(c.threads[0].policy, Policy::Other);
        let c = cfg(&["-t", "3", "-a", "1"]).unwrap();
        assert!(c.threads.iter().all(|t| t.cpu == Some(1)));
    }

    #[test]
    fn bad_input_names_the_flag() {
        let cases: &[(&[&str], &str)] = &[
            (&["-i", "0"], "-i/--interval"),
            (&["-i", "-5"], "-i/--interval"),
            (&["-i", "1ns"], "at least 1us"),
            (&["--period", "999ns"], "--period"),
            (&["--group", "interval=500ns"], "at least 1us"),
            (&["-p", "120"], "priority"),
            (&["-a", "7"], "not online"),
            (&["-t", "5000"], "at most 1024"),
            // Refused before a thread is planned, however many are asked.
            (&["-t", "18446744073709551615"], "-t/--threads"),
            (&["--group", "threads=18446744073709551615"], "at most 1024"),
            (&["--dma-latency", "4294967296"], "--dma-latency"),
            (&["--policy", "edf"], "--policy"),
            (&["--group", "policy=fifo,threads=x"], "threads=x"),
            (&["--group", "bogus=1"], "unknown key"),
            (
                &["--group", "threads=100,prio=50,priospread"],
                "below priority 1",
            ),
            (&["-l", "0"], "-l/--loops"),
        ];
        for (args, want) in cases {
            let e = cfg(args).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{args:?}");
            assert!(e.to_string().contains(want), "{args:?}: {e}");
        }
    }

    #[test]
    fn deadline_threads_get_their_reservation_and_defaults() {
        let c = cfg(&[
            "--policy",
            "deadline",
            "--runtime",
            "200us",
            "--deadline",
            "900us",
            "--period",
            "1ms",
        ])
        .unwrap();
        let t = &c.threads[0];
        assert_eq!(t.policy, Policy::Deadline);
        assert_eq!(t.prio, 0);
        assert_eq!(t.interval_ns, 1_000_000);
        let d = t.deadline.unwrap();
        assert_eq!(
            (
                d.params.runtime_ns,
                d.params.deadline_ns,
                d.params.period_ns
            ),
            (200_000, 900_000, 1_000_000)
        );
        assert_eq!(d.work_ns, 0);
        // Defaults: deadline = period, runtime = 60 % of it; -d grows each further period.
        let c = cfg(&["--policy", "deadline", "-t", "2", "-i", "5ms"]).unwrap();
        let d: Vec<_> = c
            .threads
            .iter()
            .map(|t| t.deadline.unwrap().params)
            .collect();
        assert_eq!(
            (d[0].runtime_ns, d[0].deadline_ns, d[0].period_ns),
            (3_000_000, 5_000_000, 5_000_000)
        );
        assert_eq!(d[1].period_ns, 5_500_000);
        assert_eq!(d[1].deadline_ns, 5_500_000);
        assert!(c.notes.is_empty());
        // Per CPU: never pinned, and the run is told why.
        let c = cfg(&["--policy", "deadline", "-t", "--runtime", "100us"]).unwrap();
        assert_eq!(c.threads.len(), 2);
        assert!(c.threads.iter().all(|t| t.cpu.is_none()));
        assert!(c.notes[0].contains("unpinned"), "{:?}", c.notes);
        // The parameters a stored run keeps.
        let p = serde_json::to_value(&c).unwrap();
        assert_eq!(p["threads"][0]["policy"], "deadline");
        assert_eq!(p["threads"][0]["deadline"]["runtime_ns"], 100_000);
        assert_eq!(p["threads"][0]["deadline"]["period_ns"], 1_000_000);
        assert!(p.get("notes").is_none());
    }

    #[test]
    fn deadline_groups_mix_with_other_policies() {
        let c = cfg(&[
            "--runtime",
            "100us",
            "--group",
            "policy=deadline,threads=2,period=2ms,deadline=1500us,work=50us",
            "--group",
            "policy=fifo,threads=1,interval=1ms",
        ])
        .unwrap();
        let d = c.threads[1].deadline.unwrap();
        assert_eq!(
            (
                d.params.runtime_ns,
                d.params.deadline_ns,
                d.params.period_ns,
                d.work_ns
            ),
            (100_000, 1_500_000, 2_000_000, 50_000)
        );
        assert_eq!(c.threads[2].policy, Policy::Fifo);
        assert_eq!(c.threads[2].prio, 80);
        assert!(c.threads[2].deadline.is_none());
    }

    #[test]
    fn bad_deadline_input_names_the_flag() {
        let dl = ["--policy", "deadline"];
        let cases: &[(&[&str], &str)] = &[
            (
                &["--runtime", "100us"],
                "--runtime 100us: is a SCHED_DEADLINE setting",
            ),
            (&["--deadline", "1ms"], "--deadline 1ms"),
            (&["--period", "1ms"], "--period 1ms"),
            (&["--work", "1us"], "--work 1us"),
            (&["--hrtick"], "--hrtick"),
            (&["--policy", "fifo", "--runtime", "1ms"], "--runtime"),
            (
                &["--group", "policy=fifo,runtime=1ms"],
                "runtime= is a SCHED_DEADLINE",
            ),
        ];
        for (args, want) in cases {
            let e = cfg(args).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{args:?}");
            assert!(e.to_string().contains(want), "{args:?}: {e}");
        }
        let cases: &[(&[&str], &str)] = &[
            (
                &["--runtime", "2ms", "--period", "1ms"],
                "--runtime 2ms: the runtime",
            ),
            (
                &["--runtime", "500us", "--deadline", "400us"],
                "--runtime 500us",
            ),
            (
                &["--deadline", "2ms", "--period", "1ms"],
                "--deadline 2ms: the deadline",
            ),
            (
                &["--runtime", "1000ns"],
                "--runtime 1000ns: must be at least 1024 ns",
            ),
            (
                &["--deadline", "1us", "--runtime", "1us"],
                "--deadline 1us: must be at least",
            ),
            (
                &["--period", "1000ns", "--runtime", "1000ns"],
                "--period 1000ns: must be at least",
            ),
            // The default runtime (60 % of the deadline) falls below the minimum: the deadline
            // is named.
            (
                &["--deadline", "1500ns", "--period", "1ms"],
                "--deadline 1500ns",
            ),
            (&["--runtime", "0"], "--runtime 0"),
            (&["--runtime", "-1"], "--runtime -1"),
            (&["--runtime", "soon"], "--runtime soon"),
            (&["--work", "2ms", "--period", "1ms"], "--work 2ms"),
            (&["--work", "x"], "--work x"),
            (
                &["--period", "1ms", "-i", "1ms"],
                "--period 1ms: -i/--interval",
            ),
            (&["--relative"], "--relative"),
            (&["-p", "80"], "priority 0 only"),
            (
                &["--group", "runtime=2ms,period=1ms"],
                "--group 'runtime=2ms,period=1ms': runtime=",
            ),
            (&["--group", "deadline=3ms,interval=2ms"], "deadline="),
            (&["--group", "work=zz"], "work=zz"),
        ];
        for (args, want) in cases {
            let mut v = dl.to_vec();
            v.extend_from_slice(args);
            let e = cfg(&v).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{v:?}");
            assert!(e.to_string().contains(want), "{v:?}: {e}");
        }
    }
}
