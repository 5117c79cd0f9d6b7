//! Any task's scheduling, replayed from the time-ordered `sched` and IRQ events of every CPU:
//! per task, its wake-up latency (`sched_waking` -> switched in), preemption delay (switched
//! out while runnable -> back in), run time, migrations and who woke it. Pure: events in,
//! figures out; which tasks count is asked of a [`Chooser`].
//!
//! Some switch-ins are never traced: on this VM's 6.18 kernel, the switch from the idle task
//! to a woken one is missing almost always (`perf sched` misses them too). A task then shows
//! up running (`common_pid`) with no switch-in; the first `sched_stat_runtime` for it dates
//! the switch-in (its run time is accounted from the moment it was picked), so the wake-up is
//! still timed, and counted as `inferred`. Without one before it leaves the CPU, the wake-up
//! is counted as `unmatched`, never guessed.

use latlab_trace::event::{softirq_name, Event, Kind, Name};
use latlab_trace::FastMap;
pub(crate) use super::samples::Samples;
use std::collections::VecDeque;

/// Decides which tasks are measured.
pub(crate) trait Chooser {
    /// Whether task `tid`, now named `comm`, is measured (and in which process).
    fn wants(&mut self, tid: i32, comm: &Name) -> Option<Choice>;
    /// `parent` made `child` (a thread or a process).
    fn forked(&mut self, parent: i32, child: i32);
}

/// A task the chooser wants, with its process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Choice {
    /// Its process (thread group) id.
    pub(crate) tgid: i32,
}

/// Distinct wakers kept per task; the rest are counted as `other`.
const MAX_WAKERS: usize = 16;

/// One measured task (a thread), from when it was first seen to its exit or the run's end.
#[derive(Debug, Clone, Default)]
pub(crate) struct Task {
    /// Thread id.
    pub tid: i32,
    /// Process id.
    pub(crate) tgid: i32,
    /// Its latest name.
    pub comm: Name,
    /// Its latest kernel priority (0..99 real-time, 100..139 normal, negative deadline).
    pub prio: i32,
    /// Wake-up latencies (ns).
    pub(crate) wake: Samples,
    /// Preemption delays (ns).
    pub(crate) preempt: Samples,
    /// Time on a CPU (ns).
    pub(crate) run_ns: u64,
    /// Stretches on a CPU.
    pub(crate) runs: u64,
    /// Migrations (`sched_migrate_task`).
    pub(crate) migrations: u64,
    /// Who woke it, most first once sorted: (`task NAME`, `irq NAME`, `softirq NAME`,
    /// `hrtimer`, `idle`, `other`), count.
    pub(crate) wakers: Vec<(String, u64)>,
    /// First and last event that concerned it (trace clock, ns).
    pub(crate) first_ns: u64,
    /// See `first_ns`.
    pub(crate) last_ns: u64,
    /// It exited during the run.
    pub(crate) exited: bool,
    /// CPUs it was switched in on.
    pub(crate) cpus: Vec<usize>,
    /// Wake-ups whose switch-in was not recorded (the task was seen running without one, or
    /// woken again): not counted as latencies.
    pub(crate) unmatched: u64,
    /// Wake-ups (and preemptions) whose switch-in was dated from `sched_stat_runtime`.
    pub(crate) inferred: u64,
    /// Wake-ups still waiting for a CPU when the run ended.
    pub(crate) pending_at_end: bool,
    on_cpu: Option<(usize, u64)>,
    woken: Option<u64>,
    preempted: Option<u64>,
    /// On a CPU since an untraced switch-in, with a wake-up (or preemption) still to date.
    undated: bool,
    exiting: bool,
}

/// A delay over the threshold, for attribution.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Delay {
    /// Index of the task in [`Tracker::tasks`].
    pub(crate) task: usize,
    /// CPU it was switched in on.
    pub(crate) cpu: usize,
    /// When it was woken (or preempted).
    pub(crate) from: u64,
    /// When it was switched in.
    pub(crate) to: u64,
    /// Its number among the task's delays, from 1.
    pub(crate) seq: u64,
    /// True for a wake-up, false for a preemption.
    pub(crate) wake: bool,
}

#[derive(Debug, Clone, Default)]
struct CpuState {
    /// Interrupt contexts open: an IRQ (its name) or a softirq (`softirq NAME`).
    stack: Vec<String>,
    /// An hrtimer callback is running.
    timer: bool,
    /// The task running, as the last switch named it.
    curr: (i32, Name),
    /// The task whose exit was recorded here: its next switch-out is its last.
    exiting: i32,
}

impl CpuState {
    /// Closes the innermost interrupt context whose label starts with `kind` (and any
    /// opened inside it whose exit went unrecorded).
    #[inline]
    fn leave(&mut self, kind: &str) {
        if let Some(i) = self.stack.iter().rposition(|x| x.starts_with(kind)) {
            self.stack.truncate(i);
        }
    }
}

/// One side of a switch: the task's name, tid and kernel priority.
#[derive(Debug, Clone, Copy)]
struct Side {
    comm: Name,
    pid: i32,
    prio: i32,
}

/// Tasks the tracker keeps at most; beyond, new tasks are only counted.
pub(crate) const MAX_TASKS: usize = 20_000;

/// How long (trace time) an exited task's tid is remembered as dead: its exit is followed at
/// once by its last switch-out, after which no record names it until it is reused (with a
/// fork). Then it is forgotten, so the tracker's state follows the tasks alive, not every
/// task that ever exited.
const DEAD_NS: u64 = 1_000_000_000;

/// The replay.
pub(crate) struct Tracker<C: Chooser> {
    chooser: C,
    /// Every task measured, in the order first seen.
    pub(crate) tasks: Vec<Task>,
    live: FastMap<i32, usize>,
    /// Tids the chooser refused, with the name it refused.
    refused: FastMap<i32, Name>,
    /// Tids that exited lately (their later records are their last switch-out), with when.
    dead: FastMap<i32, u64>,
    /// The same in time order, to forget them [`DEAD_NS`] later.
    deaths: VecDeque<(u64, i32)>,
    cpus: Vec<CpuState>,
    /// Delays are recorded when switched in on these CPUs (None: any).
    measured: Option<Vec<usize>>,
    threshold_ns: u64,
    /// Delays at or over the threshold, for the caller to take.
    pub(crate) delays: Vec<Delay>,
    /// The latest name of every task seen switching (for naming wakers).
    names: FastMap<i32, Name>,
    /// Tasks not kept because [`MAX_TASKS`] were.
    pub(crate) overflow: u64,
    /// Events replayed.
    pub(crate) events: u64,
}

fn runnable(prev_state: i64) -> bool {
    // 0: TASK_RUNNING; the preempted bit (TASK_REPORT_MAX, "R+") sits above the state bits.
    prev_state & 0xff == 0
}

impl<C: Chooser> Tracker<C> {
    /// A tracker asking `chooser`, recording delays on `measured` CPUs (None: all), handing
    /// over those at or over `threshold_ns`.
    pub(crate) fn new(chooser: C, measured: Option<Vec<usize>>, threshold_ns: u64) -> Tracker<C> {
        Tracker {
            chooser,
            tasks: Vec::new(),
            live: FastMap::default(),
            refused: FastMap::default(),
            dead: FastMap::default(),
            deaths: VecDeque::new(),
            cpus: Vec::new(),
            measured,
            threshold_ns,
            delays: Vec::new(),
            names: FastMap::default(),
            overflow: 0,
            events: 0,
        }
    }

    fn cpu(&mut self, cpu: usize) -> &mut CpuState {
        if self.cpus.len() <= cpu {
            self.cpus.resize(cpu + 1, CpuState::default());
        }
        &mut self.cpus[cpu]
    }

    /// The index of measured task `tid` (named `comm` now), creating it when the chooser
    /// wants it; None when it is not measured.
    fn task(&mut self, tid: i32, comm: &Name, ts: u64) -> Option<usize> {
        if let Some(&i) = self.live.get(&tid) {
            return Some(i);
        }
        if tid <= 0 || self.dead.contains_key(&tid) {
            return None;
        }
        if self.refused.get(&tid) == Some(comm) {
            return None;
        }
        let Some(c) = self.chooser.wants(tid, comm) else {
            self.refused.insert(tid, *comm);
            return None;
        };
        if self.tasks.len() >= MAX_TASKS {
            self.overflow += 1;
            self.refused.insert(tid, *comm);
            return None;
        }
        self.refused.remove(&tid);
        self.tasks.push(Task {
            tid,
            tgid: c.tgid,
            comm: *comm,
            prio: 120,
            first_ns: ts,
            last_ns: ts,
            ..Task::default()
        });
        let i = self.tasks.len() - 1;
        self.live.insert(tid, i);
        Some(i)
    }

    /// The measured task `tid` if it is live (no chooser question: for records that do not
    /// name the task).
    fn live(&self, tid: i32) -> Option<usize> {
        self.live.get(&tid).copied()
    }

    fn measured_on(&self, cpu: usize) -> bool {
        self.measured.as_ref().is_none_or(|m| m.contains(&cpu))
    }

    /// Who is waking a task on `cpu` now, as a label.
    fn waker(&self, cpu: usize, pid: i32) -> String {
        let c = self.cpus.get(cpu);
        if let Some(c) = c {
            if c.timer {
                return "hrtimer".into();
            }
            if let Some(top) = c.stack.last() {
                return top.clone();
            }
        }
        if pid == 0 {
            return "idle".into();
        }
        match c {
            Some(c) if c.curr.0 == pid && c.curr.1 != Name::default() => {
                format!("task {}", c.curr.1.as_str())
            }
            _ => match self.names.get(&pid) {
                Some(n) => format!("task {}", n.as_str()),
                None => format!("task pid {pid}"),
            },
        }
    }

    fn count_waker(&mut self, i: usize, label: String) {
        let w = &mut self.tasks[i].wakers;
        if let Some(x) = w.iter_mut().find(|x| x.0 == label) {
            x.1 += 1;
        } else if w.len() < MAX_WAKERS {
            w.push((label, 1));
        } else if let Some(x) = w.iter_mut().find(|x| x.0 == "other") {
            x.1 += 1;
        } else {
            w.push(("other".into(), 1));
        }
    }

    /// `tid` is on `cpu` from `ts`: closes a pending wake-up or preemption.
    fn switched_in(&mut self, i: usize, cpu: usize, ts: u64, seen: bool) {
        let measured = self.measured_on(cpu);
        let t = &mut self.tasks[i];
        let (woken, preempted) = (t.woken.take(), t.preempted.take());
        t.on_cpu = Some((cpu, ts));
        if !t.cpus.contains(&cpu) {
            t.cpus.push(cpu);
        }
        if !seen {
            // Running without a recorded switch-in: dated by its first run-time accounting.
            t.undated = woken.is_some() || preempted.is_some();
            t.woken = woken;
            t.preempted = preempted;
            return;
        }
        t.undated = false;
        let (from, wake) = match (woken, preempted) {
            (Some(w), _) => (w, true),
            (None, Some(p)) => (p, false),
            (None, None) => return,
        };
        if !measured {
            return;
        }
        let ns = ts.saturating_sub(from);
        if wake {
            t.wake.record(ns);
        } else {
            t.preempt.record(ns);
        }
        if ns >= self.threshold_ns {
            let seq = t.wake.count() + t.preempt.count();
            self.delays.push(Delay {
                task: i,
                cpu,
                from,
                to: ts,
                seq,
                wake,
            });
        }
    }

    fn switched_out(&mut self, i: usize, ts: u64, prev_state: i64, prio: i32) {
        let t = &mut self.tasks[i];
        if std::mem::take(&mut t.undated) {
            t.unmatched += 1;
            t.woken = None;
        }
        if let Some((_, since)) = t.on_cpu.take() {
            t.run_ns += ts.saturating_sub(since);
            t.runs += 1;
        }
        t.prio = prio;
        t.preempted = (runnable(prev_state) && !t.exiting).then_some(ts);
        if t.exiting {
            t.exited = true;
            let tid = t.tid;
            self.live.remove(&tid);
            self.refused.remove(&tid);
            self.dead.insert(tid, ts);
            self.deaths.push_back((ts, tid));
        }
        self.forget_dead(ts);
    }

    /// Forgets the tids that exited more than [`DEAD_NS`] before `now`.
    fn forget_dead(&mut self, now: u64) {
        while let Some(&(ts, tid)) = self.deaths.front() {
            if now.saturating_sub(ts) <= DEAD_NS {
                break;
            }
            self.deaths.pop_front();
            // Unless it died again since (a reused tid).
            if self.dead.get(&tid) == Some(&ts) {
                self.dead.remove(&tid);
            }
        }
    }

    /// Entries the tracker keeps beside the tasks' figures (tests: they follow the tasks
    /// alive, not every task that exited).
    #[cfg(test)]
    pub(crate) fn state_len(&self) -> usize {
        self.live.len() + self.refused.len() + self.dead.len() + self.deaths.len() + self.names.len()
    }

    /// Replays one event recorded on `cpu`. Events must come in time order across CPUs.
    pub(crate) fn event(&mut self, cpu: usize, e: &Event) {
        self.events += 1;
        if !matches!(e.kind, Kind::Switch { .. }) {
            self.seen_running(cpu, e.pid, e.ts);
        }
        match e.kind {
            Kind::Switch {
                prev_comm,
                prev_pid,
                prev_prio,
                prev_state,
                next_comm,
                next_pid,
                next_prio,
            } => {
                let prev = Side {
                    comm: prev_comm,
                    pid: prev_pid,
                    prio: prev_prio,
                };
                let next = Side {
                    comm: next_comm,
                    pid: next_pid,
                    prio: next_prio,
                };
                self.switch(cpu, e.ts, prev, prev_state, next);
            }
            Kind::Waking { comm, pid } => self.waking(cpu, e.ts, e.pid, (pid, &comm)),
            Kind::Runtime { pid, runtime } => self.runtime(cpu, e.ts, pid, runtime),
            Kind::Migrate { pid, .. } => {
                if let Some(i) = self.live(pid) {
                    self.tasks[i].migrations += 1;
                }
            }
            Kind::Exit { pid } => self.exit(cpu, e.ts, pid),
            Kind::Fork {
                parent_pid,
                child_pid,
                ..
            } => self.fork(parent_pid, child_pid),
            Kind::Exec { pid, comm, .. } => self.exec(pid, comm),
            Kind::IrqEntry { name, .. } => {
                let label = format!("irq {}", name.as_str());
                self.cpu(cpu).stack.push(label);
            }
            Kind::IrqExit => self.cpu(cpu).leave("irq "),
            Kind::SoftirqEntry { vec } => {
                let label = format!("softirq {}", softirq_name(vec));
                self.cpu(cpu).stack.push(label);
            }
            Kind::SoftirqExit => self.cpu(cpu).leave("softirq "),
            Kind::TimerEntry { .. } => self.cpu(cpu).timer = true,
            Kind::TimerExit => self.cpu(cpu).timer = false,
            Kind::Nmi { .. } | Kind::Stack { .. } => {}
        }
    }

    /// Any record but a switch names the task running on its CPU (`common_pid`): a measured
    /// task seen running where no switch put it had its switch-in go unrecorded.
    #[inline]
    fn seen_running(&mut self, cpu: usize, pid: i32, ts: u64) {
        let c = self.cpu(cpu);
        if c.curr.0 != pid {
            c.curr = (pid, Name::default());
        }
        if pid <= 0 {
            return;
        }
        if let Some(i) = self.live(pid) {
            self.tasks[i].last_ns = ts;
            if self.tasks[i].on_cpu.map(|x| x.0) != Some(cpu) {
                self.switched_in(i, cpu, ts, false);
            }
        }
    }

    /// `prev` (left in `prev_state`) switched out for `next` on `cpu` at `ts`.
    #[inline]
    fn switch(&mut self, cpu: usize, ts: u64, prev: Side, prev_state: i64, next: Side) {
        let last_out = {
            let c = self.cpu(cpu);
            c.stack.clear();
            c.timer = false;
            c.curr = (next.pid, next.comm);
            let gone = prev.pid > 0 && c.exiting == prev.pid;
            if gone {
                c.exiting = 0;
            }
            gone
        };
        // A task that exited is not named again (it wakes nobody any more).
        if self.names.len() < MAX_TASKS * 4 {
            if !last_out {
                self.names.insert(prev.pid, prev.comm);
            }
            self.names.insert(next.pid, next.comm);
        }
        if let Some(i) = self.live(prev.pid) {
            self.tasks[i].last_ns = ts;
            self.tasks[i].comm = prev.comm;
            self.switched_out(i, ts, prev_state, prev.prio);
        }
        if let Some(i) = self.task(next.pid, &next.comm, ts) {
            let t = &mut self.tasks[i];
            t.last_ns = ts;
            t.prio = next.prio;
            t.comm = next.comm;
            self.switched_in(i, cpu, ts, true);
        }
    }

    /// The task running on `cpu` (`waker_pid`) wakes `pid`, named `comm`, at `ts`.
    #[inline]
    fn waking(&mut self, cpu: usize, ts: u64, waker_pid: i32, (pid, comm): (i32, &Name)) {
        let Some(i) = self.task(pid, comm, ts) else {
            return;
        };
        let label = self.waker(cpu, waker_pid);
        // Woken while still on a CPU (it had not yet switched out to sleep): no wake-up to
        // time. Unless that CPU has been seen running another task since: then it left
        // without a recorded switch-out.
        if let Some((c, _)) = self.tasks[i].on_cpu {
            if self.cpus.get(c).is_none_or(|x| x.curr.0 == pid) {
                self.tasks[i].last_ns = ts;
                return;
            }
            self.tasks[i].on_cpu = None;
            self.tasks[i].undated = false;
        }
        let t = &mut self.tasks[i];
        t.last_ns = ts;
        if t.woken.is_some() {
            t.unmatched += 1;
        }
        t.preempted = None;
        t.woken = Some(ts);
        self.count_waker(i, label);
    }

    /// `pid` has run `runtime` ns by `ts` on `cpu`: dates its switch-in if it went untraced.
    #[inline]
    fn runtime(&mut self, cpu: usize, ts: u64, pid: i32, runtime: u64) {
        if let Some(i) = self.live(pid) {
            let t = &self.tasks[i];
            if t.undated && t.on_cpu.map(|x| x.0) == Some(cpu) {
                self.tasks[i].inferred += 1;
                self.switched_in(i, cpu, ts.saturating_sub(runtime), true);
            }
        }
    }

    /// `pid` exits on `cpu`: its next switch-out there is its last.
    #[inline]
    fn exit(&mut self, cpu: usize, ts: u64, pid: i32) {
        self.names.remove(&pid);
        // Not asked again: a tid reused is forked first (which asks again anyway).
        self.refused.remove(&pid);
        self.cpu(cpu).exiting = pid;
        if let Some(i) = self.live(pid) {
            self.tasks[i].exiting = true;
            self.tasks[i].last_ns = ts;
        }
    }

    /// `parent` made `child`: a tid seen before (exited, or its exit not recorded) is reused.
    #[inline]
    fn fork(&mut self, parent: i32, child: i32) {
        self.dead.remove(&child);
        self.refused.remove(&child);
        if let Some(i) = self.live.remove(&child) {
            self.tasks[i].exited = true;
        }
        self.chooser.forked(parent, child);
    }

    /// `pid` exec'd `comm`: its new name, and the chooser may want it now.
    #[inline]
    fn exec(&mut self, pid: i32, comm: Name) {
        if self.names.contains_key(&pid) {
            self.names.insert(pid, comm);
        }
        if let Some(i) = self.live(pid) {
            self.tasks[i].comm = comm;
        }
        self.refused.remove(&pid);
    }

    /// The kernel lost events before `ts` (on some CPU): a wake-up or preemption still
    /// waiting for its switch-in may have had it among them, so none is timed; each is counted
    /// as `unmatched` instead of growing into a delay that never was.
    pub(crate) fn lost(&mut self, ts: u64) {
        for t in &mut self.tasks {
            let pending = t.woken.is_some_and(|w| w <= ts) || t.preempted.is_some_and(|p| p <= ts);
            if pending {
                t.unmatched += 1;
                t.woken = None;
                t.preempted = None;
                t.undated = false;
            }
        }
    }

    /// Ends the replay: tasks still waiting for a CPU are marked, on-CPU time is closed at
    /// `end`, and wakers are sorted, most first.
    pub(crate) fn finish(&mut self, end: u64) {
        for t in &mut self.tasks {
            t.undated = false;
            if t.woken.take().is_some() || t.preempted.take().is_some() {
                t.pending_at_end = !t.exited;
            }
            if let Some((_, since)) = t.on_cpu.take() {
                t.run_ns += end.saturating_sub(since);
                t.runs += 1;
            }
            t.wakers
                .sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::sched::samples::FEW;

    /// Wants every task whose name starts with `w`; its process is itself.
    struct W;
    impl Chooser for W {
        fn wants(&mut self, tid: i32, comm: &Name) -> Option<Choice> {
            comm.as_str()
                .starts_with('w')
                .then_some(Choice { tgid: tid })
        }
        fn forked(&mut self, _: i32, _: i32) {}
    }

    fn n(s: &str) -> Name {
        Name::new(s.as_bytes())
    }

    fn sw(ts: u64, prev: (&str, i32, i64), next: (&str, i32)) -> Event {
        Event {
            ts,
            pid: prev.1,
            kind: Kind::Switch {
                prev_comm: n(prev.0),
                prev_pid: prev.1,
                prev_prio: 120,
                prev_state: prev.2,
                next_comm: n(next.0),
                next_pid: next.1,
                next_prio: if next.0 == "hog" { 0 } else { 120 },
            },
        }
    }

    fn wake(ts: u64, by: i32, who: (&str, i32)) -> Event {
        Event {
            ts,
            pid: by,
            kind: Kind::Waking {
                comm: n(who.0),
                pid: who.1,
            },
        }
    }

    #[test]
    fn wake_ups_preemptions_and_wakers_are_timed() {
        let mut t = Tracker::new(W, None, 1_000);
        // CPU 0 runs peer (5), which wakes w (7) sleeping; CPU 1 is busy with hog (9) until
        // 3000, then w runs; hog preempts it at 4000 for 2500 ns.
        t.event(1, &sw(10, ("swapper", 0, 0), ("hog", 9)));
        t.event(0, &sw(20, ("swapper", 0, 0), ("peer", 5)));
        t.event(0, &wake(1000, 5, ("w", 7)));
        t.event(1, &sw(3000, ("hog", 9, 1), ("w", 7)));
        t.event(1, &sw(4000, ("w", 7, 0), ("hog", 9)));
        t.event(1, &sw(6500, ("hog", 9, 1), ("w", 7)));
        // An IRQ on CPU 0 wakes it again after it slept.
        t.event(1, &sw(7000, ("w", 7, 1), ("swapper", 0)));
        t.event(
            0,
            &Event {
                ts: 8000,
                pid: 5,
                kind: Kind::IrqEntry {
                    irq: 25,
                    name: n("virtio0"),
                },
            },
        );
        t.event(0, &wake(8100, 5, ("w", 7)));
        t.event(
            0,
            &Event {
                ts: 8200,
                pid: 5,
                kind: Kind::IrqExit,
            },
        );
        t.event(1, &sw(8300, ("swapper", 0, 0), ("w", 7)));
        t.finish(9000);
        assert_eq!(t.tasks.len(), 1, "only w is measured");
        let w = &t.tasks[0];
        assert_eq!(w.wake.count(), 2);
        assert_eq!(w.wake.max(), 2000);
        assert_eq!(w.wake.sum(), 2000 + 200);
        assert_eq!((w.preempt.count(), w.preempt.max()), (1, 2500));
        assert_eq!(w.run_ns, 1000 + 500 + 700);
        assert_eq!(
            w.wakers,
            vec![("irq virtio0".into(), 1), ("task peer".into(), 1)]
        );
        // Delays at or over 1 µs go to attribution: the wake-up and the preemption.
        let d: Vec<(u64, u64, bool)> = t.delays.iter().map(|d| (d.from, d.to, d.wake)).collect();
        assert_eq!(d, vec![(1000, 3000, true), (4000, 6500, false)]);
    }

    #[test]
    fn a_reused_tid_is_a_new_task_and_the_old_one_keeps_its_figures() {
        let mut t = Tracker::new(W, None, u64::MAX);
        t.event(0, &wake(100, 0, ("w1", 7)));
        t.event(0, &sw(300, ("swapper", 0, 0), ("w1", 7)));
        t.event(
            0,
            &Event {
                ts: 400,
                pid: 7,
                kind: Kind::Exit { pid: 7 },
            },
        );
        t.event(0, &sw(450, ("w1", 7, 64), ("swapper", 0)));
        // Its last switch-out does not revive it; a fork of tid 7 is a new task.
        t.event(0, &sw(460, ("swapper", 0, 0), ("other", 3)));
        t.event(
            0,
            &Event {
                ts: 500,
                pid: 3,
                kind: Kind::Fork {
                    parent_pid: 3,
                    child_pid: 7,
                    child_comm: n("w2"),
                },
            },
        );
        t.event(0, &wake(600, 3, ("w2", 7)));
        t.event(0, &sw(650, ("other", 3, 1), ("w2", 7)));
        t.finish(700);
        assert_eq!(t.tasks.len(), 2);
        assert!(t.tasks[0].exited);
        assert_eq!(t.tasks[0].wake.max(), 200);
        assert_eq!(t.tasks[0].run_ns, 150);
        assert_eq!(t.tasks[1].comm.as_str(), "w2");
        assert_eq!(t.tasks[1].wake.max(), 50);
        assert!(!t.tasks[1].exited);
    }

    #[test]
    fn an_untraced_switch_in_is_dated_by_its_run_time() {
        let mut t = Tracker::new(W, None, u64::MAX);
        t.event(0, &wake(100, 0, ("w", 7)));
        // From idle, with no switch recorded: an IRQ sees w running, then its run time (900
        // ns since it was picked at 4100) is accounted at its switch-out.
        for (ts, kind) in [
            (4500, Kind::IrqExit),
            (
                5000,
                Kind::Runtime {
                    pid: 7,
                    runtime: 900,
                },
            ),
        ] {
            t.event(1, &Event { ts, pid: 7, kind });
        }
        t.event(1, &sw(5001, ("w", 7, 1), ("swapper", 0)));
        t.finish(7000);
        let w = &t.tasks[0];
        assert_eq!((w.wake.count(), w.wake.max(), w.inferred), (1, 4000, 1));
        assert_eq!(w.unmatched, 0);
    }

    #[test]
    fn a_missing_switch_in_is_counted_not_timed() {
        let mut t = Tracker::new(W, None, u64::MAX);
        t.event(0, &wake(100, 0, ("w", 7)));
        // w is seen running (an IRQ interrupts it) without a recorded switch-in.
        t.event(
            1,
            &Event {
                ts: 5000,
                pid: 7,
                kind: Kind::IrqExit,
            },
        );
        t.event(1, &sw(6000, ("w", 7, 1), ("swapper", 0)));
        t.finish(7000);
        let w = &t.tasks[0];
        assert_eq!((w.wake.count(), w.unmatched), (0, 1));
        assert_eq!(w.run_ns, 1000);
    }

    #[test]
    fn a_task_that_left_its_cpu_unrecorded_is_still_timed_when_woken() {
        let mut t = Tracker::new(W, None, u64::MAX);
        t.event(1, &sw(100, ("swapper", 0, 0), ("w", 7)));
        // Its switch-out to idle was not recorded; the idle CPU takes an IRQ.
        t.event(
            1,
            &Event {
                ts: 200,
                pid: 0,
                kind: Kind::IrqExit,
            },
        );
        t.event(0, &wake(300, 5, ("w", 7)));
        t.event(1, &sw(450, ("swapper", 0, 0), ("w", 7)));
        t.finish(500);
        assert_eq!((t.tasks[0].wake.count(), t.tasks[0].wake.max()), (1, 150));
        assert_eq!(t.tasks[0].wakers, vec![("task pid 5".into(), 1)]);
    }

    #[test]
    fn a_wake_up_pending_across_lost_events_is_not_timed() {
        let mut t = Tracker::new(W, None, u64::MAX);
        t.event(0, &wake(100, 5, ("w", 7)));
        t.lost(200);
        t.event(1, &sw(5_000_000, ("swapper", 0, 0), ("w", 7)));
        t.finish(5_000_100);
        assert_eq!((t.tasks[0].wake.count(), t.tasks[0].unmatched), (0, 1));
    }

    #[test]
    fn exited_tasks_are_forgotten_and_their_figures_kept() {
        let mut t = Tracker::new(W, None, u64::MAX);
        let ev = |ts: u64, pid: i32, kind: Kind| Event { ts, pid, kind };
        // 4000 tasks over 40 s, measured (w) and not (u), each forked, woken, run, exited.
        for k in 0..4000 {
            let (tid, ts) = (1000 + k, 10_000_000 * k as u64);
            let name = if k % 2 == 0 { "w" } else { "u" };
            let fork = Kind::Fork {
                parent_pid: 1,
                child_pid: tid,
                child_comm: n(name),
            };
            t.event(0, &ev(ts, 1, fork));
            t.event(0, &wake(ts + 10, 1, (name, tid)));
            t.event(1, &sw(ts + 20, ("swapper", 0, 0), (name, tid)));
            t.event(1, &ev(ts + 30, tid, Kind::Exit { pid: tid }));
            t.event(1, &sw(ts + 40, (name, tid, 0x80), ("swapper", 0)));
        }
        t.finish(40_000_000_000);
        assert_eq!(t.tasks.len(), 2000, "every measured task keeps its figures");
        assert!(t.tasks.iter().all(|x| x.exited && x.wake.count() == 1));
        // What is kept besides follows the tasks that exited in the last second (100 of
        // them), not the 4000.
        assert!(t.state_len() < 400, "{}", t.state_len());
    }

    #[test]
    fn only_measured_cpus_count_and_samples_grow_into_a_histogram() {
        let mut t = Tracker::new(W, Some(vec![1]), u64::MAX);
        t.event(0, &wake(100, 0, ("w", 7)));
        t.event(0, &sw(300, ("swapper", 0, 0), ("w", 7)));
        t.finish(400);
        assert_eq!(t.tasks[0].wake.count(), 0, "CPU 0 is not measured");
        let mut s = Samples::default();
        for i in 0..(FEW as u64 + 10) {
            s.record(i);
        }
        assert!(matches!(s, Samples::Many(_)));
        assert_eq!(s.count(), FEW as u64 + 10);
        assert_eq!(s.max(), FEW as u64 + 9);
        assert_eq!(s.recorder().count, FEW as u64 + 10);
        // Summarised without a recorder while few, from the task's own once many.
        let shape = latlab_core::stats::LatHistogram::new();
        let few = Samples::Few(vec![7, 5]);
        let r = few.recorder();
        assert_eq!(few.summarise(&shape), (r.summary(), r.hist.to_data()));
        let r = s.recorder();
        assert_eq!(s.summarise(&shape), (r.summary(), r.hist.to_data()));
    }
}
