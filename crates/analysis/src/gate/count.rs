//! Counting one run against a requirement: its samples, the events certainly and possibly past
//! the threshold (from its HDR histograms, bounded by the exact maximum), its exact maximum.
//! `latlab gate` counts every run it is given this way, `latlab qualify` every checkpoint
//! interval.

use super::judge::RunCount;
use super::requirement::{Event, Requirement};
use latlab_core::error::{Error, Result};
use latlab_core::result::Run;
use latlab_core::stats::dist::Dist;

/// The HDR layout of a series' histogram, for its buckets' bounds.
fn hdr_of(s: &latlab_core::result::Series, name: &str) -> Result<hdrhistogram::Histogram<u64>> {
    latlab_core::result::check::layout(&s.histogram)
        .map_err(|e| Error::Usage(format!("{name}: series {}: {e}", s.name)))
}

/// Refuses a series whose figures contradict each other (an edited or corrupt result): a
/// verdict counted on it would be anything, bounds inverted included.
fn consistent(
    s: &latlab_core::result::Series,
    name: &str,
    hdr: &hdrhistogram::Histogram<u64>,
) -> Result<()> {
    latlab_core::result::check::series_figures(s, Some(hdr))
        .map_err(|why| Error::Usage(format!("{name}: series {}: {why}", s.name)))
}

/// Counts one run: (counts, its distribution in µs when it has a histogram, its exact maximum
/// in ns). `max<T` needs only the exact maxima, so a run imported without a histogram
/// (pmqtest keeps none) is judged on it; the other requirements say why they cannot be.
pub fn count(
    run: &Run,
    name: &str,
    req: &Requirement,
    series: Option<&str>,
) -> Result<(RunCount, Option<Dist>, u64)> {
    let chosen: Vec<_> = run
        .series
        .iter()
        .filter(|s| series.is_none_or(|n| n == s.name))
        .collect();
    if chosen.is_empty() {
        return Err(Error::Usage(format!(
            "{name}: no series {}",
            series.unwrap_or("at all")
        )));
    }
    if let Some(s) = chosen.iter().find(|s| s.unit != "ns") {
        return Err(Error::Usage(format!(
            "{name}: series {} holds {}, not latencies: gate judges latency requirements",
            s.name, s.unit
        )));
    }
    let hdrs = chosen
        .iter()
        .map(|s| hdr_of(s, name))
        .collect::<Result<Vec<_>>>()?;
    for (s, hdr) in chosen.iter().zip(&hdrs) {
        consistent(s, name, hdr)?;
    }
    let summarised: u64 = chosen.iter().map(|s| s.summary.count).sum();
    let max_of = chosen.iter().map(|s| s.summary.max_ns).max().unwrap_or(0);
    if let Event::Max(t) = req.event {
        if summarised == 0 {
            return Err(Error::Usage(format!(
                "{name}: the selected series hold no samples"
            )));
        }
        let over = u64::from(max_of >= t);
        let c = RunCount {
            name: name.to_string(),
            n: summarised,
            m_lo: over,
            m_hi: over,
            duration_s: run.duration_s,
            max_ns: max_of,
        };
        return Ok((c, None, max_of));
    }
    let in_hist: u64 = chosen
        .iter()
        .flat_map(|s| s.histogram.buckets.iter().map(|b| b[1]))
        .fold(0u64, u64::saturating_add);
    if in_hist == 0 && summarised > 0 {
        let names: Vec<&str> = chosen.iter().map(|s| s.name.as_str()).collect();
        return Err(Error::Usage(format!(
            "{name}: series {} hold {summarised} samples but no histogram ({} kept only their \
             min, mean and max): {} cannot be counted on them; max<TIME judges their exact \
             maximum",
            names.join(", "),
            if run.kind == "cyclictest" {
                // Run without -h, or with one that every sample lay beyond.
                "cyclictest without -h/--histogram, or with one every sample lay beyond".to_string()
            } else {
                run.kind.clone()
            },
            req.text
        )));
    }
    let (mut n, mut lo, mut hi, mut max) = (0u64, 0u64, 0u64, 0u64);
    let mut parts = Vec::new();
    for (s, hdr) in chosen.iter().zip(&hdrs) {
        let h = &s.histogram;
        let smax = s.summary.max_ns;
        max = max.max(smax);
        for &[v, c] in &h.buckets {
            let bottom = hdr.lowest_equivalent(v);
            n = n.saturating_add(c);
            let (sure, maybe) = match req.event {
                Event::AtLeast(t) | Event::Max(t) => (bottom >= t, v >= t && smax >= t),
                Event::Above(t) => (bottom > t, v > t && smax > t),
            };
            lo += if sure { c } else { 0 };
            hi += if maybe || sure { c } else { 0 };
        }
        // Imported runs: samples past the tool's histogram sit at the exact max, but all that
        // is known of them is that they exceed `above_ns`.
        if let Some(b) = s.extra.as_ref().map(|e| &e["beyond_histogram"]) {
            if let (Some(c), Some(above)) = (b["count"].as_u64(), b["above_ns"].as_u64()) {
                let bottom_of_max = hdr.lowest_equivalent(smax);
                let sure_at_max = match req.event {
                    Event::AtLeast(t) | Event::Max(t) => bottom_of_max >= t,
                    Event::Above(t) => bottom_of_max > t,
                };
                let sure_past = match req.event {
                    Event::AtLeast(t) | Event::Max(t) => above >= t,
                    Event::Above(t) => above > t,
                };
                if sure_at_max && !sure_past {
                    lo = lo.saturating_sub(c);
                }
            }
        }
        parts.push(Dist::from_histogram(h, 1e-3));
    }
    if n == 0 {
        return Err(Error::Usage(format!(
            "{name}: the selected series hold no samples"
        )));
    }
    let c = RunCount {
        name: name.to_string(),
        n,
        m_lo: lo,
        m_hi: hi.max(lo),
        duration_s: run.duration_s,
        max_ns: max,
    };
    Ok((c, Some(Dist::merge(&parts)), max))
}
