//! `latlab clocks`: every clock is either measured or explained; the clocksource always comes
//! back, after a normal run and after SIGINT.

use crate::util::{exclusive, latlab, read_json, skip};
use std::process::Stdio;
use std::time::{Duration, Instant};

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
    // SAFETY: no arguments.
    if unsafe { libc::geteuid() } != 0 {
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

#[test]
fn every_clock_is_measured_or_explained() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("c.json");
    let out = latlab()
        .args(["clocks", "--batches", "50", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
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
    let (orig, other) = match other_clocksource() {
        Ok(x) => x,
        Err(why) => return skip("clocksource_is_restored_after_a_run_and_after_sigint", &why),
    };
    let _restore = Restore(orig.clone());
    let out = latlab()
        .args([
            "clocks",
            "--clocks",
            "monotonic",
            "--batches",
            "20",
            "--clocksource",
        ])
        .arg(format!("{other},{orig}"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains(&format!("clocksource {other}:")), "{text}");
    assert_eq!(current(), orig, "not restored after a normal run");

    // A long run under the other clocksource, interrupted while it is in force.
    let child = latlab()
        .args(["clocks", "--batches", "2000000", "--clocksource"])
        .arg(&other)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while current() != other {
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "latlab never switched the clocksource"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("(interrupted)"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(current(), orig, "not restored after SIGINT");
}

#[test]
fn a_sigkilled_clocksource_switch_is_undone_by_latlab_restore() {
    // The original is read under the lock: another test may have switched it meanwhile.
    let _x = exclusive();
    let (orig, other) = match other_clocksource() {
        Ok(x) => x,
        Err(why) => {
            return skip(
                "a_sigkilled_clocksource_switch_is_undone_by_latlab_restore",
                &why,
            )
        }
    };
    let _restore = Restore(orig.clone());
    let mut child = latlab()
        .args(["clocks", "--batches", "2000000", "--clocksource"])
        .arg(&other)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while current() != other {
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "latlab never switched the clocksource"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
    let _ = child.wait();
    assert_eq!(
        current(),
        other,
        "nothing left to restore: the test proves nothing"
    );
    let out = latlab().arg("restore").output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
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
        crate::util::expect_exit(&["clocks"], &args, 2, want);
    }
}
