//! The tail-aware comparison: per-set quantiles, quantile differences with bootstrap intervals,
//! Welch's t for the mean, Mann-Whitney U for the whole distribution, Holm–Bonferroni across
//! the comparisons with the baseline, and a verdict per metric.
//!
//! The run is the unit of replication: samples inside one run are autocorrelated and show
//! nothing of run-to-run variation. So sets of latency samples from latlab runs are compared
//! through per-run figures (Welch's t over each run's p50, p99, p99.9 and mean) when every set
//! has at least two runs; with one run on a side no difference is proven, unless the caller
//! assumes independent samples (`--assume-independent-samples`), which restores the
//! sample-level tests and says so.

use super::inputs::Source;
use latlab_core::stats::bootstrap::{percentile_interval, replicates};
use latlab_core::stats::dist::{min_n_for, Dist};
use latlab_core::stats::hypothesis::{holm, mann_whitney, welch, MannWhitney};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

/// Settings of one comparison.
#[derive(Debug, Clone, Serialize)]
pub struct Settings {
    /// Confidence level, e.g. 0.95.
    pub confidence: f64,
    /// Bootstrap replicates.
    pub replicates: usize,
    /// Seed of the bootstrap generator.
    pub seed: u64,
    /// When true, larger values are better (throughput); otherwise smaller (latency).
    pub higher_is_better: bool,
    /// Unit label of the values ("" when unknown).
    pub unit: String,
    /// Treat the samples of one run as independent replicates (the pre-0.2 behaviour).
    pub assume_independent: bool,
}

/// Summary of one set.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct SetSummary {
    /// Label.
    pub(crate) label: String,
    /// Samples.
    pub(crate) n: u64,
    /// Minimum.
    pub(crate) min: f64,
    /// Median.
    pub(crate) p50: f64,
    /// 90th percentile.
    pub(crate) p90: f64,
    /// 99th percentile.
    pub(crate) p99: f64,
    /// 99.9th percentile.
    pub(crate) p99_9: f64,
    /// Maximum.
    pub(crate) max: f64,
    /// Mean.
    pub(crate) mean: f64,
    /// Sample standard deviation.
    pub(crate) stddev: f64,
    /// Runs the set holds (0 when its values are replicates themselves).
    pub(crate) runs: usize,
}

/// better / worse / no difference proven / not estimable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Verdict {
    /// Significantly better.
    Better,
    /// Significantly worse.
    Worse,
    /// The interval contains no difference, or the test is not significant.
    NoDifferenceProven,
    /// Too few samples to estimate this metric.
    NotEstimable,
    /// One run on a side: run-to-run variation is unknown, so nothing is proven.
    RunVariationUnknown,
}

impl Verdict {
    /// Human text.
    pub(crate) fn text(self) -> &'static str {
        match self {
            Verdict::Better => "better",
            Verdict::Worse => "worse",
            Verdict::NoDifferenceProven => "no difference proven",
            Verdict::NotEstimable => "not estimable",
            Verdict::RunVariationUnknown => "not tested: 1 run",
        }
    }
}

/// One metric of one set against the baseline.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct MetricCmp {
    /// `p50`, `p99`, `p99.9`, `mean` or `distribution`.
    pub(crate) metric: String,
    /// Baseline value.
    pub(crate) base: f64,
    /// This set's value.
    pub(crate) value: f64,
    /// value − base.
    pub(crate) diff: f64,
    /// Interval of the difference (None for the distribution test).
    pub(crate) ci: Option<(f64, f64)>,
    /// Relative change, per cent of the baseline.
    pub(crate) change_pct: f64,
    /// Interval of the relative change in per cent, from an interval of the ratio value /
    /// baseline (never below −100 %); None where no ratio is defined (a figure ≤ 0).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) change_ci: Option<(f64, f64)>,
    /// Holm-adjusted p-value, for tests.
    pub(crate) p_adjusted: Option<f64>,
    /// Confidence of this row's interval (the Holm step that decided it; see `per_run`).
    pub(crate) ci_level: Option<f64>,
    /// Why the metric was not compared, when it was not (`runs of 3000 samples, need 10000`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) note: Option<String>,
    /// What would decide a metric left undecided (more runs, longer runs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) to_decide: Option<String>,
    /// How the figure was obtained.
    pub(crate) method: String,
    /// The verdict.
    pub(crate) verdict: Verdict,
}

/// One set against the baseline.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Comparison {
    /// This set.
    pub(crate) label: String,
    /// The baseline.
    pub(crate) baseline: String,
    /// Per metric.
    pub(crate) metrics: Vec<MetricCmp>,
    /// Runs on each side (baseline, this set), when the run is the unit.
    pub(crate) runs: (usize, usize),
}

/// The whole analysis.
#[derive(Debug, Clone, Serialize)]
pub struct Analysis {
    /// Settings used.
    pub(crate) settings: Settings,
    /// Confidence of each interval after the Bonferroni split over comparisons.
    pub(crate) interval_confidence: f64,
    /// Per set.
    pub(crate) sets: Vec<SetSummary>,
    /// Each non-baseline set against the baseline.
    pub(crate) comparisons: Vec<Comparison>,
    /// What one replicate is, and what was tested on it.
    pub(crate) replication: String,
    /// Warnings (small N and the like), one per condition, naming what it applies to.
    pub warnings: Vec<String>,
    /// The metric a verdict sentence leads with (`p99`).
    pub headline: String,
    /// The typical length of one run in seconds (the median), when known.
    pub(crate) run_secs: Option<f64>,
    /// The conditions the runs were measured under (measurement and its settings, runs x
    /// duration, load, kernel), which the verdict sentence starts with; None for value files.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) conditions: Option<String>,
    /// True when the replicates are boots (levels ran different kernels): the verdict counts
    /// boots, not runs.
    #[serde(skip)]
    pub(crate) boots: bool,
}

fn summary(s: &Source) -> SetSummary {
    let d = &s.dist;
    SetSummary {
        label: s.label.clone(),
        n: d.n(),
        min: d.min(),
        p50: d.quantile(0.5),
        p90: d.quantile(0.9),
        p99: d.quantile(0.99),
        p99_9: d.quantile(0.999),
        max: d.max(),
        mean: d.mean(),
        stddev: d.stddev(),
        runs: s.runs.len(),
    }
}

/// A generator for one set and quantile that does not depend on the set's position, so
/// swapping two sets mirrors every interval exactly.
fn stream(seed: u64, label: &str, q: f64) -> ChaCha8Rng {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in label.bytes().chain(q.to_bits().to_le_bytes()) {
        h = (h ^ b as u64).wrapping_mul(0x0100_0000_01b3);
    }
    ChaCha8Rng::seed_from_u64(seed ^ h)
}

fn verdict(lo: f64, hi: f64, higher_is_better: bool) -> Verdict {
    let up = lo > 0.0;
    let down = hi < 0.0;
    match (up, down, higher_is_better) {
        (true, _, false) | (_, true, true) => Verdict::Worse,
        (true, _, true) | (_, true, false) => Verdict::Better,
        _ => Verdict::NoDifferenceProven,
    }
}

/// Compares every set with the first sample by sample (`crate::compare::analyse` chooses this
/// path unless every set has repeated runs): one run on a side proves nothing unless samples are
/// assumed independent.
pub(crate) fn analyse_pooled(sources: &[Source], st: &Settings) -> Analysis {
    let runs: Vec<usize> = sources.iter().map(|s| s.runs.len()).collect();
    let repeated = runs.iter().all(|&r| r >= 2);
    let single = runs.contains(&1);
    let mut a = analyse_samples(sources, st);
    if st.assume_independent && (repeated || single) {
        a.replication =
            "each sample, ASSUMING samples are independent (--assume-independent-samples): \
            run-to-run variation and bursts inside a run are ignored, so p-values are optimistic"
                .into();
    } else if single {
        a.replication = "one run on a side: run-to-run variation is unknown, so no difference is \
            tested; repeat the runs (several results per set) or pass --assume-independent-samples"
            .into();
        for c in &mut a.comparisons {
            for m in &mut c.metrics {
                if m.verdict != Verdict::NotEstimable {
                    m.verdict = Verdict::RunVariationUnknown;
                }
            }
        }
    }
    a
}

/// Every value is one replicate (value files, one figure per run; or assumed independent).
fn analyse_samples(sources: &[Source], st: &Settings) -> Analysis {
    let k = sources.len().saturating_sub(1).max(1);
    let alpha = 1.0 - st.confidence;
    let ci_conf = 1.0 - alpha / k as f64;
    let base = &sources[0];
    let quantiles = [("p50", 0.5), ("p99", 0.99), ("p99.9", 0.999)];
    let warnings = short_warnings(sources, &quantiles);
    // Tests first, so their p-values can be Holm-adjusted across comparisons.
    let mws: Vec<_> = sources[1..]
        .iter()
        .map(|s| mann_whitney(&base.dist, &s.dist))
        .collect();
    let ws0: Vec<_> = sources[1..]
        .iter()
        .map(|s| welch(&base.dist, &s.dist, ci_conf))
        .collect();
    let mw_adj = holm(&mws.iter().map(|m| m.p).collect::<Vec<_>>());
    // Welch's intervals at the level of the Holm step that decided each test, so a verdict
    // and its interval always agree (see `holm_steps`).
    let steps = holm_steps(&ws0.iter().map(|w| w.p).collect::<Vec<_>>(), alpha);
    let w_adj: Vec<f64> = steps.iter().map(|s| s.0).collect();
    let w_levels: Vec<f64> = steps.iter().map(|s| s.1).collect();
    let ws: Vec<_> = sources[1..]
        .iter()
        .zip(&w_levels)
        .map(|(s, &l)| welch(&base.dist, &s.dist, l))
        .collect();
    let mut comparisons = Vec::new();
    for (i, s) in sources.iter().enumerate().skip(1) {
        let mut metrics = Vec::new();
        for (name, q) in quantiles {
            metrics.push(quantile_cmp(base, s, name, q, ci_conf, st));
        }
        let w = &ws[i - 1];
        let wv = decide(w_adj[i - 1], alpha, w.ci, w.diff, st.higher_is_better);
        metrics.push(MetricCmp {
            metric: "mean".into(),
            base: base.dist.mean(),
            value: s.dist.mean(),
            diff: w.diff,
            ci: Some(w.ci),
            change_pct: pct(w.diff, base.dist.mean()),
            change_ci: w.ratio_ci.map(pct_of_ratio),
            p_adjusted: Some(w_adj[i - 1]),
            ci_level: Some(w_levels[i - 1]),
            note: None,
            to_decide: None,
            method: format!(
                "Welch's t, df {:.1} (change: Fieller's interval of the ratio of means)",
                w.df
            ),
            verdict: wv,
        });
        metrics.push(distribution_cmp(
            base,
            s,
            &mws[i - 1],
            mw_adj[i - 1],
            alpha,
            st,
        ));
        comparisons.push(Comparison {
            label: s.label.clone(),
            baseline: base.label.clone(),
            metrics,
            runs: (base.runs.len(), s.runs.len()),
        });
    }
    Analysis {
        settings: st.clone(),
        interval_confidence: ci_conf,
        sets: sources.iter().map(summary).collect(),
        comparisons,
        replication: "each value".into(),
        warnings,
        headline: "p99".into(),
        run_secs: None,
        conditions: None,
        boots: false,
    }
}

/// One warning per quantile some set has too few values to estimate, naming every such set.
fn short_warnings(sources: &[Source], quantiles: &[(&str, f64)]) -> Vec<String> {
    let mut warnings = Vec::new();
    for &(name, q) in quantiles {
        let short: Vec<String> = sources
            .iter()
            .filter(|s| s.dist.n() < min_n_for(q))
            .map(|s| format!("{} ({})", s.label, s.dist.n()))
            .collect();
        if !short.is_empty() {
            warnings.push(format!(
                "{name} not estimable from fewer than {} values, neither shown nor compared: {}",
                thousands(min_n_for(q)),
                short.join(", ")
            ));
        }
    }
    warnings
}

/// One quantile of `s` against the baseline: a bootstrap interval of the difference and of
/// the ratio, or not estimable (with the values each side has and needs).
fn quantile_cmp(
    base: &Source,
    s: &Source,
    name: &str,
    q: f64,
    ci_conf: f64,
    st: &Settings,
) -> MetricCmp {
    let (bv, sv) = (base.dist.quantile(q), s.dist.quantile(q));
    let estimable = base.dist.n() >= min_n_for(q) && s.dist.n() >= min_n_for(q);
    let (ci, ratio, v) = if estimable {
        let (r, ratio) =
            quantile_diff_streams(&base.dist, &s.dist, q, ci_conf, st, &base.label, &s.label);
        (Some(r), ratio, verdict(r.0, r.1, st.higher_is_better))
    } else {
        (None, None, Verdict::NotEstimable)
    };
    MetricCmp {
        metric: name.into(),
        base: bv,
        value: sv,
        diff: sv - bv,
        ci,
        change_pct: pct(sv - bv, bv),
        change_ci: ratio.map(pct_of_ratio),
        p_adjusted: None,
        ci_level: ci.map(|_| ci_conf),
        note: (!estimable).then(|| {
            format!(
                "{} vs {} values, need {}",
                base.dist.n(),
                s.dist.n(),
                thousands(min_n_for(q))
            )
        }),
        method: format!(
            "bootstrap, {} replicates (change: percentile interval of the replicates' \
             ratio)",
            st.replicates
        ),
        to_decide: None,
        verdict: v,
    }
}

/// The whole distributions compared: Mann-Whitney's U, P(s > baseline), Holm-adjusted `p_adj`.
fn distribution_cmp(
    base: &Source,
    s: &Source,
    m: &MannWhitney,
    p_adj: f64,
    alpha: f64,
    st: &Settings,
) -> MetricCmp {
    let mv = if p_adj < alpha {
        Verdict::NoDifferenceProven.pick_sign(m.prob_b_greater - 0.5, st.higher_is_better)
    } else {
        Verdict::NoDifferenceProven
    };
    MetricCmp {
        metric: "distribution".into(),
        base: 0.5,
        value: m.prob_b_greater,
        diff: m.prob_b_greater - 0.5,
        ci: None,
        change_pct: 0.0,
        change_ci: None,
        p_adjusted: Some(p_adj),
        ci_level: None,
        note: None,
        to_decide: None,
        method: format!(
            "Mann-Whitney U {} ({}), P({} > {}) = {:.3}",
            m.u_b,
            if m.exact {
                "exact"
            } else {
                "normal approx., tie-corrected"
            },
            s.label,
            base.label,
            m.prob_b_greater
        ),
        verdict: mv,
    }
}

/// The summary of one set (shared with the per-run analysis).
pub(super) fn set_summary(s: &Source) -> SetSummary {
    summary(s)
}

impl Verdict {
    /// A significant result's direction: positive `delta` is worse unless higher is better.
    pub(super) fn pick_sign(self, delta: f64, higher_is_better: bool) -> Verdict {
        if delta == 0.0 {
            return Verdict::NoDifferenceProven;
        }
        if (delta > 0.0) != higher_is_better {
            Verdict::Worse
        } else {
            Verdict::Better
        }
    }
}

fn quantile_diff_streams(
    a: &Dist,
    b: &Dist,
    q: f64,
    conf: f64,
    st: &Settings,
    la: &str,
    lb: &str,
) -> ((f64, f64), Option<(f64, f64)>) {
    // Independent, position-free streams for each set: draw each set's replicates separately.
    let (mut ra, mut rb) = (stream(st.seed, la, q), stream(st.seed, lb, q));
    let qa = replicates(a, q, st.replicates, &mut ra);
    let qb = replicates(b, q, st.replicates, &mut rb);
    let diff = percentile_interval(qa.iter().zip(&qb).map(|(x, y)| y - x).collect(), conf);
    // The same replicates as ratios: positive figures only (a ratio of a 0 is undefined), and
    // a replicate's ratio is above 1 exactly when its difference is above 0, so the two
    // intervals always agree on the verdict.
    let positive = qa.iter().chain(&qb).all(|&x| x > 0.0);
    let ratio = positive
        .then(|| percentile_interval(qa.iter().zip(&qb).map(|(x, y)| y / x).collect(), conf));
    (diff, ratio)
}

/// A ratio interval as a change in per cent of the baseline.
pub(super) fn pct_of_ratio((lo, hi): (f64, f64)) -> (f64, f64) {
    ((lo - 1.0) * 100.0, (hi - 1.0) * 100.0)
}

/// `diff` in per cent of `base`; NaN (the difference is shown instead) unless both the
/// baseline and the new value are positive, nonnegative: a relative change of a baseline at
/// or below 0, or across 0, means nothing (it would read −201 % or "−199 % worse").
pub(super) fn pct(diff: f64, base: f64) -> f64 {
    if base > 0.0 && base + diff >= 0.0 {
        diff / base * 100.0
    } else {
        f64::NAN
    }
}

/// Holm's procedure at `alpha` over `p`, in the input order: for each test its Holm-adjusted
/// p-value and the confidence its interval must have to agree with the decision (the level of
/// the step that rejected it, or of the step where the procedure stopped). NaN p-values are
/// never rejected.
pub(crate) fn holm_steps(p: &[f64], alpha: f64) -> Vec<(f64, f64)> {
    let m = p.len();
    let mut idx: Vec<usize> = (0..m).collect();
    idx.sort_by(|&x, &y| {
        let key = |v: f64| if v.is_nan() { f64::INFINITY } else { v };
        key(p[x]).total_cmp(&key(p[y]))
    });
    let mut out = vec![(1.0, 1.0 - alpha); m];
    let mut running = 0f64;
    let mut stopped: Option<f64> = None;
    for (j, &i) in idx.iter().enumerate() {
        let k = (m - j) as f64;
        let pi = if p[i].is_nan() { 1.0 } else { p[i] };
        running = running.max((k * pi).min(1.0));
        let level = 1.0 - alpha / k;
        let rejected = stopped.is_none() && running < alpha;
        if !rejected && stopped.is_none() {
            stopped = Some(level);
        }
        out[i] = (
            running,
            if rejected {
                level
            } else {
                stopped.unwrap_or(level)
            },
        );
    }
    out
}

/// A verdict from an adjusted p-value and its interval: proven only when both say so.
pub(super) fn decide(
    adj: f64,
    alpha: f64,
    ci: (f64, f64),
    diff: f64,
    higher_is_better: bool,
) -> Verdict {
    if adj < alpha && (ci.0 > 0.0 || ci.1 < 0.0) {
        Verdict::NoDifferenceProven.pick_sign(diff, higher_is_better)
    } else {
        Verdict::NoDifferenceProven
    }
}

/// `10000` as `10 000` (a thin grouping people read at a glance).
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(' ');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::analyse;
    use proptest::prelude::*;

    fn src(label: &str, v: Vec<f64>) -> Source {
        Source {
            label: label.into(),
            dist: Dist::from_values(v),
            from_json: false,
            runs: Vec::new(),
            info: Vec::new(),
        }
    }

    #[test]
    fn a_change_in_per_cent_needs_a_positive_baseline_and_never_passes_minus_100() {
        assert_eq!(pct(-50.0, 100.0), -50.0);
        assert_eq!(pct(-100.0, 100.0), -100.0);
        assert_eq!(pct(30.0, 10.0), 300.0);
        for (diff, base) in [(-201.0, 100.0), (1.0, 0.0), (2.0, -1.0), (-1.0, -1.0)] {
            assert!(pct(diff, base).is_nan(), "{diff} of {base}");
        }
    }

    fn settings() -> Settings {
        Settings {
            confidence: 0.95,
            replicates: 2000,
            seed: 42,
            higher_is_better: false,
            unit: String::new(),
            assume_independent: false,
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]
        #[test]
        fn swapping_the_sets_flips_every_difference(
            a in proptest::collection::vec(0u32..500, 20..80),
            b in proptest::collection::vec(0u32..500, 20..80),
        ) {
            let a: Vec<f64> = a.into_iter().map(f64::from).collect();
            let b: Vec<f64> = b.into_iter().map(f64::from).collect();
            let ab = analyse(&[src("A", a.clone()), src("B", b.clone())], &settings());
            let ba = analyse(&[src("B", b), src("A", a)], &settings());
            for (x, y) in ab.comparisons[0].metrics.iter().zip(&ba.comparisons[0].metrics) {
                prop_assert_eq!(&x.metric, &y.metric);
                if x.metric == "distribution" {
                    prop_assert!((x.value - (1.0 - y.value)).abs() < 1e-12);
                } else {
                    prop_assert_eq!(x.diff, -y.diff);
                    if let (Some(c1), Some(c2)) = (x.ci, y.ci) {
                        prop_assert_eq!(c1, (-c2.1, -c2.0));
                    }
                }
                // The same p-value, up to rounding (the sums run in the other order).
                match (x.p_adjusted, y.p_adjusted) {
                    (Some(p), Some(q)) => prop_assert!((p - q).abs() <= 1e-12 * p.max(q), "{p} {q}"),
                    (p, q) => prop_assert_eq!(p, q),
                }
                let flipped = match y.verdict {
                    Verdict::Better => Verdict::Worse,
                    Verdict::Worse => Verdict::Better,
                    v => v,
                };
                prop_assert_eq!(x.verdict, flipped);
            }
        }
    }

    #[test]
    fn holm_is_applied_across_several_sets() {
        let base = src("base", (0..200).map(|i| (i % 50) as f64).collect());
        let same = src("same", (0..200).map(|i| ((i * 7) % 50) as f64).collect());
        let worse = src("worse", (0..200).map(|i| (i % 50) as f64 + 30.0).collect());
        let a = analyse(&[base, same, worse], &settings());
        assert!(a.interval_confidence > 0.97);
        let v = |c: usize, m: &str| {
            a.comparisons[c]
                .metrics
                .iter()
                .find(|x| x.metric == m)
                .unwrap()
                .verdict
        };
        assert_eq!(v(0, "p50"), Verdict::NoDifferenceProven);
        assert_eq!(v(1, "p50"), Verdict::Worse);
        assert_eq!(v(1, "distribution"), Verdict::Worse);
        assert_eq!(v(1, "mean"), Verdict::Worse);
    }
}
