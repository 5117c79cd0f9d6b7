//! Exact binomial bounds for a gate: Clopper–Pearson bounds of an exceedance rate (the rule of
//! three falls out for zero exceedances) and order-statistic ranks bounding a quantile. The
//! regularised incomplete beta function is evaluated here with enough continued-fraction terms
//! for the 10⁸ samples of an hour-long run (statrs stops at 140 terms).

use statrs::function::gamma::ln_gamma;

/// I_x(a, b), the regularised incomplete beta function (a, b > 0; x in [0, 1]).
pub(crate) fn beta_reg(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let ln_front = ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (-x).ln_1p();
    if x < (a + 1.0) / (a + b + 2.0) {
        (ln_front.exp() * cont_frac(a, b, x) / a).clamp(0.0, 1.0)
    } else {
        (1.0 - ln_front.exp() * cont_frac(b, a, 1.0 - x) / b).clamp(0.0, 1.0)
    }
}

/// Lentz's evaluation of the incomplete beta continued fraction.
fn cont_frac(a: f64, b: f64, x: f64) -> f64 {
    const TINY: f64 = 1e-300;
    let (qab, qap, qam) = (a + b, a + 1.0, a - 1.0);
    let mut c = 1.0;
    let mut d = 1.0 - qab * x / qap;
    if d.abs() < TINY {
        d = TINY;
    }
    d = 1.0 / d;
    let mut h = d;
    for m in 1..2_000_000u32 {
        let m = f64::from(m);
        let m2 = 2.0 * m;
        for aa in [
            m * (b - m) * x / ((qam + m2) * (a + m2)),
            -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2)),
        ] {
            d = 1.0 + aa * d;
            if d.abs() < TINY {
                d = TINY;
            }
            c = 1.0 + aa / c;
            if c.abs() < TINY {
                c = TINY;
            }
            d = 1.0 / d;
            h *= d * c;
        }
        if (d * c - 1.0).abs() < 1e-15 {
            break;
        }
    }
    h
}

/// P(Binomial(n, p) ≤ k).
pub(crate) fn binom_cdf(k: u64, n: u64, p: f64) -> f64 {
    if k >= n {
        return 1.0;
    }
    // P(X ≤ k) = I_{1-p}(n - k, k + 1), computed as 1 - I_p(k + 1, n - k) for small p.
    1.0 - beta_reg(k as f64 + 1.0, (n - k) as f64, p)
}

/// The p in (lo, hi) where the decreasing `f` crosses `target`, by bisection on log p.
fn solve_decreasing(f: impl Fn(f64) -> f64, target: f64) -> f64 {
    let (mut lo, mut hi) = (-745.0f64, 0.0f64);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if f(mid.exp()) > target {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    (0.5 * (lo + hi)).exp()
}

/// One-sided Clopper–Pearson upper bound of a rate at `conf` from `m` events in `n` trials
/// (for m = 0 it is 1 − (1 − conf)^(1/n), about 3/n at 95 %: the rule of three).
pub(crate) fn rate_upper(m: u64, n: u64, conf: f64) -> f64 {
    if n == 0 || m >= n {
        return 1.0;
    }
    if m == 0 {
        return -((1.0 - conf).ln() / n as f64).exp_m1();
    }
    solve_decreasing(|p| binom_cdf(m, n, p), 1.0 - conf)
}

/// One-sided Clopper–Pearson lower bound of a rate at `conf` from `m` events in `n` trials.
pub(crate) fn rate_lower(m: u64, n: u64, conf: f64) -> f64 {
    if n == 0 || m == 0 {
        return 0.0;
    }
    if m >= n {
        // P(X = n | p) = p^n.
        return (1.0 - conf).powf(1.0 / n as f64);
    }
    // P(X ≥ m | p) = 1 - P(X ≤ m - 1 | p) rises with p; find where it reaches 1 - conf.
    solve_decreasing(|p| binom_cdf(m - 1, n, p), conf)
}

/// The smallest k with P(Binomial(n, p) ≤ k) ≥ level (the binomial quantile), by bisection.
pub(crate) fn binom_quantile(level: f64, n: u64, p: f64) -> u64 {
    let (mut lo, mut hi) = (0u64, n);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if binom_cdf(mid, n, p) >= level {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    lo
}

/// Ranks (1-based) of the order statistics bounding the q-quantile one-sidedly at `conf`:
/// X_(lower) ≤ q-quantile with probability ≥ conf, and q-quantile ≤ X_(upper) likewise. None
/// where n is too small for such a bound.
pub fn quantile_ranks(q: f64, n: u64, conf: f64) -> (Option<u64>, Option<u64>) {
    // P(X_(k) ≥ ξ_q) = P(Binomial(n, q) ≤ k - 1): the upper rank is the binomial quantile + 1.
    let up = binom_quantile(conf, n, q) + 1;
    // P(X_(j) ≤ ξ_q) = P(Binomial(n, q) ≥ j) = 1 - P(B ≤ j - 1) ≥ conf ⇔ P(B ≤ j - 1) ≤ 1 - conf.
    let below = binom_quantile(1.0 - conf, n, q);
    let lo = if binom_cdf(below, n, q) <= 1.0 - conf {
        below + 1
    } else {
        below
    };
    ((lo >= 1).then_some(lo), (up <= n).then_some(up))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(got: f64, want: f64, rel: f64) {
        assert!(
            (got - want).abs() <= rel * want.abs(),
            "got {got:e}, want {want:e}"
        );
    }

    /// (m, n, confidence, upper, lower) from scipy 1.17.1:
    /// `beta.ppf(c, m+1, n-m)` and `beta.ppf(1-c, m, n-m+1)`.
    const RATES: [(u64, u64, f64, f64, f64); 6] = [
        (0, 1_000_000, 0.95, 2.9957277863525433e-06, 0.0),
        (
            5,
            1_000_000,
            0.95,
            1.0513005929398719e-05,
            1.970151567618017e-06,
        ),
        (3, 20, 0.95, 0.3436638043142818, 0.04216940788577862),
        (
            100,
            72_000_000,
            0.99,
            1.7477587542184779e-06,
            1.086333254763663e-06,
        ),
        (
            7200,
            72_000_000,
            0.95,
            0.00010196026600882528,
            9.806954348777586e-05,
        ),
        (20, 20, 0.95, 1.0, 0.8608916593317348),
    ];

    #[test]
    fn clopper_pearson_matches_scipy() {
        // Within 1e-7 relative: ln Γ of 10⁸ carries about 1e-8 of absolute error.
        for (m, n, c, up, lo) in RATES {
            close(rate_upper(m, n, c), up, 1e-7);
            close(rate_lower(m, n, c), lo, 1e-7);
        }
        // The rule of three.
        close(rate_upper(0, 1_000_000, 0.95), 3.0 / 1e6, 0.002);
    }

    /// (q, n, confidence, lower rank, upper rank) from scipy 1.17.1: upper = `binom.ppf(c, n, q)
    /// + 1`; lower = the largest j with `binom.cdf(j - 1, n, q) <= 1 - c`.
    const RANKS: [(f64, u64, f64, u64, u64); 5] = [
        (0.999, 100_000, 0.95, 99883, 99917),
        (0.9999, 72_000_000, 0.95, 71992660, 71992940),
        (0.99, 1000, 0.99, 982, 998),
        (0.5, 11, 0.95, 3, 9),
        (0.999, 1000, 0.95, 997, 1001),
    ];

    #[test]
    fn order_statistic_ranks_match_scipy() {
        for (q, n, c, lo, up) in RANKS {
            let (l, u) = quantile_ranks(q, n, c);
            assert_eq!(l, Some(lo), "q {q} n {n}");
            assert_eq!(u, (up <= n).then_some(up), "q {q} n {n}");
        }
    }
}
