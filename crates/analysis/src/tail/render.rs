//! `latlab tail`'s text and JSON output.

use super::{FitSummary, Report};
use latlab_core::config::DisplayUnit;
use latlab_core::stats::cfmt::g;
use latlab_core::stats::evt::Method;
use std::fmt::Write;

/// A value in the report's unit: µs or ns for runs, as-is (4 significant digits) for values.
pub fn value(r: &Report, unit: DisplayUnit, v: f64) -> String {
    if r.unit == "ns" {
        unit.fmt_ns_fine(v)
    } else {
        g(v, 4)
    }
}

fn unit_name(r: &Report, unit: DisplayUnit) -> String {
    if r.unit == "ns" {
        unit.to_string()
    } else {
        String::new()
    }
}

/// The text report.
pub fn text(r: &Report, unit: DisplayUnit) -> String {
    let mut s = header(r);
    if let Some(f) = &r.refusal {
        let _ = writeln!(s, "\ncannot model the tail: {}", f.reason);
        let _ = writeln!(s, "what would help: {}", f.help);
        return s;
    }
    let Some(f) = &r.fit else { return s };
    s.push_str(&fit(r, f, unit));
    s.push_str(&quantiles(r, unit));
    s
}

/// What the tail was read from: the samples, whether in order, their rate, and the notes.
fn header(r: &Report) -> String {
    let mut s = String::new();
    let _ = write!(
        s,
        "tail of {} samples ({}",
        r.samples,
        if r.ordered {
            "in sample order: bursts declustered"
        } else {
            "no sample order: each exceedance taken as independent"
        }
    );
    if let Some(hz) = r.rate_hz {
        let _ = write!(s, ", {} samples/s", g(hz, 4));
    }
    s.push_str(")\n");
    for n in &r.notes {
        let _ = writeln!(s, "  {n}");
    }
    s
}

/// The fit: its threshold, exceedances and clusters, and the generalized Pareto's
/// parameters with their goodness of fit.
fn fit(r: &Report, f: &FitSummary, unit: DisplayUnit) -> String {
    let mut s = String::new();
    let u = unit_name(r, unit);
    let sp = if u.is_empty() { "" } else { " " };
    let _ = writeln!(
        s,
        "\nthreshold {}{sp}{u}: {} samples above it in {} clusters{}",
        value(r, unit, f.threshold),
        f.exceedances,
        f.clusters,
        match (f.extremal_index, f.run_length) {
            (Some(t), Some(l)) => format!(
                " (extremal index {}, bursts end after {l} samples below)",
                g(t, 3)
            ),
            (Some(t), None) => format!(" (extremal index {}: no bursts)", g(t, 3)),
            _ => String::new(),
        }
    );
    let scale = if r.unit == "ns" && unit == DisplayUnit::Us {
        1e-3
    } else {
        1.0
    };
    let _ = writeln!(
        s,
        "generalized Pareto fit: shape xi = {}, scale sigma = {}{sp}{u}; Anderson-Darling p = {}, gap test p = {}",
        g(f.xi, 3),
        g(f.sigma * scale, 4),
        g(f.gof_p, 2),
        g(f.gap_p, 2)
    );
    s
}

/// The table of latencies exceeded with each probability asked for, with their intervals
/// and where each comes from, and the notes its rows call for.
fn quantiles(r: &Report, unit: DisplayUnit) -> String {
    let mut s = String::new();
    let u = unit_name(r, unit);
    let head = match &r.per {
        Some(p) => format!("P per {p}"),
        None => "P per sample".to_string(),
    };
    let _ = writeln!(
        s,
        "\nlatency exceeded with probability P{} ({} % profile-likelihood interval{}):",
        r.per
            .as_ref()
            .map_or(String::new(), |p| format!(" per {p}")),
        g(r.confidence * 100.0, 3),
        if u.is_empty() {
            String::new()
        } else {
            format!(", {u}")
        }
    );
    let rows: Vec<Vec<String>> = r
        .quantiles
        .iter()
        .map(|q| {
            let v = |x: Option<f64>, none: &str| x.map_or(none.to_string(), |x| value(r, unit, x));
            vec![
                g(q.p, 3),
                v(q.value, "-"),
                v(q.low, "-"),
                v(q.high, "unbounded"),
                match q.method {
                    Method::Gpd => "fit".to_string(),
                    Method::Empirical => "data".to_string(),
                    Method::Body => "below the tail".to_string(),
                },
            ]
        })
        .collect();
    s.push_str(&crate::export::columns::render(
        &[head.as_str(), "latency", "low", "high", "from"],
        &rows,
    ));
    if r.quantiles.iter().any(|q| q.method == Method::Body) {
        s.push_str("(below the tail: more often than the tail's threshold is crossed; read it off the data with latlab compare)\n");
    }
    if r.quantiles
        .iter()
        .any(|q| q.high.is_none() && q.value.is_some())
    {
        s.push_str("(unbounded: the data allow any latency up there; a longer run narrows it)\n");
    }
    if r.per.is_some() {
        s.push_str(
            "(per unit of time: the chance that at least one burst exceeds the latency in one unit, at the data's rate)\n",
        );
    }
    s
}

/// The JSON report (values in ns for runs, in the input's unit for value files).
pub fn json(r: &Report) -> String {
    serde_json::to_string_pretty(r).unwrap_or_default() + "\n"
}
