//! The pieces every HTML page latlab writes shares: the style sheet, a table row of escaped
//! cells, a chart in a figure.

use super::svg::esc;
use std::fmt::Write;

/// The page style, shared with the fleet page.
pub(crate) const CSS: &str = "body{font-family:sans-serif;max-width:1000px;margin:1em auto;padding:0 1em;color:#111}\
h1{font-size:1.5em}h2{font-size:1.25em;border-bottom:2px solid #0072B2;padding-bottom:2px;margin-top:1.6em}\
h3{font-size:1.05em}table{border-collapse:collapse;margin:.5em 0;font-size:.9em}\
td,th{border:1px solid #bbb;padding:2px 6px;text-align:right}th{background:#eee}\
td.l,th.l{text-align:left}.warn{background:#fff4d6;border-left:4px solid #E69F00;padding:.4em .8em}\
.bad{background:#fde0dc;border-left:4px solid #D55E00;padding:.4em .8em}\
figure{margin:1em 0}figcaption{font-size:.85em;color:#444}svg.chart{max-width:100%;height:auto}\
code{font-size:.85em;word-break:break-all}.meta{color:#555;font-size:.9em}\
#environment table{table-layout:fixed;width:100%}#environment th{width:12em}\
#environment td{overflow-wrap:anywhere;white-space:normal}.verdict{font-weight:bold}\
td.diff{background:#fff4d6;font-weight:bold}td.mixed{background:#fde0dc;font-weight:bold}";

/// A table row of escaped cells (`th` when `head`), the first cell left-aligned.
pub(crate) fn row(cells: &[String], head: bool) -> String {
    let tag = if head { "th" } else { "td" };
    let mut s = String::from("<tr>");
    for (i, c) in cells.iter().enumerate() {
        let cls = if i == 0 { " class=\"l\"" } else { "" };
        let _ = write!(s, "<{tag}{cls}>{}</{tag}>", esc(c));
    }
    s.push_str("</tr>");
    s
}

/// A chart in a `<figure>` with an optional caption.
pub(crate) fn figure(svg: &str, caption: Option<&str>) -> String {
    let cap = caption.map_or(String::new(), |c| {
        format!("<figcaption>{}</figcaption>", esc(c))
    });
    format!("<figure>{svg}{cap}</figure>")
}
