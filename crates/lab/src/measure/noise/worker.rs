//! The spin loop of one `noise` thread: read a cheap timestamp back to back and account every
//! gap. Small gaps go to a preallocated counter array (one increment); only gaps of 1024 ticks
//! or more take the cold path (histogram, interruption statistics, event log). No allocation,
//! lock, system call or I/O inside the loop.

use latlab_core::result::{Timeline, TimelineRecorder};
use latlab_core::rt::Live;
use latlab_core::stats::{LatHistogram, Recorder};
use latlab_core::sys::clock;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// When the disturbing command of `--disturb` ran (CLOCK_MONOTONIC ns; 0 = not yet), published
/// by the control thread and read by the spinners at each interruption, so every interruption
/// is told during or outside it however many there are.
#[derive(Debug, Default)]
pub(crate) struct Window {
    /// When the command was started (0 until then).
    pub(crate) start_ns: AtomicU64,
    /// When it ended (0 while it runs).
    pub(crate) end_ns: AtomicU64,
}

impl Window {
    /// Whether an interruption from `start` to `end` (ns) overlapped the command, as far as
    /// the spinner can know now (a command still running has not ended).
    #[inline]
    fn holds(&self, start: u64, end: u64) -> bool {
        let from = self.start_ns.load(Ordering::Acquire);
        if from == 0 || end < from {
            return false;
        }
        let to = self.end_ns.load(Ordering::Acquire);
        to == 0 || start <= to
    }
}

/// Interruptions during the disturbing command and outside it: (count, largest ns) each.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Split {
    /// During the command.
    pub(crate) during: (u64, u64),
    /// Outside it (all of them when there was none).
    pub(crate) outside: (u64, u64),
}

impl Split {
    #[inline]
    fn add(&mut self, inside: bool, dur: u64) {
        let s = if inside {
            &mut self.during
        } else {
            &mut self.outside
        };
        s.0 += 1;
        s.1 = s.1.max(dur);
    }
}

/// Gaps below this many ticks are counted exactly in an array.
pub(crate) const SMALL: usize = 1024;
/// Interruptions kept with their time stamps (the largest ones, for the tracer and the
/// RT-throttling check).
pub(crate) const EVENTS: usize = 1 << 16;

/// What the loop reads.
pub use latlab_core::sys::tsc::Ticks as Source;

/// One spinner, set up before the start barrier.
pub(crate) struct Spinner {
    /// Timestamp source.
    pub(crate) source: Source,
    /// Ticks per ns (TSC frequency in GHz; 1.0 for the clock).
    pub(crate) ticks_per_ns: f64,
    /// Interruption threshold in ticks.
    pub(crate) threshold_ticks: u64,
    /// Run-wide stop flag.
    pub(crate) stop: Arc<AtomicBool>,
    /// The process's stop flag (set by SIGINT/SIGTERM in whichever thread takes the signal),
    /// so the spinner ends even when the control thread cannot run on its CPU.
    pub(crate) interrupt: Arc<AtomicBool>,
    /// How long to spin, in ticks: the spinner ends by itself then, whatever its priority
    /// does to the control thread.
    pub(crate) spin_ticks: u64,
    /// Live figures for the display.
    pub(crate) live: Arc<Live>,
    /// When the disturbing command ran.
    pub(crate) window: Arc<Window>,
}

/// An interruption: when it started (CLOCK_MONOTONIC ns) and how long it was (ns).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Event {
    /// Start, CLOCK_MONOTONIC ns.
    pub(crate) start_ns: u64,
    /// Duration, ns.
    pub(crate) dur_ns: u64,
}

/// What one spinner measured.
#[derive(Debug, Clone)]
pub(crate) struct SpinOut {
    /// Loop iterations (= gaps).
    pub(crate) iterations: u64,
    /// The CPU the spinner ran on, read back when it was placed (set by the control thread).
    pub(crate) ran_on: Option<usize>,
    /// Time spun, ns.
    pub(crate) runtime_ns: u64,
    /// Every gap, ns (HDR).
    pub(crate) gaps: LatHistogram,
    /// Largest gap, ns (exact).
    pub(crate) max_gap_ns: u64,
    /// Gaps at or above the threshold.
    pub(crate) interruptions: Recorder,
    /// The largest EVENTS interruptions with their time stamps, in time order.
    pub(crate) events: Vec<Event>,
    /// Interruptions not kept in `events` (smaller than every one kept).
    pub(crate) events_dropped: u64,
    /// Every interruption, during the disturbing command or outside it.
    pub(crate) split: Split,
    /// Interruptions per interval (count, max, p99), from the spinner's start.
    pub(crate) timeline: Option<Timeline>,
    /// Checks (one per 256 spins) made on another CPU than the one it was pinned to.
    pub stray: latlab_core::rt::Stray,
}

#[inline(always)]
fn read(source: Source) -> u64 {
    source.read()
}

impl Spinner {
    /// Spins until the stop flag is set; `stray` counts, every 256 spins, whether the thread
    /// is on another CPU than the one it was pinned to.
    pub fn run(self, mut stray: latlab_core::rt::Stray) -> SpinOut {
        let mut small = vec![0u64; SMALL];
        let mut big = Recorder::new(); // gaps ≥ SMALL ticks, in ns
        let mut intr = Recorder::new();
        // The largest interruptions, smallest on top: a bigger one replaces it (no allocation:
        // the heap never grows past its capacity).
        let mut events: BinaryHeap<Reverse<(u64, u64)>> = BinaryHeap::with_capacity(EVENTS);
        let mut dropped = 0u64;
        let mut split = Split::default();
        let mut timeline = TimelineRecorder::new(latlab_core::result::timeline::DEFAULT_WIDTH_NS);
        let tpn = self.ticks_per_ns;
        let to_ns = |t: u64| (t as f64 / tpn) as u64;
        let thr = self.threshold_ticks;
        let cold_from = thr.min(SMALL as u64);
        let (mono0, tick0) = (clock::now_ns(libc::CLOCK_MONOTONIC), read(self.source));
        let mut prev = tick0;
        let mut n = 0u64;
        let mut max_ticks = 0u64;
        let spin_ticks = self.spin_ticks;
        let mut ending = false;
        while !ending && !self.stop.load(Ordering::Relaxed) {
            let now = read(self.source);
            let d = now.wrapping_sub(prev);
            prev = now;
            n += 1;
            // Every 256 loops: the spinner's own deadline and the process's stop flag. The
            // gap just read is still accounted below; the loop ends after it.
            if n & 255 == 0 {
                ending =
                    now.wrapping_sub(tick0) >= spin_ticks || self.interrupt.load(Ordering::Relaxed);
                stray.check();
            }
            if d < cold_from {
                small[d as usize] += 1;
                continue;
            }
            // Cold path: a long gap.
            if d > max_ticks {
                max_ticks = d;
            }
            if (d as usize) < SMALL {
                small[d as usize] += 1;
            } else {
                big.record(to_ns(d));
            }
            if d >= thr {
                let dur = to_ns(d);
                intr.record(dur);
                timeline.record(to_ns(now.wrapping_sub(tick0)), dur);
                let start_ns = mono0 + to_ns(now.wrapping_sub(d).wrapping_sub(tick0));
                split.add(self.window.holds(start_ns, start_ns + dur), dur);
                if events.len() < EVENTS {
                    events.push(Reverse((dur, start_ns)));
                } else {
                    dropped += 1;
                    if let Some(mut least) = events.peek_mut() {
                        if least.0 .0 < dur {
                            *least = Reverse((dur, start_ns));
                        }
                    }
                }
                self.live.publish(n, dur, 0, to_ns(max_ticks), intr.count);
            }
        }
        let end_ticks = prev;
        if let Some(t) = small.iter().rposition(|&c| c > 0) {
            max_ticks = max_ticks.max(t as u64);
        }
        let mut gaps = big.hist.clone();
        for (t, &c) in small.iter().enumerate() {
            if c > 0 {
                gaps.record_n(to_ns(t as u64), c);
            }
        }
        let mut events: Vec<Event> = events
            .into_vec()
            .into_iter()
            .map(|Reverse((dur_ns, start_ns))| Event { start_ns, dur_ns })
            .collect();
        events.sort_unstable_by_key(|e| (e.start_ns, e.dur_ns));
        SpinOut {
            ran_on: None,
            iterations: n,
            runtime_ns: to_ns(end_ticks.wrapping_sub(tick0)),
            gaps,
            max_gap_ns: to_ns(max_ticks),
            interruptions: intr,
            events,
            events_dropped: dropped,
            split,
            timeline: Some(timeline.finish(to_ns(end_ticks.wrapping_sub(tick0)))),
            stray,
        }
    }
}
