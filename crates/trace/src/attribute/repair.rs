//! The switch-ins the kernel did not trace, put back before the replay: dated from a task's
//! accounted run time, and read with the window's events as one run in time order.

use crate::event::{Event, Kind, Name};

/// Two runs of events in time order, read as one (ties: `a` first).
#[derive(Clone)]
pub(super) struct Merged<'a, A: Iterator<Item = &'a Event>> {
    pub(super) a: std::iter::Peekable<A>,
    pub(super) b: std::iter::Peekable<std::slice::Iter<'a, Event>>,
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
pub(super) fn repaired<'a>(events: impl Iterator<Item = &'a Event>) -> Vec<Event> {
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
