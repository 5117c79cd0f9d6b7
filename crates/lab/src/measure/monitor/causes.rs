//! `monitor --trace`: why wake-ups were late, as counters. The control thread folds every
//! attributed spike into per-CPU totals (late time and late wake-ups by cause kind, late time
//! by culprit group) that the endpoint reads at scrape time. Culprit groups get a series each up
//! to a bound per CPU; a group keeps its series for the rest of the run once it has one (a
//! counter never disappears), and every later group's time goes to `group="other"`, so the set
//! of label values never grows without bound however many commands a long run sees.

use latlab_core::result::trace::SpikeRecord;
use std::sync::Mutex;

/// The cause kinds exported, in label order: the attribution's kinds, with `timer` (a late
/// timer interrupt: "interrupts off or host") and `host` (the same, covered by the steal
/// counted around it: "host (steal)"), as the text and the JSON name them. The finer kinds fold
/// in: `idle` (nothing visible ran), `unknown` (before the trace saw the CPU) and `self` (the
/// measured thread's own time after its switch-in) are `unattributed`: time no other context
/// visible to the trace held.
pub(crate) const CAUSES: [&str; N] = ["irq", "softirq", "thread", "timer", "host", "unattributed"];
/// How many causes are exported.
pub(crate) const N: usize = 6;
/// The index of `unattributed` in [`CAUSES`].
const UNATTRIBUTED: usize = N - 1;

/// Culprit groups with a series of their own per CPU, unless `--trace-culprits` says.
pub(crate) const DEFAULT_TOP: usize = 10;

/// The group label summing every group beyond the bound.
pub(crate) const OTHER: &str = "other";

/// The index in [`CAUSES`] of an attribution component's kind.
pub(crate) fn cause_of(kind: &str) -> usize {
    match kind {
        "irq" => 0,
        "softirq" => 1,
        "thread" => 2,
        "timer" => 3,
        "host" => 4,
        _ => UNATTRIBUTED,
    }
}

/// One CPU's totals since the monitor started.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct CpuTotals {
    /// Late time (ns) by cause kind ([`CAUSES`] order).
    pub(crate) late_ns: [u64; N],
    /// Late wake-ups by their dominant cause kind.
    pub(crate) wakeups: [u64; N],
    /// Groups with a series of their own, in the order they got it, with their late time (ns)
    /// since then.
    pub(crate) groups: Vec<(String, u64)>,
    /// Thread time of every other group (ns).
    pub(crate) other_ns: u64,
    /// Trace events the kernel lost on this CPU (attribution near them may be incomplete).
    pub(crate) lost_events: u64,
}

impl CpuTotals {
    /// The totals since `base` (an earlier reading of the same CPU).
    pub(crate) fn since(&self, base: &CpuTotals) -> CpuTotals {
        let d = |a: &[u64; N], b: &[u64; N]| std::array::from_fn(|i| a[i].saturating_sub(b[i]));
        CpuTotals {
            late_ns: d(&self.late_ns, &base.late_ns),
            wakeups: d(&self.wakeups, &base.wakeups),
            groups: self
                .groups
                .iter()
                .map(|(g, ns)| {
                    let was = base.groups.iter().find(|b| &b.0 == g).map_or(0, |b| b.1);
                    (g.clone(), ns.saturating_sub(was))
                })
                .collect(),
            other_ns: self.other_ns.saturating_sub(base.other_ns),
            lost_events: self.lost_events.saturating_sub(base.lost_events),
        }
    }

    /// Late time and wake-ups by cause as JSON (`{"irq": ns, ...}` twice).
    pub(crate) fn to_json(&self) -> serde_json::Value {
        let map = |v: &[u64; N]| {
            CAUSES
                .iter()
                .zip(v)
                .map(|(k, n)| (k.to_string(), serde_json::Value::from(*n)))
                .collect::<serde_json::Map<_, _>>()
        };
        serde_json::json!({
            "late_ns_by_cause": map(&self.late_ns),
            "late_wakeups_by_cause": map(&self.wakeups),
        })
    }
}

/// The monitor's cause totals, shared by the control thread (writer) and the endpoint.
#[derive(Debug)]
pub struct Causes {
    /// Groups with a series of their own, per CPU.
    pub(crate) top: usize,
    cpus: Vec<usize>,
    totals: Mutex<Vec<CpuTotals>>,
}

impl Causes {
    /// Empty totals for `cpus`, at most `top` named groups each.
    pub(crate) fn new(cpus: &[usize], top: usize) -> Causes {
        Causes {
            top,
            cpus: cpus.to_vec(),
            totals: Mutex::new(vec![CpuTotals::default(); cpus.len()]),
        }
    }

    /// Folds a batch of attributed spikes in. Within the batch, groups new to a CPU with room
    /// left get their series in order of their time (the largest first).
    pub(crate) fn add(&self, spikes: &[SpikeRecord]) {
        let mut all = self.totals.lock().unwrap_or_else(|p| p.into_inner());
        let mut fresh: Vec<Vec<(String, u64)>> = vec![Vec::new(); self.cpus.len()];
        for s in spikes {
            let Some(i) = self.cpus.iter().position(|&c| c == s.cpu) else {
                continue;
            };
            let t = &mut all[i];
            let mut by = [0u64; N];
            for c in &s.why.components {
                by[cause_of(&c.kind)] += c.ns;
                if c.kind != "thread" {
                    continue;
                }
                let g = c.group.as_deref().unwrap_or(&c.name);
                if let Some(x) = t.groups.iter_mut().find(|x| x.0 == g) {
                    x.1 += c.ns;
                } else if let Some(x) = fresh[i].iter_mut().find(|x| x.0 == g) {
                    x.1 += c.ns;
                } else {
                    fresh[i].push((g.to_string(), c.ns));
                }
            }
            for (k, ns) in by.iter().enumerate() {
                t.late_ns[k] += ns;
            }
            // The kind that held most of this wake-up's lateness (ties go to the first kind);
            // a spike with no component is unattributed.
            let dominant = match (0..N).rev().max_by_key(|&k| by[k]) {
                Some(k) if by[k] > 0 => k,
                _ => UNATTRIBUTED,
            };
            t.wakeups[dominant] += 1;
        }
        for (t, mut new) in all.iter_mut().zip(fresh) {
            new.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
            for (g, ns) in new {
                if t.groups.len() < self.top && g != OTHER {
                    t.groups.push((g, ns));
                } else {
                    t.other_ns += ns;
                }
            }
        }
    }

    /// Publishes the trace's lost-event counts: (cpu, events read, lost, unreadable pages).
    pub(crate) fn set_counts(&self, counts: &[(usize, u64, u64, u64)]) {
        let mut all = self.totals.lock().unwrap_or_else(|p| p.into_inner());
        for &(cpu, _, lost, _) in counts {
            if let Some(i) = self.cpus.iter().position(|&c| c == cpu) {
                all[i].lost_events = lost;
            }
        }
    }

    /// (CPU, totals) now.
    pub(crate) fn read(&self) -> Vec<(usize, CpuTotals)> {
        let all = self.totals.lock().unwrap_or_else(|p| p.into_inner());
        self.cpus.iter().copied().zip(all.iter().cloned()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use latlab_core::result::trace::{Attribution, Component};

    fn comp(kind: &str, group: Option<&str>, ns: u64) -> Component {
        Component {
            kind: kind.into(),
            name: group.map_or("x".into(), |g| format!("{g}:1")),
            ns,
            share: 0.0,
            task: None,
            group: group.map(Into::into),
            chain: Default::default(),
            folded: 0,
        }
    }

    fn spike(cpu: usize, components: Vec<Component>) -> SpikeRecord {
        SpikeRecord {
            series: format!("cpu{cpu}"),
            cpu,
            seq: 1,
            expected_ns: 0,
            latency_ns: components.iter().map(|c| c.ns).sum(),
            why: Attribution {
                components,
                ..Attribution::default()
            },
        }
    }

    #[test]
    fn kinds_fold_into_the_exported_causes_and_each_wake_up_counts_once() {
        let c = Causes::new(&[0, 1], DEFAULT_TOP);
        c.add(&[
            spike(
                1,
                vec![
                    comp("thread", Some("sh"), 700),
                    comp("irq", None, 200),
                    comp("idle", None, 50),
                    comp("self", None, 30),
                    comp("unknown", None, 20),
                ],
            ),
            spike(1, vec![comp("softirq", None, 90), comp("timer", None, 10)]),
            spike(1, vec![comp("host", None, 40), comp("timer", None, 3)]),
            spike(7, vec![comp("irq", None, 5)]),
        ]);
        let r = c.read();
        assert_eq!(r[0].1, CpuTotals::default());
        let t = &r[1].1;
        assert_eq!(t.late_ns, [200, 90, 700, 13, 40, 100]);
        assert_eq!(t.wakeups, [0, 1, 1, 0, 1, 0]);
        // A late timer is never a culprit group's time.
        assert_eq!(t.groups.len(), 1);
        assert_eq!(t.groups, vec![("sh".to_string(), 700)]);
        let j = t.to_json();
        assert_eq!(j["late_ns_by_cause"]["unattributed"], 100);
        assert_eq!(j["late_wakeups_by_cause"]["thread"], 1);
    }

    #[test]
    fn a_thousand_culprit_names_stay_within_the_bound_and_lose_no_time() {
        let c = Causes::new(&[0, 1], DEFAULT_TOP);
        let mut total = 0;
        // 1000 distinct commands over many batches, on both CPUs, the later ones larger.
        for batch in 0..100u64 {
            let spikes: Vec<SpikeRecord> = (0..10u64)
                .map(|k| {
                    let n = batch * 10 + k;
                    total += 1000 + n;
                    spike(
                        (n % 2) as usize,
                        vec![comp("thread", Some(&format!("cmd{n}")), 1000 + n)],
                    )
                })
                .collect();
            c.add(&spikes);
            for (_, t) in c.read() {
                assert!(t.groups.len() <= DEFAULT_TOP, "{}", t.groups.len());
            }
        }
        let r = c.read();
        let mut labels = std::collections::BTreeSet::new();
        let mut sum = 0;
        for (_, t) in &r {
            assert_eq!(t.groups.len(), DEFAULT_TOP);
            labels.extend(t.groups.iter().map(|g| g.0.clone()));
            sum += t.groups.iter().map(|g| g.1).sum::<u64>() + t.other_ns;
            assert_eq!(
                t.late_ns[2],
                t.groups.iter().map(|g| g.1).sum::<u64>() + t.other_ns
            );
        }
        assert!(labels.len() <= 2 * DEFAULT_TOP, "{labels:?}");
        assert_eq!(sum, total, "time lost or counted twice");
        // A group keeps its series: its counter only grows, later groups go to other.
        let before = r[0].1.clone();
        c.add(&[
            spike(0, vec![comp("thread", Some(&before.groups[0].0), 5)]),
            spike(0, vec![comp("thread", Some("late-newcomer"), 7)]),
        ]);
        let after = &c.read()[0].1;
        assert_eq!(after.groups[0].1, before.groups[0].1 + 5);
        assert_eq!(after.other_ns, before.other_ns + 7);
        assert!(!after.groups.iter().any(|g| g.0 == "late-newcomer"));
        let d = after.since(&before);
        assert_eq!((d.groups[0].1, d.other_ns, d.late_ns[2]), (5, 7, 12));
    }

    #[test]
    fn the_largest_new_group_of_a_batch_takes_the_last_free_series() {
        let c = Causes::new(&[3], 1);
        c.add(&[
            spike(3, vec![comp("thread", Some("kworker/3:1"), 2)]),
            spike(3, vec![comp("thread", Some("sh"), 900)]),
        ]);
        let t = &c.read()[0].1;
        assert_eq!(t.groups, vec![("sh".to_string(), 900)]);
        assert_eq!(t.other_ns, 2);
    }
}
