//! `latlab monitor`'s snapshots in the store: SQLite across a restart, PostgreSQL for a fleet,
//! and the fleet's view in text (`runs list --host H --since T`).

use crate::monitor::Monitor;
use crate::util::{expect_exit, latlab, pg_store, wait_until, Dir};
use std::time::Duration;

#[test]
fn runs_list_filters_snapshots_by_host_and_since() {
    let dir = Dir::new();
    let store = format!("sqlite:{}", dir.join("m.db").display());
    latlab()
        .words("monitor -a 0 -p 0 -i 1ms --snapshot-every 1s -D 2500ms")
        .args(["--listen", "127.0.0.1:0", "--store", &store])
        .assert_ok();
    let host = latlab_core::result::Environment::hostname();
    let list = |extra: &[&str]| {
        let o = latlab()
            .args(["runs", "list", "--kind", "monitor", "--store", &store])
            .args(extra)
            .assert_ok();
        o.stdout.lines().skip(1).count()
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
    let dir = Dir::new();
    let store = format!("sqlite:{}", dir.join("m.db").display());
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
    let list = || {
        latlab()
            .words("runs list --kind monitor --tag monitor=it-mon --store")
            .arg(&store)
            .assert_ok()
            .stdout
    };
    let stored = |text: &str| {
        text.lines()
            .filter(|l| l.contains("monitor=it-mon"))
            .count()
    };
    // Wait for two periodic snapshots (not a fixed sleep: start-up is slow on a busy machine).
    wait_until("two snapshots stored", Duration::from_secs(60), || {
        stored(&list()) >= 2
    });
    let out = mon.terminate();
    out.assert_ok();
    assert!(out.stdout.contains("snapshots stored"), "{out}");
    let first = list();
    let n1 = stored(&first);
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
        .stdout;
    assert!(
        shown.contains("\"kind\": \"monitor\"") || shown.contains("\"kind\":\"monitor\""),
        "{shown}"
    );
    assert!(shown.contains("\"cpu0\""), "{shown}");

    latlab()
        .arg("monitor")
        .args(args)
        .words("--listen 127.0.0.1:0 -D 1500ms")
        .assert_ok();
    let second = list();
    let n2 = stored(&second);
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
    let Some(pg) = pg_store() else { return };
    let id = format!("pgmon-{}", std::process::id());
    latlab()
        .words("monitor -a 0 -i 1ms --listen 127.0.0.1:0 --snapshot-every 1s -D 2500ms")
        .args(["--monitor-id", &id, "--store", &pg])
        .assert_ok();
    let tag = format!("monitor={id}");
    let list = latlab()
        .args(["runs", "list", "--kind", "monitor", "--tag", &tag])
        .args(["--store", &pg])
        .output()
        .stdout;
    let n = list.lines().filter(|l| l.contains(&tag)).count();
    assert!(n >= 3, "two snapshots and the last: {list}");
}
