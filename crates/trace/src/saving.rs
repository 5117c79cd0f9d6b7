//! What a tracing session writes to disk — the windows of `trace` actions (and `-b`), the
//! `--trace-save` timeline or trace.dat — within bounds: one disk budget per run
//! (`--trace-budget`, 64 MiB by default; windows beyond it are not written but counted, a
//! trace.dat beyond it keeps its newest pages), never past the run's end (a window due after a
//! signal or the `-D` deadline is not written, one being written then is cut and says so), and
//! every failure recorded as a warning of the run rather than only printed.

use super::dat::Meta;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// Where a session's trace files go and what they may cost.
pub(crate) struct Saver {
    /// The tracefs root, the events traced and the page size (for trace.dat files).
    root: PathBuf,
    events: Vec<String>,
    page_size: usize,
    /// The formats and symbols every trace.dat repeats, read once.
    meta: Option<Meta>,
    /// The size of a trace.dat without pages.
    meta_len: Option<u64>,
    /// `--trace-budget` and what was written so far (bytes).
    budget: u64,
    spent: u64,
    /// Windows written so far (their numbers).
    windows: usize,
    /// The run ended by a signal once this is set.
    interrupted: Option<Arc<AtomicBool>>,
    /// The run's planned end (`-D`).
    deadline: Option<Instant>,
    /// Windows not written because the budget would have been passed.
    pub(crate) over_budget: u64,
    /// Windows not written (or cut) because the run had ended.
    pub(crate) after_end: u64,
    /// What went wrong, for the run's warnings.
    pub(crate) warnings: Vec<String>,
}

impl Saver {
    /// A saver for traces of `events` read from tracefs `root`.
    pub(crate) fn new(root: PathBuf, events: Vec<String>, page_size: usize) -> Saver {
        Saver {
            root,
            events,
            page_size,
            meta: None,
            meta_len: None,
            budget: super::actions::DEFAULT_BUDGET,
            spent: 0,
            windows: 0,
            interrupted: None,
            deadline: None,
            over_budget: 0,
            after_end: 0,
            warnings: Vec::new(),
        }
    }

    /// Sets the budget (bytes).
    pub(crate) fn budget(&mut self, bytes: u64) {
        self.budget = bytes;
    }

    /// Bytes written so far.
    pub(crate) fn spent(&self) -> u64 {
        self.spent
    }

    /// Tells the saver when the run ends: a signal (`interrupted`) or the planned end.
    pub(crate) fn ends(&mut self, interrupted: Arc<AtomicBool>, deadline: Option<Instant>) {
        self.interrupted = Some(interrupted);
        self.deadline = deadline;
    }

    /// True once the run has ended by a signal or its deadline (a run that a `stop` action,
    /// `-b` or its loop count ended may still save the window that ended it).
    pub(crate) fn past_end(&self) -> bool {
        self.interrupted
            .as_ref()
            .is_some_and(|i| i.load(Ordering::Relaxed))
            || self.deadline.is_some_and(|d| Instant::now() >= d)
    }

    /// The size of a trace.dat without pages (its formats and symbols), 0 while unknown.
    fn meta_len(&mut self) -> u64 {
        if self.meta_len.is_none() {
            let len = self
                .meta()
                .and_then(|m| super::dat::encode(m, &[]))
                .map_or(0, |b| b.len() as u64);
            self.meta_len = Some(len);
        }
        self.meta_len.unwrap_or(0)
    }

    fn meta(&mut self) -> std::io::Result<&Meta> {
        match &mut self.meta {
            Some(m) => {
                // Task names change; formats and symbols do not.
                m.cmdlines = super::tracefs::read(&self.root.join("saved_cmdlines"))
                    .map(String::into_bytes)
                    .unwrap_or_default();
            }
            None => self.meta = Some(super::dat::meta(&self.root, &self.events, self.page_size)?),
        }
        Ok(self.meta.as_ref().expect("just set"))
    }

    /// Counts a window the budget held back, and says so the first time, as it happens (the
    /// run's warning counts them all at the end).
    fn reached(&mut self) {
        self.over_budget += 1;
        if self.over_budget == 1 {
            latlab_core::note!(
                "latlab: --trace-budget reached ({} MiB written of {} MiB): further trace windows \
                 are not saved (a larger --trace-budget keeps more)",
                self.spent >> 20,
                self.budget >> 20
            );
        }
    }

    /// Writes one spike's window (`pages` per CPU) as `<base>-spike-<n>.dat`; the outcome to
    /// record (`saved FILE`, or why not).
    pub(crate) fn window(&mut self, base: &Path, pages: Vec<(usize, Vec<Vec<u8>>)>) -> String {
        if self.past_end() {
            self.after_end += 1;
            return "not saved: the run had ended".into();
        }
        // Refused before anything is copied when even its pages would pass the budget.
        let page_bytes: u64 = pages
            .iter()
            .map(|(_, ps)| (ps.len() * self.page_size.max(1)) as u64)
            .sum();
        let head = self.meta_len();
        if self.spent.saturating_add(head + page_bytes) > self.budget {
            self.reached();
            return format!(
                "not saved: it would pass --trace-budget ({} bytes, {} written)",
                self.budget, self.spent
            );
        }
        let n = pages.iter().map(|p| p.0 + 1).max().unwrap_or(0);
        let mut cpus: Vec<Vec<Vec<u8>>> = vec![Vec::new(); n];
        for (c, ps) in pages {
            cpus[c] = ps;
        }
        let bytes = match self.meta().and_then(|m| super::dat::encode(m, &cpus)) {
            Ok(b) => b,
            Err(e) => return format!("could not save the window: {e}"),
        };
        if self.spent.saturating_add(bytes.len() as u64) > self.budget {
            self.reached();
            return format!(
                "not saved: it would pass --trace-budget ({} bytes, {} written)",
                self.budget, self.spent
            );
        }
        self.windows += 1;
        let path = PathBuf::from(format!("{}-spike-{}.dat", base.display(), self.windows));
        let past = || self.past_end();
        match latlab_core::output::write_atomic_until(&path, &bytes, &past) {
            Ok(w) if w == bytes.len() => {
                self.spent += w as u64;
                format!("saved {}", path.display())
            }
            Ok(w) => {
                self.spent += w as u64;
                self.after_end += 1;
                format!(
                    "cut at the end of the run: {} holds {w} of {} bytes",
                    path.display(),
                    bytes.len()
                )
            }
            Err(e) => {
                let why = format!("could not save {}: {e}", path.display());
                self.warnings.push(format!("--on-threshold trace: {why}"));
                why
            }
        }
    }

    /// Writes the run's kept raw pages as the `--trace-save` trace.dat, keeping only the
    /// newest pages of each CPU when the whole would pass the budget.
    pub(crate) fn dat(&mut self, path: &Path, pages: Vec<(usize, Vec<Box<[u8]>>)>) {
        let n = pages.iter().map(|p| p.0 + 1).max().unwrap_or(0);
        let mut cpus: Vec<Vec<Vec<u8>>> = vec![Vec::new(); n];
        for (c, ps) in pages {
            cpus[c] = ps.into_iter().map(Vec::from).collect();
        }
        let ps = self.page_size.max(1) as u64;
        let head = match self.meta().and_then(|m| super::dat::encode(m, &[])) {
            Ok(h) => h.len() as u64 + 16 * n as u64 + ps,
            Err(e) => {
                self.warnings
                    .push(format!("--trace-save {}: {e}", path.display()));
                return;
            }
        };
        let total: u64 = cpus.iter().map(|c| c.len() as u64).sum();
        let room = self.budget.saturating_sub(self.spent).saturating_sub(head) / ps;
        if total > room {
            // The newest pages of every CPU, as many as the budget holds.
            let busy = cpus.iter().filter(|c| !c.is_empty()).count().max(1) as u64;
            let each = (room / busy) as usize;
            for c in &mut cpus {
                let drop = c.len().saturating_sub(each);
                c.drain(..drop);
            }
            let kept: u64 = cpus.iter().map(|c| c.len() as u64).sum();
            self.warnings.push(format!(
                "--trace-save {}: cut to --trace-budget ({} bytes): the newest {kept} of {total} pages kept",
                path.display(),
                self.budget
            ));
        }
        let bytes = match self.meta().and_then(|m| super::dat::encode(m, &cpus)) {
            Ok(b) => b,
            Err(e) => {
                self.warnings
                    .push(format!("--trace-save {}: {e}", path.display()));
                return;
            }
        };
        self.write_whole(path, &bytes);
    }

    /// Writes the `--trace-save` timeline, cut at a line to what the budget leaves.
    pub(crate) fn timeline(&mut self, path: &Path, text: &str) {
        let room = self.budget.saturating_sub(self.spent) as usize;
        let text = if text.len() > room {
            let cut = text[..room].rfind('\n').map_or(0, |i| i + 1);
            self.warnings.push(format!(
                "--trace-save {}: cut to --trace-budget ({} bytes): {cut} of {} bytes written",
                path.display(),
                self.budget,
                text.len()
            ));
            &text[..cut]
        } else {
            text
        };
        self.write_whole(path, text.as_bytes());
    }

    fn write_whole(&mut self, path: &Path, bytes: &[u8]) {
        match latlab_core::output::write_atomic(path, bytes) {
            Ok(()) => self.spent += bytes.len() as u64,
            Err(e) => self
                .warnings
                .push(format!("--trace-save {}: not written: {e}", path.display())),
        }
    }
}
