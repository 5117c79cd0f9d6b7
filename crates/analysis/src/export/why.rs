//! The "why" summary printed after a traced run's table (`--trace`): per CPU, its spikes and
//! the causes of their late time, the worst spike's stack and unexplained time, and what was
//! counted. Rendered from the run alone, so `runs show` prints it as the run did. Warnings the
//! run prints itself are not repeated here.

use latlab_core::config::DisplayUnit;
use latlab_core::result::culprits;
use latlab_core::result::trace::{steal_text, CpuCounts, TraceReport};
use latlab_core::result::Run;

/// The summary of `run`'s trace (nothing for a run that was not traced): titled for its kind
/// (a kind whose runs are `always_traced`, `latlab sched`, does not call it `--trace`'s), the
/// trace's warnings left out where the run's own warnings already say them.
pub fn why_for(run: &Run, unit: DisplayUnit, always_traced: bool) -> String {
    let Some(t) = &run.trace else {
        return String::new();
    };
    let title = if always_traced {
        format!(
            "causes per CPU (delays >= {} {unit}, every CPU's share of its late time)",
            unit.fmt_ns(t.threshold_ns as f64)
        )
    } else {
        format!(
            "why (--trace, spikes >= {} {unit}; {} events read, {} lost)",
            unit.fmt_ns(t.threshold_ns as f64),
            t.events,
            t.lost_events
        )
    };
    let unsaid: Vec<&String> = t
        .warnings
        .iter()
        .filter(|w| !run.warnings.contains(w))
        .collect();
    why_titled(t, unit, &title, &unsaid)
}

fn why_titled(r: &TraceReport, unit: DisplayUnit, title: &str, warnings: &[&String]) -> String {
    let mut s = format!("{title}:\n");
    s.push_str(&per_cpu(r, unit));
    s.push_str(&worst_spikes(r, unit));
    let counted: Vec<String> = r.counted.iter().map(|c| counted_on(r, c)).collect();
    if !counted.is_empty() {
        s.push_str(&format!("  counted: {}\n", counted.join("; ")));
    }
    for w in warnings {
        s.push_str(&format!("  {w}\n"));
    }
    if r.spikes_dropped > 0 {
        s.push_str(&format!(
            "  {} spikes not kept (a full hand-over ring, or not among the worst the run keeps: \
             10 000 for --trace, 256 per CPU for timerlat)\n",
            r.spikes_dropped
        ));
    }
    if r.lost_events > 0 {
        s.push_str("  the kernel lost trace events: spikes near them may be misattributed\n");
    }
    s
}

/// A line per CPU: its spikes, their max and the three largest causes of their late time.
fn per_cpu(r: &TraceReport, unit: DisplayUnit) -> String {
    let mut s = String::new();
    // A run stored before per-CPU causes were recorded: summed now.
    let per = if r.per_cpu.is_empty() {
        culprits::summarise(&r.spikes, &r.cpus)
    } else {
        r.per_cpu.clone()
    };
    for c in &per {
        if c.spikes == 0 {
            s.push_str(&format!("  CPU {}: no spikes\n", c.cpu));
            continue;
        }
        let causes: Vec<String> = c
            .causes
            .iter()
            .take(3)
            .map(|k| format!("{:.0} % {}", 100.0 * k.share, culprits::phrase(k)))
            .collect();
        s.push_str(&format!(
            "  CPU {}: {} spikes, max {} {unit}; of late time: {}\n",
            c.cpu,
            c.spikes,
            unit.fmt_ns(c.max_ns as f64),
            causes.join(", ")
        ));
    }
    s
}

/// The worst spike's kernel stack and the worst spike's unexplained time, where the trace
/// holds them.
fn worst_spikes(r: &TraceReport, unit: DisplayUnit) -> String {
    let mut s = String::new();
    if let Some(w) = r
        .spikes
        .iter()
        .filter(|x| !x.why.stack.is_empty())
        .max_by_key(|x| x.latency_ns)
    {
        s.push_str(&format!(
            "  worst spike's kernel stack (CPU {}, {} {unit}, at the wake-up):\n",
            w.cpu,
            unit.fmt_ns(w.latency_ns as f64)
        ));
        for f in &w.why.stack {
            s.push_str(&format!("      {f}\n"));
        }
    }
    if let Some(w) = r
        .spikes
        .iter()
        .filter(|x| x.why.residual.is_some())
        .max_by_key(|x| x.latency_ns)
    {
        if let Some(res) = &w.why.residual {
            s.push_str(&format!(
                "  worst spike with unexplained time (CPU {}, {} {unit}): {}\n",
                w.cpu,
                unit.fmt_ns(w.latency_ns as f64),
                res.phrase()
            ));
        }
    }
    s
}

/// What was counted on CPU `c` beside the trace: its NMIs (those in spikes where NMIs were
/// traced), SMIs and steal.
fn counted_on(r: &TraceReport, c: &CpuCounts) -> String {
    let nmi_spikes: u32 = r
        .spikes
        .iter()
        .filter(|s| s.cpu == c.cpu)
        .filter_map(|s| s.why.nmis)
        .sum();
    let mut parts = Vec::new();
    if r.nmi_traced {
        parts.push(format!("{nmi_spikes} NMIs in spikes"));
    } else if let Some(n) = c.nmis {
        parts.push(format!("{n} NMIs in the run"));
    }
    if let Some(n) = c.smis {
        parts.push(format!("{n} SMIs"));
    }
    // Steal at /proc/stat's resolution (whole ticks), never to a fraction.
    let tick = r.steal_tick_ns.unwrap_or(10_000_000);
    match (c.steal_ticks, c.steal_ns) {
        (Some(t), _) => parts.push(format!("steal {}", steal_text(t, tick))),
        (None, Some(n)) => parts.push(format!("steal {}", steal_text(n / tick, tick))),
        _ => {}
    }
    format!("CPU {}: {}", c.cpu, parts.join(", "))
}
