//! A plan's factor hooks: the `pre` command of each level before its run, the `post` command
//! after it (also after an interrupted run: it undoes what `pre` did), each under latlab's
//! supervisor and cut short by an interrupt as its kind allows.

use super::super::plan::Plan;
use latlab_core::error::{Error, Result};
use latlab_core::rt::Control;
use std::time::Duration;

/// Runs the `pre` hooks of a run's levels; false when one was interrupted (said): the plan
/// ends as interrupted, after the `post` hooks.
pub(super) fn pres(
    plan: &Plan,
    combo: &[usize],
    control: &Control,
    progress: &str,
) -> Result<bool> {
    for (f, &l) in plan.factors.iter().zip(combo) {
        if let Some(cmd) = f.pre.get(&f.levels[l]) {
            let what = format!("factor {} level {} pre", f.name, f.levels[l]);
            if !shell(cmd, &what, control, Hook::Pre)? {
                latlab_core::note!("{progress}: interrupted in its {what} command");
                return Ok(false);
            }
        }
    }
    Ok(true)
}

/// Runs the `post` hooks of a run's levels (also after an interrupted run: they undo what the
/// `pre` hooks did). False when one was cut short (the plan ends as interrupted).
pub(super) fn posts(
    plan: &Plan,
    combo: &[usize],
    control: &Control,
    progress: &str,
) -> Result<bool> {
    for (f, &l) in plan.factors.iter().zip(combo) {
        if let Some(cmd) = f.post.get(&f.levels[l]) {
            let what = format!("factor {} level {} post", f.name, f.levels[l]);
            if !shell(cmd, &what, control, Hook::Post)? {
                if latlab_core::rt::second_signal_received() {
                    latlab_core::note!(
                        "{progress}: its {what} command was stopped by a second interrupt"
                    );
                } else {
                    latlab_core::note!(
                        "{progress}: its {what} command was stopped {}s after the interrupt",
                        POST_AFTER_INTERRUPT.as_secs()
                    );
                }
                return Ok(false);
            }
        }
    }
    Ok(true)
}

/// How long a `post` hook may still run once the plan was interrupted: it undoes what its
/// `pre` did (a service stopped for the run is started again), so it is not cut at once.
const POST_AFTER_INTERRUPT: Duration = Duration::from_secs(10);

/// Which hook: a `pre` hook is stopped as soon as the plan is interrupted; a `post` one runs
/// on for up to [`POST_AFTER_INTERRUPT`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Hook {
    Pre,
    Post,
}

/// Runs a factor's `pre`/`post` command (`sh -c`) to its end under latlab's supervisor
/// (`latlab action-worker`): in a process group of its own that dies with the plan, even a
/// SIGKILLed one. Interrupted (Ctrl-C, SIGTERM), a `pre` hook is stopped at once and a `post`
/// one after [`POST_AFTER_INTERRUPT`] (its group gets SIGTERM, SIGKILL a second later); false
/// then, and the plan ends as interrupted. What the command left running in its group is
/// stopped when it ends; the plan reaps all of it (it is their subreaper).
fn shell(cmd: &str, what: &str, control: &Control, hook: Hook) -> Result<bool> {
    let err = |e: std::io::Error| Error::Env(format!("{what} '{cmd}': {e}"));
    latlab_core::sys::process::become_subreaper();
    let mut child = latlab_trace::actions::supervised(cmd)
        .and_then(|mut c| c.spawn())
        .map_err(err)?;
    let mut interrupted_at = None;
    let status = loop {
        if let Some(s) = child.try_wait().map_err(err)? {
            break Some(s);
        }
        if control.was_interrupted() {
            let at = *interrupted_at.get_or_insert_with(std::time::Instant::now);
            // A second Ctrl-C cuts a `post` hook too: the plan then puts its settings back
            // and ends.
            if hook == Hook::Pre
                || at.elapsed() >= POST_AFTER_INTERRUPT
                || latlab_core::rt::second_signal_received()
            {
                break None;
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    latlab_core::sys::process::stop_group(&mut child, Duration::from_secs(1));
    match status {
        None => Ok(false),
        Some(s) if s.success() => Ok(true),
        Some(s) => {
            let s = s
                .code()
                .map_or_else(|| s.to_string(), |c| format!("exit status: {c}"));
            if control.was_interrupted() {
                // The plan ends as interrupted; that the hook failed is still said.
                latlab_core::note!("latlab: {what} '{cmd}' failed ({s}) after the interrupt");
                return Ok(false);
            }
            Err(Error::Env(format!("{what} '{cmd}' failed ({s})")))
        }
    }
}
