//! Lowers `latlab ctxsw`'s raw arguments (cli) into its validated config: every flag checked, each
//! failure an exit-2 message naming the flag and the value.

use super::args::CtxswArgs;
use crate::config::{CpuSet, Policy};
use crate::error::{Error, Result};
use crate::measure::ctxsw::{parse_ioperm, CtxswConfig, Method};

impl CtxswConfig {
    /// Validates raw arguments against the online CPUs.
    pub fn from_args(a: &CtxswArgs, online: &CpuSet) -> Result<CtxswConfig> {
        let cpus: Vec<usize> = match &a.cpus {
            None => vec![online.iter().next().unwrap_or(0)],
            Some(v) => CpuSet::parse_online("--cpus", v, online)?.iter().collect(),
        };
        let policy: Policy = match &a.policy {
            Some(p) => *p,
            None => Policy::Fifo,
        };
        let prio = a.priority.unwrap_or(if policy.is_rt() { 50 } else { 0 });
        policy
            .check_prio(prio)
            .map_err(|e| Error::Usage(format!("-p/--priority: {e}")))?;
        if a.iterations == 0 || a.iterations > 100_000_000 {
            return Err(Error::flag(
                "-n/--iterations",
                a.iterations,
                "use 1 to 100000000",
            ));
        }
        if a.ring < 2 || a.ring > 1024 {
            return Err(Error::flag(
                "--ring",
                a.ring,
                "a ring needs 2 to 1024 tasks",
            ));
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
            a.method.clone()
        };
        if !ioperm.is_empty() {
            methods = vec![Method::Yield];
        }
        if methods.contains(&Method::Yield) && cpus.len() > 1 {
            return Err(Error::flag(
                "--cpus",
                CpuSet::from_cpus(cpus.iter().copied()),
                "the yield method needs both tasks on one CPU (use --method pipe or futex across CPUs)",
            ));
        }
        Ok(CtxswConfig {
            methods,
            tasks: a.tasks,
            cpus,
            iterations: a.iterations,
            warmup: a.warmup,
            ring: a.ring,
            touch_kb: a.touch,
            policy,
            prio,
            ioperm,
            ioperm_both: a.ioperm_in_both,
            seed_output: a.seed_output,
            unit: a.unit,
            strict: a.common.strict(),
        })
    }
}
