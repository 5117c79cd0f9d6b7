//! Turning `latlab compare` arguments into data sets: value files (ministat's reading rules),
//! and latlab JSON results (a run's latency histogram, or one metric per run).

use crate::dataset::input::{self, Input, Reader};
use latlab_core::error::{Error, Result};
use latlab_core::result::Run;
use latlab_core::stats::dist::Dist;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// What to take from latlab JSON results.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Metric {
    /// The run's whole latency distribution (its histograms).
    Latency,
    /// One value per run: its minimum.
    Min,
    /// One value per run: its maximum.
    Max,
    /// One value per run: its mean.
    Mean,
    /// One value per run: its median.
    P50,
    /// One value per run: its 99th percentile.
    P99,
    /// One value per run: its 99.9th percentile.
    #[value(name = "p99.9")]
    P999,
}

/// How sources are read.
#[derive(Debug, Clone)]
pub struct ReadOpts {
    /// What every analysis command reads alike (columns, series, store).
    pub read: crate::dataset::ReadOpts,
    /// Metric for JSON results.
    pub metric: Metric,
    /// Scale applied to JSON nanoseconds (1e-3 for µs).
    pub scale: f64,
}

/// A labelled data set.
#[derive(Debug, Clone)]
pub struct Source {
    /// Label shown in tables.
    pub label: String,
    /// The data.
    pub dist: Dist,
    /// True when the values came from latlab JSON (so they carry the display unit).
    pub from_json: bool,
    /// Each run's own distribution, when the set is latency samples of latlab runs (the run is
    /// the unit of replication); empty when every value is already one replicate.
    pub runs: Vec<Dist>,
    /// What is known of each run in `runs` besides its distribution (same order).
    pub info: Vec<RunInfo>,
}

/// One run of a set: its name for messages, its length and its exact mean.
#[derive(Debug, Clone, PartialEq)]
pub struct RunInfo {
    /// `run:ID` or the file name.
    pub name: String,
    /// The run's id (two names may stand for one run: `run:ID` and its exported file).
    pub id: String,
    /// Its kind (`cyclic`, or the tool an imported run came from).
    pub kind: String,
    /// Measured wall time, seconds.
    pub(crate) secs: f64,
    /// Its exact mean (from the series summaries), in the display unit.
    pub(crate) mean: f64,
    /// The boot it ran in (`environment.boot_id`; empty when unknown).
    pub(crate) boot: String,
}

pub use latlab_core::result::MAX_JSON_BYTES;

/// Words of the error a run without a histogram (an imported pmqtest run) gives where its
/// distribution is needed; `compare --metric max|mean|min` then reads its exact figures.
pub const NO_HISTOGRAM: &str = "but no histogram";

/// Splits `[LABEL=]LIST` into its label (when one is given) and the list. A whole argument
/// that names an existing file has no label (`a=b.json`).
pub fn split_label(spec: &OsStr) -> (Option<String>, &OsStr) {
    if !spec.is_empty() && Path::new(spec).exists() {
        return (None, spec);
    }
    let b = spec.as_bytes();
    let label_end = b.iter().position(|&c| c == b'=').filter(|&i| {
        i > 0
            && !b[..i]
                .iter()
                .any(|c| b"/:,".contains(c) || c.is_ascii_whitespace())
    });
    match label_end {
        Some(i) => (
            Some(String::from_utf8_lossy(&b[..i]).into_owned()),
            OsStr::from_bytes(&b[i + 1..]),
        ),
        None => (None, spec),
    }
}

/// Parses `[LABEL=]LIST`, LIST being run selectors (`crate::dataset::select`) or value files,
/// separated by commas or spaces; paths need not be UTF-8.
pub fn load(spec: &OsStr, o: &ReadOpts) -> Result<Source> {
    let mut reader = Reader::new(&o.read);
    // A whole argument that names an existing file is that file (`my run.json`, `a=b.json`),
    // labelled with its name.
    if !spec.is_empty() && Path::new(spec).exists() {
        let p = PathBuf::from(spec);
        let label = p.display().to_string();
        let inputs = reader.inputs(&file_item(p)).map_err(|e| in_set(&label, e))?;
        return load_items(label, inputs, o);
    }
    let (label, rest) = split_label(spec);
    let rest = rest.as_bytes();
    let sels = crate::dataset::select::parse(&[OsStr::from_bytes(rest)])?;
    let text = String::from_utf8_lossy(rest).into_owned();
    let label = label.unwrap_or_else(|| crate::dataset::select::default_label(&sels, &text));
    if sels.is_empty() {
        return Err(Error::Usage(format!("set '{label}': no file named")));
    }
    let mut inputs = Vec::new();
    for s in &sels {
        inputs.extend(reader.inputs(s).map_err(|e| in_set(&label, e))?);
    }
    load_items(label, inputs, o)
}

fn file_item(p: PathBuf) -> crate::dataset::select::Item {
    crate::dataset::select::Item {
        text: p.display().to_string(),
        sel: crate::dataset::select::Selector::File(p),
        bare: false,
    }
}

/// A run counted twice is said with the set it was found in.
fn in_set(label: &str, e: Error) -> Error {
    match e {
        Error::Usage(m) if m.ends_with("a run counts once") => {
            Error::Usage(format!("set '{label}': {m}"))
        }
        e => e,
    }
}

/// A set labelled `label` from results already in memory (a plan's runs), each with the name
/// messages use for it.
pub fn load_runs(label: &str, runs: &[(Run, String)], o: &ReadOpts) -> Result<Source> {
    if runs.is_empty() {
        return Err(Error::Usage(format!("set '{label}': no run")));
    }
    let mut reader = Reader::new(&o.read);
    let mut inputs = Vec::new();
    for (r, n) in runs {
        reader.once(r, n).map_err(|e| in_set(label, e))?;
        inputs.push(Input::Run {
            run: Box::new(r.clone()),
            name: n.clone(),
            dir: None,
        });
    }
    load_items(label.to_string(), inputs, o)
}

fn load_items(label: String, inputs: Vec<Input>, o: &ReadOpts) -> Result<Source> {
    let n_inputs = inputs.len();
    let mut values: Vec<f64> = Vec::new();
    let mut dists: Vec<Dist> = Vec::new();
    let mut json = 0usize;
    let mut total = 0u64;
    let mut info = Vec::new();
    for input in inputs {
        let (run, name) = match input {
            Input::Run { run, name, .. } => (run, name),
            Input::Stdin => {
                values.extend(input::read_stdin(&o.read)?);
                continue;
            }
            Input::Values { name, reader, size } => {
                values.extend(input::read_values(reader, size, &name, &o.read)?);
                continue;
            }
            Input::Log { name, .. } => {
                return Err(Error::Usage(format!(
                    "{name}: a raw sample log (--samples): compare reads its run (run:ID or its \
                     JSON result), which finds the log"
                )))
            }
        };
        json += 1;
        let (d, series) = match run_dist(&run, &name, o) {
            Ok(x) => x,
            // A run with only exact figures (an imported pmqtest run) gives them.
            Err(e)
                if matches!(o.metric, Metric::Min | Metric::Max | Metric::Mean)
                    && e.to_string().contains(NO_HISTOGRAM) =>
            {
                let chosen = input::chosen_series(&run, o.read.series.as_deref(), &name)?;
                let empty = Dist::from_values(vec![0.0]);
                values.push(scalar(&empty, &chosen, o.metric, o.scale));
                continue;
            }
            Err(e) => return Err(e),
        };
        total = total.checked_add(d.n()).ok_or_else(|| {
            Error::Usage(format!("set '{label}': {name}: sample counts overflow"))
        })?;
        info.push(RunInfo {
            name: name.clone(),
            id: run.id.clone(),
            kind: run.kind.clone(),
            secs: run.duration_s,
            mean: scalar(&d, &series, Metric::Mean, o.scale),
            boot: run.environment.boot_id.clone(),
        });
        match o.metric {
            Metric::Latency => dists.push(d),
            m => values.push(scalar(&d, &series, m, o.scale)),
        }
    }
    if json > 0 && json < n_inputs {
        return Err(Error::Usage(format!(
            "set '{label}': mixes latlab JSON results and value files"
        )));
    }
    finish(label, values, dists, json, info, o)
}

/// The set from what its inputs gave: values and distributions merged, runs kept apart when
/// they are latency samples of latlab runs.
fn finish(
    label: String,
    values: Vec<f64>,
    mut dists: Vec<Dist>,
    json: usize,
    info: Vec<RunInfo>,
    o: &ReadOpts,
) -> Result<Source> {
    if let Some(bad) = values.iter().find(|v| !v.is_finite()) {
        return Err(Error::Usage(format!(
            "set '{label}': value {bad} is not a finite number"
        )));
    }
    if !values.is_empty() {
        dists.push(Dist::from_values(values));
    }
    let (runs, info) = if json > 0 && o.metric == Metric::Latency {
        (dists.clone(), info)
    } else {
        (Vec::new(), Vec::new())
    };
    let dist = Dist::merge(&dists);
    if dist.n() < 3 {
        return Err(Error::Usage(format!(
            "set '{label}': {} value(s); a comparison needs at least 3 (with --metric other than latency, one per JSON result)",
            dist.n()
        )));
    }
    Ok(Source {
        label,
        dist,
        from_json: json > 0,
        runs,
        info,
    })
}

/// One run's latency distribution, every series merged and scaled by `scale` (1e-3: µs), as
/// the comparison of runs reads it (top buckets pulled down to the exact maximum); `name`
/// names the run in messages. Exit 2 when it holds no samples.
pub(crate) fn run_latency(run: &Run, name: &str, scale: f64) -> Result<Dist> {
    let o = ReadOpts {
        read: Default::default(),
        metric: Metric::Latency,
        scale,
    };
    Ok(run_dist(run, name, &o)?.0)
}

fn run_dist<'r>(
    run: &'r Run,
    p: &str,
    o: &ReadOpts,
) -> Result<(Dist, Vec<&'r latlab_core::result::Series>)> {
    let series = input::chosen_series(run, o.read.series.as_deref(), p)?;
    // Counts past u64 cannot be ranked: refuse them rather than saturate into nonsense.
    series
        .iter()
        .flat_map(|s| s.histogram.buckets.iter().map(|b| b[1]))
        .try_fold(0u64, u64::checked_add)
        .ok_or_else(|| Error::Usage(format!("{p}: sample counts overflow")))?;
    // A bucket's value is the top of its range, which can pass the exact maximum the series
    // recorded: the top buckets are pulled down to it, so max and tail quantiles are exact.
    let parts: Vec<Dist> = series
        .iter()
        .map(|s| {
            // Likewise a bucket floor (an imported table's) can lie below the exact minimum.
            let (floor, cap) = if s.summary.count > 0 {
                (s.summary.min_ns.min(s.summary.max_ns), s.summary.max_ns)
            } else {
                (0, u64::MAX)
            };
            let b = s.histogram.buckets.iter();
            Dist::from_counts(b.map(|&[v, c]| (v.clamp(floor, cap) as f64, c)), o.scale)
        })
        .collect();
    let d = Dist::merge(&parts);
    if d.n() == 0 {
        let counted: u64 = series.iter().map(|s| s.summary.count).sum();
        if counted > 0 {
            let names: Vec<&str> = series.iter().map(|s| s.name.as_str()).collect();
            return Err(Error::Usage(format!(
                "{p}: series {} hold {counted} samples {NO_HISTOGRAM} ({} kept only their min, \
                 mean and max): compare one figure per run with --metric max, mean or min",
                names.join(", "),
                run.kind
            )));
        }
        return Err(Error::Usage(format!(
            "{p}: the selected series hold no samples"
        )));
    }
    Ok((d, series))
}

/// One run's metric: min, max and mean exact from the series summaries, quantiles from the
/// merged histogram (within its 0.1 %).
fn scalar(d: &Dist, series: &[&latlab_core::result::Series], m: Metric, scale: f64) -> f64 {
    let live = series.iter().filter(|s| s.summary.count > 0);
    match m {
        Metric::Latency => unreachable!("latency is a distribution, not a scalar"),
        Metric::Min => live.map(|s| s.summary.min_ns).min().unwrap_or(0) as f64 * scale,
        Metric::Max => live.map(|s| s.summary.max_ns).max().unwrap_or(0) as f64 * scale,
        Metric::Mean => {
            let (sum, n) = live.fold((0f64, 0u64), |(a, n), s| {
                (
                    a + s.summary.mean_ns * s.summary.count as f64,
                    n + s.summary.count,
                )
            });
            sum / n.max(1) as f64 * scale
        }
        Metric::P50 => d.quantile(0.5),
        Metric::P99 => d.quantile(0.99),
        Metric::P999 => d.quantile(0.999),
    }
}
