//! `latlab ctxsw`: every method gives one sample per iteration, threads and processes; a byte
//! another process writes into the pipe ring is dropped and said; the ioperm phases say
//! plainly when the kernel lacks them.

use crate::util::{
    expect_exit, latlab, latlab_as_nobody, read_json, reads_back, rt_unavailable, skipped, Dir,
};

#[test]
fn each_method_gives_one_sample_per_iteration() {
    if skipped(rt_unavailable()) {
        return;
    }
    let dir = Dir::new();
    for (tasks, cpus, methods) in [
        ("threads", "0", "yield,pipe,futex"),
        ("processes", "0", "yield,pipe,futex"),
        ("threads", "0,1", "pipe,futex"),
        // A method named twice is measured once: two series of one name could not be told
        // apart (and the result would not read back).
        ("threads", "0,1", "pipe,futex,pipe"),
    ] {
        let json = dir.join(format!("{tasks}{cpus}.json"));
        latlab()
            .args([
                "ctxsw", "--tasks", tasks, "--cpus", cpus, "--method", methods,
            ])
            .words("-n 777 --ring 3 --touch 4 --json")
            .arg(&json)
            .assert_ok();
        let run = read_json(&json);
        let series = run["series"].as_array().unwrap();
        let mut named: Vec<&str> = methods.split(',').collect();
        named.sort();
        named.dedup();
        assert_eq!(series.len(), named.len(), "{methods}");
        // What latlab wrote, it reads back.
        reads_back(&json);
        for s in series {
            assert_eq!(s["count"], 777, "{tasks} {cpus} {}", s["name"]);
            let x = &s["extra"];
            if s["name"] == "pipe" {
                assert_eq!(x["switches_per_sample"], 3.0);
                assert!(
                    x["overhead_ticks_per_sample"].as_u64().unwrap() > 0,
                    "pipe overhead not measured"
                );
            } else {
                assert_eq!(x["switches_per_sample"], 2.0);
            }
        }
    }
}

/// The pipes of `pid` whose both ends it holds (a ring's), by fd: one fd of each.
fn ring_pipes(pid: u32) -> Vec<String> {
    let mut seen: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    for e in std::fs::read_dir(format!("/proc/{pid}/fd"))
        .into_iter()
        .flatten()
        .flatten()
    {
        if let Ok(t) = std::fs::read_link(e.path()) {
            let t = t.to_string_lossy().into_owned();
            if t.starts_with("pipe:") {
                let fd = e.file_name().to_string_lossy().into_owned();
                seen.entry(t).or_default().push(fd);
            }
        }
    }
    seen.into_values()
        .filter(|fds| fds.len() >= 2)
        .map(|fds| fds[0].clone())
        .collect()
}

/// A byte another process writes into the pipe ring (the same user can, through
/// /proc/PID/fd) is dropped, counted and said, not passed on as a second token that would make
/// every later round trip short; every iteration still gives its sample.
#[test]
fn a_byte_written_into_the_ring_is_dropped_and_said() {
    if skipped(rt_unavailable()) {
        return;
    }
    let dir = Dir::new();
    for tasks in ["threads", "processes"] {
        let json = dir.join(format!("inject-{tasks}.json"));
        let mut child = latlab()
            .env("LATLAB_TEST_TAG", format!("ctxsw-inject-{tasks}"))
            .args(["ctxsw", "--tasks", tasks])
            .words("--method pipe --ring 3 --cpus 0 -n 300000 --no-store --json")
            .arg(&json)
            .spawn();
        child.wait_until("its pipe ring", |pid| ring_pipes(pid).len() >= 3);
        std::thread::sleep(std::time::Duration::from_millis(300));
        let pid = child.id();
        let mut written = 0;
        for fd in ring_pipes(pid) {
            let f = std::fs::OpenOptions::new()
                .write(true)
                .open(format!("/proc/{pid}/fd/{fd}"));
            if let Ok(mut f) = f {
                use std::io::Write;
                written += usize::from(f.write(b"x").is_ok_and(|n| n == 1));
            }
        }
        let out = child.end_within(std::time::Duration::from_secs(60));
        out.assert_ok();
        assert!(written >= 1, "no byte written: {out}");
        let run = read_json(&json);
        let s = &run["series"][0];
        assert_eq!(s["count"], 300000, "{tasks}: {out}");
        assert!(s["extra"]["foreign"].as_u64() >= Some(1), "{tasks}: {out}");
        assert!(
            run["warnings"]
                .to_string()
                .contains("another process wrote into the ring"),
            "{tasks}: {out}"
        );
    }
}

#[test]
fn ioperm_phases_or_a_clear_reason() {
    if skipped(rt_unavailable()) {
        return;
    }
    // What does this kernel say? (ioperm is per thread: ask on a throwaway one.)
    let enosys = std::thread::spawn(|| {
        // SAFETY: plain syscall on this thread.
        let r = unsafe { libc::ioperm(0x80, 1, 1) };
        r != 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ENOSYS)
    })
    .join()
    .unwrap();
    let mut cmd = latlab();
    cmd.words("ctxsw --ioperm all --seed-output -n 200");
    if enosys {
        cmd.assert_refused(3, "CONFIG_X86_IOPL_IOPERM");
    } else {
        let out = cmd.assert_ok();
        for line in [
            "default no ioperm: scheduling latency:",
            "turning on port 0x80 ioperm: scheduling latency:",
            "turning on port 0xffff ioperm: scheduling latency:",
        ] {
            assert!(out.stdout.contains(line), "{out}");
        }
    }
}

#[test]
fn ctxsw_bad_input() {
    let cases: &[(&[&str], &str, i32)] = &[
        (&["--ioperm", "0x10000"], "0xffff", 2),
        (&["--ioperm", "port80"], "--ioperm", 2),
        (&["--cpus", "0,1", "--method", "yield"], "one CPU", 2),
        (&["--cpus", "77"], "--cpus", 2),
        (&["-n", "0"], "--iterations", 2),
        (&["--ring", "1"], "--ring", 2),
        (&["--method", "smoke"], "smoke", 2),
    ];
    for (args, want, code) in cases {
        expect_exit(&["ctxsw"], args, *code, want);
    }
}

/// A task that cannot start (the process limit reached) is named as such, exit 3, no panic:
/// run as `nobody` under `prlimit --nproc=2` (a second task at most), every measurement that
/// starts several.
#[test]
fn a_process_limit_is_named_not_a_panic() {
    let dir = Dir::new();
    for cmd in [
        &["ctxsw", "-n", "1000"][..],
        &["ipc", "-l", "100"],
        &["cyclic", "-t", "4", "-l", "100"],
        &["noise", "-D", "1"],
        &["pi", "-D", "1"],
    ] {
        let Some(c) = latlab_as_nobody(&dir, &[]) else {
            return;
        };
        // prlimit runs as nobody and lowers its own limit before it execs latlab.
        let bin = c.get_args().last().unwrap().to_os_string();
        let mut args: Vec<std::ffi::OsString> = c.get_args().map(|a| a.to_os_string()).collect();
        args.pop();
        let mut p = std::process::Command::new("runuser");
        p.args(&args[..]).args(["prlimit", "--nproc=2"]).arg(&bin);
        p.args(cmd).arg("--no-store");
        let out = p.output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("panicked"), "{cmd:?}: {err}");
        assert_eq!(out.status.code(), Some(3), "{cmd:?}: {err}");
        assert!(err.contains("RLIMIT_NPROC"), "{cmd:?}: {err}");
    }
}
