//! `latlab run PLAN.toml` and `latlab restore`: plans run end to end and compare; knobs are put
//! back after a normal end, after SIGINT, and — through the journal — after SIGKILL; a level's
//! hooks are stopped by an interrupt and die with a killed plan.

use crate::util::{
    exclusive, expect_exit, is_root, latlab, read_json, scratch, skip, trace_test, wait_until, Dir,
    TestCommand,
};
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

/// The harmless sysctl the plan tests vary (a lease-break timeout nothing here uses).
const KNOB: &str = "/proc/sys/fs/lease-break-time";

/// Serialises the tests that change `KNOB`, and puts it back whatever happens.
struct KnobTest {
    orig: Vec<u8>,
    _guard: crate::util::Exclusive,
}

impl Drop for KnobTest {
    fn drop(&mut self) {
        let _ = std::fs::write(KNOB, &self.orig);
    }
}

/// Takes `KNOB` for one test, or says why it cannot (no such sysctl, not root, read-only
/// /proc/sys) through `skip`, so that a test which cannot run never passes silently.
fn knob_test(test: &str) -> Option<KnobTest> {
    // Every test that runs a plan takes turns: one plan at a time holds the settings lock.
    let guard = exclusive();
    let orig = match std::fs::read(KNOB) {
        Ok(orig) => orig,
        Err(e) => {
            skip(test, &format!("{KNOB} cannot be read here: {e}"));
            return None;
        }
    };
    if let Err(e) = std::fs::write(KNOB, &orig) {
        skip(test, &format!("{KNOB} is not writable here: {e}"));
        return None;
    }
    Some(KnobTest {
        orig,
        _guard: guard,
    })
}

fn knob_now() -> Vec<u8> {
    std::fs::read(KNOB).unwrap()
}

fn plan_with_knob(dir: &Path, repeats: u32) -> std::path::PathBuf {
    let p = dir.join("plan.toml");
    std::fs::write(
        &p,
        format!(
            "[measure]\ncommand = \"cyclic\"\nargs = [\"-l\", \"300\", \"-i\", \"1ms\", \"-q\"]\n\
             [design]\nrepeats = {repeats}\norder = \"interleaved\"\n\
             [[factor]]\nname = \"knob\"\nsysctl = \"fs.lease-break-time\"\nlevels = [\"101\", \"102\"]\n"
        ),
    )
    .unwrap();
    p
}

/// `latlab run PLAN` journaling in `journal`.
fn run_plan(plan: &Path, journal: &Path) -> TestCommand {
    let mut c = latlab();
    c.arg("run").arg(plan).journal(journal);
    c
}

/// Waits until the running plan has changed `KNOB` from `orig`.
fn wait_for_knob_change(orig: &[u8]) {
    wait_until("the knob to change", Duration::from_secs(30), || {
        knob_now() != orig
    });
}

#[test]
fn example_plans_are_valid() {
    for f in [
        "seed001-tcp-clocksource.toml",
        "seed003-noise-disturb.toml",
        "seed004-cyclic-load.toml",
        "kernel-ab.toml",
        "kexec-preempt.toml",
    ] {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("examples")
            .join(f);
        let out = latlab().words("run --dry-run").arg(&path).assert_ok();
        assert!(out.stdout.contains("valid;"), "{out}");
        if f == "kexec-preempt.toml" {
            assert!(
                out.stdout.contains(
                    "in a fresh kexec boot of running booted preempt=full on this machine for each run"
                ),
                "{out}"
            );
        }
        if f == "kernel-ab.toml" {
            // Validated without fetching or booting anything; each run is said to be a boot.
            assert!(
                out.stdout
                    .contains("in a fresh boot of generic booted preempt=full for each run"),
                "{out}"
            );
        }
    }
}

#[test]
fn clocksource_plan_runs_stores_compares_and_restores() {
    if !is_root() {
        return skip(
            "clocksource_plan_runs_stores_compares_and_restores",
            "not root",
        );
    }
    let cs = "/sys/devices/system/clocksource/clocksource0";
    let avail = std::fs::read_to_string(format!("{cs}/available_clocksource")).unwrap_or_default();
    let orig = std::fs::read_to_string(format!("{cs}/current_clocksource"))
        .unwrap()
        .trim()
        .to_string();
    let Some(other) = avail
        .split_whitespace()
        .find(|c| *c != orig)
        .map(String::from)
    else {
        return skip(
            "clocksource_plan_runs_stores_compares_and_restores",
            "only one clocksource",
        );
    };
    let _x = exclusive();
    let dir = Dir::new();
    let plan = dir.join("p.toml");
    std::fs::write(
        &plan,
        format!("[measure]\ncommand = \"tcp\"\nargs = [\"-D\", \"150ms\"]\n[design]\nrepeats = 3\nseed = 7\n[[factor]]\nname = \"clocksource\"\nknob = \"{cs}/current_clocksource\"\nlevels = [\"{orig}\", \"{other}\"]\n"),
    )
    .unwrap();
    let store = format!("sqlite:{}", dir.join("s.db").display());
    let out = run_plan(&plan, &dir.join("j.json"))
        .args(["--store", &store])
        .assert_ok();
    let (stdout, stderr) = (&out.stdout, &out.stderr);
    assert!(stderr.contains("(seed 7)"), "{stderr}");
    assert!(stdout.contains("6 run(s) stored"), "{stdout}");
    assert!(
        stdout.contains("Student's t") || stdout.contains("No difference proven"),
        "{stdout}"
    );
    assert!(stdout.contains(&format!("clocksource={other}")), "{stdout}");
    assert_eq!(
        std::fs::read_to_string(format!("{cs}/current_clocksource"))
            .unwrap()
            .trim(),
        orig
    );
    assert!(!dir.join("j.json").exists(), "journal left behind");
    let exp = stdout
        .split_whitespace()
        .nth(1)
        .unwrap()
        .trim_end_matches(':')
        .to_string();
    let list = latlab()
        .args(["runs", "list", "--store", &store, "--tag"])
        .arg(format!("experiment={exp}"))
        .output();
    assert_eq!(list.stdout.lines().count(), 1 + 6, "{}", &list.stdout);
}

#[test]
fn sigint_mid_plan_restores_the_knob() {
    let Some(k) = knob_test("sigint_mid_plan_restores_the_knob") else {
        return;
    };
    // Ctrl-C, and a hang-up (a closed terminal) the same way.
    for sig in [libc::SIGINT, libc::SIGHUP] {
        let dir = Dir::new();
        let plan = plan_with_knob(dir.path(), 50);
        let child = run_plan(&plan, &dir.join("j.json")).spawn();
        wait_for_knob_change(&k.orig);
        child.signal(sig);
        let out = child.finish();
        out.assert_ok();
        assert!(out.stdout.contains("(interrupted)"), "{out}");
        // A run the interrupt cut short was stored: the summary counts it with the others.
        if out.stderr.contains("interrupted after") && out.stderr.contains(": stored, left out") {
            let line = out
                .stdout
                .lines()
                .find(|l| l.contains("run(s) stored"))
                .unwrap();
            assert!(!line.contains(" 0 run(s) stored"), "{line}");
            assert!(line.contains("left out of the comparison"), "{line}");
        }
        assert_eq!(knob_now(), k.orig, "signal {sig}");
        assert!(!dir.join("j.json").exists());
    }
}

#[test]
fn two_interrupts_a_second_apart_still_restore_the_knob() {
    let Some(k) = knob_test("two_interrupts_a_second_apart_still_restore_the_knob") else {
        return;
    };
    let dir = Dir::new();
    let plan = plan_with_knob(dir.path(), 50);
    let child = run_plan(&plan, &dir.join("j.json")).spawn();
    wait_for_knob_change(&k.orig);
    // The same request twice at once (as `timeout -s INT` sends it), then a real second one.
    for pause in [0, 0, 800] {
        std::thread::sleep(Duration::from_millis(pause));
        child.signal(libc::SIGINT);
    }
    let out = child.finish();
    assert!(out.code().is_some(), "{out}");
    assert_eq!(
        knob_now(),
        k.orig,
        "a second interrupt left the knob changed"
    );
    assert!(!dir.join("j.json").exists());
}

/// A plan whose every level's `pre` hook runs `hook` (a script of the test's own, so the
/// processes it starts can be told from any other test's).
fn plan_with_hook(dir: &Path, hook: &str) -> std::path::PathBuf {
    let p = dir.join("hook-plan.toml");
    std::fs::write(
        &p,
        format!(
            "[measure]\ncommand = \"cyclic\"\nargs = [\"-l\", \"100\", \"-i\", \"1ms\", \"-q\"]\n\
             [design]\nrepeats = 2\n\
             [[factor]]\nname = \"knob\"\nsysctl = \"fs.lease-break-time\"\nlevels = [\"101\", \"102\"]\n\
             pre = {{ \"101\" = \"{hook}\", \"102\" = \"{hook}\" }}\n"
        ),
    )
    .unwrap();
    p
}

/// Processes whose command line holds `marker`.
fn running(marker: &str) -> usize {
    crate::util::processes_matching(marker)
}

#[test]
fn a_hook_is_stopped_by_an_interrupt_and_dies_with_a_killed_plan() {
    let Some(k) = knob_test("a_hook_is_stopped_by_an_interrupt_and_dies_with_a_killed_plan") else {
        return;
    };
    let dir = Dir::new();
    // A hook that would outlast the test: `sh` waiting for a `sleep` of its own.
    let marker = format!(
        "{}.{}",
        std::process::id(),
        4000 + dir.path().as_os_str().len()
    );
    let plan = plan_with_hook(dir.path(), &format!("sleep {marker}; true"));
    // SIGTERM while the hook runs: it is stopped, the plan ends as interrupted, the knob back.
    let child = run_plan(&plan, &dir.join("j.json"))
        .limit(Duration::from_secs(40))
        .spawn();
    wait_for_knob_change(&k.orig);
    wait_until("the hook", Duration::from_secs(10), || running(&marker) > 0);
    child.signal(libc::SIGTERM);
    let out = child.finish();
    out.assert_ok();
    assert!(
        out.stderr.contains("interrupted in its factor knob level"),
        "{out}"
    );
    assert_eq!(knob_now(), k.orig);
    assert_eq!(running(&marker), 0, "the hook outlived the plan");
    // SIGKILL of the plan while the hook runs: the hook's whole group dies with it.
    let journal = dir.join("j2.json");
    let child = run_plan(&plan, &journal).spawn_with(Stdio::null(), Stdio::null());
    wait_until("the hook", Duration::from_secs(30), || running(&marker) > 0);
    child.kill();
    wait_until(
        "the hook to die with the plan",
        Duration::from_secs(10),
        || running(&marker) == 0,
    );
    latlab().arg("restore").journal(&journal).assert_ok();
    assert_eq!(knob_now(), k.orig);
    // A post hook still runs after an interrupted run (it undoes what pre did).
    let mark = dir.join("post-ran");
    let p = dir.join("post-plan.toml");
    std::fs::write(
        &p,
        format!(
            "[measure]\ncommand = \"cyclic\"\nargs = [\"-D\", \"30s\", \"-i\", \"5ms\", \"-q\"]\n\
             [[factor]]\nname = \"knob\"\nsysctl = \"fs.lease-break-time\"\nlevels = [\"101\"]\n\
             post = {{ \"101\" = \"sleep 0.2; echo done > {}\" }}\n",
            mark.display()
        ),
    )
    .unwrap();
    let child = run_plan(&p, &dir.join("j4.json")).spawn();
    wait_for_knob_change(&k.orig);
    // (Whether the Ctrl-C lands in the run or just before it, the post hook runs.)
    std::thread::sleep(Duration::from_millis(500));
    child.signal(libc::SIGINT);
    child.finish().assert_ok();
    assert_eq!(std::fs::read_to_string(&mark).unwrap_or_default(), "done\n");
    assert_eq!(knob_now(), k.orig);
    // A post hook that interrupts its own plan (its parent is latlab's supervisor, whose
    // parent is the plan) and then fails: the plan ends as interrupted and says so.
    let p = dir.join("failing-post.toml");
    std::fs::write(
        &p,
        "[measure]\ncommand = \"cyclic\"\nargs = [\"-l\", \"50\", \"-i\", \"1ms\", \"-q\"]\n\
         [[factor]]\nname = \"knob\"\nsysctl = \"fs.lease-break-time\"\nlevels = [\"101\"]\n\
         post = { \"101\" = \"kill -INT $(ps -o ppid= -p $PPID); sleep 0.3; exit 7\" }\n",
    )
    .unwrap();
    let out = run_plan(&p, &dir.join("j5.json")).output();
    out.assert_ok();
    assert!(out.stdout.contains("(interrupted)"), "{out}");
    assert!(
        out.stderr
            .contains("failed (exit status: 7) after the interrupt"),
        "{out}"
    );
    assert_eq!(knob_now(), k.orig);
    // A second Ctrl-C cuts a long post hook: the knob is back, exit 130.
    let p = dir.join("long-post.toml");
    std::fs::write(
        &p,
        format!(
            "[measure]\ncommand = \"cyclic\"\nargs = [\"-D\", \"30s\", \"-i\", \"5ms\", \"-q\"]\n\
             [[factor]]\nname = \"knob\"\nsysctl = \"fs.lease-break-time\"\nlevels = [\"101\"]\n\
             post = {{ \"101\" = \"sleep {marker}\" }}\n"
        ),
    )
    .unwrap();
    let child = run_plan(&p, &dir.join("j6.json")).spawn();
    wait_for_knob_change(&k.orig);
    std::thread::sleep(Duration::from_millis(500));
    child.signal(libc::SIGINT);
    wait_until("the post hook", Duration::from_secs(30), || {
        running(&marker) > 0
    });
    std::thread::sleep(Duration::from_millis(700));
    child.signal(libc::SIGINT);
    let out = child.finish();
    assert_eq!(out.code(), Some(130), "{out}");
    assert!(
        out.stderr.contains("stopped by a second interrupt"),
        "{out}"
    );
    assert_eq!(knob_now(), k.orig);
    assert_eq!(running(&marker), 0, "the post hook outlived the plan");
    // What a hook leaves running in the background is stopped when it ends.
    let plan = plan_with_hook(dir.path(), &format!("sleep {marker} >/dev/null 2>&1 &"));
    run_plan(&plan, &dir.join("j3.json")).assert_ok();
    assert_eq!(
        running(&marker),
        0,
        "a hook's background job outlived the plan"
    );
}

#[test]
fn sigkill_mid_plan_then_restore_puts_the_knob_back() {
    let Some(k) = knob_test("sigkill_mid_plan_then_restore_puts_the_knob_back") else {
        return;
    };
    let dir = Dir::new();
    let journal = dir.join("j.json");
    let plan = plan_with_knob(dir.path(), 50);
    let child = run_plan(&plan, &journal).spawn_with(Stdio::null(), Stdio::null());
    wait_for_knob_change(&k.orig);
    child.kill();
    assert_ne!(knob_now(), k.orig);
    assert!(journal.exists(), "no journal after SIGKILL");
    // The next start notices, and a new plan refuses to run over it.
    let next = latlab().words("runs list").journal(&journal).output();
    assert!(next.stderr.contains("latlab restore"), "{next}");
    run_plan(&plan, &journal).assert_exit(3);
    latlab().arg("restore").journal(&journal).assert_ok();
    // Byte for byte, trailing newline included.
    assert_eq!(knob_now(), k.orig);
    assert!(!journal.exists());
}

#[test]
fn a_second_plan_is_refused_and_cannot_touch_the_first_ones_journal() {
    let Some(k) = knob_test("a_second_plan_is_refused_and_cannot_touch_the_first_ones_journal")
    else {
        return;
    };
    let dir = Dir::new();
    let journal = dir.join("j.json");
    let plan = plan_with_knob(dir.path(), 50);
    let first = run_plan(&plan, &journal).spawn();
    wait_for_knob_change(&k.orig);
    // Its owner and originals (the first plan itself updates what it last set, level by
    // level).
    let owned = || {
        let j = read_json(&journal);
        (j["pid"].clone(), j["originals"].clone())
    };
    let before = owned();
    // A second plan, a restore and a clocksource switch are all refused while it runs.
    for args in [
        vec!["run".to_string(), plan.display().to_string()],
        vec!["restore".to_string()],
    ] {
        latlab()
            .args(&args)
            .journal(&journal)
            .assert_refused(3, "one plan at a time");
        assert_eq!(owned(), before, "{args:?}");
    }
    first.signal(libc::SIGINT);
    first.finish().assert_ok();
    assert_eq!(knob_now(), k.orig);
    assert!(!journal.exists());
}

#[test]
fn a_second_plan_with_another_journal_is_refused_too_and_nothing_is_left_changed() {
    let Some(k) =
        knob_test("a_second_plan_with_another_journal_is_refused_too_and_nothing_is_left_changed")
    else {
        return;
    };
    if !std::path::Path::new("/run").is_dir() {
        return skip(
            "a_second_plan_with_another_journal_is_refused_too_and_nothing_is_left_changed",
            "no /run for the machine-wide settings lock",
        );
    }
    let dir = Dir::new();
    let plan = plan_with_knob(dir.path(), 50);
    let first = run_plan(&plan, &dir.join("one/j.json")).spawn();
    wait_for_knob_change(&k.orig);
    // Another journal (another LATLAB_JOURNAL, as another user's state directory would be):
    // the machine's one settings lock refuses it all the same.
    let other = dir.join("two/j.json");
    let second = run_plan(&plan, &other).output();
    second
        .assert_exit(3)
        .assert_refused_naming("one owner of system settings per machine")
        .assert_refused_naming("/run/latlab/restore.lock");
    assert!(!other.exists(), "the refused plan journaled something");
    first.signal(libc::SIGINT);
    first.finish().assert_ok();
    assert_eq!(knob_now(), k.orig, "the knob was left changed");
}

#[test]
fn concurrent_plan_starts_admit_exactly_one() {
    let Some(k) = knob_test("concurrent_plan_starts_admit_exactly_one") else {
        return;
    };
    let dir = Dir::new();
    let journal = dir.join("j.json");
    let plan = plan_with_knob(dir.path(), 2);
    let children: Vec<_> = (0..6).map(|_| run_plan(&plan, &journal).spawn()).collect();
    let outs: Vec<_> = children.into_iter().map(|c| c.finish()).collect();
    let ok = outs.iter().filter(|o| o.status.success()).count();
    for o in outs.iter().filter(|o| !o.status.success()) {
        o.assert_exit(3).assert_refused_naming("one plan at a time");
    }
    assert!(ok >= 1, "no plan ran");
    assert_eq!(knob_now(), k.orig);
    assert!(!journal.exists());
}

#[test]
fn knob_escapes_are_refused_by_dry_run_and_run() {
    let dir = Dir::new();
    let target = dir.join("escaped");
    let p = dir.join("bad.toml");
    for (key, value) in [
        ("knob", format!("/sys/../{}", target.display())),
        ("knob", target.display().to_string()),
        ("sysctl", target.display().to_string()),
    ] {
        std::fs::write(
            &p,
            format!("[measure]\ncommand = \"tcp\"\nargs = [\"-D\", \"100ms\"]\n[[factor]]\nname = \"k\"\n{key} = \"{value}\"\nlevels = [\"owned\"]\n"),
        )
        .unwrap();
        for dry in [true, false] {
            let mut c = run_plan(&p, &dir.join("j.json"));
            if dry {
                c.arg("--dry-run");
            }
            let out = c.output();
            let err = &out.stderr;
            assert_eq!(
                out.status.code(),
                Some(2),
                "{key} = {value} (dry {dry}): {err}"
            );
            assert!(err.contains("factor 'k'"), "{err}");
            assert!(!target.exists(), "{key} = {value} wrote outside /sys");
        }
    }
}

#[test]
fn plan_and_bundle_files_are_read_with_a_limit() {
    for args in [
        vec!["run", "--dry-run", "/dev/zero"],
        vec!["run", "/dev/zero"],
        vec!["runs", "import", "/dev/zero"],
    ] {
        // Refused before a byte is read: /dev/zero is not a regular file.
        latlab()
            .args(&args)
            .limit(Duration::from_secs(20))
            .assert_refused(2, "/dev/zero")
            .assert_refused_naming("not a regular file");
    }
}

#[test]
fn dry_run_quotes_commands_counts_time_and_takes_overrides() {
    let dir = Dir::new();
    let p = dir.join("p.toml");
    std::fs::write(
        &p,
        "[measure]\ncommand = \"noise\"\nargs = [\"-D\", \"1s\", \"-q\"]\n[design]\nrepeats = 20\n\
         [[factor]]\nname = \"disturb\"\nlevels = [\"none\", \"hog\"]\n\
         options = { hog = [\"--disturb\", \"echo \\\"it's\\\" done\"] }\n",
    )
    .unwrap();
    let out = latlab()
        .words("run --dry-run --set repeats=3 --set duration=2s")
        .arg(&p)
        .output();
    let text = &out.stdout;
    out.assert_ok();
    assert!(
        text.contains("2 combination(s) x 3 repeat(s) = 6 run(s)"),
        "{text}"
    );
    assert!(text.contains("total time: about 12s"), "{text}");
    let line = text
        .lines()
        .find(|l| l.contains("disturb=hog"))
        .unwrap()
        .split_once(": ")
        .unwrap()
        .1
        .to_string();
    // Pasted into a shell, the command is the same words.
    let words = std::process::Command::new("/bin/sh")
        .arg("-c")
        .arg(format!("printf '%s\\n' {line}"))
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&words.stdout),
        "latlab\nnoise\n-q\n-D\n2s\n--disturb\necho \"it's\" done\n"
    );
    let out = latlab()
        .words("run --dry-run --set colour=blue")
        .arg(&p)
        .output();
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stderr.contains("--set colour=blue"));
}

#[test]
fn progress_and_tags_name_levels_as_written_and_count_repeats_alike() {
    let _x = exclusive();
    let dir = Dir::new();
    let p = dir.join("p.toml");
    std::fs::write(
        &p,
        "[measure]\ncommand = \"cyclic\"\nargs = [\"-l\", \"20\", \"-i\", \"1ms\", \"-q\", \"-t\", \"1\"]\n\
         [design]\nrepeats = 2\norder = \"sequential\"\n[analysis]\nmetric = \"max\"\n\
         [[factor]]\nname = \"prio\"\nlevels = [\"high one\", \"low\"]\n\
         options = { low = [\"-p\", \"0\"] }\n",
    )
    .unwrap();
    let store = format!("sqlite:{}", dir.join("s.db").display());
    let out = run_plan(&p, &dir.join("j.json"))
        .args(["--store", &store])
        .assert_ok();
    let (stdout, stderr) = (&out.stdout, &out.stderr);
    assert!(
        stderr.contains("[1/4] prio=high one repeat 1: run"),
        "{stderr}"
    );
    assert!(
        stderr.contains("[2/4] prio=high one repeat 2: run"),
        "{stderr}"
    );
    for text in [&stdout, &stderr] {
        // Run and experiment ids (`...T183112Z-54fa6dc0:`) are random hex: left out.
        let words: String = text
            .split_whitespace()
            .filter(|w| !w.contains("Z-"))
            .collect::<Vec<_>>()
            .join(" ");
        for internal in ["'c0'", "'c1'", "c0:", "c1:", "c0=", "c1="] {
            assert!(!words.contains(internal), "{text}");
        }
    }
    let list = latlab()
        .args([
            "runs", "list", "--store", &store, "--tag", "repeat=2", "--tag", "prio=low",
        ])
        .output();
    assert_eq!(list.stdout.lines().count(), 2, "{}", &list.stdout);
    let none = latlab()
        .args(["runs", "list", "--store", &store, "--tag", "repeat=0"])
        .output();
    assert_eq!(none.stdout.lines().count(), 1);
}

#[test]
fn the_store_reaches_measurements_by_environment_not_argv() {
    let _x = exclusive();
    let dir = Dir::new();
    let marker = format!("secret-store-{}", std::process::id());
    let db = dir.join(format!("{marker}.db"));
    let p = dir.join("p.toml");
    std::fs::write(
        &p,
        "[measure]\ncommand = \"tcp\"\nargs = [\"-D\", \"300ms\"]\n[design]\nrepeats = 3\n",
    )
    .unwrap();
    let mut child = latlab()
        .words("run --store")
        .arg(format!("sqlite:{}", db.display()))
        .arg(&p)
        .journal(dir.join("j.json"))
        .spawn();
    let me = child.id().to_string();
    let mut seen_children = 0;
    while child.child().try_wait().unwrap().is_none() {
        for e in std::fs::read_dir("/proc").unwrap().flatten() {
            let pid = e.file_name().to_string_lossy().to_string();
            let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
                continue;
            };
            // Children of the plan (field 4 of stat is the parent pid).
            let ppid = stat
                .rsplit_once(')')
                .and_then(|(_, r)| r.split_whitespace().nth(1))
                .unwrap_or("");
            if ppid != me || pid == me {
                continue;
            }
            let cmdline = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
            if cmdline.is_empty() {
                continue;
            }
            seen_children += 1;
            assert!(
                !String::from_utf8_lossy(&cmdline).contains(&marker),
                "the store is on a child's command line: {}",
                String::from_utf8_lossy(&cmdline)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.finish();
    out.assert_ok();
    assert!(seen_children > 0, "never saw a measurement running");
    assert!(out.stdout.contains("3 run(s) stored"), "{out}");
    let list = latlab()
        .words("runs list --store")
        .arg(format!("sqlite:{}", db.display()))
        .output();
    assert_eq!(list.stdout.lines().count(), 1 + 3);
}

#[test]
fn a_plan_with_a_postgres_password_never_shows_it() {
    let dir = Dir::new();
    let p = dir.join("p.toml");
    std::fs::write(
        &p,
        "[measure]\ncommand = \"tcp\"\nargs = [\"-D\", \"100ms\"]\n",
    )
    .unwrap();
    let out = latlab()
        .words("run --store postgres://me:hunter2@127.0.0.1:1/none")
        .arg(&p)
        .env("LATLAB_JOURNAL", dir.join("j.json"))
        .output();
    let text = out.both();
    assert_ne!(out.status.code(), Some(0), "{text}");
    assert!(!text.contains("hunter2"), "the password leaked: {text}");
}

#[test]
fn bad_plans_are_refused_before_anything_changes() {
    let Some(k) = knob_test("bad_plans_are_refused_before_anything_changes") else {
        return;
    };
    let dir = Dir::new();
    let p = dir.join("bad.toml");
    std::fs::write(
        &p,
        format!("[measure]\ncommand = \"cyclic\"\nargs = [\"-l\", \"10\"]\n[[factor]]\nname = \"a\"\nknob = \"{KNOB}\"\nlevels = [\"101\"]\n[[factor]]\nname = \"b\"\nknob = \"/sys/nonexistent/knob\"\nlevels = [\"y\"]\n"),
    )
    .unwrap();
    run_plan(&p, &dir.join("j.json")).assert_refused(3, "/sys/nonexistent/knob");
    assert_eq!(knob_now(), k.orig);
    std::fs::write(
        &p,
        "[measure]\ncommand = \"cyclic\"\n[design]\nrepeats = -1\n",
    )
    .unwrap();
    latlab().arg("run").arg(&p).assert_refused(2, "bad.toml:4:");
    // Two factors writing one file (a sysctl and the same file as a knob): one setting would
    // label runs with levels never in force. Refused by --dry-run as by the run.
    std::fs::write(
        &p,
        format!("[measure]\ncommand = \"cyclic\"\nargs = [\"-l\", \"10\"]\n[[factor]]\nname = \"a\"\nsysctl = \"fs.lease-break-time\"\nlevels = [\"101\"]\n[[factor]]\nname = \"b\"\nknob = \"{KNOB}\"\nlevels = [\"102\"]\n"),
    )
    .unwrap();
    for dry in [true, false] {
        let mut c = latlab();
        c.arg("run").arg(&p).journal(dir.join("j.json"));
        if dry {
            c.arg("--dry-run");
        }
        let out = c.output();
        out.assert_exit(2).assert_refused_naming("bad.toml");
        assert!(out.stderr.contains("'a' and 'b' both set"), "{out}");
    }
    assert_eq!(knob_now(), k.orig);
    // A factor name or level too long to be a tag is bad input, found by --dry-run too.
    let long = "n".repeat(100_000);
    std::fs::write(
        &p,
        format!("[measure]\ncommand = \"cyclic\"\n[[factor]]\nname = \"{long}\"\nlevels = [\"1\"]\noptions = {{ \"1\" = [] }}\n"),
    )
    .unwrap();
    let out = latlab().args(["run", "--dry-run"]).arg(&p).output();
    out.assert_exit(2).assert_refused_naming("bad.toml");
    assert!(out.stderr.len() < 1000, "{}", out.stderr.len());
}

#[test]
fn a_level_a_pre_command_undoes_is_said_and_its_runs_are_disturbed() {
    let Some(_k) = knob_test("a_level_a_pre_command_undoes_is_said_and_its_runs_are_disturbed")
    else {
        return;
    };
    let orig = knob_now();
    let dir = Dir::new();
    let p = dir.join("undone.toml");
    std::fs::write(
        &p,
        format!(
            "[measure]\ncommand = \"cyclic\"\nargs = [\"-l\", \"50\", \"-i\", \"1ms\", \"-q\"]\n\
             [[factor]]\nname = \"knob\"\nsysctl = \"fs.lease-break-time\"\nlevels = [\"101\", \"102\"]\n\
             pre = {{ \"101\" = \"echo 999 > {KNOB}\", \"102\" = \"true\" }}\n"
        ),
    )
    .unwrap();
    let store = format!("sqlite:{}", dir.join("s.db").display());
    let out = run_plan(&p, &dir.join("j.json"))
        .args(["--on-disturbed", "keep", "--store", &store])
        .assert_ok();
    let said = format!("the plan set {KNOB} to 101, but it read 999 when the run started");
    assert!(
        out.stdout.contains(&said) || out.stderr.contains(&said),
        "{out}"
    );
    assert!(
        out.stderr
            .contains(&format!("disturbed ({KNOB} not at its level)")),
        "{out}"
    );
    // Level 102's run holds its level: nothing said of it.
    assert!(!format!("{out}").contains("to 102, but it read"), "{out}");
    assert_eq!(knob_now(), orig, "the knob was not put back");
}

#[test]
fn a_failing_disturbance_is_reported_as_failed() {
    let _x = exclusive();
    let dir = Dir::new();
    let p = dir.join("p.toml");
    std::fs::write(
        &p,
        "[measure]\ncommand = \"noise\"\nargs = [\"-D\", \"200ms\", \"-q\"]\n\
         [[factor]]\nname = \"disturb\"\nlevels = [\"bad\"]\n\
         options = { bad = [\"--disturb\", \"sh -c 'exit 7'\"] }\n",
    )
    .unwrap();
    let out = run_plan(&p, &dir.join("j.json")).assert_ok();
    assert!(
        out.stderr
            .contains("--disturb command exited with status 7"),
        "the failure was hidden: {out}"
    );
}

/// A plan's measurement options are checked as the run checks them (the command line's own
/// checker, registered from the table of measurements), before anything runs.
#[test]
fn the_measurement_options_are_checked_as_the_run_checks_them() {
    let dir = scratch();
    let p = dir.join("opts.toml");
    for (args, want) in [
        ("\"--json\", \"/tmp/x.json\"", "--json"),
        ("\"--store\", \"sqlite:/tmp/x.db\"", "--store"),
        ("\"--no-store\"", "--no-store"),
        ("\"--tag\", \"repeat=1\"", "repeat"),
        ("\"-D\", \"99999999999999999999h\"", "-D"),
        ("\"--load\", \"teleport\"", "teleport"),
        ("\"--warp\"", "--warp"),
    ] {
        std::fs::write(
            &p,
            format!("[measure]\ncommand = \"tcp\"\nargs = [{args}]\n"),
        )
        .unwrap();
        expect_exit(&["run", "--dry-run"], &[p.to_str().unwrap()], 2, want);
    }
    // In a level's options too.
    std::fs::write(
        &p,
        "[measure]\ncommand = \"tcp\"\n[[factor]]\nname = \"a\"\nlevels = [\"x\", \"y\"]\noptions = { y = [\"--json\", \"-\"] }\n",
    )
    .unwrap();
    expect_exit(&["run", "--dry-run"], &[p.to_str().unwrap()], 2, "a=y");
    // A measurement a plan cannot run (monitor has no end) is refused with the list.
    std::fs::write(&p, "[measure]\ncommand = \"monitor\"\n").unwrap();
    expect_exit(&["run", "--dry-run"], &[p.to_str().unwrap()], 2, "cyclic");
}

/// A level the kernel does not offer (an unknown clocksource) is refused before anything runs:
/// exit 3 naming the knob, the level and what the kernel offers, nothing stored, and the
/// setting as it was. (A level the kernel takes but does not apply is caught when it is set:
/// `settings::Knobs::set` reads it back.)
#[test]
fn a_knob_level_the_kernel_ignores_stops_the_plan() {
    let _x = exclusive();
    const CS: &str = "/sys/devices/system/clocksource/clocksource0/current_clocksource";
    let Ok(before) = std::fs::read_to_string(CS) else {
        return skip(
            "a_knob_level_the_kernel_ignores_stops_the_plan",
            "no clocksource",
        );
    };
    if std::fs::OpenOptions::new().write(true).open(CS).is_err() {
        return skip(
            "a_knob_level_the_kernel_ignores_stops_the_plan",
            "the clocksource is not writable here (needs root)",
        );
    }
    let dir = Dir::new();
    let p = dir.join("p.toml");
    std::fs::write(
        &p,
        format!(
            "[measure]\ncommand = \"cyclic\"\nargs = [\"-l\", \"20\", \"-q\", \"-t\", \"1\"]\n\
             [design]\nrepeats = 1\norder = \"sequential\"\n\
             [[factor]]\nname = \"clocksource\"\nknob = \"{CS}\"\n\
             levels = [\"{}\", \"no-such-clocksource\"]\n",
            before.trim()
        ),
    )
    .unwrap();
    let store = format!("sqlite:{}", dir.join("s.db").display());
    let out = latlab()
        .args(["run", p.to_str().unwrap(), "--store", &store])
        .output();
    let err = &out.stderr;
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(
        err.contains("no-such-clocksource") && err.contains("current_clocksource"),
        "{err}"
    );
    assert!(err.contains("not offered"), "{err}");
    assert!(!err.contains("repeat"), "a run was made: {err}");
    assert_eq!(std::fs::read_to_string(CS).unwrap(), before);
}

#[test]
fn a_traced_experiments_report_compares_cause_shares_between_levels() {
    let Some(_x) = trace_test() else { return };
    let dir = Dir::new();
    let p = dir.join("p.toml");
    // Every wake-up is later than 1 µs: each run explains all of its 300.
    std::fs::write(
        &p,
        "[measure]\ncommand = \"cyclic\"\n\
         args = [\"-t\", \"1\", \"-a\", \"1\", \"-l\", \"300\", \"-q\", \"--trace\", \"--trace-threshold\", \"1us\"]\n\
         [design]\nrepeats = 1\norder = \"interleaved\"\n\
         [[factor]]\nname = \"period\"\nlevels = [\"1ms\", \"2ms\"]\n\
         options = { \"1ms\" = [\"-i\", \"1ms\"], \"2ms\" = [\"-i\", \"2ms\"] }\n",
    )
    .unwrap();
    let store = format!("sqlite:{}", dir.join("s.db").display());
    let out = run_plan(&p, &dir.join("j.json"))
        .args(["--store", &store])
        .assert_ok();
    let exp = out
        .stdout
        .split_whitespace()
        .nth(1)
        .unwrap()
        .trim_end_matches(':')
        .to_string();
    let page = dir.join("e.html");
    latlab()
        .args(["report", "--store", &store, "--experiment", &exp, "-o"])
        .arg(&page)
        .assert_ok();
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        html.contains(r#"id="cause-shares""#),
        "no cause-share section"
    );
    assert!(
        html.contains(r#"data-kind="level-causes""#),
        "no level bars"
    );
    // Both levels, each with its one traced run and its 300 explained wake-ups.
    for level in ["period=1ms", "period=2ms"] {
        let row = format!("<td class=\"l\">{level}</td><td>1</td><td>300</td>");
        assert!(html.contains(&row), "no row {row}");
        assert!(
            html.contains(&format!("<title>{level} ")),
            "no bar for {level}"
        );
    }
}

/// Levels a menu file does not offer and knobs whose value could not be put back are refused by
/// the dry run, before any run: a THP level outside `always [madvise] never` (or written with
/// its brackets), a write-only trigger (`vm.drop_caches`), `/sys/power/state` (it suspends).
#[test]
fn a_dry_run_refuses_levels_off_the_menu_and_knobs_that_cannot_be_put_back() {
    if !crate::util::is_root() {
        return crate::util::skip("dry_run_knobs", "not root: the knobs are root's");
    }
    let dir = Dir::new();
    let plan = |knob: &str, levels: &str| {
        let p = dir.join("k.toml");
        std::fs::write(
            &p,
            format!("[measure]\ncommand = \"cyclic\"\nargs = [\"-l\", \"10\"]\n[[factor]]\nname = \"k\"\nknob = \"{knob}\"\nlevels = {levels}\n"),
        )
        .unwrap();
        latlab().args(["run", "--dry-run"]).arg(&p).output()
    };
    let thp = "/sys/kernel/mm/transparent_hugepage/enabled";
    if std::path::Path::new(thp).exists() {
        for bad in ["[\"bogus\"]", "[\"[never]\"]"] {
            // Bad input (exit 2): no kernel offers it.
            let out = plan(thp, bad);
            out.assert_exit(2);
            assert!(out.stderr.contains("not one of its choices"), "{out}");
            // The plan named once (`k.toml: factor 'k': level ...`).
            assert_eq!(out.stderr.matches("k.toml:").count(), 1, "{out}");
        }
        plan(thp, "[\"never\", \"madvise\"]").assert_ok();
    }
    for trigger in ["/proc/sys/vm/drop_caches", "/sys/power/state"] {
        if std::path::Path::new(trigger).exists() {
            let out = plan(trigger, "[\"3\"]");
            out.assert_exit(2);
            assert!(
                out.stderr.contains("not a setting latlab could put back"),
                "{out}"
            );
        }
    }
}

/// A level the kernel refuses only when it is written (a sysctl's range the checks before the
/// runs cannot know) ends the plan naming the factor and the level, the setting as it was.
#[test]
fn a_level_the_kernel_refuses_when_set_is_said_of_its_factor() {
    const SW: &str = "/proc/sys/vm/swappiness";
    let _x = exclusive();
    let Ok(before) = std::fs::read(SW) else {
        return skip("a_level_the_kernel_refuses_when_set", "no vm.swappiness");
    };
    if std::fs::write(SW, &before).is_err() {
        return skip(
            "a_level_the_kernel_refuses_when_set",
            "vm.swappiness is root's",
        );
    }
    let dir = Dir::new();
    let plan = dir.join("sw.toml");
    std::fs::write(
        &plan,
        "[measure]\ncommand = \"cyclic\"\nargs = [\"-l\", \"10\", \"-q\"]\n\
         [[factor]]\nname = \"sw\"\nsysctl = \"vm.swappiness\"\nlevels = [\"-5\"]\n",
    )
    .unwrap();
    let out = run_plan(&plan, &dir.join("j.json")).output();
    out.assert_exit(3);
    assert!(out.stderr.contains("factor 'sw', level '-5'"), "{out}");
    assert_eq!(std::fs::read(SW).unwrap(), before);
}

#[test]
fn bisect_refuses_what_it_cannot_walk_before_booting_anything() {
    let dir = Dir::new();
    let plain = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/clocksource-cyclic.toml");
    latlab()
        .arg("bisect")
        .arg(&plain)
        .assert_refused(2, "a bisection walks one boot factor");
    let one = dir.write(
        "one.toml",
        "[measure]\ncommand = \"clocks\"\n[[factor]]\nname = \"k\"\nboot = true\nlevels = [\"rt\"]\n",
    );
    latlab()
        .arg("bisect")
        .arg(&one)
        .assert_refused(2, "a bisection needs the good and the bad end");
    let two = dir.write(
        "two.toml",
        "[measure]\ncommand = \"clocks\"\n[[factor]]\nname = \"k\"\nboot = true\nlevels = [\"rt\", \"generic\"]\n",
    );
    latlab()
        .arg("bisect")
        .arg(&two)
        .args(["--max-boots", "1"])
        .assert_refused(2, "--max-boots 1");
    // With --candidate, git bisect run's codes: bad usage aborts the bisection (128).
    let out = latlab()
        .arg("bisect")
        .arg(&two)
        .args(["--candidate", "/nonexistent/bzImage"])
        .output();
    assert_eq!(out.status.code(), Some(128), "{out}");
    assert!(
        out.stderr.contains("--candidate /nonexistent/bzImage"),
        "{out}"
    );
}

#[test]
fn a_kexec_plan_is_refused_before_it_boots_anything_where_it_cannot() {
    let dir = Dir::new();
    let kexec = "[kexec]\nstate = \"st\"\n";
    let no_factor = dir.write(
        "nf.toml",
        format!("[measure]\ncommand = \"clocks\"\n{kexec}"),
    );
    latlab()
        .arg("run")
        .arg(&no_factor)
        .assert_refused(2, "[kexec] boots the levels of a boot factor");
    let fetched = dir.write(
        "rt.toml",
        format!(
            "[measure]\ncommand = \"clocks\"\n{kexec}[[factor]]\nname = \"k\"\nboot = true\n\
             levels = [\"rt\", \"running\"]\n"
        ),
    );
    latlab().arg("run").arg(&fetched).assert_refused(
        2,
        "level 'rt': kernel 'rt' is a Debian package a guest fetches",
    );
    // Continuing across boots is a kexec plan's alone.
    let plain = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/clocksource-cyclic.toml");
    latlab()
        .arg("run")
        .arg(&plain)
        .arg("--resume-or-start")
        .assert_refused(2, "--resume-or-start:");
    let two = dir.write(
        "two.toml",
        format!(
            "[measure]\ncommand = \"clocks\"\n{kexec}[[factor]]\nname = \"k\"\nboot = true\n\
             levels = [\"a\", \"b\"]\nkernel = {{ a = \"running\", b = \"running\" }}\n\
             cmdline = {{ b = \"quiet\" }}\n"
        ),
    );
    latlab()
        .arg("bisect")
        .arg(&two)
        .assert_refused(2, "a bisection boots its kernels in guests");
    // A state that is not one is refused naming its file, and left alone.
    std::fs::create_dir_all(dir.join("st")).unwrap();
    std::fs::write(dir.join("st/state.json"), "\0\0garbage").unwrap();
    latlab()
        .arg("run")
        .arg(&two)
        .arg("--resume-or-start")
        .assert_refused(2, "state.json: not a latlab kexec plan's state");
    assert!(dir.join("st/state.json").exists());
    std::fs::remove_file(dir.join("st/state.json")).unwrap();
    // Where this machine cannot be booted again (no image of its kernel in /boot, no root,
    // no kexec), exit 3 before anything is booted. Never tried where it could: the test
    // would reboot the machine it runs on.
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
    if Path::new(&format!("/boot/vmlinuz-{}", release.trim())).exists() && is_root() {
        eprintln!("this machine could be kexec'd: the exit-3 refusal is not tried");
        return;
    }
    let out = latlab().arg("run").arg(&two).output();
    out.assert_exit(3);
    assert!(
        !dir.join("st/state.json").exists() && !dir.join("st/.lock").exists(),
        "nothing written: {out}"
    );
}

#[test]
fn a_boot_levels_image_and_a_kexec_state_are_found_beside_the_plan() {
    let dir = Dir::new();
    dir.write("bz", "an image");
    let plan = dir.write(
        "img.toml",
        "[measure]\ncommand = \"clocks\"\n[kexec]\nstate = \"st\"\n[[factor]]\nname = \"k\"\n\
         boot = true\nlevels = [\"a\", \"b\"]\nkernel = { a = \"running\", b = \"bz\" }\n",
    );
    // Read from elsewhere, the plan's relative paths still name what is beside it.
    let out = latlab()
        .current_dir("/")
        .args(["run", "--dry-run"])
        .arg(&plan)
        .assert_ok();
    let bz = dir.join("bz");
    assert!(
        out.stdout.contains(&format!(
            "in a fresh kexec boot of {} on this machine",
            bz.display()
        )),
        "{out}"
    );
    assert!(
        out.stdout.contains(&format!(
            "the plan's state in {})",
            dir.join("st").display()
        )),
        "{out}"
    );
}
