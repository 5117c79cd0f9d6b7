//! What made a fleet member late: the causes the monitor stores with every traced snapshot
//! (`--trace`), summed over the member's snapshots in the period read, so the fleet page shows
//! per host the cause shares (the same kinds as the monitor's `latlab_late_seconds`) and the
//! culprit groups that held its CPUs.

use latlab_core::result::trace::TraceReport;
use latlab_core::result::Run;
use std::collections::BTreeMap;

/// Culprit groups the page names per member (the rest are summed as "others").
pub(crate) const TOP_GROUPS: usize = 5;

/// One member's causes over the snapshots read.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct MemberCauses {
    /// Snapshots that carried a trace.
    pub(crate) traced: usize,
    /// Late time (ns) by cause kind, from each CPU's counters (`late_ns_by_cause`): every
    /// wake-up at or above the threshold, as the endpoint counts them.
    pub(crate) late_ns: BTreeMap<String, u64>,
    /// Late time (ns) per culprit group (thread causes), from the spikes each snapshot kept.
    pub(crate) groups: BTreeMap<String, u64>,
    /// The kept spikes' summed latency (ns): the groups' denominator.
    pub(crate) spikes_ns: u64,
}

impl MemberCauses {
    /// Adds one snapshot (a run without a trace counts for nothing).
    pub(crate) fn add(&mut self, run: &Run) {
        if let Some(t) = &run.trace {
            self.add_traced(run.series.iter().filter_map(|s| s.extra.as_ref()), t);
        }
    }

    /// Adds one traced snapshot: its series' `extra` figures and its trace.
    pub(crate) fn add_traced<'a>(
        &mut self,
        extras: impl IntoIterator<Item = &'a serde_json::Value>,
        t: &TraceReport,
    ) {
        self.traced += 1;
        for e in extras {
            let by = e.get("late_ns_by_cause").and_then(|m| m.as_object());
            for (k, v) in by.into_iter().flatten() {
                if let Some(ns) = v.as_u64().filter(|&n| n > 0) {
                    *self.late_ns.entry(k.clone()).or_default() += ns;
                }
            }
        }
        for c in &t.per_cpu {
            self.spikes_ns += c.late_ns;
            for cause in c.causes.iter().filter(|c| c.kind == "thread") {
                *self.groups.entry(cause.name.clone()).or_default() += cause.ns;
            }
        }
    }

    /// Each cause kind's share of the late time, largest first (kinds with none left out).
    pub(crate) fn shares(&self) -> Vec<(String, f64)> {
        let total: u64 = self.late_ns.values().sum();
        let mut v: Vec<(String, f64)> = self
            .late_ns
            .iter()
            .filter(|(_, &ns)| ns > 0 && total > 0)
            .map(|(k, &ns)| (k.clone(), ns as f64 / total as f64))
            .collect();
        v.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        v
    }

    /// The `n` groups that held most late time, with their share of the kept spikes' late
    /// time, most first (ties by name).
    pub(crate) fn top_groups(&self, n: usize) -> Vec<(String, f64)> {
        let mut v: Vec<(&String, &u64)> = self.groups.iter().filter(|(_, &ns)| ns > 0).collect();
        v.sort_by(|a, b| b.1.cmp(a.1).then_with(|| a.0.cmp(b.0)));
        v.into_iter()
            .take(n)
            .map(|(k, &ns)| (k.clone(), ns as f64 / self.spikes_ns.max(1) as f64))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use latlab_core::result::trace::{Cause, CpuCauses};

    fn cause(kind: &str, name: &str, ns: u64) -> Cause {
        Cause {
            kind: kind.into(),
            name: name.into(),
            chain: Vec::new(),
            policy: None,
            ns,
            share: 0.0,
            members: Vec::new(),
        }
    }

    fn add(m: &mut MemberCauses, by: serde_json::Value, causes: Vec<Cause>, late: u64) {
        let extra = serde_json::json!({ "late_ns_by_cause": by });
        let t = TraceReport {
            per_cpu: vec![CpuCauses {
                cpu: 1,
                spikes: 2,
                late_ns: late,
                max_ns: late,
                causes,
            }],
            ..TraceReport::default()
        };
        m.add_traced([&extra], &t);
    }

    #[test]
    fn snapshots_sum_into_cause_shares_and_top_groups() {
        let mut m = MemberCauses::default();
        add(
            &mut m,
            serde_json::json!({"irq": 0, "thread": 600, "host": 300, "timer": 100}),
            vec![
                cause("thread", "hackbench (latlab load)", 500),
                cause("thread", "kworker/u8:ext4-rsv-conversion", 100),
                cause("host", "host (steal)", 300),
            ],
            1000,
        );
        add(
            &mut m,
            serde_json::json!({"thread": 400, "host": 0}),
            vec![cause("thread", "hackbench (latlab load)", 400)],
            1000,
        );
        assert_eq!(m.traced, 2);
        assert_eq!(
            m.shares(),
            vec![
                ("thread".to_string(), 1000.0 / 1400.0),
                ("host".to_string(), 300.0 / 1400.0),
                ("timer".to_string(), 100.0 / 1400.0),
            ]
        );
        assert_eq!(
            m.top_groups(1),
            vec![("hackbench (latlab load)".to_string(), 0.45)]
        );
        assert_eq!(m.top_groups(5).len(), 2);
    }
}
