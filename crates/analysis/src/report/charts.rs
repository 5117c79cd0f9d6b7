//! Charts made from results: per-run histograms and exceedance curves, and the overlays and
//! forest plot of a comparison (a run's time and CPU charts are in `timecharts`). Everything is
//! drawn from histograms (never per sample), and many series are aggregated instead of overplotted.

use super::svg::{self, Axis, ForestRow, Line};
use crate::compare::analysis::Analysis;
use latlab_core::result::{Run, Series};
use std::collections::BTreeMap;

/// Series drawn one by one; beyond this, a chart shows an aggregate and the worst few.
pub const MAX_LINES: usize = 8;
/// Worst series shown beside the aggregate.
const WORST: usize = 3;
/// Display scale and unit name for a series unit: ns are shown in µs.
pub(crate) fn display_unit(unit: &str) -> (f64, String) {
    if unit == "ns" {
        (1e-3, "µs".into())
    } else {
        (1.0, unit.to_string())
    }
}

/// A distribution as `(value, count)` pairs in the series' unit, sorted by value.
pub type Buckets = Vec<(u64, u64)>;

/// Buckets of several series merged.
pub fn merge<'a>(series: impl IntoIterator<Item = &'a Series>) -> Buckets {
    let mut m: BTreeMap<u64, u64> = BTreeMap::new();
    for s in series {
        for [v, c] in &s.histogram.buckets {
            let e = m.entry(*v).or_insert(0);
            *e = e.saturating_add(*c);
        }
    }
    m.into_iter().collect()
}

fn summary_of(b: &Buckets) -> (u64, u64, f64, u64) {
    let n: u64 = b.iter().map(|x| x.1).sum();
    let sum: f64 = b.iter().map(|&(v, c)| v as f64 * c as f64).sum();
    let min = b.first().map_or(0, |x| x.0);
    let max = b.last().map_or(0, |x| x.0);
    (n, min, if n > 0 { sum / n as f64 } else { 0.0 }, max)
}

fn quantile(b: &Buckets, q: f64) -> u64 {
    let n: u64 = b.iter().map(|x| x.1).sum();
    let rank = ((q * n as f64).ceil() as u64).max(1);
    let mut seen = 0;
    for &(v, c) in b {
        seen += c;
        if seen >= rank {
            return v;
        }
    }
    0
}

/// Log x when the tail is long (max above 30× the 99th percentile), linear otherwise.
fn wants_log_x(dists: &[&Buckets]) -> bool {
    let max = dists.iter().map(|b| summary_of(b).3).max().unwrap_or(0);
    let p99 = dists.iter().map(|b| quantile(b, 0.99)).max().unwrap_or(0);
    max > p99.saturating_mul(30).max(1)
}

/// Counts per display bin: 20 bins a decade on a log axis, 150 over a linear one.
fn binned(b: &Buckets, scale: f64, log: bool, hi: f64) -> Vec<(f64, f64)> {
    let mut bins: BTreeMap<i64, u64> = BTreeMap::new();
    let width = (hi / 150.0).max(f64::MIN_POSITIVE);
    for &(v, c) in b {
        let x = v as f64 * scale;
        let k = if log {
            (x.max(1e-3).log10() * 20.0).floor() as i64
        } else {
            (x / width).floor() as i64
        };
        *bins.entry(k).or_insert(0) += c;
    }
    let at = |k: i64| {
        if log {
            10f64.powf((k as f64 + 0.5) / 20.0)
        } else {
            (k as f64 + 0.5) * width
        }
    };
    let mut out = Vec::with_capacity(bins.len());
    let mut prev: Option<i64> = None;
    for (k, c) in bins {
        // Empty bins between two others break the curve (a NaN y), so a lone spike is not
        // joined to its neighbours by a line that suggests samples in between.
        if prev.is_some_and(|p| k > p + 1) {
            out.push((at(k - 1), f64::NAN));
        }
        out.push((at(k), c as f64));
        prev = Some(k);
    }
    out
}

/// The exact min, mean and max of series (their summaries, not their histogram buckets), so a
/// legend says what the percentile table says.
fn exact(series: &[&Series]) -> (u64, f64, u64) {
    let live: Vec<&&Series> = series.iter().filter(|s| s.summary.count > 0).collect();
    let n: u64 = live.iter().map(|s| s.summary.count).sum();
    let min = live.iter().map(|s| s.summary.min_ns).min().unwrap_or(0);
    let max = live.iter().map(|s| s.summary.max_ns).max().unwrap_or(0);
    let sum: f64 = live
        .iter()
        .map(|s| s.summary.mean_ns * s.summary.count as f64)
        .sum();
    (min, if n > 0 { sum / n as f64 } else { 0.0 }, max)
}

/// Named distributions to draw, with a note when some were aggregated. Legends carry the
/// exact min/avg/max, rounded as the percentile table rounds them.
fn pick(run: &Run) -> (Vec<(String, Buckets)>, Option<String>) {
    let unit = run.series.first().map_or("ns", |s| s.unit.as_str());
    let (scale, uname) = display_unit(unit);
    let label = |name: &str, of: &[&Series]| {
        let (min, avg, max) = exact(of);
        format!(
            "{name} {}/{}/{}",
            crate::compare::verdict::sig(min as f64 * scale),
            crate::compare::verdict::sig(avg * scale),
            crate::compare::verdict::sig(max as f64 * scale)
        )
    };
    let named = |s: &Series| match s.cpu {
        Some(c) if s.name != format!("cpu{c}") => format!("{} cpu{c}", s.name),
        _ => s.name.clone(),
    };
    let series: Vec<&Series> = run.series.iter().filter(|s| s.unit == unit).collect();
    if series.len() <= MAX_LINES {
        let v = series
            .iter()
            .map(|s| (label(&named(s), &[*s]), merge([*s])))
            .collect();
        return (v, None);
    }
    let all = merge(series.iter().copied());
    let mut worst = series.clone();
    worst.sort_by_key(|s| std::cmp::Reverse(s.summary.max_ns));
    let mut v = vec![(label(&format!("all {}", series.len()), &series), all)];
    for s in worst.iter().take(WORST) {
        v.push((label(&named(s), &[*s]), merge([*s])));
    }
    let note = format!(
        "{} series: their merged distribution and the {WORST} with the largest maximum are drawn ({uname})",
        series.len()
    );
    (v, Some(note))
}

/// Distributions as OSADL draws them: linear x in 1 µs bins (wider, and said so, when the
/// range would need more than 2000), log y counts, so every single late sample shows.
pub(crate) fn histogram_linear(title: &str, dists: &[(String, Buckets)], unit: &str) -> String {
    let (scale, uname) = display_unit(unit);
    let hi = dists
        .iter()
        .filter_map(|d| d.1.last().map(|b| b.0 as f64 * scale))
        .fold(0f64, f64::max);
    let mut bin = 1.0;
    while hi / bin > 2000.0 {
        bin *= 2.0;
    }
    let lines: Vec<Line> = dists
        .iter()
        .map(|(l, b)| {
            let mut bins: BTreeMap<i64, u64> = BTreeMap::new();
            for &(v, c) in b {
                *bins
                    .entry((v as f64 * scale / bin).floor() as i64)
                    .or_insert(0) += c;
            }
            let mut pts = Vec::with_capacity(bins.len());
            let mut prev: Option<i64> = None;
            for (k, c) in bins {
                if prev.is_some_and(|p| k > p + 1) {
                    pts.push(((k as f64 - 0.5) * bin, f64::NAN));
                }
                pts.push(((k as f64 + 0.5) * bin, c as f64));
                prev = Some(k);
            }
            Line::new(l.clone(), pts)
        })
        .collect();
    let x = Axis::fit(
        [0.0, hi + bin],
        false,
        &format!("latency ({uname}), {} {uname} bins", svg::num(bin)),
    );
    let mut y = Axis::fit(
        lines.iter().flat_map(|l| l.points.iter().map(|p| p.1)),
        true,
        "samples per bin",
    );
    y.lo = y.lo.min(0.5);
    svg::line_chart_kind(title, x, y, &lines, "hist-linear")
}

/// A run's linear-bin histogram per thread or CPU (legend: min/avg/max).
pub fn histogram_linear_of_run(run: &Run) -> Option<String> {
    let unit = run.series.first()?.unit.clone();
    let (dists, _) = pick(run);
    if dists.iter().all(|d| d.1.is_empty()) {
        return None;
    }
    let (_, uname) = display_unit(&unit);
    let title = format!("Latency histogram, linear bins, log y (legend: min/avg/max {uname})");
    Some(histogram_linear(&title, &dists, &unit))
}

/// Exceedance: the fraction of samples at or above each latency (1 − CDF), log y down to 1/N,
/// so the tail that a linear CDF flattens into 100 % is read off directly (the last point of a
/// curve is its maximum, at 1/N).
pub(crate) fn exceedance(title: &str, dists: &[(String, Buckets)], unit: &str) -> String {
    let (scale, uname) = display_unit(unit);
    let mut lines = Vec::new();
    let mut floor = 1.0f64;
    for (label, b) in dists {
        let n: u64 = b.iter().map(|x| x.1).sum();
        if n == 0 {
            continue;
        }
        floor = floor.min(1.0 / n as f64);
        let mut above = n;
        let mut pts = Vec::new();
        let mut last_x = f64::NEG_INFINITY;
        for (i, &(v, c)) in b.iter().enumerate() {
            let x = (v as f64 * scale).max(1e-3);
            // About 100 points a decade, every point of the thin tail, and the maximum.
            if x.log10() - last_x >= 0.01 || above <= 1000 || i + 1 == b.len() {
                pts.push((x, above as f64 / n as f64));
                last_x = x.log10();
            }
            above -= c;
        }
        lines.push(Line::new(label.clone(), pts));
    }
    let x = Axis::fit(
        lines.iter().flat_map(|l| l.points.iter().map(|p| p.0)),
        true,
        &format!("latency ({uname})"),
    );
    let mut y = Axis::fit([floor, 1.0], true, "fraction of samples at or above");
    y.hi = 1.0;
    svg::line_chart_kind(title, x, y, &lines, "exceedance")
}

/// A run's exceedance curve per thread or CPU.
pub fn exceedance_of_run(run: &Run) -> Option<String> {
    let unit = run.series.first()?.unit.clone();
    if unit != "ns" {
        return None;
    }
    let (dists, _) = pick(run);
    if dists.iter().all(|d| d.1.is_empty()) {
        return None;
    }
    Some(exceedance(
        "Exceedance: samples at or above each latency (1 - CDF, log y, down to 1/N)",
        &dists,
        &unit,
    ))
}

/// Distributions as log-y histograms, one curve each (OSADL style); latencies on a log x axis.
pub(crate) fn histogram_of(title: &str, dists: &[(String, Buckets)], unit: &str) -> String {
    let (scale, uname) = display_unit(unit);
    let refs: Vec<&Buckets> = dists.iter().map(|d| &d.1).collect();
    // Latencies always on a log x axis (20 bins a decade): a linear one squashes an 8-60 µs
    // body into one column beside a millisecond spike. Other units when their tail is long.
    let log = unit == "ns" || wants_log_x(&refs);
    let xs = refs
        .iter()
        .flat_map(|b| b.iter().map(|&(v, _)| v as f64 * scale));
    let x = Axis::fit(xs.chain([0.0]), log, &format!("latency ({uname})"));
    let lines: Vec<Line> = dists
        .iter()
        .map(|(l, b)| Line::new(l.clone(), binned(b, scale, log, x.hi)))
        .collect();
    let mut y = Axis::fit(
        lines.iter().flat_map(|l| l.points.iter().map(|p| p.1)),
        true,
        "samples per bin",
    );
    // Single samples (the spikes that matter) stand above the axis.
    y.lo = y.lo.min(0.5);
    svg::line_chart(title, x, y, &lines)
}

/// A run's latency histogram per thread or CPU (legend: min/avg/max).
pub fn histogram(run: &Run) -> Option<(String, Option<String>)> {
    let unit = run.series.first()?.unit.clone();
    let (dists, note) = pick(run);
    if dists.iter().all(|d| d.1.is_empty()) {
        return None;
    }
    let (_, uname) = display_unit(&unit);
    let title = format!("Latency histogram, log y (legend: min/avg/max {uname})");
    Some((histogram_of(&title, &dists, &unit), note))
}

/// Distributions overlaid as cumulative curves (log x).
pub fn cdf(title: &str, dists: &[(String, Buckets)], unit: &str) -> String {
    let (scale, uname) = display_unit(unit);
    let mut lines = Vec::new();
    for (label, b) in dists {
        let n: u64 = b.iter().map(|x| x.1).sum();
        let mut seen = 0u64;
        let mut pts = Vec::new();
        let mut last_x = f64::NEG_INFINITY;
        for (i, &(v, c)) in b.iter().enumerate() {
            seen += c;
            let x = (v as f64 * scale).max(1e-3);
            // Keep about 100 points a decade and always the last.
            if x.log10() - last_x >= 0.01 || i + 1 == b.len() {
                pts.push((x, 100.0 * seen as f64 / n.max(1) as f64));
                last_x = x.log10();
            }
        }
        lines.push(Line::new(label.clone(), pts));
    }
    let x = Axis::fit(
        lines.iter().flat_map(|l| l.points.iter().map(|p| p.0)),
        true,
        &format!("latency ({uname})"),
    );
    let mut y = Axis::fit([0.0, 100.0], false, "samples at or below (%)");
    (y.lo, y.hi) = (0.0, 100.0);
    svg::line_chart(title, x, y, &lines)
}

/// Intervals that reach past [`crate::compare::verdict::UNBOUNDED_PCT`] (the table says
/// "unbounded") end at the largest bounded figure of the plot and say so, instead of
/// stretching the axis to +1e154 % and squeezing every other row into a point.
fn unbounded_to_the_edge(rows: &mut [ForestRow]) {
    let cap = crate::compare::verdict::UNBOUNDED_PCT;
    let edge = rows
        .iter()
        .flat_map(|r| [r.estimate, r.ci.0, r.ci.1])
        .filter(|v| v.is_finite() && *v <= cap)
        .fold(0.0f64, f64::max);
    for r in rows.iter_mut().filter(|r| r.ci.1 > cap) {
        r.ci.1 = edge.max(r.estimate.min(cap));
        r.estimate = r.estimate.min(r.ci.1);
        r.verdict.push_str(" (interval unbounded)");
    }
}

/// The quantile and mean differences against the baseline with their intervals.
pub(crate) fn forest(a: &Analysis) -> Option<String> {
    // In per cent of the baseline: p50 and max differ by orders of magnitude in µs, but their
    // changes share one axis. A row per metric and level.
    let mut rows: Vec<ForestRow> = a
        .comparisons
        .iter()
        .flat_map(|c| {
            c.metrics
                .iter()
                .filter(|m| m.metric != "distribution")
                .map(move |m| {
                    let ok = m.base != 0.0 && m.base.is_finite() && m.change_pct.is_finite();
                    // A metric not compared keeps its row, with no bar: it says why. The bar
                    // is the ratio's interval, so it never reaches below -100 %.
                    let (estimate, ci) = match m.change_ci.filter(|_| ok) {
                        Some((lo, hi)) => (m.change_pct, (lo.min(hi), lo.max(hi))),
                        None => (f64::NAN, (f64::NAN, f64::NAN)),
                    };
                    ForestRow {
                        label: format!("{}: {}", c.label, m.metric),
                        estimate,
                        ci,
                        verdict: m.verdict.text().to_string(),
                    }
                })
        })
        .collect();
    if rows.iter().all(|r| !r.estimate.is_finite()) {
        return None;
    }
    unbounded_to_the_edge(&mut rows);
    Some(svg::forest(
        &format!(
            "Change from {} (% of the baseline), Holm-consistent intervals",
            a.comparisons[0].baseline,
        ),
        "change (%)",
        &rows,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::report::timecharts::{series_bars, timeline, timeline_points};
    use latlab_core::result::Timeline;
    use latlab_core::result::TimelineRecorder;
    use latlab_core::stats::Recorder;

    /// A cyclic-like run with `n` series; series `i` has samples `1..=100` µs plus one spike
    /// of `i` ms, and a 3-interval timeline.
    fn run(n: usize) -> Run {
        let env: latlab_core::result::Environment = serde_json::from_value(serde_json::json!({
            "hostname": "h", "kernel_release": "6.1", "kernel_version": "v", "kernel_cmdline": "",
            "preemption": "full", "clocksource": "tsc", "available_clocksources": [],
            "cpu_model": "m", "cpus_online": 2, "online_cpus": "0-1", "isolated_cpus": "",
            "nohz_full_cpus": "", "sched_rt_runtime_us": 950000, "sched_rt_period_us": 1000000,
            "governor": null, "tool_version": "0"
        }))
        .unwrap();
        let mut r = Run::new(
            "cyclic",
            std::time::SystemTime::now(),
            vec![],
            serde_json::Value::Null,
            env,
        );
        for i in 0..n {
            let mut rec = Recorder::new();
            let mut t = TimelineRecorder::new(1_000_000_000);
            for v in 1..=100u64 {
                rec.record(v * 1000);
                t.record(v * 20_000_000, v * 1000);
            }
            rec.record((i as u64 + 1) * 1_000_000);
            t.record(2_500_000_000, (i as u64 + 1) * 1_000_000);
            let mut s = Series::from_recorder(format!("T{i}"), &rec);
            s.cpu = Some(i);
            s.timeline = Some(t.finish(3_000_000_000));
            r.series.push(s);
        }
        r
    }

    fn count(s: &str, pat: &str) -> usize {
        s.matches(pat).count()
    }

    #[test]
    fn few_series_get_a_curve_each_with_min_avg_max() {
        let (h, note) = histogram(&run(3)).unwrap();
        assert!(note.is_none());
        assert_eq!(count(&h, r#"<g class="series""#), 3);
        assert_eq!(count(&h, r#"class="legend-entry""#), 3);
        // T2 cpu2: min 1 µs, max 3 ms; the spike makes the x axis logarithmic.
        assert!(h.contains(">T2 cpu2 1/"), "{h}");
        assert!(h.contains("/3000<"), "{h}");
        assert!(h.contains("latency (µs)") && h.contains("samples per bin"));
        let (t, _) = timeline(&run(3)).unwrap();
        assert_eq!(count(&t, r#"<g class="series""#), 3);
        assert!(t.contains("time since start (s)") && t.contains("max per interval (µs)"));
    }

    #[test]
    fn many_series_are_aggregated_not_overplotted() {
        let r = run(40);
        let (h, note) = histogram(&r).unwrap();
        assert_eq!(count(&h, r#"<g class="series""#), 1 + WORST);
        assert!(h.contains(">all 40 "));
        // The worst three by maximum: T39, T38, T37.
        assert!(h.contains(">T39 cpu39 ") && h.contains(">T37 cpu37 "));
        assert!(note.unwrap().contains("40 series"));
        let (t, note) = timeline(&r).unwrap();
        assert_eq!(count(&t, r#"<g class="series""#), 3);
        assert!(t.contains("max of all") && t.contains("median of maxima"));
        assert!(note.is_some());
    }

    #[test]
    fn bars_and_cdf_of_fixed_runs() {
        let r = run(2);
        let b = series_bars(&r).unwrap();
        assert_eq!(count(&b, r#"class="bar""#), 2);
        assert_eq!(count(&b, r#"class="whisker""#), 2);
        let d: Vec<(String, Buckets)> = r
            .series
            .iter()
            .map(|s| (s.name.clone(), merge([s])))
            .collect();
        let c = cdf("CDF", &d, "ns");
        assert_eq!(count(&c, r#"<g class="series""#), 2);
        assert!(c.contains("samples at or below (%)"));
    }

    #[test]
    fn an_hour_at_10_khz_makes_a_small_page() {
        // 16 threads, 36 M samples each spread over 1 µs..10 ms (thousands of HDR buckets), and
        // full timelines: the page depends on buckets and intervals, never on samples.
        let mut r = run(16);
        for s in &mut r.series {
            let mut v = 1000.0f64;
            s.histogram.buckets.clear();
            while v < 1e7 {
                s.histogram.buckets.push([v as u64, 3900]);
                v *= 1.001;
            }
            s.timeline = Some(Timeline {
                interval_ns: 2_000_000_000,
                percentile: 99.0,
                count: vec![20_000_000; 1800],
                max: (0..1800u64).map(|k| 50_000 + k * 7).collect(),
                pct: vec![20_000; 1800],
            });
        }
        let loaded = vec![super::super::Loaded {
            run: r,
            name: "big.json".into(),
            tags: Default::default(),
            facts: latlab_core::result::kind::Facts {
                chart: latlab_core::result::kind::Chart::Histogram,
                ..Default::default()
            },
        }];
        let groups = super::super::groups(&loaded, false);
        let page = super::super::html::page(&loaded, &groups, None, None, &[], false);
        assert!(page.len() < 1 << 20, "{} bytes", page.len());
        assert_eq!(count(&page, r#"data-kind="line""#), 2);
    }

    /// The legend's max is the exact max, written as the percentile table writes it, even
    /// where the histogram bucket holding it reads higher.
    #[test]
    fn legend_and_table_agree_on_the_exact_max() {
        let mut r = run(1);
        let mut rec = Recorder::new();
        for v in [20_000u64, 30_000, 14_033_123] {
            rec.record(v);
        }
        r.series[0] = Series::from_recorder("T0".into(), &rec);
        let top = r.series[0].histogram.buckets.last().unwrap()[0];
        assert_ne!(top, 14_033_123, "the bucket is not the exact max");
        let (h, _) = histogram(&r).unwrap();
        assert!(h.contains(">T0 20/") && h.contains("/14033<"), "{h}");
        let loaded = vec![super::super::Loaded {
            run: r,
            name: "one.json".into(),
            tags: Default::default(),
            facts: Default::default(),
        }];
        let groups = super::super::groups(&loaded, false);
        let page = super::super::html::page(&loaded, &groups, None, None, &[], true);
        assert!(page.contains("<td>14033</td>"), "table max");
        assert_eq!(count(&page, r#"data-kind="hist-linear""#), 1);
        assert_eq!(count(&page, r#"data-kind="exceedance""#), 1);
    }

    #[test]
    fn exceedance_goes_down_to_one_over_n_and_linear_bins_are_1_us() {
        let r = run(1);
        let d = vec![("T0".to_string(), merge(&r.series))];
        let e = exceedance("E", &d, "ns");
        assert!(e.contains("fraction of samples at or above"));
        // 101 samples: the axis reaches 1/101, so down to 0.001 (its decade).
        assert!(e.contains(">0.001<") || e.contains(">1e-3<"), "{e}");
        let l = histogram_linear("L", &d, "ns");
        assert!(l.contains("1 µs bins"), "{l}");
        let many = vec![("x".to_string(), vec![(1_000u64, 1u64), (9_000_000, 1)])];
        assert!(histogram_linear("L", &many, "ns").contains("8 µs bins"));
    }

    #[test]
    fn a_timeline_has_no_point_past_the_end_of_its_run() {
        let r = run(1);
        let t = r.series[0].timeline.as_ref().unwrap();
        // A 2.2 s run whose last 1 s interval is partial.
        let pts = timeline_points(t, &t.max, 1e-3, 2.2);
        assert!(pts.iter().all(|p| p.0 <= 2.2), "{pts:?}");
        assert!((pts.last().unwrap().0 - 2.1).abs() < 1e-9, "{pts:?}");
        let open = timeline_points(t, &t.max, 1e-3, 0.0);
        assert!((open.last().unwrap().0 - 2.5).abs() < 1e-9);
    }

    #[test]
    fn a_difference_a_tag_names_is_not_a_surprise() {
        let a = run(1);
        let mut b = run(1);
        b.environment.clocksource = "kvm-clock".into();
        let page = |tag: Option<&str>| {
            let loaded = vec![
                super::super::Loaded {
                    run: a.clone(),
                    name: "a".into(),
                    tags: Default::default(),
                    facts: Default::default(),
                },
                super::super::Loaded {
                    run: b.clone(),
                    name: "b".into(),
                    tags: tag
                        .map(|t| [("clocksource".to_string(), t.to_string())].into())
                        .unwrap_or_default(),
                    facts: Default::default(),
                },
            ];
            let groups = super::super::groups(&loaded, false);
            super::super::html::page(&loaded, &groups, None, None, &[], false)
        };
        assert!(page(None).contains("These runs differ"));
        assert!(!page(Some("kvm-clock")).contains("These runs differ"));
    }

    #[test]
    fn an_unbounded_interval_ends_at_the_plot_s_largest_bounded_figure_and_says_so() {
        let row = |e: f64, lo: f64, hi: f64| ForestRow {
            label: "x".into(),
            estimate: e,
            ci: (lo, hi),
            verdict: "no difference".into(),
        };
        let mut rows = vec![row(-42.0, -99.0, 2.195e154), row(10.0, -5.0, 30.0)];
        unbounded_to_the_edge(&mut rows);
        assert_eq!(rows[0].ci, (-99.0, 30.0));
        assert_eq!(rows[0].estimate, -42.0);
        assert_eq!(rows[0].verdict, "no difference (interval unbounded)");
        assert_eq!(
            (rows[1].ci, rows[1].verdict.as_str()),
            ((-5.0, 30.0), "no difference")
        );
    }
}
