//! Charts of one run over its time and across its CPUs: the timeline, the noise gaps and the
//! per-series bars.

use super::charts::{display_unit, MAX_LINES};
use super::svg::{self, Axis, Bars, Line};
use latlab_core::result::{Run, Series, Timeline};

/// Points kept on a timeline chart.
const MAX_TIME_POINTS: usize = 720;

/// A timeline's points at the middle of each interval, the last (partial) interval's middle
/// taken inside the run: no point lies past the run's end (`end_s`, when known).
pub(super) fn timeline_points(t: &Timeline, v: &[u64], scale: f64, end_s: f64) -> Vec<(f64, f64)> {
    let w = t.interval_ns as f64 / 1e9;
    let end = if end_s > 0.0 { end_s } else { f64::INFINITY };
    t.count
        .iter()
        .zip(v)
        .enumerate()
        .filter(|(_, (c, _))| **c > 0)
        .map(|(i, (_, m))| {
            let (a, b) = (i as f64 * w, ((i + 1) as f64 * w).min(end));
            (((a + b) / 2.0).min(end), *m as f64 * scale)
        })
        .collect()
}

/// The maximum per interval over time, one line per series (aggregated when there are many).
pub fn timeline(run: &Run) -> Option<(String, Option<String>)> {
    let with: Vec<(&Series, Timeline)> = run
        .series
        .iter()
        .filter_map(|s| {
            let t = s.timeline.as_ref()?;
            let f = t.len().div_ceil(MAX_TIME_POINTS).max(1);
            Some((s, if f > 1 { t.coarsened(f) } else { t.clone() }))
        })
        .collect();
    let (first, t0) = with.first()?;
    let (scale, uname) = display_unit(&first.unit);
    let mut note = None;
    let lines: Vec<Line> = if with.len() <= MAX_LINES {
        with.iter()
            .map(|(s, t)| {
                Line::new(
                    s.name.clone(),
                    timeline_points(t, &t.max, scale, run.duration_s),
                )
            })
            .collect()
    } else {
        let n = with.iter().map(|(_, t)| t.len()).max().unwrap_or(0);
        let width = with.iter().map(|(_, t)| t.interval_ns).max().unwrap_or(1);
        let mut hi = vec![0u64; n];
        let mut med = vec![0u64; n];
        let mut cnt = vec![0u64; n];
        let mut p = vec![0u64; n];
        for i in 0..n {
            let mut col: Vec<u64> = with
                .iter()
                .filter(|(_, t)| t.interval_ns == width && t.count.get(i).is_some_and(|c| *c > 0))
                .map(|(_, t)| t.max[i])
                .collect();
            col.sort_unstable();
            cnt[i] = col.len() as u64;
            hi[i] = col.last().copied().unwrap_or(0);
            med[i] = col.get(col.len() / 2).copied().unwrap_or(0);
            p[i] = with
                .iter()
                .filter_map(|(_, t)| t.pct.get(i))
                .copied()
                .max()
                .unwrap_or(0);
        }
        let agg = Timeline {
            interval_ns: width,
            percentile: t0.percentile,
            count: cnt,
            max: hi.clone(),
            pct: p.clone(),
        };
        note = Some(format!(
            "{} series aggregated per interval: the largest maximum, the median of their maxima, and the largest p{}",
            with.len(),
            t0.percentile
        ));
        vec![
            Line::new(
                "max of all",
                timeline_points(&agg, &hi, scale, run.duration_s),
            ),
            Line::new(
                "median of maxima",
                timeline_points(&agg, &med, scale, run.duration_s),
            ),
            Line::new(
                format!("p{} (largest)", t0.percentile),
                timeline_points(&agg, &p, scale, run.duration_s),
            ),
        ]
    };
    let x = Axis::fit(
        lines.iter().flat_map(|l| l.points.iter().map(|p| p.0)),
        false,
        "time since start (s)",
    );
    let y = Axis::fit(
        lines.iter().flat_map(|l| l.points.iter().map(|p| p.1)),
        true,
        &format!("max per interval ({uname})"),
    );
    let title = format!(
        "Maximum per {} s interval over time, log y",
        svg::num(t0.interval_ns as f64 / 1e9)
    );
    Some((svg::line_chart(&title, x, y, &lines), note))
}

fn extra_f64(s: &Series, path: &[&str]) -> Option<f64> {
    let mut v = s.extra.as_ref()?;
    for p in path {
        v = v.get(p)?;
    }
    v.as_f64()
}

/// `noise`: per-CPU interruptions and CPU available as bars; the maximum per repeat with the
/// outlying repeats ringed.
pub(crate) fn noise(run: &Run) -> Vec<String> {
    let cats: Vec<String> = run.series.iter().map(|s| s.name.clone()).collect();
    let mut out = Vec::new();
    let count: Vec<f64> = run
        .series
        .iter()
        .map(|s| extra_f64(s, &["interruptions", "count"]).unwrap_or(f64::NAN))
        .collect();
    out.push(svg::bar_chart(
        "Interruptions per CPU",
        &cats,
        Axis::fit(
            count.iter().copied().chain([0.0]),
            false,
            "interruptions (count)",
        ),
        &[Bars {
            label: "interruptions".into(),
            values: count,
            whiskers: None,
        }],
    ));
    let avail: Vec<f64> = run
        .series
        .iter()
        .map(|s| extra_f64(s, &["interruptions", "available_pct"]).unwrap_or(f64::NAN))
        .collect();
    let named: Vec<String> = cats
        .iter()
        .zip(&avail)
        .map(|(c, a)| format!("{c} ({}%)", svg::num(*a)))
        .collect();
    let mut y = Axis::fit([0.0, 100.0], false, "available (%)");
    (y.lo, y.hi) = (0.0, 100.0);
    out.push(svg::bar_chart(
        "CPU available to the spinner (% of its run time)",
        &named,
        y,
        &[Bars {
            label: "available".into(),
            values: avail,
            whiskers: None,
        }],
    ));
    let lines: Vec<Line> = run
        .series
        .iter()
        .take(MAX_LINES)
        .filter_map(|s| {
            let e = s.extra.as_ref()?;
            let maxes = e.get("per_repeat_max_ns")?.as_array()?;
            let pts: Vec<(f64, f64)> = maxes
                .iter()
                .enumerate()
                .filter_map(|(i, v)| Some((i as f64 + 1.0, v.as_f64()? * 1e-3)))
                .collect();
            let outliers: Vec<usize> = e
                .get("outlier_repeats")
                .and_then(|o| o.as_array())
                .map(|o| {
                    o.iter()
                        .filter_map(|v| v.as_u64())
                        .map(|r| r.saturating_sub(1) as usize)
                        .collect()
                })
                .unwrap_or_default();
            Some(Line {
                label: s.name.clone(),
                points: pts,
                markers_only: true,
                outliers,
            })
        })
        .collect();
    if lines.iter().any(|l| l.points.len() > 1) {
        let x = Axis::fit(
            lines.iter().flat_map(|l| l.points.iter().map(|p| p.0)),
            false,
            "repeat",
        );
        let y = Axis::fit(
            lines.iter().flat_map(|l| l.points.iter().map(|p| p.1)),
            true,
            "max gap (µs)",
        );
        out.push(svg::line_chart(
            "Largest gap per repeat (outlying repeats ringed)",
            x,
            y,
            &lines,
        ));
    }
    out
}

/// Other measurements: a bar per series (mean) with whiskers from the median to p99.
pub(crate) fn series_bars(run: &Run) -> Option<String> {
    let unit = run.series.first()?.unit.clone();
    let (scale, uname) = display_unit(&unit);
    let ss: Vec<&Series> = run.series.iter().filter(|s| s.unit == unit).collect();
    let cats: Vec<String> = ss.iter().map(|s| s.name.clone()).collect();
    let values: Vec<f64> = ss.iter().map(|s| s.summary.mean_ns * scale).collect();
    let whiskers: Vec<(f64, f64)> = ss
        .iter()
        .map(|s| {
            (
                s.summary.percentiles.p50 as f64 * scale,
                s.summary.percentiles.p99 as f64 * scale,
            )
        })
        .collect();
    let all = values
        .iter()
        .copied()
        .chain(whiskers.iter().flat_map(|w| [w.0, w.1]));
    let pos: Vec<f64> = all.clone().filter(|v| *v > 0.0).collect();
    let lo = pos.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = pos.iter().copied().fold(0.0, f64::max);
    let log = lo.is_finite() && hi > lo * 1000.0;
    let y = Axis::fit(all.chain([if log { lo } else { 0.0 }]), log, &uname);
    Some(svg::bar_chart(
        &format!(
            "{} per series: mean (bars), median to p99 (whiskers)",
            run.kind
        ),
        &cats,
        y,
        &[Bars {
            label: "mean".into(),
            values,
            whiskers: Some(whiskers),
        }],
    ))
}
