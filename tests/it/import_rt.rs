//! `latlab runs import --from pmqtest|ptsematest|svsematest|sigwaittest|signaltest|
//! cyclicdeadline`: real `--json` output of Debian's rt-tests, produced here, becomes stored
//! runs with one series per pair/thread, the tool's counts and exact min/max kept.

use crate::util::{exclusive, have, latlab, skip, test_store, Dir};
use std::process::Command;

#[test]
fn rt_tests_ipc_and_deadline_output_become_runs() {
    let tools = [
        ("pmqtest", &["-l", "30", "-i", "1000", "-q"][..], "pmq"),
        ("ptsematest", &["-l", "30", "-i", "1000", "-q"], "posix-sem"),
        ("svsematest", &["-l", "30", "-i", "1000", "-q"], "sysv-sem"),
        ("sigwaittest", &["-l", "30", "-i", "1000", "-q"], "sigwait"),
        ("signaltest", &["-l", "30", "-q"], "T0"),
        (
            "cyclicdeadline",
            &["-t", "1", "-i", "20000", "-s", "5000", "-D", "1", "-q"],
            "T0",
        ),
    ];
    let missing: Vec<&str> = tools.iter().map(|t| t.0).filter(|t| !have(t)).collect();
    if !missing.is_empty() {
        return skip(
            "rt_tests_ipc_and_deadline_output_become_runs",
            &format!(
                "{} not installed (scripts/test.sh installs rt-tests)",
                missing.join(", ")
            ),
        );
    }
    let _x = exclusive();
    let dir = Dir::new();
    let store = test_store();
    for (tool, args, first) in tools {
        let json = dir.join(format!("{tool}.json"));
        let out = Command::new(tool)
            .args(args)
            .arg(format!("--json={}", json.display()))
            .output()
            .unwrap();
        if !out.status.success() || !json.exists() {
            // cyclicdeadline refuses where SCHED_DEADLINE is not allowed: not latlab's fault,
            // but that tool's import is then not tested, which is said.
            skip(
                &format!("importing {tool}'s output"),
                &format!(
                    "{tool} did not run here ({}): {}",
                    out.status,
                    String::from_utf8_lossy(&out.stderr)
                ),
            );
            continue;
        }
        let want: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        let imported = latlab()
            .args(["runs", "import", "--from", tool, "--store", &store])
            .arg(&json)
            .assert_ok();
        let text = &imported.stdout;
        let id = text
            .lines()
            .find_map(|l| l.strip_prefix("imported run "))
            .and_then(|l| l.split_whitespace().next())
            .unwrap_or_else(|| panic!("{tool}: {text}"))
            .to_string();
        let shown = latlab()
            .args(["runs", "show", "--json", &id, "--store", &store])
            .output()
            .json();
        assert_eq!(shown["tags"]["tool"], tool);
        let run = &shown["run"];
        assert_eq!(run["kind"], tool);
        let series = run["series"].as_array().unwrap();
        let threads = want["thread"].as_object().unwrap();
        assert_eq!(series.len(), threads.len(), "{tool}");
        assert_eq!(series[0]["name"], first, "{tool}");
        let t0 = &threads["0"];
        let (count, max) = if t0["receiver"].is_object() {
            (&t0["sender"]["samples"], &t0["receiver"]["max"])
        } else {
            (&t0["cycles"], &t0["max"])
        };
        assert_eq!(series[0]["count"], *count, "{tool}");
        assert_eq!(
            series[0]["max_ns"].as_u64().unwrap(),
            max.as_u64().unwrap() * 1000,
            "{tool}"
        );
    }
}
