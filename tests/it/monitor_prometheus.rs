//! `latlab monitor` and Prometheus: a private server scrapes it, and contrib's scrape config and
//! alert rules pass promtool (rules with unit tests).

use crate::monitor::{Monitor, Prometheus};
use crate::util::{run_tool, skip};

#[test]
fn a_private_prometheus_scrapes_the_monitor() {
    if !latlab::sys::process::command_exists("prometheus") {
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
    if !latlab::sys::process::command_exists("promtool") {
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
