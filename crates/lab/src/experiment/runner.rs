//! Running a plan: every level combination × repeats in the chosen order, each run a latlab
//! measurement stored under one experiment id; knobs journaled and always restored; at the end
//! each combination against the baseline, ministat-style and tail-aware.

mod boot;
mod child;
mod hooks;

use super::plan::{Order, Plan};
use crate::settings::Knobs;
use child::{command, run_child, tags, Child};
use hooks::{posts, pres};
use latlab_core::error::{Error, Result};
use latlab_core::result::Run;
use latlab_core::rt::Control;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use std::path::Path;

/// The order runs are made in: (combination index, repeat number from 1), and the seed.
pub(crate) fn schedule(plan: &Plan, n_combos: usize, seed: u64) -> Vec<(usize, u32)> {
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

/// Runs the plan at `path` (loaded with its `--set` overrides) in one go; returns the final
/// report. The store goes
/// to each measurement through the environment (`LATLAB_STORE`), never on its command line.
///
/// `control` carries the interrupt flags (the caller routes signals to them and keeps the
/// process alive on a second one, so every setting is put back); `kinds` tells what the
/// plan's measurement is (its default metric, whether higher is better).
pub(crate) fn run(
    path: &Path,
    plan: Plan,
    opts: &Options<'_>,
    control: &Control,
    kinds: latlab_core::result::kind::Kinds,
) -> Result<String> {
    let (store, wait) = (opts.store, opts.wait);
    // One owner of system settings per machine: the lock is taken before anything else
    // happens (`--wait`: waited for, until a signal).
    let mut knobs = if plan.boot_factor().is_some() {
        // Booted kernels: nothing of this machine is set (the plan's checks refuse it).
        Knobs::idle()
    } else if wait {
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
    let mut boots_failed = 0usize;
    let outcome = execute(
        &plan_name(path),
        &plan,
        &combos,
        &order,
        &exp,
        store,
        &mut knobs,
        control,
        (&mut files, &mut left_out, &mut boots_failed),
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
        super::summary::left_out_and_failed(left_out, boots_failed),
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
    /// `--resume-or-start`: continue the `[kexec]` plan under way, else start it.
    pub resume_or_start: bool,
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

/// Where a run made outside a whole plan (a bisection's step) belongs: its experiment, the
/// plan file's name and the store.
pub(crate) struct Place<'a> {
    /// The experiment id the run is tagged with.
    pub(crate) exp: &'a str,
    /// The plan file's name (a tag value).
    pub(crate) plan_file: &'a str,
    /// The store.
    pub(crate) store: Option<&'a str>,
}

/// Makes one run of combination `ci` (its `r`th), between its level's hooks, stored like a
/// plan's run: the run, or None when it was interrupted or its boot failed (both said).
pub(crate) fn one_run(
    plan: &Plan,
    at: &Place<'_>,
    knobs: &mut Knobs,
    control: &Control,
    (ci, r): (usize, u32),
    progress: &str,
) -> Result<Option<Run>> {
    let exe = std::env::current_exe()
        .map_err(|e| Error::Env(format!("cannot find latlab's own binary: {e}")))?;
    let combos = plan.combinations();
    let combo = &combos[ci];
    let mut files: Vec<Vec<(Run, String)>> = vec![Vec::new(); combos.len()];
    let (mut left_out, mut failed) = (0usize, 0usize);
    let watch = set_levels(plan, combo, knobs)?;
    let mut runs = Runs {
        exe: &exe,
        plan_file: at.plan_file,
        plan,
        exp: at.exp,
        store: at.store,
        knobs,
        control,
        files: &mut files,
        left_out: &mut left_out,
        failed: &mut failed,
        on_disturbed: OnDisturbed::Keep,
        warned: Vec::new(),
        kept: None,
    };
    let made =
        pres(plan, combo, control, progress)? && runs.make(1, (ci, r), combo, progress, watch)?;
    posts(plan, combo, control, progress)?;
    let run = files[ci].pop().map(|(run, _)| run);
    Ok(run.filter(|r| made && !r.interrupted))
}

/// The plan's file name as a tag value (no commas: tag lists split on them).
pub(crate) fn plan_name(path: &Path) -> String {
    path.file_name().map_or("plan".into(), |n| {
        n.to_string_lossy().replace([',', '\n'], "_")
    })
}

/// Makes the plan's runs in `order`, each between its levels' `pre` and `post` hooks, until
/// the end or an interrupt; the runs kept for the comparison go to `files`, those stored but
/// left out are counted in `left_out`.
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
    (files, left_out, failed): (&mut [Vec<(Run, String)>], &mut usize, &mut usize),
    on_disturbed: OnDisturbed,
) -> Result<()> {
    let exe = std::env::current_exe()
        .map_err(|e| Error::Env(format!("cannot find latlab's own binary: {e}")))?;
    let mut runs = Runs {
        exe: &exe,
        plan_file,
        plan,
        exp,
        store,
        knobs,
        control,
        files,
        left_out,
        failed,
        on_disturbed,
        warned: Vec::new(),
        kept: None,
    };
    for (i, &(ci, r)) in order.iter().enumerate() {
        if control.was_interrupted() {
            break;
        }
        let combo = &combos[ci];
        let watch = set_levels(plan, combo, runs.knobs)?;
        let progress = format!(
            "[{}/{}] {} repeat {r}",
            i + 1,
            order.len(),
            plan.label(combo)
        );
        // What the pre hooks began, the post hooks undo, even when the run was interrupted.
        if !pres(plan, combo, control, &progress)?
            || !runs.make(i + 1, (ci, r), combo, &progress, watch)?
        {
            posts(plan, combo, control, &progress)?;
            return Ok(());
        }
        if !posts(plan, combo, control, &progress)? {
            return Ok(());
        }
    }
    Ok(())
}

/// What the runs of one plan share as they are made one after the other.
struct Runs<'a> {
    /// latlab's own binary, which makes each run.
    exe: &'a Path,
    plan_file: &'a str,
    plan: &'a Plan,
    /// The experiment id every run is tagged with.
    exp: &'a str,
    store: Option<&'a str>,
    knobs: &'a mut Knobs,
    control: &'a Control,
    /// The runs kept for the comparison, per combination.
    files: &'a mut [Vec<(Run, String)>],
    /// Runs stored but left out of the comparison.
    left_out: &'a mut usize,
    /// Repeats whose boot failed (nothing stored).
    failed: &'a mut usize,
    on_disturbed: OnDisturbed,
    /// The figures a short run was already noted for ([`short_run_note`]).
    warned: Vec<&'static str>,
    /// The store boot runs are kept in (opened at the first one).
    kept: Option<Box<dyn latlab_core::store::Store>>,
}

impl Runs<'_> {
    /// Makes the `r`th run of combination `ci` (`combo`; the plan's `n`th run) with the
    /// settings to `watch`, again while its ground moved and `--on-disturbed rerun` allows;
    /// false when it was interrupted before it saved a result (said).
    fn make(
        &mut self,
        n: usize,
        (ci, r): (usize, u32),
        combo: &[usize],
        progress: &str,
        mut watch: Vec<String>,
    ) -> Result<bool> {
        let mut attempt = 0;
        let boot = self.plan.boot_for(combo);
        loop {
            let tags = tags(self.plan, combo, (self.exp, self.plan_file), (ci, r));
            let c = match &boot {
                Some(b) => boot::command(self.exe, self.plan, b, &self.plan.args_for(combo))?,
                None => command(
                    self.exe,
                    self.plan,
                    combo,
                    self.store,
                    &tags,
                    &watch.join("\n"),
                ),
            };
            let label = self.plan.label(combo);
            let child = run_child(c, self.control, n, &label, boot.is_some())?;
            let child = match child {
                Child::Saved(run, _) if boot.is_some() => self.keep(run, &tags, progress)?,
                c => c,
            };
            match child {
                Child::Nothing => {
                    latlab_core::note!("{progress}: interrupted before it saved a result");
                    return Ok(false);
                }
                // Booted again, as a disturbed run is made again; then marked failed.
                Child::BootFailed(why) if attempt < MAX_RERUNS => {
                    latlab_core::note!("{progress}: the boot failed ({why}); booted again");
                    attempt += 1;
                    continue;
                }
                Child::BootFailed(why) => {
                    latlab_core::note!(
                        "{progress}: the boot failed again, this repeat is marked failed and the \
                         plan goes on: {why}"
                    );
                    *self.failed += 1;
                    return Ok(true);
                }
                Child::Saved(run, name) if run.disturbed() => {
                    if self.again(run, name, ci, attempt, progress)? {
                        attempt += 1;
                        // Made again at the level (another process may have changed it).
                        watch = set_levels(self.plan, combo, self.knobs)?;
                        continue;
                    }
                }
                // Cut short by the plan's interruption: kept in the store, but a partial run
                // beside whole ones would bias the comparison (its max and tail low).
                Child::Saved(run, name) if run.interrupted => {
                    *self.left_out += 1;
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
                    short_run_note(&run, &mut self.warned);
                    self.files[ci].push((*run, name));
                }
            }
            return Ok(true);
        }
    }

    /// Stores a run made in a guest (which could not store it) with the plan's `tags`, as the
    /// measurement would have stored it here.
    fn keep(&mut self, run: Box<Run>, tags: &[(String, String)], progress: &str) -> Result<Child> {
        if self.kept.is_none() {
            self.kept = Some(latlab_core::store::open(self.store)?);
        }
        let store = self.kept.as_mut().expect("opened above");
        let t: std::collections::BTreeMap<String, String> = tags.iter().cloned().collect();
        store.save(&run, &t)?;
        latlab_core::note!("{progress}: {}", boot::said(&run));
        let name = format!("run:{}", run.id);
        Ok(Child::Saved(run, name))
    }

    /// A run whose ground moved: true when it is left out to be made again (`--on-disturbed
    /// rerun`, at most [`MAX_RERUNS`] times, not after an interrupt); else it is kept, and
    /// under `--on-disturbed stop` the plan ends with an error.
    fn again(
        &mut self,
        run: Box<Run>,
        name: String,
        ci: usize,
        attempt: u32,
        progress: &str,
    ) -> Result<bool> {
        let why: Vec<String> = run
            .ground
            .iter()
            .filter(|g| g.what != latlab_core::result::COMPANY)
            .map(latlab_core::result::GroundChange::short)
            .collect();
        let again = self.on_disturbed == OnDisturbed::Rerun
            && attempt < MAX_RERUNS
            && !self.control.was_interrupted();
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
            *self.left_out += 1;
            return Ok(true);
        }
        self.files[ci].push((*run, name));
        if self.on_disturbed == OnDisturbed::Stop {
            return Err(Error::Env(format!(
                "{progress}: the ground moved under the run (--on-disturbed stop): {}",
                why.join(", ")
            )));
        }
        Ok(false)
    }
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
