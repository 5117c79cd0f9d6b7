//! What the monitor's control thread carries from one visit to the next while the measuring
//! threads run: the open interval and its snapshots, the `--trace` side, and the news of
//! threads moved, said once at once and again in the next snapshot. `run` (in `mod.rs`)
//! decides when to visit, to snapshot and to stop; this says what each of those does.

use super::causes::Causes;
use super::metrics::Shared;
use super::snapshot::{self, Interval};
use super::tally::{self, Tally};
use super::{exemplar, probe, traced, window, MonitorConfig, MonitorOutcome};
use crate::driver::background::Background;
use crate::driver::Ctx;
use crate::measure::cyclic::worker::WorkerOut;
use latlab_core::config::Policy;
use latlab_core::rt;
use latlab_trace::session::{RawSpike, Tracer};
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

/// `--trace`'s side of a monitor: the tracer, the cause totals and the control thread's ends
/// of the spike rings (all None or empty without it).
pub(super) struct Trace {
    /// The tracer (taken at the end, to finish it).
    pub(super) tracer: Option<Tracer>,
    /// The session's late time by cause and culprit group.
    pub(super) causes: Option<Arc<Causes>>,
    /// One spike ring per measuring thread.
    pub(super) spikes: Vec<rtrb::Consumer<RawSpike>>,
}

/// The control thread's state between two visits.
pub(super) struct Session<'a> {
    cfg: &'a MonitorConfig,
    /// What the endpoint and the status read.
    pub(super) shared: Arc<Shared>,
    tallies: Vec<Arc<Tally>>,
    /// What every snapshot says of the measurement.
    snap: snapshot::Context<'a>,
    /// The interval open.
    interval: Interval,
    /// Snapshots taken.
    seq: u64,
    trace: Trace,
    /// Moves off its CPU already said, per thread.
    strayed: Vec<u64>,
    /// What moved the measuring threads since the last snapshot (said already, and said
    /// again in that snapshot).
    moved: Vec<String>,
    /// The start's warnings: every snapshot carries them.
    warnings: Vec<String>,
    /// The thread snapshots are kept from (None: `--no-store`, or kept in place).
    keeping: Option<Background>,
}

impl<'a> Session<'a> {
    /// The session of measuring threads running at `policy`, with its first interval open.
    pub(super) fn new(
        cfg: &'a MonitorConfig,
        (policy, prio): (Policy, i32),
        shared: Arc<Shared>,
        tallies: Vec<Arc<Tally>>,
        trace: Trace,
        warnings: Vec<String>,
    ) -> Session<'a> {
        let session = Session {
            cfg,
            shared,
            snap: snapshot::Context {
                cpus: &cfg.cpus,
                interval_ns: cfg.interval_ns,
                policy,
                prio,
                parameters: serde_json::to_value(cfg).unwrap_or(serde_json::Value::Null),
            },
            interval: Interval::new(&tallies),
            seq: 0,
            trace,
            strayed: vec![0u64; cfg.cpus.len()],
            moved: Vec::new(),
            warnings,
            keeping: None,
            tallies,
        };
        session.open_run();
        session
    }

    /// Exemplars name the snapshot that stores a spike: each interval's run id, chosen as it
    /// opens, with the wake-ups counted by then.
    fn open_run(&self) {
        if !self.cfg.no_store {
            let mut runs = self.shared.runs.lock().unwrap_or_else(|p| p.into_inner());
            runs.open(self.interval.id(), self.interval.opened_after());
        }
    }

    /// Tells the tracer when the run ends: on a signal, or at `deadline`.
    pub(super) fn trace_ends(&mut self, control: &rt::Control, deadline: Option<Instant>) {
        if let Some(t) = self.trace.tracer.as_mut() {
            t.ends(control.interrupted.clone(), deadline);
        }
    }

    /// Snapshots are kept from a thread of their own: a store that stalls must not stop the
    /// windows closing, the rings draining or the run ending on time.
    pub(super) fn keep_in_background(&mut self, driver: &mut Ctx<'_>) {
        if !self.cfg.no_store {
            let s = self.shared.clone();
            self.keeping = driver.keep_in_background(Box::new(move |r| counted(&s, r)));
        }
    }

    /// One visit: the windows due are closed, the rings drained into the interval, the
    /// spikes handed to the tracer, and what moved the threads is said.
    pub(super) fn visit(&mut self, rings: &mut [rtrb::Consumer<u64>]) {
        // First, so a window closes as soon after its boundary as the wait allows.
        self.shared
            .windows
            .tick(&self.tallies, window::unix_now_ns());
        self.interval.drain(rings);
        if let (Some(t), Some(c)) = (self.trace.tracer.as_mut(), &self.trace.causes) {
            traced::trace_step(t, &mut self.trace.spikes, c, &mut self.interval);
            exemplar::publish(&self.shared.explained, &self.interval, !self.cfg.no_store);
        }
        self.gather_news();
    }

    /// Says at once what moved the measuring threads, and keeps it for the next snapshot.
    fn gather_news(&mut self) {
        let untraced = self.trace.tracer.as_mut().and_then(|t| t.untraced_news());
        let strayed = tally::strayed_since(&self.tallies, &self.cfg.cpus, &mut self.strayed);
        // A measuring thread's policy another process changed (seen by the ground watch).
        let policies = rt::policy::news()
            .into_iter()
            .map(|(name, own, seen)| rt::Held::policy_news(&name, own, seen));
        for w in untraced.into_iter().chain(strayed).chain(policies) {
            latlab_core::note!("latlab monitor: warning: {w}");
            self.moved.push(w);
        }
    }

    /// Ends the open interval with a snapshot, opens the next and hands the snapshot to the
    /// store (`--no-store`: only the interval's ground ends).
    pub(super) fn snapshot(&mut self, driver: &mut Ctx<'_>) {
        self.seq += 1;
        let now = traced::now(self.trace.tracer.as_ref(), self.trace.causes.as_deref());
        let mut said = self.warnings.clone();
        said.append(&mut self.moved);
        let run = self
            .interval
            .take(&self.snap, driver, self.seq, &self.tallies, said, now);
        self.open_run();
        match &self.keeping {
            _ if self.cfg.no_store => driver.interval_ended(),
            Some(bg) => driver.hand_over(bg, &run),
            None => counted(
                &self.shared,
                driver.keep(&run).map_err(|e| format!("run {}: {e}", run.id)),
            ),
        }
    }

    /// The finished monitor, once the measuring threads stopped with `outs`: the last
    /// interval (what the rings and the trace still held) is its result, kept after the
    /// snapshots handed over.
    pub(super) fn finish(
        mut self,
        driver: &mut Ctx<'_>,
        rings: &mut [rtrb::Consumer<u64>],
        outs: Vec<(rt::Applied, WorkerOut)>,
        interrupted: bool,
        listen: SocketAddr,
    ) -> MonitorOutcome {
        self.interval.drain(rings);
        let mut warnings = std::mem::take(&mut self.warnings);
        // Placement failures reach the warnings through the run's placement log.
        let total_lost: u64 = outs.iter().map(|(_, o)| o.lost).sum();
        warnings.extend((total_lost > 0).then(|| {
            format!("the snapshot thread lost {total_lost} samples (it fell behind); the endpoint counted them")
        }));
        // --trace: what is left is attributed and named now; the finished report (hardware
        // counts, warnings) is the last snapshot's trace.
        let spikes_lost = outs.iter().map(|(_, o)| o.spikes_lost).sum();
        let now = match (self.trace.tracer.take(), &self.trace.causes) {
            (Some(t), Some(c)) => Some(traced::finish_trace(
                t,
                &mut self.trace.spikes,
                spikes_lost,
                c,
                &mut self.interval,
                &mut warnings,
            )),
            _ => None,
        };
        self.moved.extend(tally::strayed_since(
            &self.tallies,
            &self.cfg.cpus,
            &mut self.strayed,
        ));
        warnings.append(&mut self.moved);
        let mut run = self
            .interval
            .take(&self.snap, driver, self.seq + 1, &self.tallies, warnings, now);
        run.interrupted = interrupted;
        // The snapshots handed over are kept (or in files) before the last interval's result,
        // whose figures and duration end where the measuring did.
        if let Some(bg) = self.keeping.take() {
            // A second Ctrl-C while it waits for a stalled store keeps this last result too.
            bg.finish_with(&run);
        }
        MonitorOutcome {
            run,
            session: probe::per_cpu(outs, &self.cfg.cpus),
            snapshots: self.shared.snapshots.load(Ordering::Relaxed),
            listen,
            causes: self.trace.causes.map(|c| c.read()).unwrap_or_default(),
        }
    }
}

/// Counts what became of a snapshot; a failure is said, and the monitor goes on.
fn counted(shared: &Shared, outcome: std::result::Result<(), String>) {
    match outcome {
        Ok(()) => {
            shared.snapshots.fetch_add(1, Ordering::Relaxed);
        }
        Err(e) => {
            shared.snapshot_failures.fetch_add(1, Ordering::Relaxed);
            latlab_core::note!("latlab monitor: snapshot not stored: {e}");
        }
    }
}
