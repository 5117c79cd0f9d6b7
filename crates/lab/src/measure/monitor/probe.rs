//! The measuring threads of a long-running cyclic measurement (a monitor, a qualification):
//! cyclic's worker per measured CPU, or the kernel's timerlat threads and latlab's reader,
//! publishing through per-CPU tallies and raw-sample rings. Both measurements start and stop
//! them the same way; only the control thread's loop between differs.

use super::tally::Tally;
use crate::driver::Ctx;
use crate::measure::cyclic::worker::{Worker, WorkerOut};
use crate::measure::timerlat::probe::{Engine, Threads};
use latlab_core::config::Policy;
use latlab_core::error::Result;
use latlab_core::rt::{self, Live, Placement};
use latlab_core::stats::Recorder;
use latlab_trace::session::RawSpike;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};

/// The per-CPU raw-sample rings and spike rings of the measuring threads, one each.
type Rings = (
    Vec<Option<rtrb::Producer<u64>>>,
    Vec<Option<rtrb::Producer<RawSpike>>>,
);

/// The measuring threads of a long-running cyclic measurement (a monitor, a qualification).
pub(crate) struct Probe<'a> {
    /// One thread per CPU.
    pub(crate) cpus: &'a [usize],
    /// Their period (ns).
    pub(crate) interval_ns: u64,
    /// `--trace`: wake-ups at or above this go to the spike rings.
    pub(crate) trace_threshold_ns: Option<u64>,
    /// Cyclic threads, or the kernel's timerlat tracer.
    pub(crate) engine: Engine,
}

/// The policy and priority the measuring threads run at: `asked`, or SCHED_OTHER when the
/// start could not grant real-time scheduling.
pub(crate) fn policy(engine: Engine, asked: (Policy, i32), rt_granted: bool) -> (Policy, i32) {
    let granted = if rt_granted { asked } else { (Policy::Other, 0) };
    // The kernel's timerlat threads are SCHED_FIFO: at -p's priority, else the kernel's 95.
    crate::measure::timerlat::probe::thread_policy(engine, granted)
}

/// One tally per measuring thread, counting the wake-ups over `threshold_ns` (None: none).
pub(crate) fn tallies(n: usize, threshold_ns: Option<u64>) -> Vec<Arc<Tally>> {
    (0..n)
        .map(|_| Arc::new(Tally::new(threshold_ns.unwrap_or(u64::MAX))))
        .collect()
}

/// The measuring threads started, and what the control thread watches them by.
pub(crate) struct Running {
    threads: Threads,
    /// Threads that ended by themselves (a bounded run, a failure).
    done: Arc<AtomicUsize>,
    /// Rung by the threads, so the control thread's waits end when there is work.
    pub(crate) bell: Arc<rt::Doorbell>,
    /// Measured CPUs.
    n: usize,
}

impl Probe<'_> {
    /// The threads that wait at the start barrier (one per CPU, or the tracer's reader).
    fn parties(&self) -> usize {
        match self.engine {
            Engine::Cyclic => self.cpus.len(),
            Engine::Timerlat => 1,
        }
    }

    /// Starts the measuring threads and returns once they all passed the start barrier, with
    /// the control thread's ends of their raw-sample rings (one per CPU, in order).
    pub(crate) fn start(
        &self,
        policy: (Policy, i32),
        driver: &mut Ctx<'_>,
        tallies: &[Arc<Tally>],
        spikes: Vec<Option<rtrb::Producer<RawSpike>>>,
    ) -> Result<(Running, Vec<rtrb::Consumer<u64>>)> {
        let n = self.cpus.len();
        let (producers, consumers) =
            latlab_core::samples::rings(n, crate::measure::cyclic::ring_capacity(self.interval_ns));
        let producers: Vec<_> = producers.into_iter().map(Some).collect();
        rt::install_wake_handler();
        let done = Arc::new(AtomicUsize::new(0));
        let bell = Arc::new(rt::Doorbell::default());
        let barrier = Arc::new(Barrier::new(self.parties() + 1));
        let threads = self.spawn(
            policy,
            driver,
            &barrier,
            (producers, spikes),
            (tallies, &done, &bell),
        )?;
        barrier.wait();
        let running = Running {
            threads,
            done,
            bell,
            n,
        };
        Ok((running, consumers))
    }

    /// Spawns one measuring thread per CPU (cyclic's worker, publishing through its CPU's
    /// tally) behind `barrier`.
    fn spawn(
        &self,
        (policy, prio): (Policy, i32),
        driver: &mut Ctx<'_>,
        barrier: &Arc<Barrier>,
        (mut producers, mut spike_prods): Rings,
        (tallies, done, bell): (&[Arc<Tally>], &Arc<AtomicUsize>, &Arc<rt::Doorbell>),
    ) -> Result<Threads> {
        if self.engine == Engine::Timerlat {
            // The kernel's threads measure; latlab's reader feeds the same rings and tallies.
            let started = crate::measure::timerlat::probe::start(
                driver,
                self.cpus,
                self.interval_ns,
                policy.is_rt().then_some(prio),
            )?;
            let stop = driver.control().stop.clone();
            return started
                .spawn(barrier.clone(), producers, tallies.to_vec(), stop, bell.clone())
                .map(Threads::Tracer);
        }
        let placements: Vec<Placement> = self
            .cpus
            .iter()
            .map(|&c| Placement {
                name: format!("cpu{c}"),
                cpu: Some(c),
                policy,
                prio,
            })
            .collect();
        let stop = driver.control().stop.clone();
        let log = driver.placement().clone();
        driver
            .spawn_workers(&placements, barrier.clone(), |i| {
                let w = Worker {
                    clock: libc::CLOCK_MONOTONIC,
                    interval_ns: self.interval_ns,
                    relative: false,
                    loops: u64::MAX,
                    break_on_ns: u64::MAX,
                    rec: Recorder::new(),
                    // Kept for the worker's contract; a monitor's history lives in its snapshots.
                    timeline: latlab_core::result::TimelineRecorder::new(
                        latlab_core::result::timeline::DEFAULT_WIDTH_NS,
                    ),
                    linear: Vec::new(),
                    ring: producers[i].take(),
                    live: Arc::new(Live::new()),
                    stop: stop.clone(),
                    tripped: Arc::new(AtomicBool::new(false)),
                    done: done.clone(),
                    bell: bell.clone(),
                    tally: Some(tallies[i].clone() as Arc<dyn rt::Tap>),
                    spikes: spike_prods.get_mut(i).and_then(Option::take).map(|ring| {
                        crate::measure::cyclic::worker::SpikeOut {
                            threshold_ns: self.trace_threshold_ns.unwrap_or(u64::MAX),
                            series: i as u32,
                            cpu: Some(self.cpus[i] as u32),
                            tid: 0,
                            ring,
                        }
                    }),
                    held: Some((format!("cpu{}", self.cpus[i]), log.clone())),
                };
                move || move || w.run()
            })
            .map(Threads::Workers)
            .map_err(|e| latlab_core::rt::start_error("cannot start measuring threads", e))
    }
}

/// What each measuring thread kept, by CPU: (CPU, whole-run recorder, overruns, lost).
pub(crate) fn per_cpu(
    outs: Vec<(rt::Applied, WorkerOut)>,
    cpus: &[usize],
) -> Vec<(usize, Recorder, u64, u64)> {
    outs.into_iter()
        .zip(cpus)
        .map(|((_, o), &c)| (c, o.rec, o.overruns, o.lost))
        .collect()
}

impl Running {
    /// Whether every measuring thread has ended by itself.
    pub(crate) fn all_done(&self) -> bool {
        self.done.load(Ordering::Acquire) == self.n
    }

    /// Stops the measuring threads (waking any asleep) and collects what each kept.
    pub(crate) fn stop(self, control: &rt::Control) -> Result<Vec<(rt::Applied, WorkerOut)>> {
        control.stop.store(true, Ordering::Release);
        self.threads.wake();
        self.threads.join()
    }
}
