//! Kernels A/B on a real machine: each run of a `[kexec]` plan is made in a fresh kexec boot of
//! its level's kernel, the plan resumed after every boot from its state on disk (`latlab run
//! PLAN --resume-or-start`, as contrib/latlab-kexec.service does at boot), this machine's own
//! kernel booted again at the end; a boot that does not come back as asked, or in time, marks
//! its repeat failed and the plan goes on.

mod kernel;
mod state;

use super::plan::Plan;
use super::runner::{one_run, plan_name, schedule, Options, Place};
use crate::settings::Knobs;
use kernel::Booting;
use latlab_core::error::{Error, Result};
use latlab_core::result::Run;
use latlab_core::rt::Control;
use state::{Outcome, Pending, State};
use std::path::{Path, PathBuf};

/// Runs (starts, or with `--resume-or-start` continues) the kexec plan at `path`: returns the
/// report once the plan is over and this machine runs its own kernel again, and an empty text
/// when this process ends in a boot asked for (the next boot's resume goes on).
pub(crate) fn run(
    path: &Path,
    plan: &Plan,
    opts: &Options<'_>,
    control: &Control,
    kinds: latlab_core::result::kind::Kinds,
) -> Result<String> {
    let k = plan.kexec.as_ref().expect("a kexec plan");
    let plan_file =
        std::fs::canonicalize(path).map_err(|e| Error::io(path.display().to_string(), e))?;
    // Resolved against the plan's directory when the plan was read.
    let dir = k.state.clone();
    if dir.symlink_metadata().is_ok() && !dir.is_dir() {
        return Err(Error::Usage(format!(
            "{}: kexec.state {}: not a directory",
            path.display(),
            dir.display()
        )));
    }
    let sha = plan_sha(&plan_file, opts.sets)?;
    let store = named_store(opts.store);
    let combos = plan.combinations().len();
    // What can be refused without writing anything is refused first: the plan under way
    // there (read, not yet locked), then what booting by kexec needs of this machine.
    if let Some(st) = State::load(&dir, combos)? {
        resumable(&st, &dir, (&plan_file, &sha), &store, opts.resume_or_start)?;
    }
    kernel::preflight()?;
    let original = kernel::original(&kernel::now()?)?;
    // Every level's kernel can be booted from here.
    for c in &plan.combinations() {
        let b = plan.level_boot(c).expect("a kexec plan has a boot factor");
        kernel::for_level(&b, &original).map_err(|e| match e {
            Error::Usage(m) => Error::Usage(format!("{}: {m}", path.display())),
            e => e,
        })?;
    }
    std::fs::create_dir_all(&dir).map_err(|e| {
        Error::Env(format!(
            "{}: {e} (where the plan's state lives across boots; [kexec] state names another)",
            dir.display()
        ))
    })?;
    let _lock = state::lock(&dir)?;
    let mut st = match State::load(&dir, combos)? {
        Some(st) => {
            resumable(&st, &dir, (&plan_file, &sha), &store, opts.resume_or_start)?;
            latlab_core::note!(
                "latlab run {}: experiment {}, resumed after step {} of {}",
                path.display(),
                st.exp,
                st.next,
                st.order.len()
            );
            st
        }
        None => start(path, plan, opts, (plan_file, sha), store, original)?,
    };
    let cx = Ctx {
        dir: &dir,
        path,
        plan,
        opts,
        control,
        kinds,
        combos: plan.combinations(),
    };
    drive(&cx, &mut st)
}

/// A new kexec plan's state, once every level's kernel is known to be here.
fn start(
    path: &Path,
    plan: &Plan,
    opts: &Options<'_>,
    (plan_file, sha): (PathBuf, String),
    store: Option<String>,
    original: kernel::Target,
) -> Result<State> {
    let dir = &plan.kexec.as_ref().expect("a kexec plan").state;
    let combos = plan.combinations();
    let started = std::time::SystemTime::now();
    let exp = format!("exp-{}", latlab_core::result::new_run_id(started));
    let seed = plan.design.seed.unwrap_or_else(|| {
        started
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64)
    });
    let order = schedule(plan, combos.len(), seed);
    latlab_core::note!(
        "latlab run {}: experiment {exp}, {} combination(s) x {} repeat(s), order {:?} (seed \
         {seed}), each run a fresh kexec boot; state in {} (latlab run {} --resume-or-start \
         continues it after each boot)",
        path.display(),
        combos.len(),
        plan.design.repeats,
        plan.design.order,
        dir.display(),
        path.display()
    );
    Ok(State::new(
        plan_file, sha, opts.sets, store, exp, seed, order, original,
    ))
}

/// Whether the state found may be continued by this invocation.
fn resumable(
    st: &State,
    dir: &Path,
    (plan_file, sha): (&Path, &str),
    store: &Option<String>,
    resume: bool,
) -> Result<()> {
    let said = format!(
        "an unfinished kexec plan ({}, experiment {}, {} of {} runs booted) is in {}",
        st.plan_file.display(),
        st.exp,
        st.next,
        st.order.len(),
        dir.display()
    );
    if !resume {
        return Err(Error::Usage(format!(
            "{said}: --resume-or-start continues it; remove {} to abandon it",
            dir.join(state::FILE).display()
        )));
    }
    if st.plan_file != plan_file || st.plan_sha != sha {
        return Err(Error::Usage(format!(
            "{said}, and it is not {} with these --set as it was when it started: continue it \
             with its own plan, or remove {} to abandon it",
            plan_file.display(),
            dir.join(state::FILE).display()
        )));
    }
    if &st.store != store {
        return Err(Error::Usage(format!(
            "{said}: its runs go to the store {}; give the same --store (or LATLAB_STORE) to \
             the resume",
            st.store.as_deref().unwrap_or("by default")
        )));
    }
    Ok(())
}

/// The plan's text and `--set`s, hashed: what a resume must find unchanged.
fn plan_sha(plan_file: &Path, sets: &[String]) -> Result<String> {
    use sha2::Digest;
    let text = latlab_core::io::read_text_limited(plan_file, super::plan::MAX_PLAN_BYTES, "plan")?;
    let mut h = sha2::Sha256::new();
    h.update(text.as_bytes());
    for s in sets {
        h.update(b"\n--set ");
        h.update(s.as_bytes());
    }
    Ok(h.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

/// The store the runs go to, as named (`--store`, else `LATLAB_STORE`), its password hidden.
fn named_store(store: Option<&str>) -> Option<String> {
    store
        .map(String::from)
        .or_else(|| std::env::var("LATLAB_STORE").ok().filter(|s| !s.is_empty()))
        .map(|s| latlab_core::store::redact_spec(&s))
}

fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// What the steps of one invocation share.
struct Ctx<'a> {
    dir: &'a Path,
    path: &'a Path,
    plan: &'a Plan,
    opts: &'a Options<'a>,
    control: &'a Control,
    kinds: latlab_core::result::kind::Kinds,
    combos: Vec<Vec<usize>>,
}

impl Ctx<'_> {
    /// Step `i`'s progress label.
    fn label(&self, st: &State, i: usize) -> String {
        let (ci, r) = st.order[i];
        format!(
            "[{}/{}] {} repeat {r}",
            i + 1,
            st.order.len(),
            self.plan.label(&self.combos[ci])
        )
    }
}

/// The plan from where it stands: the boot it waited for judged (and its run made), then the
/// next boot asked for, until a kexec is under way or the plan is over.
fn drive(cx: &Ctx<'_>, st: &mut State) -> Result<String> {
    loop {
        if let Some(p) = st.pending.take() {
            match arrived(cx, st, &p)? {
                Arrived::Over => return finish(st, cx.dir, cx.plan, cx.kinds),
                Arrived::Stopped => return Ok(String::new()),
                Arrived::Made => {}
            }
        }
        if let Some(end) = next_boot(cx, st)? {
            return end;
        }
    }
}

/// What became of the boot a plan waited for.
enum Arrived {
    /// Its step was judged (its run made, or its repeat failed): the plan goes on.
    Made,
    /// An interrupt stopped the plan in this boot.
    Stopped,
    /// It was the return to this machine's own kernel: the plan is over.
    Over,
}

/// Judges the boot `p` asked for (the kernel and command line asked for, in time) and, when
/// it is one, makes its step's run.
fn arrived(cx: &Ctx<'_>, st: &mut State, p: &Pending) -> Result<Arrived> {
    let timeout = cx.plan.kexec.as_ref().map_or(600, |k| k.timeout);
    let now = kernel::now()?;
    let came = if now.boot_id == p.left_boot {
        Err("the kexec did not happen (this is the boot it was asked from)".to_string())
    } else {
        let took = unix_now().saturating_sub(p.at_unix);
        kernel::arrived(&p.want, &p.words, &now).and_then(|()| {
            if took > timeout {
                Err(format!(
                    "it came back {took} s after the kexec, past [kexec] timeout {timeout} s"
                ))
            } else {
                Ok(())
            }
        })
    };
    let Some(i) = p.step else {
        if let Err(why) = came {
            latlab_core::note!(
                "latlab run: the plan is over, but this machine's own kernel did not come back \
                 as it was: {why}"
            );
        }
        return Ok(Arrived::Over);
    };
    let label = cx.label(st, i);
    let o = match came {
        Ok(()) => measure(cx, st, i, &label)?,
        Err(why) => {
            latlab_core::note!("{label}: this repeat failed, the plan goes on: {why}");
            failed(i, why, Some(now.boot_id))
        }
    };
    st.done.push(o);
    st.save(cx.dir)?;
    if cx.control.was_interrupted() {
        latlab_core::note!(
            "latlab run: interrupted; the plan stops in this boot (latlab run {} \
             --resume-or-start continues it)",
            cx.path.display()
        );
        return Ok(Arrived::Stopped);
    }
    Ok(Arrived::Made)
}

/// Asks for the next boot: the next step's level, or this machine's own kernel once every
/// run is made. Some(the end) when this process ends here (a kexec under way, or the plan
/// over because its own kernel could not be booted again); None to go on (a step failed).
fn next_boot(cx: &Ctx<'_>, st: &mut State) -> Result<Option<Result<String>>> {
    // Ctrl-C between two boots: nothing more is booted (the state is as the last step left it).
    if cx.control.was_interrupted() {
        latlab_core::note!(
            "latlab run: interrupted; no further kexec (latlab run {} --resume-or-start \
             continues the plan)",
            cx.path.display()
        );
        return Ok(Some(Ok(String::new())));
    }
    let (step, want, words) = if st.next < st.order.len() {
        let i = st.next;
        st.next += 1;
        let (ci, _) = st.order[i];
        let b = cx
            .plan
            .level_boot(&cx.combos[ci])
            .expect("a kexec plan has a boot factor");
        match kernel::for_level(&b, &st.original) {
            Ok(t) => (Some(i), t, b.cmdline.trim().to_string()),
            Err(e) => {
                let label = cx.label(st, i);
                latlab_core::note!("{label}: this repeat failed, the plan goes on: {e}");
                st.done.push(failed(i, e.to_string(), None));
                st.save(cx.dir)?;
                return Ok(None);
            }
        }
    } else {
        let o = st.original.clone();
        let words = o.cmdline.clone();
        (None, o, words)
    };
    st.pending = Some(Pending {
        step,
        left_boot: kernel::now()?.boot_id,
        at_unix: unix_now(),
        want: want.clone(),
        words: words.clone(),
    });
    st.save(cx.dir)?;
    let what = match step {
        Some(i) => cx.label(st, i),
        None => "latlab run: the plan's runs are made; back to this machine's own kernel".into(),
    };
    latlab_core::note!(
        "{what}: kexec into {}{}",
        want.release,
        if step.is_some() && !words.is_empty() {
            format!(" '{words}'")
        } else {
            String::new()
        }
    );
    match kernel::boot(&want) {
        Ok(Booting::Queued) => Ok(Some(Ok(String::new()))),
        Err(e) => {
            st.pending = None;
            let Some(i) = step else {
                latlab_core::note!(
                    "latlab run: could not boot this machine's own kernel again ({e}); the plan \
                     ends in this boot"
                );
                return Ok(Some(finish(st, cx.dir, cx.plan, cx.kinds)));
            };
            // The machine could not kexec (not the level's boot failing): the plan stops with
            // that step still to do, for a resume once the cause is put right.
            st.next = i;
            st.save(cx.dir)?;
            Err(Error::Env(format!(
                "{what}: {e}; the plan stops here, its state kept in {} (latlab run {} \
                 --resume-or-start continues it)",
                cx.dir.display(),
                cx.path.display()
            )))
        }
    }
}

fn failed(step: usize, why: String, boot_id: Option<String>) -> Outcome {
    Outcome {
        step,
        what: "failed".into(),
        run: None,
        why: Some(why),
        boot_id,
    }
}

/// Makes step `i`'s run in this boot, stored as a plan's run and kept for the report.
fn measure(cx: &Ctx<'_>, st: &State, i: usize, progress: &str) -> Result<Outcome> {
    let place = Place {
        exp: &st.exp,
        plan_file: &plan_name(cx.path),
        store: cx.opts.store,
    };
    let mut knobs = Knobs::idle();
    let run = one_run(
        cx.plan,
        &place,
        &mut knobs,
        cx.control,
        st.order[i],
        progress,
    )?;
    let boot_id = Some(kernel::now()?.boot_id);
    Ok(match run {
        Some(run) => {
            state::keep_run(cx.dir, &st.exp, i, &run)?;
            Outcome {
                step: i,
                what: "stored".into(),
                run: Some(run.id.clone()),
                why: None,
                boot_id,
            }
        }
        None => Outcome {
            step: i,
            what: "not kept".into(),
            run: None,
            why: Some("interrupted".into()),
            boot_id,
        },
    })
}

/// The plan is over: its report, from the runs kept, kept beside the state and returned.
fn finish(
    st: &State,
    dir: &Path,
    plan: &Plan,
    kinds: latlab_core::result::kind::Kinds,
) -> Result<String> {
    let combos = plan.combinations();
    let mut files: Vec<Vec<(Run, String)>> = vec![Vec::new(); combos.len()];
    for o in st.done.iter().filter(|o| o.what == "stored") {
        let run = state::kept_run(dir, &st.exp, o.step)?;
        let name = format!("run:{}", run.id);
        files[st.order[o.step].0].push((run, name));
    }
    let count = |w: &str| st.done.iter().filter(|o| o.what == w).count();
    let (stored, failed, not_kept) = (count("stored"), count("failed"), count("not kept"));
    let mut report = format!(
        "experiment {}: {} run(s) stored, each in a kexec boot of its own{}; this machine runs \
         {} again\n",
        st.exp,
        stored + not_kept,
        super::summary::left_out_and_failed(not_kept, failed),
        kernel::now().map_or_else(|_| st.original.release.clone(), |n| n.release)
    );
    let facts = kinds(&plan.measure.command);
    report.push_str(&super::summary::analysis(plan, &facts, &combos, &files)?);
    st.finish(dir, &report)?;
    Ok(report)
}
