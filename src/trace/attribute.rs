//! Why one wake-up was late: replays a CPU's events from the last context switch before the
//! expected wake-up to the actual one, and charges every nanosecond of the latency to the
//! innermost context running then (an IRQ inside a softirq inside a thread counts once, as the
//! IRQ): IRQs, softirqs, other threads, the measured thread itself (wake-up path), an idle CPU
//! (nothing visible ran: on a VM the hypervisor, else SMI/NMI or idle exit), or time before the
//! trace could see. rtla's timerlat auto-analysis has the same shape, from timerlat events.

use super::event::{softirq_name, Event, Kind, Name};
use serde::{Deserialize, Serialize};

/// One share of a spike's latency.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Component {
    /// `irq`, `softirq`, `thread`, `self`, `idle` or `unknown`.
    pub kind: String,
    /// What: `local_timer`, `virtio0 (irq 25)`, `NET_RX`, `inject:4242 RT 99`, ...
    pub name: String,
    /// Nanoseconds of the latency it held the CPU.
    pub ns: u64,
    /// Share of the latency, 0..1.
    pub share: f64,
}

/// The attribution of one spike.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Attribution {
    /// Components, largest first; their `ns` add up to the latency.
    pub components: Vec<Component>,
    /// What ran on the CPU when the wake-up was due (`idle` when nothing did).
    pub blocking: Option<String>,
    /// Expected wake-up to the start of the hrtimer callback that woke the thread.
    pub timer_delay_ns: Option<u64>,
    /// Expected wake-up to the thread's switch-in.
    pub switch_in_ns: Option<u64>,
}

/// A task as a person reads it: `comm:pid RT 99`, `comm:pid` for a normal one.
pub fn task_label(comm: &Name, pid: i32, prio: i32) -> String {
    let p = match prio {
        p if p < 0 => " DL".to_string(),
        p if p < 100 => format!(" RT {}", 99 - p),
        _ => String::new(),
    };
    format!("{}:{pid}{p}", comm.as_str())
}

#[derive(Clone)]
enum Ctx {
    Irq(String),
    Softirq(u32),
}

/// Attributes the latency `expected..actual` on one CPU from its events (oldest first, up to
/// `actual`). `idle_note` names what an idle CPU's delay means here (e.g. the hypervisor).
pub fn attribute(events: &[Event], expected: u64, actual: u64, idle_note: &str) -> Attribution {
    let mut out = Attribution::default();
    let latency = actual.saturating_sub(expected);
    if latency == 0 {
        return out;
    }
    // The measured thread: the last one switched in before it read the clock.
    let me = events.iter().rev().find_map(|e| match e.kind {
        Kind::Switch {
            next_pid,
            next_comm,
            ..
        } => Some((next_pid, next_comm, e.ts)),
        _ => None,
    });
    let my_pid = me.map(|m| m.0);
    if let Some((_, _, ts)) = me {
        if ts >= expected {
            out.switch_in_ns = Some(ts - expected);
        }
    }
    // The task before the first switch is that switch's `prev`.
    let mut task: Option<(Name, i32, i32)> = events.iter().find_map(|e| match e.kind {
        Kind::Switch {
            prev_comm,
            prev_pid,
            prev_prio,
            ..
        } => Some((prev_comm, prev_pid, prev_prio)),
        _ => None,
    });
    let mut stack: Vec<Ctx> = Vec::new();
    let mut charged: Vec<(String, String, u64)> = Vec::new();
    let mut charge = |kind: &str, name: String, ns: u64| {
        if ns == 0 {
            return;
        }
        match charged.iter_mut().find(|c| c.0 == kind && c.1 == name) {
            Some(c) => c.2 += ns,
            None => charged.push((kind.to_string(), name, ns)),
        }
    };
    let mut woken = false;
    let mut last_timer: Option<u64> = None;
    let label = |stack: &[Ctx], task: &Option<(Name, i32, i32)>, woken: bool| -> (String, String) {
        match stack.last() {
            Some(Ctx::Irq(n)) => ("irq".into(), n.clone()),
            Some(Ctx::Softirq(v)) => ("softirq".into(), softirq_name(*v).into()),
            None => match task {
                None => (
                    "unknown".into(),
                    "before the trace's first event on this CPU".into(),
                ),
                Some((_, 0, _)) if !woken => ("idle".into(), idle_note.into()),
                Some((_, 0, _)) => ("idle".into(), "CPU idle after the wake-up".into()),
                Some((c, p, pr)) if Some(*p) == my_pid => (
                    "self".into(),
                    format!("{} (wake-up path)", task_label(c, *p, *pr)),
                ),
                Some((c, p, pr)) => ("thread".into(), task_label(c, *p, *pr)),
            },
        }
    };
    let first_ts = events.first().map_or(actual, |e| e.ts);
    let mut t = first_ts.min(expected);
    let mut at_expected_done = false;
    for e in events.iter().filter(|e| e.ts <= actual) {
        if !at_expected_done && e.ts > expected {
            at_expected_done = true;
            out.blocking = Some(blocking(&stack, &task));
        }
        let (a, b) = (t.max(expected), e.ts.min(actual));
        if b > a {
            let (k, n) = if e.ts <= first_ts && t < first_ts {
                (
                    "unknown".to_string(),
                    "before the trace's first event on this CPU".to_string(),
                )
            } else {
                label(&stack, &task, woken)
            };
            charge(&k, n, b - a);
        }
        t = e.ts.max(t);
        match e.kind {
            Kind::Switch {
                next_comm,
                next_pid,
                next_prio,
                ..
            } => {
                task = Some((next_comm, next_pid, next_prio));
                stack.clear();
            }
            Kind::IrqEntry { irq, name } => stack.push(Ctx::Irq(if irq >= 0 {
                format!("{} (irq {irq})", name.as_str())
            } else {
                name.as_str().into_owned()
            })),
            Kind::IrqExit => {
                if let Some(i) = stack.iter().rposition(|c| matches!(c, Ctx::Irq(_))) {
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
            Kind::TimerExit => {}
            Kind::Waking { pid, .. } => {
                if Some(pid) == my_pid && e.ts >= expected && !woken {
                    woken = true;
                    out.timer_delay_ns = last_timer
                        .filter(|&x| x >= expected)
                        .map(|x| x - expected)
                        .or(Some(e.ts - expected));
                }
            }
        }
    }
    if !at_expected_done {
        out.blocking = Some(blocking(&stack, &task));
    }
    if actual > t.max(expected) {
        let (k, n) = label(&stack, &task, woken);
        charge(&k, n, actual - t.max(expected));
    }
    charged.sort_by(|a, b| b.2.cmp(&a.2).then_with(|| a.1.cmp(&b.1)));
    out.components = charged
        .into_iter()
        .map(|(kind, name, ns)| Component {
            kind,
            name,
            ns,
            share: ns as f64 / latency as f64,
        })
        .collect();
    out
}

fn blocking(stack: &[Ctx], task: &Option<(Name, i32, i32)>) -> String {
    match (stack.last(), task) {
        (Some(Ctx::Irq(n)), _) => format!("irq {n}"),
        (Some(Ctx::Softirq(v)), _) => format!("softirq {}", softirq_name(*v)),
        (None, None) => "unknown".into(),
        (None, Some((_, 0, _))) => "idle".into(),
        (None, Some((c, p, pr))) => task_label(c, *p, *pr),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sw(ts: u64, prev: (&str, i32), next: (&str, i32, i32)) -> Event {
        Event {
            ts,
            kind: Kind::Switch {
                prev_comm: Name::new(prev.0.as_bytes()),
                prev_pid: prev.1,
                prev_prio: 120,
                prev_state: 0,
                next_comm: Name::new(next.0.as_bytes()),
                next_pid: next.1,
                next_prio: next.2,
            },
        }
    }

    fn ev(ts: u64, kind: Kind) -> Event {
        Event { ts, kind }
    }

    fn irq(name: &str) -> Kind {
        Kind::IrqEntry {
            irq: -1,
            name: Name::new(name.as_bytes()),
        }
    }

    #[test]
    fn a_higher_priority_thread_holds_the_cpu() {
        // inject (RT 99) runs from 0 to 2000; the timer fires at 1010 inside it; the measured
        // thread (pid 7) is switched in at 2000 and reads the clock at 2010.
        let evs = vec![
            sw(0, ("swapper/1", 0), ("inject", 42, 0)),
            ev(1005, irq("local_timer")),
            ev(1010, Kind::TimerEntry { function: 1 }),
            ev(
                1012,
                Kind::Waking {
                    comm: Name::new(b"T0"),
                    pid: 7,
                },
            ),
            ev(1015, Kind::TimerExit),
            ev(1020, Kind::IrqExit),
            sw(2000, ("inject", 42), ("T0", 7, 4)),
        ];
        let a = attribute(&evs, 1000, 2010, "vm");
        assert_eq!(a.components[0].kind, "thread");
        assert_eq!(a.components[0].name, "inject:42 RT 99");
        assert_eq!(a.components[0].ns, 5 + 980);
        let total: u64 = a.components.iter().map(|c| c.ns).sum();
        assert_eq!(total, 1010);
        assert_eq!(a.blocking.as_deref(), Some("inject:42 RT 99"));
        assert_eq!(a.timer_delay_ns, Some(10));
        assert_eq!(a.switch_in_ns, Some(1000));
        let irq = a.components.iter().find(|c| c.kind == "irq").unwrap();
        assert_eq!((irq.name.as_str(), irq.ns), ("local_timer", 15));
        let me = a.components.iter().find(|c| c.kind == "self").unwrap();
        assert_eq!(me.ns, 10);
    }

    #[test]
    fn nested_irq_in_softirq_counts_once() {
        let evs = vec![
            sw(0, ("x", 3), ("swapper/0", 0, 120)),
            ev(100, Kind::SoftirqEntry { vec: 3 }),
            ev(
                150,
                Kind::IrqEntry {
                    irq: 25,
                    name: Name::new(b"virtio0"),
                },
            ),
            ev(170, Kind::IrqExit),
            ev(300, Kind::SoftirqExit),
            sw(300, ("swapper/0", 0), ("T0", 7, 4)),
        ];
        let a = attribute(&evs, 50, 310, "hypervisor");
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
        let evs = vec![sw(500, ("swapper/0", 0), ("T0", 7, 4))];
        let a = attribute(&evs, 100, 600, "vm");
        let u = a.components.iter().find(|c| c.kind == "unknown").unwrap();
        assert_eq!(u.ns, 400);
        assert_eq!(attribute(&[], 100, 600, "vm").components[0].kind, "unknown");
    }
}
