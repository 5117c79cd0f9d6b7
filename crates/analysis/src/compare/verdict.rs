//! Figures rounded to what their interval supports (baseline, value and difference at one
//! precision, so the columns add up as shown), p-values as people write them, and the verdict
//! sentence a person pastes into a patch mail: conditions first, then per metric the absolute
//! figures before → after, the change with its interval, the test and the adjusted p, and for a
//! metric left open what would decide it. Text and Markdown use these; JSON keeps full
//! precision.

use super::analysis::{Analysis, Comparison, MetricCmp, Verdict};

/// The rounding unit for figures whose interval is `width` wide: two significant digits of
/// the width (None when the width is not a positive finite number).
pub(crate) fn unit_for(width: f64) -> Option<i32> {
    (width.is_finite() && width > 0.0).then(|| width.log10().floor() as i32 - 1)
}

/// `x` rounded to 10^`e`, written with just the decimals that unit has.
pub(crate) fn at(x: f64, e: i32) -> String {
    if !x.is_finite() {
        return "-".into();
    }
    let k = 10f64.powi(e);
    let r = (x / k).round() * k;
    // Past 10^15 the digits are not exact anyway: four significant ones, not three hundred.
    if r.abs() >= 1e15 {
        return format!("{r:.3e}");
    }
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
    // Far below any latency's resolution: four significant digits, not three hundred zeros.
    if x.abs() < 1e-9 {
        return format!("{x:.3e}");
    }
    let mag = x.abs().log10().floor() as i32;
    let s = at(x, (mag - 3).min(0));
    // `1`, not `1.000`: trailing zeros carry nothing here (there is no interval to show).
    if s.contains('.') && !s.contains('e') {
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

/// A p-value in a sentence: `p = 0.29`, `p > 0.99`, `p < 1e-6`.
pub(crate) fn p_text(p: f64) -> String {
    let v = p_value(p);
    if v.starts_with('<') || v.starts_with('>') {
        format!("p {v}")
    } else {
        format!("p = {v}")
    }
}

/// A p-value alone, as people write them: two significant digits (`0.29`, `0.047`,
/// `0.0012`, `3.4e-5`), `> 0.99` for the ones that round to 1 and `< 1e-6` below that.
pub(crate) fn p_value(p: f64) -> String {
    if p.is_nan() {
        "-".into()
    } else if p > 0.99 {
        "> 0.99".into()
    } else if p < 1e-6 {
        "< 1e-6".into()
    } else if p < 1e-3 {
        let s = format!("{p:.1e}");
        s.replace(".0e", "e")
    } else {
        latlab_core::stats::cfmt::g(p, 2)
    }
}

/// The rounding unit (power of ten) shared by a row's baseline, value, difference and interval:
/// two significant digits of the interval's width, and never fewer than three significant
/// digits of the smaller figure (so a change of a few per cent shows in the columns that make
/// it), at most seven significant digits in all.
pub(crate) fn row_unit(base: f64, value: f64, ci: Option<(f64, f64)>) -> i32 {
    let mag = |x: f64| x.abs().log10().floor() as i32;
    let mut e = i32::MAX;
    if let Some(u) = ci.and_then(|(lo, hi)| unit_for(hi - lo)) {
        e = u;
    }
    let small = base.abs().min(value.abs());
    if small > 0.0 && small.is_finite() {
        e = e.min(mag(small) - 2);
    }
    let big = base.abs().max(value.abs());
    if big > 0.0 && big.is_finite() {
        e = e.max(mag(big) - 6);
    }
    if e == i32::MAX {
        0
    } else {
        e
    }
}

/// A row's baseline, value, difference and interval as shown: one rounding unit for all, the
/// difference being the shown value less the shown baseline, so they add up exactly.
pub(crate) fn columns(m: &MetricCmp) -> [String; 4] {
    let e = row_unit(m.base, m.value, m.ci);
    let k = 10f64.powi(e);
    let (b, v) = ((m.base / k).round(), (m.value / k).round());
    let d = if m.base.is_finite() && m.value.is_finite() {
        at((v - b) * k, e)
    } else {
        at(m.diff, e)
    };
    [
        at(m.base, e),
        at(m.value, e),
        d,
        m.ci.map_or("-".into(), |(lo, hi)| {
            format!("[{}, {}]", at(lo, e), at(hi, e))
        }),
    ]
}

/// An upper end of a change's interval past which it reads "unbounded" (+10 000 %).
pub(crate) const UNBOUNDED_PCT: f64 = 1e4;

/// The row's change in per cent of the baseline with the interval of the ratio (never below
/// −100 %), rounded to two significant digits of the interval's width: `+14 % [-12 %, +32 %]`;
/// without a ratio interval, the change alone (or the difference, when the baseline is 0).
pub(crate) fn change_text(m: &MetricCmp) -> String {
    if m.base == 0.0 || !m.base.is_finite() || !m.change_pct.is_finite() {
        return signed(sig(m.diff));
    }
    match m.change_ci {
        // A ratio interval that reaches past 101 times the baseline (two runs a level, a
        // replicate near 0): its end is no figure anyone reads (`+2.195e154 %`), and rounding
        // the change to its width would print the change as 0.
        Some((lo, hi)) if lo.max(hi) > UNBOUNDED_PCT => format!(
            "{} % [{} %, unbounded]",
            signed(at(m.change_pct, 0)),
            signed(at(lo.min(hi), 0))
        ),
        Some((lo, hi)) => {
            let e = unit_for((hi - lo).abs()).unwrap_or(0).min(0);
            format!(
                "{} % [{} %, {} %]",
                signed(at(m.change_pct, e)),
                signed(at(lo.min(hi), e)),
                signed(at(lo.max(hi), e))
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

/// `µs` for `us`: the unit as a sentence shows it.
fn unit_text(unit: &str) -> String {
    match unit {
        "us" => " µs".into(),
        "" => String::new(),
        u => format!(" {u}"),
    }
}

/// One metric's line of the verdict: the figures before → after with their unit, the change
/// with its interval, the verdict and what it rests on (`runs`: `5+5 runs of 3 s`), the test
/// and the adjusted p of a tested one; a metric that could not be compared says why.
fn metric_line(m: &MetricCmp, unit: &str, runs: &str) -> String {
    let p = m.p_adjusted.map(p_text);
    let rests = |test: Option<&str>| {
        let parts: Vec<String> = [
            (!runs.is_empty()).then(|| runs.to_string()),
            test.map(str::to_string),
            p.as_ref().map(|p| format!("Holm-adjusted {p}")),
        ]
        .into_iter()
        .flatten()
        .collect();
        if parts.is_empty() {
            String::new()
        } else {
            format!(" ({})", parts.join("; "))
        }
    };
    let [b, val, _, _] = columns(m);
    let figures = |change: String| {
        if m.base.is_finite() && m.value.is_finite() {
            format!("{} {b} → {val}{} ({change})", m.metric, unit_text(unit))
        } else {
            format!("{} ({change})", m.metric)
        }
    };
    match m.verdict {
        Verdict::NotEstimable => format!(
            "{} not estimable{}",
            m.metric,
            m.note
                .as_deref()
                .map_or(String::new(), |n| format!(": {n}"))
        ),
        Verdict::RunVariationUnknown => format!(
            "{}, not tested: 1 run on a side{}",
            figures(change_text(m)),
            rests(None)
        ),
        Verdict::NoDifferenceProven => {
            format!(
                "{}, no difference proven{}",
                figures(change_text(m)),
                rests(None)
            )
        }
        // P(a value of the set > one of the baseline), 0.5 when alike: no unit, no per cent.
        v if m.metric == "distribution" => format!(
            "distribution P(set > base) {:.3}, {}{}",
            m.value,
            v.text(),
            rests(Some(test_name(&m.method)))
        ),
        v => format!(
            "{}, {}{}",
            figures(change_text(m)),
            v.text(),
            rests(Some(test_name(&m.method)))
        ),
    }
}

/// What would decide a metric left open, for the lines after the verdict's figures (None when
/// nothing is to be said).
fn explanation(m: &MetricCmp) -> Option<String> {
    match (m.verdict, m.to_decide.as_deref()) {
        (Verdict::RunVariationUnknown, d) => Some(format!(
            "{}: repeat each configuration (5 runs) to decide{}",
            m.metric,
            d.map_or(String::new(), |d| format!("; {d}"))
        )),
        (_, Some(d)) => Some(format!("{}: {d}", m.metric)),
        _ => None,
    }
}

/// The test a row's method names, short: `Welch's t on log per-run figures`.
fn test_name(method: &str) -> &'static str {
    if method.starts_with("Welch's t on the logs") {
        "Welch's t on the logs of per-run figures"
    } else if method.starts_with("Welch's t over the runs") {
        "Welch's t over per-run figures"
    } else if method.starts_with("bootstrap") {
        "bootstrap of the samples"
    } else if method.starts_with("Welch") {
        "Welch's t"
    } else {
        "Mann-Whitney U"
    }
}

/// The metrics a sentence states: the headline first, then the others in the table's order
/// (the distribution test, a sample-level figure, only when it decided something).
fn stated<'a>(c: &'a Comparison, headline: &str) -> Vec<&'a MetricCmp> {
    let mut v: Vec<&MetricCmp> = c
        .metrics
        .iter()
        .filter(|m| {
            m.metric != "distribution" || matches!(m.verdict, Verdict::Better | Verdict::Worse)
        })
        .collect();
    v.sort_by_key(|m| m.metric != headline);
    v
}

/// The verdict of one set against the baseline, as a maintainer pastes it into a patch mail:
/// a head (the conditions, then which level against which), one line per metric (the headline
/// first) and, after them, what would decide the metrics left open.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Said {
    /// `cyclic -t 1, 5 × 3 s runs per level, no load, kernel 6.1; kvm-clock vs tsc`
    pub(crate) head: String,
    /// One per metric: `p99 36.3 → 30.7 µs (-15 % [-42 %, +24 %]), no difference proven (5+5
    /// runs of 3 s; Holm-adjusted p = 0.58)`.
    pub(crate) metrics: Vec<String>,
    /// What would decide the open ones (more runs at the spread seen, longer runs).
    pub(crate) notes: Vec<String>,
}

impl Said {
    /// As text: `verdict: HEAD:`, then each metric and each note indented on a line of its own.
    pub(crate) fn text(&self) -> String {
        let mut s = format!("verdict: {}:\n", self.head);
        for l in self.metrics.iter().chain(&self.notes) {
            s.push_str(&format!("  {l}\n"));
        }
        s
    }

    /// As Markdown: the head in bold, the metrics as a list, then the notes as a list.
    pub(crate) fn markdown(&self) -> String {
        let mut s = format!("**verdict**: {}:\n\n", self.head);
        for l in &self.metrics {
            s.push_str(&format!("- {l}\n"));
        }
        if !self.notes.is_empty() {
            s.push('\n');
            for l in &self.notes {
                s.push_str(&format!("- {l}\n"));
            }
        }
        s
    }
}

/// The verdict of every set compared with the baseline.
pub(crate) fn verdicts(a: &Analysis) -> Vec<Said> {
    a.comparisons
        .iter()
        .map(|c| {
            let (new, base) = short_labels(&c.label, &c.baseline);
            let runs = if c.runs.0 > 0 && c.runs.1 > 0 {
                let len = a.run_secs.map_or(String::new(), |s| {
                    format!(" of {} s", latlab_core::stats::cfmt::g(s, 2))
                });
                let unit = if a.boots { "boots" } else { "runs" };
                format!("{}+{} {unit}{len}", c.runs.0, c.runs.1)
            } else {
                String::new()
            };
            let shown = stated(c, &a.headline);
            let mut metrics: Vec<String> = shown
                .iter()
                .map(|m| metric_line(m, &a.settings.unit, &runs))
                .collect();
            if metrics.is_empty() {
                metrics.push("nothing compared".into());
            }
            let notes = shown.iter().filter_map(|m| explanation(m)).collect();
            let lead = a
                .conditions
                .as_deref()
                .map_or(String::new(), |c| format!("{c}; "));
            Said {
                head: format!("{lead}{new} vs {base}"),
                metrics,
                notes,
            }
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
        // An absurd value stays readable (it printed as 301 digits).
        assert_eq!(sig(1e300), "1.000e300");
        assert_eq!(at(-2.5e17, 0), "-2.500e17");
        assert_eq!(sig(999_999_999_999.0), "999999999999");
        assert_eq!(sig(1e-300), "1.000e-300");
        assert_eq!(sig(0.00012344), "0.0001234");
        assert_eq!(p_text(0.2871), "p = 0.29");
        assert_eq!(p_text(1.0), "p > 0.99");
        assert_eq!(p_text(0.995), "p > 0.99");
        assert_eq!(p_text(1e-9), "p < 1e-6");
        assert_eq!(p_value(0.0012), "0.0012");
        assert_eq!(p_value(0.047), "0.047");
        assert_eq!(p_value(3.4e-5), "3.4e-5");
        assert_eq!(p_value(2e-4), "2e-4");
    }

    /// The distribution test's figure is a probability: said as one, not as `1 → 0, 0 %`.
    #[test]
    fn a_decided_distribution_test_is_said_as_a_probability() {
        let mut m = row(0.5, 0.0, None);
        m.metric = "distribution".into();
        m.verdict = Verdict::Better;
        m.method = "mann-whitney".into();
        let s = metric_line(&m, "us", "");
        assert!(
            s.starts_with("distribution P(set > base) 0.000, better"),
            "{s}"
        );
        assert!(!s.contains('%') && !s.contains('→'), "{s}");
    }

    fn row(base: f64, value: f64, ci: Option<(f64, f64)>) -> MetricCmp {
        MetricCmp {
            metric: "p99".into(),
            base,
            value,
            diff: value - base,
            ci,
            change_pct: (value - base) / base * 100.0,
            change_ci: None,
            p_adjusted: None,
            ci_level: None,
            note: None,
            to_decide: None,
            method: String::new(),
            verdict: Verdict::NoDifferenceProven,
        }
    }

    /// The issue's rows: `130 110 -10` and `20 20 0 ... -10 %` no longer happen: the shown
    /// baseline less the shown value is the shown difference, and a change shows.
    #[test]
    fn columns_add_up_as_shown() {
        for (b, v, ci) in [
            (134.6, 114.4, Some((-60.0, 20.0))),
            (20.4, 18.4, Some((-9.0, 5.0))),
            (2412.0, 1389.0, Some((-5800.0, 3800.0))),
            (14.04, 13.86, Some((-1.0, 0.6))),
            (17.2, 15.5, None),
            (0.0441, 0.0474, Some((-0.1, 0.1))),
        ] {
            let [sb, sv, sd, _] = columns(&row(b, v, ci));
            let (pb, pv, pd): (f64, f64, f64) = (
                sb.parse().unwrap(),
                sv.parse().unwrap(),
                sd.parse().unwrap(),
            );
            assert!(
                ((pv - pb) - pd).abs() < 1e-9 * pb.abs().max(1.0),
                "{b} {v}: {sb} {sv} {sd}"
            );
            assert!(
                !sd.trim_start_matches('-')
                    .chars()
                    .all(|c| c == '0' || c == '.'),
                "{b} {v}: {sb} {sv} {sd}"
            );
            assert!(sb != sv, "{b} {v}: {sb} {sv}");
        }
        assert_eq!(
            columns(&row(20.4, 18.4, Some((-9.0, 5.0))))[..3],
            ["20.4", "18.4", "-2.0"]
        );
    }

    #[test]
    fn a_relative_interval_is_a_ratio_and_never_passes_minus_100() {
        let mut m = row(2400.0, 1400.0, Some((-5800.0, 3800.0)));
        m.change_ci = Some((-99.4, 160.0));
        let t = change_text(&m);
        assert_eq!(t, "-42 % [-99 %, +160 %]");
        m.change_ci = None;
        assert_eq!(change_text(&m), "-42 %");
        // Two runs a level, one replicate near 0: the upper end is no figure.
        m.change_ci = Some((-99.4, 2.195e154));
        assert_eq!(change_text(&m), "-42 % [-99 %, unbounded]");
        m.change_ci = Some((-20.0, 9999.0));
        assert_eq!(change_text(&m), "-42 % [-20 %, +9999 %]");
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
            change_ci: ci,
            p_adjusted: p,
            ci_level: ci.map(|_| 0.99),
            note: (v == Verdict::NotEstimable).then(|| "runs of 3000 samples, need 10 000".into()),
            to_decide: match v {
                Verdict::NotEstimable => Some("runs of 11 s would give it".into()),
                Verdict::NoDifferenceProven => Some("about 40 runs of each level would".into()),
                _ => None,
            },
            method: "Welch's t on the logs of the runs' p99".into(),
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
                m("p99", Verdict::Worse, Some((6.0, 23.0)), Some(0.0031)),
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
            conditions: Some("cyclic -t 1 -a 1 -i 1ms, 5 x 3 s runs per level".into()),
            boots: false,
        };
        let said = verdicts(&a);
        assert_eq!(said.len(), 1);
        assert_eq!(
            said[0].head,
            "cyclic -t 1 -a 1 -i 1ms, 5 x 3 s runs per level; kvm-clock vs tsc"
        );
        // One line per metric, the headline first: baseline → value with the unit, the
        // change and its interval, the verdict and the runs it rests on.
        assert_eq!(
            said[0].metrics,
            [
                "p99 100 → 114 µs (+14 % [+6 %, +23 %]), worse (5+5 runs of 3 s; Welch's t on \
                 the logs of per-run figures; Holm-adjusted p = 0.0031)",
                "p50 100.0 → 114.0 µs (+14.0 % [-1.0 %, +3.0 %]), no difference proven (5+5 runs \
                 of 3 s; Holm-adjusted p = 0.5)",
                "p99.9 not estimable: runs of 3000 samples, need 10 000",
            ]
        );
        // What would decide the open ones, after them.
        assert_eq!(
            said[0].notes,
            [
                "p50: about 40 runs of each level would",
                "p99.9: runs of 11 s would give it"
            ]
        );
        let text = said[0].text();
        assert!(text.starts_with("verdict: cyclic -t 1"), "{text}");
        assert_eq!(text.lines().count(), 6, "{text}");
        assert!(text.lines().skip(1).all(|l| l.starts_with("  ")), "{text}");
        let md = said[0].markdown();
        assert!(md.starts_with("**verdict**: cyclic"), "{md}");
        assert_eq!(md.matches("\n- ").count(), 5, "{md}");
    }
}
