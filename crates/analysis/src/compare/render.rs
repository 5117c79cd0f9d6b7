//! Showing an `Analysis`: a terminal table, Markdown for commit messages and mailing lists,
//! or JSON.

use super::analysis::{Analysis, Verdict};
use crate::export::columns;
use latlab_core::stats::cfmt::g;

/// Output formats of `latlab compare`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Aligned plain text.
    Table,
    /// GitHub-flavoured Markdown tables.
    Markdown,
    /// The analysis as JSON.
    Json,
}

fn num(x: f64) -> String {
    super::verdict::sig(x)
}

/// Header and rows of the two tables (sets; comparisons).
struct Tables {
    set_head: Vec<&'static str>,
    set_rows: Vec<Vec<String>>,
    cmp_head: Vec<&'static str>,
    cmp_rows: Vec<Vec<String>>,
}

fn rows(a: &Analysis) -> Tables {
    let set_head = vec![
        "set", "N", "runs", "min", "p50", "p90", "p99", "p99.9", "max", "mean", "stddev",
    ];
    let set_rows = a
        .sets
        .iter()
        .map(|s| {
            let q = |p: f64, v: f64| {
                if s.n >= latlab_core::stats::dist::min_n_for(p) {
                    num(v)
                } else {
                    "-".to_string()
                }
            };
            vec![
                s.label.clone(),
                s.n.to_string(),
                if s.runs == 0 {
                    "-".into()
                } else {
                    s.runs.to_string()
                },
                num(s.min),
                // A percentile only where the set's N supports it (p99.9: 10 000).
                q(0.5, s.p50),
                q(0.9, s.p90),
                q(0.99, s.p99),
                q(0.999, s.p99_9),
                num(s.max),
                num(s.mean),
                num(s.stddev),
            ]
        })
        .collect();
    let cmp_head = vec![
        "set",
        "metric",
        "baseline",
        "value",
        "diff",
        "interval",
        "change [interval]",
        "p (Holm)",
        "verdict",
    ];
    let mut cmp_rows = Vec::new();
    for c in &a.comparisons {
        for m in &c.metrics {
            let dist = m.metric == "distribution";
            // Baseline, value, difference and interval at one precision: they add up.
            let [b, v, d, ci] = super::verdict::columns(m);
            // A figure its sample cannot estimate is not shown as if it were one (the set
            // table leaves it out too).
            let unsupported = m.verdict == Verdict::NotEstimable;
            let shown = |t: String| if unsupported { "-".to_string() } else { t };
            cmp_rows.push(vec![
                c.label.clone(),
                if dist {
                    "distribution (P(set > base))".into()
                } else {
                    m.metric.clone()
                },
                if dist { g(m.base, 3) } else { shown(b) },
                if dist { g(m.value, 3) } else { shown(v) },
                if dist { "-".into() } else { shown(d) },
                ci,
                if dist || unsupported || m.change_pct.is_nan() {
                    "-".into()
                } else {
                    super::verdict::change_text(m)
                },
                // A p-value only beside a test that was made.
                match (m.verdict, m.p_adjusted) {
                    (Verdict::RunVariationUnknown | Verdict::NotEstimable, _) | (_, None) => {
                        "-".into()
                    }
                    (_, Some(p)) => super::verdict::p_value(p),
                },
                match (&m.verdict, &m.note) {
                    (Verdict::NotEstimable, Some(n)) => format!("not estimable: {n}"),
                    (v, _) => v.text().into(),
                },
            ]);
        }
    }
    Tables {
        set_head,
        set_rows,
        cmp_head,
        cmp_rows,
    }
}

fn header(a: &Analysis) -> String {
    let s = &a.settings;
    if a.replication.starts_with("the run") {
        return format!(
            "baseline: {}; {}; {}% confidence overall (Holm over every metric and set; each \
             interval at the level of the Holm step that decided it); {} is better\n",
            a.sets[0].label,
            if s.unit.is_empty() {
                "values as given".to_string()
            } else {
                format!("values in {}", s.unit)
            },
            g(s.confidence * 100.0, 6),
            if s.higher_is_better {
                "higher"
            } else {
                "lower"
            },
        );
    }
    format!(
        "baseline: {}; {}; {}% confidence{}; bootstrap {} replicates, seed {}; {} is better\n",
        a.sets[0].label,
        if s.unit.is_empty() {
            "values as given".to_string()
        } else {
            format!("values in {}", s.unit)
        },
        g(s.confidence * 100.0, 6),
        if a.comparisons.len() > 1 {
            format!(
                " overall (each interval at {}%, Bonferroni over {} comparisons; p-values Holm-adjusted)",
                g(a.interval_confidence * 100.0, 6),
                a.comparisons.len()
            )
        } else {
            String::new()
        },
        s.replicates,
        s.seed,
        if s.higher_is_better {
            "higher"
        } else {
            "lower"
        },
    )
}

/// Renders the analysis in `format`.
pub fn render(a: &Analysis, format: Format) -> String {
    match format {
        Format::Json => serde_json::to_string_pretty(a).unwrap_or_default() + "\n",
        Format::Table => {
            let t = rows(a);
            let mut out = header(a);
            out.push_str(&format!("unit of replication: {}\n\n", a.replication));
            out.push_str(&columns::render(&t.set_head, &t.set_rows));
            out.push('\n');
            out.push_str(&columns::render(&t.cmp_head, &t.cmp_rows));
            for w in &a.warnings {
                out.push_str(&format!("warning: {w}\n"));
            }
            for v in super::verdict::verdicts(a) {
                out.push_str(&v.text());
            }
            out
        }
        Format::Markdown => {
            let t = rows(a);
            let mut out = header(a);
            out.push_str(&format!("\nunit of replication: {}\n\n", a.replication));
            out.push_str(&markdown(&t.set_head, &t.set_rows));
            out.push('\n');
            out.push_str(&markdown(&t.cmp_head, &t.cmp_rows));
            for w in &a.warnings {
                out.push_str(&format!("\n> warning: {w}\n"));
            }
            for v in super::verdict::verdicts(a) {
                out.push('\n');
                out.push_str(&v.markdown());
            }
            out
        }
    }
}

/// A GitHub-flavoured Markdown table.
pub fn markdown_table(head: &[&str], rows: &[Vec<String>]) -> String {
    markdown(head, rows)
}

fn markdown(head: &[&str], rows: &[Vec<String>]) -> String {
    let mut s = format!("| {} |\n", head.join(" | "));
    s.push_str(&format!(
        "|{}\n",
        head.iter()
            .enumerate()
            .map(|(i, _)| if i == 0 { "---|" } else { "---:|" })
            .collect::<String>()
    ));
    for r in rows {
        s.push_str(&format!(
            "| {} |\n",
            r.iter()
                .map(|c| c.replace('|', "\\|"))
                .collect::<Vec<_>>()
                .join(" | ")
        ));
    }
    s
}
