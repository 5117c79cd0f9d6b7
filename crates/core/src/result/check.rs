//! Whether a result's figures agree with each other: an edited or corrupt file (a maximum
//! below its minimum, a count its histogram does not hold) must be refused where it is read,
//! not compared, judged or stored as if it had been measured.

use super::{Run, Series};
use crate::stats::HistogramData;

/// The HDR layout a series' histogram was recorded with, for its buckets' bounds.
pub fn layout(h: &HistogramData) -> Result<hdrhistogram::Histogram<u64>, String> {
    digits(h)?;
    hdrhistogram::Histogram::<u64>::new_with_bounds(
        h.lowest_ns.max(1),
        h.highest_ns.max(2 * h.lowest_ns.max(1)),
        h.significant_digits,
    )
    .map_err(|e| format!("bad histogram: {e}"))
}

/// Refuses a histogram format this latlab does not know, and significant digits an HDR
/// histogram cannot have (the layout is built from them).
fn digits(h: &HistogramData) -> Result<(), String> {
    if h.format != "hdr-buckets/1" {
        return Err(format!(
            "its histogram's format ('{}') is not one this latlab reads (hdr-buckets/1)",
            h.format.escape_debug()
        ));
    }
    if (1..=5).contains(&h.significant_digits) {
        Ok(())
    } else {
        Err(format!(
            "its histogram's significant_digits ({}) is outside what an HDR histogram takes (1 to 5)",
            h.significant_digits
        ))
    }
}

/// Refuses a series whose figures contradict each other. Its histogram must hold its count (an
/// import records what fell beyond the tool's histogram at the exact maximum), none of it
/// above its exact maximum or the histogram's range; its minimum must not exceed its maximum;
/// a latency's mean is not negative. `hdr` is the histogram's [`layout`], when already built.
pub fn series_figures(
    s: &Series,
    hdr: Option<&hdrhistogram::Histogram<u64>>,
) -> Result<(), String> {
    let p = &s.summary.percentiles;
    let ps = [p.p50, p.p90, p.p99, p.p99_9, p.p99_99];
    // The order of the checks is the order of precedence of their messages: the first
    // contradiction found is the one said.
    count_in_histogram(s)?;
    nothing_in_an_empty_series(s, ps)?;
    figures_in_order(s, ps)?;
    figures_inside_histogram(s, ps, hdr)?;
    within_planned(s, ps)
}

/// The histogram's format is one this latlab reads and its buckets add up to the count
/// (no histogram at all is a tool that kept none).
fn count_in_histogram(s: &Series) -> Result<(), String> {
    if !s.histogram.buckets.is_empty() {
        digits(&s.histogram)?;
    }
    let sum = s
        .histogram
        .buckets
        .iter()
        .try_fold(0u64, |a, b| a.checked_add(b[1]));
    if !s.histogram.buckets.is_empty() && sum != Some(s.summary.count) {
        return Err(format!(
            "its count ({}) contradicts its histogram ({})",
            s.summary.count,
            sum.map_or("more than 2^64 samples".into(), |n| format!("{n} samples"))
        ));
    }
    Ok(())
}

/// A series of no samples has no figures (`ps`: its percentiles) and a mean of 0.
fn nothing_in_an_empty_series(s: &Series, ps: [u64; 5]) -> Result<(), String> {
    if s.summary.count == 0 {
        let figures = [s.summary.min_ns, s.summary.max_ns].into_iter().chain(ps);
        if let Some(f) = figures.into_iter().find(|&f| f > 0) {
            return Err(format!(
                "its count is 0, yet it has figures ({f} ns among them)"
            ));
        }
        if s.summary.mean_ns != 0.0 {
            return Err(format!(
                "its count is 0, yet its mean is {}",
                s.summary.mean_ns
            ));
        }
    }
    Ok(())
}

/// Each figure agrees with its neighbours on its own: buckets ascending, the minimum not above
/// the maximum, a latency's mean and any spread not negative, the percentiles (`ps`)
/// ascending, the histogram's range not upside down.
fn figures_in_order(s: &Series, ps: [u64; 5]) -> Result<(), String> {
    if let Some(w) = s.histogram.buckets.windows(2).find(|w| w[1][0] < w[0][0]) {
        return Err(format!(
            "its histogram's buckets are out of order ({} ns after {} ns)",
            w[1][0], w[0][0]
        ));
    }
    if s.summary.count > 0 && s.summary.min_ns > s.summary.max_ns {
        return Err(format!(
            "its minimum ({} ns) exceeds its maximum ({} ns)",
            s.summary.min_ns, s.summary.max_ns
        ));
    }
    if s.unit == "ns" && s.summary.mean_ns < 0.0 {
        return Err(format!(
            "its mean ({} ns) is negative",
            shown(s.summary.mean_ns)
        ));
    }
    if s.summary.stddev_ns < 0.0 {
        return Err(format!(
            "its standard deviation ({}) is negative",
            shown(s.summary.stddev_ns)
        ));
    }
    if let Some(w) = ps.windows(2).find(|w| w[0] > w[1]) {
        return Err(format!(
            "its percentiles are out of order ({} ns before {} ns)",
            w[0], w[1]
        ));
    }
    if !s.histogram.buckets.is_empty() && s.histogram.lowest_ns > s.histogram.highest_ns {
        return Err(format!(
            "its histogram's lowest value ({} ns) exceeds its highest ({} ns)",
            s.histogram.lowest_ns, s.histogram.highest_ns
        ));
    }
    Ok(())
}

/// The maximum and the percentiles (`ps`) lie where the histogram's samples are, and no
/// bucket lies above the maximum or beyond what the histogram's layout (`hdr`, built here
/// when not given) tracks.
fn figures_inside_histogram(
    s: &Series,
    ps: [u64; 5],
    hdr: Option<&hdrhistogram::Histogram<u64>>,
) -> Result<(), String> {
    // A bucket's value is the highest of its range, so one may lie a little above the exact
    // maximum (or the histogram's highest value); only its range's lowest value may not. The
    // layout is only needed when some bucket lies above either.
    // (`noise` leaves the gaps its own RT throttling made out of its maximum, not out of its
    // histogram: their maximum is `max_with_own_gaps_ns`.)
    let max = s
        .extra
        .as_ref()
        .and_then(|e| e.get("max_with_own_gaps_ns"))
        .and_then(serde_json::Value::as_u64)
        .map_or(s.summary.max_ns, |m| m.max(s.summary.max_ns));
    // The histogram holds every sample, so the maximum lies in its top bucket (whose value is
    // the highest of its range) unless it lies beyond what the histogram tracks.
    let top_bucket = s
        .histogram
        .buckets
        .iter()
        .filter(|b| b[1] > 0)
        .map(|b| b[0])
        .max();
    if let Some(t) = top_bucket.filter(|&t| max > t && max <= s.histogram.highest_ns) {
        return Err(format!(
            "its maximum ({max} ns) lies above every sample of its histogram (the highest at {t} ns)"
        ));
    }
    // Its percentiles are read from the same histogram.
    if let Some(p) = top_bucket.and_then(|t| ps.into_iter().find(|&p| p > t)) {
        return Err(format!(
            "its percentiles reach {p} ns, above every sample of its histogram"
        ));
    }
    let odd = |b: &&[u64; 2]| b[1] > 0 && (b[0] > max || b[0] > s.histogram.highest_ns);
    if s.histogram.buckets.iter().any(|b| odd(&b)) {
        let built;
        let hdr = match hdr {
            Some(h) => h,
            None => {
                built = layout(&s.histogram)?;
                &built
            }
        };
        let top = hdr.highest_equivalent(hdr.high());
        for b in s.histogram.buckets.iter().filter(odd) {
            if b[0] > top {
                return Err(format!(
                    "its histogram holds samples at {} ns, beyond its highest trackable value ({} ns)",
                    b[0],
                    hdr.high()
                ));
            }
            if hdr.lowest_equivalent(b[0]) > max {
                return Err(format!(
                    "its histogram holds samples at {} ns, above its maximum ({max} ns)",
                    b[0]
                ));
            }
        }
    }
    Ok(())
}

/// No latency outlasts the longest measurement latlab plans (an exact max is kept beside
/// the histogram's one-hour range, so this, not the histogram, bounds it).
fn within_planned(s: &Series, ps: [u64; 5]) -> Result<(), String> {
    if s.unit == "ns" {
        use crate::config::bounds::{MAX_PLANNED_NS, MAX_PLANNED_TEXT};
        let figures = [("maximum", s.summary.max_ns), ("minimum", s.summary.min_ns)];
        let mut all = figures.into_iter().chain(ps.map(|p| ("percentile", p)));
        if let Some((what, f)) = all.find(|f| f.1 > MAX_PLANNED_NS) {
            return Err(format!(
                "its {what} ({f} ns) is longer than any measurement ({MAX_PLANNED_TEXT})"
            ));
        }
    }
    Ok(())
}

impl Run {
    /// Refuses a run whose figures contradict each other: histogram counts that would wrap
    /// once added up, and every series' [`series_figures`].
    pub fn check_figures(&self) -> Result<(), String> {
        if self.duration_s < 0.0 {
            return Err(format!(
                "its duration ({} s) is negative",
                shown(self.duration_s)
            ));
        }
        if !self.duration_s.is_finite() || self.duration_s > MAX_DURATION_S {
            return Err(format!(
                "its duration ({} s) is not a run's (at most {MAX_DURATION_S} s)",
                shown(self.duration_s)
            ));
        }
        if let Some(why) = bad_id(&self.id) {
            return Err(format!("its id {:?} {why}", self.id));
        }
        if !is_rfc3339(&self.started) {
            return Err(format!(
                "its start {:?} is not an RFC 3339 time",
                self.started
            ));
        }
        // (`ended` before `started` is not refused: the wall clock may step back during a
        // run, NTP's first sync or a resumed VM, and the run's own duration is measured on
        // the monotonic clock.)
        let (mut all, mut counted) = (0u64, 0u64);
        for (i, s) in self.series.iter().enumerate() {
            counted = counted.checked_add(s.summary.count).ok_or_else(|| {
                format!(
                    "series {}: its count ({}) and the other series' add up to more than 2^64 samples",
                    s.name, s.summary.count
                )
            })?;
            // Series are found by name (compare pairs them, `--series` picks one): two of one
            // name would make one of them unreachable.
            if self.series[..i].iter().any(|o| o.name == s.name) {
                return Err(format!("it holds two series named {:?}", s.name));
            }
            if let Some(c) = s.cpu.filter(|&c| c > crate::config::cpuset::MAX_CPU) {
                return Err(format!(
                    "series {}: its CPU {c} is beyond the largest possible CPU {}",
                    s.name,
                    crate::config::cpuset::MAX_CPU
                ));
            }
            let mut n = 0u64;
            for [v, c] in &s.histogram.buckets {
                n = n.checked_add(*c).ok_or_else(|| {
                    format!(
                        "series {}: histogram counts overflow (bucket {v} ns holds {c})",
                        s.name
                    )
                })?;
            }
            all = all
                .checked_add(n)
                .ok_or_else(|| format!("series {}: histogram counts overflow", s.name))?;
            series_figures(s, None).map_err(|why| format!("series {}: {why}", s.name))?;
            if let Some(t) = &s.timeline {
                if t.max.len() != t.count.len() || t.pct.len() != t.count.len() {
                    return Err(format!(
                        "series {}: its timeline's arrays differ in length ({} counts, {} maxima, {} percentiles)",
                        s.name,
                        t.count.len(),
                        t.max.len(),
                        t.pct.len()
                    ));
                }
                if t.interval_ns == 0 {
                    return Err(format!(
                        "series {}: its timeline's interval is 0 ns",
                        s.name
                    ));
                }
                if !(t.percentile > 0.0 && t.percentile <= 100.0) {
                    return Err(format!(
                        "series {}: its timeline's percentile {} is not in (0, 100]",
                        s.name, t.percentile
                    ));
                }
            }
        }
        Ok(())
    }

    /// Figures that do not contradict each other outright but that latlab's own results never
    /// have, as warnings for whoever reads the file: a mean outside the series' minimum and
    /// maximum (a tool's own average may be: imports keep it as written, and say so).
    pub(crate) fn doubts(&self) -> Vec<String> {
        if self.parameters.get("imported_from").is_some() {
            return Vec::new();
        }
        self.series
            .iter()
            .filter(|s| {
                let m = &s.summary;
                let slack = 1e-9 * (m.max_ns as f64).max(1.0);
                m.count > 0
                    && (m.mean_ns < m.min_ns as f64 - slack || m.mean_ns > m.max_ns as f64 + slack)
            })
            .map(|s| {
                format!(
                    "series {}: its mean ({} ns) lies outside its minimum and maximum ({} to {} ns): the file was not written so by latlab",
                    s.name,
                    shown(s.summary.mean_ns),
                    s.summary.min_ns,
                    s.summary.max_ns
                )
            })
            .collect()
    }
}

/// Whether `t` is an RFC 3339 time: `Z` (what latlab writes) or a numeric offset
/// (`+05:30`, which another tool may write).
fn is_rfc3339(t: &str) -> bool {
    if humantime::parse_rfc3339_weak(t).is_ok() {
        return true;
    }
    let b = t.as_bytes();
    let n = b.len();
    n > 6
        && matches!(b[n - 6], b'+' | b'-')
        && b[n - 3] == b':'
        && [n - 5, n - 4, n - 2, n - 1]
            .iter()
            .all(|&i| b[i].is_ascii_digit())
        && t.is_char_boundary(n - 6)
        && humantime::parse_rfc3339_weak(&format!("{}Z", &t[..n - 6])).is_ok()
}

/// The longest run a result may say it lasted (31 years).
const MAX_DURATION_S: f64 = 1e9;

/// A figure from a file as a message shows it: `1e308`, not three hundred digits.
fn shown(x: f64) -> String {
    if x.is_finite() && x.abs() < 1e15 {
        x.to_string()
    } else {
        format!("{x:e}")
    }
}

/// Why `id` cannot be a run's id (empty, too long, a path, blanks or control characters, or
/// what a run list could not name: a ',' splits it, a leading '-' reads as a flag, `.` and
/// `..` as directories, and invisible or direction-changing characters make it print as
/// another id).
fn bad_id(id: &str) -> Option<&'static str> {
    if id.is_empty() {
        Some("is empty")
    } else if id.chars().count() > 200 {
        Some("is longer than 200 characters")
    } else if id.contains('/') || id.chars().any(|c| c.is_whitespace() || c.is_control()) {
        Some("holds a '/', a blank or a control character")
    } else if id.contains(',') {
        Some("holds a ',' (which separates the runs of a list)")
    } else if id.starts_with('-') {
        Some("starts with '-' (which reads as a flag)")
    } else if id == "." || id == ".." {
        Some("names a directory")
    } else if id.chars().any(invisible) {
        Some("holds an invisible or direction-changing character")
    } else {
        None
    }
}

/// Format characters that change how text around them prints without showing themselves:
/// zero-width spaces and joiners, direction marks, embeddings, overrides and isolates, the
/// byte-order mark.
fn invisible(c: char) -> bool {
    matches!(c, '\u{061C}' | '\u{180E}' | '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2060}'..='\u{206F}' | '\u{FEFF}')
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::summary::Recorder;

    fn series(values: &[u64]) -> Series {
        let mut r = Recorder::new();
        for &v in values {
            r.record(v);
        }
        let (summary, h) = r.summary_and_data();
        Series::from_summary("T0".into(), summary, h)
    }

    #[test]
    fn a_recorded_series_passes_and_each_contradiction_is_named() {
        // Values whose buckets' top lies above the exact maximum pass.
        let good = series(&[1_000, 123_457, 99_999_999, 3_600_000_000_000]);
        assert_eq!(series_figures(&good, None), Ok(()));
        let mut no_hist = good.clone();
        no_hist.histogram.buckets.clear();
        assert_eq!(series_figures(&no_hist, None), Ok(()));

        let mut s = good.clone();
        s.summary.count += 1;
        assert!(series_figures(&s, None)
            .unwrap_err()
            .contains("contradicts its histogram"));
        let mut s = good.clone();
        s.summary.min_ns = s.summary.max_ns + 1;
        assert!(series_figures(&s, None)
            .unwrap_err()
            .contains("exceeds its maximum"));
        let mut s = good.clone();
        s.summary.mean_ns = -1.0;
        assert!(series_figures(&s, None).unwrap_err().contains("negative"));
        let mut s = good.clone();
        s.summary.stddev_ns = -1.0;
        assert!(series_figures(&s, None)
            .unwrap_err()
            .contains("standard deviation (-1) is negative"));
        let mut s = series(&[1_000, 2_000, 500_000]);
        s.summary.max_ns = 2_000;
        let e = series_figures(&s, None).unwrap_err();
        assert!(e.contains("above its maximum (2000 ns)"), "{e}");
        // noise's maximum leaves its own throttling gaps out; its histogram keeps them.
        let mut s = series(&[1_000, 2_000, 500_000]);
        s.summary.max_ns = 2_000;
        s.extra = Some(serde_json::json!({"max_with_own_gaps_ns": 500_000}));
        assert_eq!(series_figures(&s, None), Ok(()));
        let mut s = good.clone();
        s.summary.percentiles.p90 = s.summary.percentiles.p99 + 1;
        let e = series_figures(&s, None).unwrap_err();
        assert!(e.contains("percentiles are out of order"), "{e}");
        let mut s = good.clone();
        s.summary.percentiles.p99_99 = 4_000_000_000_000;
        let e = series_figures(&s, None).unwrap_err();
        assert!(e.contains("percentiles reach 4000000000000 ns"), "{e}");
        let mut s = series(&[1_000, 2_000]);
        s.summary.max_ns = 1 << 40;
        let e = series_figures(&s, None).unwrap_err();
        assert!(e.contains("lies above every sample"), "{e}");
        let mut s = good.clone();
        s.histogram.lowest_ns = s.histogram.highest_ns + 1;
        let e = series_figures(&s, None).unwrap_err();
        assert!(e.contains("lowest value"), "{e}");
        let mut s = series(&[1_000, 2_000]);
        s.histogram.buckets[1][0] = u64::MAX / 2;
        s.summary.max_ns = u64::MAX;
        let e = series_figures(&s, None).unwrap_err();
        assert!(e.contains("beyond its highest trackable value"), "{e}");
        // An empty series has no figures; one that has some contradicts its count.
        assert_eq!(series_figures(&series(&[]), None), Ok(()));
        let mut s = series(&[]);
        s.summary.max_ns = 5_000;
        let e = series_figures(&s, None).unwrap_err();
        assert!(
            e.contains("its count is 0, yet it has figures (5000 ns"),
            "{e}"
        );
        let mut s = series(&[]);
        s.summary.mean_ns = 3.5;
        let e = series_figures(&s, None).unwrap_err();
        assert!(e.contains("its count is 0, yet its mean is 3.5"), "{e}");
        // Without a histogram the exact figures alone bound it: none longer than a run.
        let mut s = no_hist.clone();
        s.summary.max_ns = 1_000_000_000_000_000_000;
        let e = series_figures(&s, None).unwrap_err();
        assert!(
            e.contains("its maximum (1000000000000000000 ns) is longer than any measurement"),
            "{e}"
        );
        let mut s = good.clone();
        s.histogram.format = "linear/2".into();
        let e = series_figures(&s, None).unwrap_err();
        assert!(e.contains("format ('linear/2') is not one"), "{e}");
        for digits in [0, 9] {
            let mut s = good.clone();
            s.histogram.significant_digits = digits;
            let e = series_figures(&s, None).unwrap_err();
            assert!(
                e.contains(&format!("significant_digits ({digits}) is outside")),
                "{e}"
            );
        }
        let mut s = series(&[1_000, 2_000, 500_000]);
        s.histogram.buckets.swap(0, 1);
        let e = series_figures(&s, None).unwrap_err();
        assert!(e.contains("buckets are out of order"), "{e}");
    }

    #[test]
    fn a_run_names_the_series() {
        let mut run = crate::result::Run::new(
            "cyclic",
            std::time::SystemTime::now(),
            vec![],
            serde_json::Value::Null,
            crate::result::Environment::capture(),
        );
        run.series.push(series(&[5, 6, 7]));
        assert_eq!(run.check_figures(), Ok(()));
        run.series[0].summary.max_ns = 1;
        assert!(run.check_figures().unwrap_err().starts_with("series T0: "));
        run.series[0].summary.max_ns = 7;
        // Counts that wrap when the series are added up.
        let mut wraps = run.clone();
        let mut big = series(&[]);
        big.name = "T1".into();
        big.histogram.buckets.clear();
        big.summary.count = u64::MAX;
        wraps.series.push(big);
        let e = wraps.check_figures().unwrap_err();
        assert!(e.contains("add up to more than 2^64 samples"), "{e}");
        run.duration_s = -1.0;
        assert!(run.check_figures().unwrap_err().contains("duration (-1 s)"));
        // Ids, starts, durations, timelines and means that no run has.
        run.duration_s = 1.0;
        let good = run.clone();
        for (id, why) in [
            ("", "is empty"),
            ("../../etc/passwd", "holds a '/'"),
            ("a\nb", "a control"),
            ("a,b", "holds a ','"),
            ("--help", "starts with '-'"),
            ("..", "names a directory"),
            ("ab\u{202E}cd", "direction-changing"),
            ("a\u{200B}", "invisible"),
        ] {
            let mut r = good.clone();
            r.id = id.into();
            let e = r.check_figures().unwrap_err();
            assert!(e.contains(why), "{e}");
        }
        let mut r = good.clone();
        r.started = "not a date".into();
        assert!(r
            .check_figures()
            .unwrap_err()
            .contains("not an RFC 3339 time"));
        r.started = "2026-11-26T21:33:26+05:30".into();
        assert_eq!(r.check_figures(), Ok(()));
        let mut r = good.clone();
        r.duration_s = 1e300;
        let e = r.check_figures().unwrap_err();
        assert!(e.contains("its duration (1e300 s) is not a run's"), "{e}");
        assert!(good.doubts().is_empty());
        let mut r = good.clone();
        r.series[0].summary.mean_ns = 1e9;
        assert_eq!(r.check_figures(), Ok(()));
        let d = r.doubts();
        assert!(
            d.len() == 1 && d[0].contains("lies outside its minimum and maximum"),
            "{d:?}"
        );
        // An import keeps its tool's average as written.
        r.parameters = serde_json::json!({"imported_from": "x.json"});
        assert!(r.doubts().is_empty());
        let mut r = good.clone();
        r.series[0].timeline = Some(crate::result::Timeline {
            interval_ns: 1,
            percentile: 99.0,
            count: vec![1, 2],
            max: vec![1],
            pct: vec![1, 1],
        });
        assert!(r.check_figures().unwrap_err().contains("differ in length"));
        let tl = |interval_ns, percentile| {
            let mut r = good.clone();
            r.series[0].timeline = Some(crate::result::Timeline {
                interval_ns,
                percentile,
                count: vec![1],
                max: vec![1],
                pct: vec![1],
            });
            r.check_figures()
        };
        assert_eq!(tl(1, 99.0), Ok(()));
        assert_eq!(tl(1, 100.0), Ok(()));
        assert!(tl(0, 99.0).unwrap_err().contains("interval is 0 ns"));
        for p in [200.0, 0.0, -1.0, f64::NAN] {
            assert!(tl(1, p).unwrap_err().contains("not in (0, 100]"), "{p}");
        }
        let mut r = good.clone();
        r.series[0].cpu = Some(1_000_000_000_000);
        assert!(r
            .check_figures()
            .unwrap_err()
            .contains("beyond the largest"));
        r.series[0].cpu = Some(8191);
        assert_eq!(r.check_figures(), Ok(()));
        r.series.push(r.series[0].clone());
        assert!(r
            .check_figures()
            .unwrap_err()
            .contains("two series named \"T0\""));
        // A wall clock stepped back during the run is no contradiction.
        run.duration_s = 1.0;
        run.ended = "2020-01-01T00:00:00Z".into();
        assert_eq!(run.check_figures(), Ok(()));
    }
}
