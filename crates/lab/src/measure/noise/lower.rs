//! Lowers `latlab noise`'s raw arguments (cli) into its validated config: every flag checked, each
//! failure an exit-2 message naming the flag and the value.

use super::args::NoiseArgs;
use latlab_core::config::{CpuSet, Policy};
use latlab_core::error::{Error, Result};
use crate::measure::noise::config::{NoiseClock, NoiseConfig, NoiseEngine, MAX_REPEAT};

impl NoiseConfig {
    /// Validates raw arguments against the online CPUs.
    pub(crate) fn from_args(a: &NoiseArgs, online: &CpuSet, tsc_ok: bool) -> Result<NoiseConfig> {
        let main_cpu = a
            .main_cpu
            .unwrap_or_else(|| online.iter().next().unwrap_or(0));
        online_cpu("--main-cpu", main_cpu, online)?;
        let cpus: Vec<usize> = match a.affinity.online(online)? {
            Some(set) => set.iter().collect(),
            None if online.len() > 1 => online.iter().filter(|&c| c != main_cpu).collect(),
            None => online.iter().collect(),
        };
        use Policy::*;
        let policy = a.rt.policy.or(Fifo, &[Fifo, Rr, Other, Batch, Idle])?;
        let prio = a.rt.priority.for_policy(policy, 50)?;
        let duration_ns = a.duration.unwrap_or(5_000_000_000);
        let threshold_ns = a.threshold.as_ref().map_or(1_000, |t| t.ns);
        let repeat = repeats(a, duration_ns)?;
        let clock = clock(a.clock, tsc_ok)?;
        let disturb_cpu = a.disturb_cpu.unwrap_or(main_cpu);
        online_cpu("--disturb-cpu", disturb_cpu, online)?;
        if let Some(cmd) = &a.disturb {
            check_disturb(cmd)?;
        }
        if a.trace.trace_stacks {
            return Err(Error::flag(
                "--trace-stacks",
                "",
                "cyclic only: noise's spinners are never woken",
            ));
        }
        if a.engine != NoiseEngine::Spin {
            refuse_spinner_options(a, repeat)?;
        }
        Ok(NoiseConfig {
            engine: a.engine,
            cpus,
            main_cpu,
            policy,
            prio,
            duration_ns,
            threshold_ns,
            clock,
            repeat,
            disturb: a.disturb.clone(),
            disturb_cpu,
            force: a.force,
            strict: a.common.strict(),
            quiet: a.common.quiet(),
            unit: *a.unit,
            json: a.common.output.json.clone(),
            trace_threshold_ns: a.trace.threshold_ns()?,
            trace_save: a.trace.trace_save.clone(),
            trace_actions: a.trace.actions()?,
            trace_limits: a.trace.limits()?,
        })
    }
}

/// Refuses a CPU given to `flag` that is not online.
fn online_cpu(flag: &str, cpu: usize, online: &CpuSet) -> Result<()> {
    if !online.contains(cpu) {
        return Err(Error::flag(
            flag,
            cpu,
            format!("CPU is not online (online: {online})"),
        ));
    }
    Ok(())
}

/// `--repeat`, within [`MAX_REPEAT`] and, with the duration, within the work one run may do.
fn repeats(a: &NoiseArgs, duration_ns: u64) -> Result<u32> {
    let repeat = u32::try_from(*a.repeat)
        .ok()
        .filter(|&r| r <= MAX_REPEAT)
        .ok_or_else(|| Error::flag("--repeat", *a.repeat, format!("use 1 to {MAX_REPEAT}")))?;
    latlab_core::config::bounds::work("--repeat", repeat, u128::from(repeat), duration_ns)?;
    Ok(repeat)
}

/// The spinners' clock: `--clock`, else the TSC where it is usable.
fn clock(asked: Option<NoiseClock>, tsc_ok: bool) -> Result<NoiseClock> {
    Ok(match asked {
        Some(NoiseClock::Tsc) if !tsc_ok => {
            return Err(Error::Env(
                "--clock tsc: this CPU has no constant, nonstop TSC (or is not x86_64); use --clock monotonic".into(),
            ))
        }
        Some(c) => c,
        None if tsc_ok => NoiseClock::Tsc,
        None => NoiseClock::Monotonic,
    })
}

/// Refuses an empty `--disturb` command, and a plain one (no shell syntax) whose program is
/// not on PATH: it would fail only a third of the way into the first measurement.
fn check_disturb(cmd: &str) -> Result<()> {
    let first = cmd.split_whitespace().next().unwrap_or("");
    if first.is_empty() {
        return Err(Error::flag("--disturb", "''", "empty command"));
    }
    let plain = !cmd.contains(['|', ';', '&', '$', '`', '(', '<', '>', '=']);
    if plain && !latlab_core::sys::process::command_exists(first) {
        return Err(Error::flag(
            "--disturb",
            cmd,
            format!("command '{first}' not found on PATH"),
        ));
    }
    Ok(())
}

/// Refuses the spinners' own options with the osnoise/hwnoise engines.
fn refuse_spinner_options(a: &NoiseArgs, repeat: u32) -> Result<()> {
    let refuse = |flag: &str, given: bool| -> Result<()> {
        if given {
            return Err(Error::flag(
                flag,
                "",
                "a spinner's option: the osnoise/hwnoise engines run the kernel's threads",
            ));
        }
        Ok(())
    };
    refuse("--repeat", repeat > 1)?;
    refuse("--disturb", a.disturb.is_some())?;
    refuse("--clock", a.clock.is_some())?;
    refuse("--trace", a.trace.threshold_ns()?.is_some())?;
    Ok(())
}
