//! Loads and child processes: a load never holds a run past its end, a dead child ends the run
//! with an error, and nothing latlab starts outlives it, even after a SIGKILL.

use crate::lifecycle::{ends_within, signal};
use crate::util::{
    assert_exit, latlab, none_left, read_json, rt_unavailable, skip, tagged, SpawnPiped,
};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[test]
fn a_load_that_outranks_the_measurement_cannot_hold_the_run() {
    if let Some(why) = rt_unavailable() {
        return skip(
            "a_load_that_outranks_the_measurement_cannot_hold_the_run",
            &why,
        );
    }
    let _x = crate::util::exclusive();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let child = latlab()
        .args([
            "cyclic", "-t", "1", "-a", "1", "-p", "80", "-i", "500", "-D", "2s",
        ])
        .args(["--load", "cpu:threads=1,policy=fifo,prio=90", "--json"])
        .arg(&json)
        .spawn_piped();
    let out = ends_within(
        child,
        Duration::from_secs(30),
        "cyclic under a FIFO-90 load",
    );
    assert_exit(&out, 0);
    let run = read_json(&json);
    assert!(
        run["warnings"].to_string().contains("can starve"),
        "{}",
        run["warnings"]
    );
    // --strict refuses it before anything runs.
    let out = latlab()
        .args([
            "cyclic", "-t", "1", "-a", "1", "-p", "80", "-D", "2s", "--strict",
        ])
        .args(["--load", "cpu:threads=1,policy=fifo,prio=90"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--load"));
}

/// Pids of the direct children of `pid`.
fn children(pid: u32) -> Vec<u32> {
    std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

#[test]
fn tcp_ends_with_an_error_when_its_receiver_process_dies() {
    let child = latlab()
        .args(["tcp", "-D", "1h", "--tasks", "processes", "--no-store"])
        .spawn_piped();
    let t0 = Instant::now();
    let receiver = loop {
        if let Some(&p) = children(child.id()).first() {
            break p;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "no receiver process"
        );
        std::thread::sleep(Duration::from_millis(5));
    };
    std::thread::sleep(Duration::from_millis(300));
    // SAFETY: killing a process of ours (latlab's receiver).
    unsafe { libc::kill(receiver as i32, libc::SIGKILL) };
    let out = ends_within(child, Duration::from_secs(20), "tcp with a dead receiver");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

/// Starts `cmd` tagged, waits until a tagged process whose command line contains `marker`
/// runs, SIGKILLs latlab itself and checks that nothing tagged survives.
fn sigkill_leaves_nothing(mut cmd: Command, tag: &str, marker: &str) {
    cmd.env("LATLAB_TEST_TAG", tag)
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut child = cmd.spawn().unwrap();
    let t0 = Instant::now();
    // The marker must start a process's own command line (latlab's argv may contain it too).
    let running = |tag: &str| {
        tagged(tag).iter().any(|p| {
            p.split_once(": ")
                .is_some_and(|(_, cmd)| cmd.starts_with(marker))
        })
    };
    while !running(tag) {
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "{marker} never started: {:?}",
            tagged(tag)
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(200));
    signal(&child, libc::SIGKILL);
    let _ = child.wait();
    none_left(tag);
}

#[test]
fn sigkill_during_an_exec_load_leaves_no_grandchild() {
    let tag = format!("exec-{}", std::process::id());
    let mut c = latlab();
    c.args(["cyclic", "-t", "1", "-D", "1h", "--no-store"])
        .args(["--load", "exec:sleep 30; true"]);
    sigkill_leaves_nothing(c, &tag, "sleep 30");
}

#[test]
fn sigkill_of_a_standalone_exec_load_leaves_no_grandchild() {
    let tag = format!("standalone-{}", std::process::id());
    let mut c = latlab();
    c.args(["load", "exec:sleep 31; true", "-D", "1h"]);
    sigkill_leaves_nothing(c, &tag, "sleep 31");
}

#[test]
fn sigkill_of_a_plan_leaves_no_measurement_or_load_running() {
    // One plan at a time holds the settings lock: the plan tests take turns.
    let _x = crate::util::exclusive();
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("p.toml");
    std::fs::write(
        &plan,
        r#"
[measure]
command = "cyclic"
args = ["-t", "1", "-D", "1h", "--load", "exec:sleep 30"]
[design]
repeats = 1
[[factor]]
name = "interval"
levels = ["1ms", "2ms"]
options = { "1ms" = ["-i", "1ms"], "2ms" = ["-i", "2ms"] }
"#,
    )
    .unwrap();
    let tag = format!("plan-{}", std::process::id());
    let mut c = latlab();
    c.arg("run").arg(&plan);
    sigkill_leaves_nothing(c, &tag, "sleep 30");
}

#[test]
fn a_plan_child_that_writes_much_to_stderr_does_not_deadlock_the_runner() {
    let _x = crate::util::exclusive();
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("p.toml");
    // 600 threads x one loop: the table (on stderr, as the JSON takes stdout) is > 64 KiB.
    std::fs::write(
        &plan,
        r#"
[measure]
command = "cyclic"
args = ["-t", "600", "-l", "1", "--policy", "other", "-p", "0"]
[design]
repeats = 1
[[factor]]
name = "interval"
levels = ["a", "b"]
options = { a = ["-i", "1ms"], b = ["-i", "2ms"] }
"#,
    )
    .unwrap();
    let child = latlab().arg("run").arg(&plan).spawn_piped();
    let out = ends_within(
        child,
        Duration::from_secs(120),
        "a plan with a chatty child",
    );
    assert_exit(&out, 0);
}
