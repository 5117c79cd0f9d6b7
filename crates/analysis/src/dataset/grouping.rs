//! Grouping runs into an experiment's levels by their tags (the bookkeeping tags aside), baseline
//! first: what `exp:ID` selects and what `compare --experiment` compares.

use std::collections::BTreeMap;

/// Tags that say which run of a plan a run was, not which level: never part of a label.
pub const BOOKKEEPING: [&str; 4] = ["experiment", "repeat", "combination", "plan"];

/// One level combination: its label (`clocksource=tsc`) and the indices of its runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Level {
    /// The tags that tell it apart, `K=V` joined by commas (`runs` when there are none).
    pub label: String,
    /// Indices into the runs given.
    pub runs: Vec<usize>,
}

/// Groups runs by their tags (bookkeeping tags aside). The baseline comes first: the group
/// whose runs carry `combination=0` (the plan's first level of every factor; `latlab run`
/// tags each run with its combination's index), then the others in the plan's order; runs
/// without that tag (older stores, hand-tagged runs) keep the order of first appearance.
pub fn group(tags: &[&BTreeMap<String, String>]) -> Vec<Level> {
    let mut out: Vec<(Level, u64)> = Vec::new();
    for (i, t) in tags.iter().enumerate() {
        let label = label(t);
        let index = t
            .get("combination")
            .and_then(|c| c.parse::<u64>().ok())
            .unwrap_or(u64::MAX);
        match out.iter_mut().find(|(g, _)| g.label == label) {
            Some((g, idx)) => {
                g.runs.push(i);
                *idx = (*idx).min(index);
            }
            None => out.push((
                Level {
                    label,
                    runs: vec![i],
                },
                index,
            )),
        }
    }
    // Stable: equal indices (none known) keep their order of first appearance.
    out.sort_by_key(|(_, idx)| *idx);
    out.into_iter().map(|(g, _)| g).collect()
}

/// A run's level label: its tags but the bookkeeping ones.
pub fn label(t: &BTreeMap<String, String>) -> String {
    let k: Vec<String> = t
        .iter()
        .filter(|(k, _)| !BOOKKEEPING.contains(&k.as_str()))
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    if k.is_empty() {
        "runs".to_string()
    } else {
        k.join(",")
    }
}
