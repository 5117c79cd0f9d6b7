//! `latlab noise` end to end: an injected stall is caught on its CPU and only there; bad input.

use crate::util::{exclusive, latlab, read_json, rt_unavailable, skip, stall_when_running};
use std::process::Stdio;
use std::time::Duration;

#[test]
fn injected_stall_is_caught_on_its_cpu_and_only_there() {
    if let Some(why) = rt_unavailable() {
        return skip("injected_stall_is_caught_on_its_cpu_and_only_there", &why);
    }
    let _x = exclusive();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("n.json");
    let stall = Duration::from_millis(60);
    // 900 ms: shorter than the RT-throttling budget, so no throttling gap muddies the result.
    let child = latlab()
        .args([
            "noise",
            "--cpus",
            "0,1",
            "--main-cpu",
            "0",
            "-D",
            "900ms",
            "-q",
            "--json",
        ])
        .arg(&json)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    stall_when_running(
        child.id(),
        "latlab-cpu1",
        1,
        90,
        Duration::from_millis(250),
        stall,
    )
    .join()
    .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run = read_json(&json);
    assert_eq!(run["kind"], "noise");
    let s = run["series"].as_array().unwrap();
    let max = |cpu: u64| {
        s.iter().find(|x| x["cpu"] == cpu).unwrap()["max_ns"]
            .as_u64()
            .unwrap() as u128
    };
    assert!(
        max(1) >= stall.as_nanos() * 95 / 100,
        "CPU 1 max gap {} ns < injected {stall:?}",
        max(1)
    );
    let x = &s.iter().find(|x| x["cpu"] == 1).unwrap()["extra"];
    assert!(x["interruptions"]["count"].as_u64().unwrap() >= 1);
    assert!(x["loops_per_sec"].as_f64().unwrap() > 0.0);
}

#[test]
fn repeats_and_disturbance_are_recorded() {
    if let Some(why) = rt_unavailable() {
        return skip("repeats_and_disturbance_are_recorded", &why);
    }
    let _x = exclusive();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("n.json");
    let out = latlab()
        .args([
            "noise",
            "--cpus",
            "1",
            "-D",
            "200ms",
            "--repeat",
            "3",
            "--disturb",
            "true",
            "--json",
        ])
        .arg(&json)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("median max")
            && text.contains("int_total(%):")
            && text.contains("disturbance: 'true'"),
        "{text}"
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.matches("repeat ").count(), 3, "{err}");
    let run = read_json(&json);
    let x = &run["series"][0]["extra"];
    assert_eq!(x["per_repeat_max_ns"].as_array().unwrap().len(), 3);
    assert!(x["disturbance"]["during"].is_object());
}

#[test]
fn noise_bad_input_exits_2() {
    let cases: &[(&[&str], &str)] = &[
        (&["--cpus", "9999"], "--cpus"),
        (&["--main-cpu", "4096"], "--main-cpu"),
        (&["-D", "0"], "--duration"),
        (&["--threshold", "-3"], "--threshold"),
        (&["--repeat", "0"], "--repeat"),
        (
            &["--disturb", "no-such-command-xyz --flag"],
            "no-such-command-xyz",
        ),
        (&["-p", "0"], "priority"),
        (&["--policy", "nope"], "--policy"),
    ];
    for (args, want) in cases {
        crate::util::expect_exit(&["noise"], args, 2, want);
    }
}
