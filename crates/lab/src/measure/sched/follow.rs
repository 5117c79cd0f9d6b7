//! Follows the trace as its reader reads it: every step replays the events read since the
//! last one into the tracker (`track`), in time order across CPUs with the kernel's losses
//! among them, and hands the delays over the threshold to the tracer for attribution; at
//! the end it waits (a little) for the reader to pass the run's end.

use super::target::Matcher;
use super::track::Tracker;
use crate::driver::Ctx;
use latlab_trace::session::{RawSpike, Tracer};
use std::time::{Duration, Instant};

/// How long the end waits for the reader to catch up.
const CATCH_UP: Duration = Duration::from_secs(2);

/// The tracker fed from the tracer, and how far it got.
pub(super) struct Follower {
    /// The `--trace` flight recorder, reading every CPU's `sched` events.
    pub(super) tracer: Tracer,
    /// The replay.
    pub(super) tracker: Tracker<Matcher>,
    /// The tracer's series of each task (by index in the tracker), added as delays come.
    names: Vec<u32>,
    /// Events are replayed up to here (trace clock, ns).
    done: u64,
}

impl Follower {
    /// Follows `tracer` into `tracker` from `start_ns` (trace clock).
    pub(super) fn new(tracer: Tracer, tracker: Tracker<Matcher>, start_ns: u64) -> Follower {
        Follower {
            tracer,
            tracker,
            names: Vec::new(),
            done: start_ns,
        }
    }

    /// Replays what the reader read since the last step and hands the delays over.
    pub(super) fn step(&mut self) {
        let wm = self.tracer.recorder().watermark();
        replay(&self.tracer, &mut self.tracker, self.done, wm);
        self.done = self.done.max(wm);
        self.offer();
        self.tracer.poll();
    }

    /// Replays the rest up to `end_ns`, once the reader passed it or [`CATCH_UP`] is over
    /// (then said), and ends the tracker.
    pub(super) fn finish(&mut self, ctx: &mut Ctx<'_>, end_ns: u64) {
        let t_catch = Instant::now();
        while self.tracer.recorder().watermark() < end_ns && t_catch.elapsed() < CATCH_UP {
            std::thread::sleep(Duration::from_millis(10));
        }
        let wm = self.tracer.recorder().watermark().min(end_ns);
        replay(&self.tracer, &mut self.tracker, self.done, wm);
        if wm < end_ns {
            ctx.warn(format!(
                "the trace reader did not catch up with the end of the run ({} ms of events not \
                 replayed)",
                (end_ns - wm) / 1_000_000
            ));
        }
        self.tracker.finish(wm.max(self.done));
        self.offer();
    }

    /// Hands the tracker's new delays to the tracer for attribution.
    fn offer(&mut self) {
        for d in std::mem::take(&mut self.tracker.delays) {
            while self.names.len() <= d.task {
                let i = self.names.len();
                self.names.push(self.tracer.add_series(format!("task-{i}")));
            }
            self.tracer.offer(RawSpike {
                series: self.names[d.task],
                cpu: d.cpu as u32,
                expected: d.from,
                actual: d.to,
                seq: d.seq,
                tid: self.tracker.tasks[d.task].tid,
            });
        }
    }
}

/// Replays every event read after `after` up to `upto`, in time order across CPUs, with the
/// places where the kernel lost events among them. The events are sorted by reference (time,
/// CPU, then the order read), not moved about.
fn replay(tracer: &Tracer, tracker: &mut Tracker<Matcher>, after: u64, upto: u64) {
    if upto <= after {
        return;
    }
    let rec = tracer.recorder();
    let mut events: Vec<latlab_trace::event::Event> = Vec::new();
    // (time, CPU, index in `events`; usize::MAX: a loss)
    let mut order: Vec<(u64, usize, usize)> = Vec::new();
    for &c in rec.cpus() {
        for e in rec.between(c, after, upto).unwrap_or_default() {
            order.push((e.ts, c, events.len()));
            events.push(e);
        }
    }
    for (c, l) in rec.losses() {
        for (ts, _) in l {
            if ts > after && ts <= upto {
                order.push((ts, c, usize::MAX));
            }
        }
    }
    order.sort_by_key(|x| (x.0, x.1));
    for &(ts, c, i) in &order {
        match events.get(i) {
            Some(e) => tracker.event(c, e),
            None => tracker.lost(ts),
        }
    }
}
