//! The store a result goes to, opened before measuring, and what becomes of a run it refuses
//! or has not taken yet when a second Ctrl-C ends latlab: kept in a file, never lost.

use super::{background, ctx, signals, Common};
use latlab_core::error::{Error, Result};
use latlab_core::result::Run;
use std::collections::BTreeMap;
use std::time::Duration;

/// The store a result goes to, opened before measuring so a bad store fails before any time
/// is spent.
pub(super) struct Keeper {
    store: Option<Box<dyn latlab_core::store::Store>>,
    /// The store as named (`--store`, else `$LATLAB_STORE` or the default), for a second
    /// connection (`Ctx::keep_in_background`); None when the store was handed in opened.
    spec: Option<Option<String>>,
    tags: BTreeMap<String, String>,
    /// Tags the measurement gave its result (`Ctx::tag_result`).
    result_tags: Vec<(String, String)>,
}

impl Keeper {
    /// The store `c` names (or `given`, opened by the caller), with the run's `--tag`s; no
    /// store under `--no-store`, nor when a signal came while it was opening.
    pub(super) fn open(
        c: &Common,
        given: Option<Box<dyn latlab_core::store::Store>>,
        control: &latlab_core::rt::Control,
    ) -> Result<Keeper> {
        let tags = latlab_core::store::parse_tags(&c.tags)?;
        let spec = given.is_none().then(|| c.store.clone());
        let store = match given {
            _ if c.no_store => None,
            Some(s) => Some(s),
            None => open_unless_interrupted(c.store.clone(), control)?,
        };
        Ok(Keeper {
            store,
            spec,
            tags,
            result_tags: Vec::new(),
        })
    }

    /// Keeps the run the measurement returned, with its tags, and says where; one the store
    /// refuses, or does not take before a second Ctrl-C, is kept in a file instead.
    pub(super) fn keep(&mut self, run: &Run) -> Result<()> {
        let extra = std::mem::take(&mut self.result_tags);
        let Some(st) = self.store.as_mut() else {
            return Ok(());
        };
        let mut tags = self.tags.clone();
        tags.extend(extra);
        let first = st.rescue_dir();
        // Made JSON once, for the store and, should it refuse, the file. While the store takes
        // it (a lock another process holds can keep it 30 s) the run is ready: a second
        // Ctrl-C, which ends latlab at once, keeps it in a file.
        let value = std::sync::Arc::new(
            serde_json::to_value(run).map_err(|e| Error::Env(format!("run {}: {e}", run.id)))?,
        );
        pend((run.id.clone(), value.clone(), tags.clone(), first.clone()));
        let done = signals::note_unless_done(STORE_PATIENCE, || {
            "latlab: waiting for the store to take the run (another process holds it locked, \
             or its server is slow to answer); a second Ctrl-C or SIGTERM keeps the run in a file instead"
        });
        let kept = st.save_json(&value, &tags);
        done.store(true, std::sync::atomic::Ordering::Release);
        unpend(&run.id);
        if let Err(e) = kept {
            return Err(rescued(e, &run.id, &value, &tags, first));
        }
        latlab_core::note!("latlab: run {} stored in {}", run.id, st.location());
        Ok(())
    }

    /// Saves without a word (the measurement says what it keeps); a run the store refuses is
    /// kept in a file all the same (a qualification's checkpoint interval).
    fn keep_tagged(&mut self, run: &Run, extra: &[(&str, &str)]) -> Result<()> {
        if let Some(st) = self.store.as_mut() {
            let mut tags = self.tags.clone();
            tags.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
            let value = serde_json::to_value(run)
                .map_err(|e| Error::Env(format!("run {}: {e}", run.id)))?;
            if let Err(e) = st.save_json(&value, &tags) {
                return Err(rescued(e, &run.id, &value, &tags, st.rescue_dir()));
            }
        }
        Ok(())
    }
}

/// The store refused run `id` (`e`): it is kept in a file instead, never lost, and the error
/// says where (or why it could not be).
fn rescued(
    e: Error,
    id: &str,
    value: &serde_json::Value,
    tags: &BTreeMap<String, String>,
    first: Option<std::path::PathBuf>,
) -> Error {
    Error::Env(kept_instead(&e.to_string(), id, value, tags, first))
}

/// `why` run `id` was not stored, and the file it is kept in instead (or why it could not be).
pub(super) fn kept_instead(
    why: &str,
    id: &str,
    value: &serde_json::Value,
    tags: &BTreeMap<String, String>,
    first: Option<std::path::PathBuf>,
) -> String {
    match latlab_core::store::rescue_value(id, value, tags, first) {
        Ok(p) => {
            let p = latlab_core::output::shell_quote(&p.display().to_string());
            format!("{why}; the run is kept in {p} (`latlab runs import {p}` stores it)")
        }
        Err(e) => format!("{why}; the run could not be kept in a file either ({e})"),
    }
}

impl ctx::Keep for Keeper {
    fn keep(&mut self, run: &Run) -> Result<()> {
        Keeper::keep(self, run)
    }

    fn keep_tagged(&mut self, run: &Run, extra: &[(&str, &str)]) -> Result<()> {
        Keeper::keep_tagged(self, run, extra)
    }

    fn tag_result(&mut self, key: &str, value: &str) {
        self.result_tags.push((key.to_string(), value.to_string()));
    }

    fn background(&mut self, report: background::Report) -> Option<background::Background> {
        // Only beside a store the driver opened itself (so it knows how to open another).
        let spec = self.spec.clone().filter(|_| self.store.is_some())?;
        background::Background::start(spec, self.tags.clone(), report).ok()
    }
}

/// How long a store may take to open before latlab says it is waiting.
const STORE_PATIENCE: Duration = Duration::from_secs(2);

/// The run being stored, made JSON (run id, the run, its tags, the store's rescue directory),
/// for a second Ctrl-C during the store's wait.
type Pending = (
    String,
    std::sync::Arc<serde_json::Value>,
    BTreeMap<String, String>,
    Option<std::path::PathBuf>,
);
static PENDING: std::sync::Mutex<Vec<Pending>> = std::sync::Mutex::new(Vec::new());

/// Notes a run handed to a store and not kept yet (a second Ctrl-C then keeps it in a file).
pub(super) fn pend(p: Pending) {
    if let Ok(mut v) = PENDING.lock() {
        v.push(p);
    }
    latlab_core::rt::at_exit(keep_pending_on_exit);
}

/// The run `id` is kept (in the store or a file): a second Ctrl-C leaves it alone.
pub(super) fn unpend(id: &str) {
    if let Ok(mut v) = PENDING.lock() {
        v.retain(|p| p.0 != id);
    }
}

/// Whether a finished run waits for the store (a second Ctrl-C then keeps it in a file).
pub(super) fn run_pending() -> bool {
    PENDING.lock().is_ok_and(|p| !p.is_empty())
}

/// The exit hook of a second Ctrl-C: every run not stored yet (the final result, a monitor's
/// snapshots queued for its keeping thread) goes to a file.
fn keep_pending_on_exit() {
    let taken = PENDING
        .lock()
        .map(|mut p| std::mem::take(&mut *p))
        .unwrap_or_default();
    for (id, run, tags, first) in taken {
        match latlab_core::store::rescue_value(&id, &run, &tags, first) {
            Ok(p) => latlab_core::note!(
                "latlab: run {id} was not stored yet: it is kept in {} (`latlab runs import` stores it)",
                p.display()
            ),
            Err(why) => latlab_core::note!(
                "latlab: run {id} was not stored yet, and could not be kept in a file ({why})"
            ),
        }
    }
}

/// Opens the store on a helper thread, waiting for it only while no signal has come: a
/// server that does not answer (PostgreSQL's connect waits up to 5 s) or a SQLite file
/// another process holds locked cannot keep a Ctrl-C waiting. Interrupted, the run goes on
/// without a store (it then ends at once; its JSON is still written) and says so.
fn open_unless_interrupted(
    spec: Option<String>,
    control: &latlab_core::rt::Control,
) -> Result<Option<Box<dyn latlab_core::store::Store>>> {
    // This run's waits for the store are said here and when it is saved, in its own words.
    latlab_core::store::busy::say_waits_elsewhere();
    let (tx, rx) = std::sync::mpsc::channel();
    // A helper's stack, not std's 2 MiB: glibc keeps an ended thread's stack for the next
    // thread, so it is still mapped when mlockall makes every page of it present.
    std::thread::Builder::new()
        .name("latlab-store".into())
        .stack_size(latlab_core::sys::mem::HELPER_STACK)
        .spawn(move || {
            let _ = tx.send(latlab_core::store::open_send(spec.as_deref()));
        })
        .map_err(|e| latlab_core::rt::start_error("cannot start a thread to open the store", e))?;
    let (t0, mut said) = (std::time::Instant::now(), false);
    loop {
        if !said && t0.elapsed() > STORE_PATIENCE {
            said = true;
            latlab_core::note!(
                "latlab: waiting for the store to open (another process holds it locked, or \
                 its server is slow to answer); Ctrl-C gives up on storing this run"
            );
        }
        match rx.recv_timeout(Duration::from_millis(20)) {
            Ok(r) => return r.map(|s| Some(s as Box<dyn latlab_core::store::Store>)),
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                return Err(Error::Env("the store could not be opened".into()))
            }
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) if control.was_interrupted() => {
                latlab_core::note!(
                    "latlab: interrupted while opening the store: this run is not stored"
                );
                return Ok(None);
            }
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
        }
    }
}
