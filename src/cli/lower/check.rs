//! A plan's measurement command lines, checked exactly as `latlab MEASUREMENT ...` would check
//! them (clap, then the lowering into the config), registered with `experiment::plan` so that
//! module never imports `cli`.

use crate::cli::{Cli, Command};
use crate::error::Error;
use crate::experiment::plan::{RUNNER_FLAGS, RUNNER_TAGS};

/// Registers the checker with `experiment::plan` (idempotent).
pub fn install() {
    crate::experiment::plan::set_checker(check_measurement);
}

/// Checks a measurement's command line as the run would (parse, then build its configuration)
/// and returns its expected length when it has one (ns).
pub fn check_measurement(
    command: &str,
    args: &[String],
) -> std::result::Result<Option<u64>, String> {
    use crate::config::CpuSet;
    use clap::{CommandFactory, FromArgMatches};
    let mut argv = vec!["latlab".to_string(), command.to_string()];
    argv.extend(args.iter().cloned());
    let first_line = |e: clap::Error| {
        e.to_string()
            .lines()
            .next()
            .unwrap_or("")
            .trim_start_matches("error: ")
            .to_string()
    };
    let m = Cli::command()
        .try_get_matches_from(&argv)
        .map_err(first_line)?;
    if let Some((_, sub)) = m.subcommand() {
        for (id, flag) in RUNNER_FLAGS {
            if sub.ids().any(|i| i.as_str() == *id)
                && sub.value_source(id) == Some(clap::parser::ValueSource::CommandLine)
            {
                return Err(format!(
                    "{flag} is set by latlab run itself; remove it from the plan"
                ));
            }
        }
        if sub.ids().any(|i| i.as_str() == "tag") {
            let tags: Vec<String> = sub
                .get_many::<String>("tag")
                .map(|v| v.cloned().collect())
                .unwrap_or_default();
            let t = crate::store::parse_tags(&tags).map_err(|e| e.to_string())?;
            if let Some(k) = RUNNER_TAGS.iter().find(|k| t.contains_key(**k)) {
                return Err(format!("--tag {k}=... is set by latlab run itself"));
            }
        }
    }
    let cli = Cli::from_arg_matches(&m).map_err(first_line)?;
    let online = CpuSet::online_here();
    let loads = |v: &[String]| -> std::result::Result<(), String> {
        for s in v {
            crate::load::LoadSpec::parse(s).map_err(|e| e.to_string())?;
        }
        Ok(())
    };
    let s = |e: Error| e.to_string();
    let ns = match &cli.command {
        Command::Cyclic(a) => {
            loads(&a.common.load)?;
            crate::config::cyclic::CyclicConfig::from_args(a, &online)
                .map_err(s)?
                .duration_ns
        }
        Command::Noise(a) => {
            loads(&a.common.load)?;
            Some(
                crate::config::noise::NoiseConfig::from_args(
                    a,
                    &online,
                    crate::sys::tsc::available(),
                )
                .map_err(s)?
                .duration_ns,
            )
        }
        Command::Ctxsw(a) => {
            loads(&a.common.load)?;
            crate::measure::ctxsw::CtxswConfig::from_args(a, &online).map_err(s)?;
            None
        }
        Command::Clocks(a) => {
            loads(&a.common.load)?;
            let c = crate::measure::clocks::ClocksConfig::from_args(a).map_err(s)?;
            if !c.clocksources.is_empty() {
                return Err("--clocksource inside a plan: make the clocksource a knob factor (knob = \"/sys/devices/system/clocksource/clocksource0/current_clocksource\"), so the plan journals and restores it".into());
            }
            None
        }
        Command::Tcp(a) => {
            loads(&a.common.load)?;
            let c = crate::measure::tcp::TcpConfig::from_args(a, &online).map_err(s)?;
            Some(c.duration_ns.saturating_mul(u64::from(c.repeat.max(1))))
        }
        Command::Contend(a) => {
            loads(&a.common.load)?;
            let c = crate::measure::contend::ContendConfig::from_args(a, &online).map_err(s)?;
            c.iterations.is_none().then_some(c.duration_ns)
        }
        Command::Migrate(a) => {
            loads(&a.common.load)?;
            crate::measure::migrate::MigrateConfig::from_args(a, &online).map_err(s)?;
            None
        }
        _ => return Err(format!("'{command}' is not a measurement")),
    };
    Ok(ns)
}
