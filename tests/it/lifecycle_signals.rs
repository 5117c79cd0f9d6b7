//! Signals: Ctrl-C (or SIGTERM, or a hang-up) ends every measurement promptly with its result
//! saved, even one delivered in the first millisecond or twice at once; commands that measure
//! nothing end on the first.

use crate::lifecycle::{ends_within, handles, handles_sigint, signal};
use crate::util::{has_thread, latlab, read_json, rt_unavailable, skip, SpawnPiped};
use std::process::Stdio;
use std::time::{Duration, Instant};

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

#[test]
fn every_measurement_ends_soon_after_sigint_with_its_result_saved() {
    if let Some(why) = rt_unavailable() {
        return skip(
            "every_measurement_ends_soon_after_sigint_with_its_result_saved",
            &why,
        );
    }
    let _x = crate::util::exclusive();
    let dir = tempfile::tempdir().unwrap();
    for (i, (args, thread)) in LONG.iter().enumerate() {
        let json = dir.path().join(format!("{i}.json"));
        let mut c = latlab();
        c.args(*args);
        if args[0] != "load" {
            c.arg("--json").arg(&json);
        }
        let child = c.spawn_piped();
        let t0 = Instant::now();
        while !handles_sigint(child.id()) || thread.is_some_and(|t| !has_thread(child.id(), t)) {
            assert!(
                t0.elapsed() < Duration::from_secs(30),
                "{args:?} never started"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        std::thread::sleep(Duration::from_millis(300));
        signal(&child, libc::SIGINT);
        // Within a second on a quiet machine; the bound leaves room for this noisy VM.
        let out = ends_within(child, Duration::from_secs(10), &format!("{args:?}"));
        let (o, e) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        assert_eq!(out.status.code(), Some(0), "{args:?}: {e}");
        assert!(o.contains("interrupted"), "{args:?}: {o}");
        if args[0] != "load" {
            assert_eq!(read_json(&json)["interrupted"], true, "{args:?}");
            assert!(e.contains("stored in"), "{args:?}: {e}");
        }
    }
}

#[test]
fn a_signal_as_soon_as_the_handlers_are_in_still_saves_the_result() {
    if let Some(why) = rt_unavailable() {
        return skip(
            "a_signal_as_soon_as_the_handlers_are_in_still_saves_the_result",
            &why,
        );
    }
    let _x = crate::util::exclusive();
    let dir = tempfile::tempdir().unwrap();
    for (i, args) in [
        &["cyclic", "-t", "2", "-D", "1h"][..],
        &["noise", "-D", "1h"][..],
        &["cyclic", "-t", "1", "-D", "1h", "--load", "cpu"][..],
    ]
    .iter()
    .enumerate()
    {
        let json = dir.path().join(format!("{i}.json"));
        let child = latlab().args(*args).arg("--json").arg(&json).spawn_piped();
        while !handles_sigint(child.id()) {
            std::thread::sleep(Duration::from_micros(200));
        }
        signal(&child, libc::SIGINT);
        let out = ends_within(child, Duration::from_secs(10), &format!("{args:?}"));
        assert_eq!(
            out.status.code(),
            Some(0),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(read_json(&json)["interrupted"], true, "{args:?}");
    }
}

#[test]
fn noise_at_priority_99_on_the_control_threads_cpu_ends_on_time_and_on_sigint() {
    if let Some(why) = rt_unavailable() {
        return skip(
            "noise_at_priority_99_on_the_control_threads_cpu_ends_on_time_and_on_sigint",
            &why,
        );
    }
    let _x = crate::util::exclusive();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("n.json");
    let base = [
        "noise",
        "-p",
        "99",
        "--cpus",
        "0-1",
        "--main-cpu",
        "0",
        "--force",
        "-q",
    ];
    let child = latlab()
        .args(base)
        .args(["-D", "1s", "--json"])
        .arg(&json)
        .spawn_piped();
    let out = ends_within(child, Duration::from_secs(20), "noise -p 99 -D 1s");
    assert_eq!(out.status.code(), Some(0));
    let run = read_json(&json);
    assert_eq!(run["interrupted"], false);
    assert!(run["warnings"].to_string().contains("priority 98"));

    let child = latlab()
        .args(base)
        .args(["-D", "1h", "--json"])
        .arg(&json)
        .spawn_piped();
    let t0 = Instant::now();
    while !has_thread(child.id(), "latlab-cpu0") {
        assert!(t0.elapsed() < Duration::from_secs(30));
        std::thread::sleep(Duration::from_millis(5));
    }
    std::thread::sleep(Duration::from_millis(300));
    signal(&child, libc::SIGINT);
    let out = ends_within(child, Duration::from_secs(10), "noise -p 99 -D 1h");
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(read_json(&json)["interrupted"], true);
}

#[test]
fn one_interrupt_delivered_twice_at_once_still_saves_the_result() {
    if let Some(why) = rt_unavailable() {
        return skip(
            "one_interrupt_delivered_twice_at_once_still_saves_the_result",
            &why,
        );
    }
    let _x = crate::util::exclusive();
    let dir = tempfile::tempdir().unwrap();
    for (i, args) in [&["noise", "-D", "1h"][..], &["tcp", "-D", "1h"][..]]
        .iter()
        .enumerate()
    {
        let json = dir.path().join(format!("{i}.json"));
        let child = latlab().args(*args).arg("--json").arg(&json).spawn_piped();
        while !handles_sigint(child.id()) {
            std::thread::sleep(Duration::from_millis(5));
        }
        std::thread::sleep(Duration::from_millis(300));
        // `timeout -s INT` and a terminal signal the process and its group: two at once.
        signal(&child, libc::SIGINT);
        signal(&child, libc::SIGINT);
        let out = ends_within(child, Duration::from_secs(10), &format!("{args:?}"));
        assert_eq!(
            out.status.code(),
            Some(0),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
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
        let mut child = latlab()
            .args(args)
            .stdin(Stdio::piped()) // kept open: the input never ends
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let pid = child.id();
        let t0 = Instant::now();
        while !has_thread(pid, "latlab-signals") {
            assert!(
                t0.elapsed() < Duration::from_secs(60),
                "{args:?} never started"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        unsafe { libc::kill(pid as i32, sig) };
        let ignored = format!("latlab {args:?} ignored the first signal");
        crate::util::wait_bounded(&mut child, Duration::from_secs(60), &ignored);
        assert_eq!(child.wait().unwrap().code(), Some(code), "{args:?}");
    }
}

#[test]
fn a_hang_up_ends_a_measurement_with_its_result_saved() {
    if let Some(why) = rt_unavailable() {
        return skip("a_hang_up_ends_a_measurement_with_its_result_saved", &why);
    }
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("hup.json");
    let child = latlab()
        .args(["cyclic", "-D", "1h", "--json"])
        .arg(&json)
        .spawn_piped();
    let t0 = Instant::now();
    while !handles(child.id(), libc::SIGHUP) || !has_thread(child.id(), "latlab-T0") {
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "cyclic never started"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    std::thread::sleep(Duration::from_millis(300));
    signal(&child, libc::SIGHUP);
    let out = ends_within(child, Duration::from_secs(10), "cyclic after SIGHUP");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(read_json(&json)["interrupted"], true);
}
