//! What `latlab tail` reads, turned into the upper part of one data set (`evt::Sample`):
//! run selectors and files as `latlab compare` takes them (`crate::dataset::select`), value
//! files in their line order (`latlab_core::stats::ministat`'s reader), and raw sample logs.
//!
//! A run's samples come in order when its raw sample log (`--samples`) is still where the run
//! says and holds every sample its histograms count; then the largest samples keep their
//! positions and bursts can be declustered. Otherwise the run's HDR histograms give the
//! largest samples at their resolution (0.1 %), spread evenly within each bucket, and without
//! an order (see `latlab_core::stats::evt` for what that costs).

use super::samplelog;
use crate::dataset::select::{self, Selector};
use latlab_core::error::{Error, Result};
use latlab_core::result::Run;
use latlab_core::stats::evt::{Exceedance, Sample};
use std::ffi::OsString;
use std::io::Read;
use std::path::{Path, PathBuf};

/// Largest samples kept per input: the lowest candidate threshold needs at most 5000 above it.
pub(crate) const KEEP: usize = 5001;

/// How inputs are read.
#[derive(Debug, Clone, Default)]
pub struct ReadOpts {
    /// Use only this series of runs and sample logs (None: all).
    pub series: Option<String>,
    /// Column of value files (1-based).
    pub column: usize,
    /// Delimiter bytes of value files.
    pub delim: Vec<u8>,
    /// Store `run:ID` and the other selectors read from.
    pub store: Option<String>,
    /// Treat the samples as independent even when their order is known (no declustering).
    pub no_decluster: bool,
    /// Keep disturbed runs that a selector naming several runs would leave out.
    pub include_disturbed: bool,
}

/// One data set made of all inputs.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// Its upper part.
    pub(crate) sample: Sample,
    /// True when the values are latencies in ns (runs, sample logs); false for value files,
    /// which keep their own unit.
    pub(crate) ns: bool,
    /// Measured time in seconds, when every input is a run.
    pub(crate) seconds: Option<f64>,
    /// The inputs' names.
    pub(crate) names: Vec<String>,
    /// How each input was read (sample order or histograms) and anything worth knowing.
    pub(crate) notes: Vec<String>,
}

/// One input's contribution.
struct Part {
    top: Vec<Exceedance>,
    n: u64,
    ordered: bool,
    series: u32,
    ns: bool,
    seconds: Option<f64>,
}

/// Loads every input named in `specs` (selectors, result files, value files, sample logs, `-`).
pub fn load(specs: &[OsString], o: &ReadOpts) -> Result<Loaded> {
    let items = select::parse(specs)?;
    if items.is_empty() {
        return Err(Error::Usage(
            "tail needs data: a run, a file or a selector".into(),
        ));
    }
    let mut resolver =
        select::Resolver::new(o.store.as_deref()).include_disturbed(o.include_disturbed);
    let mut parts = Vec::new();
    let mut names = Vec::new();
    let mut notes = Vec::new();
    let mut seen = std::collections::BTreeMap::new();
    for item in &items {
        match &item.sel {
            Selector::Stdin => {
                let v = read_values(std::io::stdin().lock(), None, "<stdin>", o)?;
                parts.push(value_part(v, o, "<stdin>", &mut notes));
                names.push("<stdin>".to_string());
            }
            // As compare: a bare word that is no file is a missing value file.
            Selector::Run(_) if item.bare => {
                return Err(Error::Usage(format!("{}: no such file", item.text)))
            }
            Selector::File(p) => {
                let name = p.display().to_string();
                let (kind, r, size) = open(p)?;
                match kind {
                    Kind::Json => {
                        let run = read_json(r, &name)?;
                        once(&mut seen, &run, &name)?;
                        parts.push(run_part(&run, &name, p.parent(), o, &mut notes)?);
                    }
                    Kind::Log => {
                        let mut r = std::io::BufReader::with_capacity(1 << 20, r);
                        parts.push(log_part(&mut r, &name, o, &mut notes)?);
                    }
                    Kind::Values => {
                        let v = read_values(r, size, &name, o)?;
                        parts.push(value_part(v, o, &name, &mut notes));
                    }
                }
                names.push(name);
            }
            _ => {
                for r in resolver.runs(item)? {
                    once(&mut seen, &r.run, &r.name)?;
                    parts.push(run_part(&r.run, &r.name, None, o, &mut notes)?);
                    names.push(r.name);
                }
            }
        }
    }
    merge(parts, names, notes)
}

/// Loads runs already in memory (each with the name messages use), e.g. a report's or a
/// qualification's; their sample logs are looked for where the runs say.
pub fn from_runs(runs: &[(&Run, &str)], o: &ReadOpts) -> Result<Loaded> {
    let mut parts = Vec::new();
    let mut notes = Vec::new();
    for (run, name) in runs {
        parts.push(run_part(run, name, None, o, &mut notes)?);
    }
    let names = runs.iter().map(|(_, n)| n.to_string()).collect();
    merge(parts, names, notes)
}

fn once(
    seen: &mut std::collections::BTreeMap<String, String>,
    run: &Run,
    name: &str,
) -> Result<()> {
    if let Some(first) = seen.insert(run.id.clone(), name.to_string()) {
        return Err(Error::Usage(format!(
            "{name} and {first} are the same run ({}): a run counts once",
            run.id
        )));
    }
    Ok(())
}

enum Kind {
    Json,
    Log,
    Values,
}

/// Opens a regular file (`io::open_typed`: a FIFO, a device or a directory is refused, never
/// waited on; no size limit, since sample logs are large and each kind bounds its own reading)
/// and tells its kind from its first bytes: the kind, a reader from the start, and its size.
fn open(p: &Path) -> Result<(Kind, impl Read, Option<u64>)> {
    let name = p.display();
    let mut f = latlab_core::io::open_typed(p, None, false).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => Error::Usage(format!("{name}: no such file")),
        _ => Error::Usage(format!("{name}: {e}")),
    })?;
    let meta = f
        .metadata()
        .map_err(|e| Error::Usage(format!("{name}: {e}")))?;
    let mut head = vec![0u8; 64];
    let mut n = 0;
    while n < head.len() {
        match f.read(&mut head[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(Error::Usage(format!("{name}: {e}"))),
        }
    }
    head.truncate(n);
    let kind = if head.starts_with(latlab_core::samples::MAGIC) {
        Kind::Log
    } else if head.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{') {
        Kind::Json
    } else {
        Kind::Values
    };
    let size = meta.is_file().then_some(meta.len());
    Ok((kind, std::io::Cursor::new(head).chain(f), size))
}

/// A latlab JSON result from a reader (at most `MAX_JSON_BYTES`).
fn read_json(r: impl Read, name: &str) -> Result<Run> {
    let limit = latlab_core::result::MAX_JSON_BYTES;
    let mut bytes = Vec::new();
    r.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Error::Usage(format!("{name}: {e}")))?;
    if bytes.len() as u64 > limit {
        return Err(Error::Usage(format!(
            "{name}: larger than {} MiB: not a latlab result",
            limit >> 20
        )));
    }
    let text = String::from_utf8(bytes)
        .map_err(|_| Error::Usage(format!("{name}: not UTF-8: not a latlab result")))?;
    Run::parse(&text, name)
}

fn read_values(r: impl Read, size: Option<u64>, name: &str, o: &ReadOpts) -> Result<Vec<f64>> {
    use latlab_core::stats::ministat::read::MAX_VALUES_BYTES;
    // The bound `compare` and `ministat` keep on a value file (1 GiB), here too; bytes past it
    // (a file that grows while read) are not read.
    if let Some(n) = size.filter(|&n| n > MAX_VALUES_BYTES) {
        return Err(Error::Usage(format!(
            "{name}: {n} bytes: a value file is read up to {} MiB",
            MAX_VALUES_BYTES >> 20
        )));
    }
    let r = r.take(MAX_VALUES_BYTES + 1);
    let v = latlab_core::stats::ministat::read::read_in_order(r, size, name, o.column, &o.delim)
        .map_err(|e| {
            Error::Usage(
                e.message()
                    .trim_start_matches("ministat: ")
                    .trim_start_matches("latlab: ")
                    .to_string(),
            )
        })?;
    if let Some(bad) = v.iter().find(|x| !x.is_finite()) {
        return Err(Error::Usage(format!(
            "{name}: value {bad} is not a finite number"
        )));
    }
    Ok(v)
}

/// A value file: its largest values with their line order (unless the file is sorted, whose
/// order says nothing about bursts).
fn value_part(v: Vec<f64>, o: &ReadOpts, name: &str, notes: &mut Vec<String>) -> Part {
    let n = v.len() as u64;
    let sorted = v.windows(2).all(|w| w[0] <= w[1]) || v.windows(2).all(|w| w[0] >= w[1]);
    if sorted {
        notes.push(format!(
            "{name}: the values are sorted, so their order says nothing about bursts: taken as independent"
        ));
    }
    let mut top: Vec<Exceedance> = v
        .iter()
        .enumerate()
        .map(|(i, &value)| Exceedance {
            value,
            series: 0,
            pos: i as u64,
        })
        .collect();
    let top = largest(&mut top, KEEP);
    let values: Vec<f64> = top.iter().map(|e| e.value).collect();
    Part {
        top: spread_ties(top, resolution(&values)),
        n,
        ordered: !sorted && !o.no_decluster,
        series: 1,
        ns: false,
        seconds: None,
    }
}

/// The `keep` largest, descending; every value above the smallest kept is kept.
fn largest(all: &mut [Exceedance], keep: usize) -> Vec<Exceedance> {
    let desc = |a: &Exceedance, b: &Exceedance| b.value.total_cmp(&a.value);
    if all.len() > keep {
        all.select_nth_unstable_by(keep, desc);
    }
    let mut top = all[..all.len().min(keep)].to_vec();
    top.sort_by(desc);
    top
}

/// The step all values are multiples of (1, 0.1, … 1e-6), None when they have no common one.
fn resolution(v: &[f64]) -> Option<f64> {
    (0..=6).map(|k| 10f64.powi(-k)).find(|r| {
        v.iter().all(|x| {
            let y = x / r;
            (y - y.round()).abs() <= 1e-9 * y.abs().max(1.0)
        })
    })
}

/// Rounded data have ties that no continuous fit explains: each group of equal values is
/// spread evenly over the rounding interval (±step/2), in position order. The smallest value's
/// group is dropped, since some of its copies may be missing.
pub(crate) fn spread_ties(mut top: Vec<Exceedance>, step: Option<f64>) -> Vec<Exceedance> {
    let Some(r) = step else {
        return top;
    };
    if top.windows(2).all(|w| w[0].value != w[1].value) {
        return top;
    }
    top.sort_by(|a, b| b.value.total_cmp(&a.value).then(a.pos.cmp(&b.pos)));
    let last = top.last().map(|e| e.value);
    top.retain(|e| Some(e.value) != last);
    let mut i = 0;
    while i < top.len() {
        let mut j = i;
        while j < top.len() && top[j].value == top[i].value {
            j += 1;
        }
        let c = (j - i) as f64;
        let v = top[i].value;
        for (k, e) in top[i..j].iter_mut().enumerate() {
            e.value = v - r / 2.0 + (k as f64 + 0.5) / c * r;
        }
        i = j;
    }
    sorted_desc(top)
}

/// A sample log given directly.
fn log_part(r: &mut impl Read, name: &str, o: &ReadOpts, notes: &mut Vec<String>) -> Result<Part> {
    let want = |n: &str| o.series.as_deref().is_none_or(|s| s == n);
    let s =
        samplelog::scan_reader(r, KEEP, &want).map_err(|e| Error::Usage(format!("{name}: {e}")))?;
    let chosen: Vec<usize> = (0..s.names.len()).filter(|&i| want(&s.names[i])).collect();
    if chosen.is_empty() {
        return Err(Error::Usage(format!(
            "{name}: no series {} (it has: {})",
            o.series.as_deref().unwrap_or("at all"),
            s.names.join(", ")
        )));
    }
    let n: u64 = chosen.iter().map(|&i| s.counts[i]).sum();
    match &s.lost {
        None => notes.push(format!(
            "{name}: no trailer, the log was cut short: its complete blocks are used"
        )),
        Some(l) if chosen.iter().any(|&i| l[i] > 0) => notes.push(format!(
            "{name}: {} samples were lost while writing: they are missing from the tail",
            chosen.iter().map(|&i| l[i]).sum::<u64>()
        )),
        _ => {}
    }
    notes.push(format!("{name}: raw samples in order"));
    Ok(Part {
        top: spread_ties(sorted_desc(s.top), Some(1.0)),
        n,
        ordered: !o.no_decluster,
        series: s.names.len() as u32,
        ns: true,
        seconds: None,
    })
}

fn sorted_desc(mut v: Vec<Exceedance>) -> Vec<Exceedance> {
    v.sort_by(|a, b| b.value.total_cmp(&a.value));
    v
}

/// One run: from its sample log when that is complete, else from its histograms.
fn run_part(
    run: &Run,
    name: &str,
    dir: Option<&Path>,
    o: &ReadOpts,
    notes: &mut Vec<String>,
) -> Result<Part> {
    let chosen: Vec<_> = run
        .series
        .iter()
        .filter(|s| o.series.as_deref().is_none_or(|n| n == s.name))
        .collect();
    if chosen.is_empty() {
        let names: Vec<&str> = run.series.iter().map(|s| s.name.as_str()).collect();
        return Err(Error::Usage(format!(
            "{name}: no series {} (it has: {})",
            o.series.as_deref().unwrap_or("at all"),
            names.join(", ")
        )));
    }
    if let Some(s) = chosen.iter().find(|s| s.unit != "ns") {
        return Err(Error::Usage(format!(
            "{name}: series {} holds {}, not latencies",
            s.name, s.unit
        )));
    }
    if let Some(s) = chosen.iter().find(|s| {
        s.extra
            .as_ref()
            .and_then(|e| e["beyond_histogram"]["count"].as_u64())
            .is_some_and(|c| c > 0)
    }) {
        return Err(Error::Usage(format!(
            "{name}: series {} has samples beyond its imported histogram whose values are unknown: \
             a tail cannot be fitted to them",
            s.name
        )));
    }
    let n: u64 = chosen.iter().map(|s| s.summary.count).sum();
    let seconds = (run.duration_s.is_finite() && run.duration_s > 0.0).then_some(run.duration_s);
    if let Some(p) = from_log(run, name, dir, &chosen, o, notes) {
        return Ok(Part { seconds, ..p });
    }
    let mut lists = Vec::new();
    for (i, s) in chosen.iter().enumerate() {
        let n: u64 = s.histogram.buckets.iter().map(|b| b[1]).sum();
        // The count scales every probability: one the histogram contradicts would move the
        // whole tail (a histogram of a thousand samples read as a billion).
        if n > 0 && n != s.summary.count {
            return Err(Error::Usage(format!(
                "{name}: series {}: its count ({}) contradicts its histogram ({n} samples)",
                s.name, s.summary.count
            )));
        }
        lists.push((from_buckets(s, i as u32, name)?, n));
    }
    let top = complete_union(lists);
    let hist_n: u64 = chosen
        .iter()
        .flat_map(|s| s.histogram.buckets.iter().map(|b| b[1]))
        .sum();
    notes.push(format!(
        "{name}: from its histograms (0.1 % resolution, no sample order: bursts cannot be declustered)"
    ));
    Ok(Part {
        top,
        n: hist_n.max(n),
        ordered: false,
        series: chosen.len() as u32,
        ns: true,
        seconds,
    })
}

/// The run's sample log, when it is where the run says and holds exactly the samples its
/// histograms count; None (with a note saying why) otherwise.
fn from_log(
    run: &Run,
    name: &str,
    dir: Option<&Path>,
    chosen: &[&latlab_core::result::Series],
    o: &ReadOpts,
    notes: &mut Vec<String>,
) -> Option<Part> {
    let given = run.samples_path.as_ref()?;
    let g = PathBuf::from(given);
    let path = [Some(g.clone()), dir.map(|d| d.join(&g))]
        .into_iter()
        .flatten()
        .find(|p| p.is_file());
    let Some(path) = path else {
        notes.push(format!(
            "{name}: its sample log {given} is not there: read from its histograms"
        ));
        return None;
    };
    let want = |n: &str| chosen.iter().any(|s| s.name == n);
    let scan = match samplelog::scan(&path, KEEP, &want) {
        Ok(s) => s,
        Err(e) => {
            notes.push(format!("{name}: its sample log is unreadable ({e})"));
            return None;
        }
    };
    let mut idx = Vec::new();
    for s in chosen {
        let Some(i) = scan.names.iter().position(|n| *n == s.name) else {
            notes.push(format!(
                "{name}: its sample log {} has no series {}: read from its histograms",
                path.display(),
                s.name
            ));
            return None;
        };
        let hist: u64 = s.histogram.buckets.iter().map(|b| b[1]).sum();
        let lost = scan.lost.as_ref().map_or(0, |l| l[i]);
        if scan.counts[i] != hist || scan.lost.is_none() || lost > 0 {
            notes.push(format!(
                "{name}: its sample log {} holds {} of series {}'s {} samples{}: read from its histograms",
                path.display(),
                scan.counts[i],
                s.name,
                hist,
                if lost > 0 { format!(" ({lost} lost)") } else { String::new() }
            ));
            return None;
        }
        idx.push(i as u32);
    }
    // Series renumbered to the chosen order.
    let top: Vec<Exceedance> = scan
        .top
        .into_iter()
        .filter_map(|e| {
            let k = idx.iter().position(|&i| i == e.series)?;
            Some(Exceedance {
                series: k as u32,
                ..e
            })
        })
        .collect();
    notes.push(format!(
        "{name}: raw samples in order from {}",
        path.display()
    ));
    Some(Part {
        top: spread_ties(sorted_desc(top), Some(1.0)),
        n: idx.iter().map(|&i| scan.counts[i as usize]).sum(),
        ordered: !o.no_decluster,
        series: chosen.len() as u32,
        ns: true,
        seconds: None,
    })
}

/// A series' `KEEP` largest samples from its HDR buckets, spread evenly within each bucket
/// (the top bucket up to the exact maximum), so every sample above the lowest value returned
/// is returned.
fn from_buckets(
    s: &latlab_core::result::Series,
    series: u32,
    name: &str,
) -> Result<Vec<Exceedance>> {
    let h = &s.histogram;
    let hdr = hdrhistogram::Histogram::<u64>::new_with_bounds(
        h.lowest_ns.max(1),
        h.highest_ns.max(2 * h.lowest_ns.max(1)),
        h.significant_digits.clamp(1, 5),
    )
    .map_err(|e| Error::Usage(format!("{name}: series {}: bad histogram: {e}", s.name)))?;
    let mut b: Vec<[u64; 2]> = h.buckets.iter().copied().filter(|b| b[1] > 0).collect();
    b.sort_by(|x, y| y[0].cmp(&x[0]));
    let (min, max) = if s.summary.count > 0 {
        (s.summary.min_ns as f64, s.summary.max_ns as f64)
    } else {
        (0.0, f64::INFINITY)
    };
    let mut out = Vec::new();
    for (k, &[v, c]) in b.iter().enumerate() {
        let room = (KEEP - out.len()) as u64;
        if room == 0 {
            break;
        }
        let hi = (v as f64).min(max);
        let lo = (hdr.lowest_equivalent(v) as f64).clamp(min.min(hi), hi);
        // Only the bucket's top `room` of its evenly spread samples when it holds more.
        for j in c - c.min(room)..c {
            // The top bucket ends at the exact maximum, which is a real sample.
            let f = if k == 0 {
                (j + 1) as f64 / c as f64
            } else {
                (j as f64 + 0.5) / c as f64
            };
            out.push(Exceedance {
                value: lo + f * (hi - lo),
                series,
                pos: 0,
            });
        }
    }
    Ok(out)
}

/// The union of lists of largest samples, each `(list, samples it was taken from)`: only the
/// values above the highest floor of a list that is not complete (every list holds all its
/// samples above that), the `KEEP` largest, descending.
fn complete_union(lists: Vec<(Vec<Exceedance>, u64)>) -> Vec<Exceedance> {
    let floor = lists
        .iter()
        .filter(|(l, n)| (l.len() as u64) < *n)
        .filter_map(|(l, _)| l.iter().map(|e| e.value).reduce(f64::min))
        .fold(f64::NEG_INFINITY, f64::max);
    let all = lists
        .into_iter()
        .flat_map(|(l, _)| l.into_iter().filter(|e| e.value > floor))
        .collect();
    let mut top = sorted_desc(all);
    top.truncate(KEEP);
    top
}

/// All parts as one sample: series numbered across parts; values kept where every part is
/// complete (above the highest floor of a truncated part), the `KEEP` largest.
fn merge(parts: Vec<Part>, names: Vec<String>, mut notes: Vec<String>) -> Result<Loaded> {
    if parts.iter().any(|p| p.ns) && parts.iter().any(|p| !p.ns) {
        return Err(Error::Usage(
            "tail: latlab runs (ns) and value files cannot be pooled: give one kind".into(),
        ));
    }
    let ordered = parts.iter().all(|p| p.ordered);
    if !ordered && parts.iter().any(|p| p.ordered) {
        notes.push(
            "some inputs have no sample order: all are taken as independent samples".to_string(),
        );
    }
    let mut lists = Vec::new();
    let mut base = 0u32;
    let mut n = 0u64;
    for p in &parts {
        n = n
            .checked_add(p.n)
            .ok_or_else(|| Error::Usage("tail: sample counts overflow".into()))?;
        let renumbered = p.top.iter().map(|e| Exceedance {
            series: base + e.series,
            ..*e
        });
        lists.push((renumbered.collect(), p.n));
        base = base.saturating_add(p.series);
    }
    let top = complete_union(lists);
    let seconds = parts
        .iter()
        .map(|p| p.seconds)
        .sum::<Option<f64>>()
        .filter(|s| *s > 0.0);
    Ok(Loaded {
        sample: Sample { n, top, ordered },
        ns: parts.first().is_some_and(|p| p.ns),
        seconds,
        names,
        notes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(value: f64, pos: u64) -> Exceedance {
        Exceedance {
            value,
            series: 0,
            pos,
        }
    }

    #[test]
    fn ties_of_rounded_values_are_spread_over_their_step() {
        let top = vec![e(12.0, 4), e(10.0, 1), e(10.0, 3), e(9.0, 0), e(9.0, 2)];
        let s = spread_ties(top, resolution(&[12.0, 10.0, 9.0]));
        let v: Vec<f64> = s.iter().map(|x| x.value).collect();
        // 12 alone stays; the two 10s become 10.25 and 9.75; the 9s (the floor) go.
        assert_eq!(v, vec![12.0, 10.25, 9.75]);
        assert_eq!(resolution(&[0.5, 1.25]), Some(0.01));
        assert_eq!(resolution(&[std::f64::consts::PI]), None);
    }

    #[test]
    fn merging_keeps_only_what_every_part_has() {
        let a = Part {
            top: vec![e(10.0, 0), e(8.0, 1)],
            n: 100,
            ordered: true,
            series: 1,
            ns: false,
            seconds: None,
        };
        let b = Part {
            top: vec![e(9.0, 0), e(7.0, 1), e(1.0, 2)],
            n: 3,
            ordered: true,
            series: 1,
            ns: false,
            seconds: None,
        };
        let m = merge(vec![a, b], vec![], vec![]).unwrap();
        let v: Vec<(f64, u32)> = m.sample.top.iter().map(|x| (x.value, x.series)).collect();
        // a is truncated at 8: only values above 8 are complete.
        assert_eq!(v, vec![(10.0, 0), (9.0, 1)]);
        assert_eq!(m.sample.n, 103);
    }
}
