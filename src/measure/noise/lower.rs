//! Lowers `latlab noise`'s raw arguments (cli) into its validated config: every flag checked, each
//! failure an exit-2 message naming the flag and the value.

use super::args::NoiseArgs;
use crate::config::{parse_time_ns, BareUnit, CpuSet, Policy};
use crate::error::{Error, Result};
use crate::measure::noise::config::{NoiseClock, NoiseConfig, MAX_REPEAT};

impl NoiseConfig {
    /// Validates raw arguments against the online CPUs.
    pub fn from_args(a: &NoiseArgs, online: &CpuSet, tsc_ok: bool) -> Result<NoiseConfig> {
        let main_cpu = a
            .main_cpu
            .unwrap_or_else(|| online.iter().next().unwrap_or(0));
        if !online.contains(main_cpu) {
            return Err(Error::flag(
                "--main-cpu",
                main_cpu,
                format!("CPU is not online (online: {online})"),
            ));
        }
        let cpus: Vec<usize> = match &a.cpus {
            Some(v) => CpuSet::parse_online("--cpus", v, online)?.iter().collect(),
            None if online.len() > 1 => online.iter().filter(|&c| c != main_cpu).collect(),
            None => online.iter().collect(),
        };
        let policy: Policy = match &a.policy {
            Some(p) => *p,
            None => Policy::Fifo,
        };
        let prio = a.priority.unwrap_or(if policy.is_rt() { 50 } else { 0 });
        policy
            .check_prio(prio)
            .map_err(|e| Error::Usage(format!("-p/--priority: {e}")))?;
        let duration_ns = a.duration.unwrap_or(5_000_000_000);
        let threshold_ns = match &a.threshold {
            Some(v) => {
                parse_time_ns(v, BareUnit::Micros).map_err(|e| Error::flag("--threshold", v, e))?
            }
            None => 1_000,
        };
        if a.repeat == 0 || a.repeat > MAX_REPEAT {
            return Err(Error::flag(
                "--repeat",
                a.repeat,
                format!("use 1 to {MAX_REPEAT}"),
            ));
        }
        crate::config::bounds::work("--repeat", a.repeat, u128::from(a.repeat), duration_ns)?;

        let clock = match a.clock {
            Some(NoiseClock::Tsc) if !tsc_ok => {
                return Err(Error::Env(
                    "--clock tsc: this CPU has no constant, nonstop TSC (or is not x86_64); use --clock monotonic".into(),
                ))
            }
            Some(c) => c,
            None if tsc_ok => NoiseClock::Tsc,
            None => NoiseClock::Monotonic,
        };
        let disturb_cpu = a.disturb_cpu.unwrap_or(main_cpu);
        if !online.contains(disturb_cpu) {
            return Err(Error::flag(
                "--disturb-cpu",
                disturb_cpu,
                format!("CPU is not online (online: {online})"),
            ));
        }
        if let Some(cmd) = &a.disturb {
            let first = cmd.split_whitespace().next().unwrap_or("");
            if first.is_empty() {
                return Err(Error::flag("--disturb", "''", "empty command"));
            }
            let plain = !cmd.contains(['|', ';', '&', '$', '`', '(', '<', '>', '=']);
            if plain && !crate::sys::process::command_exists(first) {
                return Err(Error::flag(
                    "--disturb",
                    cmd,
                    format!("command '{first}' not found on PATH"),
                ));
            }
        }
        if a.trace.trace_stacks {
            return Err(Error::flag(
                "--trace-stacks",
                "",
                "cyclic only: noise's spinners are never woken",
            ));
        }
        Ok(NoiseConfig {
            cpus,
            main_cpu,
            policy,
            prio,
            duration_ns,
            threshold_ns,
            clock,
            repeat: a.repeat,
            disturb: a.disturb.clone(),
            disturb_cpu,
            force: a.force,
            strict: a.common.strict,
            quiet: a.quiet,
            unit: a.unit,
            json: a.json.clone(),
            trace_threshold_ns: a.trace.threshold_ns()?,
            trace_save: a.trace.trace_save.clone(),
            trace_actions: a.trace.actions()?,
            trace_limits: a.trace.limits()?,
        })
    }
}
