//! `latlab report` and `latlab plot`: results turned into pictures. A report is one
//! self-contained HTML page (inline SVG and CSS, no script, no network) for runs, an experiment
//! or a comparison; `plot` writes one chart as SVG or PNG. Inputs are read here; the page is built in
//! `html`, the charts in `charts`, the SVG drawing in `svg`. `fleet` reads and draws the page
//! over many monitors' snapshots (`report --fleet`).

pub mod args;
pub mod charts;
pub(crate) mod command;
pub mod fleet;
pub mod html;
pub(crate) mod markup;
pub mod png;
pub mod qualify;
pub(crate) mod spikes;
pub(crate) mod svg;
pub(crate) mod tail;
pub mod timecharts;

use crate::compare::analysis::{Analysis, Settings};
use crate::dataset::select;
use latlab_core::error::{Error, Result};
use latlab_core::result::Run;
use std::collections::BTreeMap;
use std::path::Path;

/// Which chart `latlab plot` draws.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PlotKind {
    /// Latency histogram per series, log y.
    Hist,
    /// Maximum per interval over time.
    Timeline,
    /// Cumulative distribution per series.
    Cdf,
    /// Latency histogram in linear 1 µs bins, log y (OSADL's look).
    HistLinear,
    /// Exceedance (1 − CDF) per series, log y down to 1/N.
    Exceedance,
}

/// Which latency histograms a report draws (`--hist`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum HistMode {
    /// Log-x bins (20 a decade) for latencies, of a single run as of an experiment.
    #[default]
    Log,
    /// Also linear 1 µs bins with log y, beside the log-x one (OSADL's latency plots).
    Linear,
}

/// A run to show, with the name messages use and its tags (stored runs only).
#[derive(Debug, Clone)]
pub struct Loaded {
    /// The result.
    pub run: Run,
    /// `run:ID` or the file name.
    pub(crate) name: String,
    /// Its tags in the store.
    pub(crate) tags: BTreeMap<String, String>,
    /// What its kind is (the defaults until [`know_kinds`] is told).
    pub facts: latlab_core::result::kind::Facts,
}

/// Tells the loaded runs what their kinds are (the command layer passes the table's answer).
pub fn know_kinds(loaded: &mut [Loaded], kinds: latlab_core::result::kind::Kinds) {
    for l in loaded {
        l.facts = kinds(&l.run.kind);
    }
}

/// Runs shown and compared together.
#[derive(Debug, Clone)]
pub struct Group {
    /// Label: the tags that tell it apart, or the run's name.
    pub(crate) label: String,
    /// Indices into the loaded runs.
    pub(crate) runs: Vec<usize>,
}

/// Reads one input: `run:ID`, a result file, or a stored run id (`latlab plot`).
pub fn load_one(item: &str, store: Option<&str>) -> Result<Loaded> {
    let items = select::parse(&[item])?;
    let [one] = items.as_slice() else {
        return Err(Error::Usage(format!("'{item}': one run, please")));
    };
    let mut runs = select::Resolver::new(store).runs(one)?;
    if runs.len() != 1 {
        return Err(Error::Usage(format!(
            "'{item}' names {} runs; plot draws one",
            runs.len()
        )));
    }
    Ok(loaded(runs.remove(0)))
}

fn loaded(r: select::Resolved) -> Loaded {
    Loaded {
        run: r.run,
        name: r.name,
        tags: r.tags,
        facts: Default::default(),
    }
}

/// Every run stored under experiment `exp`, oldest first.
pub(crate) fn load_experiment(
    exp: &str,
    store: Option<&str>,
    include_disturbed: bool,
) -> Result<Vec<Loaded>> {
    let item = select::Item {
        text: format!("exp:{exp}"),
        sel: select::Selector::Exp(exp.to_string()),
        bare: false,
    };
    let runs = select::Resolver::new(store)
        .include_disturbed(include_disturbed)
        .runs(&item)
        .map_err(|e| Error::flag("--experiment", exp, e))?;
    Ok(runs.into_iter().map(loaded).collect())
}

/// The runs a report shows, in groups: an experiment's runs by level (the baseline first),
/// then each further selector as one group (`exp:E/k=v`, `tag:k=v`), or a run of its own.
/// Also returns the experiment shown (`--experiment`, or a lone `exp:ID`).
pub fn load_groups(
    experiment: Option<&str>,
    inputs: &[std::ffi::OsString],
    store: Option<&str>,
    include_disturbed: bool,
) -> Result<(Vec<Loaded>, Vec<Group>, Option<String>)> {
    let mut items = select::parse(inputs)?;
    let mut experiment = experiment.map(str::to_string);
    // `report exp:E` alone is `report --experiment E`.
    if experiment.is_none() {
        if let [select::Item {
            sel: select::Selector::Exp(e),
            ..
        }] = items.as_slice()
        {
            experiment = Some(e.clone());
            items.clear();
        }
    }
    let mut loaded_runs = Vec::new();
    let mut gs = Vec::new();
    if let Some(exp) = &experiment {
        loaded_runs = load_experiment(exp, store, include_disturbed)?;
        gs = groups(&loaded_runs, true);
    }
    let mut res = select::Resolver::new(store)
        .include_disturbed(include_disturbed)
        .keep_whole(true);
    for item in &items {
        let runs = res.runs(item)?;
        let first = loaded_runs.len();
        let many = runs.len() > 1
            || !matches!(
                item.sel,
                select::Selector::Run(_) | select::Selector::File(_)
            );
        loaded_runs.extend(runs.into_iter().map(loaded));
        let idx: Vec<usize> = (first..loaded_runs.len()).collect();
        if many {
            let label = select::default_label(std::slice::from_ref(item), &item.text);
            gs.push(Group { label, runs: idx });
        } else {
            let mut one = groups(&loaded_runs[first..], false);
            for g in &mut one {
                g.runs = g.runs.iter().map(|i| i + first).collect();
            }
            gs.extend(one);
        }
    }
    // Labels are unique: a repeated one gets a suffix.
    let mut seen = std::collections::HashSet::new();
    for (i, g) in gs.iter_mut().enumerate() {
        if !seen.insert(g.label.clone()) {
            g.label = format!("{}#{i}", g.label);
        }
    }
    Ok((loaded_runs, gs, experiment))
}

/// Groups of an experiment: its level combinations (`crate::compare::levels`, the baseline
/// first). Otherwise every run is a group of its own.
pub(crate) fn groups(loaded: &[Loaded], experiment: bool) -> Vec<Group> {
    if experiment {
        let tags: Vec<_> = loaded.iter().map(|l| &l.tags).collect();
        return crate::compare::levels::group(&tags)
            .into_iter()
            .map(|l| Group {
                label: l.label,
                runs: l.runs,
            })
            .collect();
    }
    let mut out: Vec<Group> = Vec::new();
    for (i, l) in loaded.iter().enumerate() {
        let label = if l.name.starts_with("run:") {
            l.name.trim_start_matches("run:").to_string()
        } else {
            // A file: its name is enough (a repeated name gets a suffix below).
            Path::new(&l.name)
                .file_name()
                .map_or(l.name.clone(), |f| f.to_string_lossy().into_owned())
        };
        let label = if out.iter().any(|g| g.label == label) {
            format!("{label}#{i}")
        } else {
            label
        };
        out.push(Group {
            label,
            runs: vec![i],
        });
    }
    out
}

/// The comparison of every group with the first, with notes on what was compared: per metric
/// over the runs (`crate::compare::levels::compare_levels`), as `compare --experiment` does.
pub fn compare(loaded: &[Loaded], groups: &[Group]) -> (Option<Analysis>, Vec<String>) {
    if groups.len() < 2 {
        return (None, Vec::new());
    }
    let first = &loaded[groups[0].runs[0]].run;
    let higher_is_better = loaded[groups[0].runs[0]].facts.higher_is_better;
    let unit = first.series.first().map_or("ns", |s| s.unit.as_str());
    let (scale, shown) = match unit {
        "ns" => (1e-3, "µs".to_string()),
        "kbit/s" => (1e-3, "Mbit/s".to_string()),
        u => (1.0, u.to_string()),
    };
    let levels: Vec<(String, Vec<(Run, String)>)> = groups
        .iter()
        .map(|g| {
            let runs = g
                .runs
                .iter()
                .map(|&i| (loaded[i].run.clone(), loaded[i].name.clone()))
                .collect();
            (g.label.clone(), runs)
        })
        .collect();
    let settings = Settings {
        confidence: 0.95,
        replicates: 2000,
        seed: 1,
        higher_is_better,
        unit: shown,
        // The run is the unit: a verdict on single runs is never proven.
        assume_independent: false,
    };
    let (a, mut notes) = crate::compare::levels::compare_levels(&levels, &settings, scale, "p99");
    let per_run = a
        .as_ref()
        .is_some_and(|a| a.replication.starts_with("the run"));
    notes.insert(
        0,
        if per_run {
            "compared: each run's p50, p99, p99.9, max and mean, across runs (the run is the unit of replication)".to_string()
        } else {
            "compared: the figures of each group; one run on a side proves nothing: repeat each configuration (5 runs) for a verdict that rests on runs".to_string()
        },
    );
    (a, notes)
}
