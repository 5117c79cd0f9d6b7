//! Loads and child processes: a load never holds a run past its end, a dead child ends the run
//! with an error, and nothing latlab starts outlives it, even after a SIGKILL. (With
//! lifecycle_outputs.rs and lifecycle_signals.rs: the lifecycle every measurement shares
//! through the driver, tested from outside through the binary.)

use crate::util::{
    exclusive, latlab, none_left, read_json, rt_test, tagged, trace_test, wait_until, Dir,
    TestCommand,
};
use std::process::Stdio;
use std::time::Duration;

#[test]
fn a_load_that_outranks_the_measurement_cannot_hold_the_run() {
    let Some(_x) = rt_test() else { return };
    let dir = Dir::new();
    let json = dir.join("r.json");
    latlab()
        .words("cyclic -t 1 -a 1 -p 80 -i 500 -D 2s")
        .words("--load cpu:threads=1,policy=fifo,prio=90 --json")
        .arg(&json)
        .spawn()
        .end_within(Duration::from_secs(30))
        .assert_ok();
    let run = read_json(&json);
    assert!(
        run["warnings"].to_string().contains("can starve"),
        "{}",
        run["warnings"]
    );
    // --strict refuses it before anything runs.
    latlab()
        .words("cyclic -t 1 -a 1 -p 80 -D 2s --strict")
        .words("--load cpu:threads=1,policy=fifo,prio=90")
        .assert_refused(2, "--load");
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
    let mut child = latlab()
        .words("tcp -D 1h --tasks processes --no-store")
        .spawn();
    child.wait_until("starting a receiver process", |pid| {
        !children(pid).is_empty()
    });
    let receiver = children(child.id())[0];
    std::thread::sleep(Duration::from_millis(300));
    // SAFETY: killing a process of ours (latlab's receiver).
    unsafe { libc::kill(receiver as i32, libc::SIGKILL) };
    let out = child.end_within(Duration::from_secs(20));
    out.assert_exit(3);
    assert!(!out.stderr.contains("panicked"), "{out}");
}

/// Starts `cmd` tagged, waits until a tagged process whose command line contains `marker`
/// runs, SIGKILLs latlab itself and checks that nothing tagged survives.
fn sigkill_leaves_nothing(cmd: &mut TestCommand, tag: &str, marker: &str) {
    let child = cmd
        .env("LATLAB_TEST_TAG", tag)
        .spawn_with(Stdio::null(), Stdio::null());
    // The marker must start a process's own command line (latlab's argv may contain it too).
    let running = || {
        tagged(tag).iter().any(|p| {
            p.split_once(": ")
                .is_some_and(|(_, cmd)| cmd.starts_with(marker))
        })
    };
    let what = format!("{marker} to start under tag {tag}");
    wait_until(&what, Duration::from_secs(30), running);
    std::thread::sleep(Duration::from_millis(200));
    child.kill();
    none_left(tag);
}

#[test]
fn sigkill_during_an_exec_load_leaves_no_grandchild() {
    let tag = format!("exec-{}", std::process::id());
    sigkill_leaves_nothing(
        latlab()
            .words("cyclic -t 1 -D 1h --no-store")
            .args(["--load", "exec:sleep 30; true"]),
        &tag,
        "sleep 30",
    );
}

#[test]
fn sigkill_of_a_standalone_exec_load_leaves_no_grandchild() {
    let tag = format!("standalone-{}", std::process::id());
    sigkill_leaves_nothing(
        latlab().args(["load", "exec:sleep 31; true", "-D", "1h"]),
        &tag,
        "sleep 31",
    );
}

#[test]
fn sigkill_of_a_plan_leaves_no_measurement_or_load_running() {
    // One plan at a time holds the settings lock: the plan tests take turns.
    let _x = exclusive();
    let dir = Dir::new();
    let plan = dir.write(
        "p.toml",
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
    );
    let tag = format!("plan-{}", std::process::id());
    sigkill_leaves_nothing(latlab().arg("run").arg(&plan), &tag, "sleep 30");
}

#[test]
fn a_plan_child_that_writes_much_to_stderr_does_not_deadlock_the_runner() {
    let _x = exclusive();
    let dir = Dir::new();
    // 600 threads x one loop: the table (on stderr, as the JSON takes stdout) is > 64 KiB.
    let plan = dir.write(
        "p.toml",
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
    );
    latlab()
        .arg("run")
        .arg(&plan)
        .spawn()
        .end_within(Duration::from_secs(120))
        .assert_ok();
}

#[test]
fn a_load_task_that_calls_setsid_does_not_outlive_the_run() {
    // `setsid` as a group leader forks: the sleeper leaves the load's process group and
    // session at once, its parent gone (the worker, a subreaper, adopts it).
    let tag = format!("setsid-load-{}", std::process::id());
    latlab()
        .args(["load", "exec:setsid sleep 44", "-D", "1s", "--no-store"])
        .env("LATLAB_TEST_TAG", &tag)
        .assert_ok();
    none_left(&tag);
}

#[test]
fn what_a_command_under_sched_leaves_running_is_ended_and_said() {
    let Some(_x) = trace_test() else { return };
    let dir = Dir::new();
    let json = dir.join("r.json");
    let tag = format!("sched-strays-{}", std::process::id());
    // A daemon in a session of its own and a double fork, both orphaned when the command
    // exits (latlab, a subreaper, adopts them): ended with the run, and said.
    latlab()
        .journal(dir.join("restore.json"))
        .words("sched -D 30s -q --no-store --json")
        .arg(&json)
        .args([
            "--",
            "sh",
            "-c",
            "setsid sleep 45 & sh -c 'sleep 46 &'; sleep 0.3",
        ])
        .env("LATLAB_TEST_TAG", &tag)
        .assert_ok();
    none_left(&tag);
    let w = read_json(&json)["warnings"].to_string();
    assert!(w.contains("exited leaving 2 process(es)"), "{w}");
    // Stopped at the run's end instead (the command still running): the same.
    latlab()
        .journal(dir.join("restore.json"))
        .words("sched -D 1s -q --no-store")
        .args([
            "--",
            "sh",
            "-c",
            "setsid sleep 47 & sh -c 'sleep 48 &'; sleep 30",
        ])
        .env("LATLAB_TEST_TAG", &tag)
        .assert_ok();
    none_left(&tag);
}

#[test]
fn a_process_latlab_inherited_from_its_wrapper_is_not_ended() {
    // `sidecar & exec latlab ...`: the sidecar is latlab's child, but not latlab's doing.
    let dir = Dir::new();
    let pidfile = dir.join("sidecar.pid");
    let script = format!(
        "sleep 60 >/dev/null 2>&1 & echo $! > {}; exec \"$0\" cyclic -t 1 -l 20 -q --no-store",
        pidfile.display()
    );
    let mut sh = std::process::Command::new("sh");
    sh.args(["-c", &script]).arg(crate::util::LATLAB);
    let out = TestCommand::wrapping(sh).assert_ok();
    let pid: i32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let alive = std::path::Path::new(&format!("/proc/{pid}/cmdline")).exists();
    // SAFETY: killing the sidecar this test started.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    assert!(alive, "the wrapper's sidecar was ended: {out}");
    assert!(!out.stderr.contains("ended 1 process"), "{out}");
}
