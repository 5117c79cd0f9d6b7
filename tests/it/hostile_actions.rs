//! Threshold actions with bounds (issue 34): a `trace` action never holds a run past `-D` or a
//! signal and stays within `--trace-budget`; `shell:` commands run at most 4 at a time with a
//! minimal environment and never outlive latlab; `signal:` refuses PID 1 and latlab itself
//! and checks its target. Also `sched`'s bounds: a second Ctrl-C kills `-- CMD`'s command, an
//! empty `--cgroup` is refused, task names with escapes are shown, not obeyed.

use crate::util::{
    expect_exit, handles, have, latlab, none_left, read_json, skip, tagged, trace_test, wait_until,
    Dir, TestCommand, LATLAB,
};
use std::process::Command;
use std::time::Duration;

/// Far above the time it takes: only a hang (a signal not honoured) reaches it.
const HANG: Duration = Duration::from_secs(5);

/// Processes tagged `tag` whose command line is exactly `cmd`.
fn running(tag: &str, cmd: &str) -> usize {
    tagged(tag)
        .iter()
        .filter(|p| p.split_once(": ").is_some_and(|(_, c)| c.trim() == cmd))
        .count()
}

/// Bytes of the regular files in `dir`.
fn bytes_in(dir: &std::path::Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .filter_map(|e| e.metadata().ok())
        .filter(|m| m.is_file())
        .map(|m| m.len())
        .sum()
}

/// A traced `cyclic -t 1 -a 1 -p 80 -i 1ms` with every wake-up a spike (1 us).
fn traced(dir: &Dir) -> TestCommand {
    let mut c = latlab();
    c.journal(dir.join("restore.json"))
        .words("cyclic -t 1 -a 1 -p 80 -i 1ms -q --no-store --trace --trace-threshold 1us");
    c
}

#[test]
fn trace_actions_stay_within_the_budget_and_end_with_the_run() {
    let Some(_x) = trace_test() else { return };
    let dir = Dir::new();
    let out_dir = dir.mkdir("out");
    let json = dir.join("r.json");
    // A window per wake-up is asked for, within 20 MiB, for -D 2s.
    traced(&dir)
        .current_dir(&out_dir)
        .words("-D 2s --on-threshold 1us:trace --on-threshold-max 1000000")
        .words("--trace-budget 20M --json")
        .arg(&json)
        .limit(Duration::from_secs(60))
        .assert_ok();
    let run = read_json(&json);
    let t = &run["trace"];
    assert!(
        bytes_in(&out_dir) <= 20 << 20,
        "{} bytes",
        bytes_in(&out_dir)
    );
    assert!(t["bytes_saved"].as_u64().unwrap_or(0) <= 20 << 20, "{t}");
    let held = t["actions_over_budget"].as_u64().unwrap_or(0)
        + t["actions_after_end"].as_u64().unwrap_or(0);
    assert!(held > 0, "nothing was held back: {}", t["actions"]);
    assert!(
        run["warnings"].to_string().contains("trace"),
        "{}",
        run["warnings"]
    );
    // What it measured lasted its -D: the windows did not extend it.
    assert!(
        run["duration_s"].as_f64().unwrap() < 2.5,
        "{}",
        run["duration_s"]
    );
}

/// Without --trace-budget, a run asking a window per wake-up stops at the default budget (64
/// MiB) and says so on stderr when it is reached.
#[test]
fn trace_actions_have_a_default_budget_said_when_reached() {
    let Some(_x) = trace_test() else { return };
    let dir = Dir::new();
    let out_dir = dir.mkdir("out");
    let json = dir.join("r.json");
    let out = traced(&dir)
        .current_dir(&out_dir)
        .words("-D 2s --on-threshold 1us:trace --on-threshold-max 1000000 --json")
        .arg(&json)
        .limit(Duration::from_secs(60))
        .assert_ok();
    assert!(
        bytes_in(&out_dir) <= 64 << 20,
        "{} bytes",
        bytes_in(&out_dir)
    );
    let t = &read_json(&json)["trace"];
    if t["actions_over_budget"].as_u64().unwrap_or(0) > 0 {
        assert!(out.stderr.contains("--trace-budget reached"), "{out}");
    }
    assert!(
        t["actions_over_budget"].as_u64().unwrap_or(0)
            + t["actions_after_end"].as_u64().unwrap_or(0)
            > 0,
        "nothing held back in 2 s of a window per wake-up: {}",
        t["bytes_saved"]
    );
}

#[test]
fn sigterm_ends_a_run_that_is_saving_trace_windows() {
    let Some(_x) = trace_test() else { return };
    let dir = Dir::new();
    let json = dir.join("r.json");
    let run = traced(&dir)
        .current_dir(dir.path())
        .words("-D 60s --on-threshold 1us:trace --on-threshold-max 1000000")
        .words("--trace-budget 200M --json")
        .arg(&json)
        .spawn();
    wait_until(
        "trace windows are being saved",
        Duration::from_secs(30),
        || dir.entries().iter().any(|e| e.contains("-spike-")),
    );
    run.signal(libc::SIGTERM);
    run.end_within(HANG).assert_ok();
    assert_eq!(read_json(&json)["interrupted"], true);
}

#[test]
fn shell_actions_are_bounded_minimal_and_die_with_latlab() {
    let Some(_x) = trace_test() else { return };
    let dir = Dir::new();
    let json = dir.join("r.json");
    let envs = dir.join("env.txt");
    let tag = format!("shell-actions-{}", std::process::id());
    // Each spike starts a shell that records its environment and then sleeps 30 s, a child of
    // its own behind the shell (`sleep 30; true`).
    let cmd = format!("1us:shell:env >> {}; sleep 30; true", envs.display());
    let run = traced(&dir)
        .env("PGPASSWORD", "hunter2")
        .env("LATLAB_TEST_TAG", &tag)
        .words("-D 3s --on-threshold-max 1000 --on-threshold-env LATLAB_TEST_TAG")
        .arg("--on-threshold")
        .arg(&cmd)
        .arg("--json")
        .arg(&json)
        .spawn();
    let mut most = 0;
    let t0 = std::time::Instant::now();
    while t0.elapsed() < Duration::from_millis(2500) {
        most = most.max(running(&tag, "sleep 30"));
        std::thread::sleep(Duration::from_millis(50));
    }
    // The run ends at its -D: the shells do not hold it (no grace to wait out).
    run.end_within(HANG).assert_ok();
    assert!(most >= 1, "no shell ran");
    assert!(most <= 4, "{most} shells at once");
    none_left(&tag);
    let r = read_json(&json);
    assert!(
        r["trace"]["actions_busy"].as_u64().unwrap_or(0) > 0,
        "{}",
        r["trace"]
    );
    assert!(r["trace"]["shells_killed"].as_u64().unwrap_or(0) > 0);
    let env = std::fs::read_to_string(&envs).unwrap();
    assert!(
        env.contains("LATLAB_LATENCY_NS=") && env.contains(&tag),
        "{env}"
    );
    for secret in ["PGPASSWORD", "LATLAB_STORE", "LATLAB_JOURNAL"] {
        assert!(!env.contains(secret), "{secret} reached the shell: {env}");
    }

    // SIGKILL of latlab: the kernel ends every shell and what it started.
    let tag2 = format!("{tag}-kill");
    let run = traced(&dir)
        .env("LATLAB_TEST_TAG", &tag2)
        .words("-D 60s --on-threshold-env LATLAB_TEST_TAG --on-threshold")
        .arg("1us:shell:sleep 30; true")
        .spawn();
    wait_until("a shell action runs", Duration::from_secs(30), || {
        running(&tag2, "sleep 30") > 0
    });
    run.kill();
    none_left(&tag2);
    latlab()
        .journal(dir.join("restore.json"))
        .arg("restore")
        .output();
}

#[test]
fn signal_actions_refuse_init_latlab_itself_and_a_missing_target() {
    let mut gone = Command::new("true").spawn().unwrap();
    let gone_pid = gone.id();
    gone.wait().unwrap();
    let base = ["cyclic", "-t", "1", "-l", "10", "--no-store", "--trace"];
    expect_exit(&base, &["--on-threshold", "1ms:signal:1:USR1"], 2, "PID 1");
    expect_exit(
        &base,
        &["--on-threshold", &format!("1ms:signal:{gone_pid}:TERM")],
        2,
        &format!("no process {gone_pid}"),
    );
}

#[test]
fn a_second_ctrl_c_kills_the_command_sched_runs() {
    let Some(_x) = trace_test() else { return };
    let dir = Dir::new();
    let tag = format!("sched-second-{}", std::process::id());
    let mut run = latlab()
        .journal(dir.join("restore.json"))
        .env("LATLAB_TEST_TAG", &tag)
        .words("sched -D 60s --no-store -- sh -c")
        .arg("trap '' TERM INT; sleep 60; true")
        .spawn();
    run.wait_until("running its command", |pid| {
        handles(pid, libc::SIGINT) && running(&tag, "sleep 60") > 0
    });
    std::thread::sleep(Duration::from_millis(300));
    run.signal(libc::SIGINT);
    std::thread::sleep(Duration::from_millis(600));
    run.signal(libc::SIGINT);
    run.end_within(Duration::from_secs(10)).assert_exit(130);
    none_left(&tag);
    latlab()
        .journal(dir.join("restore.json"))
        .arg("restore")
        .output();
}

#[test]
fn sched_refuses_an_empty_cgroup_and_shows_escapes_in_task_names() {
    expect_exit(&["sched", "-D", "1s"], &["--cgroup", ""], 2, "--cgroup");
    expect_exit(&["sched", "-D", "1s"], &["--cgroup", "/"], 2, "--cgroup");
    let Some(_x) = trace_test() else { return };
    let dir = Dir::new();
    // A program whose name (its comm) is an ANSI colour and an OSC title sequence.
    let evil = dir.symlink("/bin/sleep", "\x1b[31m\x1b]0;x\x07red");
    let out = latlab()
        .journal(dir.join("restore.json"))
        .words("sched -D 5s --no-store --")
        .arg(&evil)
        .arg("0.3")
        .assert_ok();
    assert!(
        !out.stdout.contains('\x1b') && !out.stdout.contains('\x07'),
        "{:?}",
        out.stdout
    );
    assert!(out.stdout.contains("\\u{1b}"), "{out}");
}

#[test]
fn a_trace_save_that_cannot_be_written_is_a_warning_in_the_saved_result() {
    let Some(_x) = trace_test() else { return };
    if !have("unshare") {
        return skip("trace save on a full disk", "no unshare(1)");
    }
    let d = Dir::new();
    let small = d.mkdir("small");
    let json = d.join("r.json");
    // A 16 KiB tmpfs in a mount namespace of the test's own: the trace.dat (formats, symbols,
    // pages) cannot fit.
    let script = format!(
        "mount -t tmpfs -o size=16k none {s} && exec \"$0\" cyclic -t 1 -a 1 -p 80 -i 1ms -D 2s -q --no-store --trace --trace-save {s}/why.dat --json {j}",
        s = small.display(),
        j = json.display()
    );
    let mut sh = Command::new("unshare");
    sh.args(["-m", "--propagation", "private", "sh", "-c", &script])
        .arg(LATLAB);
    TestCommand::wrapping(sh)
        .journal(d.join("restore.json"))
        .assert_ok();
    let run = read_json(&json);
    let w = run["warnings"].to_string();
    assert!(w.contains("--trace-save") && w.contains("why.dat"), "{w}");
    latlab()
        .journal(d.join("restore.json"))
        .arg("restore")
        .output();
}
