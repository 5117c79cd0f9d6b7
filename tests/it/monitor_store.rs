//! `latlab monitor`'s snapshots in the store: SQLite across a restart, PostgreSQL for a fleet,
//! and the fleet's view in text (`runs list --host H --since T`).

use crate::monitor::Monitor;
use crate::util::skip;
use crate::util::{expect_exit, latlab};
use std::time::Duration;

#[test]
fn runs_list_filters_snapshots_by_host_and_since() {
    let dir = tempfile::tempdir().unwrap();
    let store = format!("sqlite:{}", dir.path().join("m.db").display());
    let st = latlab()
        .args([
            "monitor",
            "-a",
            "0",
            "-p",
            "0",
            "-i",
            "1ms",
            "--snapshot-every",
            "1s",
        ])
        .args(["-D", "2500ms", "--listen", "127.0.0.1:0", "--store", &store])
        .output()
        .unwrap();
    assert!(
        st.status.success(),
        "{}",
        String::from_utf8_lossy(&st.stderr)
    );
    let host = latlab::result::Environment::hostname();
    let list = |extra: &[&str]| {
        let o = latlab()
            .args(["runs", "list", "--kind", "monitor", "--store", &store])
            .args(extra)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).lines().skip(1).count()
    };
    let all = list(&[]);
    assert!(all >= 2, "{all} snapshots");
    assert_eq!(list(&["--host", &host, "--since", "1h"]), all);
    assert_eq!(list(&["--host", "no-such-host", "--since", "1h"]), 0);
    assert_eq!(list(&["--since", "2099-01-01T00:00:00Z"]), 0);
    assert_eq!(list(&["--since", "2000-01-01T00:00:00Z"]), all);
    expect_exit(&["runs", "list"], &["--since", "lately"], 2, "--since");
}

#[test]
fn snapshots_land_in_the_store_and_a_restart_adds_more() {
    let dir = tempfile::tempdir().unwrap();
    let store = format!("sqlite:{}", dir.path().join("m.db").display());
    let args = [
        "-a",
        "0",
        "-i",
        "1ms",
        "--snapshot-every",
        "1s",
        "--monitor-id",
        "it-mon",
        "--store",
        &store,
    ];
    let mon = Monitor::start(&args);
    let list = |extra: &[&str]| {
        let o = latlab()
            .args([
                "runs",
                "list",
                "--kind",
                "monitor",
                "--tag",
                "monitor=it-mon",
                "--store",
                &store,
            ])
            .args(extra)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    // Wait for two periodic snapshots (not a fixed sleep: start-up is slow on a busy machine).
    let t0 = std::time::Instant::now();
    while list(&[])
        .lines()
        .filter(|l| l.contains("monitor=it-mon"))
        .count()
        < 2
    {
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "no snapshots stored"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let (code, out, err) = mon.terminate();
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("snapshots stored"), "{out}");
    let first = list(&[]);
    let n1 = first
        .lines()
        .filter(|l| l.contains("monitor=it-mon"))
        .count();
    assert!(n1 >= 3, "two 1 s snapshots and the last one: {first}");
    assert!(first.contains("host="), "{first}");
    // The last run (the interval SIGTERM ended) is marked interrupted and has the CPU's series.
    let newest = first
        .lines()
        .nth(1)
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .to_string();
    let shown = latlab()
        .args(["runs", "show", "--json", &newest, "--store", &store])
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&shown.stdout);
    assert!(
        shown.contains("\"kind\": \"monitor\"") || shown.contains("\"kind\":\"monitor\""),
        "{shown}"
    );
    assert!(shown.contains("\"cpu0\""), "{shown}");

    let mut again = latlab()
        .arg("monitor")
        .args(args)
        .args(["--listen", "127.0.0.1:0", "-D", "1500ms"])
        .output()
        .unwrap();
    assert!(
        again.status.success(),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
    again.stdout.clear();
    let second = list(&[]);
    let n2 = second
        .lines()
        .filter(|l| l.contains("monitor=it-mon"))
        .count();
    assert!(
        n2 >= n1 + 2,
        "a restart must add runs, not replace them: {n1} -> {n2}\n{second}"
    );
    for id in first
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next())
    {
        assert!(second.contains(id), "run {id} vanished after the restart");
    }
}

#[test]
fn snapshots_go_to_postgresql_for_a_fleet() {
    let Some(pg) = std::env::var("LATLAB_TEST_PG")
        .ok()
        .filter(|v| !v.is_empty())
    else {
        return skip(
            "snapshots_go_to_postgresql_for_a_fleet",
            "LATLAB_TEST_PG is not set (scripts/test.sh starts a server and sets it)",
        );
    };
    let id = format!("pgmon-{}", std::process::id());
    let out = latlab()
        .args(["monitor", "-a", "0", "-i", "1ms", "--listen", "127.0.0.1:0"])
        .args([
            "--snapshot-every",
            "1s",
            "-D",
            "2500ms",
            "--monitor-id",
            &id,
            "--store",
            &pg,
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let tag = format!("monitor={id}");
    let list = latlab()
        .args([
            "runs", "list", "--kind", "monitor", "--tag", &tag, "--store", &pg,
        ])
        .output()
        .unwrap();
    let list = String::from_utf8_lossy(&list.stdout);
    let n = list.lines().filter(|l| l.contains(&tag)).count();
    assert!(n >= 3, "two snapshots and the last: {list}");
}
