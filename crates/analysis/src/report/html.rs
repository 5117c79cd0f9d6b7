//! The report page: environment and warnings, one section per run (charts by kind and a
//! percentile table), and for several runs or an experiment the overlaid distributions, the
//! forest plot and the verdicts. Plain HTML with inline CSS and SVG: no script, no network.

use super::charts::{self, Buckets};
use super::markup::{figure, row, CSS};
use super::svg::{esc, num};
use super::timecharts;
use super::{Group, Loaded};
use crate::compare::analysis::Analysis;
use latlab_core::result::kind::Chart;
use latlab_core::result::Run;
use std::fmt::Write;

/// Runs given a section of their own (beyond this an experiment lists them in a table).
const MAX_RUN_SECTIONS: usize = 6;

/// The environment facts shown, in order: name and value of a run.
fn env_rows(r: &Run) -> Vec<(&'static str, String)> {
    let e = &r.environment;
    let throttle = match (e.sched_rt_runtime_us, e.sched_rt_period_us) {
        (Some(-1), _) => "off (sched_rt_runtime_us = -1)".to_string(),
        (Some(r), Some(p)) => format!("{r} µs of every {p} µs"),
        _ => "unknown".into(),
    };
    let or_none = |s: &str| {
        if s.is_empty() {
            "none".to_string()
        } else {
            s.to_string()
        }
    };
    vec![
        ("host", e.hostname.clone()),
        ("kernel", e.kernel_release.clone()),
        ("kernel version", e.kernel_version.clone()),
        ("preemption", e.preemption.clone()),
        ("clocksource", e.clocksource.clone()),
        (
            "CPU",
            format!(
                "{} × {} (online {})",
                e.cpus_online, e.cpu_model, e.online_cpus
            ),
        ),
        ("isolated CPUs", or_none(&e.isolated_cpus)),
        ("nohz_full CPUs", or_none(&e.nohz_full_cpus)),
        ("RT throttling", throttle),
        (
            "governor",
            e.governor.clone().unwrap_or_else(|| "no cpufreq".into()),
        ),
        ("kernel command line", e.kernel_cmdline.clone()),
        ("latlab", e.tool_version.clone()),
    ]
}

/// One group's value of each fact: the value its runs share, or each value with its run count
/// when they differ (a surprise inside one level).
fn group_env(loaded: &[Loaded], g: &Group) -> Vec<(String, bool)> {
    let per: Vec<Vec<(&'static str, String)>> =
        g.runs.iter().map(|&i| env_rows(&loaded[i].run)).collect();
    let Some(first) = per.first() else {
        return Vec::new();
    };
    (0..first.len())
        .map(|k| {
            let mut vals: Vec<(String, usize)> = Vec::new();
            for p in &per {
                match vals.iter_mut().find(|v| v.0 == p[k].1) {
                    Some(v) => v.1 += 1,
                    None => vals.push((p[k].1.clone(), 1)),
                }
            }
            if vals.len() == 1 {
                (vals.remove(0).0, false)
            } else {
                let t: Vec<String> = vals
                    .into_iter()
                    .map(|(v, n)| format!("{v} ({n} run(s))"))
                    .collect();
                (t.join("; "), true)
            }
        })
        .collect()
}

/// The environment: one column per level (the baseline first) with the facts that differ
/// from the baseline's highlighted, so a tsc-vs-kvm-clock page says each level's clocksource;
/// a difference no run's tags name (a factor of the plan) is flagged as a surprise.
fn environment(runs: &[Loaded], groups: &[Group]) -> String {
    let Some(first) = runs.first() else {
        return String::new();
    };
    let one = vec![Group {
        label: "all runs".into(),
        runs: (0..runs.len()).collect(),
    }];
    let cols: &[Group] = if groups.len() > 1 { groups } else { &one };
    let names: Vec<&'static str> = env_rows(&first.run).into_iter().map(|r| r.0).collect();
    let values: Vec<Vec<(String, bool)>> = cols.iter().map(|g| group_env(runs, g)).collect();
    let mut s = String::from("<section id=\"environment\"><h2>Environment</h2><table>");
    if cols.len() > 1 {
        s.push_str("<tr><th class=\"l\"></th>");
        for g in cols {
            let _ = write!(
                s,
                "<th class=\"l\">{} ({} run(s))</th>",
                esc(&g.label),
                g.runs.len()
            );
        }
        s.push_str("</tr>");
    }
    for (k, name) in names.iter().enumerate() {
        let _ = write!(s, "<tr><th class=\"l\">{name}</th>");
        for v in &values {
            let Some((val, mixed)) = v.get(k) else {
                s.push_str("<td></td>");
                continue;
            };
            let differs = values[0].get(k).is_some_and(|b| b.0 != *val);
            let cls = if *mixed {
                " class=\"l mixed\""
            } else if differs {
                " class=\"l diff\""
            } else {
                " class=\"l\""
            };
            let _ = write!(s, "<td{cls}>{}</td>", esc(val));
        }
        s.push_str("</tr>");
    }
    s.push_str("</table>");
    if cols.len() > 1 {
        s.push_str(
            "<p class=\"meta\">highlighted: what differs from the baseline's environment</p>",
        );
    }
    // A difference one of the run's own tags names (a plan's factor, `clocksource=kvm-clock`)
    // is the experiment, not a surprise.
    let e = &first.run.environment;
    let differ: Vec<&str> = runs
        .iter()
        .filter(|l| {
            let o = &l.run.environment;
            let by_design = |v: &String| l.tags.values().any(|t| t == v);
            [
                (&o.kernel_release, &e.kernel_release),
                (&o.clocksource, &e.clocksource),
                (&o.preemption, &e.preemption),
                (&o.hostname, &e.hostname),
            ]
            .iter()
            .any(|(a, b)| a != b && !by_design(a))
        })
        .map(|l| l.name.as_str())
        .collect();
    if !differ.is_empty() {
        let _ = write!(
            s,
            "<p class=\"warn\">These runs differ from the first in host, kernel, preemption or clocksource, and no factor of theirs says so: {}</p>",
            esc(&differ.join(", "))
        );
    }
    s.push_str("</section>");
    s
}

pub(super) fn percentile_table(run: &Run) -> String {
    let mut s = String::from("<table class=\"percentiles\">");
    let unit = run.series.first().map_or("ns", |x| x.unit.as_str());
    let (scale, uname) = charts::display_unit(unit);
    s.push_str(&row(
        &[
            "series", "cpu", "policy", "count", "min", "avg", "p50", "p90", "p99", "p99.9",
            "p99.99", "max", "overruns",
        ]
        .map(String::from),
        true,
    ));
    for x in &run.series {
        let (sc, _) = charts::display_unit(&x.unit);
        // Rounded as the text output and the chart legends round them.
        let f = |v: u64| crate::compare::verdict::sig(v as f64 * sc);
        // A percentile only where the series' count supports it, as compare asks.
        let [p50, p90, p99, p999, p9999] = x
            .summary
            .percentiles
            .supported(x.summary.count)
            .map(|v| v.map_or("-".to_string(), f));
        s.push_str(&row(
            &[
                x.name.clone(),
                x.cpu.map_or("-".into(), |c| c.to_string()),
                format!("{} {}", x.policy, x.prio),
                x.summary.count.to_string(),
                f(x.summary.min_ns),
                crate::compare::verdict::sig(x.summary.mean_ns * sc),
                p50,
                p90,
                p99,
                p999,
                p9999,
                f(x.summary.max_ns),
                x.overruns.to_string(),
            ],
            false,
        ));
    }
    let _ = write!(
        s,
        "</table><p class=\"meta\">values in {}{}</p>",
        esc(&uname),
        if scale != 1.0 {
            " (recorded in ns)"
        } else {
            ""
        }
    );
    s
}

fn run_section(l: &Loaded, linear: bool) -> String {
    let r = &l.run;
    let mut s = String::new();
    let _ = write!(
        s,
        "<section class=\"run\" id=\"{id}\"><h2>{kind} run {id}</h2><p class=\"meta\">{name}: started {st}, {d:.1} s{intr}</p><p><code>{cmd}</code></p>",
        id = esc(&r.id),
        kind = esc(&r.kind),
        name = esc(&l.name),
        st = esc(&r.started),
        d = r.duration_s,
        intr = if r.interrupted { ", <b>interrupted</b>" } else { "" },
        cmd = esc(&r.command_line.join(" "))
    );
    if !l.tags.is_empty() {
        let t: Vec<String> = l.tags.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let _ = write!(s, "<p class=\"meta\">tags: {}</p>", esc(&t.join(", ")));
    }
    if let Some(c) = &r.check_failure {
        let _ = write!(s, "<p class=\"bad\">check failed: {}</p>", esc(c));
    }
    if !r.warnings.is_empty() {
        s.push_str("<div class=\"warn\"><b>Warnings</b><ul>");
        for w in &r.warnings {
            let _ = write!(s, "<li>{}</li>", esc(w));
        }
        s.push_str("</ul></div>");
    }
    if !r.loads.is_empty() {
        s.push_str("<h3>Loads</h3><table>");
        s.push_str(&row(
            &["load", "achieved", "rate", "note"].map(String::from),
            true,
        ));
        for ld in &r.loads {
            s.push_str(&row(
                &[
                    ld.spec.clone(),
                    format!("{} {} in {:.1} s", ld.count, ld.unit, ld.seconds),
                    format!("{}/s", num(ld.rate_per_s)),
                    ld.note.clone().unwrap_or_default(),
                ],
                false,
            ));
        }
        s.push_str("</table>");
    }
    match l.facts.chart {
        Chart::Gaps => {
            for c in timecharts::noise(r) {
                s.push_str(&figure(&c, None));
            }
        }
        Chart::Histogram | Chart::Bars => {}
    }
    match l.facts.chart {
        Chart::Gaps | Chart::Histogram => {
            if let Some((c, n)) = charts::histogram(r) {
                s.push_str(&figure(&c, n.as_deref().or(l.facts.histogram_caption)));
            }
        }
        Chart::Bars => {
            if let Some(c) = timecharts::series_bars(r) {
                s.push_str(&figure(&c, None));
            }
        }
    }
    if linear {
        if let Some(c) = charts::histogram_linear_of_run(r) {
            s.push_str(&figure(
                &c,
                Some("linear bins as OSADL's latency plots use; every single sample shows on the log y axis"),
            ));
        }
    }
    if let Some(c) = charts::exceedance_of_run(r) {
        s.push_str(&figure(
            &c,
            Some("read the tail off directly: the curve at 1e-3 is the p99.9, its last point the maximum"),
        ));
    }
    if let Some(t) = super::tail::section(r, &l.name) {
        s.push_str(&super::tail::tail_section(&t));
    }
    if let Some((c, n)) = timecharts::timeline(r) {
        let cap = n.unwrap_or_else(|| {
            l.facts
                .timeline_caption
                .unwrap_or("from the result's timeline; empty intervals are skipped")
                .into()
        });
        s.push_str(&figure(&c, Some(&cap)));
    }
    s.push_str("<h3>Percentiles</h3>");
    s.push_str(&percentile_table(r));
    s.push_str(&super::spikes::section(r));
    s.push_str("</section>");
    s
}

/// The section comparing the groups: their distributions overlaid, the notes, the spikes
/// per level and, for an experiment, the analysis.
fn comparison(
    linear: bool,
    loaded: &[Loaded],
    groups: &[Group],
    a: Option<&Analysis>,
    notes: &[String],
) -> String {
    let mut s = String::from("<section id=\"comparison\"><h2>Comparison</h2>");
    s.push_str(&overlaid(linear, loaded, groups));
    for n in notes {
        let _ = write!(s, "<p class=\"meta\">{}</p>", esc(n));
    }
    s.push_str(&super::spikes::levels(loaded, groups));
    if let Some(a) = a {
        s.push_str(&verdicts(a));
    }
    s.push_str("</section>");
    s
}

/// The groups' distributions overlaid (every series of a group's runs merged, the first
/// [`charts::MAX_LINES`] groups drawn), where the runs' kind draws distributions.
fn overlaid(linear: bool, loaded: &[Loaded], groups: &[Group]) -> String {
    let mut s = String::new();
    let first = &loaded[groups[0].runs[0]].run;
    let unit = first
        .series
        .first()
        .map_or("ns".to_string(), |x| x.unit.clone());
    let dists: Vec<(String, Buckets)> = groups
        .iter()
        .take(charts::MAX_LINES)
        .map(|g| {
            let b = charts::merge(
                g.runs
                    .iter()
                    .flat_map(|&i| loaded[i].run.series.iter())
                    .filter(|x| x.unit == unit),
            );
            (format!("{} ({} run(s))", g.label, g.runs.len()), b)
        })
        .collect();
    if groups.len() > charts::MAX_LINES {
        let _ = write!(
            s,
            "<p class=\"warn\">{} groups: the first {} are drawn; all are in the tables.</p>",
            groups.len(),
            charts::MAX_LINES
        );
    }
    let distributions = loaded[groups[0].runs[0]].facts.distributions;
    if distributions && dists.iter().any(|d| !d.1.is_empty()) {
        s.push_str(&figure(
            &charts::exceedance(
                "Distributions overlaid (exceedance: 1 - CDF, log y, down to 1/N)",
                &dists,
                &unit,
            ),
            Some("every series of every run in a group merged"),
        ));
        s.push_str(&figure(
            &charts::histogram_of("Distributions overlaid (histogram, log y)", &dists, &unit),
            None,
        ));
        if linear {
            s.push_str(&figure(
                &charts::histogram_linear(
                    "Distributions overlaid (linear bins, log y)",
                    &dists,
                    &unit,
                ),
                None,
            ));
        }
    }
    s
}

/// The analysis: its forest plot, a verdict table of a row per set and metric, its unit,
/// baseline and replication, its warnings and the verdicts in words.
fn verdicts(a: &Analysis) -> String {
    let mut s = String::new();
    if let Some(f) = charts::forest(a) {
        s.push_str(&figure(&f, Some("a row per metric and level; point: the change from the baseline; bar: its interval (at the level of the Holm step that decided it); a dashed line marks no difference")));
    }
    s.push_str("<h3>Verdicts</h3><table class=\"verdicts\">");
    s.push_str(&row(
        &[
            "set",
            "metric",
            "baseline",
            "value",
            "difference",
            "interval",
            "change",
            "p (Holm)",
            "verdict",
        ]
        .map(String::from),
        true,
    ));
    for c in &a.comparisons {
        for m in &c.metrics {
            s.push_str(&verdict_row(&c.label, m));
        }
    }
    let _ = write!(
        s,
        "</table><p class=\"meta\">values in {}; baseline {}; unit of replication: {}</p>",
        esc(&a.settings.unit),
        esc(&a
            .comparisons
            .first()
            .map_or(String::new(), |c| c.baseline.clone())),
        esc(&a.replication)
    );
    for w in &a.warnings {
        let _ = write!(s, "<p class=\"warn\">{}</p>", esc(w));
    }
    for v in crate::compare::verdict::verdicts(a) {
        let _ = write!(
            s,
            "<div class=\"verdict\"><p>verdict: {}:</p><ul>",
            esc(&v.head)
        );
        for l in v.metrics.iter().chain(&v.notes) {
            let _ = write!(s, "<li>{}</li>", esc(l));
        }
        s.push_str("</ul></div>");
    }
    s
}

/// The verdict table's row of metric `m` of the set `label`.
fn verdict_row(label: &str, m: &crate::compare::analysis::MetricCmp) -> String {
    use crate::compare::analysis::Verdict;
    use crate::compare::verdict::{change_text, columns};
    let [b, v, d, ci] = columns(m);
    let tested = !matches!(
        m.verdict,
        Verdict::NotEstimable | Verdict::RunVariationUnknown
    );
    row(
        &[
            label.to_string(),
            m.metric.clone(),
            b,
            v,
            d,
            ci,
            if m.change_pct.is_finite() {
                change_text(m)
            } else {
                "-".into()
            },
            m.p_adjusted
                .filter(|_| tested)
                .map_or("-".into(), crate::compare::verdict::p_value),
            match (&m.verdict, &m.note) {
                (Verdict::NotEstimable, Some(n)) => format!("not estimable: {n}"),
                (v, _) => v.text().to_string(),
            },
        ],
        false,
    )
}

fn run_list(loaded: &[Loaded]) -> String {
    let mut s = String::from("<section id=\"runs\"><h2>Runs</h2><table>");
    s.push_str(&row(
        &["run", "kind", "started", "tags", "max", "p99", "warnings"].map(String::from),
        true,
    ));
    for l in loaded {
        let r = &l.run;
        let (sc, u) = charts::display_unit(r.series.first().map_or("ns", |x| x.unit.as_str()));
        let max = r.series.iter().map(|x| x.summary.max_ns).max().unwrap_or(0);
        let p99 = r
            .series
            .iter()
            .map(|x| x.summary.percentiles.p99)
            .max()
            .unwrap_or(0);
        let tags: Vec<String> = l.tags.iter().map(|(k, v)| format!("{k}={v}")).collect();
        s.push_str(&row(
            &[
                r.id.clone(),
                r.kind.clone(),
                r.started.clone(),
                tags.join(","),
                format!("{} {u}", crate::compare::verdict::sig(max as f64 * sc)),
                format!("{} {u}", crate::compare::verdict::sig(p99 as f64 * sc)),
                r.warnings.len().to_string(),
            ],
            false,
        ));
    }
    s.push_str("</table></section>");
    s
}

/// The whole page.
pub fn page(
    loaded: &[Loaded],
    groups: &[Group],
    experiment: Option<&str>,
    analysis: Option<&Analysis>,
    notes: &[String],
    linear: bool,
) -> String {
    let title = match experiment {
        Some(e) => format!("latlab report: experiment {e}"),
        None if loaded.len() == 1 => format!(
            "latlab report: {} run {}",
            loaded[0].run.kind, loaded[0].run.id
        ),
        None => format!("latlab report: {} runs", loaded.len()),
    };
    let mut s = String::new();
    let _ = write!(
        s,
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width\"><title>{t}</title><style>{CSS}</style></head><body><h1>{t}</h1><p class=\"meta\">made by latlab {v} at {now} from {n} run(s); self-contained (no script, no network)</p>",
        t = esc(&title),
        v = env!("CARGO_PKG_VERSION"),
        now = latlab_core::result::rfc3339(std::time::SystemTime::now()),
        n = loaded.len()
    );
    s.push_str(&environment(loaded, groups));
    // Every run's warnings, one line per condition with the runs it applies to.
    let ws = crate::compare::verdict::group_warnings(
        loaded
            .iter()
            .map(|l| (l.name.as_str(), l.run.warnings.as_slice())),
    );
    if !ws.is_empty() && loaded.len() > 1 {
        s.push_str("<div class=\"warn\" id=\"warnings\"><b>Warnings of the runs</b><ul>");
        for w in &ws {
            let _ = write!(s, "<li>{}</li>", esc(w));
        }
        s.push_str("</ul></div>");
    }
    if groups.len() > 1 {
        s.push_str(&comparison(linear, loaded, groups, analysis, notes));
    }
    if loaded.len() <= MAX_RUN_SECTIONS {
        for l in loaded {
            s.push_str(&run_section(l, linear));
        }
    } else {
        s.push_str(&run_list(loaded));
    }
    s.push_str("</body></html>\n");
    s
}
