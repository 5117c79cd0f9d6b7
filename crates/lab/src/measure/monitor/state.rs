//! What the monitor's endpoint and status line read while it runs: the shared state built at
//! start (tallies, labels, counters, windows), and the status text of `/status` and SIGHUP.

use super::metrics::Shared;
use super::tally::Tally;
use super::{causes, window, MonitorConfig};
use latlab_core::result::Environment;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::SystemTime;

/// The info metric's labels.
pub(super) fn info_labels(env: &Environment, cfg: &MonitorConfig) -> Vec<(String, String)> {
    [
        ("host", env.hostname.clone()),
        ("monitor", cfg.monitor_id.clone()),
        ("kernel", env.kernel_release.clone()),
        ("preemption", env.preemption.clone()),
        ("clocksource", env.clocksource.clone()),
        ("isolated_cpus", env.isolated_cpus.clone()),
        ("version", env.tool_version.clone()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

/// The status text of `/status` and SIGHUP.
pub(crate) fn status(s: &Shared, id: &str) -> String {
    let up = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
        - s.started_unix_s;
    let mut out = format!(
        "latlab monitor {id}: up {up:.0} s, {} CPUs every {} µs, {} snapshots stored ({} failed), {} scrapes\n",
        s.cpus.len(),
        s.interval_ns / 1000,
        s.snapshots.load(Ordering::Relaxed),
        s.snapshot_failures.load(Ordering::Relaxed),
        s.scrapes.load(Ordering::Relaxed)
    );
    if let Some(w) = &s.exposure {
        out.push_str(&format!("warning: {w}\n"));
    }
    let closed = s.windows.closed();
    out.push_str(&format!(
        "windows of {} s, aligned to the wall clock; the last closed at Unix time {}\n",
        s.windows.len_ns / 1_000_000_000,
        closed.end_unix_ns / 1_000_000_000
    ));
    for (cpu, t) in &s.cpus {
        out.push_str(&format!(
            "cpu {cpu}: {} samples, max {:.1} µs, {} overruns, {} lost, {} over threshold\n",
            t.read_buckets().1,
            t.max_ns.load(Ordering::Relaxed) as f64 / 1e3,
            t.overruns.load(Ordering::Relaxed),
            t.lost.load(Ordering::Relaxed),
            t.exceeded.load(Ordering::Relaxed)
        ));
    }
    for (cpu, t) in s.causes.iter().flat_map(|c| c.read()) {
        let late: u64 = t.late_ns.iter().sum();
        if late == 0 {
            out.push_str(&format!("cpu {cpu} (--trace): no late wake-ups\n"));
            continue;
        }
        let kinds: Vec<String> = causes::CAUSES
            .iter()
            .zip(t.late_ns)
            .filter(|k| k.1 > 0)
            .map(|(k, ns)| format!("{k} {:.0} %", 100.0 * ns as f64 / late.max(1) as f64))
            .collect();
        let top = t
            .groups
            .iter()
            .max_by_key(|g| g.1)
            .map_or(String::new(), |g| format!("; top culprit group {}", g.0));
        out.push_str(&format!(
            "cpu {cpu} (--trace): {} late wake-ups, {:.2} ms late: {}{top}\n",
            t.wakeups.iter().sum::<u64>(),
            late as f64 / 1e6,
            kinds.join(", ")
        ));
    }
    out
}

/// The warning for an endpoint reachable beyond this machine without TLS and authentication.
pub(super) fn exposure_warning(cfg: &MonitorConfig) -> Option<String> {
    let guarded = cfg
        .web
        .as_ref()
        .is_some_and(|w| w.tls.is_some() && w.needs_auth());
    (!cfg.listen.ip().is_loopback() && !guarded).then(|| {
        format!(
            "--listen {} is not loopback and the endpoint has no TLS with basic authentication (--web-config): anyone who reaches the port reads the metrics",
            cfg.listen
        )
    })
}

/// What the endpoint reads: the tallies, labels, counters and windows of the run.
pub(super) fn shared_state(
    cfg: &MonitorConfig,
    env: &Environment,
    tallies: &[Arc<Tally>],
    causes: Option<Arc<causes::Causes>>,
) -> Shared {
    let started_unix_s = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64());
    Shared {
        cpus: cfg
            .cpus
            .iter()
            .map(|c| c.to_string())
            .zip(tallies.iter().cloned())
            .collect(),
        info: info_labels(env, cfg),
        interval_ns: cfg.interval_ns,
        threshold_ns: cfg.threshold_ns,
        started_unix_s,
        snapshots: AtomicU64::new(0),
        snapshot_failures: AtomicU64::new(0),
        scrapes: AtomicU64::new(0),
        windows: window::Windows::new(cfg.window_ns, tallies, window::unix_now_ns()),
        exposure: exposure_warning(cfg),
        causes,
        runs: Default::default(),
        explained: Default::default(),
    }
}
