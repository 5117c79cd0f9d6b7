//! Extreme value statistics: how late, how rarely, beyond the largest latency a run saw.
//! Peaks over threshold with a generalized Pareto (GPD) fit, the method of measurement-based
//! probabilistic timing analysis (Cucu-Grosjean et al., ECRTS 2012), made to say when it
//! cannot be trusted.
//!
//! [`estimate`] takes the upper part of a data set ([`Sample`]) and:
//! 1. tries 20 thresholds (`threshold`; the lowest leaves at most 2.5 % of the samples, at
//!    most 5000, above it): at each, declusters the exceedances (runs
//!    declustering with the intervals estimate of the extremal index, `decluster`), fits the
//!    GPD to the cluster peaks by maximum likelihood (`gpd`) and tests the fit
//!    (Anderson-Darling with estimated parameters, `gof`);
//! 2. picks the lowest threshold ForwardStop does not reject;
//! 3. refuses (a [`Refusal`] with the reason and what would help) when too few clusters
//!    exceed it, every threshold is rejected, the shape leaves −0.5 … 1 (where maximum
//!    likelihood is not regular, or the mean is infinite), or a gap test finds a far-out second
//!    regime at the top (`regime`);
//! 4. else returns a [`Model`] whose levels and rates come with profile-likelihood intervals
//!    (`profile`) that include the uncertainty of the rate of clusters over the threshold.
//!
//! Data without an order (a run stored only as HDR histograms) cannot be declustered: every
//! exceedance counts as its own cluster. Per-sample levels are unaffected in expectation, but
//! when spikes come in bursts the intervals are too narrow (a burst is counted as several
//! independent pieces of evidence), the threshold tests (which assume independence) see
//! drift that is not there, and a level "per unit of time" counts each sample of a burst as an
//! episode (higher) — which does not make up for the rest.

pub(crate) mod decluster;
pub(crate) mod gof;
pub(crate) mod gpd;
pub mod holdout;
pub(crate) mod profile;
pub(crate) mod regime;
pub(crate) mod threshold;

#[cfg(test)]
mod coverage;

pub use decluster::Exceedance;
pub(crate) use gpd::Fit;

/// The upper part of a data set.
#[derive(Debug, Clone, Default)]
pub struct Sample {
    /// Number of samples in the whole data set.
    pub n: u64,
    /// Its largest samples: every sample above the smallest value here is here too.
    pub top: Vec<Exceedance>,
    /// Whether `pos` within each series is the sample order (else no declustering).
    pub ordered: bool,
}

/// Settings of the estimation.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Config {
    /// Confidence level of the intervals (0.95).
    pub confidence: f64,
    /// ForwardStop's false discovery rate (0.10).
    pub alpha: f64,
    /// Most exceedances of the lowest candidate threshold (5000).
    pub max_exceedances: usize,
    /// Largest fraction of the samples above the lowest candidate threshold (0.025: lower
    /// thresholds let the tail's approach to its limit shape bias the fit, see
    /// docs/benchmarks.md).
    pub max_fraction: f64,
    /// Fewest clusters a fit may rest on (30).
    pub min_clusters: usize,
    /// Number of candidate thresholds (20).
    pub candidates: usize,
    /// Level of the gap test for a second regime (0.01).
    pub regime_alpha: f64,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            confidence: 0.95,
            alpha: 0.10,
            max_exceedances: 5000,
            max_fraction: 0.025,
            min_clusters: 30,
            candidates: 20,
            regime_alpha: 0.01,
        }
    }
}

/// One threshold tried.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Candidate {
    /// The threshold.
    pub(crate) threshold: f64,
    /// Samples above it.
    pub(crate) exceedances: usize,
    /// Clusters above it.
    pub(crate) clusters: usize,
    /// Extremal index estimate (None: no order).
    pub(crate) extremal_index: Option<f64>,
    /// Fitted shape.
    pub(crate) xi: f64,
    /// Fitted scale.
    pub(crate) sigma: f64,
    /// Anderson-Darling p-value.
    pub(crate) gof_p: f64,
    /// Shape-stability p-value (`threshold::shape_pvalues`).
    pub(crate) shape_p: f64,
}

/// Why the tail cannot be modelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RefusalKind {
    /// Too few exceedances (clusters) for a fit.
    TooFew,
    /// The GPD is rejected at every threshold.
    FitRejected,
    /// The fitted shape is outside the range where the fit can be trusted.
    Shape,
    /// A rare far-out mode sits at the top.
    SecondRegime,
}

/// A refusal: the reason and what would help.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Refusal {
    /// Which rule refused.
    pub kind: RefusalKind,
    /// Why, with the figures.
    pub reason: String,
    /// What would help.
    pub help: String,
    /// The thresholds tried.
    pub candidates: Vec<Candidate>,
}

/// A fitted tail.
#[derive(Debug, Clone)]
pub struct Model {
    /// Samples in the data set.
    pub(crate) n: u64,
    /// The chosen threshold.
    pub threshold: f64,
    /// Samples above it.
    pub exceedances: usize,
    /// Clusters above it (= exceedances without order).
    pub clusters: usize,
    /// Extremal index (None: no order).
    pub extremal_index: Option<f64>,
    /// Runs declustering's run length (None: no clustering applied).
    pub run_length: Option<u64>,
    /// The GPD fit of the cluster peaks above the threshold.
    pub fit: Fit,
    /// The Anderson-Darling p-value of the fit.
    pub gof_p: f64,
    /// Gap test for a second regime.
    pub gap: regime::Gap,
    /// All thresholds tried, lowest first.
    pub candidates: Vec<Candidate>,
    /// Interval confidence.
    pub(crate) confidence: f64,
    /// Peaks above the threshold (value − threshold), ascending.
    pub(crate) peaks: Vec<f64>,
    /// The data's top values, descending (for empirical levels and plots).
    pub(crate) top: Vec<f64>,
}

/// A level with its interval.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Level {
    /// The estimate (None: not answerable from this data).
    pub value: Option<f64>,
    /// Lower bound.
    pub low: Option<f64>,
    /// Upper bound (None: the data do not bound it).
    pub high: Option<f64>,
    /// How it was found.
    pub method: Method,
}

/// How a level was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Method {
    /// From the GPD fit beyond the threshold.
    Gpd,
    /// Inside the data, below the threshold: the empirical quantile and order statistics.
    Empirical,
    /// Below the part of the data kept for the tail: not answered.
    Body,
}

/// The χ²₁ quantile for a two-sided interval at `confidence`.
pub(crate) fn chi2_1(confidence: f64) -> f64 {
    use statrs::distribution::{ContinuousCDF, Normal};
    let z = Normal::standard().inverse_cdf(0.5 + confidence / 2.0);
    z * z
}

/// The standard normal quantile for a two-sided interval at `confidence`.
fn z_of(confidence: f64) -> f64 {
    chi2_1(confidence).sqrt()
}

/// Fits the tail of `s`, or says why it cannot.
pub fn estimate(s: &Sample, cfg: &Config) -> Result<Model, Refusal> {
    let mut top = s.top.clone();
    top.sort_by(|a, b| b.value.total_cmp(&a.value));
    let vals: Vec<f64> = top.iter().map(|e| e.value).collect();
    let k_max = (vals.len().saturating_sub(1))
        .min((s.n as f64 * cfg.max_fraction) as usize)
        .min(cfg.max_exceedances);
    if k_max < cfg.min_clusters {
        return Err(too_few(s, cfg, k_max, Vec::new()));
    }
    let counts = threshold::counts(k_max, cfg.min_clusters, cfg.candidates);
    let (mut cands, mut trials) = try_thresholds(&top, &vals, &counts, s.ordered, cfg);
    if cands.is_empty() {
        let c = counts.first().copied().unwrap_or(0);
        return Err(too_few(s, cfg, c.min(k_max), cands));
    }
    let Some(i) = forward_stop(&mut cands, cfg.alpha) else {
        return Err(every_fit_rejected(&trials[trials.len() - 1], cands, cfg));
    };
    let t = trials.swap_remove(i);
    if t.fit.xi < -0.5 || t.fit.xi > 1.0 {
        return Err(shape_refused(&t.fit, i, cands));
    }
    let c = &cands[i];
    let mut desc = t.peaks.clone();
    desc.reverse();
    let gap = regime::gap_test(&desc);
    if gap.p < cfg.regime_alpha {
        return Err(second_regime(c, &desc, gap, cands.clone()));
    }
    Ok(Model {
        n: s.n,
        threshold: c.threshold,
        exceedances: t.exceedances,
        clusters: t.declustered.peaks.len(),
        extremal_index: t.declustered.theta,
        run_length: t.declustered.run_length,
        fit: t.fit,
        gof_p: c.gof_p,
        gap,
        candidates: cands,
        confidence: cfg.confidence,
        peaks: t.peaks,
        top: vals,
    })
}

/// The fit at one threshold tried, kept beside its [`Candidate`] until one is chosen.
struct Trial {
    /// The cluster peaks above the threshold (value − threshold), ascending.
    peaks: Vec<f64>,
    /// The GPD fitted to them.
    fit: Fit,
    /// The declustering of the exceedances.
    declustered: decluster::Declustered,
    /// Samples above the threshold.
    exceedances: usize,
}

/// Declusters, fits and tests the exceedances of each candidate threshold (the `counts`-th
/// largest value of `top`, sorted descending, whose values are `vals`): a threshold with too
/// few clusters, or whose fit does not converge, is left out. Candidates and trials match
/// one for one, lowest threshold first.
fn try_thresholds(
    top: &[Exceedance],
    vals: &[f64],
    counts: &[usize],
    ordered: bool,
    cfg: &Config,
) -> (Vec<Candidate>, Vec<Trial>) {
    let mut cands: Vec<Candidate> = Vec::new();
    let mut trials: Vec<Trial> = Vec::new();
    for &k in counts {
        let u = vals[k];
        let mut exc: Vec<Exceedance> = top.iter().take_while(|e| e.value > u).copied().collect();
        exc.sort_by_key(|e| (e.series, e.pos));
        let d = decluster::decluster(&exc, ordered);
        if d.peaks.len() < cfg.min_clusters {
            continue;
        }
        let mut z: Vec<f64> = d.peaks.iter().map(|p| p - u).collect();
        z.sort_by(f64::total_cmp);
        let Some(f) = gpd::fit(&z) else { continue };
        let a2 = gof::anderson_darling(&z, f.sigma, f.xi);
        let p = gof::ad_pvalue(a2, f.xi);
        cands.push(Candidate {
            threshold: u,
            exceedances: exc.len(),
            clusters: d.peaks.len(),
            extremal_index: d.theta,
            xi: f.xi,
            sigma: f.sigma,
            gof_p: p,
            shape_p: 1.0,
        });
        trials.push(Trial {
            peaks: z,
            fit: f,
            declustered: d,
            exceedances: exc.len(),
        });
    }
    (cands, trials)
}

/// The threshold ForwardStop picks at false discovery rate `alpha`, None when it rejects
/// them all; each candidate's shape-stability p-value is filled in on the way.
fn forward_stop(cands: &mut [Candidate], alpha: f64) -> Option<usize> {
    // Each threshold is tested twice: the fit's Anderson-Darling p and the stability of its
    // shape against a higher threshold's; the smaller, Bonferroni-doubled, goes to ForwardStop.
    let shape = threshold::shape_pvalues(
        &cands
            .iter()
            .map(|c| (c.xi, c.clusters as f64))
            .collect::<Vec<_>>(),
    );
    for (c, p) in cands.iter_mut().zip(&shape) {
        c.shape_p = *p;
    }
    let ps: Vec<f64> = cands
        .iter()
        .map(|c| (2.0 * c.gof_p.min(c.shape_p)).min(1.0))
        .collect();
    threshold::choose(&ps, alpha)
}

/// The refusal for too few exceedances: `clusters` over the lowest threshold tried.
fn too_few(s: &Sample, cfg: &Config, clusters: usize, cands: Vec<Candidate>) -> Refusal {
    let need = cfg.min_clusters;
    let more = if clusters == 0 {
        format!(
            "at least {} samples",
            (need as f64 / cfg.max_fraction).ceil()
        )
    } else {
        format!(
            "a run about {}x as long",
            (need as f64 / clusters as f64).ceil().max(2.0)
        )
    };
    Refusal {
        kind: RefusalKind::TooFew,
        reason: format!(
            "too few exceedances: {clusters} independent cluster(s) over the lowest threshold \
             tried ({} samples in all; a fit needs {need})",
            s.n
        ),
        help: format!("more data: {more}"),
        candidates: cands,
    }
}

/// The refusal when ForwardStop rejects every threshold: a second regime when the gap test
/// sees one at the `highest` threshold tried, else the fit rejected.
fn every_fit_rejected(highest: &Trial, cands: Vec<Candidate>, cfg: &Config) -> Refusal {
    // A far-out mode fails every fit: say so when the gap test sees it at the highest
    // threshold (the fewest, most extreme peaks).
    let last = cands.len() - 1;
    let mut desc = highest.peaks.clone();
    desc.reverse();
    let gap = regime::gap_test(&desc);
    if gap.p < cfg.regime_alpha {
        return second_regime(&cands[last], &desc, gap, cands.clone());
    }
    let best = cands.iter().map(|c| c.gof_p).fold(0.0, f64::max);
    let lo = cands.iter().map(|c| c.xi).fold(f64::INFINITY, f64::min);
    let hi = cands.iter().map(|c| c.xi).fold(f64::NEG_INFINITY, f64::max);
    let g = |x: f64, d: usize| crate::stats::cfmt::g(x, d);
    Refusal {
        kind: RefusalKind::FitRejected,
        reason: format!(
            "the generalized Pareto fit is rejected at every threshold tried ({} thresholds \
             from {} down to {} clusters; best Anderson-Darling p = {}; the fitted shape \
             ranges from {} to {} across them{})",
            cands.len(),
            cands[0].clusters,
            cands[cands.len() - 1].clusters,
            g(best, 2),
            g(lo, 2),
            g(hi, 2),
            if hi - lo > 0.5 {
                ": the tail changes character, several regimes"
            } else {
                ""
            }
        ),
        help: "the tail is not one smooth shape at this size: a longer run lets the \
               threshold move higher; discrete or rounded values (ties) also fail the test; \
               look at the tail plot (latlab report) for a second regime"
            .into(),
        candidates: cands,
    }
}

/// The refusal for a fitted shape `f.xi` outside −0.5 … 1 at the chosen candidate
/// (`cands[chosen]`).
fn shape_refused(f: &Fit, chosen: usize, cands: Vec<Candidate>) -> Refusal {
    let c = &cands[chosen];
    Refusal {
        kind: RefusalKind::Shape,
        reason: format!(
            "the fitted shape xi = {} is outside -0.5 ... 1 at threshold {} ({} clusters)",
            crate::stats::cfmt::g(f.xi, 3),
            crate::stats::cfmt::g(c.threshold, 4),
            c.clusters
        ),
        help: if f.xi < -0.5 {
            "below -0.5 the fit claims an abrupt hard limit where maximum likelihood is not \
             regular and its intervals cannot be trusted: a longer run, or treat the \
             observed maximum as what it is"
                .into()
        } else {
            "above 1 the tail is so heavy its mean is infinite, usually a sign of a second \
             regime mixed into the tail: look at the tail plot (latlab report), trace the \
             largest spikes (--trace)"
                .into()
        },
        candidates: cands,
    }
}

/// The refusal for a far-out mode found by the gap test at candidate `c` (peaks above it
/// descending in `desc`).
fn second_regime(c: &Candidate, desc: &[f64], gap: regime::Gap, cands: Vec<Candidate>) -> Refusal {
    Refusal {
        kind: RefusalKind::SecondRegime,
        reason: format!(
            "a second regime in the tail: the top {} value(s) (from {}) lie far beyond the tail \
             fitted to the rest (gap test p = {})",
            gap.m,
            crate::stats::cfmt::g(c.threshold + desc[gap.m - 1], 4),
            crate::stats::cfmt::g(gap.p, 2)
        ),
        help: "a rare mode far out (a firmware stall, a periodic job) dominates the extreme tail \
               and one fit would average it away: look at it separately (latlab report's tail \
               plot, --trace on the largest spikes) and measure long enough to see it many times"
            .into(),
        candidates: cands,
    }
}

impl Model {
    fn profile(&self) -> profile::Model<'_> {
        profile::Model {
            z: &self.peaks,
            clusters: self.clusters as f64,
            n: self.n as f64,
            fit: self.fit,
        }
    }

    /// Mean cluster size above the threshold (1 without order).
    pub(crate) fn cluster_size(&self) -> f64 {
        self.exceedances as f64 / self.clusters as f64
    }

    /// The latency exceeded with probability `p` per sample.
    pub fn per_sample(&self, p: f64) -> Level {
        self.level(p / self.cluster_size())
    }

    /// The latency exceeded in `expected` episodes (clusters) per `samples` samples (a unit of
    /// time at the data's rate).
    pub fn per_samples(&self, expected: f64, samples: f64) -> Level {
        self.level(expected / samples)
    }

    /// The level exceeded at `t` clusters per sample.
    fn level(&self, t: f64) -> Level {
        let m = self.profile();
        if t.is_nan() || t <= 0.0 {
            return Level {
                value: None,
                low: None,
                high: None,
                method: Method::Body,
            };
        }
        if t < m.rate() {
            let (lo, hi) = m.level_interval(t, chi2_1(self.confidence));
            let u = self.threshold;
            return Level {
                value: Some(u + m.level(t)),
                low: Some(u + lo),
                high: hi.is_finite().then_some(u + hi),
                method: Method::Gpd,
            };
        }
        self.empirical(t * self.cluster_size())
    }

    /// The empirical level exceeded with probability `p` per sample, with an order-statistic
    /// interval (samples taken as independent): None where it lies below the kept top.
    fn empirical(&self, p: f64) -> Level {
        let np = p * self.n as f64;
        let k = np.ceil().max(1.0) as usize;
        let z = z_of(self.confidence);
        let r1 = (np - z * np.sqrt()).floor();
        let r2 = (np + z * np.sqrt()).ceil() as usize;
        let at = |r: usize| self.top.get(r.wrapping_sub(1)).copied();
        let value = at(k);
        Level {
            value,
            low: value.and(at(r2.max(k))),
            high: if r1 < 1.0 {
                None
            } else {
                value.and(at(r1 as usize))
            },
            method: if value.is_some() {
                Method::Empirical
            } else {
                Method::Body
            },
        }
    }

    /// The probability per sample of exceeding `x`, with its interval: (estimate, low, high).
    pub fn exceedance(&self, x: f64) -> (f64, f64, f64) {
        let n = self.n as f64;
        if x <= self.threshold {
            // Inside the data: count, with a Poisson-normal interval.
            let k = self.top.iter().take_while(|&&v| v > x).count() as f64;
            let z = z_of(self.confidence);
            let lo = (k - z * k.sqrt()).max(0.0) / n;
            let hi = (k + z * k.sqrt() + z * z / 2.0) / n;
            return (k / n, lo, hi.min(1.0));
        }
        let m = self.profile();
        let (t, lo, hi) = m.rate_interval(x - self.threshold, chi2_1(self.confidence));
        let c = self.cluster_size();
        (t * c, lo * c, (hi * c).min(1.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(values: &[f64]) -> Sample {
        Sample {
            n: values.len() as u64,
            top: values
                .iter()
                .enumerate()
                .map(|(i, &value)| Exceedance {
                    value,
                    series: 0,
                    pos: i as u64,
                })
                .collect(),
            ordered: true,
        }
    }

    /// 5 + Exp(mean 2) at the golden-ratio quantiles.
    fn exp_data(n: usize) -> Vec<f64> {
        (1..=n)
            .map(|i| 5.0 - 2.0 * ((i as f64 * 0.6180339887498949) % 1.0).ln())
            .collect()
    }

    #[test]
    fn an_exponential_tail_is_found_and_extrapolated() {
        let m = estimate(&sample(&exp_data(50_000)), &Config::default()).unwrap();
        assert!(m.fit.xi.abs() < 0.1, "{:?}", m.fit);
        assert!((m.fit.sigma / 2.0 - 1.0).abs() < 0.15, "{:?}", m.fit);
        assert_eq!(m.extremal_index, Some(1.0));
        assert_eq!(m.exceedances, m.clusters);
        for p in [1e-5, 1e-7, 1e-9] {
            let l = m.per_sample(p);
            let truth = 5.0 + 2.0 * (1.0 / p).ln();
            assert_eq!(l.method, Method::Gpd);
            assert!(
                l.low.unwrap() < truth && truth < l.high.unwrap(),
                "{p}: {l:?}"
            );
        }
        // Inside the data: the order statistic.
        let l = m.per_sample(0.2);
        assert_eq!(l.method, Method::Empirical);
        // Per unit of time: 1000 samples a second, one burst a day.
        let day = m.per_samples(1.0, 86_400_000.0);
        let truth = 5.0 + 2.0 * 86_400_000f64.ln();
        assert!(
            day.low.unwrap() < truth && truth < day.high.unwrap(),
            "{day:?}"
        );
        // The rate at a level beyond the data brackets the truth.
        let (r, lo, hi) = m.exceedance(45.0);
        let truth = (-(45.0f64 - 5.0) / 2.0).exp();
        assert!(
            lo < truth && truth < hi && lo < r && r < hi,
            "{lo} {r} {hi} vs {truth}"
        );
    }

    #[test]
    fn refuses_too_few_a_far_mode_and_an_abrupt_end() {
        let r = estimate(&sample(&exp_data(200)), &Config::default()).unwrap_err();
        assert_eq!(r.kind, RefusalKind::TooFew);
        assert!(r.help.contains("more data"), "{}", r.help);
        let mut v = exp_data(50_000);
        v.extend([400.0, 420.0, 450.0]);
        let r = estimate(&sample(&v), &Config::default()).unwrap_err();
        assert_eq!(r.kind, RefusalKind::SecondRegime, "{}", r.reason);
        // Uniform data end abruptly: shape -1.
        let u: Vec<f64> = (1..=50_000)
            .map(|i| (i as f64 * 0.6180339887498949) % 1.0)
            .collect();
        let r = estimate(&sample(&u), &Config::default()).unwrap_err();
        assert!(
            matches!(r.kind, RefusalKind::Shape | RefusalKind::FitRejected),
            "{r:?}"
        );
    }
}
