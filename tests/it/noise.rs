//! `latlab noise` end to end: an injected stall is caught on its CPU; repeats and a disturbance
//! are recorded; bad input.

use crate::util::{expect_exit, latlab, read_json, rt_test, stall, Dir};
use std::time::Duration;

#[test]
fn injected_stall_is_caught_on_its_cpu_and_only_there() {
    let Some(_x) = rt_test() else { return };
    let dir = Dir::new();
    let json = dir.join("n.json");
    let stall_for = Duration::from_millis(60);
    // 900 ms: shorter than the RT-throttling budget, so no throttling gap muddies the result.
    let child = latlab()
        .words("noise --cpus 0,1 --main-cpu 0 -D 900ms -q --json")
        .arg(&json)
        .spawn();
    stall(child.id(), "latlab-cpu1", 1)
        .after(Duration::from_millis(250))
        .busy(stall_for)
        .run_now();
    child.finish().assert_ok();
    let run = read_json(&json);
    assert_eq!(run["kind"], "noise");
    let s = run["series"].as_array().unwrap();
    let cpu1 = s.iter().find(|x| x["cpu"] == 1).unwrap();
    let max = cpu1["max_ns"].as_u64().unwrap() as u128;
    assert!(
        max >= stall_for.as_nanos() * 95 / 100,
        "CPU 1 max gap {max} ns < injected {stall_for:?}"
    );
    let x = &cpu1["extra"];
    assert!(x["interruptions"]["count"].as_u64().unwrap() >= 1);
    assert!(x["loops_per_sec"].as_f64().unwrap() > 0.0);
}

#[test]
fn repeats_and_disturbance_are_recorded() {
    let Some(_x) = rt_test() else { return };
    let dir = Dir::new();
    let json = dir.join("n.json");
    let out = latlab()
        .words("noise --cpus 1 -D 200ms --repeat 3 --disturb true --json")
        .arg(&json)
        .assert_ok();
    let text = &out.stdout;
    assert!(
        text.contains("median max")
            && text.contains("int_total(%):")
            && text.contains("disturbance: 'true'"),
        "{text}"
    );
    assert_eq!(out.stderr.matches("repeat ").count(), 3, "{out}");
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
        expect_exit(&["noise"], args, 2, want);
    }
}
