//! `latlab monitor` and Prometheus: a private server scrapes it, and contrib's scrape config and
//! alert rules pass promtool (rules with unit tests).

use crate::monitor::{Monitor, Prometheus};
use crate::util::{run_tool, skip};

#[test]
fn a_private_prometheus_scrapes_the_monitor() {
    if !latlab_core::sys::process::command_exists("prometheus") {
        return skip(
            "a_private_prometheus_scrapes_the_monitor",
            "prometheus is not installed (scripts/test.sh installs Debian's prometheus)",
        );
    }
    let mon = Monitor::start_words("-a 0 -i 1ms --no-store -D 120s");
    let prom = Prometheus::scraping(mon.addr, "1s");
    let found = prom.wait_for("latlab_latency_seconds_count", "\"cpu\":\"0\"");
    assert!(
        found.contains("\"cpu\":\"0\""),
        "Prometheus never had latlab_latency_seconds_count: {found}"
    );
    assert!(found.contains("\"job\":\"latlab\""), "{found}");
    let max = prom.query("latlab_latency_max_seconds");
    assert!(max.contains("\"cpu\":\"0\""), "{max}");
    let buckets = prom.query("latlab_latency_seconds_bucket");
    assert!(buckets.contains("\"le\":\"+Inf\""), "{buckets}");
    drop(prom);
    drop(mon);
}

#[test]
fn contrib_prometheus_config_and_alert_rules_pass_promtool() {
    if !latlab_core::sys::process::command_exists("promtool") {
        return skip(
            "contrib_prometheus_config_and_alert_rules_pass_promtool",
            "promtool is not installed (Debian package prometheus)",
        );
    }
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    // Unit tests of the alert rules: a stall fires, a quiet series does not.
    run_tool(
        std::process::Command::new("promtool")
            .args(["test", "rules", "latlab-alerts.test.yml"])
            .current_dir(root.join("contrib")),
    );
    for (what, file) in [
        ("config", "contrib/prometheus.yml"),
        ("rules", "contrib/latlab-alerts.yml"),
    ] {
        run_tool(
            std::process::Command::new("promtool")
                .args(["check", what])
                .arg(root.join(file)),
        );
    }
}

/// The exemplars Prometheus answers for `metric` over the last ten minutes: (labels, value).
fn exemplars(prom: &Prometheus, metric: &str) -> Vec<(serde_json::Value, f64)> {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let body = prom.api_get(&format!(
        "/api/v1/query_exemplars?query={metric}&start={}&end={}",
        now - 600,
        now + 60
    ));
    let v: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
    let mut out = Vec::new();
    for series in v["data"].as_array().into_iter().flatten() {
        for e in series["exemplars"].as_array().into_iter().flatten() {
            let value = e["value"]
                .as_str()
                .and_then(|s| s.parse().ok())
                .unwrap_or(0.0);
            out.push((e["labels"].clone(), value));
        }
    }
    out
}

#[test]
fn prometheus_keeps_a_native_histogram_and_its_exemplar_opens_the_spike() {
    if !latlab_core::sys::process::command_exists("prometheus") {
        return skip(
            "prometheus_keeps_a_native_histogram_and_its_exemplar_opens_the_spike",
            "prometheus is not installed (scripts/test.sh installs Debian's prometheus)",
        );
    }
    let Some(_x) = crate::util::trace_test() else {
        return;
    };
    let dir = crate::util::Dir::new();
    let store = format!("sqlite:{}", dir.join("m.db").display());
    let mut mon = Monitor::start_words(&format!(
        "-a 0,1 -p 80 -i 1ms --threshold 500us --trace --trace-threshold 500us \
         --snapshot-every 2s -D 120s --store {store}"
    ));
    mon.child.wait_until("measuring on CPU 1", |pid| {
        crate::util::has_thread(pid, "latlab-cpu1")
    });
    let prom = Prometheus::start_with(
        "1s",
        &format!("    static_configs:\n      - targets: ['{}']\n", mon.addr),
        &["native-histograms", "exemplar-storage"],
    );
    // Stored as a native histogram: the query answers a histogram, not a float.
    let native = prom.wait_for("latlab_latency_seconds{cpu=\"1\"}", "\"histogram\"");
    assert!(
        native.contains("\"histogram\""),
        "no native histogram: {native}"
    );
    // The stall: FIFO-99 bursts on CPU 1.
    crate::util::exec_bursts(1, 8, std::time::Duration::from_millis(400));
    let t0 = std::time::Instant::now();
    let found = loop {
        let ex: Vec<_> = exemplars(&prom, "latlab_threshold_exceeded_total")
            .into_iter()
            .filter(|(l, _)| l["cpu"] == "1" && l["run"].is_string())
            .collect();
        if !ex.is_empty() || t0.elapsed() > std::time::Duration::from_secs(60) {
            break ex;
        }
        std::thread::sleep(std::time::Duration::from_millis(500));
    };
    let (labels, value) = found.last().cloned().expect("an exemplar on CPU 1");
    assert!(value >= 500e-6, "the exemplar is a spike: {labels} {value}");
    let lat = exemplars(&prom, "latlab_latency_seconds");
    assert!(
        lat.iter().any(|(l, _)| l["cpu"] == "1"),
        "the latency histogram carries the exemplar too: {lat:?}"
    );
    // At most 3 stored series per CPU for the latency (one: the native histogram).
    let per_cpu =
        prom.query("count by (cpu) ({__name__=~\"latlab_latency_seconds(_bucket|_sum|_count)?\"})");
    let v: serde_json::Value = serde_json::from_str(&per_cpu).unwrap();
    let counts: Vec<u64> = v["data"]["result"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["value"][1].as_str().unwrap().parse().unwrap())
        .collect();
    assert_eq!(counts.len(), 2, "{per_cpu}");
    assert!(counts.iter().all(|&n| n <= 3), "{per_cpu}");
    // histogram_quantile over the native histogram reads a p99 in the range latlab measures.
    let q = prom.query("histogram_quantile(0.99, latlab_latency_seconds{cpu=\"0\"})");
    let v: serde_json::Value = serde_json::from_str(&q).unwrap();
    let p99: f64 = v["data"]["result"][0]["value"][1]
        .as_str()
        .and_then(|s| s.parse().ok())
        .unwrap_or(f64::NAN);
    // The dashboard's queries and the tail alert read the native histogram: each is valid
    // PromQL to this Prometheus, and those on the latency answer for both CPUs.
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let dash: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(root.join("contrib/grafana-dashboard.json")).unwrap(),
    )
    .unwrap();
    let mut exprs: Vec<String> = dash["panels"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|p| p["targets"].as_array().cloned().unwrap_or_default())
        .filter_map(|t| t["expr"].as_str().map(str::to_string))
        .collect();
    let rules = std::fs::read_to_string(root.join("contrib/latlab-alerts.yml")).unwrap();
    let tail = rules
        .split("alert: LatlabLatencyTailHigh")
        .nth(1)
        .and_then(|r| r.split("expr: |").nth(1))
        .and_then(|r| r.split("for:").next())
        .unwrap()
        .replace("> 0.00005", "> 0");
    exprs.push(tail);
    let mut native_answered = 0;
    for e in &exprs {
        let q = e
            .replace("$instance", ".*")
            .replace("$__rate_interval", "15s")
            .replace("[1h]", "[1m]");
        let body = prom.query(&q);
        assert!(body.contains("\"status\":\"success\""), "{q}: {body}");
        if q.contains("latlab_latency_seconds{") || q.contains("latlab_latency_seconds[") {
            assert!(
                body.contains("\"cpu\":\"1\"") || !q.contains("cpu"),
                "{q}: {body}"
            );
            assert!(
                !body.contains("\"result\":[]"),
                "no answer from the native histogram: {q}: {body}"
            );
            native_answered += 1;
        }
    }
    assert!(native_answered >= 3, "{exprs:?}");

    let max: f64 = prom
        .query("latlab_latency_max_seconds{cpu=\"0\"}")
        .split("\"value\":[")
        .nth(1)
        .and_then(|r| r.split('"').nth(1))
        .and_then(|s| s.parse().ok())
        .unwrap_or(0.0);
    let out = mon.terminate();
    out.assert_ok();
    assert!(p99 > 0.0 && p99 <= max * 1.1, "p99 {p99} vs max {max}: {q}");
    drop(prom);

    // The exemplar's run and number open the spike's explanation.
    let run = labels["run"].as_str().unwrap().to_string();
    let seq = labels["seq"].as_str().unwrap().to_string();
    let shown = crate::util::latlab()
        .args([
            "runs", "show", &run, "--spike", &seq, "--cpu", "1", "--store", &store,
        ])
        .output();
    shown.assert_ok();
    assert!(
        shown.stdout.contains(&format!("spike {seq} on CPU 1")),
        "{shown}"
    );
    assert!(shown.stdout.contains(" %  "), "its components: {shown}");
    // Another (earlier) snapshot does not claim that spike as its own.
    let list = crate::util::latlab()
        .args(["runs", "list", "--kind", "monitor", "--store", &store])
        .assert_ok();
    let mut ids: Vec<(String, String)> = list
        .stdout
        .lines()
        .skip(1)
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            Some((w.next()?.to_string(), w.nth(1)?.to_string()))
        })
        .collect();
    ids.sort_by(|a, b| a.1.cmp(&b.1));
    if let Some((other, _)) = ids.first().filter(|(i, _)| *i != run) {
        let o = crate::util::latlab()
            .args([
                "runs", "show", other, "--spike", &seq, "--cpu", "1", "--store", &store,
            ])
            .output();
        o.assert_exit(2);
        assert!(!o.stdout.contains("spike "), "{o}");
    }
    // A number that names no spike exits 2 naming it.
    let none = crate::util::latlab()
        .args([
            "runs",
            "show",
            &run,
            "--spike",
            "999999999",
            "--store",
            &store,
        ])
        .output();
    none.assert_exit(2);
    assert!(none.stderr.contains("--spike 999999999"), "{none}");
}
