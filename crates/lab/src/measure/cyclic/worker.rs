//! The measuring loop of one `cyclic` thread: sleep to the next period, read the clock, record
//! `now - expected`. Nothing here allocates, locks, formats or does I/O.

use latlab_core::result::{Timeline, TimelineRecorder};
use latlab_core::rt::Live;
use latlab_core::stats::Recorder;
use latlab_core::sys::clock;
use latlab_core::sys::deadline as dl;
use latlab_trace::session::RawSpike;
use rtrb::Producer;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

/// Everything one worker needs, allocated before the start barrier.
pub(crate) struct Worker {
    /// Clock id slept on and read.
    pub(crate) clock: libc::clockid_t,
    /// Period (ns).
    pub(crate) interval_ns: u64,
    /// Relative sleeps.
    pub(crate) relative: bool,
    /// Wake-ups to do (u64::MAX: unbounded).
    pub(crate) loops: u64,
    /// Break threshold (u64::MAX: none).
    pub(crate) break_on_ns: u64,
    /// Exact stats and HDR histogram.
    pub(crate) rec: Recorder,
    /// Linear 1 µs histogram for `-h` (empty when not asked for).
    pub(crate) linear: Vec<u64>,
    /// Count, max and p99 per interval (preallocated).
    pub(crate) timeline: TimelineRecorder,
    /// Raw sample ring, when a sample log is written.
    pub(crate) ring: Option<Producer<u64>>,
    /// Live figures for the display.
    pub(crate) live: Arc<Live>,
    /// Run-wide stop flag.
    pub(crate) stop: Arc<AtomicBool>,
    /// Set by the first worker whose latency passes the break threshold.
    pub(crate) tripped: Arc<AtomicBool>,
    /// Incremented when this worker ends.
    pub(crate) done: Arc<AtomicUsize>,
    /// Rung when this worker ends.
    pub bell: Arc<latlab_core::rt::Doorbell>,
    /// Buckets and counters for `latlab monitor`'s endpoint (None for `cyclic`).
    pub tally: Option<Arc<dyn latlab_core::rt::Tap>>,
    /// `--trace`: wake-ups at or above the threshold go here (preallocated, lock-free).
    pub(crate) spikes: Option<SpikeOut>,
    /// The thread's name and the run's placement log: a placement that moved while the loop
    /// ran (see [`latlab_core::rt::Held`]) is recorded there.
    pub held: Option<(String, latlab_core::rt::PlacementLog)>,
}

/// Where a traced worker reports its spikes.
pub(crate) struct SpikeOut {
    /// Latency threshold (ns).
    pub(crate) threshold_ns: u64,
    /// Index of this thread's series.
    pub(crate) series: u32,
    /// CPU it is pinned to (None: asked of the kernel at each spike).
    pub(crate) cpu: Option<u32>,
    /// The thread's id (set by the worker before its loop).
    pub(crate) tid: i32,
    /// The ring the control thread drains.
    pub(crate) ring: Producer<RawSpike>,
}

impl SpikeOut {
    /// The spike of the wake-up `expected` .. `now`, loop `n`.
    #[inline(always)]
    fn spike(&self, expected: u64, now: u64, n: u64) -> RawSpike {
        let cpu = self
            .cpu
            .or_else(|| latlab_core::sys::sched::current_cpu().map(|c| c as u32))
            .unwrap_or(u32::MAX);
        RawSpike {
            series: self.series,
            cpu,
            expected,
            actual: now,
            seq: n,
            tid: self.tid,
        }
    }
}

/// What a worker hands back when it ends.
#[derive(Debug)]
pub(crate) struct WorkerOut {
    /// Exact stats and histogram.
    pub(crate) rec: Recorder,
    /// Missed periods.
    pub(crate) overruns: u64,
    /// Samples the ring could not take.
    pub(crate) lost: u64,
    /// Linear histogram (`-h`).
    pub(crate) linear: Vec<u64>,
    /// Samples beyond the linear histogram.
    pub(crate) linear_overflow: u64,
    /// (latency ns, loop number from 1) if this worker tripped `--break-on`.
    pub(crate) tripped_at: Option<(u64, u64)>,
    /// `--trace`: the spike that tripped `--break-on`.
    pub(crate) tripped_spike: Option<RawSpike>,
    /// CPU the thread ended on.
    pub(crate) cpu: Option<usize>,
    /// Count, max and p99 per interval.
    pub(crate) timeline: Timeline,
    /// Spikes the trace ring could not take.
    pub(crate) spikes_lost: u64,
    /// A deadline thread's per-job counts (None for the other policies).
    pub(crate) deadline: Option<DeadlineOut>,
}

/// What a SCHED_DEADLINE thread counted, from the clocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DeadlineOut {
    /// Jobs run (one per wake-up recorded).
    pub(crate) jobs: u64,
    /// Jobs that ended after their absolute deadline (period start + deadline).
    pub(crate) misses: u64,
    /// Jobs whose CPU time by the thread's CPU clock exceeded the runtime (interrupt time
    /// charged to the thread included: not the kernel's own throttling count).
    pub(crate) runtime_overruns: u64,
}

/// The running figures of one worker's loop (locals, kept together so both loops share
/// [`Worker::sample`]).
#[derive(Debug)]
struct Tally {
    n: u64,
    min: u64,
    max: u64,
    sum: u64,
    overruns: u64,
    lost: u64,
    overflow: u64,
    spikes_lost: u64,
    tripped_at: Option<(u64, u64)>,
    tripped_spike: Option<RawSpike>,
}

impl Tally {
    fn new() -> Tally {
        Tally {
            n: 0,
            min: u64::MAX,
            max: 0,
            sum: 0,
            overruns: 0,
            lost: 0,
            overflow: 0,
            spikes_lost: 0,
            tripped_at: None,
            tripped_spike: None,
        }
    }
}

/// A SCHED_DEADLINE thread's job, for [`Worker::run_deadline`] (the thread is already a
/// deadline task when it starts).
#[derive(Debug, Clone, Copy)]
pub(crate) struct DeadlineJob {
    /// Relative deadline (ns).
    pub(crate) deadline_ns: u64,
    /// Runtime (ns): a job that used more CPU than this by its CPU clock ran over it.
    pub(crate) runtime_ns: u64,
    /// CPU time to spin after recording the wake-up (ns).
    pub(crate) work_ns: u64,
}

impl Worker {
    /// Records one wake-up `lat` ns after `expected` (read at `now`): histogram, timeline,
    /// sample ring, monitor tap, linear histogram, spike ring, live figures. True when it
    /// tripped `--break-on` (the run is then stopping).
    #[inline(always)]
    fn sample(&mut self, t: &mut Tally, expected: u64, now: u64, lat: u64) -> bool {
        t.n += 1;
        let n = t.n;
        self.rec.record(lat);
        self.timeline.record(expected, lat);
        if let Some(ring) = self.ring.as_mut() {
            if ring.push(lat).is_err() {
                t.lost += 1;
                if let Some(tap) = &self.tally {
                    tap.set_lost(t.lost);
                }
            }
        }
        if let Some(tap) = &self.tally {
            tap.observe(lat, n);
        }
        if !self.linear.is_empty() {
            let us = (lat / 1000) as usize;
            match self.linear.get_mut(us) {
                Some(b) => *b += 1,
                None => t.overflow += 1,
            }
        }
        if let Some(s) = self.spikes.as_mut() {
            if lat >= s.threshold_ns && s.ring.push(s.spike(expected, now, n)).is_err() {
                t.spikes_lost += 1;
            }
        }
        t.min = t.min.min(lat);
        t.max = t.max.max(lat);
        t.sum = t.sum.wrapping_add(lat);
        self.live.publish(n, lat, t.min, t.max, t.sum);
        if lat > self.break_on_ns
            && self
                .tripped
                .compare_exchange(false, true, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
        {
            t.tripped_at = Some((lat, n));
            // Handed over apart from the ring (which may be full): its window is saved.
            t.tripped_spike = self.spikes.as_ref().map(|s| s.spike(expected, now, n));
            self.stop.store(true, Ordering::Release);
            return true;
        }
        false
    }

    /// Counts the periods that began at or before `at` past `next` as overruns and moves `next`
    /// beyond `at`.
    #[inline(always)]
    fn skip_missed(&self, t: &mut Tally, next: &mut u64, at: u64) {
        let interval = self.interval_ns;
        if at >= *next {
            let missed = (at - *next) / interval + 1;
            t.overruns += missed;
            *next += missed * interval;
            if let Some(tap) = &self.tally {
                tap.set_overruns(t.overruns);
            }
        }
    }

    fn finish(self, t: Tally, deadline: Option<DeadlineOut>) -> WorkerOut {
        let timeline = self.timeline.finish(clock::now_ns(self.clock));
        self.done.fetch_add(1, Ordering::Release);
        self.bell.ring();
        WorkerOut {
            rec: self.rec,
            overruns: t.overruns,
            lost: t.lost,
            linear: self.linear,
            linear_overflow: t.overflow,
            tripped_at: t.tripped_at,
            tripped_spike: t.tripped_spike,
            cpu: latlab_core::sys::sched::current_cpu(),
            timeline,
            spikes_lost: t.spikes_lost,
            deadline,
        }
    }

    /// Ends without measuring (a thread whose set-up the kernel refused).
    pub(crate) fn skip(self) -> WorkerOut {
        self.finish(Tally::new(), None)
    }

    /// Runs the measuring loop until `loops` wake-ups, the stop flag, or the break threshold.
    pub(crate) fn run(mut self) -> WorkerOut {
        let clk = self.clock;
        let interval = self.interval_ns;
        let mut t = Tally::new();
        if let Some(s) = self.spikes.as_mut() {
            s.tid = latlab_core::sys::sched::gettid();
        }
        let placed = self.held.as_ref().map(|_| latlab_core::rt::Held::read());
        let watch = placed
            .as_ref()
            .zip(self.held.as_ref())
            .and_then(|(p, (name, _))| p.watch(name));
        let mut stray = placed
            .as_ref()
            .map_or_else(latlab_core::rt::Stray::default, latlab_core::rt::Stray::for_held);
        let begin = clock::now_ns(clk);
        self.timeline.start_at(begin);
        let mut next = begin + interval;
        while t.n < self.loops && !self.stop.load(Ordering::Relaxed) {
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
            if self.sample(&mut t, expected, now, lat) {
                break;
            }
            // After the sample's clock read: the check is not part of the latency.
            self.check_cpu(&mut stray);
            if !self.relative {
                next += interval;
                self.skip_missed(&mut t, &mut next, now);
            }
        }
        self.check_held(placed, watch, &stray, t.n);
        self.finish(t, None)
    }

    /// Counts a wake-up on another CPU than the pinned one (published to a monitor's tap).
    #[inline(always)]
    fn check_cpu(&self, stray: &mut latlab_core::rt::Stray) {
        if let (Some(c), Some(tap)) = (stray.check(), &self.tally) {
            tap.set_strayed(stray.count, c);
        }
    }

    /// Records, in the run's placement log, a placement that moved since `placed` was read
    /// (or that `watch` saw changed in between), and the wake-ups of `n` that `stray` saw on another CPU than the pinned one.
    fn check_held(
        &self,
        placed: Option<latlab_core::rt::Held>,
        watch: Option<latlab_core::rt::policy::PolicyWatch>,
        stray: &latlab_core::rt::Stray,
        n: u64,
    ) {
        if let (Some((name, log)), Some(placed)) = (&self.held, placed) {
            if let Some(moved) = placed.moved(name, watch) {
                log.failed(moved);
            }
            if let Some(away) = stray.said(name, n, "wake-ups") {
                log.failed(away);
            }
        }
    }

    /// The loop of a SCHED_DEADLINE thread, as rt-tests' cyclicdeadline runs it: end each job
    /// with `sched_yield()` (the kernel throttles the thread until its next period), and on
    /// waking record `now - period start`. The periods are counted from the first wake-up; a
    /// wake-up before the counted start means the kernel's period began earlier (it may
    /// re-anchor a task's periods), so the count is re-anchored there, as cyclicdeadline
    /// does. Per job, from the clocks: a miss when it ended after `period start + deadline`;
    /// a runtime overrun when its CPU clock counted more than its runtime.
    pub(crate) fn run_deadline(mut self, job: DeadlineJob) -> WorkerOut {
        let clk = self.clock;
        let mut t = Tally::new();
        let (mut misses, mut runtime_overruns) = (0u64, 0u64);
        if let Some(s) = self.spikes.as_mut() {
            s.tid = latlab_core::sys::sched::gettid();
        }
        // End the job sched_setattr began: the loop starts at a period's start.
        dl::yield_now();
        let placed = self.held.as_ref().map(|_| latlab_core::rt::Held::read());
        let watch = placed
            .as_ref()
            .zip(self.held.as_ref())
            .and_then(|(p, (name, _))| p.watch(name));
        let mut stray = placed
            .as_ref()
            .map_or_else(latlab_core::rt::Stray::default, latlab_core::rt::Stray::for_held);
        let mut expected = clock::now_ns(clk);
        let mut cpu_before = dl::thread_cpu_ns();
        self.timeline.start_at(expected);
        while t.n < self.loops && !self.stop.load(Ordering::Relaxed) {
            let now = clock::now_ns(clk);
            let cpu = dl::thread_cpu_ns();
            if t.n > 0 && cpu - cpu_before > job.runtime_ns {
                runtime_overruns += 1; // the job before this wake-up
            }
            cpu_before = cpu;
            if now < expected {
                expected = now;
            }
            let lat = now - expected;
            if self.sample(&mut t, expected, now, lat) {
                break;
            }
            self.check_cpu(&mut stray);
            if job.work_ns > 0 {
                while dl::thread_cpu_ns() - cpu < job.work_ns && !self.stop.load(Ordering::Relaxed)
                {
                }
            }
            let end = clock::now_ns(clk);
            if end > expected + job.deadline_ns {
                misses += 1;
            }
            expected += self.interval_ns;
            self.skip_missed(&mut t, &mut expected, end);
            dl::yield_now();
        }
        // The last job's CPU time, then back to SCHED_OTHER: the teardown is not a job.
        if t.n > 0 && dl::thread_cpu_ns() - cpu_before > job.runtime_ns {
            runtime_overruns += 1;
        }
        // A thread no longer SCHED_DEADLINE (`chrt -p` from outside) yields at once: each
        // "job" it counted since is not one.
        self.check_held(placed, watch, &stray, t.n);
        let _ = latlab_core::sys::sched::set_policy(latlab_core::config::Policy::Other, 0);
        let jobs = t.n;
        self.finish(
            t,
            Some(DeadlineOut {
                jobs,
                misses,
                runtime_overruns,
            }),
        )
    }
}
