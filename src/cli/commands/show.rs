//! `latlab runs show`: a stored run as people read it, instead of its raw JSON. A measurement
//! that can render a stored run as it printed it (`Measurement::render_stored`: `cyclic`'s
//! table) does; every other kind (the other measurements, monitor snapshots, imported runs)
//! gets one table of its series' figures.

use latlab_analysis::export::columns;
use latlab_core::config::DisplayUnit;
use latlab_core::result::{Run, Series};
use std::collections::BTreeMap;

/// The summary of `run` (stored with `tags`), latencies in `unit`.
pub fn render(run: &Run, tags: &BTreeMap<String, String>, unit: DisplayUnit) -> String {
    let mut s = String::new();
    match crate::table::TABLE
        .iter()
        .find(|e| e.kind == run.kind)
        .and_then(|e| e.show(run, unit))
    {
        Some(own) => s.push_str(&own),
        None => s.push_str(&generic(run, unit)),
    }
    s.push_str(&latlab_analysis::export::why::why_for(
        run,
        unit,
        crate::table::facts(&run.kind).always_traced,
    ));
    s.push_str(&format!(
        "started {}  host {}",
        run.started, run.environment.hostname
    ));
    if !tags.is_empty() {
        let t: Vec<String> = tags.iter().map(|(k, v)| format!("{k}={v}")).collect();
        s.push_str(&format!("  tags {}", t.join(",")));
    }
    s.push('\n');
    if !run.command_line.is_empty() {
        s.push_str(&format!("command: {}\n", run.command_line.join(" ")));
    }
    s
}

/// Header, one row per series, warnings: for every kind without a table of its own here.
fn generic(run: &Run, unit: DisplayUnit) -> String {
    let e = &run.environment;
    let mut s = format!(
        "latlab {}  {} series  {:.2} s  run {}{}\n",
        run.kind,
        run.series.len(),
        run.duration_s,
        run.id,
        if run.interrupted {
            "  (interrupted)"
        } else {
            ""
        }
    );
    s.push_str(&format!(
        "kernel {} ({})  clocksource {}  {}\n",
        e.kernel_release,
        e.preemption,
        e.clocksource,
        e.cpus_said()
    ));
    let overruns = run.series.iter().any(|x| x.overruns > 0);
    let lost = run.series.iter().any(|x| x.lost_samples > 0);
    let mut header = vec![
        "series", "unit", "cpu", "count", "min", "p50", "p90", "p99", "p99.9", "max", "mean",
        "sigma",
    ];
    if overruns {
        header.push("overruns");
    }
    if lost {
        header.push("lost");
    }
    let rows: Vec<Vec<String>> = run
        .series
        .iter()
        .map(|x| {
            let (shown, f) = formatter(x, unit);
            // A series that measured nothing has no figures.
            let g = |v: f64| {
                if x.summary.count == 0 {
                    "-".to_string()
                } else {
                    f(v)
                }
            };
            // A percentile only where the count supports it, as compare asks.
            let [p50, p90, p99, p999, _] = x
                .summary
                .percentiles
                .supported(x.summary.count)
                .map(|v| v.map_or("-".to_string(), |v| f(v as f64)));
            let mut row = vec![
                x.name.clone(),
                shown,
                x.cpu.map_or("-".into(), |c| c.to_string()),
                x.summary.count.to_string(),
                g(x.summary.min_ns as f64),
                p50,
                p90,
                p99,
                p999,
                g(x.summary.max_ns as f64),
                g(x.summary.mean_ns),
                g(x.summary.stddev_ns),
            ];
            if overruns {
                row.push(x.overruns.to_string());
            }
            if lost {
                row.push(x.lost_samples.to_string());
            }
            row
        })
        .collect();
    s.push_str(&columns::render(&header, &rows));
    for w in &run.warnings {
        s.push_str(&format!("warning: {w}\n"));
    }
    if let Some(c) = &run.check_failure {
        s.push_str(&format!("FAILED {c}\n"));
    }
    s
}

type Fmt = Box<dyn Fn(f64) -> String>;

/// The unit a series is shown in, and how its values are written: times in `unit`, anything
/// else (throughput, rates) as recorded, to four significant digits.
fn formatter(x: &Series, unit: DisplayUnit) -> (String, Fmt) {
    if x.unit == "ns" {
        (unit.to_string(), Box::new(move |v| unit.fmt_ns_fine(v)))
    } else {
        (x.unit.clone(), Box::new(significant))
    }
}

/// `v` with four significant digits, without an exponent below 1e15.
fn significant(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return format!("{v}");
    }
    let decimals = (3 - v.abs().log10().floor() as i32).max(0) as usize;
    format!("{v:.decimals$}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn other_units_keep_four_significant_digits() {
        assert_eq!(significant(17854.3), "17854");
        assert_eq!(significant(2.5), "2.500");
        assert_eq!(significant(0.012345), "0.01235");
        assert_eq!(significant(0.0), "0");
    }
}
