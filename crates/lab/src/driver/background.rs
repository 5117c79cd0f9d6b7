//! Keeping a long measurement's periodic results (a monitor's snapshots) from a thread with a
//! store connection of its own: a store that stalls (a lock, a server that stopped answering
//! for up to its time limit) must not stall the loop that closes the endpoint's windows,
//! drains the sample rings and ends the run on time.

use std::collections::BTreeMap;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::sync::Arc;

/// What became of each result handed over: `Ok` stored, `Err` why not (and where it was kept).
pub(crate) type Report = Box<dyn Fn(std::result::Result<(), String>) + Send + Sync>;

/// Results waiting for the keeping thread before the next is kept in a file at once instead
/// (a store behind by this many intervals is not going to catch up soon).
const QUEUE: usize = 4;

/// A result handed over: its id and its JSON.
type Job = (String, Arc<serde_json::Value>);

/// The keeping thread (see the module doc).
pub(crate) struct Background {
    tx: Option<SyncSender<Job>>,
    handle: Option<std::thread::JoinHandle<()>>,
    tags: BTreeMap<String, String>,
    report: Arc<Report>,
}

impl Background {
    /// Starts the thread, which opens the store named by `spec` (as the driver did) for itself.
    pub(super) fn start(
        spec: Option<String>,
        tags: BTreeMap<String, String>,
        report: Report,
    ) -> std::io::Result<Background> {
        let (tx, rx) = sync_channel::<Job>(QUEUE);
        let report = Arc::new(report);
        let (r, t) = (report.clone(), tags.clone());
        let handle = std::thread::Builder::new()
            .name("latlab-keeping".into())
            .stack_size(latlab_core::sys::mem::HELPER_STACK)
            .spawn(move || {
                // Only sleeps and waits on the store: never above the measuring threads.
                let _ = latlab_core::sys::sched::set_policy(latlab_core::config::Policy::Other, 0);
                keep_all(spec, &t, &rx, &r)
            })?;
        Ok(Background {
            tx: Some(tx),
            handle: Some(handle),
            tags,
            report,
        })
    }

    /// Hands `run` over without waiting; when the thread is too far behind, it is kept in a
    /// file at once instead (and reported so).
    pub(crate) fn keep(&self, run: &latlab_core::result::Run) {
        let value = match serde_json::to_value(run) {
            Ok(v) => Arc::new(v),
            Err(e) => return (self.report)(Err(format!("run {}: {e}", run.id))),
        };
        let Some(tx) = &self.tx else { return };
        // Noted before it is queued (the thread may keep it at once): a second Ctrl-C, which
        // ends latlab without waiting for this thread, keeps what is still queued in files.
        super::pend((run.id.clone(), value.clone(), self.tags.clone(), None));
        match tx.try_send((run.id.clone(), value)) {
            Ok(()) => {}
            Err(TrySendError::Full((id, v)) | TrySendError::Disconnected((id, v))) => {
                super::unpend(&id);
                let why = format!("the store is {QUEUE} results behind");
                (self.report)(Err(format!(
                    "run {id}: {}",
                    super::kept_instead(&why, &id, &v, &self.tags, None)
                )))
            }
        }
    }

    /// [`Background::finish`] while `last` (the result the measurement is about to return,
    /// kept by the driver after this) is noted as not kept yet: a second Ctrl-C during the
    /// wait keeps it in a file with the snapshots still queued, instead of losing it.
    pub(crate) fn finish_with(self, last: &latlab_core::result::Run) {
        let noted = serde_json::to_value(last).ok().map(|v| {
            super::pend((last.id.clone(), Arc::new(v), self.tags.clone(), None));
            last.id.clone()
        });
        self.finish();
        if let Some(id) = noted {
            super::unpend(&id);
        }
    }

    /// Waits for what was handed over to be kept (each wait bounded by the store's own limits).
    pub(crate) fn finish(mut self) {
        self.tx.take();
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        self.tx.take();
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

fn keep_all(
    spec: Option<String>,
    tags: &BTreeMap<String, String>,
    rx: &Receiver<Job>,
    report: &Report,
) {
    let mut store = latlab_core::store::open_send(spec.as_deref());
    for (id, value) in rx.iter() {
        let outcome = match &mut store {
            Ok(st) => st.save_json(&value, tags).map(|_| ()).map_err(|e| {
                super::kept_instead(&e.to_string(), &id, &value, tags, st.rescue_dir())
            }),
            Err(e) => Err(super::kept_instead(&e.to_string(), &id, &value, tags, None)),
        };
        super::unpend(&id);
        report(outcome.map_err(|e| format!("run {id}: {e}")));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    fn run() -> latlab_core::result::Run {
        latlab_core::result::Run::new(
            "monitor",
            std::time::SystemTime::now(),
            vec!["latlab monitor".into()],
            serde_json::json!({}),
            latlab_core::result::Environment::capture(),
        )
    }

    #[test]
    fn results_handed_over_are_stored_in_order_and_reported() {
        let d = tempfile::tempdir().unwrap();
        let db = d.path().join("s.db");
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s = seen.clone();
        let bg = Background::start(
            Some(format!("sqlite:{}", db.display())),
            BTreeMap::from([("k".to_string(), "v".to_string())]),
            Box::new(move |r| s.lock().unwrap().push(r)),
        )
        .unwrap();
        let mut ids = Vec::new();
        for i in 0..3 {
            let mut r = run();
            r.id = format!("{}-{i}", r.id);
            ids.push(r.id.clone());
            bg.keep(&r);
        }
        bg.finish();
        assert_eq!(*seen.lock().unwrap(), vec![Ok(()); 3]);
        let st = latlab_core::store::open(Some(&db.display().to_string())).unwrap();
        let listed: Vec<String> = st
            .list(&latlab_core::store::Filter::default())
            .unwrap()
            .into_iter()
            .map(|r| r.id)
            .collect();
        for id in &ids {
            assert!(listed.contains(id), "{listed:?}");
        }
        assert_eq!(st.get(&ids[0]).unwrap().tags["k"], "v");
    }
}
