//! The end of a plan: each level combination against the baseline over its runs, ministat-style
//! and tail-aware, as the text the runner prints and keeps.

use super::plan::Plan;
use latlab_analysis::compare::analysis::Settings;
use latlab_analysis::compare::inputs::{load_runs, Metric, ReadOpts};
use latlab_analysis::compare::levels::compare_levels;
use latlab_analysis::compare::render::{render, Format};
use latlab_core::error::Result;
use latlab_core::result::Run;
use latlab_core::stats::ministat;

/// What a plan's report says of its runs after their count: how many were left out of the
/// comparison and how many repeats failed to boot (nothing when none).
pub(super) fn left_out_and_failed(left_out: usize, failed: usize) -> String {
    let mut s = String::new();
    if left_out > 0 {
        s.push_str(&format!(", {left_out} of them left out of the comparison"));
    }
    if failed > 0 {
        s.push_str(&format!(", {failed} repeat(s) failed to boot"));
    }
    s
}

/// The plan's closing text: ministat's view of its metric per combination (when it has one
/// figure per run to show), then each level against the baseline, per metric over its runs.
pub(super) fn analysis(
    plan: &Plan,
    facts: &latlab_core::result::kind::Facts,
    combos: &[Vec<usize>],
    files: &[Vec<(Run, String)>],
) -> Result<String> {
    // One figure per repeat (a throughput), not a distribution of latencies.
    let figures = !facts.distributions;
    let metric = metric_of(
        plan.analysis
            .metric
            .as_deref()
            .unwrap_or(facts.default_metric),
    );
    let unit = unit_of(files);
    let levels: Vec<(String, Vec<(Run, String)>)> = combos
        .iter()
        .zip(files)
        .filter(|(_, f)| !f.is_empty())
        .map(|(c, f)| (plan.label(c), f.clone()))
        .collect();
    let mut s = String::new();
    // ministat's view of the plan's metric, one figure per run (never a percentile of
    // percentiles: ministat shows the figures themselves).
    if (metric != Metric::Latency || figures) && levels.len() >= 2 && levels.len() <= 7 {
        s.push_str(&per_combination(&levels, metric, figures, &unit));
    }
    let settings = Settings {
        confidence: 0.95,
        replicates: 10_000,
        seed: 1,
        higher_is_better: plan
            .analysis
            .higher_is_better
            .unwrap_or(facts.higher_is_better),
        unit,
        assume_independent: false,
    };
    s.push_str(&against_baseline(&levels, &settings, metric));
    Ok(s)
}

/// The metric a plan compares by, by its name in the plan (p99 unless named otherwise).
fn metric_of(name: &str) -> Metric {
    match name {
        "latency" => Metric::Latency,
        "min" => Metric::Min,
        "max" => Metric::Max,
        "mean" => Metric::Mean,
        "p50" => Metric::P50,
        "p99.9" => Metric::P999,
        _ => Metric::P99,
    }
}

/// The unit the figures are shown in, from the first series of the runs (latencies in µs).
fn unit_of(files: &[Vec<(Run, String)>]) -> String {
    match files
        .iter()
        .flatten()
        .find_map(|(r, _)| r.series.first())
        .map_or("ns", |s| s.unit.as_str())
    {
        "kbit/s" => "10^6 bit/s".to_string(),
        "ns" => "us".to_string(),
        u => u.to_string(),
    }
}

/// ministat's report of `metric`, one figure per run, each level a data set; nothing when a
/// level's runs cannot be read as one.
fn per_combination(
    levels: &[(String, Vec<(Run, String)>)],
    metric: Metric,
    figures: bool,
    unit: &str,
) -> String {
    let opts = ReadOpts {
        read: latlab_analysis::dataset::ReadOpts {
            column: 1,
            delim: b" \t".to_vec(),
            ..Default::default()
        },
        metric,
        scale: 1e-3,
    };
    let sets: Vec<ministat::DataSet> = levels
        .iter()
        .filter_map(|(label, runs)| {
            let src = load_runs(label, runs, &opts).ok()?;
            let text: String = src
                .dist
                .pairs()
                .flat_map(|(v, c)| std::iter::repeat_n(format!("{v}\n"), c as usize))
                .collect();
            ministat::read_set(text.as_bytes(), label, 1, b" \t").ok()
        })
        .collect();
    if sets.len() != levels.len() {
        return String::new();
    }
    format!(
        "\nper combination: {} ({unit}); baseline {}\n\n{}\n",
        metric_name(metric, figures),
        levels[0].0,
        ministat::report(&sets, &ministat::Options::default())
    )
}

/// Each level against the first (the baseline), per metric over the runs, with the runs' own
/// warnings grouped by condition; only the notes when there is nothing to compare.
fn against_baseline(
    levels: &[(String, Vec<(Run, String)>)],
    settings: &Settings,
    metric: Metric,
) -> String {
    let headline = match metric {
        Metric::P50 => "p50",
        Metric::P999 => "p99.9",
        Metric::Max => "max",
        Metric::Mean => "mean",
        _ => "p99",
    };
    let (an, notes) = compare_levels(levels, settings, 1e-3, headline);
    let Some(mut an) = an else {
        return notes.iter().map(|n| format!("{n}\n")).collect();
    };
    an.warnings.extend(notes);
    // The runs' own warnings, one line per condition with the runs it applies to.
    an.warnings
        .extend(latlab_analysis::compare::verdict::group_warnings(
            levels.iter().flat_map(|(_, runs)| {
                runs.iter()
                    .map(|(r, n)| (n.as_str(), r.warnings.as_slice()))
            }),
        ));
    format!(
        "\neach level against {}, per metric over the runs:\n{}",
        levels[0].0,
        render(&an, Format::Table)
    )
}

fn metric_name(m: Metric, figures: bool) -> &'static str {
    match m {
        Metric::Latency if figures => "throughput of each run",
        Metric::Latency => "all latency samples",
        Metric::Min => "min of each run",
        Metric::Max => "max of each run",
        Metric::Mean => "mean of each run",
        Metric::P50 => "p50 of each run",
        Metric::P99 => "p99 of each run",
        Metric::P999 => "p99.9 of each run",
    }
}
