//! An HA pair of real Prometheus servers (1 s and 3 s scrape intervals) scraping one monitor
//! while a stall hits CPU 1: through their HTTP APIs both report the same window maxima for the
//! same windows, and the stall only on CPU 1.

use crate::monitor::{free_port, get, Monitor};
use crate::util::{exclusive, rt_unavailable, skip, stall_repeatedly};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A private Prometheus (process, API address, data directory kept until the drop), killed
/// when dropped.
struct Prom(Child, SocketAddr, #[allow(dead_code)] tempfile::TempDir);

impl Drop for Prom {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn prometheus(target: SocketAddr, every: &str) -> Prom {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("prometheus.yml");
    std::fs::write(
        &cfg,
        format!(
            "global:\n  scrape_interval: {every}\nscrape_configs:\n  - job_name: latlab\n    static_configs:\n      - targets: ['{target}']\n"
        ),
    )
    .unwrap();
    let api: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let child = Command::new("prometheus")
        .arg(format!("--config.file={}", cfg.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.path().join("tsdb").display()
        ))
        .arg(format!("--web.listen-address={api}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    Prom(child, api, dir)
}

/// (timestamp in ms, value) samples of each series of `metric` over the last `range`, by `cpu`
/// label ("" for none).
fn series(api: SocketAddr, metric: &str, range: &str) -> BTreeMap<String, Vec<(i64, f64)>> {
    let (_, body) = get(api, &format!("/api/v1/query?query={metric}%5B{range}%5D")).unwrap();
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
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
fn windows(api: SocketAddr) -> BTreeMap<(String, u64), f64> {
    let ends: BTreeMap<i64, f64> = series(api, "latlab_window_end_timestamp_seconds", "5m")
        .remove("")
        .unwrap_or_default()
        .into_iter()
        .collect();
    let mut out = BTreeMap::new();
    for (cpu, vals) in series(api, "latlab_latency_window_max_seconds", "5m") {
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

#[test]
fn two_prometheus_servers_at_different_intervals_agree_on_every_window() {
    if let Some(why) = rt_unavailable() {
        return skip("monitor ha", &why);
    }
    if !latlab::sys::process::command_exists("prometheus") {
        return skip(
            "monitor ha",
            "prometheus is not installed (scripts/test.sh installs it)",
        );
    }
    let _x = exclusive();
    let mon = Monitor::start(&[
        "-a",
        "0,1",
        "-p",
        "50",
        "-i",
        "1ms",
        "--no-store",
        "--window",
        "3s",
        "-D",
        "120s",
    ]);
    let fast = prometheus(mon.addr, "1s");
    let slow = prometheus(mon.addr, "3s");
    let stall = stall_repeatedly(
        mon.child.id(),
        "latlab-cpu1",
        1,
        90,
        Duration::from_secs(5),
        Duration::from_millis(60),
        8,
    );
    std::thread::sleep(Duration::from_secs(36));
    stall.join().unwrap();
    let (a, b) = (windows(fast.1), windows(slow.1));
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
    let worst = |m: &BTreeMap<(String, u64), f64>, cpu: &str| {
        m.iter()
            .filter(|(k, _)| k.0 == cpu)
            .map(|(_, v)| *v)
            .fold(0.0, f64::max)
    };
    for m in [&a, &b] {
        assert!(worst(m, "1") >= 0.059, "no stall seen on CPU 1: {m:?}");
        assert!(worst(m, "0") < 0.05, "a stall on CPU 0: {m:?}");
    }
    drop((fast, slow));
    drop(mon);
}
