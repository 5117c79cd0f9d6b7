//! A small SVG writer for latlab's charts: line charts (linear or log axes), grouped bars with
//! whiskers, and forest plots. Colours are Okabe-Ito, and every series also differs by dash
//! pattern and marker, so charts survive greyscale printing and colour-blind readers.
//!
//! This module holds what every chart shares (palette, axes, the frame, markers); each kind of
//! chart is drawn in its own file.

mod band;
mod bars;
mod forest;
mod line;

pub(crate) use band::{tail_chart, TailPlot};
pub(crate) use bars::{bar_chart, Bars};
pub(crate) use forest::{forest, ForestRow};
pub(crate) use line::{line_chart, line_chart_kind};

use std::fmt::Write;

/// Okabe-Ito colours, in the order series get them.
pub(crate) const PALETTE: [&str; 8] = [
    "#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#999933",
];
/// Dash patterns, in the same order.
pub(crate) const DASHES: [&str; 8] = ["", "7 3", "2 2", "9 3 2 3", "1 3", "12 4", "5 2 1 2", "3 5"];
/// Marker shapes, in the same order.
const MARKERS: [Marker; 4] = [
    Marker::Circle,
    Marker::Square,
    Marker::Triangle,
    Marker::Diamond,
];

const W: f64 = 760.0;
const H: f64 = 340.0;
const LEFT: f64 = 72.0;
const RIGHT: f64 = 230.0;
const TOP: f64 = 34.0;
const BOTTOM: f64 = 48.0;

#[derive(Debug, Clone, Copy)]
enum Marker {
    Circle,
    Square,
    Triangle,
    Diamond,
}

/// Text made safe for SVG/HTML.
pub(crate) fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c if (c as u32) < 0x20 && c != '\n' && c != '\t' => o.push(' '),
            // Bidirectional overrides and invisible format characters would reorder or hide
            // what follows (a host tag with U+202E): shown as an escape instead.
            c if latlab_core::output::is_hidden_control(c) => {
                o.push_str(&format!("\\u{{{:x}}}", c as u32))
            }
            c => o.push(c),
        }
    }
    o
}

/// A number in a short form for ticks and labels (3 significant digits).
pub(crate) fn num(v: f64) -> String {
    if !v.is_finite() {
        return "–".into();
    }
    let a = v.abs();
    if a == 0.0 {
        return "0".into();
    }
    if !(1e-3..1e6).contains(&a) {
        let s = format!("{v:.1e}");
        return s.replace(".0e", "e");
    }
    let decimals = if a >= 100.0 {
        0
    } else if a >= 10.0 {
        1
    } else if a >= 1.0 {
        2
    } else {
        3
    };
    let s = format!("{v:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// One axis: its range, whether it is logarithmic, and its label (with the unit).
#[derive(Debug, Clone)]
pub(crate) struct Axis {
    /// Smallest value shown.
    pub(crate) lo: f64,
    /// Largest value shown.
    pub(crate) hi: f64,
    /// Base-10 logarithmic scale (`lo` must be > 0).
    pub(crate) log: bool,
    /// Label, e.g. `latency (µs)`.
    pub(crate) label: String,
}

impl Axis {
    /// An axis spanning `values` (padded a little; log axes to whole decades).
    pub(crate) fn fit(values: impl IntoIterator<Item = f64>, log: bool, label: &str) -> Axis {
        let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
        for v in values
            .into_iter()
            .filter(|v| v.is_finite() && (!log || *v > 0.0))
        {
            lo = lo.min(v);
            hi = hi.max(v);
        }
        if !lo.is_finite() {
            (lo, hi) = if log { (1.0, 10.0) } else { (0.0, 1.0) };
        }
        if log {
            lo = 10f64.powf(lo.log10().floor());
            hi = 10f64.powf(hi.log10().ceil());
            if hi <= lo {
                hi = lo * 10.0;
            }
        } else {
            if lo > 0.0 && lo < hi * 0.5 {
                lo = 0.0;
            }
            if hi <= lo {
                hi = lo + 1.0;
            }
            let pad = (hi - lo) * 0.04;
            hi += pad;
            if lo != 0.0 {
                lo -= pad;
            }
        }
        Axis {
            lo,
            hi,
            log,
            label: label.into(),
        }
    }

    pub(super) fn frac(&self, v: f64) -> f64 {
        let f = if self.log {
            (v.max(self.lo * 1e-3).log10() - self.lo.log10()) / (self.hi.log10() - self.lo.log10())
        } else {
            (v - self.lo) / (self.hi - self.lo)
        };
        f.clamp(-0.02, 1.02)
    }

    /// Tick positions: decades on a log axis, 1/2/5 steps on a linear one.
    pub(crate) fn ticks(&self) -> Vec<f64> {
        if self.log {
            let (a, b) = (
                self.lo.log10().round() as i32,
                self.hi.log10().round() as i32,
            );
            let step = ((b - a) / 8 + 1).max(1);
            return (a..=b)
                .step_by(step as usize)
                .map(|e| 10f64.powi(e))
                .collect();
        }
        let span = self.hi - self.lo;
        let raw = span / 6.0;
        let mag = 10f64.powf(raw.log10().floor());
        let step = [1.0, 2.0, 5.0, 10.0]
            .iter()
            .map(|m| m * mag)
            .find(|s| span / s <= 7.0)
            .unwrap_or(10.0 * mag);
        let mut t = (self.lo / step).ceil() * step;
        let mut out = Vec::new();
        while t <= self.hi + step * 1e-9 && out.len() < 20 {
            out.push(if t.abs() < step * 1e-9 { 0.0 } else { t });
            t += step;
        }
        out
    }
}

/// One line (or point set) of a line chart.
#[derive(Debug, Clone)]
pub(crate) struct Line {
    /// Legend text.
    pub(crate) label: String,
    /// Points in data coordinates.
    pub(crate) points: Vec<(f64, f64)>,
    /// Draw markers only (a scatter), no connecting line.
    pub(crate) markers_only: bool,
    /// Indices of points to ring as outliers.
    pub(crate) outliers: Vec<usize>,
}

impl Line {
    /// A connected line.
    pub(crate) fn new(label: impl Into<String>, points: Vec<(f64, f64)>) -> Line {
        Line {
            label: label.into(),
            points,
            markers_only: false,
            outliers: Vec::new(),
        }
    }
}

/// The frame shared by every chart: title, plot area, axes with ticks, grid and labels.
pub(super) struct Frame {
    pub(super) out: String,
    pub(super) x: Axis,
    pub(super) y: Axis,
    x_ticks: bool,
    pub(super) kind: &'static str,
}

impl Frame {
    /// `x_ticks`: numeric ticks on x (bar charts name their categories instead).
    pub(super) fn new(title: &str, x: Axis, y: Axis, kind: &'static str, x_ticks: bool) -> Frame {
        let mut out = String::new();
        let _ = write!(
            out,
            r#"<svg xmlns="http://www.w3.org/2000/svg" class="chart" data-kind="{kind}" viewBox="0 0 {W} {H}" width="{W}" height="{H}" font-family="sans-serif" font-size="12" role="img" aria-label="{t}"><title>{t}</title><rect width="{W}" height="{H}" fill="white"/><text x="{LEFT}" y="20" font-size="14" font-weight="bold">{t}</text>"#,
            t = esc(title)
        );
        let f = Frame {
            out,
            x,
            y,
            x_ticks,
            kind,
        };
        f.axes()
    }

    pub(super) fn px(&self, x: f64) -> f64 {
        LEFT + self.x.frac(x) * (W - LEFT - RIGHT)
    }

    pub(super) fn py(&self, y: f64) -> f64 {
        H - BOTTOM - self.y.frac(y) * (H - TOP - BOTTOM)
    }

    fn axes(mut self) -> Frame {
        let (x0, x1, y0, y1) = (LEFT, W - RIGHT, H - BOTTOM, TOP);
        let mut s = String::from(r#"<g class="axes" stroke="black" fill="none">"#);
        let _ = write!(
            s,
            r#"<rect x="{x0}" y="{y1}" width="{}" height="{}"/>"#,
            x1 - x0,
            y0 - y1
        );
        s.push_str("</g>");
        let mut labels = String::from(r#"<g class="ticks" font-size="11">"#);
        let mut grid = String::from(r##"<g class="grid" stroke="#ddd">"##);
        let xt = if self.x_ticks {
            self.x.ticks()
        } else {
            Vec::new()
        };
        for t in xt {
            let p = self.px(t);
            let _ = write!(
                grid,
                r#"<line x1="{p:.1}" y1="{y0}" x2="{p:.1}" y2="{y1}"/>"#
            );
            let _ = write!(
                labels,
                r#"<text x="{p:.1}" y="{}" text-anchor="middle">{}</text>"#,
                y0 + 15.0,
                num(t)
            );
        }
        for t in self.y.ticks() {
            let p = self.py(t);
            let _ = write!(
                grid,
                r#"<line x1="{x0}" y1="{p:.1}" x2="{x1}" y2="{p:.1}"/>"#
            );
            let _ = write!(
                labels,
                r#"<text x="{}" y="{:.1}" text-anchor="end">{}</text>"#,
                x0 - 5.0,
                p + 4.0,
                num(t)
            );
        }
        grid.push_str("</g>");
        let _ = write!(
            labels,
            r#"<text class="xlabel" x="{:.1}" y="{}" text-anchor="middle">{}</text><text class="ylabel" transform="translate(16 {:.1}) rotate(-90)" text-anchor="middle">{}</text></g>"#,
            (x0 + x1) / 2.0,
            H - 10.0,
            esc(&self.x.label),
            (y0 + y1) / 2.0,
            esc(&self.y.label)
        );
        self.out.push_str(&grid);
        self.out.push_str(&s);
        self.out.push_str(&labels);
        self
    }

    pub(super) fn legend(&mut self, entries: &[(String, usize, bool)]) {
        let x = W - RIGHT + 12.0;
        self.out.push_str(r#"<g class="legend" font-size="11">"#);
        for (i, (label, style, line)) in entries.iter().enumerate().take(16) {
            let y = TOP + 8.0 + i as f64 * 17.0;
            if !*line && self.kind == "bar" {
                let _ = write!(
                    self.out,
                    r#"<rect x="{}" y="{}" width="14" height="10" fill="url(#h{style})" stroke="black" stroke-width="0.6"/>"#,
                    x + 6.0,
                    y - 5.0
                );
            } else if *line {
                let _ = write!(
                    self.out,
                    r#"<line x1="{x}" y1="{y}" x2="{}" y2="{y}" stroke="{}" stroke-width="2" stroke-dasharray="{}"/>"#,
                    x + 26.0,
                    PALETTE[style % 8],
                    DASHES[style % 8]
                );
            }
            if self.kind != "bar" {
                self.out.push_str(&marker(x + 13.0, y, *style, 3.5));
            }
            let _ = write!(
                self.out,
                r#"<text class="legend-entry" x="{}" y="{}">{}</text>"#,
                x + 32.0,
                y + 4.0,
                esc(label)
            );
        }
        self.out.push_str("</g>");
    }

    pub(super) fn finish(mut self) -> String {
        self.out.push_str("</svg>");
        self.out
    }
}

pub(super) fn marker(x: f64, y: f64, style: usize, r: f64) -> String {
    let c = PALETTE[style % 8];
    match MARKERS[style % 4] {
        Marker::Circle => format!(r#"<circle cx="{x:.1}" cy="{y:.1}" r="{r}" fill="{c}"/>"#),
        Marker::Square => format!(
            r#"<rect x="{:.1}" y="{:.1}" width="{}" height="{}" fill="{c}"/>"#,
            x - r,
            y - r,
            2.0 * r,
            2.0 * r
        ),
        Marker::Triangle => format!(
            r#"<path d="M{x:.1} {:.1}L{:.1} {:.1}L{:.1} {:.1}Z" fill="{c}"/>"#,
            y - r,
            x + r,
            y + r,
            x - r,
            y + r
        ),
        Marker::Diamond => format!(
            r#"<path d="M{x:.1} {:.1}L{:.1} {y:.1}L{x:.1} {:.1}L{:.1} {y:.1}Z" fill="{c}"/>"#,
            y - r,
            x + r,
            y + r,
            x - r
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count(s: &str, pat: &str) -> usize {
        s.matches(pat).count()
    }

    #[test]
    fn numbers_and_escapes_are_short_and_safe() {
        assert_eq!(num(0.0), "0");
        assert_eq!(num(1000.0), "1000");
        assert_eq!(num(2.5), "2.5");
        assert_eq!(num(1e7), "1e7");
        assert_eq!(num(0.125), "0.125");
        assert_eq!(esc("<a & 'b'>"), "&lt;a &amp; &#39;b&#39;&gt;");
    }

    #[test]
    fn log_axis_ticks_are_decades() {
        let a = Axis::fit([3.0, 4500.0], true, "x");
        assert_eq!((a.lo, a.hi), (1.0, 10000.0));
        assert_eq!(a.ticks(), vec![1.0, 10.0, 100.0, 1000.0, 10000.0]);
        let l = Axis::fit([0.0, 9.3], false, "y");
        let t = l.ticks();
        assert_eq!(t[0], 0.0);
        assert!(t.len() >= 4 && t.len() <= 8, "{t:?}");
    }

    #[test]
    fn line_chart_has_axes_a_path_per_series_and_a_legend() {
        let lines = vec![
            Line::new("T0 <cpu0>", vec![(1.0, 10.0), (2.0, 100.0), (3.0, 1.0)]),
            Line::new("T1", vec![(1.0, 5.0), (2.0, 0.0), (3.0, 7.0)]),
        ];
        let s = line_chart(
            "Histogram",
            Axis::fit([1.0, 3.0], false, "latency (µs)"),
            Axis::fit([1.0, 100.0], true, "samples"),
            &lines,
        );
        assert!(s.starts_with("<svg") && s.ends_with("</svg>"));
        assert_eq!(count(&s, r#"<g class="series""#), 2);
        assert_eq!(count(&s, r#"class="legend-entry""#), 2);
        assert!(s.contains("T0 &lt;cpu0&gt;"));
        assert!(s.contains(r#"class="xlabel""#) && s.contains("latency (µs)"));
        assert!(s.contains(r#"class="ylabel""#) && s.contains(">samples<"));
        assert_eq!(count(&s, "<path d=\"M"), 2);
        // A zero on a log axis is left out, not drawn at -infinity.
        assert!(!s.contains("NaN") && !s.contains("inf"));
        assert!(s.contains(PALETTE[0]) && s.contains(DASHES[1]));
        // A NaN breaks a line into two pieces; a lone point still gets its marker.
        let gap = line_chart(
            "gap",
            Axis::fit([1.0, 5.0], false, "x"),
            Axis::fit([1.0, 9.0], false, "y"),
            &[Line::new(
                "g",
                vec![(1.0, 1.0), (2.0, 2.0), (3.0, f64::NAN), (5.0, 9.0)],
            )],
        );
        let path = gap.split("<path d=\"").nth(1).unwrap();
        assert_eq!(path.split('"').next().unwrap().matches('M').count(), 2);
        assert!(gap.contains("<circle"));
    }

    #[test]
    fn bars_and_forest_have_their_parts() {
        let s = bar_chart(
            "Noise",
            &["cpu0".into(), "cpu1".into(), "cpu2".into()],
            Axis::fit([0.0, 30.0], false, "max gap (µs)"),
            &[
                Bars {
                    label: "max".into(),
                    values: vec![10.0, 20.0, 30.0],
                    whiskers: Some(vec![(5.0, 12.0), (15.0, 25.0), (25.0, 30.0)]),
                },
                Bars {
                    label: "p99".into(),
                    values: vec![1.0, 2.0, f64::NAN],
                    whiskers: None,
                },
            ],
        );
        assert_eq!(count(&s, r#"class="bar""#), 5);
        assert_eq!(count(&s, r#"class="whisker""#), 3);
        assert_eq!(count(&s, r#"class="category""#), 3);
        assert_eq!(count(&s, r#"class="legend-entry""#), 2);
        assert!(s.contains("max gap (µs)"));
        let f = forest(
            "Differences",
            "difference (µs)",
            &[
                ForestRow {
                    label: "B: p99".into(),
                    estimate: 3.0,
                    ci: (1.0, 5.0),
                    verdict: "worse".into(),
                },
                ForestRow {
                    label: "B: p50".into(),
                    estimate: -0.5,
                    ci: (-1.0, 0.2),
                    verdict: "no difference proven".into(),
                },
            ],
        );
        assert_eq!(count(&f, r#"class="series row""#), 2);
        assert!(f.contains(r#"class="zero""#) && f.contains("difference (µs)"));
        assert!(f.contains(">worse<"));
    }
}
