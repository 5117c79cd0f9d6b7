//! Why one wake-up was late: replays a CPU's events from the last context switch before the
//! expected wake-up to the actual one, and charges every nanosecond of the latency to the
//! innermost context running then (an IRQ inside a softirq inside a thread counts once, as the
//! IRQ): IRQs, softirqs, other threads, the measured thread itself (own time), an idle CPU
//! (nothing visible ran: on a VM the hypervisor, else SMI/NMI or idle exit), or time before the
//! trace could see. rtla's timerlat auto-analysis has the same shape, from timerlat events.

use super::event::{softirq_name, Event, Kind, Name};
use latlab_core::result::trace::{Attribution, Component, TaskRef, IRQS_OFF_OR_HOST};

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

/// Two runs of events in time order, read as one (ties: `a` first).
#[derive(Clone)]
struct Merged<'a, A: Iterator<Item = &'a Event>> {
    a: std::iter::Peekable<A>,
    b: std::iter::Peekable<std::slice::Iter<'a, Event>>,
}

impl<'a, A: Iterator<Item = &'a Event>> Iterator for Merged<'a, A> {
    type Item = &'a Event;

    fn next(&mut self) -> Option<&'a Event> {
        match (self.a.peek(), self.b.peek()) {
            (Some(x), Some(y)) if y.ts < x.ts => self.b.next(),
            (Some(_), _) => self.a.next(),
            (None, _) => self.b.next(),
        }
    }
}

/// The switch-ins the kernel did not trace, to put back into the window where a
/// `sched_stat_runtime` dates them: a task accounted `runtime` ns at `ts` while the recorded
/// switches say another task runs was picked at `ts - runtime` (its run time is accounted from
/// the moment it was picked). On 6.18 the switch from the idle task is rarely traced, so
/// without this a real-time hog that took an idle CPU reads as idle time. In time order when
/// the window is.
fn repaired<'a>(events: impl Iterator<Item = &'a Event>) -> Vec<Event> {
    let mut curr = None;
    let mut last_switch = 0;
    // The latest record (pid, ts), and the latest one of another pid than it: a task cannot
    // have been picked before a record made in another task's context.
    let (mut last, mut other) = ((-1, 0u64), (-1, 0u64));
    let mut added = Vec::new();
    for e in events {
        match e.kind {
            Kind::Switch { next_pid, .. } => {
                curr = Some(next_pid);
                last_switch = e.ts;
            }
            Kind::Runtime { pid, runtime } if pid == e.pid && curr.is_some_and(|c| c != pid) => {
                let foreign = if last.0 != pid { last.1 } else { other.1 };
                let at = e.ts.saturating_sub(runtime).max(last_switch).max(foreign);
                let prev = curr.unwrap_or(0);
                added.push(Event {
                    ts: at,
                    pid: prev,
                    kind: Kind::Switch {
                        prev_comm: Name::new(b"?"),
                        prev_pid: prev,
                        prev_prio: 120,
                        prev_state: 0,
                        next_comm: Name::new(b"?"),
                        next_pid: pid,
                        next_prio: 120,
                    },
                });
                curr = Some(pid);
                last_switch = at;
            }
            _ => {}
        }
        if e.pid != last.0 {
            other = last;
        }
        last = (e.pid, e.ts);
    }
    added
}

/// The tasks of one window, each in a slot of its own: the latest name and priority the
/// window's switches give it (a switch put back by `repaired` names nobody), and the time
/// charged to it. Stretches are charged by slot; names are settled after the replay.
#[derive(Default)]
struct Slots {
    /// Each pid's slot: open addressing on the pid's low bits (pids come in runs), an entry
    /// (generation, pid, slot) taken when stamped with this window's generation, so a new
    /// window empties the table by counting one up.
    table: Vec<(u32, i32, u32)>,
    generation: u32,
    /// (pid, name, priority, time as another thread, own time)
    tasks: Vec<(i32, Name, i32, u64, u64)>,
}

thread_local! {
    static SLOTS: std::cell::Cell<Slots> = std::cell::Cell::new(Slots::default());
}

impl Slots {
    /// Empties the slots for a new window, keeping their memory.
    fn clear(&mut self) {
        self.tasks.clear();
        self.generation = self.generation.wrapping_add(1);
        if self.generation == 0 || self.table.is_empty() {
            self.table = vec![(0, 0, 0); self.table.len().max(256)];
            self.generation = 1;
        }
    }

    fn slot(&mut self, pid: i32) -> u32 {
        let mask = self.table.len() - 1;
        let mut i = pid as u32 as usize & mask;
        loop {
            let e = self.table[i];
            if e.0 != self.generation {
                let n = self.tasks.len() as u32;
                self.table[i] = (self.generation, pid, n);
                self.tasks.push((pid, Name::new(b"?"), 120, 0, 0));
                if self.tasks.len() * 2 > self.table.len() {
                    self.grow();
                }
                return n;
            }
            if e.1 == pid {
                return e.2;
            }
            i = (i + 1) & mask;
        }
    }

    /// Twice the table, the slots of this window put back in it.
    fn grow(&mut self) {
        self.table = vec![(0, 0, 0); self.table.len() * 2];
        let mask = self.table.len() - 1;
        for (n, t) in self.tasks.iter().enumerate() {
            let mut i = t.0 as u32 as usize & mask;
            while self.table[i].0 == self.generation {
                i = (i + 1) & mask;
            }
            self.table[i] = (self.generation, t.0, n as u32);
        }
    }

    /// `pid` seen in a switch as `comm` at `prio` (the name kept unless `comm` is nobody's).
    fn seen(&mut self, pid: i32, comm: Name, prio: i32, nobody: Name) -> u32 {
        let i = self.slot(pid);
        if comm != nobody {
            let t = &mut self.tasks[i as usize];
            (t.1, t.2) = (comm, prio);
        }
        i
    }

    /// The tasks a switch names (`kind`, if a switch), seen; the slot of the one switched in.
    fn switch(&mut self, kind: &Kind, nobody: Name) -> Option<u32> {
        let Kind::Switch {
            prev_comm,
            prev_pid,
            prev_prio,
            next_comm,
            next_pid,
            next_prio,
            ..
        } = *kind
        else {
            return None;
        };
        self.seen(prev_pid, prev_comm, prev_prio, nobody);
        Some(self.seen(next_pid, next_comm, next_prio, nobody))
    }

    fn task(&self, i: u32) -> (Name, i32, i32) {
        let t = &self.tasks[i as usize];
        (t.1, t.0, t.2)
    }
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

fn attribute_in<'a>(
    events: impl Iterator<Item = &'a Event> + Clone,
    expected: u64,
    actual: u64,
    me: Option<i32>,
    idle_note: &Note,
) -> Attribution {
    let mut out = Attribution::default();
    let latency = actual.saturating_sub(expected);
    if latency == 0 {
        return out;
    }
    // One pass before the replay: the measured thread (None: the last task switched in) and
    // whether its wake-up is in the window.
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
    let me = me.or(last_in);
    let nobody = Name::new(b"?");
    // The last window's tables, emptied: their memory is reused (a replay attributes
    // thousands of windows, each with hundreds of tasks).
    let mut slots = SLOTS.with(|c| c.take());
    slots.clear();
    let first = events.clone().next();
    let mut task: Option<u32> = first.map(|e| slots.slot(e.pid));
    let mut stack: Vec<Ctx> = Vec::new();
    let mut others: Vec<(Charge, u64)> = Vec::new();
    // Consecutive stretches are mostly charged to the same thing: no lookup then.
    let mut last: Option<(Charge, usize)> = None;
    let mut charge = |k: Stretch, ns: u64, slots: &mut Slots| {
        if ns == 0 {
            return;
        }
        match k {
            Stretch::Thread(i) => slots.tasks[i as usize].3 += ns,
            Stretch::Own(i) => slots.tasks[i as usize].4 += ns,
            Stretch::Other(k) => {
                if let Some((_, i)) = last.filter(|(lk, _)| *lk == k) {
                    others[i].1 += ns;
                    return;
                }
                let i = match others.iter().position(|o| o.0 == k) {
                    Some(i) => i,
                    None => {
                        others.push((k, 0));
                        others.len() - 1
                    }
                };
                others[i].1 += ns;
                last = Some((k, i));
            }
        }
    };
    // Without a traced wake-up of the thread (no id, or the event was lost) every stretch
    // counts as after it: no `timer` component then.
    let local_timer = super::event::Name::new(b"local_timer");
    let mut woken = if seen_waking {
        Wake::Pending
    } else {
        Wake::Unknown
    };
    let (mut last_timer, mut blocked) = (None::<u64>, None::<(Option<Ctx>, Option<u32>)>);
    // The timer interrupt's entry (x86's `local_timer` vector): the hrtimer's start where its
    // own event is not traced (attribution alone leaves it off when the vectors are traced).
    let mut last_timer_irq = None::<u64>;
    // Time before the first event is not seen.
    let mut t = expected;
    if let Some(f) = first {
        if f.ts > expected {
            charge(
                Stretch::Other(Charge::Unknown),
                f.ts.min(actual) - expected,
                &mut slots,
            );
            t = f.ts;
        }
    }
    for e in events {
        if e.ts > actual {
            // Past the wake-up: read for the names alone.
            slots.switch(&e.kind, nobody);
            continue;
        }
        if blocked.is_none() && e.ts > expected {
            blocked = Some((stack.last().copied(), task));
        }
        if e.ts > t {
            let k = stretch_of(&stack, task, &slots, me, woken, idle_note);
            charge(k, e.ts - t, &mut slots);
            t = e.ts;
        }
        // A task context other than the one the switches said: a switch went unrecorded.
        if !matches!(e.kind, Kind::Switch { .. })
            && task.is_some_and(|i| slots.tasks[i as usize].0 != e.pid)
        {
            task = Some(slots.slot(e.pid));
        }
        match e.kind {
            Kind::Switch { next_pid, .. } => {
                // Named with the latest name and priority the window shows for it (a
                // `chrt` switched in at 120 that raised itself to FIFO 99 and exec'd `sh`
                // is switched out as `sh` at 0): the policy in force while it held the CPU.
                task = slots.switch(&e.kind, nobody);
                stack.clear();
                if Some(next_pid) == me && e.ts >= expected {
                    out.switch_in_ns = Some(e.ts - expected);
                }
            }
            Kind::IrqEntry { irq, name } => {
                if irq == -1 && name == local_timer {
                    last_timer_irq = Some(e.ts);
                }
                stack.push(Ctx::Irq(irq, name))
            }
            Kind::IrqExit => {
                if let Some(i) = stack.iter().rposition(|c| matches!(c, Ctx::Irq(..))) {
                    stack.truncate(i);
                }
            }
            Kind::SoftirqEntry { vec } => stack.push(Ctx::Softirq(vec)),
            Kind::SoftirqExit => {
                if let Some(i) = stack.iter().rposition(|c| matches!(c, Ctx::Softirq(_))) {
                    stack.truncate(i);
                }
            }
            Kind::TimerEntry { .. } => last_timer = Some(e.ts),
            Kind::TimerExit
            | Kind::Exec { .. }
            | Kind::Fork { .. }
            | Kind::Nmi { .. }
            | Kind::Migrate { .. }
            | Kind::Runtime { .. }
            | Kind::Exit { .. } => {}
            // The stack the `stacktrace` trigger took at the thread's wake-up.
            Kind::Stack { ref frames } => {
                if woken == Wake::Done && out.stack_addrs.is_empty() {
                    out.stack_addrs = frames.to_vec();
                }
            }
            Kind::Waking { pid, .. } => {
                if Some(pid) == me && e.ts >= expected && out.timer_delay_ns.is_none() {
                    woken = Wake::Done;
                    out.timer_delay_ns = last_timer
                        .filter(|&x| x >= expected)
                        .or(last_timer_irq.filter(|&x| x >= expected))
                        .map(|x| x - expected)
                        .or(Some(e.ts - expected));
                }
            }
        }
    }
    let (at, holder) = blocked.unwrap_or((stack.last().copied(), task));
    out.blocking = Some(blocking(at, holder.map(|i| slots.task(i))));
    if actual > t {
        if task.is_some_and(|i| Some(slots.tasks[i as usize].0) != me)
            && stack.is_empty()
            && woken == Wake::Done
        {
            out.notes.push(NO_SWITCH.into());
        }
        let k = stretch_of(&stack, task, &slots, me, woken, idle_note);
        charge(k, actual - t, &mut slots);
    }
    let mut charged: Vec<(Charge, u64, Task)> =
        others.into_iter().map(|(k, ns)| (k, ns, None)).collect();
    for &(pid, c, pr, thread, own) in &slots.tasks {
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
    out.components = components(charged, latency, idle_note);
    SLOTS.with(|c| c.replace(slots));
    out
}

/// Threads named one by one in an attribution; the others are summed per command name
/// (a loaded CPU's long delay holds hundreds of threads, each a fraction of a percent:
/// naming them all made a `sched --all` result hundreds of megabytes, and most of its CPU).
pub(crate) const NAMED_THREADS: usize = 16;
/// Commands folded in one spike beyond which they are found through a map.
const MANY_FOLDS: usize = 16;

/// The charged stretches as components, largest first, each with its share of the latency:
/// the [`NAMED_THREADS`] largest threads one by one, the others summed per command name and
/// priority class (a component with `folded` set, named after the largest of them).
fn components(mut charged: Vec<(Charge, u64, Task)>, latency: u64, note: &Note) -> Vec<Component> {
    let threads = charged
        .iter()
        .filter(|c| matches!(c.0, Charge::Thread(..)))
        .count();
    // (the largest's charge, time and task; time, threads) per command name and priority
    // class.
    let mut folds: Vec<((Charge, u64, Task), u64, u32)> = Vec::new();
    if threads > NAMED_THREADS {
        // Threads last, the largest first; of equal times the smaller pid (the same choice
        // every run). Only which are named matters here.
        let key = |c: &(Charge, u64, Task)| match c.0 {
            Charge::Thread(_, pid, _) => (1, std::cmp::Reverse(c.1), pid),
            _ => (0, std::cmp::Reverse(0), 0),
        };
        let named = charged.len() - threads + NAMED_THREADS;
        charged.select_nth_unstable_by_key(named, key);
        // The others per command name and class: looked for among the folds so far (a few
        // commands, mostly the one before), through a map once there are many.
        let group = |c: &(Charge, u64, Task)| match c.0 {
            Charge::Thread(comm, _, prio) => (comm, prio),
            _ => (Name::default(), 0),
        };
        let mut at: super::FastMap<(Name, i32), usize> = Default::default();
        for c in charged.drain(named..) {
            let g = group(&c);
            let found = if folds.len() <= MANY_FOLDS {
                folds.iter().rposition(|f| group(&f.0) == g)
            } else {
                at.get(&g).copied()
            };
            match found {
                Some(i) => {
                    let f = &mut folds[i];
                    if key(&c) < key(&f.0) {
                        f.0 = c;
                    }
                    f.1 += c.1;
                    f.2 += 1;
                }
                None => {
                    folds.push((c, c.1, 1));
                    if folds.len() == MANY_FOLDS + 1 {
                        at = folds
                            .iter()
                            .enumerate()
                            .map(|(i, f)| (group(&f.0), i))
                            .collect();
                    } else if folds.len() > MANY_FOLDS {
                        at.insert(g, folds.len() - 1);
                    }
                }
            }
        }
    }
    let mut charged: Vec<(String, String, u64, Task, u32)> = charged
        .into_iter()
        .map(|(k, ns, who)| {
            let (kind, name) = k.words(note);
            (kind, name, ns, who, 0)
        })
        .chain(folds.into_iter().map(|((k, _, who), ns, n)| {
            let (kind, name) = k.words(note);
            match (n, k) {
                (1, _) => (kind, name, ns, who, 0),
                (_, Charge::Thread(comm, ..)) => {
                    let more = if n == 2 { "thread" } else { "threads" };
                    let name = format!("{name} and {} more {} {more}", n - 1, comm.as_str());
                    (kind, name, ns, who, n)
                }
                _ => (kind, name, ns, who, n),
            }
        }))
        .collect();
    charged.sort_by(|a, b| b.2.cmp(&a.2).then_with(|| a.1.cmp(&b.1)));
    charged
        .into_iter()
        .map(|(kind, name, ns, who, folded)| Component {
            kind,
            name,
            ns,
            share: ns as f64 / latency as f64,
            task: who.map(|(c, pid, prio)| TaskRef {
                pid,
                comm: c.as_str().into_owned(),
                prio,
            }),
            group: None,
            chain: Default::default(),
            folded,
        })
        .collect()
}

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
