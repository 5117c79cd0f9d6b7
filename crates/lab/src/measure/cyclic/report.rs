//! What `cyclic` shows a person: the live view on a terminal, the final table in the seed's
//! shape, and the cyclictest-style `-h` histogram.

use super::CyclicOutcome;
use latlab_core::config::DisplayUnit;
use latlab_analysis::export::columns;
use crate::measure::cyclic::config::CyclicConfig;
use latlab_core::result::{Run, Series};
use latlab_core::rt::Live;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

pub use latlab_core::live::stdout_is_terminal;

/// True when the JSON result goes to stdout (then the table goes to stderr).
pub(crate) fn json_to_stdout(cfg: &CyclicConfig) -> bool {
    cfg.json.as_deref().is_some_and(|p| p.as_os_str() == "-")
}

/// The live view: per-thread figures, cyclictest-style.
pub(crate) fn live_view(
    cfg: &CyclicConfig,
    live: Vec<Arc<Live>>,
    stop: Arc<AtomicBool>,
) -> latlab_core::live::LiveView {
    let unit = cfg.unit;
    let labels: Vec<String> = cfg
        .threads
        .iter()
        .map(|t| {
            let cpu = t.cpu.map_or("-".into(), |c| c.to_string());
            format!(
                "{:<4} {}/{:<2} cpu {:<3} I:{}",
                t.name,
                t.policy,
                t.prio,
                cpu,
                unit.fmt_ns(t.interval_ns as f64)
            )
        })
        .collect();
    let lines = move || {
        labels
            .iter()
            .zip(&live)
            .map(|(l, s)| {
                let n = s.count.load(Ordering::Relaxed);
                let min = s.min.load(Ordering::Relaxed);
                let f = |v: u64| unit.fmt_ns(v as f64);
                let avg = if n > 0 {
                    s.sum.load(Ordering::Relaxed) as f64 / n as f64
                } else {
                    0.0
                };
                format!(
                    "{l}  C:{n:>9}  Min:{:>8}  Act:{:>8}  Avg:{:>8}  Max:{:>8} {unit}",
                    if n > 0 { f(min) } else { "-".into() },
                    f(s.cur.load(Ordering::Relaxed)),
                    unit.fmt_ns(avg),
                    f(s.max.load(Ordering::Relaxed)),
                )
            })
            .collect()
    };
    latlab_core::live::LiveView::start(lines, stop)
}

/// The final report: a header, the per-thread table (task, loops, min, max, average, sigma,
/// prio as in seed 004, then policy, cpu, percentiles and overruns), warnings.
pub(crate) fn render(o: &CyclicOutcome, unit: DisplayUnit) -> String {
    let run = &o.run;
    let deadline = run
        .series
        .iter()
        .any(|x| dl_count(x, "deadline_misses").is_some());
    let mut s = header(run, deadline, unit);
    let rows: Vec<Vec<String>> = run
        .series
        .iter()
        .map(|x| row(x, deadline, unit))
        .collect();
    let mut head = vec![
        "task", "loops", "min", "max", "average", "sigma", "prio", "policy", "cpu", "interval",
        "p50", "p90", "p99", "p99.9", "p99.99", "overruns",
    ];
    if deadline {
        head.extend(["misses", "over runtime"]);
    }
    s.push_str(&columns::render(&head, &rows));
    if deadline {
        s.push_str(&deadline_legend(&run.parameters["deadline"]));
    }
    for w in &run.warnings {
        s.push_str(&format!("warning: {w}\n"));
    }
    if let Some(c) = &run.check_failure {
        s.push_str(&format!("FAILED {c}\n"));
    }
    s
}

/// A deadline thread's count `key` from its series' extra (None for other threads).
fn dl_count(x: &Series, key: &str) -> Option<u64> {
    x.extra
        .as_ref()
        .and_then(|e| e.get(key))
        .and_then(serde_json::Value::as_u64)
}

/// The report's first lines: what ran, on which kernel, and the unit.
fn header(run: &Run, deadline: bool, unit: DisplayUnit) -> String {
    let e = &run.environment;
    let mut s = String::new();
    let state = if run.interrupted {
        "  (interrupted)"
    } else {
        ""
    };
    s.push_str(&format!(
        "latlab cyclic  {} threads  clock {}  {}  {:.2} s  run {}{state}\n",
        run.series.len(),
        run.parameters["clock"].as_str().unwrap_or("?"),
        if deadline {
            "SCHED_DEADLINE periods"
        } else if run.parameters["relative"].as_bool() == Some(true) {
            "relative sleeps"
        } else {
            "absolute sleeps"
        },
        run.duration_s,
        run.id,
    ));
    let throttle = match (e.sched_rt_runtime_us, e.sched_rt_period_us) {
        (Some(-1), _) => "RT throttling off".to_string(),
        (Some(r), Some(p)) => format!("RT throttling {r}/{p} us"),
        _ => "RT throttling unknown".to_string(),
    };
    s.push_str(&format!(
        "kernel {} ({})  clocksource {}  {}  {throttle}\n",
        e.kernel_release, e.preemption, e.clocksource, e.cpus_said()
    ));
    s.push_str(&format!("latencies in {unit}\n"));
    s
}

/// One thread's row of the table; the deadline columns when any thread had them.
fn row(x: &Series, deadline: bool, unit: DisplayUnit) -> Vec<String> {
    let f = |v: f64| unit.fmt_ns(v);
    // A thread that measured nothing has no figures.
    let g = |v: f64| {
        if x.summary.count == 0 {
            "-".to_string()
        } else {
            f(v)
        }
    };
    // A percentile only where the thread's count supports it (p99.9: 10 000 samples).
    let [p50, p90, p99, p999, p9999] = x
        .summary
        .percentiles
        .supported(x.summary.count)
        .map(|v| v.map_or("-".to_string(), |v| f(v as f64)));
    let mut row = vec![
        x.name.trim_start_matches('T').to_string(),
        x.summary.count.to_string(),
        g(x.summary.min_ns as f64),
        g(x.summary.max_ns as f64),
        g(x.summary.mean_ns),
        g(x.summary.stddev_ns),
        x.prio.to_string(),
        x.policy.clone(),
        x.cpu.map_or("-".into(), |c| c.to_string()),
        f(x.interval_ns.unwrap_or(0) as f64),
        p50,
        p90,
        p99,
        p999,
        p9999,
        x.overruns.to_string(),
    ];
    if deadline {
        let n = |k: &str| dl_count(x, k).map_or("-".into(), |v| v.to_string());
        row.push(n("deadline_misses"));
        row.push(n("runtime_overruns"));
    }
    row
}

/// What the deadline columns count, and the kernel's own count of overruns (`d`: the run's
/// deadline parameters).
fn deadline_legend(d: &serde_json::Value) -> String {
    format!(
        "misses: jobs that ended after period start + deadline; over runtime: jobs whose \
         CPU time by the thread's CPU clock (from one wake-up to the next, interrupt time \
         charged to the thread included) exceeded their runtime; the kernel's own word, \
         SIGXCPU (SCHED_FLAG_DL_OVERRUN, whole process, at most one per tick): {}\n",
        if d["dl_overrun_signal"].as_bool() == Some(true) {
            format!(
                "{} ({})",
                d["sigxcpu"].as_u64().unwrap_or(0),
                d["runtime_overruns_kernel_check"]
                    .as_str()
                    .unwrap_or("not checked")
            )
        } else {
            "not available".to_string()
        }
    )
}

/// The cyclictest-style histogram: one line per µs bucket with a column per thread, then
/// totals, min/avg/max and overflow counts.
pub(crate) fn render_histogram(o: &CyclicOutcome) -> String {
    let len = o.linear.first().map_or(0, |(h, _)| h.len());
    let mut s = String::new();
    s.push_str("# Histogram\n");
    for us in 0..len {
        if o.linear.iter().all(|(h, _)| h[us] == 0) {
            continue;
        }
        s.push_str(&format!("{us:06}"));
        for (h, _) in &o.linear {
            s.push_str(&format!(" {:06}", h[us]));
        }
        s.push('\n');
    }
    let row = |label: &str, f: &dyn Fn(usize) -> String| {
        let mut l = format!("# {label}:");
        for i in 0..o.linear.len() {
            l.push_str(&format!(" {}", f(i)));
        }
        l.push('\n');
        l
    };
    let ser = &o.run.series;
    s.push_str(&row("Total", &|i| format!("{:09}", ser[i].summary.count)));
    s.push_str(&row("Min Latencies", &|i| {
        format!("{:05}", ser[i].summary.min_ns / 1000)
    }));
    s.push_str(&row("Avg Latencies", &|i| {
        format!("{:05}", (ser[i].summary.mean_ns / 1000.0).round() as u64)
    }));
    s.push_str(&row("Max Latencies", &|i| {
        format!("{:05}", ser[i].summary.max_ns / 1000)
    }));
    s.push_str(&row("Histogram Overflows", &|i| {
        format!("{:05}", o.linear[i].1)
    }));
    s
}
