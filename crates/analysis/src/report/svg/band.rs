//! The tail chart: an exceedance curve on log-log axes with a fitted model over it, the
//! model's confidence band as a shaded area and the threshold as a dashed vertical line.

use super::{esc, marker, Axis, Frame, PALETTE};
use std::fmt::Write;

/// What the tail chart shows, in data coordinates (x latency, y probability per sample).
#[derive(Debug, Clone, Default)]
pub(crate) struct TailPlot {
    /// Empirical exceedance points (x, fraction of samples at or above x).
    pub(crate) empirical: Vec<(f64, f64)>,
    /// The fitted curve (x, probability).
    pub(crate) fitted: Vec<(f64, f64)>,
    /// The band: at probability y, latencies from x_low to x_high.
    pub(crate) band: Vec<(f64, f64, f64)>,
    /// The threshold (x), marked (None: no fit).
    pub(crate) threshold: Option<f64>,
    /// Legend texts: empirical, fitted, band.
    pub(crate) labels: [String; 3],
}

/// Draws `p` (both axes logarithmic; `kind` = `tail`).
pub(crate) fn tail_chart(title: &str, x: Axis, y: Axis, p: &TailPlot) -> String {
    let mut f = Frame::new(title, x, y, "tail", true);
    let clip = |f: &Frame, a: f64, b: f64| (f.px(a), f.py(b));
    // The band: the upper edge out, the lower edge back.
    if p.band.len() >= 2 {
        let mut d = String::new();
        for (k, &(yy, _, hi)) in p.band.iter().enumerate() {
            let (a, b) = clip(&f, hi.min(f.x.hi), yy);
            let _ = write!(d, "{}{a:.1} {b:.1}", if k == 0 { "M" } else { "L" });
        }
        for &(yy, lo, _) in p.band.iter().rev() {
            let (a, b) = clip(&f, lo.max(f.x.lo), yy);
            let _ = write!(d, "L{a:.1} {b:.1}");
        }
        let _ = write!(
            f.out,
            r#"<path class="band" d="{d}Z" fill="{}" fill-opacity="0.18" stroke="none"/>"#,
            PALETTE[1]
        );
    }
    // The threshold.
    if let Some(t) = p.threshold {
        let tx = f.px(t);
        let _ = write!(
            f.out,
            r##"<g class="threshold"><line x1="{tx:.1}" y1="{}" x2="{tx:.1}" y2="{}" stroke="#555" stroke-dasharray="4 3"/><text x="{:.1}" y="{}" font-size="11" fill="#555">threshold</text></g>"##,
            f.py(f.y.hi),
            f.py(f.y.lo),
            tx + 3.0,
            f.py(f.y.hi) + 12.0
        );
    }
    // The fitted curve.
    if p.fitted.len() >= 2 {
        let mut d = String::new();
        for (k, &(a, b)) in p.fitted.iter().enumerate() {
            if a > f.x.hi {
                break;
            }
            let (a, b) = clip(&f, a, b);
            let _ = write!(d, "{}{a:.1} {b:.1}", if k == 0 { "M" } else { "L" });
        }
        let _ = write!(
            f.out,
            r#"<path class="fitted" d="{d}" fill="none" stroke="{}" stroke-width="2"/>"#,
            PALETTE[1]
        );
    }
    // The data.
    f.out.push_str(r#"<g class="empirical">"#);
    for &(a, b) in &p.empirical {
        let (a, b) = clip(&f, a, b);
        f.out.push_str(&marker(a, b, 0, 2.0));
    }
    f.out.push_str("</g>");
    let mut entries = vec![(p.labels[0].clone(), 0usize, false)];
    if !p.fitted.is_empty() {
        entries.push((p.labels[1].clone(), 1usize, true));
    }
    f.legend(&entries);
    if p.band.len() >= 2 {
        // The band's legend entry, drawn by hand (the shared legend knows lines and bars).
        let (lx, ly) = (f.px(f.x.hi) + 12.0, 34.0 + 8.0 + 2.0 * 17.0);
        let _ = write!(
            f.out,
            r#"<g class="legend-band" font-size="11"><rect x="{lx:.1}" y="{:.1}" width="26" height="10" fill="{}" fill-opacity="0.18"/><text x="{:.1}" y="{:.1}">{}</text></g>"#,
            ly - 5.0,
            PALETTE[1],
            lx + 32.0,
            ly + 4.0,
            esc(&p.labels[2])
        );
    }
    f.finish()
}
