//! Threshold actions with bounds (issue 34): a `trace` action never holds a run past `-D` or a
//! signal and stays within `--trace-budget`; `shell:` commands run at most 4 at a time with a
//! minimal environment and never outlive latlab; `signal:` refuses PID 1 and latlab itself
//! and checks its target. Also `sched`'s bounds: a second Ctrl-C kills `-- CMD`'s command, an
//! empty `--cgroup` is refused, task names with escapes are shown, not obeyed.

use crate::lifecycle::{ends_within, handles_sigint, signal};
use crate::trace::trace_unavailable;
use crate::util::{exclusive, expect_exit, latlab, none_left, read_json, skip, tagged};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

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

#[test]
fn trace_actions_stay_within_the_budget_and_end_with_the_run() {
    if let Some(w) = trace_unavailable() {
        return skip("trace_actions_stay_within_the_budget", &w);
    }
    let _x = exclusive();
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("out");
    std::fs::create_dir(&out_dir).unwrap();
    let json = dir.path().join("r.json");
    // Every wake-up is a spike (1 us): a window per wake-up, within 20 MiB, for -D 2s.
    let child = latlab()
        .env("LATLAB_JOURNAL", dir.path().join("restore.json"))
        .current_dir(&out_dir)
        .args([
            "cyclic", "-t", "1", "-a", "1", "-p", "80", "-i", "1ms", "-D", "2s",
        ])
        .args(["--trace", "--trace-threshold", "1us", "-q", "--no-store"])
        .args([
            "--on-threshold",
            "1us:trace",
            "--on-threshold-max",
            "1000000",
        ])
        .args(["--trace-budget", "20M", "--json"])
        .arg(&json)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    let out = ends_within(child, Duration::from_secs(60), "cyclic with 1us:trace");
    let took = t0.elapsed();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let run = read_json(&json);
    let t = &run["trace"];
    assert!(
        bytes_in(&out_dir) <= 20 << 20,
        "{} bytes",
        bytes_in(&out_dir)
    );
    assert!(t["bytes_saved"].as_u64().unwrap_or(0) <= 20 << 20, "{t}");
    let skipped = t["actions_over_budget"].as_u64().unwrap_or(0)
        + t["actions_after_end"].as_u64().unwrap_or(0);
    assert!(skipped > 0, "nothing was held back: {}", t["actions"]);
    assert!(
        run["warnings"].to_string().contains("trace"),
        "{}",
        run["warnings"]
    );
    // The measuring itself lasted its -D: the windows did not extend it (the run's recorded
    // duration is what it measured).
    assert!(
        run["duration_s"].as_f64().unwrap() < 2.5,
        "{}",
        run["duration_s"]
    );
    let _ = took;
}

#[test]
fn sigterm_ends_a_run_that_is_saving_trace_windows() {
    if let Some(w) = trace_unavailable() {
        return skip("sigterm_ends_a_run_that_is_saving_trace_windows", &w);
    }
    let _x = exclusive();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let child = latlab()
        .env("LATLAB_JOURNAL", dir.path().join("restore.json"))
        .current_dir(dir.path())
        .args([
            "cyclic", "-t", "1", "-a", "1", "-p", "80", "-i", "1ms", "-D", "60s",
        ])
        .args(["--trace", "--trace-threshold", "1us", "-q", "--no-store"])
        .args([
            "--on-threshold",
            "1us:trace",
            "--on-threshold-max",
            "1000000",
        ])
        .args(["--trace-budget", "200M", "--json"])
        .arg(&json)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(30)
        && std::fs::read_dir(dir.path()).unwrap().count() < 4
    {
        std::thread::sleep(Duration::from_millis(20));
    }
    signal(&child, libc::SIGTERM);
    let out = ends_within(
        child,
        Duration::from_secs(5),
        "a run saving windows, after SIGTERM",
    );
    crate::util::assert_exit(&out, 0);
    let run = read_json(&json);
    assert_eq!(run["interrupted"], true);
}

#[test]
fn shell_actions_are_bounded_minimal_and_die_with_latlab() {
    if let Some(w) = trace_unavailable() {
        return skip("shell_actions_are_bounded_minimal_and_die_with_latlab", &w);
    }
    let _x = exclusive();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let envs = dir.path().join("env.txt");
    let tag = format!("shell-actions-{}", std::process::id());
    // Each spike starts a shell that records its environment and then sleeps 30 s, leaving a
    // child of its own behind the shell (`sleep 30; true`).
    let cmd = format!("1us:shell:env >> {}; sleep 30; true", envs.display());
    let child = latlab()
        .env("LATLAB_JOURNAL", dir.path().join("restore.json"))
        .env("PGPASSWORD", "hunter2")
        .env("LATLAB_TEST_TAG", &tag)
        .args([
            "cyclic", "-t", "1", "-a", "1", "-p", "80", "-i", "1ms", "-D", "3s",
        ])
        .args(["--trace", "--trace-threshold", "1us", "-q", "--no-store"])
        .args(["--on-threshold", &cmd, "--on-threshold-max", "1000"])
        .args(["--on-threshold-env", "LATLAB_TEST_TAG", "--json"])
        .arg(&json)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    let mut most = 0;
    while t0.elapsed() < Duration::from_millis(2500) {
        let sleeps = running(&tag, "sleep 30");
        most = most.max(sleeps);
        std::thread::sleep(Duration::from_millis(50));
    }
    // The run ends at its -D: the shells do not hold it (no 10 s grace, no wait for sleep).
    let out = ends_within(
        child,
        Duration::from_secs(5),
        "cyclic with running shell: actions",
    );
    crate::util::assert_exit(&out, 0);
    assert!(most >= 1, "no shell ran");
    assert!(most <= 4, "{most} shells at once");
    none_left(&tag);
    let run = read_json(&json);
    assert!(
        run["trace"]["actions_busy"].as_u64().unwrap_or(0) > 0,
        "{}",
        run["trace"]
    );
    assert!(run["trace"]["shells_killed"].as_u64().unwrap_or(0) > 0);
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
    let mut child = latlab()
        .env("LATLAB_JOURNAL", dir.path().join("restore.json"))
        .env("LATLAB_TEST_TAG", &tag2)
        .args([
            "cyclic", "-t", "1", "-a", "1", "-p", "80", "-i", "1ms", "-D", "60s",
        ])
        .args(["--trace", "--trace-threshold", "1us", "-q", "--no-store"])
        .args(["--on-threshold", "1us:shell:sleep 30; true"])
        .args(["--on-threshold-env", "LATLAB_TEST_TAG"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while running(&tag2, "sleep 30") == 0 {
        assert!(t0.elapsed() < Duration::from_secs(30), "no shell started");
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    none_left(&tag2);
    let _ = latlab()
        .arg("restore")
        .env("LATLAB_JOURNAL", dir.path().join("restore.json"))
        .output();
}

#[test]
fn signal_actions_refuse_init_latlab_itself_and_a_missing_target() {
    if let Some(w) = trace_unavailable() {
        return skip("signal_actions_refuse_init", &w);
    }
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
    if let Some(w) = trace_unavailable() {
        return skip("a_second_ctrl_c_kills_the_command_sched_runs", &w);
    }
    let _x = exclusive();
    let dir = tempfile::tempdir().unwrap();
    let tag = format!("sched-second-{}", std::process::id());
    let child = latlab()
        .env("LATLAB_JOURNAL", dir.path().join("restore.json"))
        .env("LATLAB_TEST_TAG", &tag)
        .args(["sched", "-D", "60s", "--no-store", "--"])
        .args(["sh", "-c", "trap '' TERM INT; sleep 60; true"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while !(handles_sigint(child.id()) && running(&tag, "sleep 60") > 0) {
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "the command never started"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(300));
    signal(&child, libc::SIGINT);
    std::thread::sleep(Duration::from_millis(600));
    signal(&child, libc::SIGINT);
    let out = ends_within(child, Duration::from_secs(10), "sched after two Ctrl-C");
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    none_left(&tag);
    let _ = latlab()
        .arg("restore")
        .env("LATLAB_JOURNAL", dir.path().join("restore.json"))
        .output();
}

#[test]
fn sched_refuses_an_empty_cgroup_and_shows_escapes_in_task_names() {
    expect_exit(&["sched", "-D", "1s"], &["--cgroup", ""], 2, "--cgroup");
    expect_exit(&["sched", "-D", "1s"], &["--cgroup", "/"], 2, "--cgroup");
    if let Some(w) = trace_unavailable() {
        return skip("sched shows escapes in task names", &w);
    }
    let _x = exclusive();
    let dir = tempfile::tempdir().unwrap();
    // A program whose name (its comm) is an ANSI colour and an OSC title sequence.
    let evil = dir.path().join("\x1b[31m\x1b]0;x\x07red");
    std::os::unix::fs::symlink("/bin/sleep", &evil).unwrap();
    let out = latlab()
        .env("LATLAB_JOURNAL", dir.path().join("restore.json"))
        .args(["sched", "-D", "5s", "--no-store", "--"])
        .arg(&evil)
        .arg("0.3")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!text.contains('\x1b') && !text.contains('\x07'), "{text:?}");
    assert!(text.contains("\\u{1b}"), "{text}");
}

#[test]
fn a_trace_save_that_cannot_be_written_is_a_warning_in_the_saved_result() {
    if let Some(w) = trace_unavailable() {
        return skip("trace save on a full disk", &w);
    }
    if !latlab::sys::process::command_exists("unshare") {
        return skip("trace save on a full disk", "no unshare(1)");
    }
    let _x = exclusive();
    let d = tempfile::tempdir().unwrap();
    let small = d.path().join("small");
    std::fs::create_dir(&small).unwrap();
    let json = d.path().join("r.json");
    // A 16 KiB tmpfs in a mount namespace of the test's own: the trace.dat (formats, symbols,
    // pages) cannot fit.
    let script = format!(
        "mount -t tmpfs -o size=16k none {s} && exec \"$0\" cyclic -t 1 -a 1 -p 80 -i 1ms -D 2s -q --no-store --trace --trace-save {s}/why.dat --json {j}",
        s = small.display(),
        j = json.display()
    );
    let out = Command::new("unshare")
        .args(["-m", "--propagation", "private", "sh", "-c", &script])
        .arg(env!("CARGO_BIN_EXE_latlab"))
        .env("LATLAB_JOURNAL", d.path().join("restore.json"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let run = read_json(&json);
    let w = run["warnings"].to_string();
    assert!(w.contains("--trace-save") && w.contains("why.dat"), "{w}");
    let _ = latlab()
        .arg("restore")
        .env("LATLAB_JOURNAL", d.path().join("restore.json"))
        .output();
}
