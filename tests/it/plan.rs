//! `latlab run PLAN.toml` and `latlab restore`: plans run end to end and compare; knobs are put
//! back after a normal end, after SIGINT, and — through the journal — after SIGKILL.

use crate::util::{exclusive, latlab, skip};
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

fn plan_with_file_knob(dir: &Path, knob: &Path, repeats: u32) -> std::path::PathBuf {
    let p = dir.join("plan.toml");
    std::fs::write(
        &p,
        format!(
            "[measure]\ncommand = \"cyclic\"\nargs = [\"-l\", \"300\", \"-i\", \"1ms\", \"-q\"]\n\
             [design]\nrepeats = {repeats}\norder = \"interleaved\"\n\
             [[factor]]\nname = \"knob\"\nknob = \"{}\"\nlevels = [\"first\", \"second\"]\n",
            knob.display()
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
    let dir = tempfile::tempdir().unwrap();
    let knob = dir.path().join("knob");
    std::fs::write(&knob, "original").unwrap();
    let plan = plan_with_file_knob(dir.path(), &knob, 50);
    let child = latlab()
        .arg("run")
        .arg(&plan)
        .env("LATLAB_JOURNAL", dir.path().join("j.json"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_until("the knob to change", || {
        std::fs::read_to_string(&knob).is_ok_and(|v| v != "original")
    });
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("(interrupted)"));
    assert_eq!(std::fs::read_to_string(&knob).unwrap(), "original");
    assert!(!dir.path().join("j.json").exists());
}

#[test]
fn sigkill_mid_plan_then_restore_puts_the_knob_back() {
    let dir = tempfile::tempdir().unwrap();
    let knob = dir.path().join("knob");
    let journal = dir.path().join("j.json");
    std::fs::write(&knob, "original").unwrap();
    let plan = plan_with_file_knob(dir.path(), &knob, 50);
    let mut child = latlab()
        .arg("run")
        .arg(&plan)
        .env("LATLAB_JOURNAL", &journal)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_until("the knob to change", || {
        std::fs::read_to_string(&knob).is_ok_and(|v| v != "original")
    });
    child.kill().unwrap();
    child.wait().unwrap();
    assert_ne!(std::fs::read_to_string(&knob).unwrap(), "original");
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
    assert_eq!(std::fs::read_to_string(&knob).unwrap(), "original");
    assert!(!journal.exists());
}

#[test]
fn bad_plans_are_refused_before_anything_changes() {
    let dir = tempfile::tempdir().unwrap();
    let knob = dir.path().join("knob");
    std::fs::write(&knob, "original").unwrap();
    let p = dir.path().join("bad.toml");
    std::fs::write(
        &p,
        format!("[measure]\ncommand = \"cyclic\"\nargs = [\"-l\", \"10\"]\n[[factor]]\nname = \"a\"\nknob = \"{}\"\nlevels = [\"x\"]\n[[factor]]\nname = \"b\"\nknob = \"/nonexistent/knob\"\nlevels = [\"y\"]\n", knob.display()),
    )
    .unwrap();
    let out = latlab()
        .arg("run")
        .arg(&p)
        .env("LATLAB_JOURNAL", dir.path().join("j.json"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/knob"));
    assert_eq!(std::fs::read_to_string(&knob).unwrap(), "original");
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
