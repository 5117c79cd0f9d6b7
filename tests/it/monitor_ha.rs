//! An HA pair of real Prometheus servers (1 s and 3 s scrape intervals) scraping one monitor
//! while a stall hits CPU 1: through their HTTP APIs both report the same window maxima for the
//! same windows, and both see the stall on CPU 1 in the same windows.

use crate::monitor::{Monitor, Prometheus};
use crate::util::{rt_test, skip, stall};
use std::collections::BTreeMap;
use std::time::Duration;

/// (timestamp in ms, value) samples of each series of `metric` over the last `range`, by `cpu`
/// label ("" for none).
fn series(prom: &Prometheus, metric: &str, range: &str) -> BTreeMap<String, Vec<(i64, f64)>> {
    let body = prom.query(&format!("{metric}[{range}]"));
    let v: serde_json::Value =
        serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body:?}"));
    let mut out = BTreeMap::new();
    for r in v["data"]["result"].as_array().cloned().unwrap_or_default() {
        let cpu = r["metric"]["cpu"].as_str().unwrap_or("").to_string();
        let vals = r["values"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| {
                let ts = (p[0].as_f64().unwrap() * 1000.0).round() as i64;
                (ts, p[1].as_str().unwrap().parse::<f64>().unwrap())
            })
            .collect();
        out.insert(cpu, vals);
    }
    out
}

/// (cpu, window end) → window max, as one Prometheus recorded them.
fn windows(prom: &Prometheus) -> BTreeMap<(String, u64), f64> {
    let ends: BTreeMap<i64, f64> = series(prom, "latlab_window_end_timestamp_seconds", "5m")
        .remove("")
        .unwrap_or_default()
        .into_iter()
        .collect();
    let mut out = BTreeMap::new();
    for (cpu, vals) in series(prom, "latlab_latency_window_max_seconds", "5m") {
        for (ts, v) in vals {
            // The same scrape has the same timestamp for both series.
            if let Some(&end) = ends.get(&ts) {
                if end > 0.0 {
                    out.insert((cpu.clone(), end as u64), v);
                }
            }
        }
    }
    out
}

/// The mechanism, not the host's quiet: the 60 ms stalls injected on CPU 1 are seen there by
/// both servers, in windows both hold, with the same maxima. CPU 0 is measured but nothing is
/// asserted of how quiet it is: on a shared host another tenant can stall it (a fresh clone
/// once saw 100 ms there).
#[test]
fn two_prometheus_servers_at_different_intervals_agree_on_every_window() {
    if !latlab_core::sys::process::command_exists("prometheus") {
        return skip(
            "monitor ha",
            "prometheus is not installed (scripts/test.sh installs it)",
        );
    }
    let Some(_x) = rt_test() else { return };
    let mon = Monitor::start_words("-a 0,1 -p 50 -i 1ms --no-store --window 3s -D 120s");
    let fast = Prometheus::scraping(mon.addr, "1s");
    let slow = Prometheus::scraping(mon.addr, "3s");
    let stalls = stall(mon.child.id(), "latlab-cpu1", 1)
        .after(Duration::from_secs(5))
        .busy(Duration::from_millis(60))
        .repeat(8, Duration::from_secs(1))
        .start();
    std::thread::sleep(Duration::from_secs(36));
    stalls.join().unwrap();
    let (a, b) = (windows(&fast), windows(&slow));
    let common: Vec<_> = a.keys().filter(|k| b.contains_key(*k)).collect();
    assert!(
        common.iter().filter(|k| k.0 == "1").count() >= 5,
        "too few windows both saw: {a:?} / {b:?}"
    );
    for k in &common {
        assert_eq!(
            a[*k], b[*k],
            "window {k:?}: 1 s scraper {} vs 3 s {}",
            a[*k], b[*k]
        );
    }
    // The stall is seen on its CPU, in windows both servers hold (with the same maximum,
    // checked above).
    let stalled: Vec<_> = common
        .iter()
        .filter(|k| k.0 == "1" && a[**k] >= 0.059)
        .collect();
    assert!(
        !stalled.is_empty(),
        "no window both saw holds the stall on CPU 1: {a:?} / {b:?}"
    );
    for m in [&a, &b] {
        assert!(
            m.iter().any(|(k, v)| k.0 == "1" && *v >= 0.059),
            "no stall seen on CPU 1: {m:?}"
        );
        assert!(m.keys().any(|k| k.0 == "0"), "CPU 0 not measured: {m:?}");
    }
    drop((fast, slow));
    drop(mon);
}
