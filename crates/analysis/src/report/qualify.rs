//! The qualification report (`latlab qualify --report FILE.html`): the verdict at the top,
//! then what it rests on — per-CPU latency histograms in linear bins with a log y axis (as
//! OSADL draws them), the maximum of every checkpoint interval over time (drift and periodic
//! spikes show), the spikes and their causes, the system facts, the loads achieved, the
//! segments and their gaps. One self-contained page, like every latlab report.

use super::charts::{self, Buckets};
use super::markup::{figure, row, CSS};
use super::svg::{self, esc, Axis, Line};
use latlab_core::result::qualification::{Qualification, State};
use latlab_core::result::Run;
use std::fmt::Write;

/// Seconds as `1h 02m 05s` (`0.25s` under half a second), in the page and the text.
pub fn span(s: f64) -> String {
    // Under a second (a segment resumed at once) it is not "0s".
    if s > 0.0 && s < 0.5 {
        return format!("{s:.2}s");
    }
    let s = s.max(0.0).round() as u64;
    match (s / 3600, s / 60 % 60, s % 60) {
        (0, 0, sec) => format!("{sec}s"),
        (0, m, sec) => format!("{m}m {sec:02}s"),
        (h, m, sec) => format!("{h}h {m:02}m {sec:02}s"),
    }
}

/// The verdict banner: one line per requirement, the worst first in colour.
fn verdict(q: &Qualification) -> String {
    let mut s = String::from("<section id=\"verdict\"><h2>Verdict</h2>");
    if q.verdicts.is_empty() {
        s.push_str("<p class=\"warn\">No requirement was given (<code>--require 'p99.99&lt;100us'</code>): the figures below are the result, without a verdict.</p>");
    }
    for v in &q.verdicts {
        let cls = match v.verdict.as_str() {
            "met" => "ok",
            "violated" => "bad",
            _ => "warn",
        };
        let _ = write!(
            s,
            "<p class=\"{cls} verdict\">{}: {}</p><p class=\"meta\">{}{}</p>",
            esc(&v.requirement),
            esc(&v.verdict.to_uppercase()),
            esc(&v.because),
            v.to_decide
                .as_ref()
                .map(|t| format!("; to decide: {}", esc(t)))
                .unwrap_or_default()
        );
    }
    if q.state != State::Finished {
        let _ = write!(
            s,
            "<p class=\"warn\">Interrupted before its planned length ({:.0} of {:.0} s measured): <code>latlab qualify --resume {}</code> measures the rest.</p>",
            q.measured_s,
            q.planned_s,
            esc(&q.id)
        );
    }
    s.push_str("</section>");
    s
}

/// The segments, intervals and gaps.
fn segments(run: &Run, q: &Qualification) -> String {
    let mut s = format!(
        "<section id=\"segments\"><h2>Measured</h2><p>Qualification <b>{}</b>: {} of {} measured in {} segment(s) and {} checkpoint intervals (each one a stored run, the unit of replication); started {}, final result {} ({}).</p>",
        esc(&q.id),
        esc(&span(q.measured_s)),
        esc(&span(q.planned_s)),
        q.segment,
        q.intervals.len(),
        esc(&q.first_started),
        esc(&run.id),
        esc(&run.ended)
    );
    if q.gaps.is_empty() {
        s.push_str("<p class=\"meta\">No gap: one segment, measured without a break.</p>");
    } else {
        s.push_str("<table><tr><th class=\"l\">after segment</th><th class=\"l\">from</th><th class=\"l\">to</th><th>not measured</th><th class=\"l\">reboot</th></tr>");
        for g in &q.gaps {
            s.push_str(&row(
                &[
                    g.after_segment.to_string(),
                    g.from.clone(),
                    g.to.clone(),
                    span(g.seconds),
                    if g.reboot { "yes" } else { "no" }.into(),
                ],
                false,
            ));
        }
        s.push_str("</table>");
    }
    for c in &q.changed {
        let _ = write!(
            s,
            "<p class=\"warn\">Changed between segments: {}</p>",
            esc(c)
        );
    }
    s.push_str("</section>");
    s
}

/// The maximum of each interval over time, one line per CPU (hours from the first start).
fn max_over_time(q: &Qualification) -> Option<String> {
    let t0 = humantime::parse_rfc3339(&q.first_started).ok()?;
    let mut lines: Vec<Line> = Vec::new();
    let mut cpus: Vec<usize> = q
        .intervals
        .iter()
        .flat_map(|i| i.cpus.iter().map(|c| c.cpu))
        .collect();
    cpus.sort_unstable();
    cpus.dedup();
    for cpu in cpus.iter().take(charts::MAX_LINES) {
        let points: Vec<(f64, f64)> = q
            .intervals
            .iter()
            .filter_map(|i| {
                let end = humantime::parse_rfc3339(&i.ended).ok()?;
                let h = end.duration_since(t0).ok()?.as_secs_f64() / 3600.0;
                let c = i.cpus.iter().find(|c| c.cpu == *cpu && c.count > 0)?;
                Some((h, c.max_ns as f64 / 1e3))
            })
            .collect();
        lines.push(Line::new(format!("cpu{cpu}"), points));
    }
    if lines.iter().all(|l| l.points.is_empty()) {
        return None;
    }
    let x = Axis::fit(
        lines.iter().flat_map(|l| l.points.iter().map(|p| p.0)),
        false,
        "hours since the start",
    );
    let y = Axis::fit(
        lines.iter().flat_map(|l| l.points.iter().map(|p| p.1)),
        true,
        "max per interval (µs)",
    );
    Some(svg::line_chart(
        "Maximum of each checkpoint interval over time, per CPU (log y)",
        x,
        y,
        &lines,
    ))
}

/// The per-CPU latency histograms, OSADL's way (linear 1 µs bins, log y), and log-x.
fn histograms(run: &Run) -> String {
    let dists: Vec<(String, Buckets)> = run
        .series
        .iter()
        .map(|s| (s.name.clone(), charts::merge(std::iter::once(s))))
        .collect();
    let mut s = String::new();
    if dists.iter().any(|d| !d.1.is_empty()) {
        s.push_str(&figure(
            &charts::histogram_linear(
                "Latency per CPU (linear bins, log y, as OSADL draws it)",
                &dists,
                "ns",
            ),
            Some(
                "every sample of the whole qualification; a single sample shows on the log y axis",
            ),
        ));
    }
    if let Some((c, n)) = charts::histogram(run) {
        s.push_str(&figure(&c, n.as_deref()));
    }
    s
}

/// HOOK(tail, issue 31): where `latlab tail`'s exceedance plot of this run goes (the
/// empirical tail, the fitted generalized Pareto curve with its band, the threshold marked).
/// Until it lands the section shows the empirical exceedance alone and says so.
fn tail(run: &Run) -> String {
    let mut s = String::from(
        "<section id=\"tail\"><h2>Tail</h2><!-- HOOK(tail, issue 31): latlab tail's exceedance plot (fit, band, threshold) replaces or joins this figure -->",
    );
    if let Some(c) = charts::exceedance_of_run(run) {
        s.push_str(&figure(
            &c,
            Some("the empirical tail (1 - CDF, log y, down to 1/N); a fitted extrapolation beyond the maximum is not drawn yet (latlab tail, issue 31)"),
        ));
    }
    s.push_str("</section>");
    s
}

fn loads(run: &Run) -> String {
    let mut s = String::from("<section id=\"loads\"><h2>Loads achieved</h2>");
    if run.loads.is_empty() {
        s.push_str("<p class=\"meta\">No load ran (--no-loads).</p></section>");
        return s;
    }
    s.push_str("<table>");
    s.push_str(&row(
        &["load", "CPUs", "achieved", "rate", "note"].map(String::from),
        true,
    ));
    for l in &run.loads {
        s.push_str(&row(
            &[
                l.spec.clone(),
                l.cpus.clone().unwrap_or_else(|| "any".into()),
                format!("{} {} in {:.0} s", l.count, l.unit, l.seconds),
                format!("{}/s", svg::num(l.rate_per_s)),
                l.note.clone().unwrap_or_default(),
            ],
            false,
        ));
    }
    s.push_str("</table></section>");
    s
}

fn facts(q: &Qualification) -> String {
    let mut s = String::from("<section id=\"system\"><h2>System</h2><table>");
    if let Some(f) = &q.system {
        for (k, v) in f.rows() {
            let _ = write!(
                s,
                "<tr><th class=\"l\">{}</th><td class=\"l\">{}</td></tr>",
                esc(k),
                esc(&v)
            );
        }
    }
    s.push_str("</table><p class=\"meta\">read when the last segment started; facts that changed between segments are listed above</p></section>");
    s
}

/// The whole page of a qualification's final result.
pub fn page(run: &Run) -> String {
    let Some(q) = run.qualification.as_deref() else {
        return String::new();
    };
    let title = format!("latlab qualification {}", q.id);
    let mut s = String::new();
    let _ = write!(
        s,
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width\"><title>{t}</title><style>{CSS}.ok{{background:#e2f5e9;border-left:4px solid #009E73;padding:.4em .8em}}</style></head><body><h1>{t}</h1><p class=\"meta\">host {h}, made by latlab {v} at {now}; self-contained (no script, no network)</p>",
        t = esc(&title),
        h = esc(&q.host),
        v = env!("CARGO_PKG_VERSION"),
        now = latlab_core::result::rfc3339(std::time::SystemTime::now()),
    );
    s.push_str(&verdict(q));
    s.push_str(&segments(run, q));
    s.push_str("<section id=\"latency\"><h2>Latency per CPU</h2>");
    s.push_str(&super::html::percentile_table(run));
    s.push_str(&histograms(run));
    if let Some(c) = max_over_time(q) {
        s.push_str(&figure(
            &c,
            Some("one point per checkpoint interval: a drift or a periodic spike shows here"),
        ));
    }
    s.push_str("</section>");
    s.push_str(&tail(run));
    s.push_str(&super::spikes::section(run));
    s.push_str(&loads(run));
    s.push_str(&facts(q));
    if !run.warnings.is_empty() {
        s.push_str("<div class=\"warn\" id=\"warnings\"><b>Warnings</b><ul>");
        for w in &run.warnings {
            let _ = write!(s, "<li>{}</li>", esc(w));
        }
        s.push_str("</ul></div>");
    }
    s.push_str("</body></html>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::span;

    #[test]
    fn spans_read_as_time_and_a_short_gap_is_not_zero() {
        assert_eq!(span(0.0), "0s");
        assert_eq!(span(0.25), "0.25s");
        assert_eq!(span(59.6), "1m 00s");
        assert_eq!(span(3725.0), "1h 02m 05s");
        assert_eq!(span(-3.0), "0s");
    }
}
