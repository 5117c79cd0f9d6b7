//! An experiment's runs grouped into its level combinations, the baseline first: shared by
//! `compare --experiment`, `report --experiment` and the plan's own summary, so all three
//! compare the same groups in the same order.

use super::analysis::{analyse, Analysis, Settings};
use super::inputs::{load_runs, Metric, ReadOpts};
use crate::result::Run;
use std::collections::BTreeMap;

/// Compares each level (label, its runs with their names) with the first, per metric over the
/// runs; `scale` turns the runs' unit into the shown one, `headline` is the metric the verdict
/// sentence leads with. Returns the analysis (None when fewer than two levels could be read)
/// and notes on what could not be compared, or what a verdict still needs.
pub fn compare_levels(
    levels: &[(String, Vec<(Run, String)>)],
    st: &Settings,
    scale: f64,
    headline: &str,
) -> (Option<Analysis>, Vec<String>) {
    let mut notes = Vec::new();
    let opts = ReadOpts {
        column: 1,
        delim: b" \t".to_vec(),
        metric: Metric::Latency,
        series: None,
        scale,
        store: None,
    };
    let mut sources = Vec::new();
    for (label, runs) in levels {
        match load_runs(label, runs, &opts) {
            Ok(s) => sources.push(s),
            Err(e) => notes.push(format!("{label}: not compared: {e}")),
        }
    }
    let few: Vec<String> = sources
        .iter()
        .filter(|s| s.runs.len() < 2)
        .map(|s| format!("{} ({} run)", s.label, s.runs.len()))
        .collect();
    if !few.is_empty() {
        notes.push(format!(
            "a verdict needs at least 2 runs of every level, 5 for a useful one (repeats = 5 in \
             the plan's [design]); too few: {}",
            few.join(", ")
        ));
    }
    if sources.len() < 2 {
        notes.push("fewer than two levels could be compared".into());
        return (None, notes);
    }
    let mut a = analyse(&sources, st);
    a.headline = headline.to_string();
    (Some(a), notes)
}

/// Tags that say which run of a plan a run was, not which level: never part of a label.
pub const BOOKKEEPING: [&str; 3] = ["experiment", "repeat", "combination"];

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

#[cfg(test)]
mod tests {
    use super::*;

    fn t(p: &[(&str, &str)]) -> BTreeMap<String, String> {
        p.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn the_baseline_comes_first_whatever_the_run_order() {
        let runs = [
            t(&[
                ("experiment", "e"),
                ("cs", "kvm"),
                ("combination", "1"),
                ("repeat", "1"),
            ]),
            t(&[
                ("experiment", "e"),
                ("cs", "tsc"),
                ("combination", "0"),
                ("repeat", "1"),
            ]),
            t(&[
                ("experiment", "e"),
                ("cs", "kvm"),
                ("combination", "1"),
                ("repeat", "2"),
            ]),
        ];
        let refs: Vec<_> = runs.iter().collect();
        let g = group(&refs);
        assert_eq!(g[0].label, "cs=tsc");
        assert_eq!(g[0].runs, vec![1]);
        assert_eq!(g[1].runs, vec![0, 2]);
        // Without the tag: order of first appearance.
        let runs = [t(&[("cs", "b")]), t(&[("cs", "a")]), t(&[])];
        let refs: Vec<_> = runs.iter().collect();
        let labels: Vec<_> = group(&refs).into_iter().map(|g| g.label).collect();
        assert_eq!(labels, ["cs=b", "cs=a", "runs"]);
    }
}
