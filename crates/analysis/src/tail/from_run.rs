//! A tail's largest samples from a latlab run: from its raw sample log, in order, when the log
//! is where the run says and complete; else from its HDR histograms, spread within each bucket.

use super::part::{complete_union, sorted_desc, Part, ReadOpts, KEEP};
use super::samplelog;
use super::values::spread_ties;
use crate::dataset::input;
use latlab_core::error::{Error, Result};
use latlab_core::result::Run;
use latlab_core::stats::evt::Exceedance;
use std::io::Read;
use std::path::{Path, PathBuf};

/// A sample log given directly.
pub(super) fn log_part(r: &mut impl Read, name: &str, o: &ReadOpts, notes: &mut Vec<String>) -> Result<Part> {
    let series = o.read.series.as_deref();
    let want = |n: &str| series.is_none_or(|s| s == n);
    let s =
        samplelog::scan_reader(r, KEEP, &want).map_err(|e| Error::Usage(format!("{name}: {e}")))?;
    let chosen: Vec<usize> = (0..s.names.len()).filter(|&i| want(&s.names[i])).collect();
    if chosen.is_empty() {
        return Err(input::no_series(name, series, &s.names));
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

/// One run: from its sample log when that is complete, else from its histograms.
pub(super) fn run_part(
    run: &Run,
    name: &str,
    dir: Option<&Path>,
    o: &ReadOpts,
    notes: &mut Vec<String>,
) -> Result<Part> {
    let chosen = input::chosen_series(run, o.read.series.as_deref(), name)?;
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

