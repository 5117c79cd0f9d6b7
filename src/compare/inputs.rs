//! Turning `latlab compare` arguments into data sets: value files (ministat's reading rules),
//! and latlab JSON results (a run's latency histogram, or one metric per run).

use crate::error::{Error, Result};
use crate::result::Run;
use crate::stats::dist::Dist;
use crate::stats::ministat::read_set;
use std::io::{BufReader, Read};
use std::path::Path;

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
}

/// Parses `[LABEL=]PATH[,PATH...]`.
pub fn load(spec: &str, o: &ReadOpts) -> Result<Source> {
    let (label, paths) = match spec.split_once('=') {
        Some((l, p)) if !l.is_empty() && !l.contains('/') => (l.to_string(), p),
        _ => (spec.to_string(), spec),
    };
    // `run:A,B` names several stored runs.
    let expanded: String;
    let paths = match paths.strip_prefix("run:") {
        Some(ids) if ids.contains(',') => {
            expanded = ids
                .split(',')
                .map(|i| format!("run:{i}"))
                .collect::<Vec<_>>()
                .join(",");
            expanded.as_str()
        }
        _ => paths,
    };
    let paths: Vec<&str> = paths.split(',').filter(|p| !p.is_empty()).collect();
    if paths.is_empty() {
        return Err(Error::Usage(format!("set '{spec}': no file named")));
    }
    let mut values: Vec<f64> = Vec::new();
    let mut dists: Vec<Dist> = Vec::new();
    let mut json = 0usize;
    for p in &paths {
        if let Some(id) = p.strip_prefix("run:") {
            json += 1;
            let entry = crate::store::open(o.store.as_deref())?.get(id)?;
            let run: Run = serde_json::from_value(entry.run)
                .map_err(|e| Error::Env(format!("stored run {id}: {e}")))?;
            let (d, series) = run_dist(&run, p, o)?;
            match o.metric {
                Metric::Latency => dists.push(d),
                m => values.push(scalar(&d, &series, m, o.scale)),
            }
        } else if looks_like_json(p)? {
            json += 1;
            let run = read_run(p)?;
            let (d, series) = run_dist(&run, p, o)?;
            match o.metric {
                Metric::Latency => dists.push(d),
                m => values.push(scalar(&d, &series, m, o.scale)),
            }
        } else {
            let name = if *p == "-" { "<stdin>" } else { p };
            let r = if *p == "-" {
                read_set(std::io::stdin().lock(), name, o.column, &o.delim)
            } else {
                let f = std::fs::File::open(p).map_err(|e| Error::Usage(format!("{p}: {e}")))?;
                read_set(BufReader::new(f), name, o.column, &o.delim)
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
    }
    if json > 0 && json < paths.len() {
        return Err(Error::Usage(format!(
            "set '{label}': mixes latlab JSON results and value files"
        )));
    }
    if !values.is_empty() {
        dists.push(Dist::from_values(values));
    }
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
    })
}

fn looks_like_json(p: &str) -> Result<bool> {
    if p == "-" {
        return Ok(false);
    }
    let mut f = std::fs::File::open(p).map_err(|e| Error::Usage(format!("{p}: {e}")))?;
    let mut head = [0u8; 64];
    let n = f
        .read(&mut head)
        .map_err(|e| Error::Usage(format!("{p}: {e}")))?;
    Ok(head[..n].iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{'))
}

fn read_run(p: &str) -> Result<Run> {
    let text =
        std::fs::read_to_string(Path::new(p)).map_err(|e| Error::Usage(format!("{p}: {e}")))?;
    let run: Run = serde_json::from_str(&text).map_err(|e| {
        Error::Usage(format!(
            "{p}: not a latlab result: {e} (line {}, column {})",
            e.line(),
            e.column()
        ))
    })?;
    if run.schema != crate::result::SCHEMA {
        return Err(Error::Usage(format!(
            "{p}: schema '{}' is not {}",
            run.schema,
            crate::result::SCHEMA
        )));
    }
    Ok(run)
}

fn run_dist<'r>(
    run: &'r Run,
    p: &str,
    o: &ReadOpts,
) -> Result<(Dist, Vec<&'r crate::result::Series>)> {
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
    let parts: Vec<Dist> = series
        .iter()
        .map(|s| Dist::from_histogram(&s.histogram, o.scale))
        .collect();
    let d = Dist::merge(&parts);
    if d.n() == 0 {
        return Err(Error::Usage(format!(
            "{p}: the selected series hold no samples"
        )));
    }
    Ok((d, series))
}

/// One run's metric: min, max and mean exact from the series summaries, quantiles from the
/// merged histogram (within its 0.1 %).
fn scalar(d: &Dist, series: &[&crate::result::Series], m: Metric, scale: f64) -> f64 {
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
