//! `--trace` in a long-running measurement (a monitor, a qualification): the spikes the
//! measuring threads hand over through their rings go to the tracer, which attributes them
//! as the run goes; the settled ones are folded into the cause totals and the open interval,
//! and the rest when the trace ends.

use super::causes::Causes;
use super::snapshot::{Interval, TraceNow};
use latlab_trace::session::{RawSpike, Tracer};
use std::sync::Arc;

/// How long after a spike ends its groups are named (the reader has then read every fork and
/// exec before it, whichever CPU recorded them).
const SETTLE_NS: u64 = 500_000_000;

/// The spike rings of `n` measuring threads, of `capacity` spikes each: the threads' ends
/// and the control thread's. None without a trace.
pub(crate) fn spike_rings(
    traced: bool,
    n: usize,
    capacity: usize,
) -> (
    Vec<Option<rtrb::Producer<RawSpike>>>,
    Vec<rtrb::Consumer<RawSpike>>,
) {
    if !traced {
        return (Vec::new(), Vec::new());
    }
    (0..n)
        .map(|_| rtrb::RingBuffer::new(capacity))
        .map(|(p, c)| (Some(p), c))
        .unzip()
}

/// Hands the spikes the measuring threads reported to the tracer.
fn offer_all(t: &mut Tracer, rings: &mut [rtrb::Consumer<RawSpike>]) {
    for r in rings.iter_mut() {
        while let Ok(s) = r.pop() {
            t.offer(s);
        }
    }
}

/// Hands the spikes the measuring threads reported to the tracer, attributes those it can, and
/// folds the settled ones into the totals and the interval.
pub(crate) fn trace_step(
    t: &mut Tracer,
    rings: &mut [rtrb::Consumer<RawSpike>],
    causes: &Causes,
    interval: &mut Interval,
) {
    offer_all(t, rings);
    t.poll();
    let now = latlab_core::sys::clock::now_ns(libc::CLOCK_MONOTONIC);
    let settled = t.take_settled(now.saturating_sub(SETTLE_NS));
    causes.add(&settled);
    causes.set_counts(&t.counts());
    interval.keep(settled, t.take_actions());
}

/// Trace events read and lost so far, all CPUs.
fn event_counts(t: &Tracer) -> (u64, u64) {
    t.counts()
        .iter()
        .fold((0, 0), |(r, l), c| (r + c.1, l + c.2))
}

/// The trace so far, for an interval's snapshot (None without `--trace`).
pub(crate) fn now<'c>(tracer: Option<&Tracer>, causes: Option<&'c Causes>) -> Option<TraceNow<'c>> {
    let (t, c) = tracer.zip(causes)?;
    Some(TraceNow {
        causes: c,
        header: t.header(),
        events: event_counts(t),
    })
}

/// Ends the trace: the spikes left are attributed and named, counted into the cause totals
/// and kept for the last snapshot, whose trace is the finished report.
pub(crate) fn finish_trace<'c>(
    mut t: Tracer,
    spike_cons: &mut [rtrb::Consumer<RawSpike>],
    spikes_lost: u64,
    c: &'c Arc<Causes>,
    interval: &mut Interval,
    warnings: &mut Vec<String>,
) -> TraceNow<'c> {
    offer_all(&mut t, spike_cons);
    t.dropped(spikes_lost);
    let mut header = t.finish();
    let rest = std::mem::take(&mut header.spikes);
    c.add(&rest);
    interval.keep(rest, std::mem::take(&mut header.actions));
    warnings.extend(header.warnings.iter().cloned());
    let events = (header.events, header.lost_events);
    header.per_cpu.clear();
    TraceNow {
        causes: c,
        header,
        events,
    }
}
