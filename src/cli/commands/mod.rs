//! Dispatch: a measurement goes to its table entry (which lowers its arguments and hands it to
//! the driver, owner of its lifecycle); the other commands run directly.

mod compare;
mod extrapolate;
mod gate;
mod report;
mod runs;
mod show;
mod since;
mod tail;

use crate::cli::{Command, Parsed, SamplesArgs};
use crate::error::{Error, Result};
use crate::export::table;
use crate::samples::SampleLog;
use crate::stats::Recorder;
use std::io::Write;

/// Runs one parsed command line.
pub fn run(parsed: Parsed, argv: Vec<String>) -> Result<()> {
    crate::cli::check::install();
    let cmd = match parsed {
        Parsed::Measure(entry, matches) => {
            pending_notice();
            return entry.run(&matches, argv);
        }
        Parsed::Other(cmd) => cmd,
    };
    if !matches!(cmd, Command::Restore | Command::LoadWorker(_)) {
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
            | Command::Tail(_)
    ) {
        crate::driver::signals::exit_on_first_signal();
    }
    match cmd {
        Command::Samples(a) => samples_cmd(&a),
        Command::Gate(a) => gate::run(&a),
        Command::Tail(a) => tail::run(&a),
        Command::Completions { shell } => {
            let s = crate::cli::docs::completions(shell);
            crate::output::stdout(&String::from_utf8_lossy(&s)).map_err(|e| Error::io("stdout", e))
        }
        Command::Man { dir } => {
            let pages = crate::cli::docs::man_pages(&dir)?;
            crate::output::stdout(&format!("{}\n", pages.join("\n")))
                .map_err(|e| Error::io("stdout", e))
        }
        Command::LoadWorker(a) => crate::load::worker_main(&a.spec),
        Command::Runs(c) => runs::run(c),
        Command::Run(a) => {
            let text = if a.dry_run {
                crate::experiment::runner::dry_run(&a.plan, &a.set)?
            } else {
                // A second Ctrl-C ends the measurement child at once, but the plan itself goes
                // on to put every setting back before it exits.
                crate::driver::signals::survive_second_signal();
                // A hang-up must not end the plan with its settings changed either.
                crate::driver::signals::stop_on_hangup();
                let control = crate::driver::signals::control();
                crate::experiment::runner::run(&a.plan, a.store.as_deref(), &a.set, &control)?
            };
            crate::output::stdout(&text).map_err(|e| Error::io("stdout", e))
        }
        Command::Restore => {
            // Tracing instances first: they do not need the knob journal's lock.
            let state = crate::io::state_dir();
            let mut text = String::new();
            for l in crate::trace::tracefs::restore_in(&state) {
                text.push_str(&l);
                text.push('\n');
            }
            // SysV semaphore sets of an `ipc` that was killed.
            for l in crate::sys::sysvsem::sweep_orphan_sets(&state) {
                text.push_str(&l);
                text.push('\n');
            }
            let knobs = crate::experiment::knobs::restore_from_journal()?;
            // A debugfs mounted for `--hrtick`, once its features file is back.
            let unmounted = crate::experiment::hrtick::release_mount(&state);
            // "Nothing to restore" only when nothing was: else say just that no settings were.
            match knobs.strip_prefix("nothing to restore") {
                Some(rest) if !text.is_empty() || !unmounted.is_empty() => {
                    text.push_str(&format!("no system settings to put back{rest}"))
                }
                _ => text.push_str(&knobs),
            }
            for l in unmounted {
                text.push_str(&l);
                text.push('\n');
            }
            crate::output::stdout(&text).map_err(|e| Error::io("stdout", e))
        }
        Command::Compare(a) => {
            let text = compare::run(&a)?;
            crate::output::stdout(&text).map_err(|e| Error::io("stdout", e))
        }
        Command::Ministat(a) => std::process::exit(crate::compare::ministat_cmd::main(&a.args)),
        Command::Report(a) => report::report_cmd(&a),
        Command::Plot(a) => report::plot_cmd(&a),
    }
}

/// Warns about settings a plan changed and could not restore.
fn pending_notice() {
    if let Some(n) = crate::experiment::knobs::pending_notice() {
        crate::note!("{n}");
    }
}

fn samples_cmd(a: &SamplesArgs) -> Result<()> {
    let log = SampleLog::read(&a.file)?;
    let out = std::io::stdout();
    let mut o = std::io::BufWriter::new(out.lock());
    let io = |e| Error::io("stdout", e);
    if a.csv {
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
                    f(m.percentiles.p99 as f64),
                    lost,
                ]
            })
            .collect();
        writeln!(o, "latencies in {}", a.unit).map_err(io)?;
        write!(
            o,
            "{}",
            table::render(
                &["series", "cpu", "count", "min", "max", "average", "sigma", "p99", "lost"],
                &rows
            )
        )
        .map_err(io)?;
        if log.lost.is_none() {
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
