//! Outputs of every measurement: results are saved before anything is printed (a closed stdout
//! is not an error), files are written atomically, in place for a device and never through a
//! planted symlink, and sample logs survive a SIGKILL.

use crate::lifecycle::{ends_within, signal};
use crate::util::{latlab, read_json, rt_unavailable, skip, SpawnPiped};
use std::process::Stdio;
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
