//! `latlab monitor` and Prometheus: a private server scrapes it, and contrib's scrape config and
//! alert rules pass promtool (rules with unit tests).

use crate::monitor::{free_port, get, Monitor};
use crate::util::skip;
use std::net::SocketAddr;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

#[test]
fn a_private_prometheus_scrapes_the_monitor() {
    if !latlab::sys::process::command_exists("prometheus") {
        return skip(
            "a_private_prometheus_scrapes_the_monitor",
            "prometheus is not installed (scripts/test.sh installs Debian's prometheus)",
        );
    }
    let mon = Monitor::start(&["-a", "0", "-i", "1ms", "--no-store", "-D", "120s"]);
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("prometheus.yml");
    std::fs::write(
        &cfg,
        format!(
            "global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: latlab\n    static_configs:\n      - targets: ['{}']\n",
            mon.addr
        ),
    )
    .unwrap();
    let web: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let mut prom = std::process::Command::new("prometheus")
        .arg(format!("--config.file={}", cfg.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.path().join("tsdb").display()
        ))
        .arg(format!("--web.listen-address={web}"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    struct Kill<'a>(&'a mut Child);
    impl Drop for Kill<'_> {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let prom = Kill(&mut prom);
    let query = |q: &str| {
        get(web, &format!("/api/v1/query?query={q}"))
            .map(|(_, b)| b)
            .unwrap_or_default()
    };
    let t0 = Instant::now();
    let found = loop {
        let body = query("latlab_latency_seconds_count");
        if body.contains("\"cpu\":\"0\"") {
            break body;
        }
        if t0.elapsed() > Duration::from_secs(60) {
            drop(prom);
            panic!("Prometheus never had latlab_latency_seconds_count: {body}");
        }
        std::thread::sleep(Duration::from_millis(500));
    };
    assert!(found.contains("\"job\":\"latlab\""), "{found}");
    let max = query("latlab_latency_max_seconds");
    assert!(max.contains("\"cpu\":\"0\""), "{max}");
    let buckets = query("latlab_latency_seconds_bucket");
    assert!(buckets.contains("\"le\":\"+Inf\""), "{buckets}");
    drop(prom);
    drop(mon);
}

#[test]
fn contrib_prometheus_config_and_alert_rules_pass_promtool() {
    if !latlab::sys::process::command_exists("promtool") {
        return skip(
            "contrib_prometheus_config_and_alert_rules_pass_promtool",
            "promtool is not installed (Debian package prometheus)",
        );
    }
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    // Unit tests of the alert rules: a stall fires, a quiet series does not.
    let out = std::process::Command::new("promtool")
        .args(["test", "rules", "latlab-alerts.test.yml"])
        .current_dir(root.join("contrib"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "promtool test rules: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    for (what, file) in [
        ("config", "contrib/prometheus.yml"),
        ("rules", "contrib/latlab-alerts.yml"),
    ] {
        let out = std::process::Command::new("promtool")
            .args(["check", what])
            .arg(root.join(file))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "promtool check {what} {file}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
