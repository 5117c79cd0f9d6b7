//! Loads: every kind runs and reports a rate; no load process outlives latlab — after a normal
//! end, SIGINT, or SIGKILL of latlab itself — and none is left a zombie for init to reap.

use crate::util::{expect_exit, has_thread, latlab, none_left, read_json, tagged, Dir, Running};
use std::time::Instant;

fn tag(name: &str) -> String {
    format!(
        "{name}-{}-{}",
        std::process::id(),
        Instant::now().elapsed().as_nanos()
    )
}

#[test]
fn every_load_kind_runs_and_reports_its_rate() {
    let dir = Dir::new();
    let json = dir.join("r.json");
    let t = tag("kinds");
    let loads = [
        "hackbench:groups=2,fds=4,loops=20",
        "hackbench:groups=1,fds=3,loops=20,mode=thread,ipc=pipe",
        "cpu:threads=1",
        "memory:size=8M",
        "io:size=4M,block=64k",
        "net",
        "exec:sleep 0.01",
    ];
    let mut cmd = latlab();
    cmd.args(["cyclic", "-l", "200", "-q", "--json"])
        .arg(&json)
        .env("LATLAB_TEST_TAG", &t);
    for l in loads {
        cmd.arg("--load").arg(l);
    }
    cmd.assert_ok();
    let run = read_json(&json);
    let reports = run["loads"].as_array().unwrap();
    assert_eq!(reports.len(), loads.len(), "{reports:?}");
    for (r, spec) in reports.iter().zip(loads) {
        assert_eq!(r["spec"], spec);
        assert!(r["count"].as_u64().unwrap() > 0, "{spec} did nothing: {r}");
        assert!(r["rate_per_s"].as_f64().unwrap() > 0.0);
        assert!(r.get("stopped_s").is_none(), "{spec} was not stopped: {r}");
    }
    assert!(
        run["ground"].as_array().is_none_or(|g| g.is_empty()),
        "{run}"
    );
    none_left(&t);
}

fn interrupted(signal: i32) {
    let dir = Dir::new();
    let json = dir.join("r.json");
    let t = tag("signal");
    let mut child = latlab()
        .words("cyclic -D 1h -q --load hackbench:groups=2,fds=5,loops=50")
        .args(["--load", "exec:sleep 5", "--load", "net", "--json"])
        .arg(&json)
        .env("LATLAB_TEST_TAG", &t)
        .spawn();
    // Wait for the loads to be up rather than racing a fixed sleep against start-up.
    child.wait_until("starting its loads", |pid| {
        tagged(&t).len() > 3 && has_thread(pid, "latlab-T0")
    });
    child.signal(signal);
    let out = child.finish();
    if signal == libc::SIGINT {
        out.assert_ok();
        let run = read_json(&json);
        assert_eq!(run["interrupted"], true);
        assert_eq!(run["loads"].as_array().unwrap().len(), 3);
    }
    none_left(&t);
}

#[test]
fn no_orphans_after_sigint() {
    interrupted(libc::SIGINT);
}

/// Zombie tasks of the process groups `groups` whose parent is gone (init's to reap): a
/// load's tasks that outlived their worker and that latlab did not reap.
fn orphaned_zombies(groups: &[String]) -> Vec<String> {
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
            continue;
        };
        let Some((comm, rest)) = stat.split_once(" (").and_then(|(_, r)| r.rsplit_once(") "))
        else {
            continue;
        };
        let f: Vec<&str> = rest.split_whitespace().collect();
        let ours = f.get(2).is_some_and(|g| groups.iter().any(|x| x == g));
        if comm == "hackbench" && f.first() == Some(&"Z") && f.get(1) == Some(&"1") && ours {
            found.push(stat);
        }
    }
    found
}

#[test]
fn a_stopped_loads_tasks_are_reaped_not_left_to_init() {
    // Stopped mid-round, a hackbench load's worker dies before some of its tasks; they come
    // back to latlab (a subreaper), which reaps them. Several tries: the race is not won
    // every time.
    for _ in 0..3 {
        let t = tag("zombies");
        let mut child = latlab()
            .words("cyclic -t 1 -D 1h -q --no-store --load hackbench:groups=2")
            .env("LATLAB_TEST_TAG", &t)
            .spawn();
        child.wait_until("starting its load", |pid| {
            tagged(&t).len() > 3 && has_thread(pid, "latlab-T0")
        });
        // Each load worker leads its own process group, its tasks in it.
        let workers: Vec<String> = tagged(&t)
            .iter()
            .filter(|p| p.contains("load-worker"))
            .filter_map(|p| p.split(':').next().map(str::to_string))
            .collect();
        assert!(!workers.is_empty(), "{:?}", tagged(&t));
        child.signal(libc::SIGINT);
        child.finish().assert_ok();
        let left = orphaned_zombies(&workers);
        assert!(
            left.is_empty(),
            "{} zombies left to init: {left:?}",
            left.len()
        );
        none_left(&t);
    }
}

#[test]
fn no_orphans_after_sigkill_of_latlab() {
    interrupted(libc::SIGKILL);
}

#[test]
fn standalone_hackbench_prints_its_time() {
    let out = latlab()
        .words("load hackbench:groups=2,fds=4,loops=10")
        .assert_ok();
    assert!(out.stdout.lines().any(|l| l.starts_with("Time: ")), "{out}");
}

/// An interrupted one-shot hackbench: its tasks are ended, and the line that says so stays a
/// line (it listed 160 pids).
#[test]
fn an_interrupted_hackbench_names_few_of_the_tasks_it_ended() {
    let run = latlab()
        .words("load hackbench:groups=4,loops=1000000 --no-store")
        .spawn();
    std::thread::sleep(std::time::Duration::from_millis(800));
    run.signal(libc::SIGINT);
    let out = run.finish();
    out.assert_ok();
    assert!(
        out.stdout.contains("interrupted; the run did not finish"),
        "{out}"
    );
    if let Some(line) = out
        .stderr
        .lines()
        .find(|l| l.contains("left running (pids "))
    {
        let listed = line
            .split("(pids ")
            .nth(1)
            .unwrap()
            .split(" and ")
            .next()
            .unwrap()
            .split_whitespace()
            .filter(|w| w.parse::<i32>().is_ok())
            .count();
        assert!(listed <= 8, "{line}");
        assert!(line.contains(" more)"), "{line}");
    }
}

#[test]
fn load_bad_input() {
    for (spec, want) in [
        ("disk", "unknown load kind 'disk'"),
        ("cpu:threads=0", "threads=0"),
        ("hackbench:groups=500", "4000 tasks"),
        ("io:path=/nonexistent/dev", "/nonexistent/dev"),
        ("exec:definitely-not-a-command", "definitely-not-a-command"),
        ("net:speed=fast", "unknown option 'speed'"),
    ] {
        expect_exit(&[], &["cyclic", "-l", "1", "--load", spec], 2, want);
    }
}

/// The build load's compilers, killed mid-compile when the load stops, leave their temporary
/// files in the load's own tree (removed with it), not in `$TMPDIR`.
#[test]
fn the_build_load_leaves_nothing_in_tmpdir() {
    if !crate::util::have("make") || !crate::util::have("cc") {
        return crate::util::skip("build_load_tmpdir", "make or cc missing");
    }
    let dir = Dir::new();
    let tmp = dir.join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    for _ in 0..2 {
        latlab()
            .words("cyclic -t 1 -D 1500ms -q --no-store --load build:jobs=4")
            .env("TMPDIR", &tmp)
            .assert_ok();
    }
    let left: Vec<_> = std::fs::read_dir(&tmp)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert!(left.is_empty(), "left in TMPDIR: {left:?}");
}

/// An endless `cyclic` run with one cpu load, tagged `t`, writing `json` when it ends, `ms`
/// after its load worker runs beside its measuring thread; and the worker's pid.
fn measuring_with_a_load(json: &std::path::Path, t: &str, ms: u64) -> (Running, i32) {
    let mut child = latlab()
        .words("cyclic -D 1h -q --no-store --load cpu:threads=1 --json")
        .arg(json)
        .env("LATLAB_TEST_TAG", t)
        .spawn();
    child.wait_until("its load running", |pid| {
        has_thread(pid, "latlab-T0")
            && tagged(t)
                .iter()
                .any(|p| p.contains("load-worker") && !p.starts_with(&format!("{pid}:")))
    });
    std::thread::sleep(std::time::Duration::from_millis(ms));
    let worker: i32 = tagged(t)
        .iter()
        .find(|p| p.contains("load-worker"))
        .and_then(|p| p.split(':').next()?.parse().ok())
        .unwrap();
    (child, worker)
}

#[test]
fn a_load_killed_by_someone_else_is_said_to_have_ended_during_the_run() {
    let dir = Dir::new();
    let json = dir.join("r.json");
    let t = tag("killed");
    // Let it report once (a report a second), then kill the worker as another user would.
    let (child, worker) = measuring_with_a_load(&json, &t, 1500);
    // SAFETY: killing a process of ours (latlab's load worker).
    unsafe { libc::kill(worker, libc::SIGKILL) };
    std::thread::sleep(std::time::Duration::from_millis(500));
    child.signal(libc::SIGINT);
    child.finish().assert_ok();
    let run = read_json(&json);
    let w = run["warnings"].to_string();
    assert!(w.contains("ended during the run"), "{w}");
    assert!(w.contains("measured without it"), "{w}");
    assert!(!w.contains("was killed after"), "{w}");
    // The run went on under other conditions: it is disturbed, and says why.
    let ground = run["ground"].to_string();
    assert!(
        ground.contains("--load cpu:threads=1") && ground.contains("ended"),
        "{ground}"
    );
    // What it did before it ended is kept, marked.
    let loads = run["loads"].as_array().unwrap();
    assert_eq!(loads.len(), 1, "{loads:?}");
    assert!(loads[0]["note"]
        .to_string()
        .contains("ended during the run"));
    none_left(&t);
}

/// A load stopped (SIGSTOP to its group, as Ctrl-Z would) and continued, many times: the run
/// says for about how long in all it went on without it and is marked disturbed; the load's
/// report carries the time it was stopped.
#[test]
fn a_load_stopped_for_a_while_is_said_and_disturbs_the_run() {
    let dir = Dir::new();
    let json = dir.join("r.json");
    let t = tag("stopped");
    let (child, worker) = measuring_with_a_load(&json, &t, 300);
    // Ten short stops, 1.5 s in all: each is counted, none alone would be said.
    for _ in 0..10 {
        // SAFETY: signalling the process group of latlab's load worker (it leads it).
        unsafe { libc::kill(-worker, libc::SIGSTOP) };
        std::thread::sleep(std::time::Duration::from_millis(150));
        // SAFETY: as above.
        unsafe { libc::kill(-worker, libc::SIGCONT) };
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    child.signal(libc::SIGINT);
    child.finish().assert_ok();
    let run = read_json(&json);
    let w = run["warnings"].to_string();
    assert!(w.contains("was stopped (SIGSTOP) for about"), "{w}");
    // Each stop is seen from the load's own ticks (50 ms apart): a little less than it was.
    let stopped = run["loads"][0]["stopped_s"].as_f64().unwrap();
    assert!((0.6..=2.5).contains(&stopped), "{stopped}");
    let ground = run["ground"].to_string();
    assert!(
        ground.contains("--load cpu:threads=1") && ground.contains("stopped for about"),
        "{ground}"
    );
    none_left(&t);
}

/// A load that asks for a real-time policy it will not get (as `nobody`: RLIMIT_RTPRIO 0)
/// runs at SCHED_OTHER and the result says so, under a measurement and in the foreground;
/// `--strict` refuses it (exit 3).
#[test]
fn a_load_refused_its_real_time_policy_says_so() {
    let dir = Dir::new();
    let json = dir.join("l.json");
    let as_nobody = |args: &[&str]| {
        crate::util::latlab_as_nobody(&dir, &[]).map(|mut c| c.args(args).output().unwrap())
    };
    let path = json.to_str().unwrap();
    let fifo = "cpu:policy=fifo,prio=10";
    let Some(out) = as_nobody(&["load", fifo, "-D", "300ms", "--no-store", "--json", path]) else {
        return;
    };
    let err = String::from_utf8_lossy(&out.stderr);
    if err.contains("Permission denied") && !json.exists() {
        return crate::util::skip(
            "a_load_refused_its_real_time_policy_says_so",
            &format!("'nobody' cannot run the test binary here: {err}"),
        );
    }
    assert!(out.status.success(), "{err}");
    let w = read_json(&json)["warnings"].to_string();
    assert!(
        w.contains("load cpu:policy=fifo,prio=10") && w.contains("SCHED_OTHER"),
        "{w}"
    );
    let args = [
        "cyclic",
        "-l",
        "20",
        "-q",
        "--no-store",
        "--load",
        fifo,
        "--json",
        path,
    ];
    let out = as_nobody(&args).unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let w = read_json(&json)["warnings"].to_string();
    assert!(w.contains("load cpu:policy=fifo,prio=10"), "{w}");
    let strict = as_nobody(&["load", fifo, "-D", "300ms", "--no-store", "--strict"]).unwrap();
    let err = String::from_utf8_lossy(&strict.stderr);
    assert_eq!(strict.status.code(), Some(3), "{err}");
    assert!(err.contains("load cpu:policy=fifo,prio=10"), "{err}");
}
