//! Counting one run against a requirement: its samples, the events certainly and possibly past
//! the threshold (from its HDR histograms, bounded by the exact maximum), its exact maximum.
//! `latlab gate` counts every run it is given this way, `latlab qualify` every checkpoint
//! interval.

use super::judge::RunCount;
use super::requirement::{Event, Requirement};
use latlab_core::error::{Error, Result};
use latlab_core::result::{Run, Series};
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
    let chosen = chosen(run, name, series)?;
    let hdrs = chosen
        .iter()
        .map(|s| hdr_of(s, name))
        .collect::<Result<Vec<_>>>()?;
    for (s, hdr) in chosen.iter().zip(&hdrs) {
        consistent(s, name, hdr)?;
    }
    let summarised: u64 = chosen.iter().map(|s| s.summary.count).sum();
    if let Event::Max(t) = req.event {
        if summarised == 0 {
            return Err(Error::Usage(format!(
                "{name}: the selected series hold no samples"
            )));
        }
        let max_of = chosen.iter().map(|s| s.summary.max_ns).max().unwrap_or(0);
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
        return Err(no_histogram(run, name, req, &chosen, summarised));
    }
    let mut tally = Tally::default();
    let mut parts = Vec::new();
    for (s, hdr) in chosen.iter().zip(&hdrs) {
        tally.add(s, hdr, &req.event);
        parts.push(Dist::from_histogram(&s.histogram, 1e-3));
    }
    if tally.n == 0 {
        return Err(Error::Usage(format!(
            "{name}: the selected series hold no samples"
        )));
    }
    let c = RunCount {
        name: name.to_string(),
        n: tally.n,
        m_lo: tally.lo,
        m_hi: tally.hi.max(tally.lo),
        duration_s: run.duration_s,
        max_ns: tally.max,
    };
    Ok((c, Some(Dist::merge(&parts)), tally.max))
}

/// The series of `run` a requirement is counted on (`series`, or all), every one of them
/// latencies.
fn chosen<'r>(run: &'r Run, name: &str, series: Option<&str>) -> Result<Vec<&'r Series>> {
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
    Ok(chosen)
}

/// Why a requirement other than `max<T` cannot be counted on `chosen`, series that hold
/// `summarised` samples but no histogram, and what can be judged on them instead.
fn no_histogram(
    run: &Run,
    name: &str,
    req: &Requirement,
    chosen: &[&Series],
    summarised: u64,
) -> Error {
    let names: Vec<&str> = chosen.iter().map(|s| s.name.as_str()).collect();
    Error::Usage(format!(
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
    ))
}

/// Whether a latency of `x` ns is certainly an `event` (`>= T` or `> T`).
fn is_event(event: &Event, x: u64) -> bool {
    match *event {
        Event::AtLeast(t) | Event::Max(t) => x >= t,
        Event::Above(t) => x > t,
    }
}

/// The samples of the series counted so far: all of them, the events certainly (`lo`) and
/// possibly (`hi`) among them, and their exact maximum.
#[derive(Default)]
struct Tally {
    n: u64,
    lo: u64,
    hi: u64,
    max: u64,
}

impl Tally {
    /// Adds series `s` (its HDR layout `hdr`): a bucket is certainly an event when its bottom
    /// is, possibly when its value is and the series' exact max is too.
    fn add(&mut self, s: &Series, hdr: &hdrhistogram::Histogram<u64>, event: &Event) {
        let smax = s.summary.max_ns;
        self.max = self.max.max(smax);
        for &[v, c] in &s.histogram.buckets {
            let bottom = hdr.lowest_equivalent(v);
            self.n = self.n.saturating_add(c);
            let sure = is_event(event, bottom);
            let maybe = is_event(event, v) && is_event(event, smax);
            self.lo += if sure { c } else { 0 };
            self.hi += if maybe || sure { c } else { 0 };
        }
        // Imported runs: samples past the tool's histogram sit at the exact max, but all that
        // is known of them is that they exceed `above_ns`.
        if let Some(b) = s.extra.as_ref().map(|e| &e["beyond_histogram"]) {
            if let (Some(c), Some(above)) = (b["count"].as_u64(), b["above_ns"].as_u64()) {
                let sure_at_max = is_event(event, hdr.lowest_equivalent(smax));
                if sure_at_max && !is_event(event, above) {
                    self.lo = self.lo.saturating_sub(c);
                }
            }
        }
    }
}
