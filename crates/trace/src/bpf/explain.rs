//! A delay the in-kernel engine sent, as the attribution `--trace` gives: what its CPU ran
//! while the task waited, each with its share, from the kernel's last switches on that CPU.
//! IRQs and softirqs are not seen here (their time is the running task's).

use super::layout::Spike;
use latlab_core::result::trace::{Attribution, Component, TaskRef};

/// The explanation of `s`: one component per task (or idle) that ran, most time first.
pub fn attribution(s: &Spike) -> Attribution {
    let latency = s.to.saturating_sub(s.from).max(1);
    // Summed per task: a CPU that switched back and forth charges each once.
    let mut by: Vec<(i32, &super::Ran, u64)> = Vec::new();
    for (r, ns) in &s.ran {
        match by.iter_mut().find(|b| b.0 == r.pid) {
            Some(b) => b.2 += ns,
            None => by.push((r.pid, r, *ns)),
        }
    }
    by.sort_by(|a, b| b.2.cmp(&a.2).then(a.0.cmp(&b.0)));
    let seen: u64 = by.iter().map(|b| b.2).sum();
    let mut components: Vec<Component> = by
        .into_iter()
        .filter(|b| b.2 > 0)
        .map(|(pid, r, ns)| {
            let (kind, name, task) = if pid == 0 {
                ("idle", "CPU idle".to_string(), None)
            } else {
                (
                    "thread",
                    crate::attribute::task_label(&r.comm, pid, r.prio),
                    Some(TaskRef {
                        pid,
                        comm: r.comm.as_str().into_owned(),
                        prio: r.prio,
                    }),
                )
            };
            Component {
                kind: kind.into(),
                name,
                ns,
                share: ns as f64 / latency as f64,
                task,
                group: None,
                chain: Default::default(),
                folded: 0,
            }
        })
        .collect();
    // The components add up to the delay: what the kernel did not keep is said as such.
    let rest = latency.saturating_sub(seen);
    if rest > 0 && (s.ran.is_empty() || !s.complete) {
        let name = if s.ran.is_empty() {
            "not kept: the kernel's ring of delays was full".to_string()
        } else {
            format!(
                "before the CPU's last {} switches (not kept in kernel)",
                super::layout::RING
            )
        };
        components.push(Component {
            kind: "unknown".into(),
            name,
            ns: rest,
            share: rest as f64 / latency as f64,
            task: None,
            group: None,
            chain: Default::default(),
            folded: 0,
        });
        components.sort_by_key(|c| std::cmp::Reverse(c.ns));
    }
    let mut notes = vec![
        "in-kernel engine: what the CPU ran while the task waited, from its last switches \
         (IRQ and softirq time is charged to the task they interrupted)"
            .to_string(),
    ];
    if s.ran.is_empty() {
        notes.push(
            "its explanation was lost: the kernel's ring of delays was full (the delay itself \
             is exact)"
                .to_string(),
        );
    } else if !s.complete {
        notes.push(format!(
            "the CPU switched more than {} times while the task waited: the earliest are not \
             kept",
            super::layout::RING
        ));
    }
    Attribution {
        components,
        // From the expected wake-up, as the tracefs engine gives it.
        switch_in_ns: Some(s.to.saturating_sub(s.from)),
        notes,
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bpf::Ran;
    use crate::event::Name;

    fn ran(pid: i32, comm: &str) -> Ran {
        Ran {
            ts: 0,
            pid,
            prio: 0,
            comm: Name::new(comm.as_bytes()),
        }
    }

    #[test]
    fn what_ran_is_charged_per_task_most_first() {
        let s = Spike {
            tid: 9,
            comm: Name::new(b"waiter"),
            cpu: 1,
            wake: true,
            from: 1000,
            to: 2000,
            ran: vec![
                (ran(7, "hog"), 300),
                (ran(0, "swapper/1"), 100),
                (ran(7, "hog"), 600),
            ],
            complete: true,
        };
        let a = attribution(&s);
        assert_eq!(a.components.len(), 2);
        assert_eq!(a.components[0].kind, "thread");
        assert_eq!(a.components[0].ns, 900);
        assert_eq!(a.components[0].task.as_ref().map(|t| t.prio), Some(0));
        assert!((a.components[0].share - 0.9).abs() < 1e-9);
        assert_eq!(a.components[1].kind, "idle");
        assert_eq!(a.switch_in_ns, Some(1000));
        assert_eq!(a.notes.len(), 1);
    }

    #[test]
    fn what_the_kernel_did_not_keep_is_said_and_the_shares_add_up() {
        let mut s = Spike {
            tid: 9,
            comm: Name::new(b"waiter"),
            cpu: 1,
            wake: true,
            from: 1000,
            to: 11_000,
            ran: vec![(ran(7, "hog"), 2_000)],
            complete: false,
        };
        let total = |a: &Attribution| a.components.iter().map(|c| c.ns).sum::<u64>();
        let a = attribution(&s);
        assert_eq!(total(&a), 10_000);
        assert_eq!(a.components[0].kind, "unknown");
        assert_eq!(a.components[0].ns, 8_000);
        s.ran.clear();
        let a = attribution(&s);
        assert_eq!(total(&a), 10_000);
        assert!(a.components[0].name.contains("ring"), "{:?}", a.components);
    }
}
