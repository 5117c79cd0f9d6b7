//! The report's "Tail beyond the data" section: `latlab tail`'s fit of a run drawn as a
//! log-log exceedance plot (the data's tail, the fitted curve with its band, the threshold
//! marked) beside the levels it predicts — or the reason it refuses.

use super::markup::figure;
use super::svg::esc;
use super::svg::{self, Axis, TailPlot};
use crate::tail::{Report, Request};
use latlab_core::stats::cfmt::g;
use std::fmt::Write;

/// Per-sample probabilities the report shows.
const AT: [f64; 3] = [1e-6, 1e-9, 1e-12];

/// What the report shows of a run's tail.
#[derive(Debug, Clone, Default)]
pub(crate) struct Section {
    /// Why there is no extrapolation: (reason, what would help).
    pub(crate) refusal: Option<(String, String)>,
    /// The log-log chart (SVG).
    pub(crate) chart: Option<String>,
    /// Rows: P, latency (µs), interval (µs).
    pub(crate) rows: Vec<[String; 3]>,
    /// One line on the fit.
    pub(crate) meta: Option<String>,
}

/// The tail of one run (None when it holds no latencies).
pub fn section(run: &latlab_core::result::Run, name: &str) -> Option<Section> {
    if run.series.first()?.unit != "ns" || run.series.iter().all(|s| s.summary.count == 0) {
        return None;
    }
    let r = crate::tail::estimate_runs(&[(run, name)], &Request::per_sample(&AT)).ok()?;
    let mut s = Section {
        chart: chart(&r),
        ..Default::default()
    };
    if let Some(f) = &r.refusal {
        s.refusal = Some((f.reason.clone(), f.help.clone()));
        return Some(s);
    }
    let us = |v: Option<f64>, none: &str| v.map_or(none.to_string(), |v| g(v / 1e3, 4));
    let row = |label: String, q: &crate::tail::Quantile| {
        [
            label,
            us(q.value, "-"),
            format!("{} … {}", us(q.low, "-"), us(q.high, "unbounded")),
        ]
    };
    for q in &r.quantiles {
        s.rows.push(row(format!("{} per sample", g(q.p, 2)), q));
    }
    // Per hour and per day at the run's own rate: a 50 % chance of a burst above the level.
    if let (Some(hz), Some(m)) = (r.rate_hz, &r.model) {
        for (per, secs) in [("1h", 3600.0), ("1d", 86_400.0)] {
            let l = m.per_samples(-(0.5f64).ln(), hz * secs);
            let q = crate::tail::Quantile {
                p: 0.5,
                value: l.value,
                low: l.low,
                high: l.high,
                method: l.method,
            };
            s.rows.push(row(format!("0.5 per {per}"), &q));
        }
    }
    if let Some(f) = &r.fit {
        s.meta = Some(format!(
            "threshold {} µs, {} samples above it in {} clusters{}; shape ξ = {}, scale σ = {} µs; Anderson-Darling p = {}",
            g(f.threshold / 1e3, 4),
            f.exceedances,
            f.clusters,
            f.extremal_index.map_or(" (no sample order: not declustered)".to_string(), |t| format!(" (extremal index {})", g(t, 3))),
            g(f.xi, 3),
            g(f.sigma / 1e3, 3),
            g(f.gof_p, 2)
        ));
    }
    Some(s)
}

/// The log-log exceedance chart of a report (latency in µs): the data's tail, and where the
/// tail was fitted the curve, its band and the threshold.
pub(crate) fn chart(r: &Report) -> Option<String> {
    let n = r.samples as f64;
    if r.top.is_empty() || n <= 0.0 {
        return None;
    }
    let k = 1e-3;
    let empirical: Vec<(f64, f64)> = r
        .top
        .iter()
        .enumerate()
        .map(|(i, &v)| (v * k, (i + 1) as f64 / n))
        .collect();
    let lowest = empirical.last().map_or(1.0, |p| p.1);
    let mut fitted = Vec::new();
    let mut band = Vec::new();
    let mut p_min = 1.0 / n;
    if let Some(m) = &r.model {
        let p_u = 0.99 * m.exceedances as f64 / n;
        p_min = (0.01 / n).min(r.quantiles.iter().map(|q| q.p).fold(1.0, f64::min));
        // 13 probabilities from the threshold's down to p_min, log-spaced.
        let steps = 12;
        for i in 0..=steps {
            let p = p_u * (p_min / p_u).powf(i as f64 / steps as f64);
            let l = m.per_sample(p);
            if let Some(v) = l.value {
                fitted.push((v * k, p));
                band.push((
                    p,
                    l.low.unwrap_or(v) * k,
                    l.high.map_or(f64::INFINITY, |h| h * k),
                ));
            }
        }
    }
    let xs = empirical
        .iter()
        .map(|p| p.0)
        .chain(fitted.iter().map(|p| p.0))
        .chain(band.iter().map(|b| b.2).filter(|v| v.is_finite()).take(1));
    let mut x = Axis::fit(xs, true, "latency (µs)");
    // The band may run off far: keep the axis to a few decades past the data.
    let data_max = empirical.first().map_or(1.0, |p| p.0);
    x.hi = x.hi.min(10f64.powf((data_max * 1000.0).log10().ceil()));
    let mut y = Axis::fit([p_min, lowest], true, "probability per sample of exceeding");
    y.hi = y.hi.min(1.0);
    let plot = TailPlot {
        empirical,
        fitted,
        band,
        threshold: r.model.as_ref().map(|m| m.threshold * k),
        labels: [
            "data".into(),
            r.model.as_ref().map_or(String::new(), |m| {
                format!("GPD fit (ξ = {})", g(m.fit.xi, 2))
            }),
            "95 % band".into(),
        ],
    };
    Some(svg::tail_chart(
        if r.model.is_some() {
            "Tail: exceedance probability per sample (log-log), fit beyond the data"
        } else {
            "Tail: exceedance probability per sample (log-log), no fit"
        },
        x,
        y,
        &plot,
    ))
}

/// "Tail beyond the data": the chart and levels of `latlab tail`, or why there are none.
pub(super) fn tail_section(t: &Section) -> String {
    let mut s = String::from("<h3>Tail beyond the data</h3>");
    if let Some((why, help)) = &t.refusal {
        let _ = write!(
            s,
            "<p class=\"warn tail-refusal\">No extrapolation: {}. <i>What would help:</i> {}</p>",
            esc(why),
            esc(help)
        );
        if let Some(c) = &t.chart {
            s.push_str(&figure(
                c,
                Some("the data's tail, with no fit (latlab tail)"),
            ));
        }
        return s;
    }
    if let Some(c) = &t.chart {
        s.push_str(&figure(
            c,
            Some("peaks over threshold: the generalized Pareto fit above the threshold with its 95 % profile-likelihood band, the data as points (latlab tail)"),
        ));
    }
    s.push_str("<table class=\"tail\">");
    s.push_str(&super::markup::row(
        &["P", "latency (µs)", "95 % interval (µs)"].map(String::from),
        true,
    ));
    for r in &t.rows {
        s.push_str(&super::markup::row(r, false));
    }
    s.push_str("</table>");
    if let Some(m) = &t.meta {
        let _ = write!(s, "<p class=\"meta\">{}</p>", esc(m));
    }
    s
}
