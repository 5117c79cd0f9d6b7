//! `latlab cyclic --policy deadline` end to end: SCHED_DEADLINE threads give latencies and
//! per-job counts, admission control is exit 3 with the numbers, an overloaded thread misses
//! and is throttled, and `--hrtick` is refused where debugfs is locked and journaled and
//! restored (after SIGINT, and after SIGKILL by `latlab restore`) on an injected debugfs root.

use crate::util::{expect_exit, latlab, read_json, rt_test, skip, Dir, Running, TestCommand};

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
    let Some(_x) = rt_test() else { return };
    let dir = Dir::new();
    let json = dir.join("r.json");
    let out = latlab()
        .words("cyclic --policy deadline --runtime 200us --deadline 1ms --period 1ms")
        .words("-l 2000 -q --json")
        .arg(&json)
        .assert_ok();
    let text = &out.stdout;
    assert!(text.contains("SCHED_DEADLINE periods"), "{text}");
    assert!(
        text.contains("misses") && text.contains("over runtime") && !text.contains("throttled"),
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
    // The clock's count is checked against the kernel's signals on this machine: where they
    // disagree a warning says so, where they agree none does.
    let check = p["deadline"]["runtime_overruns_kernel_check"]
        .as_str()
        .unwrap();
    let said = run["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|w| {
            w.as_str()
                .unwrap()
                .contains("SIGXCPU (SCHED_FLAG_DL_OVERRUN: a runtime")
        })
        .count();
    let (over, sig) = (
        count(s, "runtime_overruns") > 0,
        p["deadline"]["sigxcpu"].as_u64().unwrap() > 0,
    );
    match check {
        "agrees" => assert_eq!((said, over, sig), (0, false, false), "{run:#}"),
        "confirmed" => assert_eq!((said, over, sig), (0, true, true), "{run:#}"),
        "unconfirmed" => assert_eq!((said, over, sig), (0, true, false), "{run:#}"),
        "disagrees" => assert_eq!((said, over, sig), (1, false, true), "{run:#}"),
        "not available" => assert_eq!(p["deadline"]["dl_overrun_signal"], false),
        other => panic!("runtime_overruns_kernel_check {other}"),
    }
    assert!(
        text.contains(&format!("({check})")) || check == "not available",
        "{text}"
    );
    // Short runtimes without --hrtick are said to be enforced at the tick.
    let w = run["warnings"].to_string();
    assert!(w.contains("HRTICK_DL"), "{w}");
}

#[test]
fn deadline_groups_and_per_cpu_threads_run_unpinned_and_say_so() {
    let Some(_x) = rt_test() else { return };
    let dir = Dir::new();
    let json = dir.join("r.json");
    latlab()
        .words("cyclic -l 300 -q --json")
        .arg(&json)
        .words("--group policy=deadline,threads=2,runtime=100us,period=2ms,affinity=1")
        .words("--group policy=fifo,threads=1,prio=70,interval=1ms,affinity=0")
        .assert_ok();
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
    let Some(_x) = rt_test() else { return };
    let runtime = std::fs::read_to_string("/proc/sys/kernel/sched_rt_runtime_us").unwrap();
    if runtime.trim() == "-1" {
        return skip(
            "a_run_that_cannot_fit_is_refused_with_the_bandwidth",
            "sched_rt_runtime_us is -1: admission control is off",
        );
    }
    // One thread per CPU, each asking for a whole CPU: more than any limit below 100 %.
    let out = latlab()
        .words("cyclic --policy deadline -t -d 0 --runtime 1ms --period 1ms")
        .words("-l 100 -q --no-store")
        .assert_exit(3);
    let err = &out.stderr;
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
    let Some(_x) = rt_test() else { return };
    let dir = Dir::new();
    let json = dir.join("r.json");
    // Each job spins 500 µs of CPU on a 200 µs runtime: the kernel must throttle it, and it
    // cannot end before its deadline.
    latlab()
        .words("cyclic --policy deadline --runtime 200us --period 1ms --work 500us")
        .words("-l 200 -q --json")
        .arg(&json)
        .assert_ok();
    let run = read_json(&json);
    let s = &series(&run)[0];
    assert_eq!(count(s, "jobs"), 200);
    assert!(count(s, "deadline_misses") > 0, "{s}");
    assert!(count(s, "runtime_overruns") > 0, "{s}");
    assert!(s["overruns"].as_u64().unwrap() > 0, "{s}");
    // The kernel's word: confirmed where a tick found the thread over its runtime and it
    // signalled, unconfirmed where none did (its signal is a lower bound); never "agrees"
    // (nothing over runtime) nor "disagrees" (the kernel saw an overrun the clock did not).
    let d = &run["parameters"]["deadline"];
    let check = d["runtime_overruns_kernel_check"].as_str().unwrap();
    match (
        d["dl_overrun_signal"] == true,
        d["sigxcpu"].as_u64().unwrap() > 0,
    ) {
        (true, true) => assert_eq!(check, "confirmed", "{d}"),
        (true, false) => assert_eq!(check, "unconfirmed", "{d}"),
        (false, _) => assert_eq!(check, "not available", "{d}"),
    }
    assert_eq!(count(s, "work_ns"), 500_000);
}

#[test]
fn hrtick_on_a_locked_debugfs_is_exit_3() {
    let Some(_x) = rt_test() else { return };
    if !latlab_core::sys::process::command_exists("unshare") {
        return skip(
            "hrtick_on_a_locked_debugfs_is_exit_3",
            "no unshare(1) for a private mount namespace",
        );
    }
    let dir = Dir::new();
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
        .env("LATLAB_JOURNAL", dir.join("j.json"))
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
        // A kernel that lets root at its features: the run turned HRTICK on and back off (and
        // the features were found as before, checked above). Not a skip: that is the test.
        return;
    }
    assert!(text.contains("rc=3"), "{text} {err}");
    assert!(
        err.contains("--hrtick") && err.contains("sched/features"),
        "{err}"
    );
    assert!(!dir.join("j.json").exists(), "a journal was left");
}

/// A fake debugfs with HRTICK_DL off, and the journal of one test.
struct FakeDebugfs {
    dir: Dir,
}

const FEATURES: &str = "GENTLE_FAIR_SLEEPERS START_DEBIT NO_NEXT_BUDDY NO_HRTICK NO_HRTICK_DL \
                        WAKEUP_PREEMPTION \n";

impl FakeDebugfs {
    fn new() -> FakeDebugfs {
        let dir = Dir::new();
        dir.write("debug/sched/features", FEATURES);
        FakeDebugfs { dir }
    }
    fn features(&self) -> String {
        self.dir.read("debug/sched/features")
    }
    fn journal(&self) -> std::path::PathBuf {
        self.dir.join("state/restore.json")
    }
    /// latlab with this debugfs and journal, and `line`'s arguments.
    fn latlab(&self, line: &str) -> TestCommand {
        let mut c = latlab();
        c.env("LATLAB_DEBUGFS_ROOT", self.dir.join("debug"))
            .journal(self.journal())
            .words(line);
        c
    }
    /// Starts a long run with `--hrtick` and waits until it has turned the feature on.
    fn start(&self) -> Running {
        let mut child = self
            .latlab("cyclic --policy deadline --hrtick --runtime 100us -D 30s -q --no-store")
            .spawn();
        child.wait_until("turning HRTICK_DL on", |_| self.features() == "HRTICK_DL");
        assert!(self.journal().exists(), "changed before it was journaled");
        child
    }
}

#[test]
fn hrtick_is_turned_off_again_after_sigint() {
    let Some(_x) = rt_test() else { return };
    let f = FakeDebugfs::new();
    let child = f.start();
    child.signal(libc::SIGINT);
    let out = child.finish();
    out.assert_ok();
    // The write that turns the feature back off (the kernel's file would list them all again).
    assert_eq!(f.features(), "NO_HRTICK_DL");
    assert!(!f.journal().exists(), "journal left after a clean restore");
    assert!(out.stdout.contains("HRTICK_DL turned on"), "{out}");
}

#[test]
fn hrtick_after_sigkill_is_turned_off_by_latlab_restore() {
    let Some(_x) = rt_test() else { return };
    let f = FakeDebugfs::new();
    f.start().kill();
    assert_eq!(
        f.features(),
        "HRTICK_DL",
        "nothing may restore it but latlab restore"
    );
    // The next run refuses until the setting is back.
    f.latlab("cyclic --policy deadline --hrtick -l 5 -q --no-store")
        .assert_refused(3, "latlab restore");
    let out = f.latlab("restore").assert_ok();
    assert!(
        out.stdout.contains("restored") && out.stdout.contains("NO_HRTICK_DL"),
        "{out}"
    );
    assert_eq!(f.features(), "NO_HRTICK_DL");
    assert!(!f.journal().exists());
}

#[test]
fn hrtick_already_on_is_left_alone() {
    let Some(_x) = rt_test() else { return };
    let f = FakeDebugfs::new();
    let on = FEATURES.replace("NO_HRTICK_DL", "HRTICK_DL");
    f.dir.write("debug/sched/features", &on);
    let out = f
        .latlab("cyclic --policy deadline --hrtick -l 20 -q --no-store")
        .assert_ok();
    assert_eq!(f.features(), on, "changed although it was on");
    assert!(out.stdout.contains("already on"), "{out}");
    assert!(!f.journal().exists());
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
