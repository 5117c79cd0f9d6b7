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

pub(super) fn analysis(
    plan: &Plan,
    facts: &latlab_core::result::kind::Facts,
    combos: &[Vec<usize>],
    files: &[Vec<(Run, String)>],
) -> Result<String> {
    // One figure per repeat (a throughput), not a distribution of latencies.
    let figures = !facts.distributions;
    let metric = match plan
        .analysis
        .metric
        .as_deref()
        .unwrap_or(facts.default_metric)
    {
        "latency" => Metric::Latency,
        "min" => Metric::Min,
        "max" => Metric::Max,
        "mean" => Metric::Mean,
        "p50" => Metric::P50,
        "p99.9" => Metric::P999,
        _ => Metric::P99,
    };
    let unit = match files
        .iter()
        .flatten()
        .find_map(|(r, _)| r.series.first())
        .map_or("ns", |s| s.unit.as_str())
    {
        "kbit/s" => "10^6 bit/s".to_string(),
        "ns" => "us".to_string(),
        u => u.to_string(),
    };
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
        let opts = ReadOpts {
            column: 1,
            delim: b" \t".to_vec(),
            metric,
            series: None,
            scale: 1e-3,
            store: None,
            include_disturbed: false,
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
        if sets.len() == levels.len() {
            s.push_str(&format!(
                "\nper combination: {} ({unit}); baseline {}\n\n",
                metric_name(metric, figures),
                levels[0].0
            ));
            s.push_str(&ministat::report(&sets, &ministat::Options::default()));
            s.push('\n');
        }
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
    let headline = match metric {
        Metric::P50 => "p50",
        Metric::P999 => "p99.9",
        Metric::Max => "max",
        Metric::Mean => "mean",
        _ => "p99",
    };
    let (an, notes) = compare_levels(&levels, &settings, 1e-3, headline);
    match an {
        Some(mut an) => {
            an.warnings.extend(notes);
            // The runs' own warnings, one line per condition with the runs it applies to.
            an.warnings
                .extend(latlab_analysis::compare::verdict::group_warnings(
                    levels.iter().flat_map(|(_, runs)| {
                        runs.iter()
                            .map(|(r, n)| (n.as_str(), r.warnings.as_slice()))
                    }),
                ));
            s.push_str(&format!(
                "\neach level against {}, per metric over the runs:\n",
                levels[0].0
            ));
            s.push_str(&render(&an, Format::Table));
        }
        None => {
            for n in notes {
                s.push_str(&format!("{n}\n"));
            }
        }
    }
    Ok(s)
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
