//! Turning `latlab compare` arguments into data sets: value files (ministat's reading rules),
//! and latlab JSON results (a run's latency histogram, or one metric per run).

use crate::dataset::select::Selector;
use latlab_core::error::{Error, Result};
use latlab_core::result::Run;
use latlab_core::stats::dist::Dist;
use latlab_core::stats::ministat::{read_set, read_set_sized};
use std::ffi::OsStr;
use std::io::Read;
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
    /// Column of value files (1-based).
    pub column: usize,
    /// Delimiter bytes of value files.
    pub delim: Vec<u8>,
    /// Metric for JSON results.
    pub metric: Metric,
    /// Series of JSON results to use (None: all, merged).
    pub series: Option<String>,
    /// Scale applied to JSON nanoseconds (1e-3 for µs).
    pub scale: f64,
    /// Store `run:ID` sets are read from.
    pub store: Option<String>,
    /// Keep runs whose ground moved while they measured (`--include-disturbed`).
    pub include_disturbed: bool,
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
}

pub use latlab_core::result::MAX_JSON_BYTES;

/// Words of the error a run without a histogram (an imported pmqtest run) gives where its
/// distribution is needed; `compare --metric max|mean|min` then reads its exact figures.
pub const NO_HISTOGRAM: &str = "but no histogram";

/// One item of a set: a stored run, a file, or standard input.
#[derive(Debug, Clone)]
enum Item {
    File(PathBuf),
    Stdin,
    Loaded(Box<Run>, String),
}

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
    // A whole argument that names an existing file is that file (`my run.json`, `a=b.json`),
    // labelled with its name.
    if !spec.is_empty() && Path::new(spec).exists() {
        let p = PathBuf::from(spec);
        return load_items(p.display().to_string(), &[Item::File(p)], o);
    }
    let (label, rest) = split_label(spec);
    let rest = rest.as_bytes();
    let sels = crate::dataset::select::parse(&[OsStr::from_bytes(rest)])?;
    let text = String::from_utf8_lossy(rest).into_owned();
    let label = label.unwrap_or_else(|| crate::dataset::select::default_label(&sels, &text));
    if sels.is_empty() {
        return Err(Error::Usage(format!("set '{label}': no file named")));
    }
    let mut resolver =
        crate::dataset::select::Resolver::new(o.store.as_deref()).include_disturbed(o.include_disturbed);
    let mut items = Vec::new();
    for s in &sels {
        match &s.sel {
            Selector::File(p) => items.push(Item::File(p.clone())),
            // compare names stored runs `run:ID`; a bare word is a (missing) value file.
            Selector::Run(_) if s.bare => items.push(Item::File(PathBuf::from(&s.text))),
            Selector::Stdin => items.push(Item::Stdin),
            _ => items.extend(
                resolver
                    .runs(s)?
                    .into_iter()
                    .map(|r| Item::Loaded(Box::new(r.run), r.name)),
            ),
        }
    }
    load_items(label, &items, o)
}

/// A set labelled `label` from results already in memory (a plan's runs), each with the name
/// messages use for it.
pub fn load_runs(label: &str, runs: &[(Run, String)], o: &ReadOpts) -> Result<Source> {
    let items: Vec<Item> = runs
        .iter()
        .map(|(r, n)| Item::Loaded(Box::new(r.clone()), n.clone()))
        .collect();
    if items.is_empty() {
        return Err(Error::Usage(format!("set '{label}': no run")));
    }
    load_items(label.to_string(), &items, o)
}

fn load_items(label: String, items: &[Item], o: &ReadOpts) -> Result<Source> {
    let mut values: Vec<f64> = Vec::new();
    let mut dists: Vec<Dist> = Vec::new();
    let mut json = 0usize;
    let mut total = 0u64;
    let mut seen: std::collections::BTreeMap<String, String> = Default::default();
    let mut info = Vec::new();
    for item in items {
        let json_run = match item {
            Item::Loaded(r, n) => Some(((**r).clone(), n.clone())),
            Item::File(p) if looks_like_json(p)? => Some((read_run(p)?, p.display().to_string())),
            _ => None,
        };
        if let Some((run, name)) = json_run {
            // Each run is one replicate: the same run twice in a set would count twice.
            if let Some(first) = seen.insert(run.id.clone(), name.clone()) {
                return Err(Error::Usage(format!(
                    "set '{label}': {name} and {first} are the same run ({}); a run counts once",
                    run.id
                )));
            }
            json += 1;
            let (d, series) = match run_dist(&run, &name, o) {
                Ok(x) => x,
                // A run with only exact figures (an imported pmqtest run) gives them.
                Err(e)
                    if matches!(o.metric, Metric::Min | Metric::Max | Metric::Mean)
                        && e.to_string().contains(NO_HISTOGRAM) =>
                {
                    let all: Vec<_> = run.series.iter().collect();
                    let chosen: Vec<_> = all
                        .into_iter()
                        .filter(|s| o.series.as_ref().is_none_or(|n| *n == s.name))
                        .collect();
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
            });
            match o.metric {
                Metric::Latency => dists.push(d),
                m => values.push(scalar(&d, &series, m, o.scale)),
            }
            continue;
        }
        let r = match item {
            Item::Stdin => read_set(std::io::stdin().lock(), "<stdin>", o.column, &o.delim),
            Item::File(p) => {
                let name = p.display().to_string();
                let mut f = latlab_core::io::open_input(
                    p,
                    Some(latlab_core::stats::ministat::read::MAX_VALUES_BYTES),
                )?;
                refuse_histogram_text(&mut f, &name)?;
                let size = f.metadata().ok().map(|m| m.len());
                read_set_sized(f, size, &name, o.column, &o.delim)
            }
            Item::Loaded(..) => {
                return Err(Error::Env("internal: a result was read as values".into()))
            }
        };
        let set = r.map_err(|e| {
            Error::Usage(
                e.message()
                    .trim_start_matches("ministat: ")
                    .trim_start_matches("latlab: ")
                    .to_string(),
            )
        })?;
        values.extend(set.points);
    }
    if json > 0 && json < items.len() {
        return Err(Error::Usage(format!(
            "set '{label}': mixes latlab JSON results and value files"
        )));
    }
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

/// Refuses cyclictest's `-h` text output given as a file of values: read as values, its
/// first column is the buckets' numbers (0, 1, 2 ... whatever was measured), so two such files
/// would always compare the same. Looks at the file's first 4 KiB and rewinds it.
fn refuse_histogram_text(f: &mut std::fs::File, name: &str) -> Result<()> {
    use std::io::{Read, Seek};
    let mut head = Vec::with_capacity(4096);
    let _ = f.by_ref().take(4096).read_to_end(&mut head);
    f.rewind()
        .map_err(|e| Error::Env(format!("{name}: cannot read it again: {e}")))?;
    let text = String::from_utf8_lossy(&head);
    if text.lines().any(|l| l.trim_end() == "# Histogram") {
        return Err(Error::Usage(format!(
            "{name}: this is cyclictest's histogram output (-h), not one value per line (its first \
             column would be read as the buckets' numbers): run cyclictest with --json=FILE, \
             `latlab runs import --from cyclictest FILE`, and compare the stored runs"
        )));
    }
    Ok(())
}

/// One run's latency distribution, every series merged and scaled by `scale` (1e-3: µs), as
/// the comparison of runs reads it (top buckets pulled down to the exact maximum); `name`
/// names the run in messages. Exit 2 when it holds no samples.
pub(crate) fn run_latency(run: &Run, name: &str, scale: f64) -> Result<Dist> {
    let o = ReadOpts {
        column: 1,
        delim: Vec::new(),
        metric: Metric::Latency,
        series: None,
        scale,
        store: None,
        include_disturbed: false,
    };
    Ok(run_dist(run, name, &o)?.0)
}

fn looks_like_json(p: &Path) -> Result<bool> {
    let name = p.display();
    let mut f = latlab_core::io::open_input(p, None)?;
    let mut head = [0u8; 64];
    let n = f
        .read(&mut head)
        .map_err(|e| Error::Usage(format!("{name}: {e}")))?;
    Ok(head[..n].iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{'))
}

fn read_run(p: &Path) -> Result<Run> {
    let name = p.display().to_string();
    let text = latlab_core::io::read_text_limited(p, MAX_JSON_BYTES, "latlab result")?;
    Run::parse(&text, &name)
}

fn run_dist<'r>(
    run: &'r Run,
    p: &str,
    o: &ReadOpts,
) -> Result<(Dist, Vec<&'r latlab_core::result::Series>)> {
    let series: Vec<_> = match &o.series {
        None => run.series.iter().collect(),
        Some(name) => run.series.iter().filter(|s| &s.name == name).collect(),
    };
    if series.is_empty() {
        let names: Vec<&str> = run.series.iter().map(|s| s.name.as_str()).collect();
        return Err(Error::Usage(format!(
            "{p}: no series {} (it has: {})",
            o.series.as_deref().unwrap_or("at all"),
            names.join(", ")
        )));
    }
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
