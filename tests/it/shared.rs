//! latlab on a machine it shares: with perf (tracefs never pulled from under it), with another
//! engineer's plan (one owner of system settings per machine, whatever the state directory),
//! with a process that switches the clocksource mid-run (the ground watched, a plan's run made
//! again), with another real-time task or latlab on the measured CPUs (a latlab that measures
//! nothing is not one), and with a plan whose
//! level the kernel does not offer.

use crate::util::{
    exclusive, is_root, latlab, read_json, rt_test, scratch, skip, wait_until, Dir, TestCommand,
    LATLAB,
};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// The harmless sysctl these tests vary (a lease-break timeout nothing here uses).
const KNOB: &str = "/proc/sys/fs/lease-break-time";
const CLOCKSOURCE: &str = "/sys/devices/system/clocksource/clocksource0/current_clocksource";

/// A latlab whose settings journal is the machine's (no `LATLAB_JOURNAL`), with its own state
/// directory `home` (as a second user or `sudo` with another HOME has).
fn machine_latlab(home: &Path) -> TestCommand {
    let mut c = latlab();
    c.env_remove("LATLAB_JOURNAL")
        .env("HOME", home)
        .env("XDG_STATE_HOME", home.join("state"));
    c
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
    if !is_root() {
        return skip("two_plans", "not root: plans change a sysctl");
    }
    let _x = exclusive();
    let orig = std::fs::read(KNOB).unwrap();
    let (a, b) = (Dir::new(), Dir::new());
    let plan = knob_plan(a.path(), "\"131\", \"132\"", 2);
    let store = format!("sqlite:{}", scratch().join("shared-plans.db").display());
    let first = machine_latlab(a.path())
        .args(["run", "--store", &store])
        .arg(&plan)
        .spawn();
    // The first holds the machine's settings once its first level is in force.
    wait_until("the first plan's level", Duration::from_secs(30), || {
        std::fs::read_to_string(KNOB).is_ok_and(|v| v.trim() == "131")
    });
    let holder = format!("pid {}", first.id());
    let second = machine_latlab(b.path())
        .args(["run", "--store", &store])
        .arg(&plan)
        .assert_refused(3, &holder);
    assert!(
        second.stderr.contains("run"),
        "the holder is named: {second}"
    );
    // `restore` from the second state directory is refused too, and changes nothing.
    machine_latlab(b.path()).arg("restore").assert_exit(3);
    // --wait serialises instead: it runs once the first is done.
    let waiting = machine_latlab(b.path())
        .args(["run", "--wait", "--store", &store])
        .arg(&plan)
        .assert_ok();
    first.finish().assert_ok();
    assert!(
        waiting.stderr.contains("waiting for the settings lock"),
        "{waiting}"
    );
    assert_eq!(
        std::fs::read(KNOB).unwrap(),
        orig,
        "the sysctl ends at its original"
    );
}

/// A test that switches the clocksource: the exclusive lock, the clocksource in force and
/// another the kernel offers; the first is put back when this is dropped, whatever the test
/// did. None after saying (through `skip`) why the test cannot run.
struct Switching {
    orig: String,
    other: String,
    _x: crate::util::Exclusive,
}

impl Drop for Switching {
    fn drop(&mut self) {
        let _ = std::fs::write(CLOCKSOURCE, &self.orig);
    }
}

fn switching(test: &str) -> Option<Switching> {
    if !is_root() {
        skip(test, "not root: the test switches the clocksource");
        return None;
    }
    let avail = std::fs::read_to_string(
        "/sys/devices/system/clocksource/clocksource0/available_clocksource",
    )
    .unwrap_or_default();
    let orig = std::fs::read_to_string(CLOCKSOURCE).unwrap_or_default();
    let orig = orig.trim().to_string();
    let Some(other) = avail.split_whitespace().find(|c| *c != orig) else {
        skip(test, "one clocksource only");
        return None;
    };
    let other = other.to_string();
    Some(Switching {
        orig,
        other,
        _x: exclusive(),
    })
}

#[test]
fn a_clocksource_switched_mid_run_is_recorded_and_a_plan_makes_the_run_again() {
    let Some(cs) = switching("clocksource_mid_run") else {
        return;
    };
    let (orig, other) = (cs.orig.clone(), cs.other.clone());
    let json = scratch().join("ground.json");
    let mut child = latlab()
        .words("cyclic -t 1 -D 3s -q --no-store --json")
        .arg(&json)
        .spawn();
    // Switched once the run measures (not at a guessed time after the start: a busy machine
    // may take a second to start it), and back before its end.
    child.wait_for_thread("latlab-T0");
    std::thread::sleep(Duration::from_millis(700));
    std::fs::write(CLOCKSOURCE, &other).unwrap();
    std::thread::sleep(Duration::from_millis(600));
    std::fs::write(CLOCKSOURCE, orig.trim()).unwrap();
    child.finish().assert_ok();
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
    let dir = Dir::new();
    let plan = knob_plan(dir.path(), "\"141\"", 3);
    let store = format!("sqlite:{}", scratch().join("shared-rerun.db").display());
    let child = latlab().args(["run", "--store", &store]).arg(&plan).spawn();
    wait_until("the plan's level", Duration::from_secs(30), || {
        std::fs::read_to_string(KNOB).is_ok_and(|v| v.trim() == "141")
    });
    std::thread::sleep(Duration::from_millis(1000));
    std::fs::write(KNOB, "142").unwrap();
    let out = child.finish();
    out.assert_ok();
    assert!(
        out.stderr.contains("disturbed") && out.stderr.contains("made again"),
        "{out}"
    );
    assert_eq!(std::fs::read(KNOB).unwrap(), knob_orig);
    // The disturbed run is in the store, marked; reading commands leave it out and say so.
    let exp = out
        .both()
        .split_whitespace()
        .find(|w| w.starts_with("exp-"))
        .map(|w| w.trim_end_matches([',', ':']).to_string())
        .expect("the plan names its experiment");
    let gate = |extra: &[&str]| {
        latlab()
            .args(["gate", "max<10s", &format!("exp:{exp}"), "--store", &store])
            .args(extra)
            .output()
    };
    let g = gate(&[]);
    assert!(
        g.stderr.contains("left out 1 disturbed run(s)") && g.stderr.contains("changed"),
        "{g}"
    );
    let g = gate(&["--include-disturbed"]);
    assert!(!g.stderr.contains("left out"), "{g}");
}

#[test]
fn real_time_company_on_the_measured_cpu_is_named_and_a_second_latlab_refused_under_strict() {
    let Some(_x) = rt_test() else { return };
    // A sleeping FIFO task of another process, allowed on CPU 1 only: harmless company.
    let mut hog = Command::new("taskset")
        .args(["-c", "1", "chrt", "-f", "7", "sleep", "30"])
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let json = scratch().join("company.json");
    let out = latlab()
        .words("cyclic -t 1 -a 1 -D 1s -q --no-store --json")
        .arg(&json)
        .output();
    let _ = hog.kill();
    let _ = hog.wait();
    out.assert_ok();
    let r = read_json(&json);
    let w = r["warnings"].to_string();
    assert!(
        w.contains(&format!("pid {}", hog.id()))
            && w.contains("sleep 30")
            && w.contains("fifo priority 7"),
        "{w}"
    );
    // Seen at the start: not reported again as company that came during the run.
    let ground = r["ground"].to_string();
    assert!(!ground.contains(&format!("pid {}", hog.id())), "{ground}");
    // Company that comes during the run is reported at its end.
    let json = scratch().join("company-during.json");
    let mut run = latlab()
        .words("cyclic -t 1 -a 1 -D 3s -q --no-store --json")
        .arg(&json)
        .spawn();
    run.wait_for_thread("latlab-T0");
    let mut late = Command::new("taskset")
        .args(["-c", "1", "chrt", "-f", "8", "sleep", "30"])
        .spawn()
        .unwrap();
    let done = run.finish();
    let _ = late.kill();
    let _ = late.wait();
    done.assert_ok();
    let ground = read_json(&json)["ground"].to_string();
    assert!(
        ground.contains("real-time company on the measured CPUs")
            && ground.contains(&format!("pid {}", late.id()))
            && ground.contains("fifo 8"),
        "{ground}"
    );
    // Another latlab measuring CPU 1: the second warns, and refuses under --strict.
    let mut first = latlab()
        .words("cyclic -t 1 -a 1 -D 20s -q --no-store")
        .spawn();
    first.wait_for_thread("latlab-T0");
    let second = latlab()
        .words("cyclic -t 1 -a 1 -D 1s -q --no-store --strict")
        .output();
    first.signal(libc::SIGINT);
    first.finish();
    second
        .assert_exit(3)
        .assert_refused_naming("another latlab measurement");
}

#[test]
fn a_latlab_that_measures_nothing_is_not_real_time_company_nor_a_second_ones_helpers() {
    let Some(_x) = rt_test() else { return };
    // `compare` waiting on its standard input (as in a pipeline) beside a measurement: its
    // signal thread is SCHED_OTHER (a FIFO 99 one would be company on every CPU).
    let file = scratch().join("values.txt");
    std::fs::write(&file, "1\n2\n3\n").unwrap();
    let mut waiting = Command::new(LATLAB)
        .args(["compare", "--ministat", "-"])
        .arg(&file)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pid = waiting.id();
    wait_until("compare's signal thread", Duration::from_secs(10), || {
        std::fs::read_dir(format!("/proc/{pid}/task")).is_ok_and(|d| d.count() > 1)
    });
    std::thread::sleep(Duration::from_millis(200));
    let json = scratch().join("beside-compare.json");
    let out = latlab()
        .words("cyclic -t 1 -a 1 -D 1s -q --no-store --json")
        .arg(&json)
        .output();
    let _ = waiting.kill();
    let _ = waiting.wait();
    out.assert_ok();
    let r = read_json(&json);
    let said = format!("{} {}", r["warnings"], r["ground"]);
    assert!(!said.contains(&format!("pid {pid}")), "{said}");
    // A second measurement that starts mid-run is company by its measuring thread, not by
    // its helpers (its FIFO 99 signal thread), as at the start.
    let json = scratch().join("second-mid-run.json");
    let mut first = latlab()
        .words("cyclic -t 1 -a 1 -D 3s -q --no-store --json")
        .arg(&json)
        .spawn();
    first.wait_for_thread("latlab-T0");
    // Still running when the first one's end looks again.
    let mut second = latlab()
        .words("cyclic -t 1 -a 1 -D 20s -q --no-store")
        .spawn();
    second.wait_for_thread("latlab-T0");
    first.finish().assert_ok();
    second.signal(libc::SIGINT);
    second.finish().assert_ok();
    let ground = read_json(&json)["ground"].to_string();
    assert!(ground.contains("'latlab-T0'"), "{ground}");
    assert!(!ground.contains("'latlab-signals'"), "{ground}");
}

/// A clocksource switched and switched back within one poll of the file (the file reads the
/// same before and after) is still recorded, twice, from the kernel's log of the switches.
#[test]
fn a_clocksource_switch_undone_within_a_poll_is_still_recorded() {
    let Some(cs) = switching("fast_switch") else {
        return;
    };
    let (orig, other) = (cs.orig.clone(), cs.other.clone());
    let json = scratch().join("fast-switch.json");
    let mut child = latlab()
        .words("cyclic -t 1 -D 3s -q --no-store --json")
        .arg(&json)
        .spawn();
    child.wait_for_thread("latlab-T0");
    std::thread::sleep(Duration::from_millis(500));
    std::fs::write(CLOCKSOURCE, &other).unwrap();
    std::fs::write(CLOCKSOURCE, orig.trim()).unwrap();
    child.finish().assert_ok();
    let run = read_json(&json);
    let ground = run["ground"].as_array().cloned().unwrap_or_default();
    let to = |v: &str| {
        ground
            .iter()
            .filter(|g| g["what"] == "clocksource" && g["to"] == v)
            .count()
    };
    assert_eq!((to(&other), to(orig.trim())), (1, 1), "{run}");
    assert!(ground.iter().all(|g| g["at_s"].as_f64().is_some()), "{run}");
}

/// A monitor's snapshots each carry the ground changes of their own interval: a clocksource
/// switched during the second interval and back during the third is recorded on those two
/// snapshots, once each, and not on the last one (it ran after both; it carried both).
#[test]
fn each_monitor_snapshot_carries_the_ground_changes_of_its_own_interval() {
    let Some(cs) = switching("snapshot_ground") else {
        return;
    };
    let (orig, other) = (cs.orig.clone(), cs.other.clone());
    let d = Dir::new();
    let store = format!("sqlite:{}", d.join("mon.db").display());
    let mut child = latlab()
        .words("monitor -a 1 -D 8s --snapshot-every 2s --listen 127.0.0.1:0 -q --store")
        .arg(&store)
        .spawn();
    child.wait_for_thread("latlab-cpu1");
    std::thread::sleep(Duration::from_millis(2900));
    std::fs::write(CLOCKSOURCE, &other).unwrap();
    std::thread::sleep(Duration::from_millis(2000));
    std::fs::write(CLOCKSOURCE, orig.trim()).unwrap();
    child.finish().assert_ok();
    let list = latlab()
        .args(["runs", "list", "--kind", "monitor", "--store", &store])
        .output();
    // Newest first: the last interval's run, then the snapshots.
    let ids: Vec<String> = list
        .stdout
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect();
    assert!(ids.len() >= 4, "{list}");
    let grounds: Vec<String> = ids
        .iter()
        .map(|id| {
            let shown = latlab()
                .args(["runs", "show", "--json", id, "--store", &store])
                .output();
            let v: serde_json::Value = serde_json::from_str(&shown.stdout).unwrap();
            // Each change's time is into its own stored run, not into the session.
            let length = v["run"]["duration_s"].as_f64().unwrap_or(0.0);
            for g in v["run"]["ground"].as_array().into_iter().flatten() {
                let at = g["at_s"].as_f64().unwrap_or(0.0);
                assert!(at <= length + 0.5, "{at} s into a run of {length} s: {g}");
            }
            v["run"]["ground"].to_string()
        })
        .collect();
    let to = |v: &str| format!("\"to\":\"{v}\"");
    let away = grounds.iter().filter(|g| g.contains(&to(&other))).count();
    let back = grounds
        .iter()
        .filter(|g| g.contains(&to(orig.trim())))
        .count();
    assert_eq!((away, back), (1, 1), "each change on one run: {grounds:?}");
    assert!(
        !grounds[0].contains("clocksource"),
        "the last interval ran after both changes: {grounds:?}"
    );
}

#[test]
fn a_dry_run_refuses_a_clocksource_the_kernel_does_not_offer() {
    let dir = Dir::new();
    let p = dir.write(
        "plan.toml",
        format!(
            "[measure]\ncommand = \"cyclic\"\nargs = [\"-D\", \"1s\"]\n[[factor]]\n\
             name = \"cs\"\nknob = \"{CLOCKSOURCE}\"\nlevels = [\"tsc\", \"no-such-clock\"]\n"
        ),
    );
    let out = latlab().args(["run", "--dry-run"]).arg(&p).assert_exit(3);
    if !is_root() {
        // Without root the knob is not writable: refused already (exit 3, checked), but the
        // level check itself is not reached.
        return skip(
            "a dry run's level check",
            "not root: the clocksource is not writable",
        );
    }
    assert!(
        out.stderr.contains("no-such-clock") && out.stderr.contains("not offered"),
        "{out}"
    );
}

#[test]
fn perf_keeps_its_capture_when_latlab_ends_first_on_a_machine_without_tracefs() {
    if !is_root() || !Path::new("/usr/bin/perf").exists() || !Path::new("/usr/bin/unshare").exists()
    {
        return skip(
            "perf_beside_latlab",
            "needs root, perf (Debian's linux-perf) and unshare",
        );
    }
    let _x = exclusive();
    let dir = Dir::new();
    let data = dir.join("perf.data");
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
        bin = LATLAB,
        data = data.display()
    );
    let out = Command::new("unshare")
        .args(["--mount", "--propagation", "private", "sh", "-c", &script])
        .env("LATLAB_JOURNAL", dir.join("j.json"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("perf=0"), "perf record failed: {text}");
    assert!(
        text.contains("timehist=0") && !text.contains("incompatible file format"),
        "perf's capture was broken: {text}"
    );
}

/// `latlab restore` run by a user who is not root, while settings a root latlab changed wait
/// in the machine's journal: exit 3 saying that root must put them back (never "nothing to
/// restore", which would leave the machine changed).
#[test]
fn restore_by_another_user_names_the_machines_pending_journal() {
    let _x = exclusive();
    let journal = Path::new("/run/latlab/restore.json");
    if !is_root() || journal.exists() {
        skip(
            "restore_by_another_user_names_the_machines_pending_journal",
            "needs root and no pending machine journal",
        );
        return;
    }
    let dir = Dir::new();
    let Some(mut c) = crate::util::latlab_as_nobody(&dir, &["HOME=/tmp".into()]) else {
        return;
    };
    std::fs::create_dir_all("/run/latlab").unwrap();
    std::fs::write(journal, "{}").unwrap();
    let out = c.env_remove("LATLAB_JOURNAL").arg("restore").output();
    let _ = std::fs::remove_file(journal);
    let out = out.unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(
        err.contains("/run/latlab/restore.json") && err.contains("sudo latlab restore"),
        "{err}"
    );
}
