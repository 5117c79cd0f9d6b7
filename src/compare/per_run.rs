//! Comparing sets of repeated runs with the run as the unit of replication: each run is reduced
//! to its own p50, p99, p99.9 and mean, and those per-run figures are compared with Welch's t,
//! so the variation between runs (which no single run shows) is part of every interval.

use super::analysis::{pct, set_summary, Analysis, Comparison, MetricCmp, Settings, Verdict};
use super::inputs::Source;
use crate::stats::dist::{min_n_for, Dist};
use crate::stats::hypothesis::{holm, welch};

/// The per-run figures compared: name and quantile (None: the mean).
const FIGURES: [(&str, Option<f64>); 4] = [
    ("p50", Some(0.5)),
    ("p99", Some(0.99)),
    ("p99.9", Some(0.999)),
    ("mean", None),
];

fn figure(d: &Dist, q: Option<f64>) -> f64 {
    q.map_or_else(|| d.mean(), |q| d.quantile(q))
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

/// Compares every set with the first through per-run figures (every set has ≥ 2 runs).
pub fn analyse(sources: &[Source], st: &Settings) -> Analysis {
    let k = sources.len().saturating_sub(1).max(1);
    let alpha = 1.0 - st.confidence;
    let ci_conf = 1.0 - alpha / k as f64;
    let mut warnings = Vec::new();
    let base = &sources[0];
    // Per figure: Welch's test of each set against the baseline, then Holm across sets.
    let mut rows: Vec<Vec<MetricCmp>> = vec![Vec::new(); sources.len() - 1];
    for (name, q) in FIGURES {
        let estimable = |s: &Source| q.is_none_or(|q| s.runs.iter().all(|r| r.n() >= min_n_for(q)));
        if let Some(q) = q {
            for s in sources.iter().filter(|s| !estimable(s)) {
                warnings.push(format!(
                    "{}: {name} of a run needs at least {} samples and some of its runs have fewer; not compared",
                    s.label,
                    min_n_for(q)
                ));
            }
        }
        let per: Vec<Vec<f64>> = sources
            .iter()
            .map(|s| s.runs.iter().map(|r| figure(r, q)).collect())
            .collect();
        let tests: Vec<_> = per[1..]
            .iter()
            .map(|v| {
                welch(
                    &Dist::from_values(per[0].clone()),
                    &Dist::from_values(v.clone()),
                    ci_conf,
                )
            })
            .collect();
        let adj = holm(&tests.iter().map(|w| w.p).collect::<Vec<_>>());
        for (i, s) in sources.iter().enumerate().skip(1) {
            let w = &tests[i - 1];
            let ok = estimable(base) && estimable(s);
            let verdict = if !ok {
                Verdict::NotEstimable
            } else if adj[i - 1] < alpha {
                Verdict::NoDifferenceProven.pick_sign(w.diff, st.higher_is_better)
            } else {
                Verdict::NoDifferenceProven
            };
            let (bv, sv) = (mean(&per[0]), mean(&per[i]));
            rows[i - 1].push(MetricCmp {
                metric: name.into(),
                base: bv,
                value: sv,
                diff: w.diff,
                ci: ok.then_some(w.ci),
                change_pct: pct(w.diff, bv),
                p_adjusted: ok.then_some(adj[i - 1]),
                method: format!(
                    "Welch's t over runs' {name} ({} vs {} runs), df {:.1}",
                    base.runs.len(),
                    s.runs.len(),
                    w.df
                ),
                verdict,
            });
        }
    }
    let comparisons = sources[1..]
        .iter()
        .zip(rows)
        .map(|(s, metrics)| Comparison {
            label: s.label.clone(),
            baseline: base.label.clone(),
            metrics,
        })
        .collect();
    Analysis {
        settings: st.clone(),
        interval_confidence: ci_conf,
        sets: sources.iter().map(set_summary).collect(),
        comparisons,
        replication: "the run: each run's p50, p99, p99.9 and mean, compared across runs with \
            Welch's t (baseline and value columns are means of the per-run figures)"
            .into(),
        warnings,
    }
}

#[cfg(test)]
mod tests {
    use super::super::analysis::analyse as analyse_any;
    use super::*;
    use rand::{RngExt, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    fn settings(assume_independent: bool, replicates: usize) -> Settings {
        Settings {
            confidence: 0.95,
            replicates,
            seed: 3,
            higher_is_better: false,
            unit: "us".into(),
            assume_independent,
        }
    }

    /// One synthetic run: a run-level offset (what changes from boot to boot), exponential
    /// jitter, and bursts of slow samples (what makes samples inside a run dependent).
    fn run(rng: &mut ChaCha8Rng, n: usize, shift: f64) -> Dist {
        let offset = 3.0 * (rng.random::<f64>() - 0.5) * 2.0;
        let mut v = Vec::with_capacity(n);
        let mut burst = 0;
        for _ in 0..n {
            if burst == 0 && rng.random::<f64>() < 0.002 {
                burst = 30;
            }
            let spike = if burst > 0 {
                burst -= 1;
                40.0
            } else {
                0.0
            };
            let jitter = -5.0 * (1.0 - rng.random::<f64>()).ln();
            v.push((50.0 + offset + shift + jitter + spike).round());
        }
        Dist::from_values(v)
    }

    fn set(label: &str, runs: Vec<Dist>) -> Source {
        Source {
            label: label.into(),
            dist: Dist::merge(&runs),
            from_json: true,
            runs,
        }
    }

    fn proven(a: &Analysis) -> (usize, usize) {
        let m = a.comparisons.iter().flat_map(|c| &c.metrics);
        let tested = m
            .clone()
            .filter(|m| m.verdict != Verdict::NotEstimable)
            .count();
        let hits = m
            .filter(|m| matches!(m.verdict, Verdict::Better | Verdict::Worse))
            .count();
        (hits, tested)
    }

    #[test]
    fn identical_runs_prove_differences_at_most_at_the_nominal_rate() {
        let mut rng = ChaCha8Rng::seed_from_u64(14);
        let (mut hits, mut tests) = (0, 0);
        for _ in 0..60 {
            let runs: Vec<Dist> = (0..12).map(|_| run(&mut rng, 3000, 0.0)).collect();
            let a = analyse_any(
                &[set("A", runs[..6].to_vec()), set("B", runs[6..].to_vec())],
                &settings(false, 200),
            );
            assert!(a.replication.starts_with("the run"));
            let (h, t) = proven(&a);
            hits += h;
            tests += t;
        }
        let rate = hits as f64 / tests as f64;
        assert_eq!(
            tests,
            60 * 3,
            "p50, p99 and mean are tested; p99.9 is not estimable"
        );
        assert!(rate <= 0.05, "{hits} of {tests} proven");
    }

    #[test]
    fn assuming_independent_samples_proves_what_is_not_there() {
        let mut rng = ChaCha8Rng::seed_from_u64(15);
        let (mut hits, mut tests) = (0, 0);
        for _ in 0..6 {
            let a = analyse_any(
                &[
                    set("A", vec![run(&mut rng, 3000, 0.0)]),
                    set("B", vec![run(&mut rng, 3000, 0.0)]),
                ],
                &settings(true, 200),
            );
            assert!(a.replication.contains("ASSUMING"));
            let (h, t) = proven(&a);
            hits += h;
            tests += t;
        }
        assert!(hits as f64 / tests as f64 > 0.3, "{hits} of {tests}");
    }

    #[test]
    fn one_run_a_side_proves_nothing() {
        let mut rng = ChaCha8Rng::seed_from_u64(16);
        let a = analyse_any(
            &[
                set("A", vec![run(&mut rng, 3000, 0.0)]),
                set("B", vec![run(&mut rng, 3000, 30.0)]),
            ],
            &settings(false, 200),
        );
        assert!(a.replication.contains("run-to-run variation is unknown"));
        assert_eq!(proven(&a).0, 0);
        assert!(a.comparisons[0]
            .metrics
            .iter()
            .any(|m| m.verdict == Verdict::RunVariationUnknown));
    }

    #[test]
    fn a_real_shift_is_still_found() {
        let mut rng = ChaCha8Rng::seed_from_u64(17);
        let base: Vec<Dist> = (0..6).map(|_| run(&mut rng, 3000, 0.0)).collect();
        let slow: Vec<Dist> = (0..6).map(|_| run(&mut rng, 3000, 8.0)).collect();
        let a = analyse_any(&[set("A", base), set("B", slow)], &settings(false, 200));
        for m in &a.comparisons[0].metrics {
            if m.metric != "p99.9" {
                assert_eq!(m.verdict, Verdict::Worse, "{}", m.metric);
            }
        }
    }
}
