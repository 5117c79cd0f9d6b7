//! latlab on a machine it shares: with perf (tracefs never pulled from under it), with another
//! engineer's plan (one owner of system settings per machine, whatever the state directory),
//! with a process that switches the clocksource mid-run (the ground watched, a plan's run made
//! again), with another real-time task or latlab on the measured CPUs, and with a plan whose
//! level the kernel does not offer.

use crate::util::{exclusive, latlab, read_json, scratch, skip};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The harmless sysctl these tests vary (a lease-break timeout nothing here uses).
const KNOB: &str = "/proc/sys/fs/lease-break-time";
const CLOCKSOURCE: &str = "/sys/devices/system/clocksource/clocksource0/current_clocksource";

fn root() -> bool {
    // SAFETY: no arguments.
    unsafe { libc::geteuid() == 0 }
}

/// A latlab whose settings journal is the machine's (no `LATLAB_JOURNAL`), with its own state
/// directory `home` (as a second user or `sudo` with another HOME has).
fn machine_latlab(home: &Path) -> Command {
    let mut c = latlab();
    c.env_remove("LATLAB_JOURNAL")
        .env("HOME", home)
        .env("XDG_STATE_HOME", home.join("state"));
    c
}

fn wait_until(what: &str, limit: Duration, f: impl Fn() -> bool) {
    let t0 = Instant::now();
    while !f() {
        assert!(t0.elapsed() < limit, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn knob_plan(dir: &Path, levels: &str, seconds: u32) -> std::path::PathBuf {
    let p = dir.join("plan.toml");
    std::fs::write(
        &p,
        format!(
            "[measure]\ncommand = \"cyclic\"\nargs = [\"-D\", \"{seconds}s\", \"-q\", \"-t\", \"1\"]\n\
             [design]\nrepeats = 1\n\
             [[factor]]\nname = \"knob\"\nsysctl = \"fs.lease-break-time\"\nlevels = [{levels}]\n"
        ),
    )
    .unwrap();
    p
}

#[test]
fn two_plans_from_two_state_directories_are_serialised_and_the_setting_ends_as_it_was() {
    if !root() {
        return skip("two_plans", "not root: plans change a sysctl");
    }
    let _x = exclusive();
    let orig = std::fs::read(KNOB).unwrap();
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let plan = knob_plan(a.path(), "\"131\", \"132\"", 2);
    let store = format!("sqlite:{}", scratch().join("shared-plans.db").display());
    let first = machine_latlab(a.path())
        .args(["run", "--store", &store])
        .arg(&plan)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The first holds the machine's settings once its first level is in force.
    wait_until("the first plan's level", Duration::from_secs(30), || {
        std::fs::read_to_string(KNOB).is_ok_and(|v| v.trim() == "131")
    });
    let second = machine_latlab(b.path())
        .args(["run", "--store", &store])
        .arg(&plan)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&second.stderr);
    assert_eq!(second.status.code(), Some(3), "{err}");
    assert!(
        err.contains(&format!("pid {}", first.id())) && err.contains("run"),
        "the holder is named: {err}"
    );
    // `restore` from the second state directory is refused too, and changes nothing.
    let r = machine_latlab(b.path()).arg("restore").output().unwrap();
    assert_eq!(
        r.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&r.stderr)
    );
    // --wait serialises instead: it runs once the first is done.
    let waiting = machine_latlab(b.path())
        .args(["run", "--wait", "--store", &store])
        .arg(&plan)
        .output()
        .unwrap();
    let first = first.wait_with_output().unwrap();
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    let werr = String::from_utf8_lossy(&waiting.stderr);
    assert!(waiting.status.success(), "{werr}");
    assert!(werr.contains("waiting for the settings lock"), "{werr}");
    assert_eq!(
        std::fs::read(KNOB).unwrap(),
        orig,
        "the sysctl ends at its original"
    );
}

#[test]
fn a_clocksource_switched_mid_run_is_recorded_and_a_plan_makes_the_run_again() {
    if !root() {
        return skip(
            "clocksource_mid_run",
            "not root: the test switches the clocksource",
        );
    }
    let avail = std::fs::read_to_string(
        "/sys/devices/system/clocksource/clocksource0/available_clocksource",
    )
    .unwrap_or_default();
    let orig = std::fs::read_to_string(CLOCKSOURCE).unwrap_or_default();
    let Some(other) = avail
        .split_whitespace()
        .find(|c| *c != orig.trim())
        .map(str::to_string)
    else {
        return skip("clocksource_mid_run", "one clocksource only");
    };
    let _x = exclusive();
    struct Back(String);
    impl Drop for Back {
        fn drop(&mut self) {
            let _ = std::fs::write(CLOCKSOURCE, &self.0);
        }
    }
    let _back = Back(orig.trim().to_string());
    let json = scratch().join("ground.json");
    let child = latlab()
        .args([
            "cyclic",
            "-t",
            "1",
            "-D",
            "3s",
            "-q",
            "--no-store",
            "--json",
        ])
        .arg(&json)
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1200));
    std::fs::write(CLOCKSOURCE, &other).unwrap();
    std::thread::sleep(Duration::from_millis(600));
    std::fs::write(CLOCKSOURCE, orig.trim()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let run = read_json(&json);
    let ground = run["ground"].as_array().cloned().unwrap_or_default();
    let switched = ground
        .iter()
        .find(|g| g["what"] == "clocksource" && g["to"] == other.as_str())
        .unwrap_or_else(|| panic!("no clocksource change recorded: {run}"));
    assert!(
        switched["at_s"].as_f64().is_some_and(|t| t > 0.5),
        "{switched}"
    );
    assert!(
        run["warnings"].to_string().contains("the ground moved"),
        "{run}"
    );

    // A plan's level that does not hold (another process changes the plan's setting during a
    // run): the run is left out and made again.
    let knob_orig = std::fs::read(KNOB).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let plan = knob_plan(dir.path(), "\"141\"", 3);
    let store = format!("sqlite:{}", scratch().join("shared-rerun.db").display());
    let child = latlab()
        .args(["run", "--store", &store])
        .arg(&plan)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_until("the plan's level", Duration::from_secs(30), || {
        std::fs::read_to_string(KNOB).is_ok_and(|v| v.trim() == "141")
    });
    std::thread::sleep(Duration::from_millis(1000));
    std::fs::write(KNOB, "142").unwrap();
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("disturbed") && err.contains("made again"),
        "{err}"
    );
    assert_eq!(std::fs::read(KNOB).unwrap(), knob_orig);
}

#[test]
fn real_time_company_on_the_measured_cpu_is_named_and_a_second_latlab_refused_under_strict() {
    if let Some(why) = crate::util::rt_unavailable() {
        return skip("rt_company", &why);
    }
    let _x = exclusive();
    // A sleeping FIFO task of another process, allowed on CPU 1 only: harmless company.
    let mut hog = Command::new("taskset")
        .args(["-c", "1", "chrt", "-f", "7", "sleep", "30"])
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let json = scratch().join("company.json");
    let out = latlab()
        .args([
            "cyclic",
            "-t",
            "1",
            "-a",
            "1",
            "-D",
            "1s",
            "-q",
            "--no-store",
            "--json",
        ])
        .arg(&json)
        .output()
        .unwrap();
    let _ = hog.kill();
    let _ = hog.wait();
    assert!(out.status.success());
    let w = read_json(&json)["warnings"].to_string();
    assert!(
        w.contains(&format!("pid {}", hog.id()))
            && w.contains("sleep 30")
            && w.contains("fifo priority 7"),
        "{w}"
    );
    // Another latlab measuring CPU 1: the second warns, and refuses under --strict.
    let mut first = latlab()
        .args([
            "cyclic",
            "-t",
            "1",
            "-a",
            "1",
            "-D",
            "20s",
            "-q",
            "--no-store",
        ])
        .spawn()
        .unwrap();
    wait_until("the first latlab's thread", Duration::from_secs(20), || {
        crate::util::has_thread(first.id(), "latlab-T0")
    });
    let second = latlab()
        .args([
            "cyclic",
            "-t",
            "1",
            "-a",
            "1",
            "-D",
            "1s",
            "-q",
            "--no-store",
            "--strict",
        ])
        .output()
        .unwrap();
    // SAFETY: ending our own child.
    unsafe { libc::kill(first.id() as i32, libc::SIGINT) };
    let _ = first.wait();
    let err = String::from_utf8_lossy(&second.stderr);
    assert_eq!(second.status.code(), Some(3), "{err}");
    assert!(err.contains("another latlab measurement"), "{err}");
}

#[test]
fn a_dry_run_refuses_a_clocksource_the_kernel_does_not_offer() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("plan.toml");
    std::fs::write(
        &p,
        format!(
            "[measure]\ncommand = \"cyclic\"\nargs = [\"-D\", \"1s\"]\n[[factor]]\n\
             name = \"cs\"\nknob = \"{CLOCKSOURCE}\"\nlevels = [\"tsc\", \"no-such-clock\"]\n"
        ),
    )
    .unwrap();
    let out = latlab()
        .args(["run", "--dry-run"])
        .arg(&p)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    if !root() {
        // Without root the knob is not writable: refused already, still exit 3.
        assert_eq!(out.status.code(), Some(3), "{err}");
        return;
    }
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(
        err.contains("no-such-clock") && err.contains("not offered"),
        "{err}"
    );
}

#[test]
fn perf_keeps_its_capture_when_latlab_ends_first_on_a_machine_without_tracefs() {
    if !root() || !Path::new("/usr/bin/perf").exists() || !Path::new("/usr/bin/unshare").exists() {
        return skip(
            "perf_beside_latlab",
            "needs root, perf (Debian's linux-perf) and unshare",
        );
    }
    let _x = exclusive();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("perf.data");
    // A fresh boot's state, in a private mount namespace: tracefs (and debugfs's tracing)
    // unmounted. latlab traces for 2 s and ends first; perf records 4 s beside it.
    let script = format!(
        "umount -R /sys/kernel/tracing 2>/dev/null; umount -R /sys/kernel/debug 2>/dev/null; \
         {bin} sched --comm sleep -D 2s --no-store >/dev/null 2>&1 & \
         sleep 0.5; \
         /usr/bin/perf sched record -o {data} -- sleep 4 >/dev/null 2>&1; echo perf=$?; \
         wait; \
         /usr/bin/perf sched timehist -i {data} >/dev/null 2>{data}.err; echo timehist=$?; \
         cat {data}.err",
        bin = env!("CARGO_BIN_EXE_latlab"),
        data = data.display()
    );
    let out = Command::new("unshare")
        .args(["--mount", "--propagation", "private", "sh", "-c", &script])
        .env("LATLAB_JOURNAL", dir.path().join("j.json"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("perf=0"), "perf record failed: {text}");
    assert!(
        text.contains("timehist=0") && !text.contains("incompatible file format"),
        "perf's capture was broken: {text}"
    );
}
