//! The two tasks of one `ipc` method: started pinned at their priorities behind a barrier (the
//! sender as a thread, or forked from its placed thread with `--tasks processes` and watched
//! until it ends), and the rt-tests exchange they run — the receiver keeps the schedule and
//! says "ready", the sender stamps the clock and sends at once.

use super::methods::{self, Chan, RECEIVER, SENDER};
use super::IpcConfig;
use latlab_core::config::TaskKind;
use crate::driver::Ctx;
use latlab_core::error::Result;
use latlab_core::rt::{Applied, Placement};
use latlab_core::stats::Recorder;
use latlab_core::sys::{self, clock, taskpair::SharedBox};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Duration;

/// What the two tasks share besides the channel: in memory shared across fork, so the same
/// code serves threads and a forked sender.
pub(super) struct Shared {
    pub(super) chan: Chan,
    pub(super) stamp: AtomicU64,
    pub(super) sent: AtomicU64,
    pub(super) quit: AtomicBool,
    pub(super) broken: AtomicBool,
    /// Set by a forked sender once it is ready to take the first "ready".
    pub(super) child_ready: AtomicBool,
    /// When the receiver began waiting for the current message (CLOCK_MONOTONIC ns; 0: not
    /// waiting): a forked sender that never answers is found by it.
    pub(super) waiting_since: AtomicU64,
    /// The state (`/proc/PID/stat`'s letter) of a sender latlab gave up because it did not
    /// answer while not waiting for a CPU, or [`LINGERED`] for a forked sender killed because
    /// it outlived the run (0: none was).
    pub(super) gave_up: std::sync::atomic::AtomicU8,
    /// Set when a killed forked sender could not be reaped (frozen).
    pub(super) unreaped: AtomicBool,
    /// The sender's task id (a thread's, or the forked process's), once it runs: its state
    /// tells a lost message from a sender that only waits for its CPU.
    pub(super) sender_tid: std::sync::atomic::AtomicI32,
    /// The receiver thread's task id, once it runs: a receiver that holds the answer but
    /// waits for its CPU (state R) has lost nothing.
    pub(super) receiver_tid: std::sync::atomic::AtomicI32,
    /// The sender's state letter when, in a run with no planned end, it was found not
    /// answering for 2 s while not waiting for a CPU (0: it never was). Such a run is not
    /// given up (it waits, as asked, until Ctrl-C); this is what it then says.
    pub(super) stalled: std::sync::atomic::AtomicU8,
}

/// The shared state, as both sides hold it.
pub(super) type SharedRef = Arc<SharedBox<Shared>>;

/// How long a forked sender may take to get ready (copying and locking the parent's memory).
const CHILD_READY_WITHIN: Duration = Duration::from_secs(10);

/// Starts the sender and the receiver for one method, pinned and at their priorities, behind
/// a barrier the caller passes last: the one place a run's tasks are set up. With
/// `--tasks processes` the sender's thread forks the sender (which inherits its CPU and
/// policy) before the start and then only waits for it.
#[allow(clippy::type_complexity)]
pub(super) fn start_pair(
    ctx: &Ctx<'_>,
    cfg: &IpcConfig,
    shared: &SharedRef,
    barrier: &Arc<Barrier>,
) -> Result<Vec<std::thread::JoinHandle<(Applied, Ended)>>> {
    let placements = [
        Placement {
            name: "ipc-sender".into(),
            cpu: cfg.cpus[SENDER],
            policy: cfg.policy,
            prio: cfg.sender_prio(),
        },
        Placement {
            name: "ipc-receiver".into(),
            cpu: cfg.cpus[RECEIVER],
            policy: cfg.policy,
            prio: cfg.prio,
        },
    ];
    let pace = Pace::of(cfg);
    let stop = ctx.control().stop.clone();
    let measured = cfg.cpus;
    let fork = (cfg.tasks == TaskKind::Processes).then_some((
        cfg.cpus[SENDER],
        cfg.policy.as_libc(),
        cfg.sender_prio(),
    ));
    ctx.spawn_workers(&placements, barrier.clone(), |i| {
        let sh = shared.clone();
        let stop = stop.clone();
        move || -> Box<dyn FnOnce() -> Ended> {
            match (i, fork) {
                (SENDER, Some((cpu, policy, prio))) => match fork_sender(&sh, cpu, policy, prio) {
                    Ok(pid) => Box::new(move || wait_sender(&sh, pid, &stop, measured, pace)),
                    Err(why) => {
                        fail(&sh);
                        Box::new(|| Ended::NoSender(why))
                    }
                },
                _ => {
                    let side = sh.chan.side(i);
                    let rec = Recorder::new();
                    Box::new(move || match (i, side) {
                        (_, Err(_)) => {
                            fail(&sh);
                            Ended::Failed
                        }
                        (SENDER, Ok(s)) => {
                            send_loop(&sh, &s);
                            Ended::Sender
                        }
                        (_, Ok(s)) => {
                            Ended::Receiver(receive_loop(&sh, &s, pace, &stop, rec))
                        }
                    })
                }
            }
        }
    })
    .map_err(|e| latlab_core::rt::start_error("spawning the ipc threads", e))
}

/// Marks the pair broken and wakes both sides, so neither waits for the other forever.
pub(super) fn fail(sh: &Shared) {
    sh.broken.store(true, Ordering::SeqCst);
    sh.quit.store(true, Ordering::SeqCst);
    sh.chan.nudge(RECEIVER);
    sh.chan.nudge(SENDER);
}

/// Forks the sender from the (placed) sender thread and waits until it is ready; None when it
/// could not be forked or did not get ready (it is then killed).
pub(super) fn fork_sender(
    sh: &SharedRef,
    cpu: Option<usize>,
    policy: i32,
    prio: i32,
) -> std::result::Result<i32, String> {
    let child = sh.clone();
    let pid = sys::taskpair::fork_task(cpu, policy, prio, move || {
        // Memory locks are not inherited across fork: lock the child's own pages.
        let _ = sys::mem::mlockall();
        match child.chan.side(SENDER) {
            Ok(side) => {
                child.child_ready.store(true, Ordering::SeqCst);
                send_loop(&child, &side);
            }
            Err(_) => child.broken.store(true, Ordering::SeqCst),
        }
    })
    .map_err(|e| {
        let hint = if e.raw_os_error() == Some(libc::EAGAIN) {
            latlab_core::sys::procs::LIMIT_HINT
        } else {
            ""
        };
        format!("could not fork the sender: {e}{hint}")
    })?;
    let t0 = std::time::Instant::now();
    while !sh.child_ready.load(Ordering::SeqCst) {
        let why = if sh.broken.load(Ordering::SeqCst) {
            "the forked sender could not set itself up"
        } else if sys::taskpair::task_ended(pid) {
            "the forked sender ended before it was ready"
        } else if t0.elapsed() > CHILD_READY_WITHIN {
            "the forked sender was not ready within 10 s"
        } else {
            std::thread::sleep(Duration::from_millis(1));
            continue;
        };
        sys::taskpair::kill_task(pid);
        return Err(why.into());
    }
    Ok(pid)
}

/// How long a forked sender may take to end once the run is over before it is killed (one
/// stopped with SIGSTOP, say, would hold the receiver forever).
const CHILD_END_WITHIN: Duration = Duration::from_secs(2);

/// The sender thread's part when the sender is a process: watch it (at SCHED_OTHER, off the
/// measured CPUs where there are others) and reap it; kill it if it outlives the run; if it
/// ended before the receiver let it go, the pair is broken.
pub(super) fn wait_sender(
    sh: &Shared,
    pid: i32,
    stop: &AtomicBool,
    measured: [Option<usize>; 2],
    pace: Pace,
) -> Ended {
    let _ = sys::sched::set_policy_raw(libc::SCHED_OTHER, 0);
    let others: Vec<usize> = latlab_core::config::CpuSet::online_here()
        .iter()
        .filter(|c| !measured.contains(&Some(*c)))
        .collect();
    if !others.is_empty() {
        let _ = sys::sched::pin_to_cpus(others);
    }
    let mut watch = Watch::new(pace, false);
    let mut over_since: Option<std::time::Instant> = None;
    loop {
        if sys::taskpair::try_wait_task(pid).is_some() {
            break;
        }
        let stuck = watch.stuck(sh, pid);
        let over = stop.load(Ordering::Relaxed) || sh.quit.load(Ordering::Relaxed);
        if stuck.is_some()
            || (over
                && over_since
                    .get_or_insert_with(std::time::Instant::now)
                    .elapsed()
                    > CHILD_END_WITHIN)
        {
            let reaped = sys::taskpair::kill_task(pid);
            // Given up for not answering (its state), else killed for lingering past a stop.
            sh.gave_up
                .store(watch.idle.unwrap_or(LINGERED), Ordering::SeqCst);
            sh.unreaped.store(!reaped, Ordering::SeqCst);
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    // Once the receiver has let the sender go with every message timed, how the sender ended
    // (killed because it lingered, say) takes nothing from the series.
    let whole = sh.quit.load(Ordering::SeqCst) && !sh.broken.load(Ordering::SeqCst);
    if !whole {
        fail(sh);
        return Ended::Failed;
    }
    Ended::Sender
}

/// `Shared::gave_up` for a forked sender latlab killed because it outlived the run's end by
/// [`CHILD_END_WITHIN`] (not a state letter).
const LINGERED: u8 = b'!';

/// Why the sender ended early, in words: `state` is its state letter when latlab gave it up
/// for not answering (0: latlab did not), `frozen` when a killed sender process could not be
/// reaped; `thread` for a sender thread (ended by waking both sides, not killed).
pub(super) fn gave_up_text(state: u8, frozen: bool, thread: bool) -> String {
    let task = task_word(thread);
    let killed = if frozen {
        "latlab killed it (it did not die within 1 s, frozen: it ends once thawed)"
    } else {
        "latlab killed it"
    };
    match state {
        0 => return format!("the sender {task} ended or was killed"),
        LINGERED => return format!("the sender {task} did not end within 2 s of the stop; {killed}"),
        _ => {}
    }
    let ended = if thread {
        "latlab ended the method"
    } else {
        killed
    };
    format!(
        "the sender {task} did not answer for 2 s and {}; {ended}",
        silent_why(state)
    )
}

/// What a run with no planned end says of a sender found not answering (its state letter):
/// it was waited for, not given up.
pub(super) fn stalled_text(state: u8, thread: bool) -> String {
    format!(
        "the sender {} did not answer for 2 s and {}; the run had no planned end (no -l or -D), \
         so latlab waited for it",
        task_word(thread),
        silent_why(state)
    )
}

fn task_word(thread: bool) -> &'static str {
    if thread {
        "thread"
    } else {
        "process"
    }
}

/// Why a sender in state `state` does not answer, in words.
fn silent_why(state: u8) -> &'static str {
    match state {
        b'T' => "it was stopped (SIGSTOP)",
        b't' => "it was stopped by a debugger",
        b'D' => "it was in uninterruptible sleep (frozen by a cgroup freezer?)",
        _ => "it was asleep, not waiting for a CPU (a message lost?)",
    }
}

/// Finds a sender that will not answer: past the planned end, a receiver waiting 2 s on a
/// sender that is not runnable has one that is stopped (SIGSTOP, a tracer), frozen (a cgroup
/// freezer), or asleep on a message that was lost (taken by another process). A sender that
/// only waits for its CPU (a higher-priority task on it, a stalled vCPU: state R) answers once
/// it runs, and a receiver in that state has its answer and only has to run to take it: both
/// are waited for, as rt-tests would (Ctrl-C ends the run).
pub(super) struct Watch {
    late_after: Option<u64>,
    /// Whether the sender is a thread (else a forked process), for what is said.
    thread: bool,
    /// Polls in a row that found the sender silent and not runnable.
    silent: u32,
    /// The sender's state letter at the last poll, when it was silent and not runnable.
    pub(super) idle: Option<u8>,
}

impl Watch {
    /// A watch from now, for a method paced by `pace`, of a sender `thread` (else a forked
    /// process).
    pub(super) fn new(pace: Pace, thread: bool) -> Watch {
        let now = clock::now_ns(libc::CLOCK_MONOTONIC);
        Watch {
            late_after: pace.planned_ns().map(|p| now.saturating_add(p)),
            thread,
            silent: 0,
            idle: None,
        }
    }

    /// One poll of sender task `tid`: its state letter when it is to be given up (silent and
    /// not runnable in two polls in a row, past the planned end).
    pub(super) fn stuck(&mut self, sh: &Shared, tid: i32) -> Option<u8> {
        let now = clock::now_ns(libc::CLOCK_MONOTONIC);
        let waiting = sh.waiting_since.load(Ordering::Relaxed);
        let state_of = |tid: i32| (tid > 0).then(|| sys::family::state(tid)).flatten();
        // The tasks' states are read only for a receiver waiting that long (no file read at
        // every poll of a healthy run).
        let long_wait =
            waiting != 0 && now.saturating_sub(waiting) > CHILD_END_WITHIN.as_nanos() as u64;
        let state = long_wait.then(|| state_of(tid)).flatten();
        let idle = state.is_some_and(|c| c != 'R')
            && state_of(sh.receiver_tid.load(Ordering::Relaxed)) != Some('R');
        self.idle = idle.then(|| state.map_or(b'?', |c| c as u8));
        self.silent = if idle { self.silent + 1 } else { 0 };
        if self.late_after.is_none() && self.silent >= 2 {
            // No planned end: waited for (Ctrl-C ends it), but said at once, and once.
            let state = self.idle.unwrap_or(b'?');
            if sh.stalled.compare_exchange(0, state, Ordering::SeqCst, Ordering::SeqCst).is_ok() {
                latlab_core::note!(
                    "latlab: ipc: the sender {} has not answered for 2 s and {}; this run has \
                     no planned end (no -l or -D), so latlab waits for it: Ctrl-C ends the run \
                     and keeps what was timed",
                    task_word(self.thread),
                    silent_why(state).replacen("it was", "it is", 1)
                );
            }
        }
        if self.late_after.is_some_and(|t| now > t) && self.silent >= 2 {
            self.idle
        } else {
            None
        }
    }
}

/// What a thread hands back.
pub(super) enum Ended {
    Sender,
    Receiver(Received),
    Failed,
    /// The sender process could not be started, and why.
    NoSender(String),
}

/// The receiver's schedule.
#[derive(Clone, Copy)]
pub(super) struct Pace {
    interval: u64,
    loops: u64,
    duration: Option<u64>,
}

impl Pace {
    /// The schedule `cfg` asks for.
    pub(super) fn of(cfg: &IpcConfig) -> Pace {
        Pace {
            interval: cfg.interval_ns,
            loops: cfg.loops.unwrap_or(u64::MAX),
            duration: cfg.duration_ns,
        }
    }

    /// How long one method should take (None: until Ctrl-C).
    fn planned_ns(&self) -> Option<u64> {
        match (self.duration, self.loops) {
            (Some(d), _) => Some(d),
            (None, u64::MAX) => None,
            (None, n) => Some(n.saturating_mul(self.interval)),
        }
    }
}

/// The sender, as rt-tests' programs run it: waits until the receiver says it is ready, stamps
/// the clock and sends at once; until the receiver says quit. Only plain system calls and
/// atomics (it may run in a forked child).
pub(super) fn send_loop(sh: &Shared, side: &methods::Side) {
    sh.sender_tid
        .store(sys::sched::gettid(), Ordering::SeqCst);
    loop {
        if sh.chan.recv(side).is_none() {
            sh.broken.store(true, Ordering::SeqCst);
            break;
        }
        if sh.quit.load(Ordering::Acquire) {
            break;
        }
        let t = clock::now_ns(libc::CLOCK_MONOTONIC);
        sh.stamp.store(t, Ordering::Release);
        if !sh.chan.send(RECEIVER, t) {
            sh.broken.store(true, Ordering::SeqCst);
            break;
        }
        sh.sent.fetch_add(1, Ordering::Relaxed);
    }
    if sh.broken.load(Ordering::SeqCst) {
        sh.chan.nudge(RECEIVER);
    }
}

/// The receiver keeps the schedule: at each interval it tells the sender it is ready, then
/// times the wake-up against the sender's stamp; until `loops`, the duration or the stop flag,
/// then tells the sender to quit. A period it reaches late counts the intervals missed.
pub(super) fn receive_loop(
    sh: &Shared,
    side: &methods::Side,
    pace: Pace,
    stop: &AtomicBool,
    mut rec: Recorder,
) -> Received {
    sh.receiver_tid
        .store(sys::sched::gettid(), Ordering::SeqCst);
    let clk = libc::CLOCK_MONOTONIC;
    let begin = clock::now_ns(clk);
    let end = pace.duration.map_or(u64::MAX, |d| begin.saturating_add(d));
    let mut next = begin + pace.interval;
    let (mut got, mut overruns, mut foreign) = (0u64, 0u64, 0u64);
    while got < pace.loops && next < end && !sh.broken.load(Ordering::Relaxed) {
        while clock::sleep_until_ns(clk, next) == libc::EINTR && !stop.load(Ordering::Relaxed) {}
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let ready_at = clock::now_ns(clk);
        if !sh.chan.send(SENDER, 0) {
            sh.broken.store(true, Ordering::SeqCst);
            break;
        }
        sh.waiting_since
            .store(ready_at.max(1), Ordering::Relaxed);
        // The answer's stamp is read after the sender woke to this "ready": an older one means
        // a wake-up the sender did not make for it (another process posted to the channel, or
        // a stale answer to one such post). It is not timed; the real answer is waited for.
        let got_one = loop {
            match sh.chan.recv(side) {
                Some(_)
                    if sh.stamp.load(Ordering::Acquire) < ready_at
                        && !sh.broken.load(Ordering::Acquire) =>
                {
                    foreign += 1;
                }
                other => break other,
            }
        };
        sh.waiting_since.store(0, Ordering::Relaxed);
        match got_one {
            Some(now) if !sh.broken.load(Ordering::Acquire) => {
                rec.record(now.saturating_sub(sh.stamp.load(Ordering::Acquire)));
            }
            _ => {
                sh.broken.store(true, Ordering::SeqCst);
                break;
            }
        }
        got += 1;
        next += pace.interval;
        let now = clock::now_ns(clk);
        if now >= next {
            let missed = (now - next) / pace.interval + 1;
            overruns += missed;
            next += missed * pace.interval;
        }
    }
    sh.quit.store(true, Ordering::SeqCst);
    sh.chan.nudge(SENDER);
    Received {
        rec,
        overruns,
        foreign,
    }
}

/// What the receiver measured.
pub(super) struct Received {
    pub(super) rec: Recorder,
    /// Periods it reached late (whole intervals missed).
    pub(super) overruns: u64,
    /// Wake-ups that did not answer its "ready" (not timed).
    pub(super) foreign: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn why_a_sender_was_given_up_names_who_and_what_latlab_did() {
        let t = |state, frozen, thread| gave_up_text(state, frozen, thread);
        assert_eq!(t(0, false, true), "the sender thread ended or was killed");
        assert!(t(b'T', false, false).contains("process did not answer for 2 s and it was stopped (SIGSTOP); latlab killed it"));
        assert!(t(b'S', false, true).ends_with("(a message lost?); latlab ended the method"));
        assert!(t(b'D', true, false).contains("frozen: it ends once thawed"));
        assert_eq!(
            t(LINGERED, false, false),
            "the sender process did not end within 2 s of the stop; latlab killed it"
        );
        // A run with no planned end waits; it says so, not that latlab gave anything up.
        let w = stalled_text(b'T', false);
        assert!(w.starts_with("the sender process did not answer for 2 s and it was stopped (SIGSTOP); the run had no planned end"));
        assert!(w.ends_with("so latlab waited for it"));
    }
}
