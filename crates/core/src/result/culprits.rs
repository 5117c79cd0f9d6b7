//! Per-CPU causes of late time, as a person names them: thread time summed by command group
//! (every process and thread of `sh`, whatever PID or name it had at switch-in), with the
//! exec chain and the policy/priority that held the CPU most; IRQs, softirqs and the rest by
//! name. The tasks of a group are kept under it.

use crate::result::trace::policy_label;
use crate::result::trace::{Cause, CpuCauses, Member, SpikeRecord};
use std::collections::BTreeMap;

/// The key with the most time (of equal times, the smallest key), of any map's entries.
fn top_of<'a, K: Ord + 'a>(m: impl IntoIterator<Item = (&'a K, &'a u64)>) -> Option<&'a K> {
    m.into_iter()
        .max_by(|a, b| a.1.cmp(b.1).then_with(|| b.0.cmp(a.0)))
        .map(|x| x.0)
}

/// [`top_of`] a sorted map, owned.
fn top<K: Clone + Ord>(m: &BTreeMap<K, u64>) -> Option<K> {
    top_of(m).cloned()
}

/// One cause's sums, keyed by the components' own strings (nothing copied per component).
#[derive(Default)]
struct Acc<'a> {
    ns: u64,
    chains: BTreeMap<&'a [String], u64>,
    prios: BTreeMap<i32, u64>,
    members: BTreeMap<i32, (&'a str, BTreeMap<i32, u64>, u64)>,
}

/// Sums the components of `spikes` per CPU of `cpus`.
pub fn summarise(spikes: &[SpikeRecord], cpus: &[usize]) -> Vec<CpuCauses> {
    let mut out = Vec::new();
    for &cpu in cpus {
        let on: Vec<&SpikeRecord> = spikes.iter().filter(|s| s.cpu == cpu).collect();
        let late: u64 = on.iter().map(|s| s.latency_ns).sum();
        // By kind, then name (the group for a thread).
        let mut acc: BTreeMap<(&str, &str), Acc> = BTreeMap::new();
        for comp in on.iter().flat_map(|s| &s.why.components) {
            let name = comp.group.as_deref().unwrap_or(&comp.name);
            let a = acc.entry((comp.kind.as_str(), name)).or_default();
            a.ns += comp.ns;
            if let Some(t) = &comp.task {
                *a.chains.entry(&comp.chain[..]).or_default() += comp.ns;
                *a.prios.entry(t.prio).or_default() += comp.ns;
                // Threads summed in a spike are in the cause, not among its named members.
                if comp.folded > 0 {
                    continue;
                }
                let m = a
                    .members
                    .entry(t.pid)
                    .or_insert_with(|| (t.comm.as_str(), BTreeMap::new(), 0));
                m.0 = t.comm.as_str();
                *m.1.entry(t.prio).or_default() += comp.ns;
                m.2 += comp.ns;
            }
        }
        let mut acc: Vec<((&str, &str), Acc)> = acc.into_iter().collect();
        acc.sort_by(|a, b| a.0.cmp(&b.0));
        let mut causes: Vec<Cause> = acc
            .into_iter()
            .map(|((kind, name), a)| {
                let mut members: Vec<Member> = a
                    .members
                    .into_iter()
                    .map(|(pid, (comm, prios, ns))| Member {
                        pid,
                        comm: comm.to_string(),
                        policy: policy_label(top(&prios).unwrap_or(120)),
                        ns,
                    })
                    .collect();
                members.sort_by(|x, y| y.ns.cmp(&x.ns).then(x.pid.cmp(&y.pid)));
                Cause {
                    kind: kind.to_string(),
                    name: name.to_string(),
                    chain: top_of(&a.chains).map(|c| c.to_vec()).unwrap_or_default(),
                    policy: top(&a.prios).map(policy_label),
                    ns: a.ns,
                    share: a.ns as f64 / late.max(1) as f64,
                    members,
                }
            })
            .collect();
        causes.sort_by(|a, b| b.ns.cmp(&a.ns).then_with(|| a.name.cmp(&b.name)));
        out.push(CpuCauses {
            cpu,
            spikes: on.len() as u64,
            late_ns: late,
            max_ns: on.iter().map(|s| s.latency_ns).max().unwrap_or(0),
            causes,
        });
    }
    out
}

/// A cause as one phrase: `thread sh ← taskset ← chrt ← timeout RT 99 (12 tasks: sh:4242 RT
/// 99, ...)`, `irq local_timer`, `interrupts off or host (timer IRQ late)`, `host (steal)`.
pub fn phrase(c: &Cause) -> String {
    if c.members.is_empty() {
        return component_phrase(&c.kind, &c.name);
    }
    let chain = if c.chain.len() > 1 {
        c.chain.join(" ← ")
    } else {
        c.name.clone()
    };
    let pol = c.policy.as_deref().filter(|p| *p != "normal");
    let tasks: Vec<String> = c
        .members
        .iter()
        .take(2)
        .map(|m| match m.policy.as_str() {
            "normal" => format!("{}:{}", m.comm, m.pid),
            p => format!("{}:{} {p}", m.comm, m.pid),
        })
        .collect();
    let more = if c.members.len() > 2 { ", ..." } else { "" };
    let n = c.members.len();
    format!(
        "{} {chain}{} ({n} task{}: {}{more})",
        c.kind,
        pol.map(|p| format!(" {p}")).unwrap_or_default(),
        if n == 1 { "" } else { "s" },
        tasks.join(", ")
    )
}

/// A component or cause with no tasks as words: `irq local_timer`; a late timer by what it
/// means, in the words the report, the JSON and the metrics' help use (`interrupts off or host
/// (timer IRQ late)`, `host (steal)`).
pub fn component_phrase(kind: &str, name: &str) -> String {
    match kind {
        "timer" => format!("{name} (timer IRQ late)"),
        "host" => name.to_string(),
        _ => format!("{kind} {name}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::trace::{Attribution, Component, TaskRef};

    fn thread(pid: i32, comm: &str, prio: i32, group: &str, ns: u64) -> Component {
        Component {
            kind: "thread".into(),
            name: format!("{comm}:{pid}"),
            ns,
            share: 0.0,
            task: Some(TaskRef {
                pid,
                comm: comm.into(),
                prio,
            }),
            group: Some(group.into()),
            chain: vec![
                "sh".into(),
                "taskset".into(),
                "chrt".into(),
                "timeout".into(),
            ]
            .into(),
            folded: 0,
        }
    }

    fn spike(cpu: usize, comps: Vec<Component>) -> SpikeRecord {
        SpikeRecord {
            series: "T1".into(),
            cpu,
            seq: 1,
            expected_ns: 0,
            latency_ns: comps.iter().map(|c| c.ns).sum(),
            why: Attribution {
                components: comps,
                ..Attribution::default()
            },
        }
    }

    #[test]
    fn one_command_under_many_pids_and_names_is_one_cause() {
        let irq = Component {
            kind: "irq".into(),
            name: "local_timer".into(),
            ns: 10,
            share: 0.0,
            task: None,
            group: None,
            chain: Default::default(),
            folded: 0,
        };
        let spikes = vec![
            spike(1, vec![thread(10, "taskset", 0, "sh", 100), irq.clone()]),
            spike(1, vec![thread(10, "sh", 0, "sh", 500)]),
            spike(1, vec![thread(20, "timeout", 120, "sh", 30)]),
        ];
        let s = summarise(&spikes, &[0, 1]);
        assert_eq!((s[0].cpu, s[0].spikes, s[0].causes.len()), (0, 0, 0));
        let c = &s[1].causes[0];
        assert_eq!(
            (c.kind.as_str(), c.name.as_str(), c.ns),
            ("thread", "sh", 630)
        );
        assert_eq!(c.policy.as_deref(), Some("RT 99"));
        assert_eq!(c.members.len(), 2);
        assert_eq!((c.members[0].pid, c.members[0].comm.as_str()), (10, "sh"));
        assert!((c.share - 630.0 / 640.0).abs() < 1e-9);
        assert_eq!(
            phrase(c),
            "thread sh ← taskset ← chrt ← timeout RT 99 (2 tasks: sh:10 RT 99, timeout:20)"
        );
        assert_eq!(phrase(&s[1].causes[1]), "irq local_timer");
        // Threads a spike summed (beyond its largest) count in their command's cause, and
        // are not taken for the one task named after them.
        let mut folded = thread(30, "sh", 0, "sh", 70);
        folded.folded = 5;
        let s = summarise(&[spikes[0].clone(), spike(1, vec![folded])], &[1]);
        let c = &s[0].causes[0];
        assert_eq!((c.name.as_str(), c.ns), ("sh", 170));
        assert_eq!(c.members.len(), 1);
        assert_eq!(c.members[0].ns, 100);
    }
}
