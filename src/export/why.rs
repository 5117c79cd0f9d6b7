//! The "why" summary printed after a traced run's table (`--trace`): per CPU, its spikes and
//! the causes of their late time, the worst spike's stack and unexplained time, and what was
//! counted. Rendered from the run's trace part alone, so `runs show` prints it as the run did.

use crate::config::DisplayUnit;
use crate::result::trace::TraceReport;
use crate::trace::culprits;

/// The "why" summary: per CPU, the spikes and what held most of their late time.
pub fn why(r: &TraceReport, unit: DisplayUnit) -> String {
    let mut s = format!(
        "why (--trace, spikes >= {} {unit}; {} events read, {} lost):\n",
        unit.fmt_ns(r.threshold_ns as f64),
        r.events,
        r.lost_events
    );
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
    let hidden: Vec<String> = r
        .counted
        .iter()
        .map(|c| {
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
            if let Some(n) = c.steal_ns {
                parts.push(format!("steal {} {unit}", unit.fmt_ns(n as f64)));
            }
            format!("CPU {}: {}", c.cpu, parts.join(", "))
        })
        .collect();
    if !hidden.is_empty() {
        s.push_str(&format!("  counted: {}\n", hidden.join("; ")));
    }
    for w in &r.warnings {
        s.push_str(&format!("  {w}\n"));
    }
    if r.spikes_dropped > 0 {
        s.push_str(&format!(
            "  {} spikes not attributed (too many to keep)\n",
            r.spikes_dropped
        ));
    }
    if r.lost_events > 0 {
        s.push_str("  the kernel lost trace events: spikes near them may be misattributed\n");
    }
    s
}
