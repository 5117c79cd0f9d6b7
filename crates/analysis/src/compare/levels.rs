//! An experiment's runs grouped into its level combinations, the baseline first: shared by
//! `compare --experiment`, `report --experiment` and the plan's own summary, so all three
//! compare the same groups in the same order.

use super::analyse;
use super::analysis::{Analysis, Settings};
use super::inputs::{load_runs, Metric, ReadOpts};
use latlab_core::result::Run;

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
        read: crate::dataset::ReadOpts {
            column: 1,
            delim: b" \t".to_vec(),
            ..Default::default()
        },
        metric: Metric::Latency,
        scale,
    };
    let mut sources = Vec::new();
    for (label, runs) in levels {
        match load_runs(label, runs, &opts) {
            Ok(s) => sources.push(s),
            Err(e) => notes.push(format!("{label}: not compared: {e}")),
        }
    }
    let kernels: Vec<Vec<&Run>> = levels
        .iter()
        .map(|(_, rs)| rs.iter().map(|r| &r.0).collect())
        .collect();
    // Levels of different kernels: the boot is the replicate (its runs pooled first).
    let booted = super::boots::kernels_differ(&kernels);
    let mut spread = None;
    if booted {
        let (pooled, sizes): (Vec<_>, Vec<_>) = sources
            .iter()
            .cloned()
            .map(super::boots::by_boot)
            .unzip();
        spread = Some(super::boots::spread(&sources, &sizes));
        sources = pooled;
    }
    let few: Vec<String> = sources
        .iter()
        .filter(|s| s.runs.len() < 2)
        .map(|s| {
            let unit = if booted { "boot" } else { "run" };
            format!("{} ({} {unit})", s.label, s.runs.len())
        })
        .collect();
    if !few.is_empty() && booted {
        notes.push(format!(
            "the levels ran different kernels, so the boot is the unit: a verdict needs runs \
             from at least 2 boots of every level (5 for a useful one); too few: {}",
            few.join(", ")
        ));
    } else if !few.is_empty() {
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
    let runs: Vec<(String, Vec<&Run>)> = levels
        .iter()
        .map(|(l, rs)| (l.clone(), rs.iter().map(|r| &r.0).collect()))
        .collect();
    a.conditions = super::conditions::conditions(&runs);
    if let Some(spread) = spread {
        a.boots = true;
        // What would decide is counted in boots too: another run in the same boot adds none.
        for m in a.comparisons.iter_mut().flat_map(|c| c.metrics.iter_mut()) {
            if let Some(t) = m.to_decide.as_mut() {
                *t = t.replace(" runs of each level", " boots of each level");
            }
        }
        a.replication = format!(
            "the boot (the levels ran different kernels): the runs of one boot pooled into one \
             replicate, then {}; {spread}",
            a.replication
        );
    }
    (Some(a), notes)
}

pub use crate::dataset::grouping::{group, label, Level, BOOKKEEPING};

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

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
