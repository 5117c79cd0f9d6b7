//! `latlab contend` and `latlab migrate`: table counts equal the iterations made; migrate
//! passes on an idle machine and fails when priority order is broken on purpose.

use crate::util::{expect_exit, latlab, read_json, rt_test, Dir};

#[test]
fn contend_counts_equal_iterations_in_every_mode() {
    let Some(_x) = rt_test() else { return };
    let dir = Dir::new();
    for sync in ["mutex", "spin", "atomic", "percpu"] {
        let json = dir.join(format!("{sync}.json"));
        let out = latlab()
            .args(["contend", "--sync", sync, "-n", "5000", "--json"])
            .arg(&json)
            .assert_ok();
        let text = &out.stdout;
        assert!(
            text.contains("CPU:\tName\tCount\tMax\tMin\tAverage\tTotal"),
            "{text}"
        );
        let run = read_json(&json);
        for s in run["series"].as_array().unwrap() {
            let want = if s["name"].as_str().unwrap().ends_with("/vec") {
                10_000
            } else {
                5000
            };
            assert_eq!(s["count"], want, "{sync} {}", s["name"]);
        }
        // The table shows the same counts.
        assert!(
            text.lines().any(|l| l.starts_with("cpu 0:\tloop\t5000\t")),
            "{text}"
        );
        assert!(
            text.lines().any(|l| l.starts_with("\tvec\t10000\t")),
            "{text}"
        );
    }
}

#[test]
fn migrate_passes_when_order_holds_and_fails_when_broken() {
    let Some(_x) = rt_test() else { return };
    // A wide tolerance: this shared host shows multi-ms hiccups; the injected inversion is 20 ms.
    let migrate = "migrate -l 8 -p 90 --max-err 8ms";
    let ok = latlab().words(migrate).assert_ok();
    assert!(ok.stdout.contains("Passed!"), "{ok}");
    let bad = latlab()
        .words(migrate)
        .arg("--inject-inversion")
        .assert_exit(1);
    assert!(bad.stdout.contains("Failed!"), "{bad}");
    assert!(bad.stderr.contains("priority-order violation"), "{bad}");
}

#[test]
fn contend_and_migrate_bad_input() {
    for (args, want) in [
        (vec!["contend", "--sync", "rcu"], "rcu"),
        (vec!["contend", "--level", "100"], "--level"),
        (vec!["contend", "-n", "0"], "--iterations"),
        (vec!["migrate", "-t", "500"], "--tasks"),
        (vec!["migrate", "-p", "97"], "--prio"),
        (vec!["migrate", "-r", "0"], "--run-time"),
    ] {
        expect_exit(&[], &args, 2, want);
    }
}
