//! The spike section of a traced run's page: per CPU, the share of late time by cause kind as
//! a stacked bar, and the worst spikes with their components, culprit group, exec chain and
//! kernel stack; and for an experiment, the cause shares of each level side by side.

use super::svg::esc;
use super::{Group, Loaded};
use latlab_core::result::culprits::summarise;
use latlab_core::result::trace::SpikeRecord;
use latlab_core::result::trace::{Cause, CpuCauses};
use latlab_core::result::Run;
use std::fmt::Write;

/// Cause kinds in bar order, with their colours.
const KINDS: &[(&str, &str)] = &[
    ("thread", "#d62728"),
    ("irq", "#1f77b4"),
    ("softirq", "#17becf"),
    ("timer", "#ff7f0e"),
    ("host", "#9467bd"),
    ("idle", "#7f7f7f"),
    ("unattributed", "#bcbd22"),
    ("self", "#2ca02c"),
    ("unknown", "#c7c7c7"),
];
/// A cause kind as the legend and tables name it: the kind, or for a late timer what it
/// means (`interrupts off or host`, `host (steal)`: the words of the text and the metrics).
fn legend(kind: &str) -> &str {
    match kind {
        "timer" | "host" => latlab_core::result::trace::cause_name(kind),
        k => k,
    }
}

/// Worst spikes listed.
const WORST: usize = 10;
/// Stack frames shown per spike.
const FRAMES: usize = 12;

/// Share of late time by cause kind, from `causes`.
fn shares(causes: &[Cause]) -> Vec<(&'static str, f64)> {
    KINDS
        .iter()
        .map(|(kind, _)| {
            let share = causes
                .iter()
                .filter(|k| k.kind == *kind)
                .map(|k| k.share)
                .sum();
            (*kind, share)
        })
        .collect()
}

/// Horizontal stacked bars, one per row (a CPU, a level): each kind's share of the row's late
/// time, with a legend. `data_kind` names the chart for tests and readers.
fn stacked(data_kind: &str, rows: &[(String, Vec<(&str, f64)>)]) -> String {
    let (w, h) = (640.0, 22.0);
    let longest = rows.iter().map(|r| r.0.chars().count()).max().unwrap_or(0);
    let left = (longest.min(28) as f64 * 7.0 + 10.0).max(60.0);
    // The legend wraps onto as many lines as the chart's width needs.
    let mut places = Vec::new();
    let (mut lx, mut line) = (left, 0usize);
    for (kind, colour) in KINDS {
        let wide = 30.0 + 7.0 * legend(kind).len() as f64;
        if lx + wide > left + w && lx > left {
            (lx, line) = (left, line + 1);
        }
        places.push((lx, line, *kind, *colour));
        lx += wide;
    }
    let bars_h = 8.0 + h * 1.5 * rows.len() as f64;
    let height = bars_h + 18.0 * (line + 1) as f64 + 4.0;
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" data-kind=\"{}\" width=\"{}\" height=\"{height}\" font-family=\"sans-serif\" font-size=\"12\">",
        esc(data_kind),
        left + w + 10.0
    );
    for (i, (label, shares)) in rows.iter().enumerate() {
        let y = 4.0 + h * 1.5 * i as f64;
        let short: String = label.chars().take(28).collect();
        let _ = write!(
            s,
            "<text x=\"0\" y=\"{}\">{}<title>{}</title></text>",
            y + h * 0.7,
            esc(&short),
            esc(label)
        );
        let mut x = left;
        for (kind, colour) in KINDS {
            let share: f64 = shares.iter().filter(|k| k.0 == *kind).map(|k| k.1).sum();
            if share <= 0.0 {
                continue;
            }
            let bw = w * share.min(1.0);
            let _ = write!(
                s,
                "<rect x=\"{x:.1}\" y=\"{y}\" width=\"{bw:.1}\" height=\"{h}\" fill=\"{colour}\"><title>{} {} {:.0} %</title></rect>",
                esc(label),
                legend(kind),
                share * 100.0
            );
            x += bw;
        }
    }
    for (x, line, kind, colour) in places {
        let ly = bars_h + 18.0 * line as f64 + 14.0;
        let _ = write!(
            s,
            "<rect x=\"{x}\" y=\"{}\" width=\"10\" height=\"10\" fill=\"{colour}\"/><text x=\"{}\" y=\"{ly}\">{}</text>",
            ly - 9.0,
            x + 13.0,
            legend(kind)
        );
    }
    s.push_str("</svg>");
    s
}

fn bars(per: &[CpuCauses]) -> String {
    let rows: Vec<(String, Vec<(&str, f64)>)> = per
        .iter()
        .filter(|c| c.spikes > 0)
        .map(|c| (format!("CPU {}", c.cpu), shares(&c.causes)))
        .collect();
    stacked("spike-causes", &rows)
}

/// The causes of one traced run, per CPU (its stored summary, or summed from its spikes).
fn per_cpu(t: &latlab_core::result::trace::TraceReport) -> Vec<CpuCauses> {
    if t.per_cpu.is_empty() {
        summarise(&t.spikes, &t.cpus)
    } else {
        t.per_cpu.clone()
    }
}

/// One level's (group's) traced runs summed for [`levels`].
struct Level {
    label: String,
    /// Its traced runs.
    runs: usize,
    spikes: u64,
    late_ns: u64,
    /// Late time per cause kind, in [`KINDS`]' order.
    by_kind: Vec<(&'static str, u64)>,
    /// Its largest culprit group: name, late time and scheduling policy.
    culprit: Option<(String, u64, Option<String>)>,
}

impl Level {
    /// The sums of group `g`'s traced runs (every CPU).
    fn of(g: &Group, loaded: &[Loaded]) -> Level {
        let traced: Vec<&latlab_core::result::trace::TraceReport> = g
            .runs
            .iter()
            .filter_map(|&i| loaded.get(i).and_then(|l| l.run.trace.as_ref()))
            .collect();
        let per: Vec<CpuCauses> = traced.iter().flat_map(|t| per_cpu(t)).collect();
        let by_kind = KINDS
            .iter()
            .map(|(k, _)| {
                let ns = per
                    .iter()
                    .flat_map(|c| &c.causes)
                    .filter(|c| c.kind == *k)
                    .map(|c| c.ns)
                    .sum();
                (*k, ns)
            })
            .collect();
        Level {
            label: g.label.clone(),
            runs: traced.len(),
            spikes: per.iter().map(|c| c.spikes).sum(),
            late_ns: per.iter().map(|c| c.late_ns).sum(),
            by_kind,
            culprit: largest_culprit(&per),
        }
    }

    /// Its row of the level table.
    fn row(&self) -> String {
        let mut s = format!(
            "<tr><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{:.2}</td>",
            esc(&self.label),
            self.runs,
            self.spikes,
            self.late_ns as f64 / 1e6
        );
        for (_, ns) in &self.by_kind {
            if self.late_ns == 0 {
                s.push_str("<td>-</td>");
            } else {
                let _ = write!(
                    s,
                    "<td>{:.0}</td>",
                    100.0 * *ns as f64 / self.late_ns as f64
                );
            }
        }
        let culprit = self.culprit.as_ref().map_or("-".to_string(), |(g, ns, p)| {
            format!(
                "{g}{} ({:.0} % of late time)",
                p.as_deref().map(|p| format!(" {p}")).unwrap_or_default(),
                100.0 * *ns as f64 / self.late_ns.max(1) as f64
            )
        });
        let _ = write!(s, "<td class=\"l\">{}</td></tr>", esc(&culprit));
        s
    }
}

/// The thread group holding the most late time in `per` (on a tie, the first by name), with
/// that time and the first scheduling policy seen of it.
fn largest_culprit(per: &[CpuCauses]) -> Option<(String, u64, Option<String>)> {
    let mut groups_ns: std::collections::BTreeMap<String, (u64, Option<String>)> =
        Default::default();
    for c in per
        .iter()
        .flat_map(|c| &c.causes)
        .filter(|c| c.kind == "thread")
    {
        let e = groups_ns.entry(c.name.clone()).or_default();
        e.0 += c.ns;
        if e.1.is_none() {
            e.1.clone_from(&c.policy);
        }
    }
    groups_ns
        .into_iter()
        .max_by(|a, b| a.1 .0.cmp(&b.1 .0).then_with(|| b.0.cmp(&a.0)))
        .map(|(name, (ns, policy))| (name, ns, policy))
}

/// An experiment's (or several groups') cause shares side by side: per level, the share of
/// late time by cause kind over its traced runs (every CPU), as stacked bars and a table with
/// the level's largest culprit group. Nothing when no run was traced.
pub(crate) fn levels(loaded: &[Loaded], groups: &[Group]) -> String {
    let rows: Vec<Level> = groups.iter().map(|g| Level::of(g, loaded)).collect();
    if rows.iter().all(|r| r.runs == 0) {
        return String::new();
    }
    let mut s = String::from(
        "<section class=\"cause-shares\" id=\"cause-shares\"><h3>Causes of late time by level (--trace)</h3>\
         <p class=\"meta\">Per level, the share of its traced runs' late time (spikes at or above each run's --trace-threshold, every CPU) held by each kind of cause.</p>",
    );
    let bars_rows: Vec<(String, Vec<(&str, f64)>)> = rows
        .iter()
        .filter(|r| r.late_ns > 0)
        .map(|r| {
            let sh = r
                .by_kind
                .iter()
                .map(|(k, ns)| (*k, *ns as f64 / r.late_ns as f64))
                .collect();
            (r.label.clone(), sh)
        })
        .collect();
    s.push_str(&stacked("level-causes", &bars_rows));
    s.push_str("<table class=\"level-causes\"><tr><th class=\"l\">level</th><th>traced runs</th><th>spikes</th><th>late ms</th>");
    for (k, _) in KINDS {
        let _ = write!(s, "<th>{} %</th>", legend(k));
    }
    s.push_str("<th class=\"l\">largest culprit group</th></tr>");
    for r in &rows {
        s.push_str(&r.row());
    }
    s.push_str("</table></section>");
    s
}

fn worst_row(sp: &SpikeRecord) -> String {
    let comps: Vec<String> = sp
        .why
        .components
        .iter()
        .take(3)
        .map(|c| {
            format!(
                "{:.0} % {}",
                c.share * 100.0,
                latlab_core::result::culprits::component_phrase(&c.kind, &c.name)
            )
        })
        .collect();
    let culprit = sp.why.components.iter().find(|c| c.kind == "thread");
    let group = culprit
        .map(|c| {
            let pol = c
                .task
                .as_ref()
                .map(|t| latlab_core::result::trace::policy_label(t.prio))
                .unwrap_or_default();
            format!("{} ({pol})", c.group.clone().unwrap_or_default())
        })
        .unwrap_or_default();
    let chain = culprit.map(|c| c.chain.join(" ← ")).unwrap_or_default();
    let residual = sp.why.residual.as_ref().map_or(String::new(), |r| {
        format!("<br><small class=\"residual\">{}</small>", esc(&r.phrase()))
    });
    // latlab timerlat: the kernel's own split of the sample.
    let residual = match &sp.why.kernel_split {
        Some(k) => format!(
            "{residual}<br><small class=\"split\">{}</small>",
            esc(&k.phrase())
        ),
        None => residual,
    };
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
        "<tr><td>{}</td><td>{}</td><td>{:.1}</td><td>{}{residual}</td><td>{}</td><td>{}</td><td>{stack}</td></tr>",
        sp.cpu,
        esc(&sp.series),
        sp.latency_ns as f64 / 1e3,
        esc(&comps.join("; ")),
        esc(&group),
        esc(&chain),
    )
}

/// The section, or nothing for a run that was not traced.
pub(crate) fn section(r: &Run) -> String {
    let Some(t) = &r.trace else {
        return String::new();
    };
    let per = per_cpu(t);
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

#[cfg(test)]
mod tests {
    use super::*;
    use latlab_core::result::trace::Cause;
    use latlab_core::result::trace::TraceReport;

    fn loaded(name: &str, causes: Option<Vec<(&str, &str, u64)>>) -> Loaded {
        let env: latlab_core::result::Environment = serde_json::from_value(serde_json::json!({
            "hostname": "h", "kernel_release": "6.1", "kernel_version": "v", "kernel_cmdline": "",
            "preemption": "full", "clocksource": "tsc", "available_clocksources": [],
            "cpu_model": "m", "cpus_online": 2, "online_cpus": "0-1", "isolated_cpus": "",
            "nohz_full_cpus": "", "sched_rt_runtime_us": 950000, "sched_rt_period_us": 1000000,
            "governor": null, "tool_version": "0"
        }))
        .unwrap();
        let mut run = Run::new(
            "cyclic",
            std::time::SystemTime::now(),
            vec![],
            serde_json::Value::Null,
            env,
        );
        run.trace = causes.map(|cs| {
            let late: u64 = cs.iter().map(|c| c.2).sum();
            TraceReport {
                cpus: vec![1],
                per_cpu: vec![CpuCauses {
                    cpu: 1,
                    spikes: 4,
                    late_ns: late,
                    max_ns: late,
                    causes: cs
                        .into_iter()
                        .map(|(kind, name, ns)| Cause {
                            kind: kind.into(),
                            name: name.into(),
                            chain: vec![],
                            policy: (kind == "thread").then(|| "RT 99".to_string()),
                            ns,
                            share: ns as f64 / late as f64,
                            members: vec![],
                        })
                        .collect(),
                }],
                ..TraceReport::default()
            }
        });
        Loaded {
            run,
            name: name.into(),
            tags: Default::default(),
            facts: Default::default(),
        }
    }

    #[test]
    fn a_timerlat_spike_row_shows_the_kernels_split() {
        let sp = SpikeRecord {
            series: "thread-5".into(),
            cpu: 5,
            seq: 9,
            expected_ns: 0,
            latency_ns: 31_000,
            why: latlab_core::result::trace::Attribution {
                kernel_split: Some(latlab_core::result::trace::KernelSplit {
                    irq_latency_ns: Some(5_000),
                    thread_latency_ns: 31_000,
                    thread_delay_ns: Some(26_000),
                    blocking: Some("fifohog:4242 RT 95".into()),
                    ..Default::default()
                }),
                ..Default::default()
            },
        };
        let row = worst_row(&sp);
        assert!(
            row.contains("kernel: IRQ latency 5.0 us, thread delay 26.0 us after it; blocking thread fifohog:4242 RT 95"),
            "{row}"
        );
    }

    #[test]
    fn levels_show_each_levels_cause_shares_and_largest_culprit() {
        let runs = vec![
            loaded(
                "r1",
                Some(vec![
                    ("thread", "sh", 900_000),
                    ("irq", "local_timer", 100_000),
                ]),
            ),
            loaded("r2", Some(vec![("thread", "sh", 1_000_000)])),
            loaded("r3", Some(vec![("softirq", "NET_RX", 3_000_000)])),
            loaded("r4", None),
        ];
        let groups = vec![
            Group {
                label: "load=hog".into(),
                runs: vec![0, 1],
            },
            Group {
                label: "load=net".into(),
                runs: vec![2],
            },
            Group {
                label: "load=none".into(),
                runs: vec![3],
            },
        ];
        let s = levels(&runs, &groups);
        assert!(s.contains(r#"data-kind="level-causes""#), "{s}");
        assert!(s.contains("load=hog thread 95 %"), "{s}");
        assert!(s.contains("load=net softirq 100 %"), "{s}");
        assert!(
            s.contains("<td class=\"l\">load=hog</td><td>2</td><td>8</td><td>2.00</td><td>95</td><td>5</td>"),
            "{s}"
        );
        assert!(s.contains("sh RT 99 (95 % of late time)"), "{s}");
        // Not a thread: no culprit group for the network level.
        assert!(
            !s.contains("NET_RX") && s.contains("<td class=\"l\">-</td>"),
            "{s}"
        );
        assert!(
            s.contains("<td class=\"l\">load=none</td><td>0</td>"),
            "{s}"
        );
        // Nothing traced: no section.
        assert_eq!(
            levels(
                &runs[3..],
                &[Group {
                    label: "x".into(),
                    runs: vec![0]
                }]
            ),
            ""
        );
    }
}
