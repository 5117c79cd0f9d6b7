//! Profile-likelihood intervals for what a peaks-over-threshold model predicts: the level
//! exceeded at a given rate, and the rate at which a given level is exceeded.
//!
//! The model has three parameters: the rate λ at which clusters exceed the threshold (C of n
//! samples: a binomial likelihood) and the GPD (σ, ξ) of the clusters' peaks above it. The
//! quantity of interest is tied to them by `λ·S(y; σ, ξ) = t`, S the GPD survival function, y
//! the level above the threshold and t the target rate of clusters per sample. For a fixed
//! (y, t) the joint log-likelihood is maximised over (ln σ, ξ), λ following from the tie
//! (Newton's method with exact derivatives and a backtracking line search). The 1 − α
//! interval is every y (or t) whose profile lies within χ²₁(1 − α)/2 of the maximum — the
//! profile-likelihood interval, which follows the skewed shape of extrapolated quantiles
//! where a symmetric (delta-method) interval would not.

use super::gpd::{self, Fit};

/// The data a profile is computed from.
#[derive(Debug, Clone)]
pub(crate) struct Model<'a> {
    /// Peaks above the threshold (each > 0).
    pub(crate) z: &'a [f64],
    /// Number of clusters (= z.len()).
    pub clusters: f64,
    /// Number of samples.
    pub(crate) n: f64,
    /// The maximum-likelihood fit of `z`.
    pub fit: Fit,
}

/// A point of the constrained maximisation: (ln σ, ξ).
type Point = (f64, f64);

impl<'a> Model<'a> {
    /// λ̂ = C/n.
    pub(crate) fn rate(&self) -> f64 {
        self.clusters / self.n
    }

    fn binom(&self, lam: f64) -> f64 {
        let c = self.clusters;
        if !(lam > 0.0 && lam < 1.0) {
            return f64::NEG_INFINITY;
        }
        c * lam.ln() + (self.n - c) * (-lam).ln_1p()
    }

    /// The maximised joint log-likelihood.
    pub(crate) fn max_loglik(&self) -> f64 {
        self.fit.loglik + self.binom(self.rate())
    }

    /// Joint log-likelihood at (s, xi) under the tie λ·S(y) = t (ln_t = ln t).
    fn value(&self, p: Point, y: f64, ln_t: f64) -> f64 {
        let sigma = p.0.exp();
        let ln_lam = ln_t + gpd::q(p.1, y / sigma);
        if ln_lam.is_nan() || ln_lam >= 0.0 {
            return f64::NEG_INFINITY;
        }
        gpd::loglik(self.z, sigma, p.1) + self.binom(ln_lam.exp())
    }

    /// Value, gradient and Hessian at p under the tie.
    fn derivs(&self, p: Point, y: f64, ln_t: f64) -> Option<(f64, [f64; 2], [f64; 3])> {
        let sigma = p.0.exp();
        let (l, g, h) = gpd::loglik_derivs(self.z, sigma, p.1)?;
        let d = gpd::q_derivs(p.1, y / sigma)?;
        let ln_lam = ln_t + d[0];
        if ln_lam.is_nan() || ln_lam >= 0.0 {
            return None;
        }
        let lam = ln_lam.exp();
        let c = self.clusters;
        let rest = self.n - c;
        // B(g) = C·g + (n − C)·ln(1 − e^g), g = ln λ = ln t + q(ξ, y/σ).
        let b = self.binom(lam);
        let b1 = c - rest * lam / (1.0 - lam);
        let b2 = -rest * lam / ((1.0 - lam) * (1.0 - lam));
        let (gs, gx) = (d[1], d[2]);
        Some((
            l + b,
            [g[0] + b1 * gs, g[1] + b1 * gx],
            [
                h[0] + b2 * gs * gs + b1 * d[3],
                h[1] + b2 * gs * gx + b1 * d[4],
                h[2] + b2 * gx * gx + b1 * d[5],
            ],
        ))
    }

    /// The tie's maximum over (ln σ, ξ) from `start`: (value, where). None when no feasible
    /// point is found.
    pub(crate) fn constrained_max(&self, y: f64, ln_t: f64, start: Point) -> Option<(f64, Point)> {
        let mut p = start;
        // A start outside the support (or with λ ≥ 1): a larger σ brings every point in.
        let mut tries = 0;
        while !self.value(p, y, ln_t).is_finite() {
            p.0 += 0.5;
            tries += 1;
            if tries > 80 {
                return None;
            }
        }
        let mut f = self.value(p, y, ln_t);
        for _ in 0..200 {
            let Some((_, g, h)) = self.derivs(p, y, ln_t) else {
                break;
            };
            // Newton's step on a negative definite Hessian; gradient ascent otherwise.
            let det = h[0] * h[2] - h[1] * h[1];
            let mut step = if h[0] < 0.0 && det > 0.0 {
                (
                    -(h[2] * g[0] - h[1] * g[1]) / det,
                    -(-h[1] * g[0] + h[0] * g[1]) / det,
                )
            } else {
                let scale = 1.0 / (1.0 + h[0].abs().max(h[2].abs()));
                (g[0] * scale, g[1] * scale)
            };
            // Keep steps modest: ξ moves at most 0.5, ln σ at most 2 at a time.
            let m = (step.0.abs() / 2.0).max(step.1.abs() / 0.5);
            if m > 1.0 {
                step = (step.0 / m, step.1 / m);
            }
            let mut k = 1.0;
            let mut moved = false;
            for _ in 0..60 {
                let q = (p.0 + k * step.0, p.1 + k * step.1);
                let fq = self.value(q, y, ln_t);
                if fq.is_finite() && fq >= f - 1e-12 * f.abs() {
                    moved = fq > f || k < 1.0;
                    p = q;
                    f = fq.max(f);
                    break;
                }
                k /= 2.0;
            }
            let small = (k * step.0).abs() < 1e-11 && (k * step.1).abs() < 1e-11;
            if !moved || small {
                break;
            }
        }
        Some((f, p))
    }

    /// The level above the threshold exceeded by t (rate of clusters per sample): the MLE.
    pub(crate) fn level(&self, t: f64) -> f64 {
        gpd::isf(t / self.rate(), self.fit.sigma, self.fit.xi)
    }

    /// Deviance 2·(ℓ̂ − ℓ_p) at (y, ln t), warm-started at `start`; updates `start`.
    fn deviance(&self, y: f64, ln_t: f64, start: &mut Point) -> f64 {
        match self.constrained_max(y, ln_t, *start) {
            Some((f, p)) => {
                *start = p;
                (2.0 * (self.max_loglik() - f)).max(0.0)
            }
            None => f64::INFINITY,
        }
    }

    /// The profile-likelihood interval of the level y (above the threshold) exceeded at rate
    /// t, at deviance `crit` (χ²₁ quantile): (low, high). `high` is +inf when the data do not
    /// bound it within a factor 10⁹ of the estimate; `low` is 0 when the level could lie at
    /// the threshold.
    pub(crate) fn level_interval(&self, t: f64, crit: f64) -> (f64, f64) {
        let y_hat = self.level(t);
        let ln_t = t.ln();
        let s0 = (self.fit.sigma.ln(), self.fit.xi);
        let high = self.search(y_hat, 1.25, 1e9, crit, s0, |m, y, st| {
            m.deviance(y, ln_t, st)
        });
        let low = self.search(y_hat, 0.8, 1e-9, crit, s0, |m, y, st| {
            m.deviance(y, ln_t, st)
        });
        (low.unwrap_or(0.0), high.unwrap_or(f64::INFINITY))
    }

    /// The profile-likelihood interval of the rate t (clusters per sample) at which the level
    /// y above the threshold is exceeded: (t̂, low, high); `low` 0 when the data cannot tell
    /// the level from unreachable.
    pub(crate) fn rate_interval(&self, y: f64, crit: f64) -> (f64, f64, f64) {
        let t_hat = self.rate() * gpd::sf(y, self.fit.sigma, self.fit.xi);
        let s0 = (self.fit.sigma.ln(), self.fit.xi);
        if t_hat.is_nan() || t_hat <= 0.0 {
            // Past the fitted endpoint: search upwards from a tiny rate.
            let floor = self.rate() * 1e-300;
            let high = self
                .search(floor, 2.0, 1e300, crit, s0, |m, t, st| {
                    m.deviance(y, t.ln(), st)
                })
                .unwrap_or(0.0);
            return (0.0, 0.0, high);
        }
        let f = |m: &Model, t: f64, st: &mut Point| m.deviance(y, t.ln(), st);
        let high = self.search(t_hat, 1.25, 1.0 / t_hat, crit, s0, f);
        let low = self.search(t_hat, 0.8, 1e-300 / t_hat, crit, s0, f);
        (t_hat, low.unwrap_or(0.0), high.unwrap_or(1.0).min(1.0))
    }

    /// From `x0` (deviance ≈ 0) steps by `factor` until the deviance passes `crit`, then finds
    /// the crossing; None when it does not pass before `x0·limit`.
    fn search(
        &self,
        x0: f64,
        factor: f64,
        limit: f64,
        crit: f64,
        start: Point,
        dev: impl Fn(&Model, f64, &mut Point) -> f64,
    ) -> Option<f64> {
        let end = x0 * limit;
        let mut inside = (x0, start);
        let mut f = factor;
        loop {
            let x = inside.0 * f;
            if (factor > 1.0 && x > end) || (factor < 1.0 && x < end) {
                return None;
            }
            let mut s = inside.1;
            let d = dev(self, x, &mut s);
            if d > crit {
                // Bracketed in log x: bisect (each point warm-started from the inside).
                let (mut a, mut b) = (inside.0.ln(), x.ln());
                let mut sa = inside.1;
                for _ in 0..60 {
                    let m = 0.5 * (a + b);
                    let mut s = sa;
                    if dev(self, m.exp(), &mut s) > crit {
                        b = m;
                    } else {
                        a = m;
                        sa = s;
                    }
                    if (b - a).abs() < 1e-7 {
                        break;
                    }
                }
                return Some((0.5 * (a + b)).exp());
            }
            inside = (x, s);
            // Grow the step while far inside, so unbounded directions end fast.
            if d < crit / 4.0 {
                f *= f;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// GPD(1, 0.1) quantiles at the golden-ratio sequence: fixed, smooth data.
    fn data(n: usize) -> Vec<f64> {
        (1..=n)
            .map(|i| gpd::isf((i as f64 * 0.6180339887498949) % 1.0, 1.0, 0.1))
            .collect()
    }

    #[test]
    fn intervals_hold_the_estimate_and_are_dual() {
        let z = data(400);
        let fit = gpd::fit(&z).unwrap();
        let m = Model {
            z: &z,
            clusters: 400.0,
            n: 40_000.0,
            fit,
        };
        let crit = crate::stats::evt::chi2_1(0.95);
        for t in [1e-3, 1e-5, 1e-7] {
            let y = m.level(t);
            let (lo, hi) = m.level_interval(t, crit);
            assert!(lo < y && y < hi, "t={t}: {lo} {y} {hi}");
            // The same boundary seen from the other side: at the upper level, t is the upper
            // end of the rate interval.
            let (t_hat, _, t_hi) = m.rate_interval(hi, crit);
            assert!(t_hat < t, "{t_hat} {t}");
            assert!((t_hi / t - 1.0).abs() < 1e-3, "t={t}: {t_hi}");
            // A wider confidence gives a wider interval.
            let (lo99, hi99) = m.level_interval(t, crate::stats::evt::chi2_1(0.99));
            assert!(lo99 < lo && hi99 > hi);
        }
        // The same intervals from an independent computation (bench/reference/tail_profile.py:
        // SciPy 1.17, Nelder-Mead on the joint likelihood at each level, brentq on the
        // deviance): (t, level, low, high).
        for (t, y, lo, hi) in [
            (
                1e-3,
                2.5519644597000326,
                2.2742729697405775,
                2.8900363974964187,
            ),
            (
                1e-5,
                9.269067208129048,
                7.09918135217383,
                13.817947684366054,
            ),
            (
                1e-7,
                18.90439127768337,
                11.471905612378183,
                41.31753162346318,
            ),
        ] {
            let (l, h) = m.level_interval(t, crit);
            let rel = |a: f64, b: f64| ((a - b) / b).abs();
            assert!(rel(m.level(t), y) < 1e-6, "{t}: {}", m.level(t));
            assert!(rel(l, lo) < 1e-4 && rel(h, hi) < 1e-4, "{t}: [{l}, {h}]");
        }
        let rel = |t: f64| {
            let (lo, hi) = m.level_interval(t, crit);
            (hi - lo) / m.level(t)
        };
        assert!(rel(1e-7) > rel(1e-4));
    }
}
