//! Loads on their own CPUs: `--load KIND:cpus=LIST` and `--housekeeping LIST` set the load
//! workers' affinity (read back from /proc while they run), the result records the set, and
//! an overlap with the measured CPUs is warned about.

use crate::util::{expect_exit, latlab, read_json, rt_unavailable, skipped, Dir};
use std::process::Stdio;
use std::time::{Duration, Instant};

/// The affinity lists of every thread of every load worker whose parent is `parent`.
fn worker_affinities(parent: u32) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        let ppid = status
            .lines()
            .find_map(|l| l.strip_prefix("PPid:"))
            .map(|v| v.trim().parse::<u32>().unwrap_or(0));
        if ppid != Some(parent) || !String::from_utf8_lossy(&cmd).contains("load-worker") {
            continue;
        }
        for t in std::fs::read_dir(format!("/proc/{pid}/task"))
            .unwrap()
            .flatten()
        {
            let st = std::fs::read_to_string(t.path().join("status")).unwrap_or_default();
            if let Some(l) = st
                .lines()
                .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
            {
                out.push(l.trim().to_string());
            }
        }
    }
    out
}

#[test]
fn loads_run_on_the_cpus_asked_and_the_result_says_so() {
    // (rt_unavailable also asks for the two CPUs the test needs.)
    if skipped(rt_unavailable()) {
        return;
    }
    let dir = Dir::new();
    let json = dir.join("r.json");
    let child = latlab()
        .words("ipc --method futex -a 0 -D 3 --load cpu:cpus=1,threads=2 --load cpu")
        .words("--housekeeping 1 --no-store --json")
        .arg(&json)
        .spawn_with(Stdio::null(), Stdio::piped());
    let t0 = Instant::now();
    let mut seen = Vec::new();
    while t0.elapsed() < Duration::from_secs(3) {
        seen = worker_affinities(child.id());
        // Two workers: one with its main and two load threads, one with its main and one.
        if seen.len() >= 5 {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.finish().assert_ok();
    assert!(seen.len() >= 2, "no load workers seen: {seen:?}");
    assert!(seen.iter().all(|c| c == "1"), "{seen:?}");
    let run = read_json(&json);
    let loads = run["loads"].as_array().unwrap();
    assert_eq!(loads.len(), 2);
    for l in loads {
        assert_eq!(l["cpus"], "1", "{l}");
    }
    assert!(
        !run["warnings"].to_string().contains("overlap"),
        "{}",
        run["warnings"]
    );
}

#[test]
fn a_load_on_the_measured_cpus_is_warned_about() {
    if skipped(rt_unavailable()) {
        return;
    }
    let run = latlab()
        .words("pi -a 0 -l 3 --load cpu:cpus=0 --no-store --json -")
        .assert_ok()
        .json();
    let w = run["warnings"].to_string();
    assert!(w.contains("overlap the measured CPUs 0"), "{w}");
    assert_eq!(run["loads"][0]["cpus"], "0");
}

#[test]
fn bad_cpu_lists_exit_2_naming_them() {
    for (args, flag) in [
        (&["--load", "cpu:cpus=4096-"][..], "--load"),
        (&["--housekeeping", "77777"], "--housekeeping"),
    ] {
        expect_exit(&["ipc", "-l", "1", "--no-store"], args, 2, flag);
    }
}
