//! `latlab report` and `latlab plot`: results turned into pictures. A report is one
//! self-contained HTML page (inline SVG and CSS, no script, no network) for runs, an experiment
//! or a comparison; `plot` writes one chart as SVG or PNG. Inputs are read here; the page is built in
//! `html`, the charts in `charts`, the SVG drawing in `svg`.

pub mod charts;
pub mod html;
pub mod png;
pub mod spikes;
pub mod svg;

use crate::compare::analysis::{analyse, Analysis, Settings};
use crate::compare::inputs::{load_runs, parse_run, Metric, ReadOpts, MAX_JSON_BYTES};
use crate::error::{Error, Result};
use crate::result::Run;
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
}

/// A run to show, with the name messages use and its tags (stored runs only).
#[derive(Debug, Clone)]
pub struct Loaded {
    /// The result.
    pub run: Run,
    /// `run:ID` or the file name.
    pub name: String,
    /// Its tags in the store.
    pub tags: BTreeMap<String, String>,
}

/// Runs shown and compared together.
#[derive(Debug, Clone)]
pub struct Group {
    /// Label: the tags that tell it apart, or the run's name.
    pub label: String,
    /// Indices into the loaded runs.
    pub runs: Vec<usize>,
}

/// Reads one input: `run:ID`, a result file, or a stored run id.
pub fn load_one(item: &str, store: Option<&str>) -> Result<Loaded> {
    let id = item.strip_prefix("run:");
    let path = Path::new(item);
    if id.is_none() && (path.exists() || item.ends_with(".json")) {
        let text =
            crate::experiment::plan::read_text_limited(path, MAX_JSON_BYTES, "latlab result")?;
        return Ok(Loaded {
            run: parse_run(&text, item)?,
            name: item.to_string(),
            tags: BTreeMap::new(),
        });
    }
    let id = id.unwrap_or(item);
    let entry = crate::store::open(store)?.get(id)?;
    let run: Run = serde_json::from_value(entry.run)
        .map_err(|e| Error::Env(format!("stored run {id}: {e}")))?;
    Ok(Loaded {
        run,
        name: format!("run:{id}"),
        tags: entry.tags,
    })
}

/// Every run stored under experiment `exp`, oldest first.
pub fn load_experiment(exp: &str, store: Option<&str>) -> Result<Vec<Loaded>> {
    let st = crate::store::open(store)?;
    let filter = crate::store::Filter {
        tags: vec![("experiment".into(), exp.into())],
        ..Default::default()
    };
    let mut rows = st.list(&filter)?;
    if rows.is_empty() {
        return Err(Error::flag(
            "--experiment",
            exp,
            format!("no run in {} has the tag experiment={exp}", st.location()),
        ));
    }
    rows.reverse();
    rows.iter()
        .map(|r| {
            let e = st.get(&r.id)?;
            let run: Run = serde_json::from_value(e.run)
                .map_err(|err| Error::Env(format!("stored run {}: {err}", r.id)))?;
            Ok(Loaded {
                run,
                name: format!("run:{}", r.id),
                tags: e.tags,
            })
        })
        .collect()
}

/// Groups of an experiment: runs with the same tags (but `experiment` and `repeat`) go
/// together, in order of first appearance. Otherwise every run is a group of its own.
pub fn groups(loaded: &[Loaded], experiment: bool) -> Vec<Group> {
    let mut out: Vec<Group> = Vec::new();
    for (i, l) in loaded.iter().enumerate() {
        let label = if experiment {
            let k: Vec<String> = l
                .tags
                .iter()
                .filter(|(k, _)| *k != "experiment" && *k != "repeat")
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            if k.is_empty() {
                "runs".to_string()
            } else {
                k.join(",")
            }
        } else if l.name.starts_with("run:") {
            l.name.trim_start_matches("run:").to_string()
        } else {
            // A file: its name is enough (a repeated name gets a suffix below).
            Path::new(&l.name)
                .file_name()
                .map_or(l.name.clone(), |f| f.to_string_lossy().into_owned())
        };
        match out.iter_mut().find(|g| g.label == label && experiment) {
            Some(g) => g.runs.push(i),
            None => {
                let label = if out.iter().any(|g| g.label == label) {
                    format!("{label}#{i}")
                } else {
                    label
                };
                out.push(Group {
                    label,
                    runs: vec![i],
                })
            }
        }
    }
    out
}

/// The comparison of every group with the first, with a note on what was compared.
pub fn compare(loaded: &[Loaded], groups: &[Group]) -> (Option<Analysis>, Vec<String>) {
    let mut notes = Vec::new();
    if groups.len() < 2 {
        return (None, notes);
    }
    let first = &loaded[groups[0].runs[0]].run;
    let tcp = first.kind == "tcp";
    let unit = first.series.first().map_or("ns", |s| s.unit.as_str());
    let (scale, shown) = match unit {
        "ns" => (1e-3, "µs".to_string()),
        "kbit/s" => (1e-3, "Mbit/s".to_string()),
        u => (1.0, u.to_string()),
    };
    let repeats = groups.iter().all(|g| g.runs.len() >= 3);
    let metric = if tcp || !repeats {
        Metric::Latency
    } else {
        Metric::P99
    };
    notes.push(if tcp {
        "compared: the figures of every run (one value per run)".to_string()
    } else if repeats {
        "compared: the p99 of each run (the run is the unit of replication)".to_string()
    } else {
        "compared: all samples of each group. Samples inside one run are autocorrelated: repeat each configuration at least 3 times for a verdict that rests on runs".to_string()
    });
    let opts = ReadOpts {
        column: 1,
        delim: b" \t".to_vec(),
        metric,
        series: None,
        scale,
        store: None,
    };
    let mut sources = Vec::new();
    for g in groups {
        let runs: Vec<(Run, String)> = g
            .runs
            .iter()
            .map(|&i| (loaded[i].run.clone(), loaded[i].name.clone()))
            .collect();
        match load_runs(&g.label, &runs, &opts) {
            Ok(s) => sources.push(s),
            Err(e) => notes.push(format!("{}: not compared: {e}", g.label)),
        }
    }
    if sources.len() < 2 {
        notes.push("fewer than two groups could be compared".into());
        return (None, notes);
    }
    let settings = Settings {
        confidence: 0.95,
        replicates: 2000,
        seed: 1,
        higher_is_better: tcp,
        unit: shown,
        // The run is the unit: groups of several runs are compared run by run; a verdict on
        // single runs is never proven.
        assume_independent: false,
    };
    (Some(analyse(&sources, &settings)), notes)
}
