//! One late timerlat sample explained with the kernel's split, as rtla's auto-analysis does:
//! the IRQ latency, the delay from the IRQ to the thread, the thread that was running when
//! the timer expired (the blocking thread), and the interrupts, softirqs, NMIs and threads
//! the kernel accounted in between, as components latlab's reports, causes and monitor read.

use super::records::{Noise, Rec};
use latlab_core::result::trace::{policy_label, Attribution, Component, KernelSplit, SpikeRecord, TaskRef};
use latlab_trace::event::{Event, Kind};
use std::collections::{BTreeMap, VecDeque};

/// A task that held the CPU: (pid, comm, kernel priority).
pub(crate) type Task = (i32, String, i32);

/// The task a context switch puts on the CPU.
pub(crate) fn next_task(k: &Kind) -> Option<Task> {
    match k {
        Kind::Switch {
            next_pid,
            next_comm,
            next_prio,
            ..
        } => Some((*next_pid, next_comm.as_str().into_owned(), *next_prio)),
        _ => None,
    }
}

/// The sample to explain.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Window {
    /// Its CPU.
    pub(crate) cpu: usize,
    /// Its sequence number.
    pub(crate) seq: u64,
    /// When the thread sample was taken (CLOCK_MONOTONIC ns).
    pub(crate) sample_ts: u64,
    /// Its latency (ns): the sample was due at `sample_ts - latency_ns`.
    pub(crate) latency_ns: u64,
    /// The IRQ sample of the same period: (time, latency).
    pub(crate) irq: Option<(u64, u64)>,
    /// A user-space thread's sample.
    pub(crate) user: bool,
}

fn label(t: &Task) -> String {
    if t.0 == 0 {
        return "idle".into();
    }
    match policy_label(t.2).as_str() {
        "normal" => format!("{}:{}", t.1, t.0),
        p => format!("{}:{} {p}", t.1, t.0),
    }
}

fn overlap(a: (u64, u64), b: (u64, u64)) -> u64 {
    a.1.min(b.1).saturating_sub(a.0.max(b.0))
}

/// The tasks that ran in a window (task, from, to) and the kernel's noise records that overlap
/// it (class, name, from, to).
type Replayed = (Vec<(Task, u64, u64)>, Vec<(Noise, String, u64, u64)>, Option<Task>);

/// Explains window `w` from the CPU's recent events (`ring`, oldest first) and the task that
/// ran before the oldest of them.
pub(crate) fn explain(w: &Window, ring: &VecDeque<(u64, Rec)>, before: Option<&Task>) -> SpikeRecord {
    let due = w.sample_ts.saturating_sub(w.latency_ns);
    let (runs, noise, blocking_task) = replay(w, ring, before);
    let mut split = KernelSplit {
        irq_latency_ns: w.irq.map(|i| i.1),
        thread_latency_ns: w.latency_ns,
        thread_delay_ns: w.irq.map(|i| w.latency_ns.saturating_sub(i.1)),
        blocking: blocking_task.as_ref().map(label),
        ..KernelSplit::default()
    };
    let (mut components, nmis, nmi_ns) = components(w, &runs, &noise, &mut split);
    components.sort_by(|a, b| b.ns.cmp(&a.ns).then_with(|| a.name.cmp(&b.name)));
    let mut notes = vec![split.phrase()];
    if w.irq.is_none() {
        notes.push("the IRQ sample of this period was not read: no IRQ/thread split".into());
    }
    SpikeRecord {
        series: format!("{}-{}", if w.user { "user" } else { "thread" }, w.cpu),
        cpu: w.cpu,
        seq: w.seq,
        expected_ns: due,
        latency_ns: w.latency_ns,
        why: Attribution {
            components,
            blocking: split.blocking.clone(),
            timer_delay_ns: split.irq_latency_ns,
            switch_in_ns: Some(w.latency_ns),
            nmis: Some(nmis),
            nmi_ns: Some(nmi_ns),
            notes,
            kernel_split: Some(split),
            ..Attribution::default()
        },
    }
}


/// Replays the window: who ran when the timer expired and after, and the noise inside it; the
/// first task seen is the one that blocked the timerlat thread.
fn replay(w: &Window, ring: &VecDeque<(u64, Rec)>, before: Option<&Task>) -> Replayed {
    let due = w.sample_ts.saturating_sub(w.latency_ns);
    let span = (due, w.sample_ts);
    // Only the window is read: the events from the last switch before it was due (found
    // walking back a bounded way) to the sample. The ring is in time order.
    let start = ring.partition_point(|(t, _)| *t < due);
    let mut cur: Option<Task> = None;
    let mut k = start;
    while k > 0 && start - k < 4096 {
        k -= 1;
        if let Rec::Other(Event { kind, .. }) = &ring[k].1 {
            if let Some(t) = next_task(kind) {
                cur = Some(t);
                break;
            }
        }
    }
    if cur.is_none() && k == 0 {
        cur = before.cloned();
    }
    // An interrupt recorded after the timer was due may have begun before it: a little
    // earlier is read too (the noise events carry their length).
    let from_ix = ring.partition_point(|(t, _)| *t < due.saturating_sub(w.latency_ns.max(1_000_000)));
    let mut from = due;
    let mut runs: Vec<(Task, u64, u64)> = Vec::new();
    let mut noise: Vec<(Noise, String, u64, u64)> = Vec::new();
    for (ts, r) in ring.range(from_ix.min(start)..) {
        if *ts > w.sample_ts {
            break;
        }
        match r {
            Rec::Other(Event { kind, .. }) => {
                let Some(next) = next_task(kind) else { continue };
                if *ts <= due {
                    cur = Some(next);
                } else {
                    if let Some(c) = cur.take() {
                        runs.push((c, from, *ts));
                    }
                    cur = Some(next);
                    from = *ts;
                }
            }
            Rec::Noise { class, name, ns } => {
                let n = (ts.saturating_sub(*ns), *ts);
                if overlap(n, span) > 0 {
                    noise.push((*class, name.as_str().into_owned(), n.0, n.1));
                }
            }
            Rec::Sample { .. } | Rec::Period { .. } | Rec::Threshold { .. } => {}
        }
    }
    let blocking_task = runs.first().map(|r| r.0.clone()).or_else(|| cur.clone());
    if let Some(c) = cur {
        runs.push((c, from, w.sample_ts));
    }
    (runs, noise, blocking_task)
}

/// The window's components: the kernel's accounting of interrupts, softirqs and NMIs, then
/// each task's time less the interrupts inside it, and what no event covers; with the NMIs'
/// count and time. `split` gains the sums by class.
fn components(
    w: &Window,
    runs: &[(Task, u64, u64)],
    noise: &[(Noise, String, u64, u64)],
    split: &mut KernelSplit,
) -> (Vec<Component>, u32, u64) {
    let due = w.sample_ts.saturating_sub(w.latency_ns);
    let span = (due, w.sample_ts);
    let mut parts: BTreeMap<(String, String), (u64, Option<TaskRef>)> = BTreeMap::new();
    let (mut nmis, mut nmi_ns) = (0u32, 0u64);
    for (class, name, a, b) in noise {
        let ns = overlap((*a, *b), span);
        let kind = match class {
            Noise::Irq => {
                split.irq_ns += ns;
                "irq"
            }
            Noise::Softirq => {
                split.softirq_ns += ns;
                "softirq"
            }
            Noise::Nmi => {
                split.nmi_ns += ns;
                nmis += 1;
                nmi_ns += ns;
                "nmi"
            }
            Noise::Thread => {
                split.thread_ns += ns;
                "thread"
            }
        };
        parts.entry((kind.into(), name.clone())).or_default().0 += ns;
    }
    for (task, a, b) in runs {
        let inside: u64 = noise.iter().map(|n| overlap((n.2, n.3), (*a, *b))).sum();
        let ns = overlap((*a, *b), span).saturating_sub(inside);
        if ns == 0 {
            continue;
        }
        let (kind, name, tref) = if task.0 == 0 {
            ("idle", "idle".to_string(), None)
        } else if task.1.starts_with("timerlat/") {
            ("self", "timerlat thread".to_string(), None)
        } else {
            split.thread_ns += ns;
            let t = TaskRef {
                pid: task.0,
                comm: task.1.clone(),
                prio: task.2,
            };
            ("thread", format!("{}:{}", task.1, task.0), Some(t))
        };
        let e = parts.entry((kind.into(), name)).or_default();
        e.0 += ns;
        if e.1.is_none() {
            e.1 = tref;
        }
    }
    let sum: u64 = parts.values().map(|p| p.0).sum();
    let mut components: Vec<Component> = parts
        .into_iter()
        .map(|((kind, name), (ns, task))| Component {
            group: task.as_ref().map(|t| std::sync::Arc::from(t.comm.as_str())),
            kind,
            name,
            ns,
            share: ns as f64 / w.latency_ns.max(1) as f64,
            task,
            chain: std::sync::Arc::from(Vec::<String>::new()),
            folded: 0,
        })
        .collect();
    if sum < w.latency_ns {
        let ns = w.latency_ns - sum;
        components.push(Component {
            kind: "unknown".into(),
            name: "not covered by the kernel's events".into(),
            ns,
            share: ns as f64 / w.latency_ns.max(1) as f64,
            task: None,
            group: None,
            chain: std::sync::Arc::from(Vec::<String>::new()),
            folded: 0,
        });
    }
    (components, nmis, nmi_ns)
}

#[cfg(test)]
mod tests {
    use super::*;
    use latlab_trace::event::Name;

    fn switch(next_pid: i32, next: &str, next_prio: i32) -> Rec {
        Rec::Other(Event {
            ts: 0,
            pid: 0,
            kind: Kind::Switch {
                prev_comm: Name::new(b"x"),
                prev_pid: 1,
                prev_prio: 120,
                prev_state: 0,
                next_comm: Name::new(next.as_bytes()),
                next_pid,
                next_prio,
            },
        })
    }

    #[test]
    fn a_hog_that_held_the_cpu_is_the_blocking_thread_and_the_irq_is_split_off() {
        // The hog runs from 1000; the timer is due at 10_000; its IRQ comes 5 us late and
        // the thread runs at 40_000, when the hog switches to it.
        let ring: VecDeque<(u64, Rec)> = [
            (1_000, switch(4242, "python3", 4)),
            (
                15_000,
                Rec::Noise {
                    class: Noise::Irq,
                    name: Name::new(b"local_timer:236"),
                    ns: 2_000,
                },
            ),
            (40_000, switch(77, "timerlat/5", 4)),
        ]
        .into_iter()
        .collect();
        let w = Window {
            cpu: 5,
            seq: 9,
            sample_ts: 41_000,
            latency_ns: 31_000,
            irq: Some((15_000, 5_000)),
            user: false,
        };
        let s = explain(&w, &ring, None);
        let k = s.why.kernel_split.as_ref().unwrap();
        assert_eq!(k.irq_latency_ns, Some(5_000));
        assert_eq!(k.thread_delay_ns, Some(26_000));
        assert_eq!(k.blocking.as_deref(), Some("python3:4242 RT 95"));
        assert_eq!(k.irq_ns, 2_000);
        assert_eq!(k.thread_ns, 30_000 - 2_000);
        let top = &s.why.components[0];
        assert_eq!((top.kind.as_str(), top.name.as_str()), ("thread", "python3:4242"));
        assert_eq!(top.group.as_deref(), Some("python3"));
        let total: u64 = s.why.components.iter().map(|c| c.ns).sum();
        assert_eq!(total, 31_000);
        assert_eq!(s.series, "thread-5");
        assert!(s.why.notes[0].contains("blocking thread python3:4242"), "{:?}", s.why.notes);
    }

    #[test]
    fn the_task_before_the_ring_blocks_when_no_switch_is_left() {
        let w = Window {
            cpu: 0,
            seq: 1,
            sample_ts: 5_000,
            latency_ns: 4_000,
            irq: None,
            user: false,
        };
        let before: Task = (0, "swapper/0".into(), 120);
        let s = explain(&w, &VecDeque::new(), Some(&before));
        assert_eq!(s.why.blocking.as_deref(), Some("idle"));
        assert_eq!(s.why.components[0].kind, "idle");
        assert!(s.why.notes.iter().any(|n| n.contains("not read")));
    }
}
