//! The lifecycle every measurement shares through the driver: results are saved before anything
//! is printed (a closed stdout is not an error), files are written atomically and never through
//! a planted symlink, Ctrl-C ends every measurement promptly with its result saved, loads never
//! hold a run past its end, and nothing latlab starts outlives it.

use crate::util::{
    assert_exit, has_thread, latlab, none_left, read_json, rt_unavailable, skip, tagged, SpawnPiped,
};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A short run of every measurement.
const SHORT: &[&[&str]] = &[
    &["cyclic", "-t", "1", "-l", "200"],
    &["noise", "-D", "300ms"],
    &["ctxsw", "-n", "2000"],
    &["clocks", "--batches", "20", "--batch", "100"],
    &["tcp", "-D", "300ms"],
    &["contend", "-n", "2000"],
    &["migrate", "-l", "5"],
];

/// A long run of every measurement (ended by a signal), with a thread to wait for, if any.
const LONG: &[(&[&str], Option<&str>)] = &[
    (&["cyclic", "-t", "2", "-D", "1h"], Some("latlab-T0")),
    (&["noise", "-D", "1h"], Some("latlab-cpu1")),
    (&["ctxsw", "-n", "50000000", "--method", "futex"], None),
    (&["clocks", "--batch", "100000000"], None),
    (&["tcp", "-D", "1h"], None),
    (&["tcp", "-D", "1h", "--tasks", "processes"], None),
    (&["contend", "-n", "1000000000"], None),
    (&["load", "hackbench:loops=100000000"], None),
    (&["load", "hackbench:loops=100000000", "-D", "1h"], None),
];

/// True once `pid` has installed a SIGINT handler (so a signal is a clean stop, not a kill).
fn handles_sigint(pid: u32) -> bool {
    let Ok(s) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
        return false;
    };
    s.lines()
        .find_map(|l| l.strip_prefix("SigCgt:"))
        .and_then(|m| u64::from_str_radix(m.trim(), 16).ok())
        .is_some_and(|m| m & (1 << (libc::SIGINT - 1)) != 0)
}

fn signal(child: &Child, sig: i32) {
    // SAFETY: sending a signal to our own child.
    unsafe { libc::kill(child.id() as i32, sig) };
}

/// Waits for `child` to end within `limit`; kills it and fails if it does not.
fn ends_within(mut child: Child, limit: Duration, what: &str) -> std::process::Output {
    let t0 = Instant::now();
    while t0.elapsed() < limit {
        if let Ok(Some(_)) = child.try_wait() {
            return child.wait_with_output().unwrap();
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    signal(&child, libc::SIGKILL);
    let out = child.wait_with_output().unwrap();
    panic!(
        "{what} still ran {limit:?} after it was asked to stop: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn every_measurement_saves_its_result_when_stdout_is_closed() {
    if let Some(why) = rt_unavailable() {
        return skip(
            "every_measurement_saves_its_result_when_stdout_is_closed",
            &why,
        );
    }
    let dir = tempfile::tempdir().unwrap();
    for args in SHORT {
        let json = dir.path().join(format!("{}.json", args[0]));
        let mut child = latlab().args(*args).arg("--json").arg(&json).spawn_piped();
        // The reader goes away at once, as with `| true`.
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        // migrate's priority-order check may fail (exit 1) on a busy machine: the result is
        // still saved, which is what this test is about.
        assert!(
            matches!(out.status.code(), Some(0) | Some(1)),
            "{args:?}: {err}"
        );
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert!(err.contains("stored in"), "{args:?}: not stored: {err}");
        assert_eq!(read_json(&json)["kind"], args[0], "{args:?}");
    }
}

#[test]
fn a_failing_run_leaves_the_previous_json_intact() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("prev.json");
    std::fs::write(&json, "previous result\n").unwrap();
    let out = latlab()
        .args([
            "cyclic",
            "-t",
            "1",
            "-l",
            "10",
            "--store",
            "mysql://x/y",
            "--json",
        ])
        .arg(&json)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(std::fs::read(&json).unwrap(), b"previous result\n");
    // The directory holds nothing but the old file: no temporary left behind.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

#[test]
fn output_files_never_follow_a_planted_symlink() {
    let dir = tempfile::tempdir().unwrap();
    let victim = dir.path().join("victim");
    std::fs::write(&victim, "precious").unwrap();
    let json = dir.path().join("r.json");
    std::os::unix::fs::symlink(&victim, &json).unwrap();
    let out = latlab()
        .args(["cyclic", "-t", "1", "-l", "10", "--no-store", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
    assert!(!std::fs::symlink_metadata(&json).unwrap().is_symlink());
    assert_eq!(read_json(&json)["kind"], "cyclic");

    let samples = dir.path().join("s.bin");
    std::os::unix::fs::symlink(&victim, &samples).unwrap();
    let out = latlab()
        .args(["cyclic", "-t", "1", "-l", "10", "--no-store", "--samples"])
        .arg(&samples)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("--samples"), "{err}");
    assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
}

#[test]
fn every_measurement_ends_soon_after_sigint_with_its_result_saved() {
    if let Some(why) = rt_unavailable() {
        return skip(
            "every_measurement_ends_soon_after_sigint_with_its_result_saved",
            &why,
        );
    }
    let _x = crate::util::exclusive();
    let dir = tempfile::tempdir().unwrap();
    for (i, (args, thread)) in LONG.iter().enumerate() {
        let json = dir.path().join(format!("{i}.json"));
        let mut c = latlab();
        c.args(*args);
        if args[0] != "load" {
            c.arg("--json").arg(&json);
        }
        let child = c.spawn_piped();
        let t0 = Instant::now();
        while !handles_sigint(child.id()) || thread.is_some_and(|t| !has_thread(child.id(), t)) {
            assert!(
                t0.elapsed() < Duration::from_secs(30),
                "{args:?} never started"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        std::thread::sleep(Duration::from_millis(300));
        signal(&child, libc::SIGINT);
        // Within a second on a quiet machine; the bound leaves room for this noisy VM.
        let out = ends_within(child, Duration::from_secs(10), &format!("{args:?}"));
        let (o, e) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        assert_eq!(out.status.code(), Some(0), "{args:?}: {e}");
        assert!(o.contains("interrupted"), "{args:?}: {o}");
        if args[0] != "load" {
            assert_eq!(read_json(&json)["interrupted"], true, "{args:?}");
            assert!(e.contains("stored in"), "{args:?}: {e}");
        }
    }
}

#[test]
fn a_signal_as_soon_as_the_handlers_are_in_still_saves_the_result() {
    if let Some(why) = rt_unavailable() {
        return skip(
            "a_signal_as_soon_as_the_handlers_are_in_still_saves_the_result",
            &why,
        );
    }
    let _x = crate::util::exclusive();
    let dir = tempfile::tempdir().unwrap();
    for (i, args) in [
        &["cyclic", "-t", "2", "-D", "1h"][..],
        &["noise", "-D", "1h"][..],
        &["cyclic", "-t", "1", "-D", "1h", "--load", "cpu"][..],
    ]
    .iter()
    .enumerate()
    {
        let json = dir.path().join(format!("{i}.json"));
        let child = latlab().args(*args).arg("--json").arg(&json).spawn_piped();
        while !handles_sigint(child.id()) {
            std::thread::sleep(Duration::from_micros(200));
        }
        signal(&child, libc::SIGINT);
        let out = ends_within(child, Duration::from_secs(10), &format!("{args:?}"));
        assert_eq!(
            out.status.code(),
            Some(0),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(read_json(&json)["interrupted"], true, "{args:?}");
    }
}

#[test]
fn noise_at_priority_99_on_the_control_threads_cpu_ends_on_time_and_on_sigint() {
    if let Some(why) = rt_unavailable() {
        return skip(
            "noise_at_priority_99_on_the_control_threads_cpu_ends_on_time_and_on_sigint",
            &why,
        );
    }
    let _x = crate::util::exclusive();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("n.json");
    let base = [
        "noise",
        "-p",
        "99",
        "--cpus",
        "0-1",
        "--main-cpu",
        "0",
        "--force",
        "-q",
    ];
    let child = latlab()
        .args(base)
        .args(["-D", "1s", "--json"])
        .arg(&json)
        .spawn_piped();
    let out = ends_within(child, Duration::from_secs(20), "noise -p 99 -D 1s");
    assert_eq!(out.status.code(), Some(0));
    let run = read_json(&json);
    assert_eq!(run["interrupted"], false);
    assert!(run["warnings"].to_string().contains("priority 98"));

    let child = latlab()
        .args(base)
        .args(["-D", "1h", "--json"])
        .arg(&json)
        .spawn_piped();
    let t0 = Instant::now();
    while !has_thread(child.id(), "latlab-cpu0") {
        assert!(t0.elapsed() < Duration::from_secs(30));
        std::thread::sleep(Duration::from_millis(5));
    }
    std::thread::sleep(Duration::from_millis(300));
    signal(&child, libc::SIGINT);
    let out = ends_within(child, Duration::from_secs(10), "noise -p 99 -D 1h");
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(read_json(&json)["interrupted"], true);
}

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
fn a_sigkilled_sample_log_keeps_every_complete_block() {
    let dir = tempfile::tempdir().unwrap();
    let samples = dir.path().join("s.bin");
    let mut child = latlab()
        .args([
            "cyclic",
            "-t",
            "1",
            "-i",
            "200us",
            "-D",
            "1h",
            "--no-store",
            "--samples",
        ])
        .arg(&samples)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while std::fs::metadata(&samples).map_or(0, |m| m.len()) < 64 * 1024 {
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "no samples reached the file"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    signal(&child, libc::SIGKILL);
    let _ = child.wait();
    let out = latlab().arg("samples").arg(&samples).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("cut short"), "{text}");
    let log = latlab::samples::SampleLog::read(&samples).unwrap();
    assert!(
        log.samples[0].len() >= 1000,
        "{} samples",
        log.samples[0].len()
    );
}

#[test]
fn samples_lost_by_a_stalled_writer_are_counted() {
    if let Some(why) = rt_unavailable() {
        return skip("samples_lost_by_a_stalled_writer_are_counted", &why);
    }
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    let path = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(path.as_ptr(), 0o600) }, 0);
    let json = dir.path().join("r.json");
    let child = latlab()
        .args([
            "cyclic",
            "-t",
            "1",
            "-a",
            "1",
            "-i",
            "100us",
            "-D",
            "6s",
            "--no-store",
        ])
        .env("LATLAB_TEST_RING_CAPACITY", "4096")
        .arg("--json")
        .arg(&json)
        .arg("--samples")
        .arg(&fifo)
        .spawn_piped();
    // A reader that opens the FIFO, reads nothing for 5 s (the ring, the FIFO's 64 KiB and
    // one block in the writer hold about 2 s at 10 kHz), then drains everything into a file.
    let copy = dir.path().join("copy.bin");
    let (f2, c2) = (fifo.clone(), copy.clone());
    let reader = std::thread::spawn(move || {
        let mut r = std::fs::File::open(&f2).unwrap();
        std::thread::sleep(Duration::from_secs(5));
        let mut w = std::fs::File::create(&c2).unwrap();
        std::io::copy(&mut r, &mut w).unwrap();
    });
    let out = ends_within(child, Duration::from_secs(60), "cyclic with a stalled log");
    reader.join().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let run = read_json(&json);
    let s = &run["series"][0];
    let (count, lost) = (
        s["count"].as_u64().unwrap(),
        s["lost_samples"].as_u64().unwrap(),
    );
    assert!(lost > 0, "nothing was lost: the writer never fell behind");
    let log = latlab::samples::SampleLog::read(&copy).unwrap();
    assert_eq!(log.samples[0].len() as u64 + lost, count);
    assert_eq!(log.lost.as_ref().unwrap()[0], lost);
    assert!(run["warnings"].to_string().contains("lost"));
    assert!(err.contains("lost") || String::from_utf8_lossy(&out.stdout).contains("lost"));
}

#[test]
fn cpu_numbers_beyond_cpu_set_t_are_refused() {
    for (cmd, args, flag) in [
        ("cyclic", &["-a", "5000", "-l", "1"][..], "-a"),
        ("noise", &["--cpus", "100000", "-D", "1s"][..], "--cpus"),
        (
            "noise",
            &["--main-cpu", "4096", "-D", "1s"][..],
            "--main-cpu",
        ),
        ("ctxsw", &["--cpus", "9999"][..], "--cpus"),
        (
            "tcp",
            &["--sender-cpu", "99999", "-D", "1s"][..],
            "--sender-cpu",
        ),
        ("contend", &["--cpus", "1048576", "-n", "1"][..], "--cpus"),
    ] {
        crate::util::expect_exit(&[cmd], args, 2, flag);
    }
}

#[test]
fn a_plan_child_that_writes_much_to_stderr_does_not_deadlock_the_runner() {
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

#[test]
fn json_to_a_device_is_written_in_place_and_the_device_survives() {
    use std::os::unix::fs::FileTypeExt;
    // /dev/null takes the result; a full device is an I/O failure (exit 3). Both stay devices.
    for (dev, code) in [("/dev/null", 0), ("/dev/full", 3)] {
        let out = latlab()
            .args(["cyclic", "-t", "1", "-l", "10", "--no-store", "--json", dev])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(code), "{dev}");
        let t = std::fs::metadata(dev).unwrap().file_type();
        assert!(t.is_char_device(), "{dev} is no longer a device");
    }
}

#[test]
fn one_interrupt_delivered_twice_at_once_still_saves_the_result() {
    if let Some(why) = rt_unavailable() {
        return skip(
            "one_interrupt_delivered_twice_at_once_still_saves_the_result",
            &why,
        );
    }
    let _x = crate::util::exclusive();
    let dir = tempfile::tempdir().unwrap();
    for (i, args) in [&["noise", "-D", "1h"][..], &["tcp", "-D", "1h"][..]]
        .iter()
        .enumerate()
    {
        let json = dir.path().join(format!("{i}.json"));
        let child = latlab().args(*args).arg("--json").arg(&json).spawn_piped();
        while !handles_sigint(child.id()) {
            std::thread::sleep(Duration::from_millis(5));
        }
        std::thread::sleep(Duration::from_millis(300));
        // `timeout -s INT` and a terminal signal the process and its group: two at once.
        signal(&child, libc::SIGINT);
        signal(&child, libc::SIGINT);
        let out = ends_within(child, Duration::from_secs(10), &format!("{args:?}"));
        assert_eq!(
            out.status.code(),
            Some(0),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(read_json(&json)["interrupted"], true, "{args:?}");
    }
}

#[test]
fn runs_commands_survive_a_closed_stdout() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let out = latlab()
        .args(["cyclic", "-t", "1", "-l", "10", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let id = read_json(&json)["id"].as_str().unwrap().to_string();
    for args in [
        vec!["runs", "list"],
        vec!["runs", "show", &id],
        vec!["runs", "export", "--all"],
    ] {
        let mut child = latlab().args(&args).spawn_piped();
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}

#[test]
fn report_and_plot_write_to_stdout_with_a_dash_and_never_a_file_named_dash() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let out = latlab()
        .args(["cyclic", "-t", "1", "-l", "20", "--no-store", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    for (args, starts) in [
        (vec!["report", "-o", "-"], "<!DOCTYPE html>"),
        (vec!["plot", "--svg", "-"], "<svg"),
    ] {
        let out = latlab()
            .args(&args)
            .arg(&json)
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{args:?}");
        assert!(
            String::from_utf8_lossy(&out.stdout).starts_with(starts),
            "{args:?}"
        );
        assert!(
            !dir.path().join("-").exists(),
            "{args:?} wrote a file named '-'"
        );
    }
    // A directory that is not there is bad usage (exit 2); a full device is an I/O failure.
    for (path, code) in [("/nonexistent-dir/r.html", 2), ("/dev/full", 3)] {
        let out = latlab()
            .args(["report", "-o", path])
            .arg(&json)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(code), "{path}");
    }
}

/// Commands that measure nothing (ministat, compare, gate, runs, report ...) end on the first
/// SIGINT or SIGTERM, even while they wait on a pipe that never delivers.
#[test]
fn commands_that_measure_nothing_end_on_the_first_signal() {
    for (args, sig, code) in [
        (&["ministat", "-"][..], libc::SIGINT, 130),
        (&["compare", "a=-", "b=-"][..], libc::SIGTERM, 143),
        (&["compare", "--ministat", "-"][..], libc::SIGINT, 130),
    ] {
        let mut child = latlab()
            .args(args)
            .stdin(Stdio::piped()) // kept open: the input never ends
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let pid = child.id();
        let t0 = Instant::now();
        while !has_thread(pid, "latlab-signals") {
            assert!(
                t0.elapsed() < Duration::from_secs(60),
                "{args:?} never started"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        unsafe { libc::kill(pid as i32, sig) };
        let ignored = format!("latlab {args:?} ignored the first signal");
        crate::util::wait_bounded(&mut child, Duration::from_secs(60), &ignored);
        assert_eq!(child.wait().unwrap().code(), Some(code), "{args:?}");
    }
}
