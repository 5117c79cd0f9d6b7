//! Signals: Ctrl-C (or SIGTERM, or a hang-up) ends every measurement promptly with its result
//! saved, even one delivered in the first millisecond or twice at once; commands that measure
//! nothing end on the first; a run stopped and continued (Ctrl-Z, fg) is marked disturbed.

use crate::util::{blocks, handles, has_thread, latlab, read_json, rt_test, Dir, Running};
use std::time::Duration;

/// A long run of every measurement (ended by a signal), with a thread to wait for, if any.
const LONG: &[(&[&str], Option<&str>)] = &[
    (&["cyclic", "-t", "2", "-D", "1h"], Some("latlab-T0")),
    (&["noise", "-D", "1h"], Some("latlab-cpu1")),
    (&["ctxsw", "-n", "50000000", "--method", "futex"], None),
    (&["clocks", "--batch", "100000000"], None),
    (&["tcp", "-D", "1h"], None),
    (&["tcp", "-D", "1h", "--tasks", "processes"], None),
    (&["contend", "-n", "1000000000"], None),
    (&["load", "hackbench:loops=100000000"], None),
    (&["load", "hackbench:loops=100000000", "-D", "1h"], None),
    (
        &[
            "ipc",
            "--method",
            "sysv-sem",
            "-D",
            "1h",
            "--tasks",
            "processes",
        ],
        Some("latlab-ipc-rece"),
    ),
    (
        &["ipc", "--method", "sigwait", "--ring", "3", "-D", "1h"],
        Some("latlab-ipc-ring"),
    ),
];

/// Within a second on a quiet machine; the bound leaves room for this noisy VM.
const PROMPTLY: Duration = Duration::from_secs(10);

/// Starts `args` with `--json json` and waits until it handles SIGINT, looking every `every`.
fn start(args: &[&str], json: &std::path::Path, every: Duration) -> Running {
    let mut child = latlab().args(args).arg("--json").arg(json).spawn();
    child.wait_until_every(every, "handling SIGINT", |pid| handles(pid, libc::SIGINT));
    child
}

#[test]
fn every_measurement_ends_soon_after_sigint_with_its_result_saved() {
    let Some(_x) = rt_test() else { return };
    let dir = Dir::new();
    for (i, (args, thread)) in LONG.iter().enumerate() {
        let json = dir.join(format!("{i}.json"));
        let mut c = latlab();
        c.args(*args);
        if args[0] != "load" {
            c.arg("--json").arg(&json);
        }
        let mut child = c.spawn();
        child.wait_until("started", |pid| {
            handles(pid, libc::SIGINT) && thread.is_none_or(|t| has_thread(pid, t))
        });
        std::thread::sleep(Duration::from_millis(300));
        child.signal(libc::SIGINT);
        let out = child.end_within(PROMPTLY);
        out.assert_ok();
        assert!(out.stdout.contains("interrupted"), "{out}");
        if args[0] != "load" {
            assert_eq!(read_json(&json)["interrupted"], true, "{args:?}");
            assert!(out.stderr.contains("stored in"), "{out}");
        }
    }
}

#[test]
fn a_signal_as_soon_as_the_handlers_are_in_still_saves_the_result() {
    let Some(_x) = rt_test() else { return };
    let dir = Dir::new();
    for (i, args) in [
        &["cyclic", "-t", "2", "-D", "1h"][..],
        &["noise", "-D", "1h"][..],
        &["cyclic", "-t", "1", "-D", "1h", "--load", "cpu"][..],
    ]
    .iter()
    .enumerate()
    {
        let json = dir.join(format!("{i}.json"));
        let child = start(args, &json, Duration::from_micros(200));
        child.signal(libc::SIGINT);
        child.end_within(PROMPTLY).assert_ok();
        assert_eq!(read_json(&json)["interrupted"], true, "{args:?}");
    }
}

#[test]
fn a_signal_before_the_handlers_are_in_waits_for_them() {
    // The test hook holds latlab before it installs its handlers; SIGTERM is held back from
    // the binary's first instruction (sys::process), so it ends the run cleanly, not the
    // process.
    let Some(_x) = rt_test() else { return };
    let dir = Dir::new();
    let json = dir.join("early.json");
    let mut c = latlab();
    c.env("LATLAB_TEST_SIGNALS_DELAY_MS", "400")
        .args(["cyclic", "-t", "1", "-D", "1h", "--json"])
        .arg(&json);
    let mut child = c.spawn();
    child.wait_until("holding SIGTERM", |pid| {
        blocks(pid, libc::SIGTERM) && !handles(pid, libc::SIGTERM)
    });
    child.signal(libc::SIGTERM);
    child.end_within(PROMPTLY).assert_ok();
    assert_eq!(read_json(&json)["interrupted"], true);
    // A hang-up is held from the start too (a measurement ends on it as on SIGTERM).
    let json = dir.join("early-hup.json");
    let mut c = latlab();
    c.env("LATLAB_TEST_SIGNALS_DELAY_MS", "400")
        .args(["cyclic", "-t", "1", "-D", "1h", "--json"])
        .arg(&json);
    let mut child = c.spawn();
    child.wait_until("holding SIGHUP", |pid| {
        blocks(pid, libc::SIGHUP) && !handles(pid, libc::SIGHUP)
    });
    child.signal(libc::SIGHUP);
    let out = child.end_within(PROMPTLY);
    out.assert_ok();
    assert_eq!(read_json(&json)["interrupted"], true);
    // A thread that measured nothing shows no figures (not a minimum of 0.0).
    let row = out
        .stdout
        .lines()
        .find(|l| l.starts_with("0 "))
        .unwrap_or_else(|| panic!("no row for T0: {out}"));
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(&cells[1..6], ["0", "-", "-", "-", "-"], "{out}");
}

#[test]
fn noise_at_priority_99_on_the_control_threads_cpu_ends_on_time_and_on_sigint() {
    let Some(_x) = rt_test() else { return };
    let dir = Dir::new();
    let json = dir.join("n.json");
    let base = "noise -p 99 --cpus 0-1 --main-cpu 0 --force -q";
    latlab()
        .words(base)
        .words("-D 1s --json")
        .arg(&json)
        .spawn()
        .end_within(Duration::from_secs(20))
        .assert_ok();
    let run = read_json(&json);
    assert_eq!(run["interrupted"], false);
    assert!(run["warnings"].to_string().contains("priority 98"));

    let mut child = latlab()
        .words(base)
        .words("-D 1h --json")
        .arg(&json)
        .spawn();
    child.wait_for_thread("latlab-cpu0");
    std::thread::sleep(Duration::from_millis(300));
    child.signal(libc::SIGINT);
    child.end_within(PROMPTLY).assert_ok();
    assert_eq!(read_json(&json)["interrupted"], true);
}

#[test]
fn one_interrupt_delivered_twice_at_once_still_saves_the_result() {
    let Some(_x) = rt_test() else { return };
    let dir = Dir::new();
    for (i, args) in [&["noise", "-D", "1h"][..], &["tcp", "-D", "1h"][..]]
        .iter()
        .enumerate()
    {
        let json = dir.join(format!("{i}.json"));
        let child = start(args, &json, Duration::from_millis(5));
        std::thread::sleep(Duration::from_millis(300));
        // `timeout -s INT` and a terminal signal the process and its group: two at once.
        child.signal(libc::SIGINT).signal(libc::SIGINT);
        child.end_within(PROMPTLY).assert_ok();
        assert_eq!(read_json(&json)["interrupted"], true, "{args:?}");
    }
}

/// Commands that measure nothing (ministat, compare, gate, runs, report ...) end on the first
/// SIGINT or SIGTERM, even while they wait on a pipe that never delivers.
#[test]
fn commands_that_measure_nothing_end_on_the_first_signal() {
    for (args, sig, code) in [
        (&["ministat", "-"][..], libc::SIGINT, 130),
        (&["compare", "a=-", "b=-"][..], libc::SIGTERM, 143),
        (&["compare", "--ministat", "-"][..], libc::SIGINT, 130),
    ] {
        // stdin kept open: the input never ends.
        let mut child = latlab().args(args).spawn_with_open_stdin();
        child.wait_for_thread("latlab-signals");
        child.signal(sig);
        let out = child.end_within(Duration::from_secs(60));
        out.assert_exit(code);
    }
}

#[test]
fn a_hang_up_ends_a_measurement_with_its_result_saved() {
    let Some(_x) = rt_test() else { return };
    let dir = Dir::new();
    let json = dir.join("hup.json");
    let mut child = latlab().words("cyclic -D 1h --json").arg(&json).spawn();
    child.wait_until("started", |pid| {
        handles(pid, libc::SIGHUP) && has_thread(pid, "latlab-T0")
    });
    std::thread::sleep(Duration::from_millis(300));
    child.signal(libc::SIGHUP);
    child.end_within(PROMPTLY).assert_ok();
    assert_eq!(read_json(&json)["interrupted"], true);
}

#[test]
fn under_nohup_a_hang_up_ends_nothing() {
    let Some(_x) = rt_test() else { return };
    let dir = Dir::new();
    let json = dir.join("nohup.json");
    // What `nohup` does: SIGHUP ignored when latlab starts.
    let mut child = std::process::Command::new("sh")
        .arg("-c")
        .arg("trap '' HUP; exec \"$0\" cyclic -t 1 -D 2s -q --no-store --json \"$1\"")
        .arg(crate::util::LATLAB)
        .arg(&json)
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    crate::util::wait_until("started", Duration::from_secs(30), || {
        handles(pid, libc::SIGINT) && has_thread(pid, "latlab-T0")
    });
    // Still ignored while it measures (no handler of latlab's replaced it).
    assert!(!handles(pid, libc::SIGHUP));
    assert!(std::process::Command::new("kill")
        .args(["-HUP", &pid.to_string()])
        .status()
        .unwrap()
        .success());
    assert!(child.wait().unwrap().success());
    let run = read_json(&json);
    assert_eq!(
        run["interrupted"], false,
        "a hang-up under nohup ended the run"
    );
}

#[test]
fn a_run_stopped_and_continued_is_marked_disturbed() {
    let Some(_x) = rt_test() else { return };
    let dir = Dir::new();
    let json = dir.join("stopped.json");
    let mut child = latlab()
        .words("cyclic -t 1 -a 1 -D 4s -q --no-store --json")
        .arg(&json)
        .spawn();
    child.wait_until("started", |pid| {
        handles(pid, libc::SIGCONT) && has_thread(pid, "latlab-T0")
    });
    // A SIGCONT alone is no stop (`timeout` sends one after its SIGTERM).
    child.signal(libc::SIGCONT);
    std::thread::sleep(Duration::from_millis(500));
    // Ctrl-Z, then `fg`: the wake-ups due meanwhile are late by the stop, not the system.
    // (A second: well past the ground watch's polls, five a second; not a timing assertion.)
    child.signal(libc::SIGSTOP);
    std::thread::sleep(Duration::from_secs(1));
    child.signal(libc::SIGCONT);
    child.finish().assert_ok();
    let run = read_json(&json);
    let stops = run["ground"].as_array().map_or(0, |g| {
        g.iter().filter(|c| c["what"] == "latlab's process").count()
    });
    assert_eq!(stops, 1, "{}", run["ground"]);
    assert!(
        run["warnings"]
            .to_string()
            .contains(" s, then continued (SIGCONT)"),
        "{}",
        run["warnings"]
    );
}

/// An interrupted run whose end takes a while (here the measured command ignores SIGTERM and
/// is killed a second later) says it is saving, and that a second Ctrl-C saves nothing: seeing
/// nothing happen, a user presses it again and loses the run.
#[test]
fn a_slow_end_after_ctrl_c_says_it_is_saving() {
    let Some(_x) = crate::util::trace_test() else {
        return;
    };
    let marker = format!("{}.{}", std::process::id(), 3000);
    let script = format!("trap '' TERM INT; sleep {marker}");
    let child = latlab()
        .args(["sched", "-q", "--no-store", "--", "sh", "-c", &script])
        .spawn();
    crate::util::wait_until("the command", Duration::from_secs(30), || {
        crate::util::processes_matching(&marker) > 0
    });
    std::thread::sleep(Duration::from_millis(300));
    child.signal(libc::SIGINT);
    let out = child.finish();
    out.assert_ok();
    assert!(
        out.stderr
            .contains("saving what was collected (a second Ctrl-C or SIGTERM quits at once"),
        "{out}"
    );
}

#[test]
fn a_run_cut_short_is_left_out_of_a_selector_that_names_several() {
    // A Ctrl-C'd run beside whole ones would bias max and the tail low: a selector of several
    // runs leaves it out and says so; --include-disturbed keeps it.
    let Some(_x) = rt_test() else { return };
    let dir = Dir::new();
    let store = format!("sqlite:{}", dir.join("cut.db").display());
    let base = [
        "cyclic", "-t", "1", "-i", "1ms", "-q", "--tag", "cut=yes", "--store",
    ];
    for _ in 0..2 {
        latlab()
            .args(base)
            .arg(&store)
            .args(["-l", "300"])
            .output()
            .assert_ok();
    }
    let mut child = latlab().args(base).arg(&store).args(["-D", "1h"]).spawn();
    child.wait_for_thread("latlab-T0");
    std::thread::sleep(Duration::from_millis(300));
    child.signal(libc::SIGINT);
    child.end_within(PROMPTLY).assert_ok();
    let gate = |extra: &[&str]| {
        latlab()
            .args(["gate", "max<10s", "tag:cut=yes", "--store", &store])
            .args(extra)
            .output()
    };
    let g = gate(&[]);
    assert!(
        g.stderr.contains("left out 1 interrupted run(s)") && g.stderr.contains(" s)"),
        "{g}"
    );
    let g = gate(&["--include-disturbed"]);
    assert!(!g.stderr.contains("left out"), "{g}");
}

#[test]
fn ctxsw_stopped_in_its_first_method_begins_no_other() {
    // Each method first allocates and locks room for all its samples (800 MB at 10^8): one
    // begun after Ctrl-C was seconds of work for nothing, with a row of 0 samples to show.
    let Some(_x) = rt_test() else { return };
    let dir = Dir::new();
    let json = dir.join("c.json");
    let mut child = latlab()
        .args(["ctxsw", "-n", "100000000", "--json"])
        .arg(&json)
        .spawn();
    child.wait_for_thread("latlab-task0");
    std::thread::sleep(Duration::from_millis(200));
    child.signal(libc::SIGINT);
    child.end_within(PROMPTLY).assert_ok();
    let run = read_json(&json);
    assert_eq!(run["interrupted"], true);
    assert_eq!(crate::util::series_names(&run), ["yield"]);
}
