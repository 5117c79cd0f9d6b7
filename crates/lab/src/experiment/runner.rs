//! Running a plan: every level combination × repeats in the chosen order, each run a latlab
//! measurement stored under one experiment id; knobs journaled and always restored; at the end
//! each combination against the baseline, ministat-style and tail-aware.

use super::plan::{Order, Plan};
use crate::settings::Knobs;
use latlab_core::error::{Error, Result};
use latlab_core::result::Run;
use latlab_core::rt::Control;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

/// The order runs are made in: (combination index, repeat number from 1), and the seed.
fn schedule(plan: &Plan, n_combos: usize, seed: u64) -> Vec<(usize, u32)> {
    let mut order: Vec<(usize, u32)> = Vec::new();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    match plan.design.order {
        Order::Sequential => {
            for c in 0..n_combos {
                order.extend((1..=plan.design.repeats).map(|r| (c, r)));
            }
        }
        Order::Interleaved | Order::Random => {
            for r in 1..=plan.design.repeats {
                let mut idx: Vec<usize> = (0..n_combos).collect();
                if plan.design.order == Order::Random {
                    idx.shuffle(&mut rng);
                }
                order.extend(idx.into_iter().map(|c| (c, r)));
            }
        }
    }
    order
}

/// Runs the plan at `path` (with `--set` overrides); returns the final report. The store goes
/// to each measurement through the environment (`LATLAB_STORE`), never on its command line.
///
/// `control` carries the interrupt flags (the caller routes signals to them and keeps the
/// process alive on a second one, so every setting is put back); `kinds` tells what the
/// plan's measurement is (its default metric, whether higher is better).
pub fn run(
    path: &Path,
    opts: &Options<'_>,
    control: &Control,
    kinds: latlab_core::result::kind::Kinds,
) -> Result<String> {
    let (store, wait) = (opts.store, opts.wait);
    let plan = Plan::load_with(path, opts.sets)?;
    // One owner of system settings per machine: the lock is taken before anything else
    // happens (`--wait`: waited for, until a signal).
    let mut knobs = if wait {
        Knobs::new_waiting(&|| !control.was_interrupted())?
    } else {
        Knobs::new()?
    };
    let combos = plan.combinations();
    let started = std::time::SystemTime::now();
    let exp = format!("exp-{}", latlab_core::result::new_run_id(started));
    let seed = plan.design.seed.unwrap_or_else(|| {
        started
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64)
    });
    let order = schedule(&plan, combos.len(), seed);
    latlab_core::note!(
        "latlab run {}: experiment {exp}, {} combination(s) x {} repeat(s), order {:?} (seed {seed})",
        path.display(),
        combos.len(),
        plan.design.repeats,
        plan.design.order
    );
    for f in plan
        .factors
        .iter()
        .filter_map(|f| f.note.as_ref().map(|n| (f, n)))
    {
        latlab_core::note!("  note on factor {}: {}", f.0.name, f.1);
    }
    latlab_core::output::stderr(&super::dry::estimability(&plan));
    // Results come back on each child's stdout (`--json -`), never through temporary files,
    // so a SIGKILLed plan leaves nothing behind.
    let mut files: Vec<Vec<(Run, String)>> = vec![Vec::new(); combos.len()];
    // Runs stored but left out of the comparison (cut short by the interrupt, or disturbed
    // and made again).
    let mut left_out = 0usize;
    let outcome = execute(
        &plan_name(path),
        &plan,
        &combos,
        &order,
        &exp,
        store,
        &mut knobs,
        control,
        (&mut files, &mut left_out),
        opts.on_disturbed,
    );
    // Whatever happened, put every setting back.
    let failed = knobs.restore();
    if !failed.is_empty() {
        return Err(Error::Env(format!(
            "could not restore: {}; the journal is kept for 'latlab restore'",
            failed.join("; ")
        )));
    }
    outcome?;
    let compared = files.iter().map(Vec::len).sum::<usize>();
    let mut report = format!(
        "experiment {exp}: {} run(s) stored{}{}\n",
        compared + left_out,
        if left_out > 0 {
            format!(", {left_out} of them left out of the comparison")
        } else {
            String::new()
        },
        if control.was_interrupted() {
            " (interrupted)"
        } else {
            ""
        }
    );
    let facts = kinds(&plan.measure.command);
    report.push_str(&super::summary::analysis(&plan, &facts, &combos, &files)?);
    Ok(report)
}

/// How `latlab run` runs a plan besides the plan itself.
#[derive(Debug, Clone, Default)]
pub struct Options<'a> {
    /// The store the runs go to.
    pub store: Option<&'a str>,
    /// `--set KEY=VALUE` overrides.
    pub sets: &'a [String],
    /// `--wait` for another latlab's settings lock.
    pub wait: bool,
    /// `--on-disturbed`.
    pub on_disturbed: OnDisturbed,
}

/// What a plan does with a run whose ground moved (`--on-disturbed`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum OnDisturbed {
    /// Keep it out of the analysis and make the run again (at most twice: `MAX_RERUNS`).
    #[default]
    Rerun,
    /// Keep it (marked disturbed in the store) and go on.
    Keep,
    /// Keep it and stop the plan (every setting is put back).
    Stop,
}

/// How often one run of a plan is made again because its ground moved.
pub(crate) const MAX_RERUNS: u32 = 2;

/// One measurement child's end.
enum Child {
    /// It saved a result: the run and its store name.
    Saved(Box<Run>, String),
    /// Interrupted before it could save anything.
    Nothing,
}

/// The plan's file name as a tag value (no commas: tag lists split on them).
fn plan_name(path: &Path) -> String {
    path.file_name().map_or("plan".into(), |n| {
        n.to_string_lossy().replace([',', '\n'], "_")
    })
}

#[allow(clippy::too_many_arguments)]
fn execute(
    plan_file: &str,
    plan: &Plan,
    combos: &[Vec<usize>],
    order: &[(usize, u32)],
    exp: &str,
    store: Option<&str>,
    knobs: &mut Knobs,
    control: &Control,
    (files, left_out): (&mut [Vec<(Run, String)>], &mut usize),
    on_disturbed: OnDisturbed,
) -> Result<()> {
    let exe = std::env::current_exe()
        .map_err(|e| Error::Env(format!("cannot find latlab's own binary: {e}")))?;
    let mut warned: Vec<&'static str> = Vec::new();
    for (i, &(ci, r)) in order.iter().enumerate() {
        if control.was_interrupted() {
            break;
        }
        let combo = &combos[ci];
        let mut watch = set_levels(plan, combo, knobs)?;
        let progress = format!(
            "[{}/{}] {} repeat {r}",
            i + 1,
            order.len(),
            plan.label(combo)
        );
        for (f, &l) in plan.factors.iter().zip(combo) {
            if let Some(cmd) = f.pre.get(&f.levels[l]) {
                let what = format!("factor {} level {} pre", f.name, f.levels[l]);
                if !shell(cmd, &what, control, Hook::Pre)? {
                    latlab_core::note!("{progress}: interrupted in its {what} command");
                    // What the pre hooks began, the post hooks undo.
                    posts(plan, combo, control, &progress)?;
                    return Ok(());
                }
            }
        }
        let mut attempt = 0;
        loop {
            let c = command(
                &exe,
                plan,
                combo,
                (exp, plan_file),
                store,
                (ci, r),
                &watch.join("\n"),
            );
            match run_child(c, control, i + 1, &plan.label(combo))? {
                Child::Nothing => {
                    latlab_core::note!("{progress}: interrupted before it saved a result");
                    posts(plan, combo, control, &progress)?;
                    return Ok(());
                }
                Child::Saved(run, name) if run.disturbed() => {
                    let why: Vec<String> = run
                        .ground
                        .iter()
                        .filter(|g| g.what != latlab_core::result::COMPANY)
                        .map(latlab_core::result::GroundChange::short)
                        .collect();
                    let again = on_disturbed == OnDisturbed::Rerun
                        && attempt < MAX_RERUNS
                        && !control.was_interrupted();
                    latlab_core::note!(
                        "{progress}: run {} disturbed ({}){}",
                        name.trim_start_matches("run:"),
                        why.join(", "),
                        if again {
                            "; left out and made again"
                        } else {
                            ""
                        }
                    );
                    if again {
                        *left_out += 1;
                        attempt += 1;
                        // Made again at the level (another process may have changed it).
                        watch = set_levels(plan, combo, knobs)?;
                        continue;
                    }
                    let stop = on_disturbed == OnDisturbed::Stop;
                    files[ci].push((*run, name));
                    if stop {
                        return Err(Error::Env(format!(
                            "{progress}: the ground moved under the run (--on-disturbed stop): {}",
                            why.join(", ")
                        )));
                    }
                }
                // Cut short by the plan's interruption: kept in the store, but a partial run
                // beside whole ones would bias the comparison (its max and tail low).
                Child::Saved(run, name) if run.interrupted => {
                    *left_out += 1;
                    latlab_core::note!(
                        "{progress}: run {} interrupted after {:.1} s: stored, left out of the \
                         comparison",
                        name.trim_start_matches("run:"),
                        run.duration_s
                    );
                }
                Child::Saved(run, name) => {
                    latlab_core::note!(
                        "{progress}: run {}{}",
                        name.trim_start_matches("run:"),
                        run_warnings(&run)
                    );
                    short_run_note(&run, &mut warned);
                    files[ci].push((*run, name));
                }
            }
            break;
        }
        if !posts(plan, combo, control, &progress)? {
            return Ok(());
        }
    }
    Ok(())
}

/// Runs the `post` hooks of a run's levels (also after an interrupted run: they undo what the
/// `pre` hooks did). False when one was cut short (the plan ends as interrupted).
fn posts(plan: &Plan, combo: &[usize], control: &Control, progress: &str) -> Result<bool> {
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

/// Puts the settings of `combo`'s levels in force; returns what its runs watch
/// (driver::ground): every setting with what it reads now that its level is set, so a pre
/// command (or another process) that changes it before the run starts is seen too.
fn set_levels(plan: &Plan, combo: &[usize], knobs: &mut Knobs) -> Result<Vec<String>> {
    for ((f, &l), files) in plan.factors.iter().zip(combo).zip(&plan.knob_files) {
        for file in files {
            // Said of the plan's factor and level, not only of the file (a level the kernel
            // takes only at run time: a sysctl's range the checks before the runs cannot know).
            knobs.set(file, &f.levels[l]).map_err(|e| {
                let said = format!("factor '{}', level '{}': {e}", f.name, f.levels[l]);
                match e {
                    Error::Usage(_) => Error::Usage(said),
                    _ => Error::Env(said),
                }
            })?;
        }
    }
    Ok(plan
        .knob_files
        .iter()
        .flatten()
        .map(|p| crate::driver::ground::watch_line(p))
        .collect())
}

/// The command line of one run of the plan: the measurement with its level's arguments, its
/// result on stdout, its tags, the store and the settings to watch through the environment.
fn command(
    exe: &Path,
    plan: &Plan,
    combo: &[usize],
    (exp, plan_file): (&str, &str),
    store: Option<&str>,
    (ci, r): (usize, u32),
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
    c.args([
        "--tag",
        &format!("experiment={exp}"),
        "--tag",
        &format!("repeat={r}"),
        // Which level combination (0: the baseline), so a later compare or report of the
        // experiment puts the baseline first whatever order the runs were made in.
        "--tag",
        &format!("combination={ci}"),
        // The plan file it came from, for `runs list --experiments`.
        "--tag",
        &format!("plan={plan_file}"),
    ]);
    for (f, &l) in plan.factors.iter().zip(combo) {
        c.arg("--tag").arg(format!("{}={}", f.name, f.levels[l]));
    }
    c.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // The measurement dies with the plan: a SIGKILLed runner leaves nothing running.
    latlab_core::sys::process::die_with_us(&mut c);
    c
}

/// Runs one measurement child to its end, forwarding a Ctrl-C to it; its result comes back on
/// its stdout. A child that failed is the plan's error (exit 3 with its message).
fn run_child(mut c: Command, control: &Control, n: usize, label: &str) -> Result<Child> {
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
        None => Err(Error::Env(format!(
            "run {n} ({label}) failed ({status}): {}",
            err.trim()
        ))),
    }
}

/// Says, once per figure, when a run came out too short for a figure the comparison uses
/// (overruns under load can take a planned 10 000 below it), with the length that is enough
/// at the rate the run achieved.
fn short_run_note(run: &Run, warned: &mut Vec<&'static str>) {
    let n: u64 = run
        .series
        .iter()
        .filter(|s| s.unit == "ns")
        .flat_map(|s| s.histogram.buckets.iter().map(|b| b[1]))
        .fold(0, u64::saturating_add);
    if n == 0 || run.duration_s <= 0.0 {
        return;
    }
    let rate = n as f64 / run.duration_s;
    for (m, need) in super::dry::needs() {
        if n < need
            && need > 1
            && !warned.contains(&m)
            && rate * run.duration_s * 1.2 >= need as f64
        {
            warned.push(m);
            let d = latlab_analysis::compare::decide::seconds_for(need, rate);
            latlab_core::note!(
                "    note: this run has {n} samples, {m} needs {}: not estimable from runs this \
                 long; runs of {d} s would give it (--set duration={d}s)",
                latlab_analysis::compare::analysis::thousands(need)
            );
        }
    }
}

/// A run's warnings (e.g. a disturbing command that failed), for its progress line.
fn run_warnings(run: &Run) -> String {
    run.warnings
        .iter()
        .map(|x| format!("\n    warning: {x}"))
        .collect()
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
