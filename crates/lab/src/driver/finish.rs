//! What the driver does once the measurement returned: the run's own record of what happened
//! around it, keeping it (`--json FILE`, the store) before any text, then the text report.

use super::{ground, keeper::Keeper, Common, Measurement};
use latlab_analysis::export::json::JsonSink;
use latlab_core::error::{Error, Result};
use latlab_core::result::Run;

/// The run's own record of what happened around the measurement: its loads' reports, the
/// warnings of every layer, the ground that moved, settings not restored, threads not placed,
/// and whether a signal ended it.
pub(super) fn assemble(
    run: &mut Run,
    mut warnings: Vec<String>,
    stopped_loads: crate::loadgen::Stopped,
    moved: Vec<latlab_core::result::GroundChange>,
    unrestored: &[String],
    placement: &[String],
    control: &latlab_core::rt::Control,
) {
    run.loads.extend(stopped_loads.reports);
    warnings.extend(stopped_loads.warnings);
    warnings.extend(moved.iter().map(ground::warning));
    run.ground.extend(moved);
    run.ground.extend(stopped_loads.ground);
    warnings.extend(
        unrestored
            .iter()
            .map(|f| format!("could not restore {f}; run 'latlab restore'")),
    );
    warnings.extend(placement.iter().cloned());
    run.warnings.extend(warnings);
    if control.was_interrupted() {
        run.interrupted = true;
    }
}

/// Keeps the run before any text: `--json FILE` atomically, then the store. Their failures
/// come back to be reported after the text (what was measured is still shown and kept where it
/// could be); under `--strict`, threads not placed as asked end it here, with no figures shown.
pub(super) fn keep(
    run: &mut Run,
    json: &Option<JsonSink>,
    keeper: &mut Keeper,
    common: &Common,
    placement: &[String],
) -> Result<(Result<()>, Result<()>)> {
    let written = match json {
        Some(j @ JsonSink::File(_)) => j.write(run),
        _ => Ok(()),
    };
    if let Err(e) = &written {
        // The stored run says what became of its JSON.
        run.warnings.push(format!("--json: not written: {e}"));
    }
    let stored = keeper.keep(run);
    // --strict refuses a run whose threads were not placed as asked: its figures are not
    // shown as a result (a "Passed!" followed by exit 3), only what became of it.
    if common.strict && !placement.is_empty() {
        written?;
        stored?;
        let kept = if common.no_store && json.is_none() {
            "nothing was kept (--no-store)".to_string()
        } else {
            "the result was kept with these warnings".to_string()
        };
        return Err(Error::Env(format!(
            "--strict: thread placement failed ({}); the run stopped there and {kept}",
            placement.join("; ")
        )));
    }
    Ok((written, stored))
}

/// Prints the measurement's report (to stderr when stdout carries figures or JSON), its
/// figures and `--json -`.
pub(super) fn show<M: Measurement>(
    m: &M,
    outcome: &mut M::Outcome,
    json: &Option<JsonSink>,
    out: &mut dyn std::io::Write,
) -> Result<()> {
    let mut text = m.render(outcome);
    let run = M::result(outcome);
    if !text.loads_shown {
        text.report.push_str(&load_lines(run));
    }
    if run.interrupted && !text.report.contains("interrupted") {
        text.report
            .push_str("(interrupted: stopped early; the figures cover what was measured)\n");
    }
    // Names in a report come from other programs (task names, culprits): shown, not obeyed.
    text.report = latlab_core::output::printable(&text.report).into_owned();
    let stdout_taken = json.as_ref().is_some_and(JsonSink::is_stdout) || text.figures.is_some();
    if stdout_taken {
        latlab_core::output::stderr(&text.report);
    } else {
        latlab_core::output::to(out, &text.report).map_err(|e| Error::io("stdout", e))?;
    }
    if let Some(f) = &text.figures {
        latlab_core::output::to(out, f).map_err(|e| Error::io("stdout", e))?;
    }
    if let Some(JsonSink::Stdout) = &json {
        latlab_core::output::to(out, &JsonSink::text(run)?).map_err(|e| Error::io("stdout", e))?;
    }
    Ok(())
}

/// One line per load for the text report, with rates in readable units.
fn load_lines(run: &Run) -> String {
    run.loads
        .iter()
        .map(|l| {
            format!(
                "load {}: {} {}/s over {:.2} s{}{}\n",
                l.spec,
                latlab_core::config::units::si(l.rate_per_s),
                l.unit,
                l.seconds,
                l.cpus
                    .as_ref()
                    .map(|c| format!(" on CPUs {c}"))
                    .unwrap_or_default(),
                l.note
                    .as_ref()
                    .map(|n| format!(" ({n})"))
                    .unwrap_or_default()
            )
        })
        .collect()
}

/// The exit status of a run kept and shown: under `--strict`, a trace another process cut
/// short is refused; a tripped check is exit 1; else the measured command's status, if any.
pub(super) fn exit_status<M: Measurement>(outcome: &mut M::Outcome, strict: bool) -> Result<()> {
    let run = M::result(outcome);
    if let Some(t) = run.trace.as_ref().and_then(|t| t.untraced_after_s) {
        if strict {
            return Err(Error::Env(format!(
                "--strict: another process turned tracing off in latlab's instance {t:.2} s \
                 into the trace; the result was kept with what was traced before"
            )));
        }
    }
    let failed = run.check_failure.clone();
    match (failed, M::exit_status(outcome)) {
        (Some(c), _) => Err(Error::CheckFailed(c)),
        (None, Some(code)) if code != 0 => Err(Error::Passed(code)),
        _ => Ok(()),
    }
}
