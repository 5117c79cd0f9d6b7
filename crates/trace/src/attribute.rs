//! Why one wake-up was late: replays a CPU's events from the last context switch before the
//! expected wake-up to the actual one, and charges every nanosecond of the latency to the
//! innermost context running then (an IRQ inside a softirq inside a thread counts once, as the
//! IRQ): IRQs, softirqs, other threads, the measured thread itself (own time), an idle CPU
//! (nothing visible ran: on a VM the hypervisor, else SMI/NMI or idle exit), or time before the
//! trace could see. rtla's timerlat auto-analysis has the same shape, from timerlat events.

use super::event::{softirq_name, Event, Kind, Name};
use components::components;
#[cfg(test)]
use components::NAMED_THREADS;
use latlab_core::result::trace::{Attribution, IRQS_OFF_OR_HOST};
use repair::{repaired, Merged};
use slots::{Slots, SLOTS};

mod components;
mod repair;
mod slots;

/// A task as a person reads it: `comm:pid RT 99`, `comm:pid` for a normal one.
pub(crate) fn task_label(comm: &Name, pid: i32, prio: i32) -> String {
    use std::fmt::Write;
    let mut s = String::with_capacity(32);
    s.push_str(&comm.as_str());
    let _ = write!(s, ":{pid}");
    match prio {
        p if p < 0 => s.push_str(" DL"),
        p if p < 100 => {
            let _ = write!(s, " RT {}", 99 - p);
        }
        _ => {}
    }
    s
}

/// An interrupt context open: an IRQ (number, -1 for a vector; name) or a softirq.
#[derive(Clone, Copy)]
enum Ctx {
    Irq(i32, Name),
    Softirq(u32),
}

/// How an IRQ is named: `name (irq N)`, or a vector's name.
fn irq_label(irq: i32, name: &Name) -> String {
    if irq >= 0 {
        format!("{} (irq {irq})", name.as_str())
    } else {
        name.as_str().into_owned()
    }
}

/// How to name time nothing visible explains.
#[derive(Debug, Clone, Default)]
pub(crate) struct Note {
    /// What it means here (e.g. "hypervisor/SMI/NMI (this is a VM)").
    pub(crate) text: String,
    /// The measured thread spins (noise): its own time inside a gap is not its own doing,
    /// so it is `unattributed` rather than `self`.
    pub(crate) spinner: bool,
}

/// Where the replay stands with the measured thread's wake-up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Wake {
    /// Not yet woken (its `sched_waking` comes later in the window).
    Pending,
    /// Woken.
    Done,
    /// No traced wake-up in the window: unknown.
    Unknown,
}

/// The task running, as far as the events show.
type Task = Option<(Name, i32, i32)>;

/// What a stretch of time is charged to, before it is put in words (once per component, not
/// per stretch). Two charges are one component exactly when their words are the same: a
/// task's priority counts by the class [`task_label`] shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Charge {
    /// Another thread ran (`thread`, its label).
    Thread(Name, i32, i32),
    /// The measured thread's own time (`self`).
    Own(Name, i32, i32),
    /// An IRQ (`irq`).
    Irq(i32, Name),
    /// A softirq (`softirq`).
    Softirq(u32),
    /// Before the trace's first event (`unknown`).
    Unknown,
    /// Idle before the wake-up (`idle`, the note).
    IdleBefore,
    /// Idle after it (`idle`).
    IdleAfter,
    /// A spinner's own time (`unattributed`, the note).
    Unattributed,
    /// The timer had not fired (`timer`).
    Timer,
}

/// A priority as [`task_label`] shows it: deadline, a real-time priority, or normal.
fn prio_class(prio: i32) -> i32 {
    match prio {
        p if p < 0 => -1,
        p if p < 100 => p,
        _ => 100,
    }
}

impl Charge {
    /// The component's kind and name.
    fn words(&self, note: &Note) -> (String, String) {
        let (k, n) = match self {
            Charge::Thread(c, p, pr) => ("thread", task_label(c, *p, *pr)),
            Charge::Own(c, p, pr) => ("self", format!("{} (own time)", task_label(c, *p, *pr))),
            Charge::Irq(irq, n) => ("irq", irq_label(*irq, n)),
            Charge::Softirq(v) => ("softirq", softirq_name(*v).into()),
            Charge::Unknown => ("unknown", NO_TRACE.into()),
            Charge::IdleBefore => ("idle", note.text.clone()),
            Charge::IdleAfter => ("idle", "CPU idle after the wake-up".into()),
            Charge::Unattributed => ("unattributed", note.text.clone()),
            Charge::Timer => ("timer", IRQS_OFF_OR_HOST.into()),
        };
        (k.into(), n)
    }
}

const NO_TRACE: &str = "before the trace's first event on this CPU";
const NO_SWITCH: &str = "the switch into the measured thread is missing from the trace (the \
     kernel dropped it); the time after the last event is charged to the task seen before";

/// Attributes the latency `expected..actual` on one CPU from its events (oldest first, up to
/// `actual`). `me` is the measured thread's id (None: the last task switched in).
/// `idle_note` names what an idle CPU's delay means here (e.g. the hypervisor).
///
/// The kernel occasionally records no `sched_switch` for a switch (seen on 6.18: about 1 in
/// 60 of a thread's switch-ins); each event's `common_pid` then corrects the running task, and
/// the stretch after the last event, when the measured thread was evidently not shown running,
/// is charged to the task seen last (the likeliest) with a note saying so.
#[cfg(test)]
pub(crate) fn attribute(
    events: &[Event],
    expected: u64,
    actual: u64,
    me: Option<i32>,
    idle_note: &Note,
) -> Attribution {
    attribute_window(Window(events, &[]), expected, actual, me, idle_note)
}

/// A CPU's events, oldest first, in up to two runs (the halves of the flight recorder's ring):
/// attributed where they are kept, not copied out.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Window<'a>(pub(crate) &'a [Event], pub(crate) &'a [Event]);

impl<'a> Window<'a> {
    /// The events in order.
    pub(crate) fn iter(
        &self,
    ) -> std::iter::Chain<std::slice::Iter<'a, Event>, std::slice::Iter<'a, Event>> {
        self.0.iter().chain(self.1.iter())
    }
}

/// [`attribute`] of the events of `w`.
pub(crate) fn attribute_window(
    w: Window<'_>,
    expected: u64,
    actual: u64,
    me: Option<i32>,
    idle_note: &Note,
) -> Attribution {
    let added = repaired(w.iter());
    if added.is_empty() {
        return attribute_in(w.iter(), expected, actual, me, idle_note);
    }
    if w.iter().is_sorted_by_key(|e| e.ts) {
        // Both in time order: merged as they are read, a put-back switch after the records it
        // ties with (what a stable sort of the two gives).
        let merged = Merged {
            a: w.iter().peekable(),
            b: added.iter().peekable(),
        };
        return attribute_in(merged, expected, actual, me, idle_note);
    }
    let mut all: Vec<Event> = w.iter().cloned().chain(added).collect();
    all.sort_by_key(|e| e.ts);
    attribute_in(all.iter(), expected, actual, me, idle_note)
}

/// What a stretch of time is charged to during the replay: a task's slot, or a charge that
/// names no task.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Stretch {
    Thread(u32),
    Own(u32),
    Other(Charge),
}

/// [`label`] by slot: the same decisions, on the pid alone (names come after the replay).
fn stretch_of(
    stack: &[Ctx],
    task: Option<u32>,
    slots: &Slots,
    me: Option<i32>,
    woken: Wake,
    note: &Note,
) -> Stretch {
    let pid = task.map(|i| slots.tasks[i as usize].0);
    if let (None, Some(i), Some(p)) = (stack.last(), task, pid) {
        if Some(p) != me && p != 0 && (woken != Wake::Pending || note.spinner) {
            return Stretch::Thread(i);
        }
    }
    Stretch::Other(match stack.last() {
        Some(Ctx::Irq(irq, n)) => Charge::Irq(*irq, *n),
        Some(Ctx::Softirq(v)) => Charge::Softirq(*v),
        None => match (task, pid) {
            (Some(_), Some(0)) if woken != Wake::Done => Charge::IdleBefore,
            (Some(_), Some(0)) => Charge::IdleAfter,
            (Some(_), Some(p)) if Some(p) == me && note.spinner => Charge::Unattributed,
            (Some(i), Some(p)) if Some(p) == me => return Stretch::Own(i),
            // The timer has not fired yet: the task did not hold the woken thread off; the
            // IRQ came late (interrupts off, or the host did not run the vCPU). Never charged
            // to the task that happened to be current (the spike's `blocking` names it).
            (Some(_), _) if woken == Wake::Pending && !note.spinner => Charge::Timer,
            (Some(i), _) => return Stretch::Thread(i),
            (None, _) => Charge::Unknown,
        },
    })
}

/// [`attribute`] of `events`, read in the order given (the window's and the switches put back,
/// already merged).
fn attribute_in<'a>(
    events: impl Iterator<Item = &'a Event> + Clone,
    expected: u64,
    actual: u64,
    me: Option<i32>,
    idle_note: &Note,
) -> Attribution {
    let latency = actual.saturating_sub(expected);
    if latency == 0 {
        return Attribution::default();
    }
    let (me, seen_waking) = measured_thread(events.clone(), expected, me);
    let first = events.clone().next();
    let mut r = Replay::new(first, (expected, actual), me, seen_waking, idle_note);
    for e in events {
        r.step(e);
    }
    r.finish(latency)
}

/// One pass before the replay: the measured thread (`me`, or None: the last task switched
/// in) and whether its wake-up at or after `expected` is in the window.
fn measured_thread<'a>(
    events: impl Iterator<Item = &'a Event> + Clone,
    expected: u64,
    me: Option<i32>,
) -> (Option<i32>, bool) {
    let mut last_in = None;
    let mut seen_waking = false;
    for e in events.clone() {
        match e.kind {
            Kind::Switch { next_pid, .. } => last_in = Some(next_pid),
            Kind::Waking { pid, .. } if e.ts >= expected && me == Some(pid) => seen_waking = true,
            _ => {}
        }
    }
    if me.is_none() && last_in.is_some() {
        seen_waking = events.clone().any(
            |e| matches!(e.kind, Kind::Waking { pid, .. } if Some(pid) == last_in && e.ts >= expected),
        );
    }
    (me.or(last_in), seen_waking)
}

/// The time charged to what names no task, in the order first charged.
#[derive(Default)]
struct Others {
    charged: Vec<(Charge, u64)>,
    /// Consecutive stretches are mostly charged to the same thing: no lookup then.
    last: Option<(Charge, usize)>,
}

impl Others {
    /// `ns` more charged to `k`.
    #[inline]
    fn add(&mut self, k: Charge, ns: u64) {
        if let Some((_, i)) = self.last.filter(|(lk, _)| *lk == k) {
            self.charged[i].1 += ns;
            return;
        }
        let i = match self.charged.iter().position(|o| o.0 == k) {
            Some(i) => i,
            None => {
                self.charged.push((k, 0));
                self.charged.len() - 1
            }
        };
        self.charged[i].1 += ns;
        self.last = Some((k, i));
    }
}

/// Where the replay of one window stands: what runs (the task, the interrupt contexts open
/// inside it), how far the measured thread's wake-up has come, and the time charged so far
/// up to `t`.
struct Replay<'n> {
    /// The expected wake-up (ns): where the latency begins.
    expected: u64,
    /// The actual wake-up (ns): where it ends.
    actual: u64,
    /// The measured thread's id.
    me: Option<i32>,
    note: &'n Note,
    /// What a switch put back by `repaired` names its tasks.
    nobody: Name,
    /// The timer interrupt's vector (x86's `local_timer`).
    local_timer: Name,
    slots: Slots,
    /// The running task's slot, as far as the events show.
    task: Option<u32>,
    /// The interrupt contexts open, innermost last.
    stack: Vec<Ctx>,
    others: Others,
    woken: Wake,
    /// The latest hrtimer callback's start.
    last_timer: Option<u64>,
    /// The timer interrupt's entry: the hrtimer's start where its own event is not traced
    /// (attribution alone leaves it off when the vectors are traced).
    last_timer_irq: Option<u64>,
    /// What ran when the latency began (the context, the task's slot): what `blocking` names.
    blocked: Option<(Option<Ctx>, Option<u32>)>,
    /// Time up to here is charged.
    t: u64,
    out: Attribution,
}

impl<'n> Replay<'n> {
    /// A replay of the window `(expected, actual)` whose events begin with `first`; the time
    /// before that is charged as unseen.
    fn new(
        first: Option<&Event>,
        (expected, actual): (u64, u64),
        me: Option<i32>,
        seen_waking: bool,
        note: &'n Note,
    ) -> Replay<'n> {
        // The last window's tables, emptied: their memory is reused (a replay attributes
        // thousands of windows, each with hundreds of tasks).
        let mut slots = SLOTS.with(|c| c.take());
        slots.clear();
        let task = first.map(|e| slots.slot(e.pid));
        let mut r = Replay {
            expected,
            actual,
            me,
            note,
            nobody: Name::new(b"?"),
            local_timer: Name::new(b"local_timer"),
            slots,
            task,
            stack: Vec::new(),
            others: Others::default(),
            // Without a traced wake-up of the thread (no id, or the event was lost) every
            // stretch counts as after it: no `timer` component then.
            woken: if seen_waking {
                Wake::Pending
            } else {
                Wake::Unknown
            },
            last_timer: None,
            last_timer_irq: None,
            blocked: None,
            t: expected,
            out: Attribution::default(),
        };
        // Time before the first event is not seen.
        if let Some(f) = first {
            if f.ts > expected {
                r.charge(Stretch::Other(Charge::Unknown), f.ts.min(actual) - expected);
                r.t = f.ts;
            }
        }
        r
    }

    /// `ns` more charged to `k`.
    #[inline]
    fn charge(&mut self, k: Stretch, ns: u64) {
        if ns == 0 {
            return;
        }
        match k {
            Stretch::Thread(i) => self.slots.tasks[i as usize].3 += ns,
            Stretch::Own(i) => self.slots.tasks[i as usize].4 += ns,
            Stretch::Other(k) => self.others.add(k, ns),
        }
    }

    /// What the time from `t` on is charged to, as things stand.
    #[inline]
    fn stretch(&self) -> Stretch {
        stretch_of(
            &self.stack,
            self.task,
            &self.slots,
            self.me,
            self.woken,
            self.note,
        )
    }

    /// The next event: the time up to it charged, then what it changes.
    #[inline]
    fn step(&mut self, e: &Event) {
        if e.ts > self.actual {
            // Past the wake-up: read for the names alone.
            self.slots.switch(&e.kind, self.nobody);
            return;
        }
        if self.blocked.is_none() && e.ts > self.expected {
            self.blocked = Some((self.stack.last().copied(), self.task));
        }
        if e.ts > self.t {
            let k = self.stretch();
            self.charge(k, e.ts - self.t);
            self.t = e.ts;
        }
        // A task context other than the one the switches said: a switch went unrecorded.
        if !matches!(e.kind, Kind::Switch { .. })
            && self
                .task
                .is_some_and(|i| self.slots.tasks[i as usize].0 != e.pid)
        {
            self.task = Some(self.slots.slot(e.pid));
        }
        self.apply(e);
    }

    /// What `e` changes: the task running, the contexts open, the timer's and the wake-up's
    /// times.
    #[inline]
    fn apply(&mut self, e: &Event) {
        let (expected, me) = (self.expected, self.me);
        match e.kind {
            Kind::Switch { next_pid, .. } => {
                // Named with the latest name and priority the window shows for it (a
                // `chrt` switched in at 120 that raised itself to FIFO 99 and exec'd `sh`
                // is switched out as `sh` at 0): the policy in force while it held the CPU.
                self.task = self.slots.switch(&e.kind, self.nobody);
                self.stack.clear();
                if Some(next_pid) == me && e.ts >= expected {
                    self.out.switch_in_ns = Some(e.ts - expected);
                }
            }
            Kind::IrqEntry { irq, name } => {
                if irq == -1 && name == self.local_timer {
                    self.last_timer_irq = Some(e.ts);
                }
                self.stack.push(Ctx::Irq(irq, name))
            }
            Kind::IrqExit => {
                if let Some(i) = self.stack.iter().rposition(|c| matches!(c, Ctx::Irq(..))) {
                    self.stack.truncate(i);
                }
            }
            Kind::SoftirqEntry { vec } => self.stack.push(Ctx::Softirq(vec)),
            Kind::SoftirqExit => {
                if let Some(i) = self
                    .stack
                    .iter()
                    .rposition(|c| matches!(c, Ctx::Softirq(_)))
                {
                    self.stack.truncate(i);
                }
            }
            Kind::TimerEntry { .. } => self.last_timer = Some(e.ts),
            Kind::TimerExit
            | Kind::Exec { .. }
            | Kind::Fork { .. }
            | Kind::Nmi { .. }
            | Kind::Migrate { .. }
            | Kind::Runtime { .. }
            | Kind::Exit { .. } => {}
            // The stack the `stacktrace` trigger took at the thread's wake-up.
            Kind::Stack { ref frames } => {
                if self.woken == Wake::Done && self.out.stack_addrs.is_empty() {
                    self.out.stack_addrs = frames.to_vec();
                }
            }
            Kind::Waking { pid, .. } => {
                if Some(pid) == me && e.ts >= expected && self.out.timer_delay_ns.is_none() {
                    self.woken = Wake::Done;
                    self.out.timer_delay_ns = self
                        .last_timer
                        .filter(|&x| x >= expected)
                        .or(self.last_timer_irq.filter(|&x| x >= expected))
                        .map(|x| x - expected)
                        .or(Some(e.ts - expected));
                }
            }
        }
    }

    /// The attribution, once every event is read: what blocked, the time after the last event
    /// charged, and the charges as components of the `latency`.
    fn finish(mut self, latency: u64) -> Attribution {
        let (at, holder) = self
            .blocked
            .unwrap_or((self.stack.last().copied(), self.task));
        self.out.blocking = Some(blocking(at, holder.map(|i| self.slots.task(i))));
        if self.actual > self.t {
            if self
                .task
                .is_some_and(|i| Some(self.slots.tasks[i as usize].0) != self.me)
                && self.stack.is_empty()
                && self.woken == Wake::Done
            {
                self.out.notes.push(NO_SWITCH.into());
            }
            let k = self.stretch();
            self.charge(k, self.actual - self.t);
        }
        let charged = self.charged();
        self.out.components = components(charged, latency, self.note);
        SLOTS.with(|c| c.replace(self.slots));
        self.out
    }

    /// Every charge with its time, and for another thread the task to name.
    fn charged(&mut self) -> Vec<(Charge, u64, Task)> {
        let mut charged: Vec<(Charge, u64, Task)> = std::mem::take(&mut self.others.charged)
            .into_iter()
            .map(|(k, ns)| (k, ns, None))
            .collect();
        for &(pid, c, pr, thread, own) in &self.slots.tasks {
            if thread > 0 {
                charged.push((
                    Charge::Thread(c, pid, prio_class(pr)),
                    thread,
                    Some((c, pid, pr)),
                ));
            }
            if own > 0 {
                charged.push((Charge::Own(c, pid, prio_class(pr)), own, None));
            }
        }
        charged
    }
}

/// What held the CPU when the latency began, in words (the spike's `blocking`).
fn blocking(at: Option<Ctx>, task: Task) -> String {
    match (at.as_ref(), &task) {
        (Some(Ctx::Irq(irq, n)), _) => format!("irq {}", irq_label(*irq, n)),
        (Some(Ctx::Softirq(v)), _) => format!("softirq {}", softirq_name(*v)),
        (None, None) => "unknown".into(),
        (None, Some((_, 0, _))) => "idle".into(),
        (None, Some((c, p, pr))) => task_label(c, *p, *pr),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn note(t: &str) -> Note {
        Note {
            text: t.into(),
            spinner: false,
        }
    }

    fn sw(ts: u64, prev: (&str, i32, i32), next: (&str, i32, i32)) -> Event {
        Event {
            ts,
            pid: prev.1,
            kind: Kind::Switch {
                prev_comm: Name::new(prev.0.as_bytes()),
                prev_pid: prev.1,
                prev_prio: prev.2,
                prev_state: 0,
                next_comm: Name::new(next.0.as_bytes()),
                next_pid: next.1,
                next_prio: next.2,
            },
        }
    }

    /// An event in the context of task `pid`.
    fn ev(ts: u64, pid: i32, kind: Kind) -> Event {
        Event { ts, pid, kind }
    }

    fn irq(name: &str) -> Kind {
        Kind::IrqEntry {
            irq: -1,
            name: Name::new(name.as_bytes()),
        }
    }

    fn waking(ts: u64, ctx: i32, pid: i32) -> Event {
        ev(
            ts,
            ctx,
            Kind::Waking {
                comm: Name::new(b"T0"),
                pid,
            },
        )
    }

    #[test]
    fn without_the_hrtimer_events_the_timer_interrupt_dates_the_timer() {
        // As below, traced as attribution alone traces x86: no hrtimer entry or exit.
        let evs = vec![
            sw(0, ("swapper/1", 0, 120), ("inject", 42, 0)),
            ev(1005, 42, irq("local_timer")),
            waking(1012, 42, 7),
            ev(1020, 42, Kind::IrqExit),
            sw(2000, ("inject", 42, 0), ("T0", 7, 4)),
        ];
        let a = attribute(&evs, 1000, 2010, Some(7), &note("vm"));
        assert_eq!(a.timer_delay_ns, Some(5));
        assert_eq!(a.components[0].name, "inject:42 RT 99");
        let late = a.components.iter().find(|c| c.kind == "timer").unwrap();
        assert_eq!(late.ns, 5);
        // Another interrupt is not the timer's: the waking dates it then.
        let mut other = evs.clone();
        other[1] = ev(1005, 42, irq("call_function"));
        let a = attribute(&other, 1000, 2010, Some(7), &note("vm"));
        assert_eq!(a.timer_delay_ns, Some(12));
    }

    #[test]
    fn a_higher_priority_thread_holds_the_cpu() {
        // inject (RT 99) runs from 0 to 2000; the timer fires at 1010 inside it; the measured
        // thread (pid 7) is switched in at 2000 and reads the clock at 2010.
        let evs = vec![
            sw(0, ("swapper/1", 0, 120), ("inject", 42, 0)),
            ev(1005, 42, irq("local_timer")),
            ev(1010, 42, Kind::TimerEntry { function: 1 }),
            waking(1012, 42, 7),
            ev(1015, 42, Kind::TimerExit),
            ev(1020, 42, Kind::IrqExit),
            sw(2000, ("inject", 42, 0), ("T0", 7, 4)),
        ];
        let a = attribute(&evs, 1000, 2010, Some(7), &note("vm"));
        assert_eq!(a.components[0].kind, "thread");
        assert_eq!(a.components[0].name, "inject:42 RT 99");
        let t = a.components[0].task.as_ref().unwrap();
        assert_eq!((t.pid, t.comm.as_str(), t.prio), (42, "inject", 0));
        assert_eq!(latlab_core::result::trace::policy_label(t.prio), "RT 99");
        assert_eq!(a.components[0].ns, 980);
        let late = a.components.iter().find(|c| c.kind == "timer").unwrap();
        assert_eq!((late.ns, late.name.as_str()), (5, IRQS_OFF_OR_HOST));
        assert!(late.task.is_none() && late.group.is_none());
        let total: u64 = a.components.iter().map(|c| c.ns).sum();
        assert_eq!(total, 1010);
        assert_eq!(a.blocking.as_deref(), Some("inject:42 RT 99"));
        assert_eq!(a.timer_delay_ns, Some(10));
        assert_eq!(a.switch_in_ns, Some(1000));
        let irq = a.components.iter().find(|c| c.kind == "irq").unwrap();
        assert_eq!((irq.name.as_str(), irq.ns), ("local_timer", 15));
        let me = a.components.iter().find(|c| c.kind == "self").unwrap();
        assert_eq!(me.ns, 10);
        // Without the thread id, the last task switched in is taken for it.
        assert_eq!(attribute(&evs, 1000, 2010, None, &note("vm")), a);
        // A task switched in at a normal priority that raised itself (chrt) and exec'd is
        // named as it was switched out: the policy it held the CPU at.
        let evs = vec![
            sw(0, ("swapper/1", 0, 120), ("chrt", 42, 120)),
            sw(2000, ("sh", 42, 0), ("T0", 7, 4)),
        ];
        let a = attribute(&evs, 1000, 2010, Some(7), &note("vm"));
        assert_eq!(a.components[0].name, "sh:42 RT 99");
    }

    #[test]
    fn slots_keep_each_pid_through_collisions_growth_and_windows() {
        let mut s = Slots::default();
        for round in 0..3 {
            s.clear();
            // Pids that share their low bits, and a run of neighbours.
            let pids: Vec<i32> = (0..700).map(|i| i * 256 + round).chain(5..900).collect();
            let first: Vec<u32> = pids.iter().map(|&p| s.slot(p)).collect();
            let again: Vec<u32> = pids.iter().map(|&p| s.slot(p)).collect();
            assert_eq!(first, again);
            let distinct: std::collections::HashSet<i32> = pids.iter().copied().collect();
            assert_eq!(s.tasks.len(), distinct.len());
            for (&p, &i) in pids.iter().zip(&first) {
                assert_eq!(s.tasks[i as usize].0, p);
            }
        }
        s.clear();
        assert!(s.tasks.is_empty());
        assert_eq!(s.slot(256), 0);
    }

    #[test]
    fn threads_beyond_the_largest_are_summed_per_command() {
        // The measured thread (pid 1) is woken at 1000; then 20 `hack` threads run 10, 20, ...
        // 200 ns each, and two `oth` threads 5 and 6 ns; then it is switched in.
        let mut evs = vec![sw(900, ("x", 50, 120), ("y", 51, 120)), waking(1000, 51, 1)];
        let mut t = 1000;
        let mut prev = ("y", 51, 120);
        let runs: Vec<(&str, i32, u64)> = (0..20)
            .map(|i| ("hack", 100 + i, 10 * (i as u64 + 1)))
            .chain([("oth", 200, 5), ("oth", 201, 6)])
            .collect();
        for &(comm, pid, ns) in &runs {
            evs.push(sw(t, prev, (comm, pid, 120)));
            prev = (comm, pid, 120);
            t += ns;
        }
        evs.push(sw(t, prev, ("me", 1, 120)));
        let a = attribute(&evs, 1000, t, Some(1), &note("vm"));
        let named: Vec<_> = a
            .components
            .iter()
            .filter(|c| c.kind == "thread" && c.folded == 0)
            .collect();
        assert_eq!(named.len(), NAMED_THREADS);
        // The 16 largest by name: hack:104 .. hack:119.
        assert!(named.iter().all(|c| c.task.as_ref().unwrap().pid >= 104));
        let hack = a.components.iter().find(|c| c.folded == 4).unwrap();
        assert_eq!(hack.ns, 10 + 20 + 30 + 40);
        assert_eq!(hack.name, "hack:103 and 3 more hack threads");
        assert_eq!(hack.task.as_ref().unwrap().pid, 103);
        let oth = a.components.iter().find(|c| c.folded == 2).unwrap();
        assert_eq!(
            (oth.ns, oth.name.as_str()),
            (11, "oth:201 and 1 more oth thread")
        );
        // Nothing is lost: the components still add up to the latency.
        let total: u64 = a.components.iter().map(|c| c.ns).sum();
        assert_eq!(total, t - 1000);
        // Largest first.
        assert!(a.components.windows(2).all(|w| w[0].ns >= w[1].ns));
    }

    #[test]
    fn many_commands_beyond_the_largest_are_each_summed() {
        // 16 large threads, then 40 commands of two small threads each (the map's path).
        let mut evs = vec![sw(900, ("x", 50, 120), ("y", 51, 120)), waking(1000, 51, 1)];
        let (mut t, mut prev) = (1000, ("y".to_string(), 51, 120));
        let mut runs: Vec<(String, i32, u64)> =
            (0..16).map(|i| ("big".into(), 100 + i, 1000)).collect();
        for c in 0..40 {
            runs.push((format!("c{c}"), 200 + 2 * c, 3));
            runs.push((format!("c{c}"), 201 + 2 * c, 4));
        }
        for (comm, pid, ns) in &runs {
            evs.push(sw(t, (&prev.0, prev.1, prev.2), (comm, *pid, 120)));
            prev = (comm.clone(), *pid, 120);
            t += ns;
        }
        evs.push(sw(t, (&prev.0, prev.1, prev.2), ("me", 1, 120)));
        let a = attribute(&evs, 1000, t, Some(1), &note("vm"));
        let folds: Vec<_> = a.components.iter().filter(|c| c.folded > 0).collect();
        assert_eq!(folds.len(), 40);
        assert!(folds.iter().all(|c| c.folded == 2 && c.ns == 7));
        let total: u64 = a.components.iter().map(|c| c.ns).sum();
        assert_eq!(total, t - 1000);
    }

    #[test]
    fn nested_irq_in_softirq_counts_once() {
        let evs = vec![
            sw(0, ("x", 3, 120), ("swapper/0", 0, 120)),
            ev(100, 0, Kind::SoftirqEntry { vec: 3 }),
            ev(
                150,
                0,
                Kind::IrqEntry {
                    irq: 25,
                    name: Name::new(b"virtio0"),
                },
            ),
            ev(170, 0, Kind::IrqExit),
            ev(300, 0, Kind::SoftirqExit),
            sw(300, ("swapper/0", 0, 120), ("T0", 7, 4)),
        ];
        let a = attribute(&evs, 50, 310, Some(7), &note("hypervisor"));
        let get = |k: &str| a.components.iter().find(|c| c.kind == k).unwrap();
        assert_eq!(get("softirq").ns, 180);
        assert_eq!(get("softirq").name, "NET_RX");
        assert_eq!(get("irq").ns, 20);
        assert_eq!(get("irq").name, "virtio0 (irq 25)");
        assert_eq!(get("idle").ns, 50);
        assert_eq!(get("idle").name, "hypervisor");
        assert_eq!(a.blocking.as_deref(), Some("idle"));
        let share: f64 = a.components.iter().map(|c| c.share).sum();
        assert!((share - 1.0).abs() < 1e-9);
    }

    #[test]
    fn no_events_before_the_window_is_unknown() {
        let evs = vec![sw(500, ("swapper/0", 0, 120), ("T0", 7, 4))];
        let a = attribute(&evs, 100, 600, Some(7), &note("vm"));
        let u = a.components.iter().find(|c| c.kind == "unknown").unwrap();
        assert_eq!((u.ns, u.name.as_str()), (400, NO_TRACE));
        let a = attribute(&[], 100, 600, Some(7), &note("vm"));
        assert_eq!(a.components[0].kind, "unknown");
        assert_eq!(a.components[0].ns, 500);
    }

    #[test]
    fn a_switch_in_from_idle_that_was_not_traced_is_put_back_from_run_time() {
        // CPU idle; hog (RT 99) is picked at 150 without a recorded switch; T0 (7) is woken
        // at 200 from another CPU; hog's run time (1850 ns) is accounted at its switch-out to
        // T0 at 2000.
        let evs = vec![
            sw(0, ("T0", 7, 120), ("swapper/1", 0, 120)),
            // The timer IRQ that woke hog ends after the pick its run time dates.
            ev(140, 0, Kind::TimerExit),
            ev(160, 0, Kind::IrqExit),
            ev(
                2000,
                9,
                Kind::Runtime {
                    pid: 9,
                    runtime: 1850,
                },
            ),
            sw(2000, ("hog", 9, 0), ("T0", 7, 120)),
        ];
        let a = attribute(&evs, 200, 2000, Some(7), &note("vm"));
        let t = &a.components[0];
        assert_eq!((t.kind.as_str(), t.ns), ("thread", 1800), "{a:?}");
        // The put-back switch goes after the IRQ exit it ties with, as a stable sort puts it.
        let added = repaired(evs.iter());
        assert_eq!(added.len(), 1);
        let merged: Vec<&Event> = Merged {
            a: evs.iter().peekable(),
            b: added.iter().peekable(),
        }
        .collect();
        assert_eq!(merged.len(), evs.len() + 1);
        assert_eq!(merged[3].ts, 160);
        assert!(matches!(merged[3].kind, Kind::Switch { next_pid: 9, .. }));
        assert!(matches!(merged[2].kind, Kind::IrqExit));
        // A window in two runs (the ring's halves) reads as one.
        for k in 0..=evs.len() {
            let w = Window(&evs[..k], &evs[k..]);
            assert_eq!(attribute_window(w, 200, 2000, Some(7), &note("vm")), a);
        }
        assert_eq!(t.name, "hog:9 RT 99");
        assert!(a.components.iter().all(|c| c.kind != "idle"), "{a:?}");
    }

    #[test]
    fn an_unrecorded_switch_is_not_charged_to_the_previous_task() {
        // cargo runs; the timer wakes T0 (pid 7) at 120; the switch cargo -> T0 was not
        // recorded; T0 reads the clock at 400.
        let evs = vec![
            sw(0, ("swapper/0", 0, 120), ("cargo", 50, 120)),
            ev(110, 50, irq("local_timer")),
            waking(120, 50, 7),
            ev(130, 50, Kind::IrqExit),
        ];
        let a = attribute(&evs, 100, 400, Some(7), &note("vm"));
        let get = |k: &str| a.components.iter().find(|c| c.kind == k).unwrap();
        assert_eq!(get("thread").ns, 270);
        assert_eq!(get("timer").ns, 10);
        assert_eq!(get("thread").name, "cargo:50");
        assert_eq!(a.notes, vec![NO_SWITCH.to_string()]);
        assert_eq!(a.switch_in_ns, None);
        // A later event in another task's context corrects the running task.
        assert!(attribute(&evs, 100, 140, Some(7), &note("vm")).notes.len() == 1);
        let evs = vec![
            sw(0, ("swapper/0", 0, 120), ("cargo", 50, 120)),
            ev(200, 7, Kind::SoftirqEntry { vec: 9 }),
            ev(210, 7, Kind::SoftirqExit),
        ];
        let a = attribute(&evs, 100, 300, Some(7), &note("vm"));
        let me = a.components.iter().find(|c| c.kind == "self").unwrap();
        assert_eq!(me.ns, 90);
        // A spinner's own time inside a gap is what nothing visible explains.
        let spin = Note {
            text: "vm".into(),
            spinner: true,
        };
        let a = attribute(&evs, 100, 300, Some(7), &spin);
        let u = a
            .components
            .iter()
            .find(|c| c.kind == "unattributed")
            .unwrap();
        assert_eq!((u.ns, u.name.as_str()), (90, "vm"));
    }
}
