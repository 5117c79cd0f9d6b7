//! `latlab run PLAN.toml` and `latlab restore`: plans run end to end and compare; knobs are put
//! back after a normal end, after SIGINT, and — through the journal — after SIGKILL.

use crate::util::{exclusive, latlab, skip};
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

/// The harmless sysctl the plan tests vary (a lease-break timeout nothing here uses).
const KNOB: &str = "/proc/sys/fs/lease-break-time";

/// Serialises the tests that change `KNOB`, and puts it back whatever happens.
struct KnobTest {
    orig: Vec<u8>,
    _guard: std::sync::MutexGuard<'static, ()>,
}

impl Drop for KnobTest {
    fn drop(&mut self) {
        let _ = std::fs::write(KNOB, &self.orig);
    }
}

/// Takes `KNOB` for one test, or says why it cannot (not root, read-only /proc/sys).
fn knob_test(test: &str) -> Option<KnobTest> {
    // Every test that runs a plan takes turns: one plan at a time holds the settings lock.
    let guard = exclusive();
    let orig = std::fs::read(KNOB).ok()?;
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

fn wait_until(what: &str, f: impl Fn() -> bool) {
    let t0 = Instant::now();
    while !f() {
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "timed out waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn example_plans_are_valid() {
    for f in [
        "seed001-tcp-clocksource.toml",
        "seed003-noise-disturb.toml",
        "seed004-cyclic-load.toml",
    ] {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("examples")
            .join(f);
        let out = latlab()
            .args(["run", "--dry-run"])
            .arg(&path)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{f}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(String::from_utf8_lossy(&out.stdout).contains("valid;"));
    }
}

#[test]
fn clocksource_plan_runs_stores_compares_and_restores() {
    // SAFETY: no arguments.
    if unsafe { libc::geteuid() } != 0 {
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
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("p.toml");
    std::fs::write(
        &plan,
        format!("[measure]\ncommand = \"tcp\"\nargs = [\"-D\", \"150ms\"]\n[design]\nrepeats = 3\nseed = 7\n[[factor]]\nname = \"clocksource\"\nknob = \"{cs}/current_clocksource\"\nlevels = [\"{orig}\", \"{other}\"]\n"),
    )
    .unwrap();
    let store = format!("sqlite:{}", dir.path().join("s.db").display());
    let out = latlab()
        .args(["run"])
        .arg(&plan)
        .args(["--store", &store])
        .env("LATLAB_JOURNAL", dir.path().join("j.json"))
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stderr}");
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
    assert!(!dir.path().join("j.json").exists(), "journal left behind");
    let exp = stdout
        .split_whitespace()
        .nth(1)
        .unwrap()
        .trim_end_matches(':')
        .to_string();
    let list = latlab()
        .args(["runs", "list", "--store", &store, "--tag"])
        .arg(format!("experiment={exp}"))
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&list.stdout).lines().count(),
        1 + 6,
        "{}",
        String::from_utf8_lossy(&list.stdout)
    );
}

#[test]
fn sigint_mid_plan_restores_the_knob() {
    let Some(k) = knob_test("sigint_mid_plan_restores_the_knob") else {
        return;
    };
    // Ctrl-C, and a hang-up (a closed terminal) the same way.
    for sig in [libc::SIGINT, libc::SIGHUP] {
        let dir = tempfile::tempdir().unwrap();
        let plan = plan_with_knob(dir.path(), 50);
        let child = latlab()
            .arg("run")
            .arg(&plan)
            .env("LATLAB_JOURNAL", dir.path().join("j.json"))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        wait_until("the knob to change", || knob_now() != k.orig);
        // SAFETY: signalling our own child.
        unsafe { libc::kill(child.id() as i32, sig) };
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "signal {sig}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(String::from_utf8_lossy(&out.stdout).contains("(interrupted)"));
        assert_eq!(knob_now(), k.orig, "signal {sig}");
        assert!(!dir.path().join("j.json").exists());
    }
}

#[test]
fn two_interrupts_a_second_apart_still_restore_the_knob() {
    let Some(k) = knob_test("two_interrupts_a_second_apart_still_restore_the_knob") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let plan = plan_with_knob(dir.path(), 50);
    let child = latlab()
        .arg("run")
        .arg(&plan)
        .env("LATLAB_JOURNAL", dir.path().join("j.json"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_until("the knob to change", || knob_now() != k.orig);
    // The same request twice at once (as `timeout -s INT` sends it), then a real second one.
    for pause in [0, 0, 800] {
        std::thread::sleep(std::time::Duration::from_millis(pause));
        // SAFETY: signalling our own child.
        unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    }
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.code().is_some(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        knob_now(),
        k.orig,
        "a second interrupt left the knob changed"
    );
    assert!(!dir.path().join("j.json").exists());
}

#[test]
fn sigkill_mid_plan_then_restore_puts_the_knob_back() {
    let Some(k) = knob_test("sigkill_mid_plan_then_restore_puts_the_knob_back") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join("j.json");
    let plan = plan_with_knob(dir.path(), 50);
    let mut child = latlab()
        .arg("run")
        .arg(&plan)
        .env("LATLAB_JOURNAL", &journal)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_until("the knob to change", || knob_now() != k.orig);
    child.kill().unwrap();
    child.wait().unwrap();
    assert_ne!(knob_now(), k.orig);
    assert!(journal.exists(), "no journal after SIGKILL");
    // The next start notices, and a new plan refuses to run over it.
    let next = latlab()
        .args(["runs", "list"])
        .env("LATLAB_JOURNAL", &journal)
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&next.stderr).contains("latlab restore"),
        "{}",
        String::from_utf8_lossy(&next.stderr)
    );
    let refused = latlab()
        .arg("run")
        .arg(&plan)
        .env("LATLAB_JOURNAL", &journal)
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(3));
    let r = latlab()
        .arg("restore")
        .env("LATLAB_JOURNAL", &journal)
        .output()
        .unwrap();
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
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
    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join("j.json");
    let plan = plan_with_knob(dir.path(), 50);
    let first = latlab()
        .arg("run")
        .arg(&plan)
        .env("LATLAB_JOURNAL", &journal)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_until("the knob to change", || knob_now() != k.orig);
    let before = std::fs::read(&journal).unwrap();
    // A second plan, a restore and a clocksource switch are all refused while it runs.
    for args in [
        vec!["run".to_string(), plan.display().to_string()],
        vec!["restore".to_string()],
    ] {
        let out = latlab()
            .args(&args)
            .env("LATLAB_JOURNAL", &journal)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "{args:?}: {err}");
        assert!(err.contains("one plan at a time"), "{args:?}: {err}");
        assert_eq!(std::fs::read(&journal).unwrap(), before, "{args:?}");
    }
    // SAFETY: signalling our own child.
    unsafe { libc::kill(first.id() as i32, libc::SIGINT) };
    let out = first.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(knob_now(), k.orig);
    assert!(!journal.exists());
}

#[test]
fn concurrent_plan_starts_admit_exactly_one() {
    let Some(k) = knob_test("concurrent_plan_starts_admit_exactly_one") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join("j.json");
    let plan = plan_with_knob(dir.path(), 2);
    let children: Vec<_> = (0..6)
        .map(|_| {
            latlab()
                .arg("run")
                .arg(&plan)
                .env("LATLAB_JOURNAL", &journal)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let outs: Vec<_> = children
        .into_iter()
        .map(|c| c.wait_with_output().unwrap())
        .collect();
    let ok = outs.iter().filter(|o| o.status.success()).count();
    for o in outs.iter().filter(|o| !o.status.success()) {
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(3), "{err}");
        assert!(err.contains("one plan at a time"), "{err}");
    }
    assert!(ok >= 1, "no plan ran");
    assert_eq!(knob_now(), k.orig);
    assert!(!journal.exists());
}

#[test]
fn knob_escapes_are_refused_by_dry_run_and_run() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("escaped");
    let p = dir.path().join("bad.toml");
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
            let mut c = latlab();
            c.arg("run")
                .arg(&p)
                .env("LATLAB_JOURNAL", dir.path().join("j.json"));
            if dry {
                c.arg("--dry-run");
            }
            let out = c.output().unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
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
        let t0 = Instant::now();
        let out = latlab().args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        // Refused before a byte is read: /dev/zero is not a regular file.
        assert!(
            err.contains("/dev/zero") && err.contains("not a regular file"),
            "{err}"
        );
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "{args:?} took {:?}",
            t0.elapsed()
        );
    }
}

#[test]
fn dry_run_quotes_commands_counts_time_and_takes_overrides() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("p.toml");
    std::fs::write(
        &p,
        "[measure]\ncommand = \"noise\"\nargs = [\"-D\", \"1s\", \"-q\"]\n[design]\nrepeats = 20\n\
         [[factor]]\nname = \"disturb\"\nlevels = [\"none\", \"hog\"]\n\
         options = { hog = [\"--disturb\", \"echo \\\"it's\\\" done\"] }\n",
    )
    .unwrap();
    let out = latlab()
        .args([
            "run",
            "--dry-run",
            "--set",
            "repeats=3",
            "--set",
            "duration=2s",
        ])
        .arg(&p)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
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
        .args(["run", "--dry-run", "--set", "colour=blue"])
        .arg(&p)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--set colour=blue"));
}

#[test]
fn progress_and_tags_name_levels_as_written_and_count_repeats_alike() {
    let _x = exclusive();
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("p.toml");
    std::fs::write(
        &p,
        "[measure]\ncommand = \"cyclic\"\nargs = [\"-l\", \"20\", \"-i\", \"1ms\", \"-q\", \"-t\", \"1\"]\n\
         [design]\nrepeats = 2\norder = \"sequential\"\n[analysis]\nmetric = \"max\"\n\
         [[factor]]\nname = \"prio\"\nlevels = [\"high one\", \"low\"]\n\
         options = { low = [\"-p\", \"0\"] }\n",
    )
    .unwrap();
    let store = format!("sqlite:{}", dir.path().join("s.db").display());
    let out = latlab()
        .args(["run", "--store", &store])
        .arg(&p)
        .env("LATLAB_JOURNAL", dir.path().join("j.json"))
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("[1/4] prio=high one repeat 1: run"),
        "{stderr}"
    );
    assert!(
        stderr.contains("[2/4] prio=high one repeat 2: run"),
        "{stderr}"
    );
    for text in [&stdout, &stderr] {
        for internal in ["'c0'", "'c1'", "c0:", "c1:", "c0=", "c1="] {
            assert!(!text.contains(internal), "{text}");
        }
    }
    let list = latlab()
        .args([
            "runs", "list", "--store", &store, "--tag", "repeat=2", "--tag", "prio=low",
        ])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&list.stdout).lines().count(),
        2,
        "{}",
        String::from_utf8_lossy(&list.stdout)
    );
    let none = latlab()
        .args(["runs", "list", "--store", &store, "--tag", "repeat=0"])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&none.stdout).lines().count(), 1);
}

#[test]
fn the_store_reaches_measurements_by_environment_not_argv() {
    let _x = exclusive();
    let dir = tempfile::tempdir().unwrap();
    let marker = format!("secret-store-{}", std::process::id());
    let db = dir.path().join(format!("{marker}.db"));
    let p = dir.path().join("p.toml");
    std::fs::write(
        &p,
        "[measure]\ncommand = \"tcp\"\nargs = [\"-D\", \"300ms\"]\n[design]\nrepeats = 3\n",
    )
    .unwrap();
    let mut child = latlab()
        .args(["run", "--store"])
        .arg(format!("sqlite:{}", db.display()))
        .arg(&p)
        .env("LATLAB_JOURNAL", dir.path().join("j.json"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let me = child.id().to_string();
    let mut seen_children = 0;
    while child.try_wait().unwrap().is_none() {
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
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(seen_children > 0, "never saw a measurement running");
    assert!(String::from_utf8_lossy(&out.stdout).contains("3 run(s) stored"));
    let list = latlab()
        .args(["runs", "list", "--store"])
        .arg(format!("sqlite:{}", db.display()))
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&list.stdout).lines().count(), 1 + 3);
}

#[test]
fn a_plan_with_a_postgres_password_never_shows_it() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("p.toml");
    std::fs::write(
        &p,
        "[measure]\ncommand = \"tcp\"\nargs = [\"-D\", \"100ms\"]\n",
    )
    .unwrap();
    let out = latlab()
        .args(["run", "--store", "postgres://me:hunter2@127.0.0.1:1/none"])
        .arg(&p)
        .env("LATLAB_JOURNAL", dir.path().join("j.json"))
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stderr).to_string() + &String::from_utf8_lossy(&out.stdout);
    assert_ne!(out.status.code(), Some(0), "{text}");
    assert!(!text.contains("hunter2"), "the password leaked: {text}");
}

#[test]
fn bad_plans_are_refused_before_anything_changes() {
    let Some(k) = knob_test("bad_plans_are_refused_before_anything_changes") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("bad.toml");
    std::fs::write(
        &p,
        format!("[measure]\ncommand = \"cyclic\"\nargs = [\"-l\", \"10\"]\n[[factor]]\nname = \"a\"\nknob = \"{KNOB}\"\nlevels = [\"101\"]\n[[factor]]\nname = \"b\"\nknob = \"/sys/nonexistent/knob\"\nlevels = [\"y\"]\n"),
    )
    .unwrap();
    let out = latlab()
        .arg("run")
        .arg(&p)
        .env("LATLAB_JOURNAL", dir.path().join("j.json"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/sys/nonexistent/knob"));
    assert_eq!(knob_now(), k.orig);
    std::fs::write(
        &p,
        "[measure]\ncommand = \"cyclic\"\n[design]\nrepeats = -1\n",
    )
    .unwrap();
    let out = latlab().arg("run").arg(&p).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("bad.toml:4:"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_failing_disturbance_is_reported_as_failed() {
    let _x = exclusive();
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("p.toml");
    std::fs::write(
        &p,
        "[measure]\ncommand = \"noise\"\nargs = [\"-D\", \"200ms\", \"-q\"]\n\
         [[factor]]\nname = \"disturb\"\nlevels = [\"bad\"]\n\
         options = { bad = [\"--disturb\", \"sh -c 'exit 7'\"] }\n",
    )
    .unwrap();
    let out = latlab()
        .arg("run")
        .arg(&p)
        .env("LATLAB_JOURNAL", dir.path().join("j.json"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("--disturb command exited with status 7"),
        "the failure was hidden: {err}"
    );
}

/// A plan's measurement options are checked as the run checks them (the command line's own
/// checker, registered from the table of measurements), before anything runs.
#[test]
fn the_measurement_options_are_checked_as_the_run_checks_them() {
    let dir = crate::util::scratch();
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
        crate::util::expect_exit(&["run", "--dry-run"], &[p.to_str().unwrap()], 2, want);
    }
    // In a level's options too.
    std::fs::write(
        &p,
        "[measure]\ncommand = \"tcp\"\n[[factor]]\nname = \"a\"\nlevels = [\"x\", \"y\"]\noptions = { y = [\"--json\", \"-\"] }\n",
    )
    .unwrap();
    crate::util::expect_exit(&["run", "--dry-run"], &[p.to_str().unwrap()], 2, "a=y");
    // A measurement a plan cannot run (monitor has no end) is refused with the list.
    std::fs::write(&p, "[measure]\ncommand = \"monitor\"\n").unwrap();
    crate::util::expect_exit(&["run", "--dry-run"], &[p.to_str().unwrap()], 2, "cyclic");
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
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("p.toml");
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
    let store = format!("sqlite:{}", dir.path().join("s.db").display());
    let out = latlab()
        .args(["run", p.to_str().unwrap(), "--store", &store])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
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
    let name = "a_traced_experiments_report_compares_cause_shares_between_levels";
    if let Some(w) = crate::trace::trace_unavailable() {
        return skip(name, &w);
    }
    let _x = exclusive();
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("p.toml");
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
    let store = format!("sqlite:{}", dir.path().join("s.db").display());
    let out = latlab()
        .args(["run", "--store", &store])
        .arg(&p)
        .env("LATLAB_JOURNAL", dir.path().join("j.json"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let exp = stdout
        .split_whitespace()
        .nth(1)
        .unwrap()
        .trim_end_matches(':')
        .to_string();
    let page = dir.path().join("e.html");
    let rep = latlab()
        .args(["report", "--store", &store, "--experiment", &exp, "-o"])
        .arg(&page)
        .output()
        .unwrap();
    assert!(
        rep.status.success(),
        "{}",
        String::from_utf8_lossy(&rep.stderr)
    );
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
