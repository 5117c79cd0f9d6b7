//! The spike section of a traced run's page: per CPU, the share of late time by cause kind as
//! a stacked bar, and the worst spikes with their components, culprit group, exec chain and
//! kernel stack.

use super::svg::esc;
use crate::result::Run;
use crate::trace::culprits::{summarise, CpuCauses};
use crate::trace::spikes::SpikeRecord;
use std::fmt::Write;

/// Cause kinds in bar order, with their colours.
const KINDS: &[(&str, &str)] = &[
    ("thread", "#d62728"),
    ("irq", "#1f77b4"),
    ("softirq", "#17becf"),
    ("timer", "#ff7f0e"),
    ("idle", "#7f7f7f"),
    ("unattributed", "#bcbd22"),
    ("self", "#2ca02c"),
    ("unknown", "#c7c7c7"),
];
/// Worst spikes listed.
const WORST: usize = 10;
/// Stack frames shown per spike.
const FRAMES: usize = 12;

fn bars(per: &[CpuCauses]) -> String {
    let (w, h, left) = (640.0, 22.0, 60.0);
    let rows: Vec<&CpuCauses> = per.iter().filter(|c| c.spikes > 0).collect();
    let height = 30.0 + h * 1.5 * rows.len() as f64;
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" data-kind=\"spike-causes\" width=\"{}\" height=\"{height}\" font-family=\"sans-serif\" font-size=\"12\">",
        left + w + 10.0
    );
    for (i, c) in rows.iter().enumerate() {
        let y = 4.0 + h * 1.5 * i as f64;
        let _ = write!(
            s,
            "<text x=\"0\" y=\"{}\">CPU {}</text>",
            y + h * 0.7,
            c.cpu
        );
        let mut x = left;
        for (kind, colour) in KINDS {
            let share: f64 = c
                .causes
                .iter()
                .filter(|k| k.kind == *kind)
                .map(|k| k.share)
                .sum();
            if share <= 0.0 {
                continue;
            }
            let bw = w * share.min(1.0);
            let _ = write!(
                s,
                "<rect x=\"{x:.1}\" y=\"{y}\" width=\"{bw:.1}\" height=\"{h}\" fill=\"{colour}\"><title>{kind} {:.0} %</title></rect>",
                share * 100.0
            );
            x += bw;
        }
    }
    let ly = height - 8.0;
    let mut x = left;
    for (kind, colour) in KINDS {
        let _ = write!(
            s,
            "<rect x=\"{x}\" y=\"{}\" width=\"10\" height=\"10\" fill=\"{colour}\"/><text x=\"{}\" y=\"{ly}\">{kind}</text>",
            ly - 9.0,
            x + 13.0
        );
        x += 80.0;
    }
    s.push_str("</svg>");
    s
}

fn worst_row(sp: &SpikeRecord) -> String {
    let comps: Vec<String> = sp
        .why
        .components
        .iter()
        .take(3)
        .map(|c| format!("{:.0} % {} {}", c.share * 100.0, c.kind, c.name))
        .collect();
    let culprit = sp.why.components.iter().find(|c| c.kind == "thread");
    let group = culprit
        .map(|c| {
            let pol = c
                .task
                .as_ref()
                .map(|t| crate::trace::attribute::policy_label(t.prio))
                .unwrap_or_default();
            format!("{} ({pol})", c.group.clone().unwrap_or_default())
        })
        .unwrap_or_default();
    let chain = culprit.map(|c| c.chain.join(" ← ")).unwrap_or_default();
    let stack = if sp.why.stack.is_empty() {
        String::new()
    } else {
        let f: Vec<String> = sp.why.stack.iter().take(FRAMES).map(|f| esc(f)).collect();
        format!(
            "<details><summary>{} frames</summary><pre>{}</pre></details>",
            sp.why.stack.len(),
            f.join("\n")
        )
    };
    format!(
        "<tr><td>{}</td><td>{}</td><td>{:.1}</td><td>{}</td><td>{}</td><td>{}</td><td>{stack}</td></tr>",
        sp.cpu,
        esc(&sp.series),
        sp.latency_ns as f64 / 1e3,
        esc(&comps.join("; ")),
        esc(&group),
        esc(&chain),
    )
}

/// The section, or nothing for a run that was not traced.
pub fn section(r: &Run) -> String {
    let Some(t) = &r.trace else {
        return String::new();
    };
    let per = if t.per_cpu.is_empty() {
        summarise(&t.spikes, &t.cpus)
    } else {
        t.per_cpu.clone()
    };
    let mut s = format!(
        "<section class=\"spikes\" id=\"spikes-{}\"><h3>Spikes (--trace, at or above {:.1} µs)</h3>",
        esc(&r.id),
        t.threshold_ns as f64 / 1e3
    );
    if t.spikes.is_empty() {
        s.push_str("<p>No spike reached the threshold.</p></section>");
        return s;
    }
    s.push_str("<p>Share of each CPU's late time by cause.</p>");
    s.push_str(&bars(&per));
    let mut worst: Vec<&SpikeRecord> = t.spikes.iter().collect();
    worst.sort_by_key(|s| std::cmp::Reverse(s.latency_ns));
    let _ = write!(
        s,
        "<h4>Worst {} of {} spikes</h4><table class=\"worst-spikes\"><tr><th>CPU</th><th>series</th><th>µs</th><th>components</th><th>culprit group</th><th>exec chain</th><th>kernel stack</th></tr>",
        worst.len().min(WORST),
        t.spikes.len() as u64 + t.spikes_not_kept
    );
    for sp in worst.into_iter().take(WORST) {
        s.push_str(&worst_row(sp));
    }
    s.push_str("</table></section>");
    s
}
