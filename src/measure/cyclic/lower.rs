//! Lowers `latlab cyclic`'s raw arguments (cli) into its validated config: every flag checked, each
//! failure an exit-2 message naming the flag and the value.

use super::args::CyclicArgs;
use crate::config::{parse_offset_ns, parse_time_ns, BareUnit, CpuSet, Policy};
use crate::error::{Error, Result};
use crate::measure::cyclic::config::{CyclicConfig, ThreadPlan, MAX_HIST_US, MAX_THREADS};
use crate::sys::clock::Clock;

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
}

fn time_flag(flag: &str, v: &str, bare: BareUnit) -> Result<u64> {
    parse_time_ns(v, bare).map_err(|e| Error::flag(flag, v, e))
}

fn count_flag(flag: &str, v: &str) -> Result<u64> {
    let n: u64 = v
        .trim()
        .parse()
        .map_err(|_| Error::flag(flag, v, "expected a whole number greater than zero"))?;
    if n == 0 {
        return Err(Error::flag(flag, v, "must be greater than zero"));
    }
    Ok(n)
}

impl CyclicConfig {
    /// Validates raw arguments against the online CPUs.
    pub fn from_args(a: &CyclicArgs, online: &CpuSet) -> Result<CyclicConfig> {
        let policy = match &a.policy {
            Some(p) => *p,
            None if a.priority == Some(0) => Policy::Other,
            None => Policy::Fifo,
        };
        let prio = a.priority.unwrap_or(if policy.is_rt() { 80 } else { 0 });
        let interval_ns = match &a.interval {
            Some(v) => time_flag("-i/--interval", v, BareUnit::Micros)?,
            None => 1_000_000,
        };
        let distance_ns = match &a.distance {
            Some(v) => parse_offset_ns(v, BareUnit::Micros)
                .map_err(|e| Error::flag("-d/--distance", v, e))?,
            None => 500_000,
        };
        let affinity = match &a.affinity {
            None => None,
            Some(None) => Some(online.clone()),
            Some(Some(v)) => Some(CpuSet::parse_online("-a/--affinity", v, online)?),
        };
        let (threads, per_cpu) = match &a.threads {
            None => (1, false),
            Some(None) => (affinity.as_ref().unwrap_or(online).len(), true),
            Some(Some(v)) => (count_flag("-t/--threads", v)? as usize, false),
        };
        let base = GroupSpec {
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
        };

        let groups: Vec<GroupSpec> = if a.group.is_empty() {
            vec![base]
        } else {
            let mut g = Vec::new();
            for spec in &a.group {
                g.push(parse_group(spec, &base, online)?);
            }
            g
        };

        let mut threads = Vec::new();
        for g in &groups {
            let flag = if a.group.is_empty() {
                "-p/--priority"
            } else {
                "--group"
            };
            expand_group(g, flag, &mut threads)?;
            if threads.len() > MAX_THREADS {
                return Err(Error::Usage(format!(
                    "{} threads requested: latlab runs at most {MAX_THREADS} measuring threads",
                    groups.iter().map(|g| g.threads).sum::<usize>()
                )));
            }
        }

        let loops = a
            .loops
            .as_deref()
            .map(|v| count_flag("-l/--loops", v))
            .transpose()?;
        let duration_ns = a.duration;
        let break_on_ns = a
            .break_on
            .as_deref()
            .map(|v| time_flag("-b/--break-on", v, BareUnit::Micros))
            .transpose()?;
        let histogram_us = match a.histogram.as_deref() {
            None => None,
            Some(v) => {
                let n = count_flag("-h/--histogram", v)?;
                if n > MAX_HIST_US {
                    return Err(Error::flag(
                        "-h/--histogram",
                        v,
                        format!("at most {MAX_HIST_US} µs buckets; the full range is always kept in the HDR histogram"),
                    ));
                }
                Some(n)
            }
        };
        if a.dma_latency < 0 {
            return Err(Error::flag(
                "--dma-latency",
                a.dma_latency,
                "must be 0 or more µs",
            ));
        }
        let trace_threshold_ns = a.trace.threshold_ns()?;
        if trace_threshold_ns.is_some() && a.clock != Clock::Monotonic {
            return Err(Error::flag(
                "--trace",
                "",
                "needs --clock monotonic (trace events carry CLOCK_MONOTONIC times)",
            ));
        }
        if let (Some(n), Some(v)) = (loops, a.loops.as_deref()) {
            let longest = threads.iter().map(|t| t.interval_ns).max().unwrap_or(1);
            crate::config::bounds::work("-l/--loops", v, u128::from(n), longest)?;
        }
        Ok(CyclicConfig {
            threads,
            clock: a.clock,
            relative: a.relative,
            loops,
            duration_ns,
            break_on_ns,
            histogram_us,
            mlock: !a.no_mlock,
            dma_latency_us: (!a.no_dma_latency).then_some(a.dma_latency),
            strict: a.common.strict,
            quiet: a.quiet,
            unit: a.unit,
            json: a.json.clone(),
            samples: a.samples.clone(),
            trace_threshold_ns,
            trace_save: a.trace.trace_save.clone(),
            trace_actions: a.trace.actions()?,
            trace_actions_max: a.trace.actions_max()?,
            trace_stacks: a.trace.trace_stacks,
        })
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
        out.push(ThreadPlan {
            name: format!("T{idx}"),
            policy: g.policy,
            prio,
            cpu: (!cpus.is_empty()).then(|| cpus[k % cpus.len()]),
            interval_ns,
        });
    }
    Ok(())
}

/// Parses `key=value,...` group specs; keys: policy, threads, prio, priospread, interval,
/// offset, affinity (alias cpus).
fn parse_group<'a>(spec: &'a str, base: &GroupSpec, online: &CpuSet) -> Result<GroupSpec> {
    let mut g = GroupSpec {
        threads: 1,
        priospread: false,
        offset_ns: 0,
        ..base.clone()
    };
    let mut prio_given = false;
    let bad = |why: String| Error::Usage(format!("--group '{spec}': {why}"));
    for item in spec.split(',').map(str::trim) {
        if item.is_empty() {
            return Err(bad("empty item (stray comma?)".into()));
        }
        let (k, v) = match item.split_once('=') {
            Some((k, v)) => (k.trim(), Some(v.trim())),
            None => (item, None),
        };
        let need = |v: Option<&'a str>| -> Result<&'a str> {
            v.ok_or_else(|| bad(format!("'{k}' needs a value ({k}=...)")))
        };
        match k {
            "policy" => g.policy = need(v)?.parse().map_err(bad)?,
            "threads" | "t" => {
                let v = need(v)?;
                if v == "all" {
                    g.threads = g.affinity.as_ref().unwrap_or(online).len();
                } else {
                    g.threads = v
                        .parse()
                        .ok()
                        .filter(|&n: &usize| n > 0)
                        .ok_or_else(|| bad(format!("threads={v}: expected a whole number > 0")))?;
                }
            }
            "prio" | "priority" | "p" => {
                let v = need(v)?;
                g.prio = v
                    .parse()
                    .map_err(|_| bad(format!("prio={v}: not a whole number")))?;
                prio_given = true;
            }
            "priospread" => {
                g.priospread = match v {
                    None | Some("true") | Some("1") | Some("yes") => true,
                    Some("false") | Some("0") | Some("no") => false,
                    Some(x) => return Err(bad(format!("priospread={x}: use true or false"))),
                }
            }
            "interval" | "i" => {
                let v = need(v)?;
                g.interval_ns = parse_time_ns(v, BareUnit::Micros)
                    .map_err(|e| bad(format!("interval={v}: {e}")))?;
            }
            "offset" | "distance" | "d" => {
                let v = need(v)?;
                g.offset_ns = parse_offset_ns(v, BareUnit::Micros)
                    .map_err(|e| bad(format!("offset={v}: {e}")))?;
            }
            "affinity" | "cpus" | "a" => {
                let v = need(v)?;
                let set = CpuSet::parse(v).map_err(|e| bad(format!("affinity={v}: {e}")))?;
                let off = set.difference(online);
                if !off.is_empty() {
                    return Err(bad(format!("affinity={v}: CPU(s) {off} are not online (online: {online})")));
                }
                g.affinity = Some(set);
            }
            other => {
                return Err(bad(format!(
                    "unknown key '{other}' (use policy, threads, prio, priospread, interval, offset, affinity)"
                )))
            }
        }
    }
    if !prio_given && base.policy.is_rt() != g.policy.is_rt() {
        g.prio = if g.policy.is_rt() { 80 } else { 0 };
    }
    Ok(g)
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
            (&["-p", "120"], "priority"),
            (&["-a", "7"], "not online"),
            (&["-t", "5000"], "at most 1024"),
            (&["--policy", "deadline"], "--policy"),
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
}
