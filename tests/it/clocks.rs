//! `latlab clocks`: every clock is either measured or explained; the clocksource always comes
//! back, after a normal run and after SIGINT.

use crate::util::{exclusive, expect_exit, is_root, latlab, read_json, reads_back, skipped, Dir};
use std::process::Stdio;

const CS: &str = "/sys/devices/system/clocksource/clocksource0";

fn current() -> String {
    std::fs::read_to_string(format!("{CS}/current_clocksource"))
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// Puts the clocksource back even if an assertion fails.
struct Restore(String);
impl Drop for Restore {
    fn drop(&mut self) {
        let _ = std::fs::write(format!("{CS}/current_clocksource"), &self.0);
    }
}

fn other_clocksource() -> Result<(String, String), String> {
    if !is_root() {
        return Err("not root: switching the clocksource needs root".into());
    }
    let avail = std::fs::read_to_string(format!("{CS}/available_clocksource"))
        .map_err(|e| e.to_string())?;
    let cur = current();
    let other = avail
        .split_whitespace()
        .find(|c| *c != cur)
        .ok_or("only one clocksource available")?;
    Ok((cur, other.to_string()))
}

/// `other_clocksource`, or None after saying (through `skip`) why there is none.
fn other_clocksource_or_skip() -> Option<(String, String)> {
    let found = other_clocksource();
    (!skipped(found.clone().err())).then(|| found.unwrap())
}

#[test]
fn a_clock_or_clocksource_named_twice_is_measured_once() {
    let dir = Dir::new();
    let json = dir.join("c.json");
    latlab()
        .words("clocks --clocks monotonic,all,monotonic,realtime --batches 20 --json")
        .arg(&json)
        .assert_ok();
    let run = read_json(&json);
    let names = crate::util::series_names(&run);
    assert_eq!(names[0], "monotonic", "{names:?}");
    let mut distinct = names.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(distinct.len(), names.len(), "{names:?}");
    // What latlab wrote, it reads back.
    reads_back(&json);
}

#[test]
fn every_clock_is_measured_or_explained() {
    let dir = Dir::new();
    let json = dir.join("c.json");
    latlab()
        .words("clocks --batches 50 --json")
        .arg(&json)
        .assert_ok();
    let run = read_json(&json);
    let names: Vec<String> = run["series"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap().to_string())
        .collect();
    let unavailable = run["parameters"]["unavailable"].as_array().unwrap();
    assert_eq!(
        names.len() + unavailable.len(),
        13,
        "{names:?} {unavailable:?}"
    );
    for id in [
        "realtime",
        "monotonic",
        "monotonic_raw",
        "boottime",
        "realtime_coarse",
        "monotonic_coarse",
        "process_cputime",
        "thread_cputime",
        "gettimeofday",
        "time",
    ] {
        assert!(names.iter().any(|n| n == id), "{id} missing from {names:?}");
    }
    for s in run["series"].as_array().unwrap() {
        assert_eq!(s["count"], 50, "{}", s["name"]);
        let path = s["extra"]["path"].as_str().unwrap();
        assert!(["vdso", "syscall", "instruction"].contains(&path));
    }
}

#[test]
fn clocksource_is_restored_after_a_run_and_after_sigint() {
    // The original is read under the lock: another test may have switched it meanwhile.
    let _x = exclusive();
    let Some((orig, other)) = other_clocksource_or_skip() else {
        return;
    };
    let _restore = Restore(orig.clone());
    let out = latlab()
        .words("clocks --clocks monotonic --batches 20 --clocksource")
        .arg(format!("{other},{orig}"))
        .assert_ok();
    let want = format!("clocksource {other}:");
    assert!(out.stdout.contains(&want), "{out}");
    assert_eq!(current(), orig, "not restored after a normal run");

    // A long run under the other clocksource, interrupted while it is in force.
    let dir = crate::util::Dir::new();
    let json = dir.join("cs.json");
    let mut child = latlab()
        .words("clocks --batches 2000000 --no-store --json")
        .arg(&json)
        .arg("--clocksource")
        .arg(&other)
        .spawn();
    child.wait_until("switching the clocksource", |_| current() == other);
    // Long enough for the ground's poll (five a second) to see the switch.
    std::thread::sleep(std::time::Duration::from_millis(700));
    child.signal(libc::SIGINT);
    let out = child.finish();
    assert!(out.stdout.contains("(interrupted)"), "{out}");
    assert_eq!(current(), orig, "not restored after SIGINT");
    // Its own switch is not the ground moving under it (such a run would be left out as
    // disturbed by every selector).
    let run = crate::util::read_json(&json);
    let ground = run["ground"].as_array().cloned().unwrap_or_default();
    assert!(
        !ground.iter().any(|g| g["what"] == "clocksource"),
        "{ground:?}"
    );
}

#[test]
fn a_sigkilled_clocksource_switch_is_undone_by_latlab_restore() {
    // The original is read under the lock: another test may have switched it meanwhile.
    let _x = exclusive();
    let Some((orig, other)) = other_clocksource_or_skip() else {
        return;
    };
    let _restore = Restore(orig.clone());
    let mut child = latlab()
        .words("clocks --batches 2000000 --clocksource")
        .arg(&other)
        .spawn_with(Stdio::null(), Stdio::null());
    child.wait_until("switching the clocksource", |_| current() == other);
    child.kill();
    assert_eq!(
        current(),
        other,
        "nothing left to restore: the test proves nothing"
    );
    latlab().arg("restore").assert_ok();
    assert_eq!(
        current(),
        orig,
        "latlab restore did not put the clocksource back"
    );
}

#[test]
fn clocks_bad_input() {
    for (args, want) in [
        (vec!["--clocks", "sundial"], "sundial"),
        (vec!["--clocksource", "hourglass"], "hourglass"),
        (vec!["--check-monotonic", "0"], "--check-monotonic"),
        (vec!["--batches", "0"], "--batches"),
    ] {
        expect_exit(&["clocks"], &args, 2, want);
    }
}
