//! Dispatch: a measurement goes to its table entry (which lowers its arguments and hands it to
//! the driver, owner of its lifecycle); the other commands run directly.

mod runs;
mod show;
mod spike;

use crate::cli::{Command, Parsed};
use latlab_core::error::{Error, Result};

/// Runs one parsed command line.
pub fn run(parsed: Parsed, argv: Vec<String>) -> Result<()> {
    crate::cli::check::install();
    latlab_core::io::check_journal_env()?;
    let cmd = match parsed {
        Parsed::Measure(entry, matches) => {
            pending_notice();
            return entry.run(&matches, argv);
        }
        Parsed::Analysis(entry, matches) => {
            pending_notice();
            latlab_lab::driver::signals::exit_on_first_signal();
            let lab = latlab_analysis::command::Lab {
                facts: crate::table::facts,
                kinds: crate::table::kinds,
            };
            return entry.run(&matches, &lab);
        }
        Parsed::Other(cmd) => cmd,
    };
    if !matches!(
        cmd,
        Command::Restore | Command::LoadWorker(_) | Command::ActionWorker(_)
    ) {
        pending_notice();
    }
    if matches!(
        cmd,
        Command::Completions { .. } | Command::Man { .. } | Command::Runs(_)
    ) {
        latlab_lab::driver::signals::exit_on_first_signal();
    }
    match cmd {
        Command::Completions { shell } => {
            let s = crate::cli::docs::completions(shell);
            latlab_core::output::stdout(&String::from_utf8_lossy(&s))
                .map_err(|e| Error::io("stdout", e))
        }
        Command::Man { dir } => {
            let pages = crate::cli::docs::man_pages(&dir)?;
            latlab_core::output::stdout(&format!("{}\n", pages.join("\n")))
                .map_err(|e| Error::io("stdout", e))
        }
        Command::LoadWorker(a) => latlab_lab::loadgen::worker_main(&a.spec),
        Command::ActionWorker(a) => latlab_trace::actions::worker_main(a.parent, &a.cmd),
        Command::Runs(c) => runs::run(c),
        Command::Run(a) => {
            let text = if a.dry_run {
                latlab_lab::experiment::dry::dry_run(&a.plan, &a.set)?
            } else {
                // A second Ctrl-C ends the measurement child at once, but the plan itself goes
                // on to put every setting back before it exits.
                latlab_lab::driver::signals::survive_second_signal();
                // A hang-up must not end the plan with its settings changed either.
                latlab_lab::driver::signals::stop_on_hangup();
                let control = latlab_lab::driver::signals::control();
                let opts = latlab_lab::experiment::runner::Options {
                    store: a.store.as_deref(),
                    sets: &a.set,
                    wait: a.wait,
                    on_disturbed: a.on_disturbed,
                    resume_or_start: a.resume_or_start,
                };
                let text =
                    latlab_lab::experiment::run(&a.plan, &opts, &control, crate::table::facts)?;
                // A second Ctrl-C: the settings are back; it ends as one does elsewhere.
                if latlab_core::rt::second_signal_received() {
                    let _ = latlab_core::output::stdout(&text);
                    std::process::exit(control.signal_exit_code());
                }
                text
            };
            latlab_core::output::stdout(&text).map_err(|e| Error::io("stdout", e))
        }
        Command::Bisect(a) => bisect(a),
        Command::Restore => restore(),
    }
}

/// `latlab bisect`: the report on stdout whatever the outcome, the exit code the outcome's
/// (with `--candidate`, `git bisect run`'s: usage 128, a machine that cannot boot 125).
fn bisect(a: crate::cli::BisectArgs) -> Result<()> {
    let git = a.candidate.is_some();
    if !(a.confidence > 50.0 && a.confidence < 100.0) {
        let e = Error::flag(
            "--confidence",
            a.confidence.to_string(),
            "above 50 and below 100",
        );
        return Err(if git { passed(e, 128) } else { e });
    }
    latlab_lab::driver::signals::survive_second_signal();
    latlab_lab::driver::signals::stop_on_hangup();
    let control = latlab_lab::driver::signals::control();
    let opts = latlab_lab::experiment::bisect::Options {
        store: a.store.as_deref(),
        sets: &a.set,
        max_boots: a.max_boots,
        confidence: a.confidence / 100.0,
        candidate: a.candidate.clone().map(|k| (k, a.cmdline.clone())),
    };
    let ended = match latlab_lab::experiment::bisect::run(&a.plan, &opts, &control) {
        Ok(e) => e,
        Err(e) if git => {
            let code = if matches!(e, Error::Usage(_)) {
                128
            } else {
                125
            };
            return Err(passed(e, code));
        }
        Err(e) => return Err(e),
    };
    latlab_core::output::stdout(&ended.report).map_err(|e| Error::io("stdout", e))?;
    match ended.code {
        0 => Ok(()),
        c => Err(Error::Passed(c)),
    }
}

/// Says `e` and ends with `code` (git bisect run's codes).
fn passed(e: Error, code: i32) -> Error {
    latlab_core::output::stderr(&format!("latlab: {e}\n"));
    Error::Passed(code)
}

/// `latlab restore`: every feature's restorer in the table's order; what one could not do is
/// said after what the others did.
fn restore() -> Result<()> {
    // The machine-wide state, then a user's own directory, where latlab kept it before.
    let state = latlab_core::io::state_dir();
    let mut dirs = vec![state.clone()];
    let legacy = latlab_core::io::user_state_dir();
    let chosen = std::env::var_os("LATLAB_JOURNAL").is_some_and(|v| !v.is_empty());
    if !chosen && legacy != state && legacy.is_dir() {
        dirs.push(legacy);
    }
    let mut text = String::new();
    let mut failed = None;
    for dir in &dirs {
        for r in crate::table::RESTORERS {
            match (r.run)(dir) {
                Ok(lines) => lines.iter().for_each(|l| {
                    text.push_str(l);
                    text.push('\n');
                }),
                Err(e) => {
                    failed.get_or_insert(e);
                }
            }
        }
    }
    let root = latlab_core::sys::sched::euid() == 0;
    // A user who is not root looked in their own directory: settings a root latlab changed
    // wait in the machine's journal, which only root may put back.
    let machine = std::path::Path::new(latlab_core::io::MACHINE_DIR).join("restore.json");
    if !root && !dirs.iter().any(|d| machine.starts_with(d)) && machine.exists() {
        failed.get_or_insert(Error::Env(format!(
            "settings a latlab run as root changed are pending in {}: `sudo latlab restore` \
             puts them back",
            machine.display()
        )));
    }
    if text.is_empty() && failed.is_none() {
        text.push_str("nothing to restore\n");
    }
    // Something named above could not be undone: not a success.
    if text.lines().any(|l| l.starts_with("could not")) {
        failed.get_or_insert(Error::Env(
            "some of what latlab left could not be restored (said above); `latlab restore` \
             again once that is fixed"
                .into(),
        ));
    }
    latlab_core::output::stdout(&text).map_err(|e| Error::io("stdout", e))?;
    match failed {
        // Not root and refused: say what to do, not only what the lock or journal said.
        Some(e) if !root && e.to_string().contains("Permission denied") => Err(Error::Env(
            format!("{e}; the state was left by a latlab run as root: `sudo latlab restore`"),
        )),
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// Warns about settings a plan changed and could not restore.
fn pending_notice() {
    if let Some(n) = latlab_lab::settings::pending_notice() {
        latlab_core::note!("{n}");
    }
}
