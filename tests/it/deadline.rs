//! `latlab cyclic --policy deadline` end to end: SCHED_DEADLINE threads give latencies and
//! per-job counts, admission control is exit 3 with the numbers, an overloaded thread misses
//! and is throttled, and `--hrtick` is refused where debugfs is locked and journaled and
//! restored (after SIGINT, and after SIGKILL by `latlab restore`) on an injected debugfs root.

use crate::util::{assert_exit, exclusive, expect_exit, latlab, read_json, rt_unavailable, skip};
use std::path::Path;
use std::time::{Duration, Instant};

/// Why a SCHED_DEADLINE test cannot run here.
fn dl_unavailable() -> Option<String> {
    rt_unavailable()
}

fn series(run: &serde_json::Value) -> Vec<serde_json::Value> {
    run["series"].as_array().unwrap().clone()
}

fn count(s: &serde_json::Value, key: &str) -> u64 {
    s["extra"][key]
        .as_u64()
        .unwrap_or_else(|| panic!("no {key} in {s}"))
}

#[test]
fn a_deadline_run_that_fits_gives_latencies_and_counts_misses() {
    if let Some(why) = dl_unavailable() {
        return skip(
            "a_deadline_run_that_fits_gives_latencies_and_counts_misses",
            &why,
        );
    }
    let _x = exclusive();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let out = latlab()
        .args([
            "cyclic",
            "--policy",
            "deadline",
            "--runtime",
            "200us",
            "--deadline",
            "1ms",
            "--period",
            "1ms",
            "-l",
            "2000",
            "-q",
            "--json",
        ])
        .arg(&json)
        .output()
        .unwrap();
    assert_exit(&out, 0);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("SCHED_DEADLINE periods"), "{text}");
    assert!(
        text.contains("misses") && text.contains("throttled"),
        "{text}"
    );
    let run = read_json(&json);
    let s = &series(&run)[0];
    assert_eq!(s["policy"], "deadline");
    assert_eq!(s["count"], 2000);
    assert_eq!(count(s, "jobs"), 2000);
    // Counted, whatever this noisy VM makes of them; never more than the jobs.
    assert!(count(s, "deadline_misses") <= 2000);
    assert!(count(s, "runtime_overruns") <= 2000);
    assert_eq!(count(s, "runtime_ns"), 200_000);
    assert!(s["max_ns"].as_u64().unwrap() >= s["min_ns"].as_u64().unwrap());
    let p = &run["parameters"];
    assert_eq!(p["threads"][0]["policy"], "deadline");
    assert_eq!(p["threads"][0]["deadline"]["runtime_ns"], 200_000);
    assert_eq!(p["threads"][0]["deadline"]["deadline_ns"], 1_000_000);
    assert_eq!(p["threads"][0]["deadline"]["period_ns"], 1_000_000);
    assert!(p["deadline"]["runtime_overruns_from"]
        .as_str()
        .unwrap()
        .contains("CLOCK_THREAD_CPUTIME_ID"));
    assert!(p["deadline"]["sigxcpu"].is_u64());
    // Short runtimes without --hrtick are said to be enforced at the tick.
    let w = run["warnings"].to_string();
    assert!(w.contains("HRTICK_DL"), "{w}");
}

#[test]
fn deadline_groups_and_per_cpu_threads_run_unpinned_and_say_so() {
    if let Some(why) = dl_unavailable() {
        return skip(
            "deadline_groups_and_per_cpu_threads_run_unpinned_and_say_so",
            &why,
        );
    }
    let _x = exclusive();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let out = latlab()
        .args([
            "cyclic",
            "-l",
            "300",
            "-q",
            "--group",
            "policy=deadline,threads=2,runtime=100us,period=2ms,affinity=1",
            "--group",
            "policy=fifo,threads=1,prio=70,interval=1ms,affinity=0",
            "--json",
        ])
        .arg(&json)
        .output()
        .unwrap();
    assert_exit(&out, 0);
    let run = read_json(&json);
    let s = series(&run);
    assert_eq!(s.len(), 3);
    for d in &s[..2] {
        assert_eq!(d["policy"], "deadline");
        assert_eq!(d["count"], 300);
        assert!(d["cpu"].is_null(), "a deadline thread was pinned: {d}");
        assert_eq!(count(d, "period_ns"), 2_000_000);
    }
    assert_eq!(s[2]["policy"], "fifo");
    assert_eq!(s[2]["cpu"], 0);
    assert!(s[2]["extra"].is_null());
    let w = run["warnings"].to_string();
    assert!(w.contains("ran unpinned"), "{w}");
}

#[test]
fn a_run_that_cannot_fit_is_refused_with_the_bandwidth() {
    if let Some(why) = dl_unavailable() {
        return skip("a_run_that_cannot_fit_is_refused_with_the_bandwidth", &why);
    }
    let runtime = std::fs::read_to_string("/proc/sys/kernel/sched_rt_runtime_us").unwrap();
    if runtime.trim() == "-1" {
        return skip(
            "a_run_that_cannot_fit_is_refused_with_the_bandwidth",
            "sched_rt_runtime_us is -1: admission control is off",
        );
    }
    let _x = exclusive();
    // One thread per CPU, each asking for a whole CPU: more than any limit below 100 %.
    let out = latlab()
        .args([
            "cyclic",
            "--policy",
            "deadline",
            "-t",
            "-d",
            "0",
            "--runtime",
            "1ms",
            "--period",
            "1ms",
            "-l",
            "100",
            "-q",
            "--no-store",
        ])
        .output()
        .unwrap();
    assert_exit(&out, 3);
    let err = String::from_utf8_lossy(&out.stderr);
    let cpus = std::thread::available_parallelism().unwrap().get();
    for want in [
        "admission control refused".to_string(),
        format!("{cpus} × runtime 1000.0 µs / period 1000.0 µs = {cpus}.000 CPUs"),
        "sched_rt_runtime_us".to_string(),
        "Lower --runtime".to_string(),
    ] {
        assert!(err.contains(&want), "{want}: {err}");
    }
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn an_overloaded_deadline_thread_misses_and_is_throttled() {
    if let Some(why) = dl_unavailable() {
        return skip(
            "an_overloaded_deadline_thread_misses_and_is_throttled",
            &why,
        );
    }
    let _x = exclusive();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    // Each job spins 500 µs of CPU on a 200 µs runtime: the kernel must throttle it, and it
    // cannot end before its deadline.
    let out = latlab()
        .args([
            "cyclic",
            "--policy",
            "deadline",
            "--runtime",
            "200us",
            "--period",
            "1ms",
            "--work",
            "500us",
            "-l",
            "200",
            "-q",
            "--json",
        ])
        .arg(&json)
        .output()
        .unwrap();
    assert_exit(&out, 0);
    let run = read_json(&json);
    let s = &series(&run)[0];
    assert_eq!(count(s, "jobs"), 200);
    assert!(count(s, "deadline_misses") > 0, "{s}");
    assert!(count(s, "runtime_overruns") > 0, "{s}");
    assert!(s["overruns"].as_u64().unwrap() > 0, "{s}");
    assert_eq!(count(s, "work_ns"), 500_000);
}

#[test]
fn hrtick_on_a_locked_debugfs_is_exit_3() {
    if let Some(why) = dl_unavailable() {
        return skip("hrtick_on_a_locked_debugfs_is_exit_3", &why);
    }
    if !latlab::sys::process::command_exists("unshare") {
        return skip(
            "hrtick_on_a_locked_debugfs_is_exit_3",
            "no unshare(1) for a private mount namespace",
        );
    }
    let _x = exclusive();
    let dir = tempfile::tempdir().unwrap();
    // In a private mount namespace without debugfs, so latlab has to mount it (and must leave
    // nothing mounted), whatever the rest of the machine has mounted.
    let script = format!(
        "umount -R /sys/kernel/debug 2>/dev/null; \
         features() {{ mount -t debugfs nodev /sys/kernel/debug && cat /sys/kernel/debug/sched/features 2>&1; umount /sys/kernel/debug; }}; \
         before=$(features); \
         {bin} cyclic --policy deadline --hrtick --runtime 200us -l 50 -q --no-store; \
         echo rc=$?; echo mounted=$(grep -c ' debugfs ' /proc/mounts); \
         after=$(features); \
         [ \"$after\" = \"$before\" ] || echo changed",
        bin = env!("CARGO_BIN_EXE_latlab")
    );
    let out = std::process::Command::new("unshare")
        .args(["--mount", "--propagation", "private", "sh", "-c", &script])
        .env("LATLAB_JOURNAL", dir.path().join("j.json"))
        .env("LATLAB_STORE", crate::util::test_store())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        text.contains("mounted=0"),
        "debugfs left mounted: {text} {err}"
    );
    assert!(
        !text.contains("changed"),
        "sched features not restored: {text}"
    );
    if text.contains("rc=0") {
        // A kernel that lets root at its features: the run turned HRTICK on and back off.
        return;
    }
    assert!(text.contains("rc=3"), "{text} {err}");
    assert!(
        err.contains("--hrtick") && err.contains("sched/features"),
        "{err}"
    );
    assert!(!dir.path().join("j.json").exists(), "a journal was left");
}

/// A fake debugfs with HRTICK_DL off, and the journal of one test.
struct FakeDebugfs {
    dir: tempfile::TempDir,
}

const FEATURES: &str = "GENTLE_FAIR_SLEEPERS START_DEBIT NO_NEXT_BUDDY NO_HRTICK NO_HRTICK_DL \
                        WAKEUP_PREEMPTION \n";

impl FakeDebugfs {
    fn new() -> FakeDebugfs {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("debug/sched")).unwrap();
        std::fs::write(dir.path().join("debug/sched/features"), FEATURES).unwrap();
        FakeDebugfs { dir }
    }
    fn features(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("debug/sched/features")).unwrap()
    }
    fn journal(&self) -> std::path::PathBuf {
        self.dir.path().join("state/restore.json")
    }
    fn latlab(&self) -> std::process::Command {
        let mut c = latlab();
        c.env("LATLAB_DEBUGFS_ROOT", self.dir.path().join("debug"))
            .env("LATLAB_JOURNAL", self.journal());
        c
    }
    fn start(&self) -> std::process::Child {
        self.latlab()
            .args([
                "cyclic",
                "--policy",
                "deadline",
                "--hrtick",
                "--runtime",
                "100us",
                "-D",
                "30s",
                "-q",
                "--no-store",
            ])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    }
    /// Waits until the run has turned the feature on.
    fn wait_on(&self, child: &mut std::process::Child) {
        let t0 = Instant::now();
        while self.features() != "HRTICK_DL" {
            assert!(child.try_wait().unwrap().is_none(), "latlab ended early");
            assert!(
                t0.elapsed() < Duration::from_secs(20),
                "HRTICK_DL never turned on"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(self.journal().exists(), "changed before it was journaled");
    }
}

fn signal(child: &std::process::Child, sig: libc::c_int) {
    // SAFETY: signalling our own child by pid.
    unsafe { libc::kill(child.id() as i32, sig) };
}

#[test]
fn hrtick_is_turned_off_again_after_sigint() {
    if let Some(why) = dl_unavailable() {
        return skip("hrtick_is_turned_off_again_after_sigint", &why);
    }
    let _x = exclusive();
    let f = FakeDebugfs::new();
    let mut child = f.start();
    f.wait_on(&mut child);
    signal(&child, libc::SIGINT);
    let out = child.wait_with_output().unwrap();
    assert_exit(&out, 0);
    // The write that turns the feature back off (the kernel's file would list them all again).
    assert_eq!(f.features(), "NO_HRTICK_DL");
    assert!(!f.journal().exists(), "journal left after a clean restore");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("HRTICK_DL turned on"), "{text}");
}

#[test]
fn hrtick_after_sigkill_is_turned_off_by_latlab_restore() {
    if let Some(why) = dl_unavailable() {
        return skip("hrtick_after_sigkill_is_turned_off_by_latlab_restore", &why);
    }
    let _x = exclusive();
    let f = FakeDebugfs::new();
    let mut child = f.start();
    f.wait_on(&mut child);
    signal(&child, libc::SIGKILL);
    let _ = child.wait();
    assert_eq!(
        f.features(),
        "HRTICK_DL",
        "nothing may restore it but latlab restore"
    );
    // The next run refuses until the setting is back.
    let next = f
        .latlab()
        .args([
            "cyclic",
            "--policy",
            "deadline",
            "--hrtick",
            "-l",
            "5",
            "-q",
            "--no-store",
        ])
        .output()
        .unwrap();
    assert_exit(&next, 3);
    assert!(String::from_utf8_lossy(&next.stderr).contains("latlab restore"));
    let out = f.latlab().arg("restore").output().unwrap();
    assert_exit(&out, 0);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("restored") && text.contains("NO_HRTICK_DL"),
        "{text}"
    );
    assert_eq!(f.features(), "NO_HRTICK_DL");
    assert!(!f.journal().exists());
}

#[test]
fn hrtick_already_on_is_left_alone() {
    if let Some(why) = dl_unavailable() {
        return skip("hrtick_already_on_is_left_alone", &why);
    }
    let _x = exclusive();
    let f = FakeDebugfs::new();
    let on = FEATURES.replace("NO_HRTICK_DL", "HRTICK_DL");
    std::fs::write(f.dir.path().join("debug/sched/features"), &on).unwrap();
    let out = f
        .latlab()
        .args([
            "cyclic",
            "--policy",
            "deadline",
            "--hrtick",
            "-l",
            "20",
            "-q",
            "--no-store",
        ])
        .output()
        .unwrap();
    assert_exit(&out, 0);
    assert_eq!(f.features(), on, "changed although it was on");
    assert!(String::from_utf8_lossy(&out.stdout).contains("already on"));
    assert!(!Path::new(&f.journal()).exists());
}

#[test]
fn bad_deadline_input_names_the_flag() {
    let c = ["cyclic", "-l", "1", "--no-store"];
    for (args, want) in [
        (&["--runtime", "100us"][..], "--runtime"),
        (&["--deadline", "1ms"], "--deadline"),
        (&["--period", "1ms"], "--period"),
        (&["--work", "10us"], "--work"),
        (&["--hrtick"], "--hrtick"),
        (
            &["--policy", "deadline", "--runtime", "2ms"],
            "--runtime 2ms",
        ),
        (&["--policy", "deadline", "--runtime", "x"], "--runtime x"),
        (&["--policy", "deadline", "--runtime", "500ns"], "1024 ns"),
        (&["--policy", "deadline", "--deadline", "0"], "--deadline 0"),
        (
            &[
                "--policy",
                "deadline",
                "--deadline",
                "2ms",
                "--period",
                "1ms",
            ],
            "--deadline 2ms",
        ),
        (&["--policy", "deadline", "--period", "abc"], "--period abc"),
        (
            &[
                "--policy",
                "deadline",
                "--period",
                "10us",
                "--runtime",
                "5us",
            ],
            "sched_deadline_period_min_us",
        ),
        (&["--policy", "deadline", "--work", "2ms"], "--work 2ms"),
        (&["--policy", "deadline", "--work", "-"], "--work"),
        (&["--policy", "deadline", "--relative"], "--relative"),
        (&["--policy", "deadline", "-p", "50"], "priority"),
        (&["--policy", "edf"], "--policy"),
        (&["--group", "policy=fifo,runtime=1ms"], "runtime="),
        (
            &["--group", "policy=deadline,deadline=3ms,period=2ms"],
            "deadline=",
        ),
    ] {
        expect_exit(&c, args, 2, want);
    }
}
