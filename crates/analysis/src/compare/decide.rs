//! What would decide a metric a comparison left open: how many runs of each level would show a
//! change of the size observed (at the runs' own spread), or how long each run must be for a
//! percentile to be estimable at all. Said beside the verdict, so "no difference proven" and
//! "not estimable" always come with the way out.

use super::inputs::Source;
use latlab_core::stats::dist::Dist;
use statrs::distribution::{ContinuousCDF, Normal, StudentsT};

/// The share of a run's planned samples kept in reserve for overruns when sizing a run: runs
/// under load here lost up to 1 % of their wake-ups to overruns; 5 % leaves room.
pub const OVERRUN_RESERVE: f64 = 0.05;

/// Runs of each level that would show the observed change between per-run figures `b` and
/// `v` (on their logs when `log`) with 80 % power at the two-sided `level`, at the spread the
/// runs show: the t test's own quantiles at the degrees of freedom of that many runs (the
/// normal approximation promised 2 runs where 2 had just failed), and always more runs than
/// the comparison had (it was called because they did not decide). None when the runs show
/// no change or no spread.
pub(crate) fn runs_for(b: &[f64], v: &[f64], log: bool, level: f64) -> Option<String> {
    let tr = |x: &[f64]| -> Dist {
        Dist::from_values(x.iter().map(|&y| if log { y.ln() } else { y }).collect())
    };
    let (db, dv) = (tr(b), tr(v));
    let d = (dv.mean() - db.mean()).abs();
    let s2 = db.var() + dv.var();
    if !(d > 0.0 && s2 > 0.0 && d.is_finite() && s2.is_finite()) {
        return None;
    }
    if log && ((dv.mean() - db.mean()).exp() - 1.0).abs() < 0.005 {
        return Some(
            "the levels' runs show no change (under 0.5 %): no number of runs would prove one"
                .into(),
        );
    }
    let z = Normal::new(0.0, 1.0).ok()?;
    let k = z.inverse_cdf(1.0 - (1.0 - level) / 2.0) + z.inverse_cdf(0.8);
    let need = |k: f64| (k * k * s2 / (d * d)).ceil().max(2.0);
    let mut n = need(k);
    // n runs of each level: a t test of 2n - 2 degrees of freedom. From the normal count up
    // (more runs, more degrees of freedom, smaller quantiles): the first count that does not
    // grow is kept, erring towards more runs.
    for _ in 0..30 {
        if n > 1000.0 {
            break;
        }
        let t = StudentsT::new(0.0, 1.0, 2.0 * n - 2.0).ok()?;
        let next = need(t.inverse_cdf(1.0 - (1.0 - level) / 2.0) + t.inverse_cdf(0.8));
        if next <= n {
            break;
        }
        n = next;
    }
    let n = n.max(b.len().max(v.len()) as f64 + 1.0);
    let size = if log {
        format!("{:+.0} %", ((dv.mean() - db.mean()).exp() - 1.0) * 100.0)
    } else {
        "this size".to_string()
    };
    Some(if n > 1000.0 {
        format!(
            "more than 1000 runs of each level to show a change of {size} against this \
             run-to-run spread"
        )
    } else {
        format!(
            "about {n} runs of each level would show a change of {size} (80 % power at this \
             run-to-run spread)"
        )
    })
}

/// How long each run must be for `need` samples: from the slowest sample rate of the sets'
/// runs (samples over measured seconds), with `OVERRUN_RESERVE` kept in reserve, in whole
/// seconds. None when no run's length is known.
pub(crate) fn duration_for(need: u64, sets: [&Source; 2]) -> Option<String> {
    let rate = sets
        .iter()
        .flat_map(|s| {
            s.runs
                .iter()
                .zip(&s.info)
                .filter(|(_, i)| i.secs > 0.0)
                .map(|(d, i)| d.n() as f64 / i.secs)
        })
        .filter(|r| *r > 0.0 && r.is_finite())
        .fold(f64::INFINITY, f64::min);
    if !rate.is_finite() {
        return None;
    }
    let secs = seconds_for(need, rate);
    Some(format!(
        "runs of {secs} s would give it (at {} samples/s, {} % kept for overruns)",
        latlab_core::stats::cfmt::g(rate, 4),
        OVERRUN_RESERVE * 100.0
    ))
}

/// Whole seconds a run at `rate` samples/s needs for `need` samples with the overrun reserve.
pub fn seconds_for(need: u64, rate: f64) -> u64 {
    (need as f64 / (rate * (1.0 - OVERRUN_RESERVE))).ceil() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clear_change_needs_few_runs_and_a_small_one_many() {
        let b = [10.0, 11.0, 9.5, 10.5, 10.2];
        let big: Vec<f64> = b.iter().map(|x| x * 1.5).collect();
        let small: Vec<f64> = b.iter().map(|x| x * 1.01).collect();
        let few = runs_for(&b, &big, true, 0.95).unwrap();
        assert!(
            few.contains("about 6 runs") && few.contains("+50 %"),
            "{few}"
        );
        // Two runs a side that did not decide are never told that two would.
        let two = runs_for(&[10.0, 13.6], &[12.5, 13.6], true, 0.95).unwrap();
        let n: f64 = two
            .split_whitespace()
            .nth(1)
            .and_then(|w| w.parse().ok())
            .unwrap_or_else(|| panic!("{two}"));
        assert!(n >= 3.0, "{two}");
        let many = runs_for(&b, &[10.1, 11.1, 9.6, 10.6, 10.3], true, 0.95).unwrap();
        assert!(many.contains("runs of each level"), "{many}");
        let none = runs_for(&b, &[10.01, 11.0, 9.5, 10.5, 10.2], true, 0.95).unwrap();
        assert!(none.contains("no number of runs"), "{none}");
        assert!(runs_for(&b, &small, true, 0.95).unwrap().contains("+1 %"));
        assert_eq!(runs_for(&b, &b, true, 0.95), None);
    }

    #[test]
    fn ten_thousand_samples_at_a_kilohertz_need_eleven_seconds() {
        assert_eq!(seconds_for(10_000, 1000.0), 11);
        assert_eq!(seconds_for(10_000, 992.5), 11);
        assert_eq!(seconds_for(1000, 1000.0), 2);
    }
}
