//! Lowers `latlab ctxsw`'s raw arguments (cli) into its validated config: every flag checked, each
//! failure an exit-2 message naming the flag and the value.

use super::args::CtxswArgs;
use latlab_core::config::{CpuSet, Policy};
use latlab_core::error::{Error, Result};
use crate::measure::ctxsw::{parse_ioperm, CtxswConfig, Method};

impl CtxswConfig {
    /// Validates raw arguments against the online CPUs.
    pub(crate) fn from_args(a: &CtxswArgs, online: &CpuSet) -> Result<CtxswConfig> {
        let cpus: Vec<usize> = match a.affinity.online(online)? {
            None => vec![online.iter().next().unwrap_or(0)],
            Some(set) => set.iter().collect(),
        };
        use Policy::*;
        let policy = a.rt.policy.or(Fifo, &[Fifo, Rr, Other, Batch, Idle])?;
        let prio = a.rt.priority.for_policy(policy, 50)?;
        let iterations = a.iterations.unwrap_or(10_000);
        if iterations > 100_000_000 {
            return Err(Error::flag(
                "-n/--iterations",
                iterations,
                "use 1 to 100000000",
            ));
        }
        if a.warmup > 100_000_000 {
            return Err(Error::flag("--warmup", a.warmup, "use 0 to 100000000"));
        }
        let ring = a.ring.unwrap_or(2);
        if !(2..=1024).contains(&ring) {
            return Err(Error::flag("--ring", ring, "a ring needs 2 to 1024 tasks"));
        }
        if a.touch > 1 << 20 {
            return Err(Error::flag(
                "--touch",
                a.touch,
                "at most 1048576 KiB per task",
            ));
        }
        let ioperm = match &a.ioperm {
            None => Vec::new(),
            Some(v) => parse_ioperm(v)?,
        };
        let mut methods = if a.method.is_empty() {
            vec![Method::Yield, Method::Pipe, Method::Futex]
        } else {
            latlab_core::config::distinct(a.method.clone())
        };
        if !ioperm.is_empty() {
            methods = vec![Method::Yield];
        }
        if methods.contains(&Method::Yield) && cpus.len() > 1 {
            return Err(Error::flag(
                a.affinity.given().map_or("-a/--affinity", |g| g.0),
                CpuSet::from_cpus(cpus.iter().copied()),
                "the yield method needs both tasks on one CPU (use --method pipe or futex across CPUs)",
            ));
        }
        Ok(CtxswConfig {
            methods,
            tasks: *a.tasks,
            cpus,
            iterations: iterations as usize,
            warmup: a.warmup as usize,
            ring: ring as usize,
            touch_kb: a.touch as usize,
            policy,
            prio,
            ioperm,
            ioperm_both: a.ioperm_in_both,
            seed_output: a.seed_output,
            unit: *a.unit,
            strict: a.common.strict(),
        })
    }
}
