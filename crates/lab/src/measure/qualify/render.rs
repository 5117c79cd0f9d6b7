//! The text a qualification prints at the end (and `latlab runs show` of its final result):
//! the whole qualification per CPU, its segments and gaps, and the verdict per requirement.

use latlab_core::result::qualification::State;
use latlab_core::result::Run;

/// Seconds as `1h 02m 05s` (the HTML report's words).
pub use latlab_analysis::report::qualify::span;

/// The final result as text; `written` names the files written beside it.
pub(crate) fn text(run: &Run, written: &[String]) -> String {
    let Some(q) = run.qualification.as_deref() else {
        return String::new();
    };
    let state = match q.state {
        State::Finished => "finished",
        State::Interrupted => "INTERRUPTED",
        State::InProgress => "in progress",
    };
    let mut out = format!(
        "latlab qualify {}  {state}: {} of {} measured in {} segment(s), {} checkpoint intervals; final result run {}\n",
        q.id,
        span(q.measured_s),
        span(q.planned_s),
        q.segment,
        q.intervals.len(),
        run.id
    );
    out.push_str("latencies in us over the whole qualification\n");
    let us = |ns: u64| format!("{:.1}", ns as f64 / 1e3);
    let rows: Vec<Vec<String>> = run
        .series
        .iter()
        .map(|s| {
            let [_, _, p99, p999, p9999] = s
                .summary
                .percentiles
                .supported(s.summary.count)
                .map(|v| v.map_or("-".to_string(), us));
            vec![
                s.cpu.map_or("-".into(), |c| c.to_string()),
                s.summary.count.to_string(),
                us(s.summary.min_ns),
                format!("{:.1}", s.summary.mean_ns / 1e3),
                p99,
                p999,
                p9999,
                us(s.summary.max_ns),
                s.overruns.to_string(),
            ]
        })
        .collect();
    out.push_str(&latlab_analysis::export::columns::render(
        &["cpu", "count", "min", "avg", "p99", "p99.9", "p99.99", "max", "overruns"],
        &rows,
    ));
    for g in &q.gaps {
        out.push_str(&format!(
            "gap after segment {}: {} not measured ({} to {}){}\n",
            g.after_segment,
            span(g.seconds),
            g.from,
            g.to,
            if g.reboot { ", the machine rebooted" } else { "" }
        ));
    }
    for c in &q.changed {
        out.push_str(&format!("changed: {c}\n"));
    }
    for w in &run.warnings {
        out.push_str(&format!("warning: {w}\n"));
    }
    if q.verdicts.is_empty() {
        out.push_str("no requirement given (--require 'p99.99<100us'): no verdict\n");
    }
    for v in &q.verdicts {
        out.push_str(&format!(
            "verdict {}: {} ({})\n",
            v.requirement,
            v.verdict.to_uppercase(),
            v.because
        ));
        if let Some(t) = &v.to_decide {
            out.push_str(&format!("  to decide: {t}\n"));
        }
    }
    for w in written {
        out.push_str(&format!("wrote {w}\n"));
    }
    if q.state != State::Finished {
        out.push_str(&format!(
            "interrupted before its planned length: `latlab qualify --resume {}` measures the rest\n",
            q.id
        ));
    }
    out
}
