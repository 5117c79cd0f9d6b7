//! The generalized Pareto distribution (GPD) of exceedances over a threshold: its survival and
//! quantile functions, its log-likelihood with derivatives, and the maximum-likelihood fit.
//!
//! Parametrisation as SciPy's `genpareto(c = xi, loc = 0, scale = sigma)`: survival
//! `(1 + xi·z/sigma)^(-1/xi)`, the exponential `exp(-z/sigma)` at `xi = 0`, and a finite
//! endpoint `-sigma/xi` when `xi < 0`. Every function is written so that `xi` near 0 is as
//! accurate as anywhere else (`ln_1p(xi·a)/xi` and series for its derivatives), never a
//! special case that jumps.

/// Fitted GPD parameters with the maximised log-likelihood.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fit {
    /// Scale (> 0), in the data's unit.
    pub sigma: f64,
    /// Shape: > 0 heavy tail, 0 exponential, < 0 a finite endpoint at `-sigma/xi`.
    pub xi: f64,
    /// The log-likelihood at (sigma, xi).
    pub(crate) loglik: f64,
}

/// `ln(1 + xi·a)/xi`, continuous through `xi = 0` (where it is `a`); +inf outside the support.
pub(crate) fn q(xi: f64, a: f64) -> f64 {
    let u = xi * a;
    if u <= -1.0 {
        return f64::INFINITY;
    }
    if xi == 0.0 {
        a
    } else if u.abs() < 1e-8 {
        // ln_1p(u)/xi loses nothing here either, but this keeps xi·a = 0 exact.
        a * (1.0 - u / 2.0 + u * u / 3.0)
    } else {
        u.ln_1p() / xi
    }
}

/// `(u/(1+u) - ln(1+u))/u²`: the xi-derivative of `q` is `a²·phi1(xi·a)`.
fn phi1(u: f64) -> f64 {
    if u.abs() < 1e-2 {
        // Σ_{k≥2} (-1)^{k+1} (k-1)/k u^{k-2}
        let mut s = 0.0;
        let mut p = 1.0;
        for k in 2..12 {
            let kf = k as f64;
            let sign = if k % 2 == 0 { -1.0 } else { 1.0 };
            s += sign * (kf - 1.0) / kf * p;
            p *= u;
        }
        s
    } else {
        (u / (1.0 + u) - u.ln_1p()) / (u * u)
    }
}

/// `phi1'(u)`: the second xi-derivative of `q` is `a³·phi2(xi·a)`.
fn phi2(u: f64) -> f64 {
    if u.abs() < 1e-2 {
        // Σ_{k≥3} (-1)^{k+1} (k-1)(k-2)/k u^{k-3}
        let mut s = 0.0;
        let mut p = 1.0;
        for k in 3..13 {
            let kf = k as f64;
            let sign = if k % 2 == 0 { -1.0 } else { 1.0 };
            s += sign * (kf - 1.0) * (kf - 2.0) / kf * p;
            p *= u;
        }
        s
    } else {
        let w = 1.0 + u;
        (2.0 * u.ln_1p() - 2.0 * u / w - u * u / (w * w)) / (u * u * u)
    }
}

/// `q` and its derivatives in (s = ln sigma, xi) for `a = z/sigma`: (q, q_s, q_xi, q_ss,
/// q_sxi, q_xixi). `None` outside the support.
pub(crate) fn q_derivs(xi: f64, a: f64) -> Option<[f64; 6]> {
    let w = 1.0 + xi * a;
    if w <= 0.0 {
        return None;
    }
    let qv = q(xi, a);
    let qa = 1.0 / w;
    let qaa = -xi / (w * w);
    let qaxi = -a / (w * w);
    let qxi = a * a * phi1(xi * a);
    let qxixi = a * a * a * phi2(xi * a);
    Some([qv, -a * qa, qxi, a * a * qaa + a * qa, -a * qaxi, qxixi])
}

/// Survival function: P(Z > z).
pub(crate) fn sf(z: f64, sigma: f64, xi: f64) -> f64 {
    if z <= 0.0 {
        return 1.0;
    }
    (-q(xi, z / sigma)).exp()
}

/// `ln P(Z > z)`.
pub(crate) fn log_sf(z: f64, sigma: f64, xi: f64) -> f64 {
    if z <= 0.0 {
        return 0.0;
    }
    -q(xi, z / sigma)
}

/// The z exceeded with probability `r` (0 < r ≤ 1): `sigma·((r^-xi) - 1)/xi`.
pub(crate) fn isf(r: f64, sigma: f64, xi: f64) -> f64 {
    let l = -r.ln();
    if xi == 0.0 || (xi * l).abs() < 1e-12 {
        sigma * l * (1.0 + xi * l / 2.0)
    } else {
        sigma * (xi * l).exp_m1() / xi
    }
}

/// Log-likelihood of `z` (all ≥ 0) at (sigma, xi); -inf outside the support.
pub(crate) fn loglik(z: &[f64], sigma: f64, xi: f64) -> f64 {
    if sigma.is_nan() || sigma <= 0.0 || !xi.is_finite() {
        return f64::NEG_INFINITY;
    }
    let mut s = 0.0;
    for &x in z {
        let a = x / sigma;
        let w = 1.0 + xi * a;
        if w <= 0.0 {
            return f64::NEG_INFINITY;
        }
        // (1 + 1/xi)·ln(1 + xi·a) = ln w + q
        s += w.ln() + q(xi, a);
    }
    -(z.len() as f64) * sigma.ln() - s
}

/// Log-likelihood with its gradient and Hessian in (s = ln sigma, xi): (l, [l_s, l_xi],
/// [l_ss, l_sxi, l_xixi]); None outside the support.
pub(crate) fn loglik_derivs(z: &[f64], sigma: f64, xi: f64) -> Option<(f64, [f64; 2], [f64; 3])> {
    let n = z.len() as f64;
    let (mut l, mut gs, mut gx, mut hss, mut hsx, mut hxx) = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0);
    for &x in z {
        let a = x / sigma;
        let w = 1.0 + xi * a;
        if w <= 0.0 {
            return None;
        }
        // m = ln w + q(xi, a); the per-point log-likelihood is -s - m.
        let d = q_derivs(xi, a)?;
        // ln w in (s, xi): d/ds = -xi·a/w, d/dxi = a/w, second derivatives below.
        let lw_s = -xi * a / w;
        let lw_x = a / w;
        let lw_ss = xi * a / (w * w);
        let lw_sx = -a / (w * w);
        let lw_xx = -a * a / (w * w);
        l -= w.ln() + d[0];
        gs -= lw_s + d[1];
        gx -= lw_x + d[2];
        hss -= lw_ss + d[3];
        hsx -= lw_sx + d[4];
        hxx -= lw_xx + d[5];
    }
    Some((l - n * sigma.ln(), [gs - n, gx], [hss, hsx, hxx]))
}

/// Mean of `ln(1 + theta·z)/theta` (the profile's sigma) and its theta-derivative.
fn g_and_dg(z: &[f64], theta: f64) -> (f64, f64) {
    let mut g = 0.0;
    let mut dg = 0.0;
    for &x in z {
        g += q(theta, x);
        dg += x * x * phi1(theta * x);
    }
    let n = z.len() as f64;
    (g / n, dg / n)
}

/// Profile log-likelihood per point in theta = xi/sigma (Grimshaw 1993): for each theta the
/// likelihood is maximised by xi = theta·g(theta), sigma = g(theta), giving
/// `-ln g - theta·g - 1`; returns it with its derivative.
fn profile(z: &[f64], theta: f64) -> (f64, f64) {
    let (g, dg) = g_and_dg(z, theta);
    (-g.ln() - theta * g - 1.0, -dg / g - g - theta * dg)
}

/// The maximum-likelihood GPD fit of exceedances `z` (all > 0 except possibly a few at 0), as
/// SciPy's `genpareto.fit(z, floc=0)` defines it, with the shape kept at or above -1 (below it
/// the likelihood is unbounded at the endpoint). None with fewer than 2 points, a point that is
/// negative or not finite, or no spread.
pub(crate) fn fit(z: &[f64]) -> Option<Fit> {
    if z.len() < 2 || z.iter().any(|x| !(x.is_finite() && *x >= 0.0)) {
        return None;
    }
    let zmax = z.iter().copied().fold(0.0, f64::max);
    let zbar = z.iter().sum::<f64>() / z.len() as f64;
    if zmax <= 0.0 || zbar <= 0.0 {
        return None;
    }
    // tau = theta·zmax ranges over (-1, inf); xi = theta·g(theta) must stay ≥ -1. A coarse
    // grid in tau finds the highest region, the derivative's root between its neighbours
    // then the maximum itself (where the neighbours do not bracket a root: golden section).
    let mut taus: Vec<f64> = vec![
        -0.999, -0.99, -0.95, -0.85, -0.7, -0.5, -0.3, -0.1, -0.01, 0.0,
    ];
    for k in -3..=6 {
        taus.push(10f64.powi(k) * zmax / zbar);
    }
    taus.sort_by(f64::total_cmp);
    taus.dedup();
    let ok = |theta: f64| {
        let (g, _) = g_and_dg(z, theta);
        g.is_finite() && g > 0.0 && theta * g >= -1.0
    };
    let value = |t: f64| {
        if ok(t) {
            profile(z, t).0
        } else {
            f64::NEG_INFINITY
        }
    };
    let thetas: Vec<f64> = taus.iter().map(|t| t / zmax).collect();
    let vals: Vec<f64> = thetas.iter().map(|&t| value(t)).collect();
    let mut best: Option<(usize, f64)> = None;
    for (i, &v) in vals.iter().enumerate() {
        if v.is_finite() && best.is_none_or(|(_, b)| v > b) {
            best = Some((i, v));
        }
    }
    let (i, _) = best?;
    let lo = thetas[i.saturating_sub(1)];
    let hi = thetas[(i + 1).min(thetas.len() - 1)];
    let d = |t: f64| profile(z, t).1;
    let bracketed = lo < hi && ok(lo) && ok(hi) && d(lo) > 0.0 && d(hi) < 0.0;
    let theta = if bracketed {
        root(d, lo, hi)
    } else {
        // At a grid edge or by the shape bound: the best point, refined by golden section.
        golden_max(value, lo, hi)
    };
    let (g, _) = g_and_dg(z, theta);
    let sigma = g;
    let xi = theta * g;
    Some(Fit {
        sigma,
        xi,
        loglik: loglik(z, sigma, xi),
    })
}

/// The maximum-likelihood scale of `z` for a fixed shape `xi` ≥ 0.
pub(crate) fn fit_scale(z: &[f64], xi: f64) -> f64 {
    let mean = z.iter().sum::<f64>() / z.len().max(1) as f64;
    let c = mean.max(f64::MIN_POSITIVE).ln();
    golden_max(|s| loglik(z, s.exp(), xi), c - 6.0, c + 6.0).exp()
}

/// A root of `f` in [lo, hi] where f(lo) > 0 > f(hi) (bisection to the last bit, sped up by
/// regula falsi steps).
pub(crate) fn root(f: impl Fn(f64) -> f64, mut lo: f64, mut hi: f64) -> f64 {
    let (mut flo, mut fhi) = (f(lo), f(hi));
    let mut side = 0i32;
    for _ in 0..200 {
        if hi - lo <= (lo.abs().max(hi.abs())) * 4.0 * f64::EPSILON {
            break;
        }
        // Illinois regula falsi, falling back to the midpoint when it stalls.
        let mut m = (lo * fhi - hi * flo) / (fhi - flo);
        if !(m > lo && m < hi) {
            m = 0.5 * (lo + hi);
        }
        let fm = f(m);
        if fm == 0.0 {
            return m;
        }
        if fm > 0.0 {
            lo = m;
            flo = fm;
            if side == 1 {
                fhi /= 2.0;
            }
            side = 1;
        } else {
            hi = m;
            fhi = fm;
            if side == -1 {
                flo /= 2.0;
            }
            side = -1;
        }
    }
    0.5 * (lo + hi)
}

/// The maximum of `f` on [lo, hi] by golden-section search.
pub(crate) fn golden_max(f: impl Fn(f64) -> f64, mut lo: f64, mut hi: f64) -> f64 {
    let r = (5f64.sqrt() - 1.0) / 2.0;
    let mut a = hi - r * (hi - lo);
    let mut b = lo + r * (hi - lo);
    let (mut fa, mut fb) = (f(a), f(b));
    for _ in 0..200 {
        if hi - lo <= 1e-15 * (lo.abs() + hi.abs()) {
            break;
        }
        if fa < fb {
            lo = a;
            a = b;
            fa = fb;
            b = lo + r * (hi - lo);
            fb = f(b);
        } else {
            hi = b;
            b = a;
            fb = fa;
            a = hi - r * (hi - lo);
            fa = f(a);
        }
    }
    0.5 * (lo + hi)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fixed data of the SciPy references: GPD(scale, xi) quantiles at the golden-ratio
    /// sequence u_i = frac(i·0.618…), i = 1..n (`genpareto.isf(u, xi, scale=scale)`).
    fn golden(n: usize, xi: f64, scale: f64) -> Vec<f64> {
        (1..=n)
            .map(|i| isf((i as f64 * 0.6180339887498949) % 1.0, scale, xi))
            .collect()
    }

    #[test]
    fn the_fit_equals_scipy_genpareto_fit() {
        // SciPy 1.17.1: genpareto.fit(z, floc=0, optimizer=fmin with xtol=ftol=1e-13), i.e.
        // SciPy's maximum-likelihood estimate driven to convergence. Its default optimizer
        // (fmin at xtol=1e-4) stops within about 1e-4 of these (c=0.165530064737,
        // scale=2.02678180284 for the first case).
        let cases = [
            (
                200,
                0.2,
                2.0,
                0.165536646225765,
                2.02672456394677,
                -374.391526450969,
            ),
            (
                200,
                -0.2,
                1.5,
                -0.232879970189194,
                1.52746781124289,
                -238.146272719244,
            ),
            (
                300,
                0.0,
                3.0,
                -0.0152964208949851,
                3.01933892921135,
                -626.922450951224,
            ),
            (
                150,
                0.45,
                0.7,
                0.408727827599229,
                0.712343335316212,
                -160.42988209666,
            ),
            (
                500,
                -0.4,
                10.0,
                -0.418731210158567,
                10.1797834931223,
                -1450.83626542839,
            ),
        ];
        for (n, xi, scale, c, s, ll) in cases {
            let z = golden(n, xi, scale);
            let f = fit(&z).unwrap();
            let rel = |a: f64, b: f64| ((a - b) / b).abs();
            assert!(rel(f.xi, c) < 1e-6, "n={n} xi={xi}: {} vs {c}", f.xi);
            assert!(rel(f.sigma, s) < 1e-6, "n={n} xi={xi}: {} vs {s}", f.sigma);
            assert!(
                rel(f.loglik, ll) < 1e-10,
                "n={n} xi={xi}: {} vs {ll}",
                f.loglik
            );
        }
    }

    #[test]
    fn functions_are_continuous_through_xi_zero() {
        for a in [1e-3, 0.5, 3.0, 40.0] {
            let at0 = q(0.0, a);
            for xi in [1e-12, -1e-12, 1e-9, -1e-9] {
                // q(xi, a) = a - xi·a²/2 + ...: no jump at 0.
                let expect = a - xi * a * a / 2.0;
                assert!((q(xi, a) - expect).abs() <= 1e-12 * at0, "{xi} {a}");
            }
        }
        for r in [0.5, 1e-3, 1e-9] {
            let e = isf(r, 2.0, 0.0);
            assert!((isf(r, 2.0, 1e-13) - e).abs() < 1e-9 * e);
            // sf inverts isf.
            for xi in [-0.4, 0.0, 1e-7, 0.3] {
                let y = isf(r, 2.0, xi);
                assert!((sf(y, 2.0, xi) / r - 1.0).abs() < 1e-10, "{r} {xi}");
            }
        }
        assert_eq!(sf(10.0, 1.0, -0.5), 0.0, "past the endpoint 2");
    }

    #[test]
    fn derivatives_match_finite_differences() {
        let z = golden(50, 0.1, 1.0);
        for (sigma, xi) in [(1.1f64, 0.15), (0.9, -0.1), (1.0, 1e-9), (1.2, 0.004)] {
            let (l, g, h) = loglik_derivs(&z, sigma, xi).unwrap();
            assert!((l - loglik(&z, sigma, xi)).abs() < 1e-9 * l.abs());
            let f = |s: f64, x: f64| loglik(&z, s.exp(), x);
            let s = sigma.ln();
            let e = 1e-5;
            let fs = (f(s + e, xi) - f(s - e, xi)) / (2.0 * e);
            let fx = (f(s, xi + e) - f(s, xi - e)) / (2.0 * e);
            assert!((fs - g[0]).abs() < 1e-5 * (1.0 + fs.abs()), "{fs} {}", g[0]);
            assert!((fx - g[1]).abs() < 1e-5 * (1.0 + fx.abs()), "{fx} {}", g[1]);
            let grad = |s: f64, x: f64| loglik_derivs(&z, s.exp(), x).unwrap().1;
            let hss = (grad(s + e, xi)[0] - grad(s - e, xi)[0]) / (2.0 * e);
            let hsx = (grad(s, xi + e)[0] - grad(s, xi - e)[0]) / (2.0 * e);
            let hxx = (grad(s, xi + e)[1] - grad(s, xi - e)[1]) / (2.0 * e);
            for (a, b) in [(hss, h[0]), (hsx, h[1]), (hxx, h[2])] {
                assert!((a - b).abs() < 1e-4 * (1.0 + a.abs()), "{a} {b}");
            }
        }
    }

    #[test]
    fn bad_data_gives_no_fit() {
        assert!(fit(&[1.0]).is_none());
        assert!(fit(&[0.0, 0.0, 0.0]).is_none());
        assert!(fit(&[1.0, f64::NAN, 2.0]).is_none());
        assert!(fit(&[1.0, -2.0, 2.0]).is_none());
    }
}
