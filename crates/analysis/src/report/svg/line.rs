//! Line charts: one `<path>` per series, markers along it, a legend.

use super::{esc, marker, Axis, Frame, Line, DASHES, PALETTE};
use std::fmt::Write;

/// A line chart: one `<path class="series">` per line, markers spaced along it, a legend.
pub(crate) fn line_chart(title: &str, x: Axis, y: Axis, lines: &[Line]) -> String {
    line_chart_kind(title, x, y, lines, "line")
}

/// A line chart marked `data-kind="{kind}"` (`exceedance`, `hist-linear`), so a page or a test
/// can tell its charts apart.
pub(crate) fn line_chart_kind(
    title: &str,
    x: Axis,
    y: Axis,
    lines: &[Line],
    kind: &'static str,
) -> String {
    let mut f = Frame::new(title, x, y, kind, true);
    for (i, l) in lines.iter().enumerate() {
        // A point with a non-finite y (or one a log axis cannot show) breaks the line.
        let mut segs: Vec<Vec<(f64, f64)>> = vec![Vec::new()];
        for &(a, b) in &l.points {
            let shown =
                a.is_finite() && b.is_finite() && (!f.y.log || b > 0.0) && (!f.x.log || a > 0.0);
            if shown {
                if let Some(s) = segs.last_mut() {
                    s.push((f.px(a), f.py(b)));
                }
            } else if segs.last().is_some_and(|s| !s.is_empty()) {
                segs.push(Vec::new());
            }
        }
        segs.retain(|s| !s.is_empty());
        let _ = write!(
            f.out,
            r#"<g class="series" data-label="{}">"#,
            esc(&l.label)
        );
        if !l.markers_only && !segs.is_empty() {
            let mut d = String::new();
            for s in &segs {
                for (k, (a, b)) in s.iter().enumerate() {
                    let _ = write!(d, "{}{a:.1} {b:.1}", if k == 0 { "M" } else { "L" });
                }
            }
            let _ = write!(
                f.out,
                r#"<path d="{d}" fill="none" stroke="{}" stroke-width="1.6" stroke-dasharray="{}" stroke-linejoin="round"/>"#,
                PALETTE[i % 8],
                DASHES[i % 8]
            );
        }
        // Markers: every point of a scatter and every lone point, about 8 along a line.
        let n: usize = segs.iter().map(Vec::len).sum();
        let every = if l.markers_only { 1 } else { (n / 8).max(1) };
        let mut k = 0usize;
        for s in &segs {
            for (a, b) in s {
                if k.is_multiple_of(every) || s.len() == 1 {
                    f.out.push_str(&marker(*a, *b, i, 3.0));
                }
                k += 1;
            }
        }
        for &k in &l.outliers {
            if let Some(&(a, b)) = l.points.get(k) {
                let _ = write!(
                    f.out,
                    r#"<circle class="outlier" cx="{:.1}" cy="{:.1}" r="7" fill="none" stroke="black" stroke-width="1.5"/>"#,
                    f.px(a),
                    f.py(b)
                );
            }
        }
        f.out.push_str("</g>");
    }
    let entries: Vec<(String, usize, bool)> = lines
        .iter()
        .enumerate()
        .map(|(i, l)| (l.label.clone(), i, !l.markers_only))
        .collect();
    f.legend(&entries);
    f.finish()
}
