//! Thread placement on a machine that does not give latlab every CPU: inside a cpuset (cgroup
//! v1, as this host mounts it), a thread meant for a CPU the process may not use is refused
//! under `--strict` (exit 3 naming the CPU) and, without it, reported where it really ran (the
//! CPU read back), with a warning — for every measurement that pins threads. A `taskset`
//! narrower than the measured CPUs is no obstacle (each thread pins itself).

use crate::util::{self, Dir, TestCommand};
use std::path::PathBuf;
use std::process::Command;

/// A cgroup v1 cpuset holding CPU 0 only, removed on drop.
struct Cpuset(PathBuf);

impl Cpuset {
    fn cpu0() -> Result<Cpuset, String> {
        let root = PathBuf::from("/sys/fs/cgroup/cpuset");
        if !root.join("cpuset.cpus").exists() {
            return Err("no cgroup v1 cpuset hierarchy at /sys/fs/cgroup/cpuset".into());
        }
        let dir = root.join(format!("latlab-test-{}", std::process::id()));
        let _ = std::fs::create_dir(&dir);
        let set = |f: &str, v: &str| {
            std::fs::write(dir.join(f), v).map_err(|e| format!("{}: {e}", dir.join(f).display()))
        };
        let made = Cpuset(dir.clone());
        set("cpuset.cpus", "0")?;
        set("cpuset.mems", "0")?;
        Ok(made)
    }

    /// `latlab ARGS` started inside the cpuset (the shell moves itself in, then execs).
    fn latlab(&self, args: &[&str]) -> TestCommand {
        let mut sh = Command::new("sh");
        sh.arg("-c")
            .arg(format!(
                "echo $$ > {}/cgroup.procs && exec \"$0\" \"$@\"",
                self.0.display()
            ))
            .arg(util::LATLAB);
        let mut c = TestCommand::wrapping(sh);
        c.args(args);
        c
    }
}

impl Drop for Cpuset {
    fn drop(&mut self) {
        // Its processes have ended; an empty cpuset can be removed.
        for _ in 0..50 {
            if std::fs::remove_dir(&self.0).is_ok() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    }
}

/// The cpuset, or None after saying (through `skip`) why there is none.
fn setup() -> Option<Cpuset> {
    if util::skipped(util::rt_unavailable()) {
        return None;
    }
    let set = Cpuset::cpu0();
    (!util::skipped(set.as_ref().err().cloned())).then(|| set.unwrap())
}

#[test]
fn strict_refuses_a_cpu_outside_the_cpuset_for_every_pinning_measurement() {
    // The lock first: both tests use this process's one cpuset, which the first to end
    // removes.
    let _x = util::exclusive();
    let Some(set) = setup() else { return };
    for args in [
        &["cyclic", "-t", "1", "-a", "1", "-D", "1s", "-q"][..],
        &["noise", "--cpus", "1", "-D", "1s", "-q"],
        &["contend", "--cpus", "1", "-D", "1s"],
        &["pi", "-a", "1", "-D", "1s"],
    ] {
        let mut all: Vec<&str> = args.to_vec();
        all.extend(["--strict", "--no-store"]);
        set.latlab(&all).assert_refused(3, "CPU(s) 1");
    }
}

#[test]
fn without_strict_the_result_names_where_each_thread_really_ran() {
    let _x = util::exclusive();
    let Some(set) = setup() else { return };
    let dir = Dir::new();
    for (name, args) in [
        (
            "cyclic",
            &["cyclic", "-t", "1", "-a", "1", "-D", "1s", "-q"][..],
        ),
        ("noise", &["noise", "--cpus", "1", "-D", "1s", "-q"]),
    ] {
        let json = dir.join(format!("{name}.json"));
        let mut all: Vec<&str> = args.to_vec();
        let j = json.to_str().unwrap().to_string();
        all.extend(["--no-store", "--json", &j]);
        set.latlab(&all).assert_ok();
        let v = util::read_json(&json);
        let series = v["series"].as_array().unwrap();
        assert!(!series.is_empty(), "{name}: no series");
        for s in series {
            assert_eq!(
                s["cpu"], 0,
                "{name}: the series must name the CPU read back: {s}"
            );
        }
        let warnings = v["warnings"].to_string();
        assert!(
            warnings.contains("could not pin to CPU 1") && warnings.contains("on CPU 0"),
            "{name}: {warnings}"
        );
        assert!(
            warnings.contains("outside the CPUs this process may use"),
            "{name}: {warnings}"
        );
    }
}

/// `taskset` narrows only the affinity latlab inherits: each measuring thread pins itself to
/// its CPU all the same, so a CPU outside it is measured there, without a warning that says it
/// cannot be. (Not `--strict`: another test's real-time threads may share CPU 1 meanwhile.)
#[test]
fn a_taskset_narrower_than_the_measured_cpus_is_no_obstacle() {
    let _x = util::exclusive();
    if util::skipped(util::rt_unavailable()) || !util::have("taskset") {
        return;
    }
    if std::fs::read_to_string("/sys/devices/system/cpu/online").is_ok_and(|s| s.trim() == "0") {
        return util::skip("taskset", "one CPU only");
    }
    let dir = Dir::new();
    let json = dir.join("ts.json");
    let mut sh = Command::new("taskset");
    sh.args(["-c", "0"]).arg(util::LATLAB);
    let mut c = TestCommand::wrapping(sh);
    c.args([
        "cyclic",
        "-t",
        "1",
        "-a",
        "1",
        "-D",
        "1s",
        "-q",
        "--no-store",
    ])
    .arg("--json")
    .arg(&json);
    c.assert_ok();
    let v = util::read_json(&json);
    assert_eq!(v["series"][0]["cpu"], 1, "{v}");
    let warnings = v["warnings"].to_string();
    assert!(!warnings.contains("cannot be pinned"), "{warnings}");
}

/// A measuring thread that another process moves while it measures (`taskset -p`, `chrt -p`)
/// is said to have moved, naming from where to where; under `--strict` the run then ends
/// with exit 3, its result kept.
#[test]
fn a_thread_moved_by_another_process_while_it_measures_is_said() {
    let _x = util::exclusive();
    if util::skipped(util::rt_unavailable()) || !util::have("taskset") || !util::have("chrt") {
        return;
    }
    if std::fs::read_to_string("/sys/devices/system/cpu/online").is_ok_and(|s| s.trim() == "0") {
        return util::skip("taskset", "one CPU only");
    }
    for strict in [false, true] {
        let dir = Dir::new();
        let json = dir.join("moved.json");
        let mut c = util::latlab();
        c.words("cyclic -t 1 -a 1 -D 2s -q --no-store --json")
            .arg(&json);
        if strict {
            c.arg("--strict");
        }
        let mut running = c.spawn();
        running.wait_for_thread("latlab-T0");
        let tid = thread_id(running.id(), "latlab-T0").expect("the measuring thread's id");
        wait_placed(running.id(), &tid, 1);
        let moved = |cmd: &mut Command| cmd.status().is_ok_and(|s| s.success());
        assert!(moved(Command::new("taskset").args(["-pc", "0", &tid])));
        assert!(moved(Command::new("chrt").args(["-o", "-p", "0", &tid])));
        let out = running.finish();
        out.assert_exit(if strict { 3 } else { 0 });
        if strict {
            // Refused: what became of the run is said, and its figures are not shown as a
            // result (no table, as if it had passed).
            assert!(
                out.stderr.contains("--strict: thread placement failed")
                    && out
                        .stderr
                        .contains("the result was kept with these warnings"),
                "{out}"
            );
            assert!(!out.stdout.contains("latencies in"), "{out}");
        }
        let v = util::read_json(&json);
        let warnings = v["warnings"].to_string();
        assert!(
            warnings.contains("T0: its CPUs from 1 to 0 and its policy from fifo")
                && warnings.contains("to other 0 while it measured"),
            "{warnings}"
        );
    }
    // noise's spinning threads too.
    let dir = Dir::new();
    let json = dir.join("noise.json");
    let mut running = util::latlab()
        .words("noise -a 1 -D 2s -q --no-store --json")
        .arg(&json)
        .spawn();
    running.wait_for_thread("latlab-cpu1");
    let tid = thread_id(running.id(), "latlab-cpu1").expect("the spinning thread's id");
    wait_placed(running.id(), &tid, 1);
    assert!(Command::new("taskset")
        .args(["-pc", "0", &tid])
        .status()
        .is_ok_and(|s| s.success()));
    running.finish().assert_ok();
    let warnings = util::read_json(&json)["warnings"].to_string();
    assert!(
        warnings.contains("cpu1: its CPUs from 1 to 0 while it measured"),
        "{warnings}"
    );
    // A SCHED_DEADLINE thread made FIFO yields at once and counts a "job" per loop: said.
    let json = dir.join("deadline.json");
    let mut running = util::latlab()
        .words("cyclic --policy deadline -D 2s -q --no-store --json")
        .arg(&json)
        .spawn();
    running.wait_for_thread("latlab-T0");
    std::thread::sleep(std::time::Duration::from_millis(300));
    let tid = thread_id(running.id(), "latlab-T0").expect("the deadline thread's id");
    assert!(Command::new("chrt")
        .args(["-f", "-p", "50", &tid])
        .status()
        .is_ok_and(|s| s.success()));
    running.finish().assert_ok();
    let warnings = util::read_json(&json)["warnings"].to_string();
    assert!(
        warnings.contains("T0: its policy from deadline 0 to fifo 50 while it measured"),
        "{warnings}"
    );
}

/// A thread moved to another CPU and back between the two reads of its placement (the loop's
/// start and end) is still said: its loop counts the wake-ups (or spins) made elsewhere.
#[test]
fn a_thread_moved_away_and_back_is_said() {
    let _x = util::exclusive();
    if util::skipped(util::rt_unavailable()) || !util::have("taskset") {
        return;
    }
    if std::fs::read_to_string("/sys/devices/system/cpu/online").is_ok_and(|s| s.trim() == "0") {
        return util::skip("taskset", "one CPU only");
    }
    let there_and_back = |tid: &str| {
        let set = |cpu: &str| {
            Command::new("taskset")
                .args(["-pc", cpu, tid])
                .status()
                .is_ok_and(|s| s.success())
        };
        assert!(set("0"));
        // Long enough for wake-ups (1 ms apart) and spins on CPU 0; not a timing assertion.
        std::thread::sleep(std::time::Duration::from_millis(300));
        assert!(set("1"));
    };
    let dir = Dir::new();
    for (words, thread, name, strict) in [
        // (Not --strict: another test's real-time thread on CPU 1, from the suite running
        // beside this one, would refuse the run before it starts; --strict's exit 3 on a move
        // is `a_thread_moved_by_another_process_while_it_measures_is_said`'s.)
        (
            "cyclic -t 1 -a 1 -D 2s -q --no-store --json",
            "latlab-T0",
            "T0",
            false,
        ),
        (
            "noise -a 1 -D 2s -q --no-store --json",
            "latlab-cpu1",
            "cpu1",
            false,
        ),
    ] {
        let json = dir.join(format!("{name}.json"));
        let mut running = util::latlab().words(words).arg(&json).spawn();
        running.wait_for_thread(thread);
        let tid = thread_id(running.id(), thread).expect("the measuring thread's id");
        wait_placed(running.id(), &tid, 1);
        there_and_back(&tid);
        running.finish().assert_exit(if strict { 3 } else { 0 });
        let warnings = util::read_json(&json)["warnings"].to_string();
        assert!(
            warnings.contains(&format!("{name}: "))
                && warnings.contains("ran on CPU 0, not on CPU 1 where it was pinned"),
            "{warnings}"
        );
        assert!(!warnings.contains("its CPUs from"), "{warnings}");
    }
    // A monitor says it while it runs, and in its snapshot.
    let json = dir.join("monitor.json");
    let mut running = util::latlab()
        .words("monitor -a 1 -i 1ms -D 3s --listen 127.0.0.1:0 -q --no-store --json")
        .arg(&json)
        .spawn();
    running.wait_for_thread("latlab-cpu1");
    let tid = thread_id(running.id(), "latlab-cpu1").expect("the measuring thread's id");
    wait_placed(running.id(), &tid, 1);
    there_and_back(&tid);
    let out = running.finish();
    out.assert_ok();
    let said = "wake-ups ran on CPU 0, not on CPU 1 where its thread was pinned";
    assert!(
        out.stderr.contains("latlab monitor: warning: cpu1: ") && out.stderr.contains(said),
        "{out}"
    );
    let warnings = util::read_json(&json)["warnings"].to_string();
    assert!(warnings.contains(said), "{warnings}");
}

#[test]
fn a_thread_demoted_and_restored_while_it_measures_is_said() {
    let _x = util::exclusive();
    if util::skipped(util::rt_unavailable()) || !util::have("chrt") {
        return;
    }
    // `chrt -o -p 0 TID`, then back to what it was: the loop's ends see nothing.
    let demoted_and_back = |tid: &str| {
        let shown = Command::new("chrt").args(["-p", tid]).output().unwrap();
        let shown = String::from_utf8_lossy(&shown.stdout).into_owned();
        let prio = shown
            .lines()
            .find_map(|l| l.split("priority: ").nth(1))
            .expect("chrt shows its priority")
            .trim()
            .to_string();
        let policy = if shown.contains("SCHED_RR") {
            "-r"
        } else {
            "-f"
        };
        let chrt = |args: &[&str]| {
            assert!(Command::new("chrt")
                .args(args)
                .arg(tid)
                .status()
                .is_ok_and(|s| s.success()));
        };
        chrt(&["-o", "-p", "0"]);
        // Longer than the ground watch's poll (200 ms); not a timing assertion.
        std::thread::sleep(std::time::Duration::from_millis(700));
        chrt(&[policy, "-p", &prio]);
    };
    let dir = Dir::new();
    for (words, thread, name) in [
        (
            "cyclic -t 1 -a 1 -p 80 -D 3s -q --no-store --json",
            "latlab-T0",
            "T0",
        ),
        (
            "noise -a 1 -D 3s -q --no-store --json",
            "latlab-cpu1",
            "cpu1",
        ),
    ] {
        let json = dir.join(format!("{name}.json"));
        let mut running = util::latlab().words(words).arg(&json).spawn();
        running.wait_for_thread(thread);
        let tid = thread_id(running.id(), thread).expect("the measuring thread's id");
        wait_placed(running.id(), &tid, 1);
        demoted_and_back(&tid);
        running.finish().assert_ok();
        let warnings = util::read_json(&json)["warnings"].to_string();
        assert!(
            warnings.contains(&format!("{name}: its policy from "))
                && warnings.contains("to other 0")
                && warnings.contains("put back by its end"),
            "{warnings}"
        );
    }
    // A monitor says it while it runs, not only in its last snapshot.
    let mut running = util::latlab()
        .words("monitor -a 1 -p 80 -i 1ms -D 3s --listen 127.0.0.1:0 -q --no-store")
        .spawn();
    running.wait_for_thread("latlab-cpu1");
    let tid = thread_id(running.id(), "latlab-cpu1").expect("the measuring thread's id");
    wait_placed(running.id(), &tid, 1);
    demoted_and_back(&tid);
    let out = running.finish();
    out.assert_ok();
    assert!(
        out.stderr
            .contains("latlab monitor: warning: cpu1: its policy from fifo 80 to other 0"),
        "{out}"
    );
}

/// Waits until thread `tid` of `pid` has pinned itself to CPU `cpu` and (some time later) is
/// in its measuring loop: a move made before the thread placed itself would be undone by its
/// own pinning and never be a move while it measured.
fn wait_placed(pid: u32, tid: &str, cpu: usize) {
    let status = format!("/proc/{pid}/task/{tid}/status");
    let pinned = || {
        std::fs::read_to_string(&status).is_ok_and(|s| {
            s.lines().any(|l| {
                l.split_once(':')
                    .is_some_and(|(k, v)| k == "Cpus_allowed_list" && v.trim() == cpu.to_string())
            })
        })
    };
    let t0 = std::time::Instant::now();
    while !pinned() {
        assert!(
            t0.elapsed() < std::time::Duration::from_secs(30),
            "thread {tid} never pinned to CPU {cpu}"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    // Past the start barrier and the first read of its placement (not a timing assertion).
    std::thread::sleep(std::time::Duration::from_millis(300));
}

/// The id of process `pid`'s thread called `name`.
fn thread_id(pid: u32, name: &str) -> Option<String> {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .ok()?
        .flatten()
        .find(|t| std::fs::read_to_string(t.path().join("comm")).is_ok_and(|c| c.trim() == name))
        .map(|t| t.file_name().to_string_lossy().into_owned())
}
