//! `latlab monitor --trace`: a FIFO-99 hog started as people start one on CPU 1 is named on
//! the endpoint (late time by cause, its culprit group, on CPU 1 and not CPU 0), the page
//! passes `promtool check metrics`, and the snapshots stored carry the cause totals.

use crate::monitor::{parse, promtool_check_metrics, scrape, value, Monitor};
use crate::util::{
    exec_bursts, expect_exit, has_thread, latlab, trace_test, turn_tracing_off, Dir,
};
use std::time::Duration;

const CAUSES: [&str; 6] = ["irq", "softirq", "thread", "timer", "host", "unattributed"];

#[test]
fn monitor_trace_names_a_hogs_group_on_its_cpu_and_stores_the_causes() {
    let Some(_x) = trace_test() else { return };
    let dir = Dir::new();
    let store = format!("sqlite:{}", dir.join("m.db").display());
    let mut mon = Monitor::start_words(&format!(
        "-a 0,1 -p 80 -i 1ms --trace --trace-threshold 500us --snapshot-every 2s -D 60s \
         --store {store}"
    ));
    mon.child
        .wait_until("measuring on CPU 1", |pid| has_thread(pid, "latlab-cpu1"));
    std::thread::sleep(Duration::from_millis(300));
    // A FIFO-99 spinner on CPU 1 every 400 ms, each under four names and its own PIDs.
    exec_bursts(1, 8, Duration::from_millis(400));
    // Spikes are named half a second after they end (every fork and exec read by then).
    std::thread::sleep(Duration::from_millis(1500));
    let page = scrape(mon.addr, Duration::from_secs(10));
    let m = parse(&page);
    let late = |cpu: u32, cause: &str| {
        value(
            &m,
            &format!("latlab_late_seconds_total{{cpu=\"{cpu}\",cause=\"{cause}\"}}"),
        )
    };
    let total1: f64 = CAUSES.iter().map(|c| late(1, c)).sum();
    let thread1 = late(1, "thread");
    assert!(
        thread1 >= 0.8 * total1,
        "thread {thread1} of {total1}\n{page}"
    );
    let sh1 = value(
        &m,
        "latlab_culprit_late_seconds_total{cpu=\"1\",group=\"sh\"}",
    );
    assert!(sh1 >= 0.8 * thread1, "sh {sh1} of thread {thread1}\n{page}");
    assert!(
        value(&m, "latlab_late_wakeups_total{cpu=\"1\",cause=\"thread\"}") >= 4.0,
        "{page}"
    );
    // Not on CPU 0 (its start may run there for a moment: a small part at most).
    let sh0 = m
        .get("latlab_culprit_late_seconds_total{cpu=\"0\",group=\"sh\"}")
        .copied()
        .unwrap_or(0.0);
    assert!(sh0 * 10.0 < sh1, "sh on CPU 0: {sh0} vs {sh1}\n{page}");
    for cpu in ["0", "1"] {
        let groups = m
            .keys()
            .filter(|k| k.starts_with("latlab_culprit_late_seconds_total{"))
            .filter(|k| k.contains(&format!("cpu=\"{cpu}\"")))
            .count();
        assert!((1..=11).contains(&groups), "CPU {cpu}: {groups} groups");
        assert!(page.contains(&format!(
            "latlab_culprit_late_seconds_total{{cpu=\"{cpu}\",group=\"other\"}}"
        )));
    }
    assert!(
        page.contains("latlab_trace_lost_events_total{cpu=\"1\"}"),
        "{page}"
    );
    promtool_check_metrics(&page);

    let out = mon.terminate();
    out.assert_ok();
    assert!(out.stdout.contains("late time by cause"), "{out}");
    assert!(out.stdout.contains("sh "), "{out}");

    // Every snapshot carries its interval's cause totals; together they hold at least what
    // the endpoint had counted, and one names the hog's group with its chain and priority.
    let bundle = latlab()
        .args(["runs", "export", "--all", "--store", &store])
        .assert_ok()
        .json();
    let runs: Vec<&serde_json::Value> = bundle["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| &e["run"])
        .filter(|r| r["kind"] == "monitor")
        .collect();
    assert!(runs.len() >= 2, "{} snapshots", runs.len());
    let stored_ns: u64 = runs
        .iter()
        .flat_map(|r| r["series"].as_array().unwrap())
        .filter(|s| s["cpu"] == 1)
        .map(|s| s["extra"]["late_ns_by_cause"]["thread"].as_u64().unwrap())
        .sum();
    assert!(
        stored_ns as f64 >= thread1 * 1e9 * 0.999,
        "stored {stored_ns} ns < scraped {thread1} s"
    );
    let named = runs.iter().any(|r| {
        r["trace"]["per_cpu"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|c| c["cpu"] == 1)
            .flat_map(|c| c["causes"].as_array().unwrap())
            .any(|c| {
                c["name"] == "sh"
                    && c["chain"] == serde_json::json!(["sh", "taskset", "chrt", "timeout"])
                    && c["policy"] == "RT 99"
            })
    });
    assert!(named, "no snapshot names sh on CPU 1");
}

#[test]
fn tracing_turned_off_is_said_in_the_interval_it_happened() {
    let Some(_x) = trace_test() else { return };
    let dir = Dir::new();
    let store = format!("sqlite:{}", dir.join("m.db").display());
    // The tracefs recorder: the in-kernel one has no switch another process can turn off.
    let args = format!("-a 1 -i 1ms --trace --snapshot-every 1s -D 60s --store {store}");
    let args: Vec<&str> = args.split_whitespace().collect();
    let mon = Monitor::start_with(&args, &[("LATLAB_TRACER", "tracefs")]);
    turn_tracing_off(mon.child.id());
    // Three more snapshots (one a second) before the end.
    std::thread::sleep(Duration::from_millis(3500));
    let out = mon.terminate();
    out.assert_ok();
    assert!(
        out.stderr.contains(
            "latlab monitor: warning: --trace: tracing in latlab's instance was turned off"
        ),
        "{out}"
    );
    let bundle = latlab()
        .args(["runs", "export", "--all", "--store", &store])
        .assert_ok()
        .json();
    let mut snaps: Vec<&serde_json::Value> = bundle["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| &e["run"])
        .collect();
    snaps.sort_by_key(|r| r["started"].as_str().unwrap().to_string());
    let said: Vec<bool> = snaps
        .iter()
        .map(|r| {
            r["warnings"]
                .to_string()
                .contains("turned off by another process")
        })
        .collect();
    // Said in an interval before the last (not only when the monitor ends), and every
    // snapshot from then on carries when.
    let first = said.iter().position(|&s| s).expect("no snapshot says it");
    assert!(first + 1 < snaps.len(), "said only at the end: {said:?}");
    assert!(snaps[first..]
        .iter()
        .all(|r| r["trace"]["untraced_after_s"].is_f64()));
}

#[test]
fn monitor_trace_flags_are_checked() {
    expect_exit(
        &["monitor"],
        &["--trace", "--trace-save", "spikes.txt"],
        2,
        "--trace-save",
    );
    expect_exit(
        &["monitor"],
        &["--trace", "--trace-culprits", "0"],
        2,
        "--trace-culprits",
    );
    expect_exit(&["monitor"], &["--trace-culprits", "3"], 2, "--trace");
}
