//! Judging a requirement on counted runs: exact binomial bounds of the pooled exceedance rate,
//! a t bound across runs' own rates (so run-to-run variation counts), and from the two the
//! verdict met / violated / undecided, with how much more data would decide. `max<T` is judged
//! on the runs' exact maxima instead: met when every one is below T, violated when one is not.

use super::bounds::{rate_lower, rate_upper};
use super::requirement::Requirement;

/// One run, counted.
#[derive(Debug, Clone)]
pub struct RunCount {
    /// Where it came from (file or run:ID).
    pub name: String,
    /// Samples.
    pub n: u64,
    /// Samples certainly counted as events (their whole histogram bucket is past the threshold).
    pub(crate) m_lo: u64,
    /// Samples possibly events (their bucket reaches past the threshold).
    pub(crate) m_hi: u64,
    /// Seconds the run measured.
    pub duration_s: f64,
    /// Its exact maximum, ns.
    pub max_ns: u64,
}

/// The outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The rate's upper bound is below the limit.
    Met,
    /// The rate's lower bound is above the limit.
    Violated,
    /// Neither.
    Undecided,
}

/// Everything the verdict rests on.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Judgement {
    /// Samples in all runs.
    pub n: u64,
    /// Events (lower and upper count within histogram resolution).
    pub m: (u64, u64),
    /// Exact binomial (Clopper–Pearson) one-sided bounds of the pooled rate.
    pub pooled: (f64, f64),
    /// One-sided t bounds of the mean of the runs' rates (None with one run).
    pub across_runs: Option<(f64, f64)>,
    /// The bounds used: the wider of the two.
    pub bounds: (f64, f64),
    /// The outcome on the data (before the single-run rule).
    pub outcome: Outcome,
    /// Why a single run's outcome is not a verdict (None when it is).
    pub single_run: Option<String>,
    /// What would decide an undecided requirement.
    pub to_decide: Option<String>,
}

impl Judgement {
    /// The verdict: the outcome, or undecided when it rests on one run not assumed independent.
    pub fn verdict(&self) -> Outcome {
        if self.single_run.is_some() {
            Outcome::Undecided
        } else {
            self.outcome
        }
    }
}

fn mean_sd(v: &[f64]) -> (f64, f64) {
    let k = v.len() as f64;
    let m = v.iter().sum::<f64>() / k;
    let ss: f64 = v.iter().map(|x| (x - m) * (x - m)).sum();
    (m, (ss / (k - 1.0)).sqrt())
}

/// One-sided t quantile at `conf` with `df` degrees of freedom.
fn t_one_sided(conf: f64, df: f64) -> f64 {
    let q = latlab_core::stats::student::t_quantile(conf, df);
    if q.is_nan() {
        f64::INFINITY
    } else {
        q
    }
}

/// The single-run rule: one run's outcome is not a verdict unless samples are assumed
/// independent.
fn single_run_rule(runs: usize, outcome: Outcome, assume_independent: bool) -> Option<String> {
    (runs == 1 && !assume_independent).then(|| {
        let what = if outcome == Outcome::Undecided {
            "no verdict".to_string()
        } else {
            format!("its outcome ({}) is not a verdict", text(outcome))
        };
        format!(
            "one run: its samples are not independent (spikes come in bursts) and run-to-run \
             variation is unknown, so {what}; gate two or more runs, or pass \
             --assume-independent-samples to accept it"
        )
    })
}

/// `max<T`: met when every run's exact maximum is below T, violated when any run's is at or
/// above it (the counts: runs at or above T).
fn judge_max(t: u64, runs: &[RunCount], assume_independent: bool) -> Judgement {
    let n: u64 = runs.iter().map(|r| r.n).sum();
    let over = runs.iter().filter(|r| r.max_ns >= t).count() as u64;
    let outcome = if over > 0 {
        Outcome::Violated
    } else {
        Outcome::Met
    };
    let single_run = single_run_rule(runs.len(), outcome, assume_independent);
    Judgement {
        n,
        m: (over, over),
        pooled: (0.0, 0.0),
        across_runs: None,
        bounds: (0.0, 0.0),
        outcome,
        to_decide: single_run
            .as_ref()
            .map(|_| "a second run (or more): a maximum is judged run by run".to_string()),
        single_run,
    }
}

/// Judges `req` on `runs` at confidence `conf` (e.g. 0.95).
pub fn judge(
    req: &Requirement,
    runs: &[RunCount],
    conf: f64,
    assume_independent: bool,
) -> Judgement {
    if let super::requirement::Event::Max(t) = req.event {
        return judge_max(t, runs, assume_independent);
    }
    let n: u64 = runs.iter().map(|r| r.n).sum();
    let m_lo: u64 = runs.iter().map(|r| r.m_lo).sum();
    let m_hi: u64 = runs.iter().map(|r| r.m_hi).sum();
    let pooled = (rate_lower(m_lo, n, conf), rate_upper(m_hi, n, conf));
    let across_runs = (runs.len() >= 2).then(|| {
        let t = t_one_sided(conf, runs.len() as f64 - 1.0);
        let k = (runs.len() as f64).sqrt();
        let lo: Vec<f64> = runs.iter().map(|r| r.m_lo as f64 / r.n as f64).collect();
        let hi: Vec<f64> = runs.iter().map(|r| r.m_hi as f64 / r.n as f64).collect();
        let ((ml, sl), (mh, sh)) = (mean_sd(&lo), mean_sd(&hi));
        ((ml - t * sl / k).max(0.0), (mh + t * sh / k).min(1.0))
    });
    let bounds = across_runs.map_or(pooled, |(l, h)| (pooled.0.min(l), pooled.1.max(h)));
    let outcome = if bounds.1 < req.limit {
        Outcome::Met
    } else if bounds.0 > req.limit {
        Outcome::Violated
    } else {
        Outcome::Undecided
    };
    let single_run = single_run_rule(runs.len(), outcome, assume_independent);
    let mut j = Judgement {
        n,
        m: (m_lo, m_hi),
        pooled,
        across_runs,
        bounds,
        outcome,
        single_run,
        to_decide: None,
    };
    if outcome == Outcome::Undecided {
        j.to_decide = Some(to_decide(req, runs, &j, conf));
    }
    j
}

/// Outcome as a word.
pub fn text(o: Outcome) -> &'static str {
    match o {
        Outcome::Met => "met",
        Outcome::Violated => "violated",
        Outcome::Undecided => "undecided",
    }
}

/// The smallest sample count, at the observed rate `p`, whose bound decides against `limit`
/// (None when no count does: the rate equals the limit).
pub fn samples_to_decide(p: f64, limit: f64, conf: f64) -> Option<u64> {
    let decides = |n: u64| -> bool {
        if p < limit {
            rate_upper((p * n as f64).round() as u64, n, conf) < limit
        } else {
            rate_lower((p * n as f64).round() as u64, n, conf) > limit
        }
    };
    if p == limit {
        return None;
    }
    // The normal approximation says where to look; far beyond 10¹² samples it is the answer
    // (exact bounds there cost too much and no run is that long).
    let z = 1.6449 + 3.0;
    let guess = z * z * p.max(limit) / ((p - limit) * (p - limit));
    if guess > 1e12 {
        return Some(guess as u64);
    }
    let mut hi = ((guess / 64.0) as u64).max(1);
    while !decides(hi) {
        hi = hi.checked_mul(2).filter(|&h| h < 1 << 50)?;
    }
    let mut lo = hi / 2;
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if decides(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Some(hi)
}

/// The runs' sample rate, phrased for one run or for several (`at this run's 1991
/// samples/s`, `at the runs' 1991 samples/s each`).
fn rate_text(runs: &[RunCount]) -> Option<(f64, String)> {
    let secs: f64 = runs.iter().map(|r| r.duration_s).sum();
    if secs.is_nan() || secs <= 0.0 {
        return None;
    }
    let n: u64 = runs.iter().map(|r| r.n).sum();
    let rate = n as f64 / secs;
    let shown = if rate >= 10.0 {
        format!("{rate:.0}")
    } else {
        latlab_core::stats::cfmt::g(rate, 3)
    };
    Some((
        rate,
        if runs.len() == 1 {
            format!("at this run's {shown} samples/s")
        } else {
            format!("at the runs' {shown} samples/s each (on average)")
        },
    ))
}

/// The fewest runs like these (same mean and spread of their rates) whose t bound across runs
/// would decide, up to 1000.
fn runs_to_decide(req: &Requirement, runs: &[RunCount], conf: f64) -> Option<usize> {
    let rates: Vec<f64> = runs
        .iter()
        .map(|r| (r.m_lo + r.m_hi) as f64 / 2.0 / r.n.max(1) as f64)
        .collect();
    if rates.len() < 2 {
        return None;
    }
    let (m, sd) = mean_sd(&rates);
    (rates.len()..=1000).find(|&k| {
        let half = t_one_sided(conf, k as f64 - 1.0) * sd / (k as f64).sqrt();
        if m < req.limit {
            m + half < req.limit
        } else {
            m - half > req.limit
        }
    })
}

fn to_decide(req: &Requirement, runs: &[RunCount], j: &Judgement, conf: f64) -> String {
    let p = (j.m.0 + j.m.1) as f64 / 2.0 / j.n as f64;
    let spread = runs.len() >= 2
        && j.across_runs
            .is_some_and(|a| a.1 > j.pooled.1 || a.0 < j.pooled.0);
    let more_runs = |s: &mut String| match runs_to_decide(req, runs, conf) {
        Some(k) => s.push_str(&format!(
            "; {k} runs like these in all ({} more) would decide",
            k.saturating_sub(runs.len())
        )),
        None => s.push_str(
            "; the runs' rates straddle the limit: more runs narrow the bound, but no number \
             of runs like these is sure to decide",
        ),
    };
    let mut s = match samples_to_decide(p, req.limit, conf) {
        None => format!(
            "the observed rate equals the limit {}: no amount of data at this rate decides",
            req.limit
        ),
        Some(need) if need <= j.n => {
            let mut s = format!(
                "the {} samples alone would decide (the pooled bound needs {need}), but the \
                 runs' rates spread, so the bound across runs stays open",
                j.n
            );
            more_runs(&mut s);
            return s;
        }
        Some(need) => {
            let more = need - j.n;
            let at = rate_text(runs).map_or(String::new(), |(rate, phrase)| {
                let secs = more as f64 / rate;
                if runs.len() == 1 {
                    format!(
                        " (about {} s more {phrase})",
                        latlab_core::stats::cfmt::g(secs, 3)
                    )
                } else {
                    format!(
                        " (about {} s more per run {phrase}, or {} more runs as long as these)",
                        latlab_core::stats::cfmt::g(secs / runs.len() as f64, 3),
                        (more as f64 / (j.n as f64 / runs.len() as f64)).ceil()
                    )
                }
            });
            format!("about {more} more samples at the observed rate {p:.3e}{at}")
        }
    };
    if spread {
        s.push_str("; the runs' rates spread, so more runs narrow the bound too");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rc(n: u64, m: u64) -> RunCount {
        RunCount {
            name: "r".into(),
            n,
            m_lo: m,
            m_hi: m,
            duration_s: n as f64 / 1000.0,
            max_ns: 0,
        }
    }

    fn mx(max_ns: u64) -> RunCount {
        RunCount {
            max_ns,
            ..rc(1000, 0)
        }
    }

    #[test]
    fn max_is_met_only_when_every_run_is_below_and_violated_by_any() {
        let req = Requirement::parse("max<10ms").unwrap();
        let j = judge(&req, &[mx(9_999_999), mx(5_000_000)], 0.95, false);
        assert_eq!(j.verdict(), Outcome::Met);
        let j = judge(&req, &[mx(9_000_000), mx(10_000_001)], 0.95, false);
        assert_eq!(j.verdict(), Outcome::Violated);
        let j = judge(&req, &[mx(9_000_000), mx(10_000_000)], 0.95, false);
        assert_eq!(
            j.verdict(),
            Outcome::Violated,
            "a max at the limit is not below it"
        );
        // One run: the outcome is shown, the verdict waits for repeats (as for pQ).
        for m in [1_000, 20_000_000] {
            let j = judge(&req, &[mx(m)], 0.95, false);
            assert_eq!(j.verdict(), Outcome::Undecided);
            assert_ne!(j.outcome, Outcome::Undecided);
            assert!(j.single_run.is_some() && j.to_decide.is_some());
            assert_eq!(judge(&req, &[mx(m)], 0.95, true).verdict(), j.outcome);
        }
    }

    #[test]
    fn to_decide_is_a_whole_sentence_with_rates_per_run() {
        let req = Requirement::parse("p99.9<100us").unwrap();
        // A burst in one run: the pooled bound decides, the runs' spread does not.
        let j = judge(
            &req,
            &[rc(100_000, 0), rc(100_000, 150), rc(100_000, 0)],
            0.95,
            false,
        );
        let t = j.to_decide.unwrap();
        assert!(t.contains("samples alone would decide"), "{t}");
        assert!(
            t.contains("would decide") || t.contains("no number of runs"),
            "{t}"
        );
        assert!(!t.ends_with("would"), "{t}");
        // Several runs: the rate is per run, not "this run's".
        let j = judge(&req, &[rc(1000, 0), rc(1000, 1)], 0.95, false);
        let t = j.to_decide.unwrap();
        assert!(
            t.contains("per run") && t.contains("runs' 1000 samples/s each"),
            "{t}"
        );
        assert!(!t.contains("this run's"), "{t}");
        let j = judge(&req, &[rc(1000, 0)], 0.95, true);
        assert!(j.to_decide.unwrap().contains("this run's 1000 samples/s"));
    }

    #[test]
    fn three_outcomes() {
        let req = Requirement::parse("p99.9<100us").unwrap();
        // 0 of 3·10⁵ exceed: upper ≈ 1e-5 < 1e-3.
        let j = judge(
            &req,
            &[rc(100_000, 0), rc(100_000, 0), rc(100_000, 0)],
            0.95,
            false,
        );
        assert_eq!(j.verdict(), Outcome::Met);
        // 1 % exceed in every run: violated.
        let j = judge(&req, &[rc(100_000, 1000), rc(100_000, 1100)], 0.95, false);
        assert_eq!(j.verdict(), Outcome::Violated);
        // 1 of 2000: undecided, and it says how much more would decide.
        let j = judge(&req, &[rc(1000, 0), rc(1000, 1)], 0.95, false);
        assert_eq!(j.verdict(), Outcome::Undecided);
        assert!(
            j.to_decide.as_deref().unwrap().contains("more samples"),
            "{j:?}"
        );
        // One run: the outcome is shown, the verdict waits for repeats.
        let j = judge(&req, &[rc(300_000, 0)], 0.95, false);
        assert_eq!((j.outcome, j.verdict()), (Outcome::Met, Outcome::Undecided));
        let j = judge(&req, &[rc(300_000, 0)], 0.95, true);
        assert_eq!(j.verdict(), Outcome::Met);
    }

    #[test]
    fn a_burst_in_one_run_keeps_the_gate_open() {
        // 150 exceedances in one run, none in the others: pooled 150/3e5 = 5e-4 < 1e-3 would be
        // met, but the runs disagree and the t bound across them is wide.
        let req = Requirement::parse("p99.9<100us").unwrap();
        let j = judge(
            &req,
            &[rc(100_000, 0), rc(100_000, 150), rc(100_000, 0)],
            0.95,
            false,
        );
        assert!(j.pooled.1 < 1e-3);
        assert_eq!(j.verdict(), Outcome::Undecided);
    }

    #[test]
    fn planner_matches_the_rule_of_three() {
        // p99.99 with no exceedances: n ≥ ln(0.05)/ln(1 - 1e-4) = 29955.82.
        assert_eq!(samples_to_decide(0.0, 1e-4, 0.95), Some(29_956));
        assert_eq!(samples_to_decide(1e-4, 1e-4, 0.95), None);
    }
}
