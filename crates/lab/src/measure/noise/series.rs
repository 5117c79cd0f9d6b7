//! A `noise` run's result model: each measured CPU's repeats folded into one series, with the
//! noise figures in its `extra` and latlab's own RT-throttling gaps told apart from the system's.

use super::config::NoiseConfig;
use super::worker::{self, SpinOut};
use super::{report, Disturbance};
use latlab_core::result::{Environment, Series, Timeline};
use latlab_core::stats::dist::Dist;
use latlab_core::stats::{LatHistogram, Percentiles, Recorder, Summary};

/// Per-CPU series aggregated over repeats, with the noise figures in `extra`.
pub(super) fn build_series(
    cfg: &NoiseConfig,
    env: &Environment,
    repeats: &[Vec<SpinOut>],
    dists: &[Option<Disturbance>],
    warnings: &mut Vec<String>,
) -> Vec<Series> {
    let throttle = Throttle::of(cfg, env);
    let mut out = Vec::new();
    for (i, &cpu) in cfg.cpus.iter().enumerate() {
        let per: Vec<&SpinOut> = repeats.iter().map(|r| &r[i]).collect();
        out.push(cpu_series(cfg, cpu, &per, dists, throttle, warnings));
    }
    out
}

/// The RT-throttling window (sched_rt_period_us - sched_rt_runtime_us, ns) when the spinners
/// ran real-time under throttling: a gap that long is latlab's own doing (its SCHED_FIFO
/// spinner was throttled), not the system's, and the headline max leaves it out.
#[derive(Debug, Clone, Copy)]
struct Throttle(Option<u64>);

impl Throttle {
    /// The window of this run, if its spinners could be throttled.
    fn of(cfg: &NoiseConfig, env: &Environment) -> Throttle {
        Throttle(match (env.sched_rt_runtime_us, env.sched_rt_period_us) {
            (Some(rt), Some(p)) if rt >= 0 && rt < p && cfg.policy.is_rt() => {
                Some(((p - rt) * 1000) as u64)
            }
            _ => None,
        })
    }

    /// Whether a gap of `d` ns is the throttling window (within a tenth).
    fn own(self, d: u64) -> bool {
        self.0.is_some_and(|w| d.abs_diff(w) * 10 <= w)
    }

    /// A repeat's largest gap that the system caused.
    fn system_max(self, o: &SpinOut) -> u64 {
        if self.own(o.max_gap_ns) {
            o.events
                .iter()
                .map(|e| e.dur_ns)
                .filter(|&d| !self.own(d))
                .max()
                .unwrap_or(0)
        } else {
            o.max_gap_ns
        }
    }

    /// The gaps of all repeats that are the throttling window, ns.
    fn gaps_in(self, per: &[&SpinOut]) -> Vec<u64> {
        if self.0.is_none() {
            return Vec::new();
        }
        per.iter()
            .flat_map(|o| o.events.iter())
            .map(|e| e.dur_ns)
            .filter(|&d| self.own(d))
            .collect()
    }
}

/// One CPU's figures summed over its repeats.
struct Totals {
    gaps: LatHistogram,
    interruptions: Recorder,
    iterations: u64,
    runtime_ns: u64,
    dropped: u64,
    /// The largest gap the system caused.
    max_ns: u64,
    /// The largest gap, latlab's own throttling gaps included.
    raw_max_ns: u64,
}

impl Totals {
    /// Sums the repeats of one CPU.
    fn over(per: &[&SpinOut], throttle: Throttle) -> Totals {
        let mut t = Totals {
            gaps: LatHistogram::new(),
            interruptions: Recorder::new(),
            iterations: 0,
            runtime_ns: 0,
            dropped: 0,
            max_ns: 0,
            raw_max_ns: 0,
        };
        for o in per {
            t.gaps.add(&o.gaps);
            t.interruptions.merge(&o.interruptions);
            t.iterations += o.iterations;
            t.runtime_ns += o.runtime_ns;
            t.dropped += o.events_dropped;
            t.max_ns = t.max_ns.max(throttle.system_max(o));
            t.raw_max_ns = t.raw_max_ns.max(o.max_gap_ns);
        }
        t
    }

    /// The gap summary; its max is the system's, and the mean is runtime over iterations.
    fn summary(&self) -> Summary {
        let (iters, max) = (self.iterations, self.max_ns);
        let d = Dist::from_histogram(&self.gaps.to_data(), 1.0);
        Summary {
            count: iters,
            min_ns: if iters > 0 { d.min() as u64 } else { 0 },
            max_ns: max,
            mean_ns: if iters > 0 {
                self.runtime_ns as f64 / iters as f64
            } else {
                0.0
            },
            stddev_ns: d.stddev(),
            percentiles: Percentiles::from_hist(&self.gaps).capped(max),
        }
    }
}

/// One CPU's series; what the reader should know about it goes to `warnings`.
fn cpu_series(
    cfg: &NoiseConfig,
    cpu: usize,
    per: &[&SpinOut],
    dists: &[Option<Disturbance>],
    throttle: Throttle,
    warnings: &mut Vec<String>,
) -> Series {
    let totals = Totals::over(per, throttle);
    let maxes: Vec<u64> = per.iter().map(|o| throttle.system_max(o)).collect();
    let throttled = throttle.gaps_in(per);
    if let Some(&g) = throttled.first() {
        warnings.push(format!(
            "CPU {cpu}: {} gap(s) of about {} us (e.g. {} us) equal the RT-throttling window \
             (sched_rt_period_us - sched_rt_runtime_us): caused by latlab's own RT priority, \
             not by the system; left out of the max gap (with them: {} us)",
            throttled.len(),
            throttle.0.unwrap_or(0) / 1000,
            g / 1000,
            totals.raw_max_ns / 1000
        ));
    }
    let disturb = report::disturbance_split(per, dists);
    let extra = extra(cfg, &totals, maxes, throttled.len(), disturb);
    if totals.dropped > 0 {
        warnings.push(format!("CPU {cpu}: {} interruptions smaller than the largest {} of their repeat have no time stamp (all are counted, during and outside a --disturb command too; only the largest are offered to --trace)", totals.dropped, worker::EVENTS));
    }
    Series {
        name: format!("cpu{cpu}"),
        // Where the spinner really ran (read back), not the CPU it was meant for.
        cpu: per.iter().find_map(|o| o.ran_on).or(Some(cpu)),
        policy: cfg.policy.to_string(),
        prio: cfg.prio,
        interval_ns: None,
        unit: "ns".into(),
        summary: totals.summary(),
        overruns: 0,
        lost_samples: 0,
        histogram: totals.gaps.to_data(),
        extra: Some(extra),
        timeline: Timeline::concat(
            &per.iter()
                .filter_map(|o| o.timeline.clone())
                .collect::<Vec<_>>(),
        ),
    }
}

/// The noise figures of one CPU, as its series' `extra` holds them.
fn extra(
    cfg: &NoiseConfig,
    t: &Totals,
    per_repeat_max: Vec<u64>,
    rt_throttle_gaps: usize,
    disturbance: serde_json::Value,
) -> serde_json::Value {
    let (iters, runtime) = (t.iterations, t.runtime_ns);
    let secs = runtime as f64 / 1e9;
    let is = t.interruptions.summary();
    let total = t.interruptions.sum;
    let outliers = report::outliers(&per_repeat_max);
    serde_json::json!({
        "loops_per_sec": if secs > 0.0 { iters as f64 / secs } else { 0.0 },
        "runtime_ns": runtime,
        "threshold_ns": cfg.threshold_ns,
        "interruptions": {
            "count": is.count,
            "per_sec": if secs > 0.0 { is.count as f64 / secs } else { 0.0 },
            "min_ns": is.min_ns,
            "median_ns": is.percentiles.p50,
            "mean_ns": is.mean_ns,
            "p90_ns": is.percentiles.p90,
            "p99_ns": is.percentiles.p99,
            "p99_9_ns": is.percentiles.p99_9,
            "max_ns": is.max_ns,
            "total_ns": total as u64,
            "available_pct": if runtime > 0 { 100.0 * (1.0 - total as f64 / runtime as f64) } else { 0.0 },
        },
        "per_repeat_max_ns": per_repeat_max,
        "outlier_repeats": outliers,
        "events_dropped": t.dropped,
        "rt_throttle_gaps": rt_throttle_gaps,
        "max_with_own_gaps_ns": t.raw_max_ns,
        "disturbance": disturbance,
    })
}
