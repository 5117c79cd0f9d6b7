//! `latlab timerlat`'s text: rtla timerlat top's table (per CPU, IRQ and thread latency side
//! by side) with what rtla does not say — how many samples the kernel produced against how
//! many were read, and p99.

use latlab_core::config::DisplayUnit;
use latlab_core::result::{Run, Series};
use std::fmt::Write;

fn cell(s: Option<&Series>, unit: DisplayUnit) -> String {
    let Some(s) = s.filter(|s| s.summary.count > 0) else {
        return format!("{:>9} {:>8} {:>8} {:>8} {:>8}", 0, "-", "-", "-", "-");
    };
    let m = &s.summary;
    format!(
        "{:>9} {:>8} {:>8} {:>8} {:>8}",
        m.count,
        unit.fmt_ns(m.min_ns as f64),
        unit.fmt_ns(m.mean_ns),
        unit.fmt_ns(m.percentiles.p99 as f64),
        unit.fmt_ns(m.max_ns as f64)
    )
}

/// The run's table, as `latlab timerlat` printed it.
pub(crate) fn render(run: &Run, unit: DisplayUnit) -> String {
    let u = match unit {
        DisplayUnit::Us => "us",
        DisplayUnit::Ns => "ns",
    };
    let period = run
        .series
        .first()
        .and_then(|s| s.interval_ns)
        .map_or(String::new(), |p| format!(", period {} us", p / 1000));
    let mut cpus: Vec<usize> = run.series.iter().filter_map(|s| s.cpu).collect();
    cpus.dedup();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "timerlat: the kernel's timerlat tracer{period}, {} CPUs{} (latency in {u})",
        cpus.len(),
        if run.interrupted { ", interrupted" } else { "" }
    );
    let user = run.series.iter().any(|s| s.name.starts_with("user-"));
    let head = |t: &str| format!("{t:-^45}");
    let _ = write!(out, "{:>4} {}  {}", "", head(" IRQ "), head(" Thread "));
    if user {
        let _ = write!(out, "  {}", head(" User "));
    }
    let cols = format!("{:>9} {:>8} {:>8} {:>8} {:>8}", "count", "min", "avg", "p99", "max");
    let _ = write!(out, "\n{:>4} {cols}  {cols}", "CPU");
    if user {
        let _ = write!(out, "  {cols}");
    }
    out.push('\n');
    let find = |ctx: &str, cpu: usize| run.series.iter().find(|s| s.name == format!("{ctx}-{cpu}"));
    let mut lost = 0u64;
    for &cpu in &cpus {
        let _ = write!(
            out,
            "{cpu:>4} {}  {}",
            cell(find("irq", cpu), unit),
            cell(find("thread", cpu), unit)
        );
        if user {
            let _ = write!(out, "  {}", cell(find("user", cpu), unit));
        }
        out.push('\n');
    }
    let mut produced = 0u64;
    for s in &run.series {
        lost += s.lost_samples;
        produced += s
            .extra
            .as_ref()
            .and_then(|e| e.get("produced"))
            .and_then(|p| p.as_u64())
            .unwrap_or(0);
    }
    let _ = writeln!(
        out,
        "samples: the kernel produced {produced}, latlab read {}{}",
        produced.saturating_sub(lost),
        if lost > 0 {
            format!(" ({lost} lost)")
        } else {
            " (none lost)".into()
        }
    );
    out
}
