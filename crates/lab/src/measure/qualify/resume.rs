//! Starting a segment: a new qualification, or `--resume` of one the store holds (found by its
//! id, any of its runs' ids, or as the newest unfinished one of this host), refused when it is
//! finished, of another kind or another host (exit 2) or being measured now (exit 3); its
//! stored checkpoints are read back into what the final result needs of them
//! (`summary::Before`).
//! One process measures a qualification at a time: an `flock` on a file in the per-boot state
//! directory, which a dead process lets go of by dying.

use super::args::QualifyArgs;
pub(crate) use super::summary::Before;
use super::QualifyConfig;
use latlab_core::config::CpuSet;
use latlab_core::error::{Error, Result};
use latlab_core::result::qualification::State;
use latlab_core::result::Run;
use latlab_core::store::{Filter, RunRow, Store};
use std::collections::BTreeMap;
use std::io::{Read, Seek, Write};
use std::sync::Arc;

/// Tag every run of a qualification carries (`qualification=ID`).
pub(crate) const TAG_QUALIFICATION: &str = "qualification";
/// Tag of a run's role: `interval`, or the final result's state (`finished`, `interrupted`).
pub(crate) const TAG_ROLE: &str = "qualify";

/// The qualification's lock, held by the process measuring it.
#[derive(Debug)]
pub(crate) struct Lock {
    _file: std::fs::File,
    path: std::path::PathBuf,
}

impl Lock {
    /// Takes the lock of qualification `id` (exit 3 naming the holder when another process
    /// measures it now).
    pub(crate) fn take(id: &str) -> Result<Lock> {
        let dir = latlab_core::io::state_dir();
        std::fs::create_dir_all(&dir).map_err(|e| Error::io(dir.display().to_string(), e))?;
        let path = dir.join(format!("qualify-{id}.lock"));
        // The file is removed by whoever lets go of it, so a lock taken on a file another
        // process removed meanwhile (the path now names another file, or none) is taken again.
        for _ in 0..100 {
            let mut f = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .open(&path)
                .map_err(|e| Error::io(path.display().to_string(), e))?;
            match f.try_lock() {
                Ok(()) => {}
                Err(std::fs::TryLockError::WouldBlock) => {
                    let mut pid = String::new();
                    let _ = f.read_to_string(&mut pid);
                    let who = pid
                        .trim()
                        .parse::<i32>()
                        .map(|p| latlab_core::sys::procs::describe(std::path::Path::new("/proc"), p))
                        .unwrap_or_else(|_| "another process".into());
                    return Err(Error::Env(format!(
                        "qualification {id} is being measured now by {who} (it holds {}); one \
                         process measures a qualification at a time",
                        path.display()
                    )));
                }
                Err(std::fs::TryLockError::Error(e)) => {
                    return Err(Error::io(path.display().to_string(), e))
                }
            }
            use std::os::unix::fs::MetadataExt;
            let same = match (f.metadata(), std::fs::metadata(&path)) {
                (Ok(a), Ok(b)) => a.ino() == b.ino() && a.dev() == b.dev(),
                _ => false,
            };
            if !same {
                continue;
            }
            let _ = f.set_len(0);
            let _ = f.rewind();
            let _ = f.write_all(std::process::id().to_string().as_bytes());
            return Ok(Lock { _file: f, path });
        }
        Err(Error::Env(format!(
            "{}: the lock file kept being replaced while it was taken",
            path.display()
        )))
    }

    /// Removes its file while it is still held (the qualification is finished); the lock
    /// itself goes with the process or the value.
    pub(crate) fn release(&self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

impl Drop for Lock {
    /// An interrupted qualification lets go of its lock file too: it means nothing once no
    /// process measures (the next `--resume` makes a new one). Removed before the descriptor
    /// closes, so no other process holds a lock on the file removed.
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// `latlab qualify`: lowers or reads back the settings, takes the lock and runs the segment.
pub(crate) fn start(a: QualifyArgs, online: &CpuSet, command_line: Vec<String>) -> Result<()> {
    if a.common.store.no_store {
        return Err(Error::flag(
            "--no-store",
            "",
            "a qualification lives in the store (its checkpoints are what survives a kill)",
        ));
    }
    let store_spec = a.common.store.store.clone();
    // A qualification to resume is chosen, then locked, then chosen again and read back under
    // the lock: the process that held it may have finished it (or stored its last checkpoints)
    // in between.
    let (mut cfg, lock) = match (&a.resume, a.resume_or_start) {
        (Some(id), _) => {
            refuse_settings(&a)?;
            let st = latlab_core::store::open(store_spec.as_deref())?;
            let chosen = find(&*st, id)?;
            pause_before_locking();
            let lock = Lock::take(&chosen)?;
            let mut cfg = read_back(&*st, &find(&*st, &chosen)?)?;
            outputs_given(&mut cfg, &a)?;
            (cfg, Some(lock))
        }
        (None, true) => {
            let st = latlab_core::store::open(store_spec.as_deref())?;
            let mut resumed = None;
            if let Some(q) = newest_unfinished(&*st)? {
                pause_before_locking();
                let lock = Lock::take(&q)?;
                // Finished meanwhile: a new one starts, as if there had been none.
                if find(&*st, &q).is_ok() {
                    latlab_core::note!("latlab qualify: resuming qualification {q} with its own settings");
                    let mut cfg = read_back(&*st, &q)?;
                    outputs_given(&mut cfg, &a)?;
                    resumed = Some((cfg, Some(lock)));
                }
            }
            match resumed {
                Some(r) => r,
                None => (QualifyConfig::from_args(&a, online)?, None),
            }
        }
        (None, false) => (QualifyConfig::from_args(&a, online)?, None),
    };
    for (flag, p) in [("--junit", &cfg.junit), ("--report", &cfg.report)] {
        if let Some(p) = p {
            latlab_core::output::check_writable(p)
                .map_err(|e| Error::flag(flag, p.display(), format!("cannot be written: {e}")))?;
        }
    }
    let lock = match lock {
        Some(l) => l,
        None => Lock::take(&cfg.id)?,
    };
    cfg.derived.lock = Some(Arc::new(lock));
    cfg.quiet = a.common.quiet();
    let margs = crate::driver::MeasureArgs {
        store: crate::driver::StoreArgs {
            store: store_spec,
            no_store: false,
            tag: cfg
                .tags
                .iter()
                .cloned()
                .chain([format!("{TAG_QUALIFICATION}={}", cfg.id)])
                .collect(),
        },
        loads: crate::driver::args::Loads {
            load: cfg.loads.clone(),
            housekeeping: cfg
                .housekeeping
                .as_deref()
                .map(latlab_core::config::values::cpus)
                .transpose()
                .map_err(|e| Error::flag("--housekeeping", cfg.housekeeping.as_deref().unwrap_or(""), e))?,
        },
        rt: crate::driver::args::Strict { strict: cfg.strict },
        output: crate::driver::args::Output {
            quiet: a.common.output.quiet,
            json: cfg.json.clone(),
        },
    };
    let common = margs.to_common()?;
    crate::driver::execute(cfg, &common, command_line)
}

/// Tests hold a resuming latlab between choosing its qualification and locking it, to finish
/// that qualification meanwhile.
fn pause_before_locking() {
    if let Some(ms) = std::env::var("LATLAB_TEST_RESUME_PAUSE_MS")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
    {
        std::thread::sleep(std::time::Duration::from_millis(ms));
    }
}

/// With `--resume`, the qualification's own settings apply: any other given is refused.
fn refuse_settings(a: &QualifyArgs) -> Result<()> {
    let given = [
        ("-a/--affinity", a.affinity.is_some()),
        ("-i/--interval", a.interval.is_some()),
        ("-p/--priority", a.priority.is_some()),
        ("-D/--duration", a.duration.is_some()),
        ("--checkpoint-every", a.checkpoint_every.is_some()),
        ("--require", !a.require.is_empty()),
        ("--confidence", a.confidence.is_some()),
        ("--no-loads", a.no_loads),
        ("--load", !a.common.loads.load.is_empty()),
        ("--housekeeping", a.common.loads.housekeeping.is_some()),
        ("--trace", a.trace.trace),
        ("--tag", !a.common.store.tag.is_empty()),
    ];
    match given.iter().find(|g| g.1) {
        Some((flag, _)) => Err(Error::Usage(format!(
            "{flag}: --resume continues a qualification with its own settings, loads and id; \
             give only --store and the outputs (--junit, --report, --json) with it"
        ))),
        None => Ok(()),
    }
}

/// The outputs given with `--resume`: they are not settings of the qualification, so the ones
/// given now replace (or add to) those its first segment asked for.
fn outputs_given(cfg: &mut QualifyConfig, a: &QualifyArgs) -> Result<()> {
    use super::lower::absolute;
    if let Some(p) = &a.junit {
        cfg.junit = Some(absolute("--junit", p)?);
    }
    if let Some(p) = &a.report {
        cfg.report = Some(absolute("--report", p)?);
    }
    if let Some(p) = &a.common.output.json {
        cfg.json = Some(absolute("--json", p)?);
    }
    Ok(())
}

/// Every stored run of kind qualify, by qualification id.
fn by_qualification(st: &dyn Store) -> Result<BTreeMap<String, Vec<RunRow>>> {
    let rows = st.list(&Filter {
        kind: Some(<QualifyConfig as crate::driver::Measurement>::KIND.into()),
        ..Default::default()
    })?;
    let mut m: BTreeMap<String, Vec<RunRow>> = BTreeMap::new();
    for r in rows {
        if let Some(q) = r.tags.get(TAG_QUALIFICATION).cloned() {
            m.entry(q).or_default().push(r);
        }
    }
    Ok(m)
}

fn finished(rows: &[RunRow]) -> Option<&RunRow> {
    rows.iter()
        .find(|r| r.tags.get(TAG_ROLE).map(String::as_str) == Some("finished"))
}

/// The qualification `id` names (its own id, or one of its runs'), if it may be resumed here.
fn find(st: &dyn Store, id: &str) -> Result<String> {
    let all = by_qualification(st)?;
    let me = latlab_core::result::Environment::hostname();
    if id.is_empty() {
        return newest_unfinished(st)?.ok_or_else(|| {
            Error::Usage(format!(
                "--resume: no unfinished qualification of this host ({me}) in {}",
                st.location()
            ))
        });
    }
    let qid = if all.contains_key(id) {
        id.to_string()
    } else {
        let e = st.get(id).map_err(|_| {
            Error::flag(
                "--resume",
                id,
                format!("no qualification or run of that id in {}", st.location()),
            )
        })?;
        let kind = e.run.get("kind").and_then(|k| k.as_str()).unwrap_or("?");
        match e.tags.get(TAG_QUALIFICATION) {
            Some(q) if kind == <QualifyConfig as crate::driver::Measurement>::KIND => q.clone(),
            _ => {
                return Err(Error::flag(
                    "--resume",
                    id,
                    format!("run {id} is a {kind} run, not part of a qualification: nothing to resume"),
                ))
            }
        }
    };
    let rows = &all[&qid];
    if let Some(f) = finished(rows) {
        return Err(Error::flag(
            "--resume",
            id,
            format!(
                "qualification {qid} is finished (its final result is run {}): nothing to \
                 resume; start a new one",
                f.id
            ),
        ));
    }
    if let Some(r) = rows.iter().find(|r| r.host != me) {
        return Err(Error::flag(
            "--resume",
            id,
            format!(
                "qualification {qid} was measured on host {}, this is {me}: a qualification is \
                 of one machine",
                r.host
            ),
        ));
    }
    Ok(qid)
}

/// The newest qualification of this host without a finished result, if any.
fn newest_unfinished(st: &dyn Store) -> Result<Option<String>> {
    let me = latlab_core::result::Environment::hostname();
    let all = by_qualification(st)?;
    Ok(all
        .into_iter()
        .filter(|(_, rows)| finished(rows).is_none() && rows.iter().all(|r| r.host == me))
        .filter(|(_, rows)| rows.iter().any(|r| r.tags.get(TAG_ROLE).is_some_and(|t| t == "interval")))
        .max_by(|a, b| {
            let newest = |rows: &[RunRow]| rows.iter().map(|r| r.started.clone()).max();
            newest(&a.1).cmp(&newest(&b.1))
        })
        .map(|(q, _)| q))
}

/// Reads a qualification's stored intervals back: its settings (the config its checkpoints
/// were measured with) and everything the final result needs of them.
fn read_back(st: &dyn Store, qid: &str) -> Result<QualifyConfig> {
    let rows = st.list(&Filter {
        kind: Some(<QualifyConfig as crate::driver::Measurement>::KIND.into()),
        tags: vec![
            ("experiment".into(), qid.to_string()),
            (TAG_ROLE.into(), "interval".into()),
        ],
        ..Default::default()
    })?;
    let mut runs: Vec<Run> = rows
        .iter()
        .map(|r| {
            let e = st.get(&r.id)?;
            serde_json::from_value::<Run>(e.run)
                .map_err(|err| Error::Env(format!("stored run {}: {err}", r.id)))
        })
        .collect::<Result<_>>()?;
    runs.retain(|r| r.qualification.is_some());
    runs.sort_by_key(|r| r.qualification.as_ref().and_then(|q| q.interval));
    let Some(last) = runs.last() else {
        return Err(Error::flag(
            "--resume",
            qid,
            "no checkpoint of it is stored: nothing to continue from",
        ));
    };
    let mut cfg: QualifyConfig = serde_json::from_value(last.parameters.clone()).map_err(|e| {
        Error::Env(format!(
            "qualification {qid}: its stored settings cannot be read back: {e}"
        ))
    })?;
    cfg.derive()?;
    cfg.derived.before = Some(Arc::new(super::summary::before(&cfg, &runs)));
    Ok(cfg)
}

/// The state a stored final result gives its qualification, from its tag.
pub(crate) fn role(state: State) -> &'static str {
    match state {
        State::Finished => "finished",
        State::Interrupted => "interrupted",
        State::InProgress => "interval",
    }
}
