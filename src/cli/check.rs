//! A plan's measurement command lines, checked exactly as `latlab MEASUREMENT ...` would check
//! them (clap, then the lowering into the config), registered with `experiment::plan` so that
//! module never imports `cli`.

use latlab_lab::experiment::plan::{RUNNER_FLAGS, RUNNER_TAGS};

/// Registers the checker and the plannable measurements of the table with `experiment::plan`
/// (idempotent).
pub fn install() {
    latlab_lab::experiment::plan::set_checker(check_measurement);
    latlab_lab::experiment::plan::set_measurements(crate::table::plannable);
}

/// Checks a measurement's command line as the run would (parse, then build its configuration)
/// and returns its expected length when it has one (ns).
pub fn check_measurement(
    command: &str,
    args: &[String],
) -> std::result::Result<latlab_lab::experiment::plan::Planned, String> {
    let Some(entry) = crate::table::find(command).filter(|e| e.plannable) else {
        return Err(format!("'{command}' is not a measurement a plan can run"));
    };
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
    let argv: Vec<std::ffi::OsString> = argv.into_iter().map(Into::into).collect();
    let mut cmd = crate::cli::command();
    let m = cmd.try_get_matches_from_mut(&argv).map_err(|e| {
        first_line(latlab_lab::driver::args::name_the_flag(
            e,
            crate::cli::sub_named(&cmd, &argv),
        ))
    })?;
    let Some((_, sub)) = m.subcommand() else {
        return Err(format!("'{command}' is not a measurement"));
    };
    {
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
            let t = latlab_core::store::parse_tags(&tags).map_err(|e| e.to_string())?;
            if let Some(k) = RUNNER_TAGS.iter().find(|k| t.contains_key(**k)) {
                return Err(format!("--tag {k}=... is set by latlab run itself"));
            }
        }
    }
    entry.check(sub)
}
