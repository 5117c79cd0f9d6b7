//! The measuring loop of one `cyclic` thread: sleep to the next period, read the clock, record
//! `now - expected`. Nothing here allocates, locks, formats or does I/O.

use crate::result::{Timeline, TimelineRecorder};
use crate::rt::Live;
use crate::stats::Recorder;
use crate::sys::clock;
use crate::trace::spikes::RawSpike;
use rtrb::Producer;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

/// Everything one worker needs, allocated before the start barrier.
pub struct Worker {
    /// Clock id slept on and read.
    pub clock: libc::clockid_t,
    /// Period (ns).
    pub interval_ns: u64,
    /// Relative sleeps.
    pub relative: bool,
    /// Wake-ups to do (u64::MAX: unbounded).
    pub loops: u64,
    /// Break threshold (u64::MAX: none).
    pub break_on_ns: u64,
    /// Exact stats and HDR histogram.
    pub rec: Recorder,
    /// Linear 1 µs histogram for `-h` (empty when not asked for).
    pub linear: Vec<u64>,
    /// Count, max and p99 per interval (preallocated).
    pub timeline: TimelineRecorder,
    /// Raw sample ring, when a sample log is written.
    pub ring: Option<Producer<u64>>,
    /// Live figures for the display.
    pub live: Arc<Live>,
    /// Run-wide stop flag.
    pub stop: Arc<AtomicBool>,
    /// Set by the first worker whose latency passes the break threshold.
    pub tripped: Arc<AtomicBool>,
    /// Incremented when this worker ends.
    pub done: Arc<AtomicUsize>,
    /// Rung when this worker ends.
    pub bell: Arc<crate::rt::Doorbell>,
    /// Buckets and counters for `latlab monitor`'s endpoint (None for `cyclic`).
    pub tally: Option<Arc<dyn crate::rt::Tap>>,
    /// `--trace`: wake-ups at or above the threshold go here (preallocated, lock-free).
    pub spikes: Option<SpikeOut>,
}

/// Where a traced worker reports its spikes.
pub struct SpikeOut {
    /// Latency threshold (ns).
    pub threshold_ns: u64,
    /// Index of this thread's series.
    pub series: u32,
    /// CPU it is pinned to (None: asked of the kernel at each spike).
    pub cpu: Option<u32>,
    /// The thread's id (set by the worker before its loop).
    pub tid: i32,
    /// The ring the control thread drains.
    pub ring: Producer<RawSpike>,
}

/// What a worker hands back when it ends.
#[derive(Debug)]
pub struct WorkerOut {
    /// Exact stats and histogram.
    pub rec: Recorder,
    /// Missed periods.
    pub overruns: u64,
    /// Samples the ring could not take.
    pub lost: u64,
    /// Linear histogram (`-h`).
    pub linear: Vec<u64>,
    /// Samples beyond the linear histogram.
    pub linear_overflow: u64,
    /// (latency ns, loop number from 1) if this worker tripped `--break-on`.
    pub tripped_at: Option<(u64, u64)>,
    /// CPU the thread ended on.
    pub cpu: Option<usize>,
    /// Count, max and p99 per interval.
    pub timeline: Timeline,
    /// Spikes the trace ring could not take.
    pub spikes_lost: u64,
}

impl Worker {
    /// Runs the measuring loop until `loops` wake-ups, the stop flag, or the break threshold.
    pub fn run(mut self) -> WorkerOut {
        let clk = self.clock;
        let interval = self.interval_ns;
        let (mut overruns, mut lost, mut overflow, mut spikes_lost) = (0u64, 0u64, 0u64, 0u64);
        let (mut n, mut min, mut max, mut sum) = (0u64, u64::MAX, 0u64, 0u64);
        let mut tripped_at = None;
        if let Some(s) = self.spikes.as_mut() {
            s.tid = crate::sys::sched::gettid();
        }
        let begin = clock::now_ns(clk);
        self.timeline.start_at(begin);
        let mut next = begin + interval;
        while n < self.loops && !self.stop.load(Ordering::Relaxed) {
            let expected = if self.relative {
                let before = clock::now_ns(clk);
                let mut r = clock::sleep_for_ns(clk, interval);
                // A relative sleep interrupted by a signal is not a wake-up: sleep the rest.
                while r == libc::EINTR && !self.stop.load(Ordering::Relaxed) {
                    let left = (before + interval).saturating_sub(clock::now_ns(clk));
                    r = clock::sleep_for_ns(clk, left.max(1));
                }
                before + interval
            } else {
                while clock::sleep_until_ns(clk, next) == libc::EINTR
                    && !self.stop.load(Ordering::Relaxed)
                {}
                next
            };
            let now = clock::now_ns(clk);
            if self.stop.load(Ordering::Relaxed) && now < expected {
                break; // woken early to stop: not a sample
            }
            let lat = now.saturating_sub(expected);
            n += 1;
            self.rec.record(lat);
            self.timeline.record(expected, lat);
            if let Some(ring) = self.ring.as_mut() {
                if ring.push(lat).is_err() {
                    lost += 1;
                    if let Some(t) = &self.tally {
                        t.set_lost(lost);
                    }
                }
            }
            if let Some(t) = &self.tally {
                t.observe(lat);
            }
            if !self.linear.is_empty() {
                let us = (lat / 1000) as usize;
                match self.linear.get_mut(us) {
                    Some(b) => *b += 1,
                    None => overflow += 1,
                }
            }
            if let Some(s) = self.spikes.as_mut() {
                if lat >= s.threshold_ns {
                    let cpu = s
                        .cpu
                        .or_else(|| crate::sys::sched::current_cpu().map(|c| c as u32))
                        .unwrap_or(u32::MAX);
                    let spike = RawSpike {
                        series: s.series,
                        cpu,
                        expected,
                        actual: now,
                        seq: n,
                        tid: s.tid,
                    };
                    if s.ring.push(spike).is_err() {
                        spikes_lost += 1;
                    }
                }
            }
            min = min.min(lat);
            max = max.max(lat);
            sum = sum.wrapping_add(lat);
            self.live.publish(n, lat, min, max, sum);
            if lat > self.break_on_ns
                && self
                    .tripped
                    .compare_exchange(false, true, Ordering::AcqRel, Ordering::Relaxed)
                    .is_ok()
            {
                tripped_at = Some((lat, n));
                self.stop.store(true, Ordering::Release);
                break;
            }
            if !self.relative {
                next += interval;
                if now >= next {
                    let missed = (now - next) / interval + 1;
                    overruns += missed;
                    next += missed * interval;
                    if let Some(t) = &self.tally {
                        t.set_overruns(overruns);
                    }
                }
            }
        }
        let timeline = self.timeline.finish(clock::now_ns(clk));
        self.done.fetch_add(1, Ordering::Release);
        self.bell.ring();
        WorkerOut {
            rec: self.rec,
            overruns,
            lost,
            linear: self.linear,
            linear_overflow: overflow,
            tripped_at,
            cpu: crate::sys::sched::current_cpu(),
            timeline,
            spikes_lost,
        }
    }
}
