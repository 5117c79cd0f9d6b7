//! `latlab contend` and `latlab migrate`: table counts equal the iterations made; migrate
//! passes on an idle machine and fails when priority order is broken on purpose.

use crate::util::{exclusive, latlab, read_json, rt_unavailable, skip};

#[test]
fn contend_counts_equal_iterations_in_every_mode() {
    if let Some(why) = rt_unavailable() {
        return skip("contend_counts_equal_iterations_in_every_mode", &why);
    }
    let _x = exclusive();
    let dir = tempfile::tempdir().unwrap();
    for sync in ["mutex", "spin", "atomic", "percpu"] {
        let json = dir.path().join(format!("{sync}.json"));
        let out = latlab()
            .args(["contend", "--sync", sync, "-n", "5000", "--json"])
            .arg(&json)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{sync}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8_lossy(&out.stdout);
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
    if let Some(why) = rt_unavailable() {
        return skip(
            "migrate_passes_when_order_holds_and_fails_when_broken",
            &why,
        );
    }
    let _x = exclusive();
    // A wide tolerance: this shared host shows multi-ms hiccups; the injected inversion is 20 ms.
    let ok = latlab()
        .args(["migrate", "-l", "8", "-p", "90", "--max-err", "8ms"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&ok.stdout);
    assert!(
        ok.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    assert!(text.contains("Passed!"), "{text}");
    let bad = latlab()
        .args([
            "migrate",
            "-l",
            "8",
            "-p",
            "90",
            "--max-err",
            "8ms",
            "--inject-inversion",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&bad.stdout);
    assert_eq!(bad.status.code(), Some(1), "{text}");
    assert!(text.contains("Failed!"), "{text}");
    assert!(String::from_utf8_lossy(&bad.stderr).contains("priority-order violation"));
}

#[test]
fn contend_and_migrate_bad_input() {
    for (args, want) in [
        (vec!["contend", "--sync", "rcu"], "rcu"),
        (vec!["contend", "--level", "100"], "--level"),
        (vec!["contend", "-n", "0"], "--iterations"),
        (vec!["migrate", "-t", "500"], "-t/--threads"),
        (vec!["migrate", "-p", "97"], "--prio"),
        (vec!["migrate", "-r", "0"], "--run-time"),
    ] {
        crate::util::expect_exit(&[], &args, 2, want);
    }
}
