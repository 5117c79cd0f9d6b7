//! What `noise` shows: a line per repeat, the seed's per-CPU max table (with repeats: median,
//! mean and max of the per-CPU max, with and without outliers), the sysjitter-style table, and
//! how gaps relate to the disturbing command.

use super::worker::SpinOut;
use super::{Disturbance, NoiseOutcome};
use latlab_core::config::DisplayUnit;
use latlab_analysis::export::columns;
use crate::measure::noise::config::NoiseConfig;

/// A repeat whose max exceeds this many times the median of all repeats is an outlier.
pub(crate) const OUTLIER_FACTOR: u64 = 10;

/// Indices of outlier repeats: max gap above 10× the median max (needs 3 or more repeats).
pub(crate) fn outliers(maxes: &[u64]) -> Vec<usize> {
    if maxes.len() < 3 {
        return Vec::new();
    }
    let mut s = maxes.to_vec();
    s.sort_unstable();
    let median = s[s.len() / 2];
    maxes
        .iter()
        .enumerate()
        .filter(|(_, &m)| m > median.saturating_mul(OUTLIER_FACTOR))
        .map(|(i, _)| i)
        .collect()
}

/// Interruptions during the disturbing command and outside it, over all repeats.
pub(crate) fn disturbance_split(per: &[&SpinOut], dists: &[Option<Disturbance>]) -> serde_json::Value {
    if dists.iter().all(Option::is_none) {
        return serde_json::Value::Null;
    }
    // Each spinner told every interruption during or outside the command as it came.
    let (mut n_in, mut max_in, mut n_out, mut max_out) = (0u64, 0u64, 0u64, 0u64);
    for o in per {
        n_in += o.split.during.0;
        max_in = max_in.max(o.split.during.1);
        n_out += o.split.outside.0;
        max_out = max_out.max(o.split.outside.1);
    }
    serde_json::json!({
        "during": {"interruptions": n_in, "max_ns": max_in},
        "outside": {"interruptions": n_out, "max_ns": max_out},
    })
}

/// One line per finished repeat: the max gap on each CPU.
pub(crate) fn repeat_line(
    r: u32,
    of: u32,
    cfg: &NoiseConfig,
    outs: &[SpinOut],
    unit: DisplayUnit,
) -> String {
    let parts: Vec<String> = cfg
        .cpus
        .iter()
        .zip(outs)
        .map(|(c, o)| format!("cpu{c} {}", unit.fmt_ns(o.max_gap_ns as f64)))
        .collect();
    format!("repeat {r}/{of}: max gap ({unit}) {}", parts.join("  "))
}

fn stats(v: &[u64]) -> (f64, f64, u64) {
    let mut s = v.to_vec();
    s.sort_unstable();
    let median = if s.is_empty() {
        0.0
    } else {
        s[s.len() / 2] as f64
    };
    let mean = s.iter().sum::<u64>() as f64 / s.len().max(1) as f64;
    (median, mean, s.last().copied().unwrap_or(0))
}

/// The full report: the header, the seed's max gap per CPU, sysjitter's table, the
/// disturbance and the warnings.
pub(crate) fn render(o: &NoiseOutcome, cfg: &NoiseConfig) -> String {
    let mut s = header(o, cfg);
    s.push_str(&max_gaps(o, cfg));
    s.push_str(&own_gaps(o, cfg));
    s.push('\n');
    s.push_str(&sysjitter(o, cfg));
    s.push_str(&disturbance(o, cfg));
    for w in &o.run.warnings {
        s.push_str(&format!("warning: {w}\n"));
    }
    s
}

/// The run's header: CPUs, policy, clock, repeats, threshold, kernel.
fn header(o: &NoiseOutcome, cfg: &NoiseConfig) -> String {
    let run = &o.run;
    let u = cfg.unit;
    let f = |v: f64| u.fmt_ns(v);
    let mut s = format!(
        "latlab noise  {} CPU(s)  {} {}  clock {}{}  {} x {:.2} s  threshold {} {u}  run {}{}\n",
        cfg.cpus.len(),
        cfg.policy,
        cfg.prio,
        match cfg.clock {
            crate::measure::noise::config::NoiseClock::Tsc => "tsc",
            crate::measure::noise::config::NoiseClock::Monotonic => "monotonic",
        },
        if o.ticks_per_ns != 1.0 {
            format!(" ({:.0} MHz)", o.ticks_per_ns * 1000.0)
        } else {
            String::new()
        },
        o.repeats.len(),
        cfg.duration_ns as f64 / 1e9,
        f(cfg.threshold_ns as f64),
        run.id,
        // The planned length stays in the header; what was measured is said beside it.
        if run.interrupted {
            format!("  (interrupted after {:.2} s)", run.duration_s)
        } else {
            String::new()
        }
    );
    s.push_str(&format!(
        "kernel {} ({})  main CPU {}  latencies in {u}\n\n",
        run.environment.kernel_release, run.environment.preemption, cfg.main_cpu
    ));
    s
}

/// Seed-style: the max gap per CPU, over the repeats with their outliers when several.
fn max_gaps(o: &NoiseOutcome, cfg: &NoiseConfig) -> String {
    let run = &o.run;
    let u = cfg.unit;
    let f = |v: f64| u.fmt_ns(v);
    let mut s = String::new();
    let multi = o.repeats.len() > 1;
    let mut rows = Vec::new();
    for ser in &run.series {
        let x = ser.extra.as_ref().cloned().unwrap_or_default();
        let maxes: Vec<u64> = x["per_repeat_max_ns"]
            .as_array()
            .map(|a| a.iter().filter_map(|v| v.as_u64()).collect())
            .unwrap_or_default();
        let outl: Vec<usize> = x["outlier_repeats"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_u64().map(|v| v as usize))
                    .collect()
            })
            .unwrap_or_default();
        let cpu = ser.cpu.map_or("-".into(), |c| c.to_string());
        if multi {
            let (md, mn, mx) = stats(&maxes);
            let kept: Vec<u64> = maxes
                .iter()
                .enumerate()
                .filter(|(i, _)| !outl.contains(i))
                .map(|(_, &v)| v)
                .collect();
            let (kmd, kmn, kmx) = stats(&kept);
            let outl_txt = if outl.is_empty() {
                "-".to_string()
            } else {
                outl.iter()
                    .map(|i| format!("#{} ({})", i + 1, f(maxes[*i] as f64)))
                    .collect::<Vec<_>>()
                    .join(" ")
            };
            rows.push(vec![
                cpu,
                f(md),
                f(mn),
                f(mx as f64),
                outl_txt,
                f(kmd),
                f(kmn),
                f(kmx as f64),
            ]);
        } else {
            rows.push(vec![cpu, f(ser.summary.max_ns as f64)]);
        }
    }
    if multi {
        s.push_str("max gap per CPU over repeats (outliers: max above 10x the median; shown, never dropped)\n");
        s.push_str(&columns::render(
            &[
                "cpu",
                "median max",
                "mean max",
                "max",
                "outlier repeats",
                "median w/o",
                "mean w/o",
                "max w/o",
            ],
            &rows,
        ));
    } else {
        s.push_str(&columns::render(&["cpu", "max gap"], &rows));
    }
    s
}

/// Gaps latlab caused itself (its RT spinner throttled) are not in the max: said here.
fn own_gaps(o: &NoiseOutcome, cfg: &NoiseConfig) -> String {
    let run = &o.run;
    let u = cfg.unit;
    let f = |v: f64| u.fmt_ns(v);
    let mut s = String::new();
    let own: Vec<String> = run
        .series
        .iter()
        .filter_map(|x| {
            let e = x.extra.as_ref()?;
            let n = e["rt_throttle_gaps"].as_u64().filter(|&n| n > 0)?;
            Some(format!(
                "cpu{}: {n} gap(s), max with them {} {u}",
                x.cpu.unwrap_or(0),
                f(e["max_with_own_gaps_ns"].as_f64().unwrap_or(0.0))
            ))
        })
        .collect();
    if !own.is_empty() {
        s.push_str(&format!(
            "max gap leaves out gaps as long as the RT-throttling window (latlab's own {} \
             spinner throttled, not the system's noise): {}\n",
            cfg.policy,
            own.join(", ")
        ));
    }
    s
}

/// sysjitter-style: one column per CPU.
fn sysjitter(o: &NoiseOutcome, cfg: &NoiseConfig) -> String {
    let run = &o.run;
    let u = cfg.unit;
    let f = |v: f64| u.fmt_ns(v);
    let mut s = String::new();
    let labels = [
        ("loops/s", "loops_per_sec"),
        ("int_n", "count"),
        ("int_n_per_sec", "per_sec"),
        ("int_min", "min_ns"),
        ("int_median", "median_ns"),
        ("int_mean", "mean_ns"),
        ("int_90", "p90_ns"),
        ("int_99", "p99_ns"),
        ("int_999", "p99_9_ns"),
        ("int_max", "max_ns"),
        ("int_total", "total_ns"),
        ("int_total(%)", "lost_pct"),
    ];
    let mut head = vec!["core_i:".to_string()];
    head.extend(
        run.series
            .iter()
            .map(|x| x.cpu.map_or("-".into(), |c| c.to_string())),
    );
    let mut sj = Vec::new();
    sj.push(
        std::iter::once(format!("threshold({u}):"))
            .chain(run.series.iter().map(|_| f(cfg.threshold_ns as f64)))
            .collect(),
    );
    sj.push(
        std::iter::once("runtime(s):".to_string())
            .chain(run.series.iter().map(|x| {
                format!(
                    "{:.3}",
                    x.extra
                        .as_ref()
                        .map_or(0.0, |e| e["runtime_ns"].as_f64().unwrap_or(0.0))
                        / 1e9
                )
            }))
            .collect(),
    );
    for (label, key) in labels {
        let mut row = vec![format!("{label}:")];
        for x in &run.series {
            let e = x.extra.as_ref().cloned().unwrap_or_default();
            let i = &e["interruptions"];
            let cell = match key {
                "loops_per_sec" => format!("{:.0}", e["loops_per_sec"].as_f64().unwrap_or(0.0)),
                "count" => i["count"].to_string(),
                "per_sec" => format!("{:.1}", i["per_sec"].as_f64().unwrap_or(0.0)),
                "lost_pct" => format!(
                    "{:.3}",
                    100.0 - i["available_pct"].as_f64().unwrap_or(100.0)
                ),
                // A percentile of the interruptions only where their count supports it.
                "median_ns" | "p90_ns" | "p99_ns" | "p99_9_ns" => {
                    let q = match key {
                        "median_ns" => 0.5,
                        "p90_ns" => 0.9,
                        "p99_ns" => 0.99,
                        _ => 0.999,
                    };
                    let n = i["count"].as_u64().unwrap_or(0);
                    if n >= latlab_core::stats::dist::min_n_for(q) {
                        f(i[key].as_f64().unwrap_or(0.0))
                    } else {
                        "-".into()
                    }
                }
                k => f(i[k].as_f64().unwrap_or(0.0)),
            };
            row.push(cell);
        }
        sj.push(row);
    }
    let head_refs: Vec<&str> = head.iter().map(String::as_str).collect();
    s.push_str(&columns::render(&head_refs, &sj));
    s
}

/// `--disturb`: per CPU, interruptions during the command and outside it.
fn disturbance(o: &NoiseOutcome, cfg: &NoiseConfig) -> String {
    let run = &o.run;
    let u = cfg.unit;
    let f = |v: f64| u.fmt_ns(v);
    let mut s = String::new();
    if let Some(cmd) = &cfg.disturb {
        s.push_str(&format!(
            "\ndisturbance: '{cmd}' on CPU {}\n",
            cfg.disturb_cpu
        ));
        for x in &run.series {
            let d = &x.extra.as_ref().cloned().unwrap_or_default()["disturbance"];
            if d.is_null() {
                continue;
            }
            s.push_str(&format!(
                "  cpu{}: during it {} interruption(s), max {}; outside {} interruption(s), max {} ({u})\n",
                x.cpu.unwrap_or(0),
                d["during"]["interruptions"],
                f(d["during"]["max_ns"].as_f64().unwrap_or(0.0)),
                d["outside"]["interruptions"],
                f(d["outside"]["max_ns"].as_f64().unwrap_or(0.0)),
            ));
        }
        for (r, d) in o.disturbances.iter().enumerate() {
            if let Some(d) = d {
                if d.exit_code.is_some_and(|c| c != 0) {
                    s.push_str(&format!(
                        "  repeat {}: the command exited with status {}\n",
                        r + 1,
                        d.exit_code.unwrap_or(0)
                    ));
                }
            }
        }
    }
    s
}

/// The live view on a terminal: per CPU, loops, interruptions so far, the last and the largest.
pub(crate) fn live_view(
    cfg: &NoiseConfig,
    live: Vec<std::sync::Arc<latlab_core::rt::Live>>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> latlab_core::live::LiveView {
    use std::sync::atomic::Ordering;
    let unit = cfg.unit;
    let cpus = cfg.cpus.clone();
    let lines = move || {
        cpus.iter()
            .zip(&live)
            .map(|(c, s)| {
                let f = |v: u64| unit.fmt_ns(v as f64);
                format!(
                    "cpu{c:<3} loops {:>12}  interruptions {:>7}  last {:>9}  max {:>9} {unit}",
                    s.count.load(Ordering::Relaxed),
                    s.sum.load(Ordering::Relaxed),
                    f(s.cur.load(Ordering::Relaxed)),
                    f(s.max.load(Ordering::Relaxed)),
                )
            })
            .collect()
    };
    latlab_core::live::LiveView::start(lines, stop)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A gap the length of the RT-throttling window (latlab's FIFO spinner throttled) is left
    /// out of the headline max, and the table says so.
    #[test]
    fn the_max_gap_leaves_out_what_latlab_caused() {
        use super::super::worker::{Event, SpinOut};
        use latlab_core::stats::histogram::LatHistogram;
        use latlab_core::stats::summary::Recorder;
        let env: latlab_core::result::Environment = serde_json::from_value(serde_json::json!({
            "hostname": "h", "kernel_release": "6.1", "kernel_version": "v", "kernel_cmdline": "",
            "preemption": "full", "clocksource": "tsc", "available_clocksources": [],
            "cpu_model": "m", "cpus_online": 2, "online_cpus": "0-1", "isolated_cpus": "",
            "nohz_full_cpus": "", "sched_rt_runtime_us": 950000, "sched_rt_period_us": 1000000,
            "governor": null, "tool_version": "0"
        }))
        .unwrap();
        let cfg = NoiseConfig {
            cpus: vec![1],
            main_cpu: 0,
            policy: latlab_core::sys::policy::Policy::Fifo,
            prio: 50,
            duration_ns: 5_000_000_000,
            threshold_ns: 1000,
            clock: crate::measure::noise::config::NoiseClock::Monotonic,
            engine: crate::measure::noise::config::NoiseEngine::Spin,
            repeat: 1,
            disturb: None,
            disturb_cpu: 0,
            force: false,
            strict: false,
            quiet: true,
            unit: DisplayUnit::Us,
            json: None,
            trace_threshold_ns: None,
            trace_save: None,
            trace_actions: Vec::new(),
            trace_limits: Default::default(),
        };
        let mut gaps = LatHistogram::new();
        let mut intr = Recorder::new();
        for d in [100u64, 120, 8_000, 50_010_000] {
            gaps.record(d);
            if d >= 1000 {
                intr.record(d);
            }
        }
        let out = SpinOut {
            ran_on: None,
            iterations: 4,
            runtime_ns: 5_000_000_000,
            gaps,
            max_gap_ns: 50_010_000,
            interruptions: intr,
            events: vec![
                Event {
                    start_ns: 1,
                    dur_ns: 8_000,
                },
                Event {
                    start_ns: 2,
                    dur_ns: 50_010_000,
                },
            ],
            events_dropped: 0,
            split: Default::default(),
            timeline: None,
            stray: Default::default(),
        };
        let mut warnings = Vec::new();
        let series = super::super::build_series(&cfg, &env, &[vec![out]], &[None], &mut warnings);
        assert_eq!(
            series[0].summary.max_ns, 8_000,
            "the system's max, not latlab's"
        );
        let e = series[0].extra.as_ref().unwrap();
        assert_eq!(e["rt_throttle_gaps"], 1);
        assert_eq!(e["max_with_own_gaps_ns"], 50_010_000);
        assert_eq!(e["per_repeat_max_ns"][0], 8_000);
        assert!(warnings[0].contains("left out of the max gap (with them: 50010 us)"));
    }

    #[test]
    fn outliers_are_far_above_the_median() {
        assert_eq!(outliers(&[35, 40, 150_000, 38, 36]), vec![2]);
        assert!(outliers(&[35, 40, 38]).is_empty());
        assert!(
            outliers(&[35, 150_000]).is_empty(),
            "too few repeats to judge"
        );
    }
}
