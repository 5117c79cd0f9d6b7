//! Grouped bar charts with whiskers and hatching.

use super::{esc, num, Axis, Frame, BOTTOM, H, LEFT, PALETTE, RIGHT, W};
use std::fmt::Write;

/// One group of bars (one colour), with optional whiskers `(low, high)` per category.
#[derive(Debug, Clone)]
pub(crate) struct Bars {
    /// Legend text.
    pub(crate) label: String,
    /// One value per category.
    pub(crate) values: Vec<f64>,
    /// Whiskers per category.
    pub(crate) whiskers: Option<Vec<(f64, f64)>>,
}

/// Grouped vertical bars over named categories; bars carry hatching per group for greyscale.
pub(crate) fn bar_chart(title: &str, categories: &[String], y: Axis, groups: &[Bars]) -> String {
    let n = categories.len().max(1) as f64;
    let x = Axis {
        lo: 0.0,
        hi: n,
        log: false,
        label: String::new(),
    };
    let mut f = Frame::new(title, x, y.clone(), "bar", false);
    let g = groups.len().max(1) as f64;
    let slot = (W - LEFT - RIGHT) / n;
    let bw = (slot * 0.8 / g).min(40.0);
    let base = f.py(if y.log { y.lo } else { 0f64.max(y.lo) });
    let mut defs = String::from("<defs>");
    for (gi, _) in groups.iter().enumerate() {
        let _ = write!(
            defs,
            r#"<pattern id="h{gi}" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate({})"><rect width="6" height="6" fill="{}"/><line x1="0" y1="0" x2="0" y2="6" stroke="white" stroke-width="{}"/></pattern>"#,
            [45, -45, 0, 90][gi % 4],
            PALETTE[gi % 8],
            if gi == 0 { 0.0 } else { 1.5 }
        );
    }
    defs.push_str("</defs>");
    f.out.push_str(&defs);
    for (ci, c) in categories.iter().enumerate() {
        let cx = LEFT + slot * (ci as f64 + 0.5);
        let y = H - BOTTOM + 14.0;
        // Names wider than their slot are slanted (and shortened) so they never overlap.
        if c.chars().count() as f64 * 6.2 > slot {
            let short: String = c.chars().take(16).collect();
            let _ = write!(
                f.out,
                r#"<text class="category" x="{cx:.1}" y="{y}" text-anchor="end" font-size="10" transform="rotate(-30 {cx:.1} {y})">{}<title>{}</title></text>"#,
                esc(&short),
                esc(c)
            );
        } else {
            let _ = write!(
                f.out,
                r#"<text class="category" x="{cx:.1}" y="{y}" text-anchor="middle" font-size="11">{}</text>"#,
                esc(c)
            );
        }
    }
    for (gi, grp) in groups.iter().enumerate() {
        let _ = write!(
            f.out,
            r#"<g class="series" data-label="{}">"#,
            esc(&grp.label)
        );
        for (ci, &v) in grp.values.iter().enumerate() {
            if !v.is_finite() {
                continue;
            }
            let x0 = LEFT + slot * ci as f64 + (slot - bw * g) / 2.0 + bw * gi as f64;
            let top = f.py(v);
            let _ = write!(
                f.out,
                r#"<rect class="bar" x="{x0:.1}" y="{:.1}" width="{bw:.1}" height="{:.1}" fill="url(#h{gi})" stroke="black" stroke-width="0.6"><title>{}: {}</title></rect>"#,
                top.min(base),
                (base - top).abs(),
                esc(&categories.get(ci).cloned().unwrap_or_default()),
                num(v)
            );
            if let Some((lo, hi)) = grp.whiskers.as_ref().and_then(|w| w.get(ci)) {
                let (a, b, m) = (f.py(*lo), f.py(*hi), x0 + bw / 2.0);
                let _ = write!(
                    f.out,
                    r#"<path class="whisker" d="M{m:.1} {a:.1}V{b:.1}M{:.1} {a:.1}H{:.1}M{:.1} {b:.1}H{:.1}" stroke="black" stroke-width="1.2" fill="none"/>"#,
                    m - 4.0,
                    m + 4.0,
                    m - 4.0,
                    m + 4.0
                );
            }
        }
        f.out.push_str("</g>");
    }
    let entries: Vec<(String, usize, bool)> = groups
        .iter()
        .enumerate()
        .map(|(i, g)| (g.label.clone(), i, false))
        .collect();
    f.legend(&entries);
    f.finish()
}
