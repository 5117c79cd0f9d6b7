//! Loads: every kind runs and reports a rate; no load process outlives latlab — after a normal
//! end, SIGINT, or SIGKILL of latlab itself.

use crate::util::{expect_exit, has_thread, latlab, none_left, read_json, tagged, Dir};
use std::time::Instant;

fn tag(name: &str) -> String {
    format!(
        "{name}-{}-{}",
        std::process::id(),
        Instant::now().elapsed().as_nanos()
    )
}

#[test]
fn every_load_kind_runs_and_reports_its_rate() {
    let dir = Dir::new();
    let json = dir.join("r.json");
    let t = tag("kinds");
    let loads = [
        "hackbench:groups=2,fds=4,loops=20",
        "hackbench:groups=1,fds=3,loops=20,mode=thread,ipc=pipe",
        "cpu:threads=1",
        "memory:size=8M",
        "io:size=4M,block=64k",
        "net",
        "exec:sleep 0.01",
    ];
    let mut cmd = latlab();
    cmd.args(["cyclic", "-l", "200", "-q", "--json"])
        .arg(&json)
        .env("LATLAB_TEST_TAG", &t);
    for l in loads {
        cmd.arg("--load").arg(l);
    }
    cmd.assert_ok();
    let run = read_json(&json);
    let reports = run["loads"].as_array().unwrap();
    assert_eq!(reports.len(), loads.len(), "{reports:?}");
    for (r, spec) in reports.iter().zip(loads) {
        assert_eq!(r["spec"], spec);
        assert!(r["count"].as_u64().unwrap() > 0, "{spec} did nothing: {r}");
        assert!(r["rate_per_s"].as_f64().unwrap() > 0.0);
    }
    none_left(&t);
}

fn interrupted(signal: i32) {
    let dir = Dir::new();
    let json = dir.join("r.json");
    let t = tag("signal");
    let mut child = latlab()
        .words("cyclic -D 1h -q --load hackbench:groups=2,fds=5,loops=50")
        .args(["--load", "exec:sleep 5", "--load", "net", "--json"])
        .arg(&json)
        .env("LATLAB_TEST_TAG", &t)
        .spawn();
    // Wait for the loads to be up rather than racing a fixed sleep against start-up.
    child.wait_until("starting its loads", |pid| {
        tagged(&t).len() > 3 && has_thread(pid, "latlab-T0")
    });
    child.signal(signal);
    let out = child.finish();
    if signal == libc::SIGINT {
        out.assert_ok();
        let run = read_json(&json);
        assert_eq!(run["interrupted"], true);
        assert_eq!(run["loads"].as_array().unwrap().len(), 3);
    }
    none_left(&t);
}

#[test]
fn no_orphans_after_sigint() {
    interrupted(libc::SIGINT);
}

#[test]
fn no_orphans_after_sigkill_of_latlab() {
    interrupted(libc::SIGKILL);
}

#[test]
fn standalone_hackbench_prints_its_time() {
    let out = latlab()
        .words("load hackbench:groups=2,fds=4,loops=10")
        .assert_ok();
    assert!(out.stdout.lines().any(|l| l.starts_with("Time: ")), "{out}");
}

#[test]
fn load_bad_input() {
    for (spec, want) in [
        ("disk", "unknown load kind 'disk'"),
        ("cpu:threads=0", "threads=0"),
        ("hackbench:groups=500", "4000 tasks"),
        ("io:path=/nonexistent/dev", "/nonexistent/dev"),
        ("exec:definitely-not-a-command", "definitely-not-a-command"),
        ("net:speed=fast", "unknown option 'speed'"),
    ] {
        expect_exit(&[], &["cyclic", "-l", "1", "--load", spec], 2, want);
    }
}
