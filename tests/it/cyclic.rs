//! `latlab cyclic` end to end: counts, the sample log against the JSON, signals, bad input,
//! injected stalls and --break-on.

use crate::util::{
    expect_exit, latlab, latlab_as_nobody, read_json, rt_test, rt_unavailable, skip, stall, Dir,
};
use latlab_core::samples::SampleLog;
use latlab_core::stats::Recorder;
use std::time::Duration;

#[test]
fn loops_give_exactly_n_samples_and_json_matches_the_sample_log() {
    let dir = Dir::new();
    let (json, samples) = (dir.join("r.json"), dir.join("s.bin"));
    let out = latlab()
        .words("cyclic -t 2 -l 300 -i 200us -d 100us -q --json")
        .arg(&json)
        .arg("--samples")
        .arg(&samples)
        .assert_ok();
    let stdout = &out.stdout;
    assert!(
        stdout.contains("task") && stdout.contains("p99.9"),
        "{stdout}"
    );
    assert!(
        !stdout.contains('\x1b'),
        "cursor codes in a pipe: {stdout:?}"
    );

    let run = read_json(&json);
    assert_eq!(run["schema"], "latlab.run/1");
    assert_eq!(run["kind"], "cyclic");
    assert_eq!(run["interrupted"], false);
    let series = run["series"].as_array().unwrap();
    assert_eq!(series.len(), 2);
    let log = SampleLog::read(&samples).unwrap();
    assert_eq!(log.lost, Some(vec![0, 0]));
    for (i, s) in series.iter().enumerate() {
        assert_eq!(s["count"], 300, "series {i}");
        assert_eq!(s["lost_samples"], 0);
        let v = &log.samples[i];
        assert_eq!(v.len(), 300, "series {i} in the sample log");
        let mut r = Recorder::new();
        v.iter().for_each(|&x| r.record(x));
        let m = r.summary();
        assert_eq!(s["min_ns"].as_u64().unwrap(), m.min_ns);
        assert_eq!(s["max_ns"].as_u64().unwrap(), m.max_ns);
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * b.abs().max(1.0);
        assert!(close(s["mean_ns"].as_f64().unwrap(), m.mean_ns));
        assert!(close(s["stddev_ns"].as_f64().unwrap(), m.stddev_ns));
        // Percentiles: within the histogram's 0.1% of the exact order statistic.
        let mut sorted = v.clone();
        sorted.sort_unstable();
        for (key, q) in [("p50", 0.5), ("p90", 0.9), ("p99", 0.99)] {
            let exact = sorted[((q * 300.0f64).ceil() as usize).max(1) - 1] as f64;
            let got = s["percentiles"][key].as_f64().unwrap();
            assert!(
                (got - exact).abs() <= exact * 1e-3 + 1.0,
                "{key}: {got} vs {exact}"
            );
        }
        let hist_total: u64 = s["histogram"]["buckets"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b[1].as_u64().unwrap())
            .sum();
        assert_eq!(hist_total, 300);
    }
    // CSV export of the same log: header + one line per sample.
    let csv = latlab()
        .arg("samples")
        .arg(&samples)
        .arg("--csv")
        .assert_ok();
    assert_eq!(csv.stdout.lines().count(), 1 + 600);
}

#[test]
fn group_specs_build_the_seed_004_thread_set() {
    let dir = Dir::new();
    let json = dir.join("r.json");
    latlab()
        .words("cyclic -l 20 -q --json")
        .arg(&json)
        .words("--group policy=fifo,threads=4,prio=80,priospread,interval=1000us,offset=50us")
        .words("--group policy=other,threads=4,interval=1000us,offset=500us")
        .assert_ok();
    let run = read_json(&json);
    let s = run["series"].as_array().unwrap();
    assert_eq!(s.len(), 8);
    if rt_unavailable().is_none() {
        assert_eq!(s[3]["policy"], "fifo");
        assert_eq!(s[3]["prio"], 77);
    }
    assert_eq!(s[3]["interval_ns"], 1_150_000);
    assert_eq!(s[5]["policy"], "other");
    assert_eq!(s[5]["interval_ns"], 1_500_000);
    assert!(s.iter().all(|x| x["count"] == 20));
}

fn interrupted_run_is_saved(signal: libc::c_int) {
    let dir = Dir::new();
    let (json, samples) = (dir.join("r.json"), dir.join("s.bin"));
    let mut child = latlab()
        .words("cyclic -t 2 -i 500us -D 1h --json")
        .arg(&json)
        .arg("--samples")
        .arg(&samples)
        .spawn();
    // Wait for the measuring threads, then for some samples: never a race against start-up.
    child.wait_for_thread("latlab-T1");
    std::thread::sleep(Duration::from_millis(300));
    child.signal(signal);
    let out = child.finish();
    out.assert_ok();
    assert!(out.stdout.contains("(interrupted)"), "{out}");
    let run = read_json(&json);
    assert_eq!(run["interrupted"], true);
    let log = SampleLog::read(&samples).unwrap();
    assert!(log.lost.is_some(), "sample log not finished cleanly");
    for (i, s) in run["series"].as_array().unwrap().iter().enumerate() {
        let n = s["count"].as_u64().unwrap();
        assert!(n > 0, "series {i} collected nothing");
        assert_eq!(
            log.samples[i].len() as u64,
            n,
            "series {i}: log and JSON disagree"
        );
    }
}

#[test]
fn sigint_mid_run_saves_an_interrupted_result() {
    interrupted_run_is_saved(libc::SIGINT);
}

#[test]
fn sigterm_mid_run_saves_an_interrupted_result() {
    interrupted_run_is_saved(libc::SIGTERM);
}

#[test]
fn bad_input_exits_2_naming_the_flag() {
    let cases: &[(&[&str], &str)] = &[
        (&["-i", "0"], "--interval"),
        (&["-i", "-100"], "--interval"),
        (&["-i", "10parsecs"], "--interval"),
        (&["-p", "100"], "priority"),
        (&["--policy", "fifo", "-p", "0"], "priority"),
        (&["-a", "4096"], "--affinity"),
        (&["-a", "3-1"], "--affinity"),
        (&["-t", "100000"], "at most 1024"),
        (&["--policy", "edf"], "--policy"),
        (&["--group", "policy=fifo,,threads=2"], "--group"),
        (&["--group", "threads=2,colour=red"], "colour"),
        (&["-D", "0"], "--duration"),
        (&["-l", "many"], "--loops"),
        (&["-h", "0"], "--histogram"),
        (
            &["--json", "/nonexistent-dir/r.json"],
            "--json /nonexistent-dir/r.json",
        ),
        (
            &["--samples", "/nonexistent-dir/s.bin"],
            "--samples /nonexistent-dir/s.bin",
        ),
        (&["--unit", "furlongs"], "--unit"),
    ];
    for (args, want) in cases {
        expect_exit(&["cyclic", "-l", "1"], args, 2, want);
    }
    latlab()
        .words("samples /nonexistent-file")
        .assert_refused(2, "/nonexistent-file");
}

#[test]
fn help_explains_options_with_units() {
    let out = latlab().words("help cyclic").assert_ok();
    let h = &out.stdout;
    for want in [
        "--interval",
        "µs",
        "--break-on",
        "--group",
        "--samples",
        "clock_nanosleep",
    ] {
        assert!(h.contains(want), "help lacks {want}");
    }
    latlab().words("cyclic --help").assert_ok();
}

#[test]
fn injected_stall_is_reported_on_the_thread_pinned_there() {
    let Some(_x) = rt_test() else { return };
    let dir = Dir::new();
    let json = dir.join("r.json");
    let stall_for = Duration::from_millis(60);
    let interval = Duration::from_millis(1);
    let child = latlab()
        .words("cyclic -t -p 50 -i 1ms -d 0 -D 6s -q --json")
        .arg(&json)
        .spawn();
    // Three stalls a second apart: one is enough, and a busy machine may blunt one of them.
    stall(child.id(), "latlab-T1", 1)
        .busy(stall_for)
        .repeat(3, Duration::from_secs(1))
        .run_now();
    child.finish().assert_ok();
    let run = read_json(&json);
    let s = run["series"].as_array().unwrap();
    let t1 = s.iter().find(|x| x["cpu"] == 1).expect("a thread on CPU 1");
    assert_eq!(t1["policy"], "fifo");
    let max = t1["max_ns"].as_u64().unwrap() as u128;
    assert!(
        max >= (stall_for - interval).as_nanos(),
        "CPU 1 max {max} ns < injected stall {stall_for:?}"
    );
    assert!(
        t1["overruns"].as_u64().unwrap() >= 1,
        "a 60 ms stall at 1 ms periods must overrun"
    );
}

#[test]
fn break_on_stops_the_run_and_names_thread_and_cpu() {
    let Some(_x) = rt_test() else { return };
    let dir = Dir::new();
    let json = dir.join("r.json");
    let child = latlab()
        .words("cyclic -t 1 -a 1 -p 50 -i 1ms -D 20s -q -b 30ms --json")
        .arg(&json)
        .spawn();
    // Only CPU 1 is measured, so host noise on CPU 0 cannot trip the break first.
    stall(child.id(), "latlab-T0", 1)
        .busy(Duration::from_millis(80))
        .repeat(3, Duration::from_secs(1))
        .run_now();
    let out = child.finish();
    out.assert_exit(1);
    assert!(out.stderr.contains("on CPU 1"), "{out}");
    assert!(out.stderr.contains("--break-on"), "{out}");
    let run = read_json(&json);
    assert!(run["check_failure"].as_str().unwrap().contains("CPU 1"));
    assert!(
        run["duration_s"].as_f64().unwrap() < 20.0,
        "the run did not stop at the break"
    );
}

#[test]
fn without_rt_privilege_it_falls_back_or_refuses_under_strict() {
    let dir = Dir::new();
    let json = dir.join("r.json");
    let as_nobody = |extra: &[&std::ffi::OsStr]| {
        latlab_as_nobody(&dir, &[]).map(|mut c| {
            c.args(["cyclic", "-l", "20", "-q", "--no-store"])
                .args(extra)
                .output()
                .unwrap()
        })
    };
    let Some(out) = as_nobody(&["--json".as_ref(), json.as_os_str()]) else {
        return;
    };
    let err = String::from_utf8_lossy(&out.stderr);
    if err.contains("Permission denied") && !json.exists() {
        return skip(
            "without_rt_privilege_it_falls_back_or_refuses_under_strict",
            &format!("'nobody' cannot run the test binary here: {err}"),
        );
    }
    assert!(out.status.success(), "{err}");
    let run = read_json(&json);
    let warnings = run["warnings"].to_string();
    assert!(warnings.contains("fell back to SCHED_OTHER"), "{warnings}");
    assert!(warnings.contains("RLIMIT_RTPRIO"), "{warnings}");
    assert_eq!(run["series"][0]["policy"], "other");
    assert!(String::from_utf8_lossy(&out.stdout).contains("warning: "));
    let strict = as_nobody(&["--strict".as_ref()]).unwrap();
    assert_eq!(
        strict.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&strict.stderr)
    );
    assert!(String::from_utf8_lossy(&strict.stderr).contains("RLIMIT_RTPRIO"));
    // A monitor says it on stderr when it starts, as it says a moved thread (not only in its
    // snapshots).
    let mut c = latlab_as_nobody(&dir, &[]).unwrap();
    let mon = c
        .args(["monitor", "-a", "1", "-D", "1s", "-q", "--no-store"])
        .args(["--listen", "127.0.0.1:0"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&mon.stderr);
    assert!(mon.status.success(), "{err}");
    assert!(
        err.contains("latlab monitor: warning: the kernel refused fifo priority")
            && err.contains("RLIMIT_RTPRIO"),
        "{err}"
    );
}

/// Locked, resident KiB of each anonymous mapping of `pid` that has no name (thread stacks,
/// malloc arenas, large allocations; not `[heap]` or `[stack]`), from /proc/PID/smaps.
fn locked_anonymous_kib(pid: u32) -> Vec<(String, u64)> {
    let smaps = std::fs::read_to_string(format!("/proc/{pid}/smaps")).unwrap();
    let mut out = Vec::new();
    let mut current: Option<String> = None;
    for line in smaps.lines() {
        let first = line.split_whitespace().next().unwrap_or("");
        if first.contains('-') && first.chars().all(|c| c.is_ascii_hexdigit() || c == '-') {
            // "start-end perms offset dev inode [path]": anonymous when there is no path.
            current = (line.split_whitespace().count() == 5).then(|| first.to_string());
        } else if let (Some(range), Some(kib)) = (&current, line.strip_prefix("Locked:")) {
            let kib: u64 = kib.trim().trim_end_matches("kB").trim().parse().unwrap();
            out.push((range.clone(), kib));
        }
    }
    out
}

#[test]
fn locked_memory_holds_no_large_helper_stacks() {
    let Some(_x) = rt_test() else { return };
    // mlockall(MCL_CURRENT|MCL_FUTURE) makes every page of every thread stack present and
    // locked: helper threads (signals, privilege probe) with std's 2 MiB stacks cost more
    // start-up CPU than locking the binary. Everything else anonymous is far below 1 MiB.
    let mut child = latlab()
        .words("cyclic -t 2 -i 1ms -D 1h -q --no-store")
        .spawn();
    child.wait_for_thread("latlab-T1");
    std::thread::sleep(Duration::from_millis(200));
    let status = std::fs::read_to_string(format!("/proc/{}/status", child.id())).unwrap();
    let locked = locked_anonymous_kib(child.id());
    child.signal(libc::SIGINT);
    child.finish().assert_ok();
    let vmlck: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmLck:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    assert!(vmlck > 0, "memory was not locked: {status}");
    assert!(!locked.is_empty(), "no anonymous mapping found");
    let large: Vec<_> = locked.iter().filter(|(_, kib)| *kib > 1024).collect();
    assert!(
        large.is_empty(),
        "anonymous mappings with more than 1 MiB locked: {large:?}"
    );
}
