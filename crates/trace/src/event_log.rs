//! `--trace-save`: each explained spike's events as a readable timeline, times relative to the
//! expected wake-up, so a person can check an attribution by eye.

use super::attribute::task_label;
use super::event::{softirq_name, Event, Kind};
use super::raw::RawSpike;
use latlab_core::result::trace::Attribution;

/// How far before the expected wake-up the timeline starts.
const LEAD_NS: u64 = 1_000_000;

/// One event as a line.
fn line(e: &Event) -> String {
    match e.kind {
        Kind::Switch {
            prev_comm,
            prev_pid,
            prev_prio,
            prev_state,
            next_comm,
            next_pid,
            next_prio,
        } => format!(
            "sched_switch {} (state {prev_state}) ==> {}",
            task_label(&prev_comm, prev_pid, prev_prio),
            task_label(&next_comm, next_pid, next_prio)
        ),
        Kind::Waking { comm, pid } => format!("sched_waking {}:{pid}", comm.as_str()),
        Kind::IrqEntry { irq, name } if irq >= 0 => {
            format!("irq entry {} (irq {irq})", name.as_str())
        }
        Kind::IrqEntry { name, .. } => format!("irq entry {}", name.as_str()),
        Kind::IrqExit => "irq exit".into(),
        Kind::SoftirqEntry { vec } => format!("softirq entry {}", softirq_name(vec)),
        Kind::SoftirqExit => "softirq exit".into(),
        Kind::TimerEntry { function } => format!("hrtimer expire {function:#x}"),
        Kind::TimerExit => "hrtimer expire exit".into(),
        Kind::Exec { pid, comm, .. } => format!("exec {}:{pid}", comm.as_str()),
        Kind::Nmi { delta_ns } => format!("nmi handler ({delta_ns} ns)"),
        Kind::Stack { ref frames } => format!("kernel stack ({} frames)", frames.len()),
        Kind::Fork {
            child_pid,
            child_comm,
            ..
        } => format!("fork {}:{child_pid}", child_comm.as_str()),
        Kind::Migrate { pid, dest_cpu } => format!("migrate {pid} to CPU {dest_cpu}"),
        Kind::Exit { pid } => format!("exit {pid}"),
        Kind::Runtime { pid, runtime } => format!("runtime {pid} {runtime} ns"),
    }
}

/// The timeline of one spike: a header with its attribution, then every event from
/// [`LEAD_NS`] before the expected wake-up to the actual one.
pub(crate) fn render(
    series: &str,
    cpu: usize,
    s: &RawSpike,
    why: &Attribution,
    ev: &[Event],
) -> String {
    let us = |ns: i128| format!("{:+.3} us", ns as f64 / 1000.0);
    let mut out = format!(
        "== {series} CPU {cpu} #{}: expected {} ns, late {}\n",
        s.seq,
        s.expected,
        us(s.actual.saturating_sub(s.expected) as i128)
    );
    for c in &why.components {
        out.push_str(&format!(
            "   {:>5.1} %  {} {} ({})\n",
            100.0 * c.share,
            c.kind,
            c.name,
            us(c.ns as i128)
        ));
    }
    if let Some(r) = &why.residual {
        out.push_str(&format!("   unexplained: {}\n", r.phrase()));
    }
    let from = s.expected.saturating_sub(LEAD_NS);
    for e in ev.iter().filter(|e| e.ts >= from && e.ts <= s.actual) {
        let at = e.ts as i128 - s.expected as i128;
        out.push_str(&format!("  {:>14}  [{}] {}\n", us(at), e.pid, line(e)));
    }
    out.push_str(&format!(
        "  {:>14}  the thread reads the clock\n\n",
        us(s.actual.saturating_sub(s.expected) as i128)
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::Name;

    #[test]
    fn a_timeline_names_every_event_relative_to_the_expected_time() {
        let s = RawSpike {
            series: 0,
            cpu: 1,
            expected: 10_000,
            actual: 12_000,
            seq: 3,
            tid: 7,
        };
        let ev = [
            Event {
                ts: 9_000,
                pid: 42,
                kind: Kind::IrqEntry {
                    irq: 25,
                    name: Name::new(b"virtio0"),
                },
            },
            Event {
                ts: 11_500,
                pid: 42,
                kind: Kind::Switch {
                    prev_comm: Name::new(b"inject"),
                    prev_pid: 42,
                    prev_prio: 0,
                    prev_state: 1,
                    next_comm: Name::new(b"T0"),
                    next_pid: 7,
                    next_prio: 19,
                },
            },
        ];
        let t = render("T0", 1, &s, &Attribution::default(), &ev);
        assert!(
            t.starts_with("== T0 CPU 1 #3: expected 10000 ns, late +2.000 us\n"),
            "{t}"
        );
        assert!(
            t.contains("-1.000 us  [42] irq entry virtio0 (irq 25)"),
            "{t}"
        );
        assert!(
            t.contains("+1.500 us  [42] sched_switch inject:42 RT 99 (state 1) ==> T0:7 RT 80"),
            "{t}"
        );
        assert!(
            t.ends_with("+2.000 us  the thread reads the clock\n\n"),
            "{t}"
        );
    }
}
