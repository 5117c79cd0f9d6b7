//! One measurement child of a plan: its tags, its command line, and its run to the end with a
//! Ctrl-C forwarded and its result read back from its stdout.

use super::boot;
use crate::experiment::plan::Plan;
use latlab_core::error::{Error, Result};
use latlab_core::result::Run;
use latlab_core::rt::Control;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

/// One measurement child's end.
pub(super) enum Child {
    /// It saved a result: the run and its store name.
    Saved(Box<Run>, String),
    /// Interrupted before it could save anything.
    Nothing,
    /// Its boot did not come back (the guest's time ran out, or it ended without running
    /// the measurement): the repeat failed, the plan goes on.
    BootFailed(String),
}

/// The tags every run of the plan carries: its experiment, repeat, combination (0: the
/// baseline, so a later compare or report puts it first whatever order the runs were made in),
/// the plan file (for `runs list --experiments`) and each factor's level.
pub(super) fn tags(
    plan: &Plan,
    combo: &[usize],
    (exp, plan_file): (&str, &str),
    (ci, r): (usize, u32),
) -> Vec<(String, String)> {
    let mut t = vec![
        ("experiment".to_string(), exp.to_string()),
        ("repeat".to_string(), r.to_string()),
        ("combination".to_string(), ci.to_string()),
        ("plan".to_string(), plan_file.to_string()),
    ];
    for (f, &l) in plan.factors.iter().zip(combo) {
        t.push((f.name.clone(), f.levels[l].clone()));
    }
    t
}

/// The command line of one run of the plan: the measurement with its level's arguments, its
/// result on stdout, its tags, the store and the settings to watch through the environment.
pub(super) fn command(
    exe: &Path,
    plan: &Plan,
    combo: &[usize],
    store: Option<&str>,
    tags: &[(String, String)],
    watch: &str,
) -> Command {
    let mut c = Command::new(exe);
    c.arg(&plan.measure.command)
        .args(plan.args_for(combo))
        .arg("--json")
        .arg("-");
    // The store (it may carry a password) goes by environment: `ps` shows argv.
    if let Some(s) = store {
        c.env("LATLAB_STORE", s);
    }
    c.env(crate::driver::ground::WATCH_ENV, watch);
    for (k, v) in tags {
        c.arg("--tag").arg(format!("{k}={v}"));
    }
    c
}

/// Runs one measurement child to its end, forwarding a Ctrl-C to it; its result comes back on
/// its stdout. A child that failed is the plan's error (exit 3 with its message).
pub(super) fn run_child(
    mut c: Command,
    control: &Control,
    n: usize,
    label: &str,
    booted: bool,
) -> Result<Child> {
    c.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // The measurement (or its guest) dies with the plan: a SIGKILLed runner leaves nothing
    // running.
    latlab_core::sys::process::die_with_us(&mut c);
    let mut child = c
        .spawn()
        .map_err(|e| latlab_core::rt::start_error("cannot start the measurement", e))?;
    // Both pipes are drained while the child runs, so a chatty child never blocks on a
    // full pipe (and so never deadlocks the runner).
    let drain = |p: Option<Box<dyn std::io::Read + Send>>| {
        std::thread::spawn(move || {
            let mut text = String::new();
            if let Some(mut p) = p {
                let _ = std::io::Read::read_to_string(&mut p, &mut text);
            }
            text
        })
    };
    let out_reader = drain(child.stdout.take().map(|p| Box::new(p) as _));
    let err_reader = drain(child.stderr.take().map(|p| Box::new(p) as _));
    let mut forwarded = false;
    let status = loop {
        if let Ok(Some(s)) = child.try_wait() {
            break s;
        }
        if control.was_interrupted() && !forwarded {
            // The child saves its result and ends.
            latlab_core::sys::process::signal(child.id() as i32, libc::SIGINT);
            forwarded = true;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let out = out_reader.join().unwrap_or_default();
    let err = err_reader.join().unwrap_or_default();
    let result = (!out.trim().is_empty())
        .then(|| latlab_core::result::Run::parse(&out, &format!("run {n}")).ok())
        .flatten();
    let id = err
        .lines()
        .find_map(|l| {
            l.strip_prefix("latlab: run ")
                .and_then(|r| r.split_whitespace().next())
        })
        .unwrap_or("-");
    match result.filter(|_| status.code().is_some_and(|c| c <= 1)) {
        Some(run) => Ok(Child::Saved(Box::new(run), format!("run:{id}"))),
        // Interrupted before it could save anything (e.g. still starting): nothing to keep.
        // (A Ctrl-C to the whole group can reach it before the runner forwards one.)
        None if forwarded || control.was_interrupted() => Ok(Child::Nothing),
        None if booted
            && status
                .code()
                .is_some_and(|c| boot::BOOT_FAILED.contains(&c)) =>
        {
            let tail: Vec<&str> = err.lines().rev().take(3).collect();
            Ok(Child::BootFailed(format!(
                "{status}: {}",
                tail.into_iter().rev().collect::<Vec<_>>().join(" / ")
            )))
        }
        // The guest ran the measurement to its end but its result did not come back whole
        // (the console port lost its end): the boot failed, not the measurement.
        None if booted && status.success() => Ok(Child::BootFailed(format!(
            "its result did not come back whole ({} bytes on the guest's console port, \
             {})",
            out.len(),
            if out.trim().is_empty() {
                "empty"
            } else {
                "not a latlab result"
            }
        ))),
        None if booted && status.code() == Some(boot::CANNOT_BOOT) => Err(Error::Env(format!(
            "run {n} ({label}): the guest cannot be booted here: {}",
            err.trim()
        ))),
        None => Err(Error::Env(format!(
            "run {n} ({label}) failed ({status}): {}",
            err.trim()
        ))),
    }
}
