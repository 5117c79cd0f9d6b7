//! The fleet page: which members changed in their last day, the members ranked by their worst
//! window, and each member's max and p99 per snapshot over time. The same self-contained HTML
//! (inline SVG and CSS, no script) and chart pieces as the run report.

use super::{Fleet, Member, Outcome, ALPHA, MIN_SNAPSHOTS};
use crate::compare::analysis::Verdict;
use crate::compare::verdict::{change_text, sig};
use crate::report::markup::{figure, row, CSS};
use crate::report::svg::{esc, line_chart, Axis, Line};
use std::fmt::Write;
use std::time::{Duration, SystemTime};

/// Host names stay on one line in the tables.
const FLEET_CSS: &str =
    "table.ranking td:nth-child(2),table.changes td:first-child{white-space:nowrap}";

/// Members drawn together in the overview chart (the palette's distinct styles).
pub(crate) const OVERVIEW_LINES: usize = 8;
/// Members given a chart of their own, the highest ranked first (the rest are in the tables).
pub(crate) const MAX_MEMBER_CHARTS: usize = 20;

fn when(t: SystemTime) -> String {
    humantime::format_rfc3339_seconds(t).to_string()
}

fn span(a: SystemTime, b: SystemTime) -> String {
    let d = b.duration_since(a).unwrap_or_default();
    let d = if d >= Duration::from_secs(3600) {
        Duration::from_secs(d.as_secs() / 60 * 60)
    } else {
        Duration::from_secs(d.as_secs())
    };
    humantime::format_duration(d).to_string()
}

/// The time axis shared by every chart: time before the newest snapshot of the fleet, in the
/// unit that suits the span (seconds per unit, the axis label).
fn time_unit(oldest: SystemTime, newest: SystemTime) -> (f64, String) {
    let s = newest
        .duration_since(oldest)
        .unwrap_or_default()
        .as_secs_f64();
    let (div, name) = if s >= 2.0 * 86_400.0 {
        (86_400.0, "days")
    } else if s >= 2.0 * 3600.0 {
        (3600.0, "hours")
    } else if s >= 120.0 {
        (60.0, "minutes")
    } else {
        (1.0, "seconds")
    };
    (
        div,
        format!("{name} before {} (the newest snapshot)", when(newest)),
    )
}

fn x_of(t: SystemTime, newest: SystemTime, div: f64) -> f64 {
    match newest.duration_since(t) {
        Ok(d) => -d.as_secs_f64() / div,
        Err(e) => e.duration().as_secs_f64() / div,
    }
}

/// A member's points (time, value), the line broken where the monitor was silent for more
/// than three typical snapshot intervals.
fn points(
    m: &Member,
    newest: SystemTime,
    div: f64,
    v: impl Fn(&super::Snapshot) -> f64,
) -> Vec<(f64, f64)> {
    let mut gaps: Vec<f64> = m
        .snaps
        .windows(2)
        .map(|w| x_of(w[1].at, newest, div) - x_of(w[0].at, newest, div))
        .collect();
    gaps.sort_by(f64::total_cmp);
    let typical = gaps.get(gaps.len() / 2).copied().unwrap_or(f64::INFINITY);
    let mut out = Vec::with_capacity(m.snaps.len());
    let mut last: Option<f64> = None;
    for s in &m.snaps {
        let x = x_of(s.at, newest, div);
        if last.is_some_and(|l| x - l > 3.0 * typical) {
            out.push((x, f64::NAN));
        }
        out.push((x, v(s)));
        last = Some(x);
    }
    out
}

fn ranking(f: &Fleet) -> String {
    let mut s = String::from(
        "<section id=\"ranking\"><h2>Hosts ranked by their worst window</h2>\
         <table class=\"ranking\">",
    );
    s.push_str(&row(
        &[
            "rank",
            "host",
            "monitor",
            "kernel",
            "snapshots",
            "first",
            "last",
            "span",
            "worst max (µs)",
            "worst window (run)",
            "median p99 (µs)",
            "last day vs week",
        ]
        .map(String::from),
        true,
    ));
    for (i, m) in f.members.iter().enumerate() {
        let (first, last) = (m.snaps[0].at, m.snaps[m.snaps.len() - 1].at);
        let worst = m.worst();
        s.push_str(&row(
            &[
                (i + 1).to_string(),
                m.label.clone(),
                m.monitor.clone(),
                m.kernel.clone(),
                m.snaps.len().to_string(),
                when(first),
                when(last),
                span(first, last),
                worst.map_or("-".into(), |w| sig(w.max_us)),
                worst.map_or("-".into(), |w| format!("{} ({})", when(w.at), w.id)),
                sig(m.median_p99()),
                m.decision.outcome.text().into(),
            ],
            false,
        ));
    }
    s.push_str(
        "</table><p class=\"meta\">A window is one snapshot (the monitor's --snapshot-every); \
         its max is the exact largest wake-up latency over every measured CPU, its p99 that of \
         all its samples. Ties are ranked by median p99. <code>latlab runs show ID</code> prints \
         a window's run.</p></section>",
    );
    s
}

/// How the page names a cause kind: as the run's `why` text and the monitor's metric help do.
fn cause_label(kind: &str) -> String {
    match kind {
        "timer" => format!("timer ({})", latlab_core::result::trace::IRQS_OFF_OR_HOST),
        "host" => latlab_core::result::trace::HOST_STEAL.to_string(),
        k => k.to_string(),
    }
}

/// Per member, what made it late over the snapshots read: cause shares and culprit groups.
fn causes(f: &Fleet) -> String {
    let mut s = String::from(
        "<section id=\"causes\"><h2>What made each host late</h2><table class=\"causes\">",
    );
    s.push_str(&row(
        &[
            "host",
            "traced snapshots",
            "late time by cause",
            "top culprit groups",
        ]
        .map(String::from),
        true,
    ));
    let pct = |v: &[(String, f64)], name: &dyn Fn(&str) -> String| -> String {
        let parts: Vec<String> = v
            .iter()
            .map(|(k, x)| format!("{} {:.0} %", name(k), 100.0 * x))
            .collect();
        if parts.is_empty() {
            "-".into()
        } else {
            parts.join("; ")
        }
    };
    for m in &f.members {
        let c = &m.causes;
        let (by, groups) = if c.traced == 0 {
            ("not traced (monitor --trace)".to_string(), "-".to_string())
        } else {
            (
                pct(&c.shares(), &cause_label),
                pct(&c.top_groups(super::causes::TOP_GROUPS), &|k| k.to_string()),
            )
        };
        s.push_str(&row(
            &[
                m.label.clone(),
                format!("{} of {}", c.traced, m.snaps.len()),
                by,
                groups,
            ],
            false,
        ));
    }
    s.push_str(
        "</table><p class=\"meta\">From the snapshots of monitors run with <code>--trace</code>, \
         every snapshot read (--since) summed: the late time of wake-ups at or above the \
         monitor's --trace-threshold by the kind of context that held the CPU (the counters of \
         <code>latlab_late_seconds</code>), and the culprit groups' share of the late time of \
         the spikes each snapshot kept.</p></section>",
    );
    s
}

fn changes(f: &Fleet) -> String {
    let mut s = String::from("<section id=\"changes\"><h2>Last day against the previous week</h2>");
    let differ: Vec<String> = f
        .members
        .iter()
        .filter(|m| m.decision.outcome.differs())
        .map(|m| format!("{} ({})", m.label, m.decision.outcome.text()))
        .collect();
    let undecided = f
        .members
        .iter()
        .filter(|m| m.decision.outcome == Outcome::CannotDecide)
        .count();
    let compared = f.members.len() - undecided;
    let summary = if !differ.is_empty() {
        format!(
            "{} of {compared} host(s) compared differ in their last day from their previous week: {}.",
            differ.len(),
            differ.join(", ")
        )
    } else if compared > 0 {
        format!("No difference proven: none of the {compared} host(s) compared differs in its last day from its previous week.")
    } else {
        "Cannot decide for any host: none has enough snapshots on both sides.".to_string()
    };
    let _ = write!(
        s,
        "<p class=\"verdict\">{}{}</p>",
        esc(&summary),
        if undecided > 0 && compared > 0 {
            esc(&format!(" Cannot decide for {undecided} host(s)."))
        } else {
            String::new()
        }
    );
    s.push_str("<table class=\"changes\">");
    s.push_str(&row(
        &[
            "host",
            "snapshots (last day / week)",
            "verdict",
            "p99 (µs, week → day)",
            "max (µs, week → day)",
            "what changed (day against week, with its interval)",
        ]
        .map(String::from),
        true,
    ));
    for m in &f.members {
        let d = &m.decision;
        let metric = |name: &str| {
            d.metrics
                .iter()
                .find(|x| x.metric == name)
                .map_or("-".to_string(), |x| {
                    format!("{} → {}", sig(x.base), sig(x.value))
                })
        };
        let changed: Vec<String> = d
            .metrics
            .iter()
            .filter(|x| matches!(x.verdict, Verdict::Worse | Verdict::Better))
            .map(|x| format!("{} {}: {}", x.metric, x.verdict.text(), change_text(x)))
            .collect();
        let what = if changed.is_empty() {
            d.notes.join("; ")
        } else {
            changed.join("; ")
        };
        s.push_str(&row(
            &[
                m.label.clone(),
                format!("{} / {}", d.day, d.week),
                d.outcome.text().into(),
                metric("p99"),
                metric("max"),
                what,
            ],
            false,
        ));
    }
    let _ = write!(
        s,
        "</table><p class=\"meta\">Per host, its snapshots of the last 24 h of its data (counted \
         back from its newest snapshot) against those of the 7 days before. The snapshot is the \
         unit of replication: each snapshot's p50, p99, p99.9, max and mean, compared across \
         snapshots with Welch's t (the week is the baseline; the columns show the means of the \
         per-snapshot figures), Holm over the five metrics of a host, and each host at {:.4} \
         confidence (Bonferroni over the {} host(s) with {MIN_SNAPSHOTS} or more snapshots on \
         each side), so an unchanged fleet has at most a {:.0} % chance of any host called \
         different. Fewer than {MIN_SNAPSHOTS} snapshots on a side: cannot decide. A quantile is \
         compared only from snapshots holding enough samples (p99: 1000, p99.9: 10 000). \
         Snapshots of one day are not independent of each other's load pattern: read a \
         difference as \"this day was unlike the week\", not as its cause.</p></section>",
        f.confidence,
        f.compared,
        ALPHA * 100.0
    );
    s
}

fn over_time(f: &Fleet) -> String {
    let mut s = String::from("<section id=\"over-time\"><h2>Latency over time</h2>");
    let all = f.members.iter().flat_map(|m| m.snaps.iter());
    let (oldest, newest) = all.fold((None::<SystemTime>, None::<SystemTime>), |(a, b), x| {
        (
            Some(a.map_or(x.at, |a| a.min(x.at))),
            Some(b.map_or(x.at, |b| b.max(x.at))),
        )
    });
    let (Some(oldest), Some(newest)) = (oldest, newest) else {
        s.push_str("</section>");
        return s;
    };
    let (div, xlabel) = time_unit(oldest, newest);
    let xs = [x_of(oldest, newest, div), 0.0];
    // One y axis for every chart, so hosts compare at a glance.
    let y = Axis::fit(
        f.members
            .iter()
            .flat_map(|m| m.snaps.iter().flat_map(|s| [s.max_us, s.p99_us])),
        true,
        "latency (µs)",
    );
    let x = Axis::fit(xs, false, &xlabel);
    let shown = f.members.len().min(OVERVIEW_LINES);
    let lines: Vec<Line> = f.members[..shown]
        .iter()
        .map(|m| Line::new(m.label.clone(), points(m, newest, div, |s| s.max_us)))
        .collect();
    let title = if shown < f.members.len() {
        format!(
            "Max per snapshot, the {shown} highest-ranked of {} hosts",
            f.members.len()
        )
    } else {
        "Max per snapshot, every host".to_string()
    };
    s.push_str(&figure(
        &line_chart(&title, x.clone(), y.clone(), &lines),
        Some("each point is one snapshot's largest wake-up latency; a line breaks where its monitor stored nothing for three snapshot intervals"),
    ));
    for m in f.members.iter().take(MAX_MEMBER_CHARTS) {
        let lines = vec![
            Line::new("max", points(m, newest, div, |s| s.max_us)),
            Line::new("p99", points(m, newest, div, |s| s.p99_us)),
        ];
        let _ = write!(s, "<h3 class=\"host\">{}</h3>", esc(&m.label));
        s.push_str(&figure(
            &line_chart(
                &format!("{}: max and p99 per snapshot", m.label),
                x.clone(),
                y.clone(),
                &lines,
            ),
            None,
        ));
    }
    if f.members.len() > MAX_MEMBER_CHARTS {
        let _ = write!(
            s,
            "<p class=\"meta\">{} more host(s) are in the tables above; the {MAX_MEMBER_CHARTS} \
             highest-ranked are drawn.</p>",
            f.members.len() - MAX_MEMBER_CHARTS
        );
    }
    s.push_str("</section>");
    s
}

/// The whole page.
pub fn page(f: &Fleet) -> String {
    let title = format!("latlab fleet report: {} host(s)", f.members.len());
    let snaps: usize = f.members.iter().map(|m| m.snaps.len()).sum();
    let tags = if f.query.tags.is_empty() {
        "none".to_string()
    } else {
        let t: Vec<String> = f
            .query
            .tags
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        t.join(", ")
    };
    let mut s = String::new();
    let _ = write!(
        s,
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width\"><title>{t}</title><style>{CSS}{FLEET_CSS}</style></head><body><h1>{t}</h1><p class=\"meta\">made by latlab {v} at {now} from {snaps} monitor snapshot(s) in {loc} started since {since} (tag filter: {tags}); self-contained (no script, no network)</p>",
        t = esc(&title),
        v = env!("CARGO_PKG_VERSION"),
        now = latlab_core::result::rfc3339(SystemTime::now()),
        loc = esc(&f.location),
        since = when(f.query.since),
        tags = esc(&tags),
    );
    if !f.notes.is_empty() {
        s.push_str("<div class=\"warn\" id=\"notes\"><ul>");
        for n in &f.notes {
            let _ = write!(s, "<li>{}</li>", esc(n));
        }
        s.push_str("</ul></div>");
    }
    s.push_str(&changes(f));
    s.push_str(&ranking(f));
    s.push_str(&causes(f));
    s.push_str(&over_time(f));
    s.push_str("</body></html>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::super::{Decision, Query, Snapshot};
    use super::*;

    fn member(label: &str, maxes: &[f64], outcome: Outcome) -> Member {
        let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        Member {
            monitor: format!("mon-{label}"),
            label: label.into(),
            snaps: maxes
                .iter()
                .enumerate()
                .map(|(i, &m)| Snapshot {
                    id: format!("{label}-{i}"),
                    // A silent hour after the third snapshot.
                    at: t0 + Duration::from_secs(i as u64 * 300 + if i >= 3 { 3600 } else { 0 }),
                    max_us: m,
                    p99_us: m / 4.0,
                })
                .collect(),
            kernel: "6.1 (full)".into(),
            decision: Decision {
                outcome,
                ..Decision::cannot(1, 2, "1 snapshot(s) in the last day".into())
            },
            causes: Default::default(),
        }
    }

    fn fleet(members: Vec<Member>) -> Fleet {
        Fleet {
            members,
            location: "postgres://me:***@db/x".into(),
            query: Query {
                kind: "monitor",
                since: SystemTime::UNIX_EPOCH,
                tags: vec![("site".into(), "lab<1>".into())],
                store: None,
            },
            confidence: 1.0 - ALPHA / 2.0,
            compared: 2,
            notes: vec!["1 snapshot(s) holding no samples left out".into()],
        }
    }

    #[test]
    fn the_page_has_its_three_parts_and_escapes_names() {
        let f = fleet(vec![
            member(
                "stalled<host>",
                &[10.0, 900.0, 12.0, 11.0, 13.0],
                Outcome::Worse,
            ),
            member(
                "quiet",
                &[10.0, 12.0, 11.0, 9.0, 10.0],
                Outcome::CannotDecide,
            ),
        ]);
        let p = page(&f);
        assert!(p.starts_with("<!DOCTYPE html>") && p.ends_with("</html>\n"));
        for id in ["changes", "ranking", "causes", "over-time", "notes"] {
            assert!(p.contains(&format!("id=\"{id}\"")), "{id}");
        }
        assert!(p.contains("stalled&lt;host&gt;") && !p.contains("stalled<host>"));
        assert!(p.contains("lab&lt;1&gt;"));
        // The ranking table lists the stalled host first.
        let table = p.split("class=\"ranking\"").nth(1).unwrap();
        let (a, b) = (
            table.find("stalled&lt;").unwrap(),
            table.find(">quiet<").unwrap(),
        );
        assert!(a < b);
        // Overview plus one chart per host; a silent hour breaks each line (two pieces).
        assert_eq!(p.matches("<svg").count(), 3);
        assert!(p.contains("1 of 1 host(s) compared differ"), "{p}");
        // Causes: a host never traced says so; a traced one its cause shares and groups.
        let causes = p.split("class=\"causes\"").nth(1).unwrap();
        assert_eq!(causes.matches("not traced (monitor --trace)").count(), 2);
        let mut f = f;
        let extra = serde_json::json!({"late_ns_by_cause": {"thread": 750, "host": 250}});
        let t = latlab_core::result::trace::TraceReport {
            per_cpu: vec![latlab_core::result::trace::CpuCauses {
                cpu: 1,
                spikes: 1,
                late_ns: 1000,
                max_ns: 1000,
                causes: vec![latlab_core::result::trace::Cause {
                    kind: "thread".into(),
                    name: "<hog> (latlab load)".into(),
                    chain: Vec::new(),
                    policy: None,
                    ns: 750,
                    share: 0.75,
                    members: Vec::new(),
                }],
            }],
            ..Default::default()
        };
        f.members[0].causes.add_traced([&extra], &t);
        let p = page(&f);
        let causes = p.split("class=\"causes\"").nth(1).unwrap();
        assert!(causes.contains("<td>1 of 5</td>"), "{causes}");
        assert!(
            causes.contains("thread 75 %; host (steal) 25 %"),
            "{causes}"
        );
        assert!(
            causes.contains("&lt;hog&gt; (latlab load) 75 %"),
            "{causes}"
        );
        assert_eq!(causes.matches("not traced").count(), 1);
        assert!(p.contains("Cannot decide for 1 host(s)."));
        assert!(p.contains("minutes before") || p.contains("hours before"));
        // The last chart (its title is written three times, its drawing follows).
        let chart = p.rsplit("max and p99 per snapshot").next().unwrap();
        let path = chart.split("<path d=\"").nth(1).unwrap();
        assert_eq!(path.split('"').next().unwrap().matches('M').count(), 2);
        assert!(!p.contains("NaN"));
    }

    #[test]
    fn many_hosts_are_capped_in_the_charts_not_in_the_tables() {
        let n = MAX_MEMBER_CHARTS + 3;
        let f = fleet(
            (0..n)
                .map(|i| {
                    member(
                        &format!("h{i:02}"),
                        &[i as f64 + 1.0; 5],
                        Outcome::NoDifference,
                    )
                })
                .collect(),
        );
        let p = page(&f);
        assert_eq!(p.matches("<svg").count(), 1 + MAX_MEMBER_CHARTS);
        assert!(p.contains("3 more host(s)"));
        assert!(p.contains("the 8 highest-ranked of 23 hosts"));
        assert!(p.contains(">h22<"), "every host is in the tables");
        assert!(p.contains("No difference proven: none of the 23"));
    }
}
