//! Dispatch: a measurement goes to its table entry (which lowers its arguments and hands it to
//! the driver, owner of its lifecycle); the other commands run directly.

mod compare;
mod extrapolate;
mod gate;
mod report;
mod runs;
mod show;
mod since;
mod spike;

use crate::cli::{Command, Parsed, SamplesArgs};
use latlab_analysis::export::columns;
use latlab_core::error::{Error, Result};
use latlab_core::samples::SampleLog;
use latlab_core::stats::Recorder;
use std::io::Write;

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
            return entry.run(&matches);
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
        Command::Samples(_)
            | Command::Gate(_)
            | Command::Completions { .. }
            | Command::Man { .. }
            | Command::Runs(_)
            | Command::Compare(_)
            | Command::Ministat(_)
            | Command::Report(_)
            | Command::Plot(_)
    ) {
        latlab_lab::driver::signals::exit_on_first_signal();
    }
    match cmd {
        Command::Samples(a) => samples_cmd(&a),
        Command::Gate(a) => gate::run(&a),
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
                };
                let text = latlab_lab::experiment::runner::run(
                    &a.plan,
                    &opts,
                    &control,
                    crate::table::facts,
                )?;
                // A second Ctrl-C: the settings are back; it ends as one does elsewhere.
                if latlab_core::rt::second_signal_received() {
                    let _ = latlab_core::output::stdout(&text);
                    std::process::exit(control.signal_exit_code());
                }
                text
            };
            latlab_core::output::stdout(&text).map_err(|e| Error::io("stdout", e))
        }
        Command::Restore => restore(),
        Command::Compare(a) => {
            let text = compare::run(&a)?;
            latlab_core::output::stdout(&text).map_err(|e| Error::io("stdout", e))
        }
        Command::Ministat(a) => {
            std::process::exit(latlab_analysis::compare::ministat_cmd::main(&a.args))
        }
        Command::Report(a) => report::report_cmd(&a),
        Command::Plot(a) => report::plot_cmd(&a),
    }
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

fn samples_cmd(a: &SamplesArgs) -> Result<()> {
    let log = SampleLog::read(&a.file)?;
    let out = std::io::stdout();
    let mut o = std::io::BufWriter::new(out.lock());
    let io = |e| Error::io("stdout", e);
    if a.csv {
        if let Some(at) = log.cut_at {
            latlab_core::note!(
                "latlab: warning: {}: cut at byte {at}, inside a block: the complete blocks before it were read",
                a.file.display()
            );
        }
        writeln!(o, "series,cpu,loop,latency_ns").map_err(io)?;
        for (s, v) in log.series.iter().zip(&log.samples) {
            let cpu = s.cpu.map_or(String::new(), |c| c.to_string());
            for (i, x) in v.iter().enumerate() {
                writeln!(o, "{},{cpu},{},{x}", s.name, i + 1).map_err(io)?;
            }
        }
    } else {
        let f = |v: f64| a.unit.fmt_ns(v);
        let rows: Vec<Vec<String>> = log
            .series
            .iter()
            .zip(&log.samples)
            .enumerate()
            .map(|(i, (s, v))| {
                let mut r = Recorder::new();
                v.iter().for_each(|&x| r.record(x));
                let m = r.summary();
                let lost = log.lost.as_ref().map_or("?".into(), |l| l[i].to_string());
                vec![
                    s.name.clone(),
                    s.cpu.map_or("-".into(), |c| c.to_string()),
                    m.count.to_string(),
                    f(m.min_ns as f64),
                    f(m.max_ns as f64),
                    f(m.mean_ns),
                    f(m.stddev_ns),
                    m.percentiles.supported(m.count)[2].map_or("-".to_string(), |p| f(p as f64)),
                    lost,
                ]
            })
            .collect();
        writeln!(o, "latencies in {}", a.unit).map_err(io)?;
        write!(
            o,
            "{}",
            columns::render(
                &["series", "cpu", "count", "min", "max", "average", "sigma", "p99", "lost"],
                &rows
            )
        )
        .map_err(io)?;
        if let Some(at) = log.cut_at {
            writeln!(
                o,
                "warning: {}: cut at byte {at}, inside a block: the complete blocks before it were read, that block's samples were not",
                a.file.display()
            )
            .map_err(io)?;
        } else if log.lost.is_none() {
            writeln!(
                o,
                "warning: {}: no trailer; the log was cut short (all complete blocks were read)",
                a.file.display()
            )
            .map_err(io)?;
        }
    }
    o.flush().map_err(io)
}
