//! Forest plots: one row per estimate with its interval and verdict, a line at zero.

use super::{esc, marker, num, Axis, BOTTOM, PALETTE, TOP, W};
use std::fmt::Write;

/// One row of a forest plot: an estimate with its interval and a verdict.
#[derive(Debug, Clone)]
pub(crate) struct ForestRow {
    /// Row label, e.g. `B vs A: p99`.
    pub(crate) label: String,
    /// The estimate (a difference).
    pub(crate) estimate: f64,
    /// Its interval.
    pub(crate) ci: (f64, f64),
    /// Verdict text, printed at the right.
    pub(crate) verdict: String,
}

/// A forest plot: one row per estimate, a point and its interval, a line at zero.
pub(crate) fn forest(title: &str, x_label: &str, rows: &[ForestRow]) -> String {
    let h = TOP + BOTTOM + 22.0 * rows.len().max(1) as f64;
    let vals = rows
        .iter()
        .flat_map(|r| [r.estimate, r.ci.0, r.ci.1])
        .chain([0.0]);
    let mut x = Axis::fit(vals, false, x_label);
    let pad = (x.hi - x.lo) * 0.05;
    x.lo -= pad;
    let (left, right) = (200.0, W - 150.0);
    let px = |v: f64| left + x.frac(v) * (right - left);
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="chart" data-kind="forest" viewBox="0 0 {W} {h}" width="{W}" height="{h}" font-family="sans-serif" font-size="12" role="img" aria-label="{t}"><title>{t}</title><rect width="{W}" height="{h}" fill="white"/><text x="10" y="20" font-size="14" font-weight="bold">{t}</text>"#,
        t = esc(title)
    );
    let (y0, y1) = (TOP, h - BOTTOM);
    s.push_str(r##"<g class="grid" stroke="#ddd">"##);
    for t in x.ticks() {
        let p = px(t);
        let _ = write!(s, r#"<line x1="{p:.1}" y1="{y0}" x2="{p:.1}" y2="{y1}"/>"#);
    }
    s.push_str("</g>");
    let z = px(0.0);
    let _ = write!(
        s,
        r#"<g class="axes" stroke="black" fill="none"><rect x="{left}" y="{y0}" width="{}" height="{}"/><line class="zero" x1="{z:.1}" y1="{y0}" x2="{z:.1}" y2="{y1}" stroke-dasharray="4 3"/></g><g class="ticks" font-size="11">"#,
        right - left,
        y1 - y0
    );
    for t in x.ticks() {
        let _ = write!(
            s,
            r#"<text x="{:.1}" y="{}" text-anchor="middle">{}</text>"#,
            px(t),
            y1 + 15.0,
            num(t)
        );
    }
    let _ = write!(
        s,
        r#"<text class="xlabel" x="{:.1}" y="{}" text-anchor="middle">{}</text></g>"#,
        (left + right) / 2.0,
        h - 10.0,
        esc(x_label)
    );
    for (i, r) in rows.iter().enumerate() {
        let y = y0 + 22.0 * (i as f64 + 0.5) + 2.0;
        if !r.estimate.is_finite() {
            // Not compared: the label and why, no bar.
            let _ = write!(
                s,
                r##"<g class="series row" data-label="{}"><text x="{}" y="{:.1}" text-anchor="end">{}</text><text x="{}" y="{:.1}" fill="#555">{}</text></g>"##,
                esc(&r.label),
                left - 6.0,
                y + 4.0,
                esc(&r.label),
                right + 8.0,
                y + 4.0,
                esc(&r.verdict)
            );
            continue;
        }
        let style = match r.verdict.as_str() {
            "better" => 2,
            "worse" => 1,
            _ => 6,
        };
        let _ = write!(
            s,
            r#"<g class="series row" data-label="{}"><text x="{}" y="{:.1}" text-anchor="end">{}</text><line x1="{:.1}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="{}" stroke-width="2"/>{}<text x="{}" y="{:.1}">{}</text></g>"#,
            esc(&r.label),
            left - 6.0,
            y + 4.0,
            esc(&r.label),
            px(r.ci.0),
            px(r.ci.1),
            PALETTE[style],
            marker(px(r.estimate), y, style, 4.5),
            right + 8.0,
            y + 4.0,
            esc(&r.verdict)
        );
    }
    s.push_str("</svg>");
    s
}
