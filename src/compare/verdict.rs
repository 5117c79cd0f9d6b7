//! Figures rounded to what their interval supports, and the verdict sentence a person pastes
//! into a mailing-list post: "kvm-clock vs tsc, 5 vs 5 runs of 3 s: p99 +14 % [-12 %, +32 %],
//! no difference proven (p = 0.29); p99.9 not estimable: runs of 3000 samples, need 10 000".
//! Text and Markdown use these; JSON keeps full precision.

use super::analysis::{Analysis, Comparison, MetricCmp, Verdict};

/// The rounding unit for figures whose interval is `width` wide: two significant digits of
/// the width (None when the width is not a positive finite number).
pub fn unit_for(width: f64) -> Option<i32> {
    (width.is_finite() && width > 0.0).then(|| width.log10().floor() as i32 - 1)
}

/// `x` rounded to 10^`e`, written with just the decimals that unit has.
pub fn at(x: f64, e: i32) -> String {
    if !x.is_finite() {
        return "-".into();
    }
    let k = 10f64.powi(e);
    let r = (x / k).round() * k;
    let s = format!("{:.*}", (-e).max(0) as usize, r);
    // No "-0".
    if s.trim_start_matches('-')
        .chars()
        .all(|c| c == '0' || c == '.')
    {
        s.trim_start_matches('-').to_string()
    } else {
        s
    }
}

/// A figure with no interval: four significant digits at most, integers from 10 000 up kept
/// whole (`38406`, `3842`, `19.92`, `1`).
pub fn sig(x: f64) -> String {
    if !x.is_finite() {
        return "-".into();
    }
    if x == 0.0 {
        return "0".into();
    }
    let mag = x.abs().log10().floor() as i32;
    let s = at(x, (mag - 3).min(0));
    // `1`, not `1.000`: trailing zeros carry nothing here (there is no interval to show).
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// A figure rounded like its row's interval (four significant digits without one).
pub fn fig(x: f64, ci: Option<(f64, f64)>) -> String {
    match ci.and_then(|(lo, hi)| unit_for(hi - lo)) {
        Some(e) => at(x, e),
        None => sig(x),
    }
}

/// With an explicit sign (`+14`, `-3.2`, `0`).
fn signed(s: String) -> String {
    if s.starts_with('-') || s == "0" || s == "-" {
        s
    } else {
        format!("+{s}")
    }
}

/// A p-value with two significant digits (`p < 0.001` below that).
pub fn p_text(p: f64) -> String {
    let v = p_value(p);
    if v.starts_with('<') {
        format!("p {v}")
    } else {
        format!("p = {v}")
    }
}

/// A p-value alone: two significant digits, `< 0.001` below that.
pub fn p_value(p: f64) -> String {
    if p < 0.001 {
        "< 0.001".into()
    } else {
        crate::stats::cfmt::g(p, 2)
    }
}

/// The row's change and interval in per cent of the baseline, rounded to the interval:
/// `+14 % [-12 %, +32 %]`; without an interval, the change alone.
pub fn change_text(m: &MetricCmp) -> String {
    let pct = |x: f64| x / m.base * 100.0;
    if m.base == 0.0 || !m.base.is_finite() {
        return match m.ci {
            Some((lo, hi)) => format!(
                "{} [{}, {}]",
                signed(fig(m.diff, m.ci)),
                signed(fig(lo, m.ci)),
                signed(fig(hi, m.ci))
            ),
            None => signed(sig(m.diff)),
        };
    }
    match m.ci {
        Some((lo, hi)) => {
            let (a, b) = (pct(lo), pct(hi));
            let e = unit_for((b - a).abs()).unwrap_or(0);
            format!(
                "{} % [{} %, {} %]",
                signed(at(m.change_pct, e)),
                signed(at(a.min(b), e)),
                signed(at(a.max(b), e))
            )
        }
        None => format!("{} %", signed(at(m.change_pct, 0))),
    }
}

/// The part of two level labels that differs: `clocksource=kvm-clock` against
/// `clocksource=tsc` gives `kvm-clock` and `tsc`.
fn short_labels(a: &str, b: &str) -> (String, String) {
    let pairs = |s: &str| -> Option<Vec<(String, String)>> {
        s.split(',')
            .map(|p| {
                p.split_once('=')
                    .map(|(k, v)| (k.to_string(), v.to_string()))
            })
            .collect()
    };
    let (Some(pa), Some(pb)) = (pairs(a), pairs(b)) else {
        return (a.to_string(), b.to_string());
    };
    let keys = |p: &[(String, String)]| p.iter().map(|x| x.0.clone()).collect::<Vec<_>>();
    if keys(&pa) != keys(&pb) {
        return (a.to_string(), b.to_string());
    }
    let diff: Vec<usize> = (0..pa.len()).filter(|&i| pa[i].1 != pb[i].1).collect();
    match diff.as_slice() {
        [i] => (pa[*i].1.clone(), pb[*i].1.clone()),
        [] => (a.to_string(), b.to_string()),
        d => {
            let join = |p: &[(String, String)]| {
                d.iter()
                    .map(|&i| format!("{}={}", p[i].0, p[i].1))
                    .collect::<Vec<_>>()
                    .join(",")
            };
            (join(&pa), join(&pb))
        }
    }
}

fn metric_part(m: &MetricCmp) -> String {
    match m.verdict {
        Verdict::NotEstimable => format!(
            "{} not estimable{}",
            m.metric,
            m.note
                .as_deref()
                .map_or(String::new(), |n| format!(": {n}"))
        ),
        Verdict::RunVariationUnknown => format!(
            "{} {}, not tested: 1 run on a side",
            m.metric,
            change_text(m)
        ),
        v => {
            let p = m
                .p_adjusted
                .map_or(String::new(), |p| format!(" ({})", p_text(p)));
            format!("{} {}, {}{p}", m.metric, change_text(m), v.text())
        }
    }
}

/// The metrics a sentence states: the headline first, p99.9 beside a p99 headline, then every
/// other metric with a proven difference.
fn stated<'a>(c: &'a Comparison, headline: &str) -> Vec<&'a MetricCmp> {
    let rank = |m: &MetricCmp| {
        if m.metric == headline {
            Some(0)
        } else if headline == "p99" && m.metric == "p99.9" {
            Some(1)
        } else if matches!(m.verdict, Verdict::Better | Verdict::Worse) {
            Some(2)
        } else {
            None
        }
    };
    let mut v: Vec<(usize, &MetricCmp)> = c
        .metrics
        .iter()
        .filter_map(|m| rank(m).map(|r| (r, m)))
        .collect();
    v.sort_by_key(|x| x.0);
    v.into_iter().map(|x| x.1).collect()
}

/// One sentence per set compared with the baseline.
pub fn sentences(a: &Analysis) -> Vec<String> {
    a.comparisons
        .iter()
        .map(|c| {
            let (new, base) = short_labels(&c.label, &c.baseline);
            let runs = if c.runs.0 > 0 && c.runs.1 > 0 {
                let len = a.run_secs.map_or(String::new(), |s| {
                    format!(" of {} s", crate::stats::cfmt::g(s, 2))
                });
                format!(", {} vs {} runs{len}", c.runs.1, c.runs.0)
            } else {
                String::new()
            };
            let mut parts: Vec<String> = stated(c, &a.headline)
                .into_iter()
                .map(metric_part)
                .collect();
            if parts.is_empty() {
                parts.push("nothing compared".into());
            }
            format!("{new} vs {base}{runs}: {}.", parts.join("; "))
        })
        .collect()
}

/// Warnings of many runs, one line per condition with the runs it applies to (in order of
/// first appearance): `runs` is each run's name and its warnings.
pub fn group_warnings<'a>(runs: impl IntoIterator<Item = (&'a str, &'a [String])>) -> Vec<String> {
    let mut by: Vec<(&str, Vec<&str>)> = Vec::new();
    let mut total = 0;
    for (name, ws) in runs {
        total += 1;
        for w in ws {
            match by.iter_mut().find(|(t, _)| *t == w.as_str()) {
                Some((_, names)) if !names.contains(&name) => names.push(name),
                Some(_) => {}
                None => by.push((w.as_str(), vec![name])),
            }
        }
    }
    by.into_iter()
        .map(|(w, names)| {
            if total == 1 {
                w.to_string()
            } else if names.len() == total {
                format!("{w} (all {total} runs)")
            } else {
                format!(
                    "{w} ({} of {total} runs: {})",
                    names.len(),
                    names.join(", ")
                )
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_per_condition_with_its_runs() {
        let a = vec!["throttled".to_string(), "lost 3".to_string()];
        let b = vec!["throttled".to_string()];
        let g = group_warnings([("run:a", a.as_slice()), ("run:b", b.as_slice())]);
        assert_eq!(g, ["throttled (all 2 runs)", "lost 3 (1 of 2 runs: run:a)"]);
    }

    #[test]
    fn figures_take_two_significant_digits_of_their_interval() {
        assert_eq!(unit_for(44.0), Some(0));
        assert_eq!(at(14.37, 0), "14");
        assert_eq!(at(-0.0444704, unit_for(0.31).unwrap()), "-0.04");
        assert_eq!(at(-0.0444704, unit_for(0.031).unwrap()), "-0.044");
        assert_eq!(at(-0.001, -2), "0.00");
        assert_eq!(fig(123.456, Some((100.0, 150.0))), "123");
        assert_eq!(sig(38406.0), "38406");
        assert_eq!(sig(3842.4), "3842");
        assert_eq!(sig(19.919), "19.92");
        assert_eq!(sig(22.8948), "22.89");
        assert_eq!(sig(1.0), "1");
        assert_eq!(sig(19.9), "19.9");
        assert_eq!(p_text(0.2871), "p = 0.29");
        assert_eq!(p_text(0.0001), "p < 0.001");
    }

    #[test]
    fn labels_keep_what_differs() {
        assert_eq!(
            short_labels("clocksource=kvm-clock", "clocksource=tsc"),
            ("kvm-clock".into(), "tsc".into())
        );
        assert_eq!(short_labels("a=1,b=2", "a=1,b=3"), ("2".into(), "3".into()));
        assert_eq!(short_labels("new", "old"), ("new".into(), "old".into()));
    }

    #[test]
    fn the_sentence_reads_as_the_issue_asks() {
        let m = |metric: &str, v: Verdict, ci: Option<(f64, f64)>, p: Option<f64>| MetricCmp {
            metric: metric.into(),
            base: 100.0,
            value: 114.0,
            diff: 14.0,
            ci,
            change_pct: 14.0,
            p_adjusted: p,
            ci_level: ci.map(|_| 0.99),
            note: (v == Verdict::NotEstimable).then(|| "runs of 3000 samples, need 10 000".into()),
            method: String::new(),
            verdict: v,
        };
        let c = Comparison {
            label: "clocksource=kvm-clock".into(),
            baseline: "clocksource=tsc".into(),
            metrics: vec![
                m(
                    "p50",
                    Verdict::NoDifferenceProven,
                    Some((-1.0, 3.0)),
                    Some(0.5),
                ),
                m(
                    "p99",
                    Verdict::NoDifferenceProven,
                    Some((-12.0, 32.0)),
                    Some(0.2871),
                ),
                m("p99.9", Verdict::NotEstimable, None, None),
            ],
            runs: (5, 5),
        };
        let a = Analysis {
            settings: super::super::analysis::Settings {
                confidence: 0.95,
                replicates: 1,
                seed: 1,
                higher_is_better: false,
                unit: "us".into(),
                assume_independent: false,
            },
            interval_confidence: 0.95,
            sets: Vec::new(),
            comparisons: vec![c],
            replication: String::new(),
            warnings: Vec::new(),
            headline: "p99".into(),
            run_secs: Some(3.0),
        };
        assert_eq!(
            sentences(&a),
            [
                "kvm-clock vs tsc, 5 vs 5 runs of 3 s: p99 +14 % [-12 %, +32 %], no difference \
              proven (p = 0.29); p99.9 not estimable: runs of 3000 samples, need 10 000."
            ]
        );
    }
}
