//! `latlab gate`: met / violated / undecided with exit codes 0 / 1 / 4 on runs whose
//! histograms are known exactly, the single-run rule, stored runs, and the planner.

use crate::util::{latlab, Dir};
use std::path::Path;

/// A real cyclic result to use as the template of synthetic runs.
fn template(dir: &Path) -> serde_json::Value {
    let out = latlab()
        .words("cyclic -t 1 -l 20 -i 200us -q --no-store")
        .words("--json t.json")
        .current_dir(dir)
        .output();
    out.assert_ok();
    serde_json::from_slice(&std::fs::read(dir.join("t.json")).unwrap()).unwrap()
}

/// Writes a run of `n` samples at 10 µs and `slow` at 500 µs, measured over `secs`.
fn synthetic(dir: &Path, t: &serde_json::Value, name: &str, n: u64, slow: u64, secs: f64) {
    let mut r = t.clone();
    r["id"] = format!("synthetic-{name}").into();
    r["duration_s"] = secs.into();
    let s = &mut r["series"][0];
    let mut buckets = vec![serde_json::json!([10_000u64, n - slow])];
    if slow > 0 {
        buckets.push(serde_json::json!([500_223u64, slow]));
    }
    s["histogram"]["buckets"] = buckets.into();
    s["count"] = n.into();
    s["max_ns"] = (if slow > 0 { 500_100u64 } else { 10_000 }).into();
    s["min_ns"] = 10_000u64.into();
    // The percentiles the histogram gives (a sample's rank decides its bucket).
    for (key, q) in [
        ("p50", 0.5),
        ("p90", 0.9),
        ("p99", 0.99),
        ("p99_9", 0.999),
        ("p99_99", 0.9999),
    ] {
        let rank = (q * n as f64).ceil() as u64;
        s["percentiles"][key] = (if rank <= n - slow { 10_000u64 } else { 500_223 }).into();
    }
    std::fs::write(dir.join(name), serde_json::to_vec(&r).unwrap()).unwrap();
}

fn gate(dir: &Path, args: &[&str]) -> (Option<i32>, String, String) {
    let out = latlab().arg("gate").args(args).current_dir(dir).output();
    (out.status.code(), out.stdout.clone(), out.stderr.clone())
}

#[test]
fn three_outcomes_with_their_exit_codes() {
    let dir = Dir::new();
    let d = dir.path();
    let t = template(d);
    for i in 1..=3 {
        synthetic(d, &t, &format!("ok{i}.json"), 100_000, 0, 100.0);
        synthetic(d, &t, &format!("bad{i}.json"), 100_000, 2000, 100.0);
        synthetic(d, &t, &format!("short{i}.json"), 1000, (i == 2) as u64, 1.0);
    }
    let (code, out, _) = gate(d, &["p99.9<100us", "ok1.json", "ok2.json", "ok3.json"]);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("verdict: MET"), "{out}");
    // The rule of three: 0 of 300000 gives an upper bound of about 1e-5.
    assert!(out.contains("[0, 9.986e-06]"), "{out}");
    let (code, out, err) = gate(d, &["p99<100us", "bad1.json", "bad2.json", "bad3.json"]);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("verdict: VIOLATED") && err.contains("violated"),
        "{out}"
    );
    let (code, out, err) = gate(
        d,
        &["p99.9<100us", "short1.json", "short2.json", "short3.json"],
    );
    assert_eq!(code, Some(4), "{out}");
    assert!(
        out.contains("UNDECIDED") && err.contains("undecided"),
        "{out}"
    );
    // Three runs: the time is per run, at the runs' rate, and more runs are an option.
    assert!(
        out.contains("more samples") && out.contains("s more per run at the runs' "),
        "{out}"
    );
    assert!(!out.contains("this run's"), "{out}");
    // The rate form counts samples above the threshold.
    let (code, out, _) = gate(d, &["rate(>200us)<0.05", "bad1.json", "bad2.json"]);
    assert_eq!(code, Some(0), "{out}");
    let (code, out, _) = gate(
        d,
        &["--json", "rate(>200us)<1e-3", "bad1.json", "bad2.json"],
    );
    assert_eq!(code, Some(1));
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["verdict"], "violated");
    assert_eq!(v["judgement"]["m"], serde_json::json!([4000, 4000]));
    // Throughput is not a latency: refused, naming the file.
    let mut tp: serde_json::Value =
        serde_json::from_slice(&std::fs::read(d.join("ok1.json")).unwrap()).unwrap();
    tp["series"][0]["unit"] = "kbit/s".into();
    std::fs::write(d.join("tp.json"), serde_json::to_vec(&tp).unwrap()).unwrap();
    let (code, _, err) = gate(d, &["p50<1ms", "tp.json", "ok2.json"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("tp.json") && err.contains("not latencies"),
        "{err}"
    );
}

#[test]
fn one_run_is_no_verdict_unless_independence_is_assumed() {
    let dir = Dir::new();
    let d = dir.path();
    let t = template(d);
    synthetic(d, &t, "one.json", 100_000, 0, 100.0);
    let (code, out, _) = gate(d, &["p99.9<100us", "one.json"]);
    assert_eq!(code, Some(4), "{out}");
    assert!(out.contains("its outcome (met) is not a verdict"), "{out}");
    let (code, out, _) = gate(
        d,
        &["p99.9<100us", "one.json", "--assume-independent-samples"],
    );
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("ASSUMING independent samples"), "{out}");
}

#[test]
fn stored_runs_are_gated_by_id() {
    let dir = Dir::new();
    let store = format!("sqlite:{}", dir.join("s.db").display());
    let mut ids = Vec::new();
    for _ in 0..2 {
        let out = latlab()
            .args([
                "cyclic", "-t", "1", "-l", "50", "-i", "200us", "-q", "--store", &store,
            ])
            .output();
        let err = &out.stderr;
        let line = err.lines().find(|l| l.contains(" stored in ")).unwrap();
        ids.push(format!("run:{}", line.split_whitespace().nth(2).unwrap()));
    }
    // Every sample is under an hour: met, whatever this VM does.
    let (code, out, err) = gate(dir.path(), &["p50<1h", &ids[0], &ids[1], "--store", &store]);
    assert!(code == Some(0) || code == Some(4), "{out}{err}");
    assert!(out.contains("samples: 100 "), "{out}");
    let (code, _, err) = gate(dir.path(), &["p50<1h", "run:nosuch", "--store", &store]);
    assert_eq!(code, Some(2), "{err}");
}

#[test]
fn planner_and_bad_requirements() {
    let dir = Dir::new();
    let (code, out, _) = gate(dir.path(), &["--plan-for", "p99.99<50us", "--rate", "1000"]);
    assert_eq!(code, Some(0), "{out}");
    // ln(0.05) / ln(1 - 1e-4) = 29955.8 samples: 30 s at 1 kHz.
    assert!(out.contains("at least 29956 samples (30s)"), "{out}");
    for (args, want) in [
        (&["p99.9", "x.json"][..], "REQUIREMENT"),
        (
            &["p99.9<1us", "x.json", "--confidence", "95"],
            "--confidence",
        ),
        (&["--plan-for", "p99<1us"], "--rate"),
        (&["p99<1us"], "at least one run"),
        (&["p99<1us", "missing.json"], "missing.json"),
    ] {
        let (code, _, err) = gate(dir.path(), args);
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
}

/// The run is the unit: the same run named twice (as a file, its copy or its id) is refused,
/// not counted as two replicates (which would turn "undecided" into "met").
#[test]
fn the_same_run_twice_is_refused() {
    let dir = Dir::new();
    let out = latlab()
        .words("cyclic -l 50 -i 200us -q --no-store --json r.json")
        .current_dir(dir.path())
        .output();
    out.assert_ok();
    std::fs::copy(dir.join("r.json"), dir.join("copy.json")).unwrap();
    for args in [
        &["gate", "p99.9<1s", "r.json", "r.json"][..],
        &["gate", "p99.9<1s", "r.json", "copy.json"][..],
        &["compare", "a=r.json,copy.json", "b=r.json"][..],
    ] {
        let out = latlab().args(args).current_dir(dir.path()).output();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(out.stderr.contains("are the same run"), "{args:?}");
    }
}

/// `max<T`: met only when every run's exact max is below T, violated when any is at or above
/// it, the single-run rule as for pQ; several requirements in one go, each a JUnit testcase
/// that validates against the JUnit schema; `--bisect` maps the outcomes to 0/1/125.
#[test]
fn max_requirements_junit_and_bisect() {
    let dir = Dir::new();
    let d = dir.path();
    let t = template(d);
    synthetic(d, &t, "a.json", 100_000, 0, 100.0);
    synthetic(d, &t, "b.json", 100_000, 0, 100.0);
    synthetic(d, &t, "c.json", 100_000, 3, 100.0);
    // The max of a and b is 10 µs, of c 500.1 µs.
    let (code, out, _) = gate(d, &["max<100us", "a.json", "b.json"]);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("verdict: MET"), "{out}");
    let (code, out, _) = gate(d, &["max<100us", "a.json", "c.json"]);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("c.json (500.1 us)"), "{out}");
    let (code, out, _) = gate(d, &["max<500.1us", "a.json", "c.json"]);
    assert_eq!(code, Some(1), "a max at the limit is not below it: {out}");
    let (code, out, _) = gate(d, &["max<1ms", "a.json"]);
    assert_eq!(code, Some(4), "one run is no verdict: {out}");
    assert!(out.contains("its outcome (met) is not a verdict"), "{out}");
    let (code, _, _) = gate(d, &["max<1ms", "a.json", "--assume-independent-samples"]);
    assert_eq!(code, Some(0));
    // The old refusal names the forms now, max among them.
    let (code, _, err) = gate(d, &["min<1ms", "a.json"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("max<TIME"), "{err}");

    // Several requirements, a JUnit testcase each.
    let (code, out, _) = gate(
        d,
        &[
            "p99<100us,max<100us,p99.99<100us",
            "a.json",
            "c.json",
            "--junit",
            "gate.xml",
        ],
    );
    assert_eq!(code, Some(1), "max<100us is violated: {out}");
    let xml = std::fs::read_to_string(d.join("gate.xml")).unwrap();
    assert_eq!(xml.matches("<testcase ").count(), 3, "{xml}");
    assert!(
        xml.contains("name=\"max&lt;100us\"") && xml.contains("<failure"),
        "{xml}"
    );
    let xsd = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/junit/junit.xsd");
    match std::process::Command::new("xmllint")
        .args(["--noout", "--schema"])
        .arg(&xsd)
        .arg(d.join("gate.xml"))
        .output()
    {
        Ok(v) => assert!(
            v.status.success(),
            "gate.xml does not validate:\n{}\n{xml}",
            String::from_utf8_lossy(&v.stderr)
        ),
        Err(e) => crate::util::skip(
            "max_requirements_junit_and_bisect (JUnit schema)",
            &format!("xmllint (libxml2-utils) not installed: {e}"),
        ),
    }

    // A JUnit file that cannot be written is bad usage naming the flag, before any judging.
    let (code, _, err) = gate(d, &["max<100us", "a.json", "b.json", "--junit", "."]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--junit"), "{err}");

    // --bisect: met 0, violated 1, undecided 125, bad usage 128.
    for (args, want) in [
        (vec!["max<100us", "a.json", "b.json"], 0),
        (vec!["max<100us", "a.json", "c.json"], 1),
        (vec!["max<100us", "a.json"], 125),
        (vec!["min<100us", "a.json", "b.json"], 128),
        (vec!["max<100us", "missing.json"], 128),
    ] {
        let mut a = args.clone();
        a.push("--bisect");
        let (code, _, err) = gate(d, &a);
        assert_eq!(code, Some(want), "{args:?}: {err}");
    }
}

/// A run imported from pmqtest holds 3798 samples but no histogram: a pQ requirement says so
/// (not "no samples"), max<T judges it on its exact max, compare --metric max compares it.
#[test]
fn runs_without_a_histogram_are_gated_on_their_max() {
    let dir = Dir::new();
    let d = dir.path();
    let store = format!("sqlite:{}", d.join("s.db").display());
    for (i, max) in [12u64, 15, 11, 14].iter().enumerate() {
        let text = format!(
            r#"{{"start_time":"Sun, 22 Nov 2026 15:4{i}:00 +0000","end_time":"Sun, 22 Nov 2026 15:4{i}:04 +0000",
               "sysinfo":{{"release":"6.1","nodename":"h"}},"thread":{{
            "0":{{"sender":{{"cpu":0,"priority":79,"samples":3798,"interval":1000}},
                 "receiver":{{"cpu":1,"priority":80,"timeoutcount":0,"min":3,"avg":4.5,"max":{max}}}}}}}}}"#
        );
        let f = d.join(format!("p{i}.json"));
        std::fs::write(&f, text).unwrap();
        let tag = if i < 2 { "side=a" } else { "side=b" };
        let out = latlab()
            .args([
                "runs", "import", "--from", "pmqtest", "--store", &store, "--tag", tag,
            ])
            .arg(&f)
            .output();
        out.assert_ok();
        let o = &out.stdout;
        // Dated by pmqtest's own start time.
        assert!(
            o.contains(&format!("imported run 20261122T154{i}00Z-")),
            "{o}"
        );
    }
    let (code, _, err) = gate(d, &["p99<100us", "tag:side=a", "--store", &store]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("hold 3798 samples but no histogram") && err.contains("max<TIME"),
        "{err}"
    );
    let (code, out, _) = gate(d, &["max<20us", "tag:side=a", "--store", &store]);
    assert_eq!(code, Some(0), "{out}");
    let (code, out, _) = gate(d, &["max<13us", "tag:side=a", "--store", &store]);
    assert_eq!(code, Some(1), "{out}");
    // compare: the distribution is not there; the exact per-run figures are.
    let out = latlab()
        .args(["compare", "--store", &store, "tag:side=a", "tag:side=b"])
        .output();
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stderr.contains("no histogram"));
}

#[test]
fn a_result_whose_figures_contradict_each_other_is_refused_not_judged() {
    let dir = Dir::new();
    let d = dir.path();
    let t = template(d);
    // A count its histogram does not hold (one bucket of 2^63), a bucket far above the exact
    // maximum, a minimum above the maximum: each exit 2 naming the file and what is wrong.
    type Edit<'a> = &'a dyn Fn(&mut serde_json::Value);
    let edits: [(&str, Edit, &str); 3] = [
        (
            "huge.json",
            &|s| s["histogram"]["buckets"] = serde_json::json!([[70_000u64, 1u64 << 63]]),
            "contradicts its histogram",
        ),
        (
            "above.json",
            &|s| s["histogram"]["buckets"] = serde_json::json!([[10_000_000_000u64, 100_000u64]]),
            "above its maximum",
        ),
        (
            "minmax.json",
            &|s| s["min_ns"] = 1_000_000u64.into(),
            "exceeds its maximum",
        ),
    ];
    for (name, edit, says) in edits {
        synthetic(d, &t, name, 100_000, 0, 100.0);
        let mut r: serde_json::Value =
            serde_json::from_slice(&std::fs::read(d.join(name)).unwrap()).unwrap();
        edit(&mut r["series"][0]);
        std::fs::write(d.join(name), serde_json::to_vec(&r).unwrap()).unwrap();
        for req in ["p99<1ms", "max<20ms"] {
            let (code, out, err) = gate(d, &[req, name, "--assume-independent-samples"]);
            assert_eq!(code, Some(2), "{name} {req}: {out}{err}");
            assert!(
                err.contains(name) && err.contains(says),
                "{name} {req}: {err}"
            );
        }
    }
}

/// A selector whose every run is disturbed leaves nothing to judge: gate says so (exit 2), as
/// compare does, instead of judging no runs (max< was "met" on none, quantiles panicked).
#[test]
fn a_selection_of_disturbed_runs_only_is_not_judged() {
    let dir = Dir::new();
    let mut r = template(dir.path());
    r["ground"] =
        serde_json::json!([{"what": "clocksource", "from": "tsc", "to": "kvm-clock", "at_s": 0.5}]);
    let bundle = serde_json::json!({"format": "latlab.bundle/1", "runs": [{"run": r, "tags": {"set": "d"}}]});
    std::fs::write(dir.join("d.json"), bundle.to_string()).unwrap();
    let store = format!("sqlite:{}", dir.join("s.db").display());
    latlab()
        .args(["runs", "import", "--store", &store])
        .arg(dir.join("d.json"))
        .output()
        .assert_ok();
    for req in ["max<10s", "p99<10s", "rate(>1ms)<0.5"] {
        let out = latlab()
            .args(["gate", req, "tag:set=d", "--store", &store])
            .output();
        out.assert_exit(2);
        assert!(
            out.stderr.contains("all its 1 run(s) are disturbed"),
            "{out}"
        );
    }
    let out = latlab()
        .args(["compare", "tag:set=d", "tag:set=d", "--store", &store])
        .output();
    out.assert_exit(2);
}
