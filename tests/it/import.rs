//! `latlab runs import --from TOOL`: real output of rt-tests (cyclictest, oslat, hackbench)
//! and iperf3, produced here, becomes stored runs that `gate` and `compare` read.

use crate::util::{exclusive, have, latlab, run_tool, skip, Dir};
use std::path::Path;
use std::process::Command;

/// Imports `file` from `tool` into `store`; returns the run ids printed.
fn import(store: &str, tool: &str, file: &Path) -> Vec<String> {
    let out = latlab()
        .args(["runs", "import", "--from", tool, "--store", store])
        .arg(file)
        .words("--tag suite=it")
        .assert_ok();
    out.stdout
        .lines()
        .filter_map(|l| l.strip_prefix("imported run "))
        .map(|l| l.split_whitespace().next().unwrap().to_string())
        .collect()
}

#[test]
fn real_rt_tests_and_iperf3_output_become_runs() {
    let missing: Vec<&str> = ["cyclictest", "oslat", "hackbench", "iperf3"]
        .into_iter()
        .filter(|t| !have(t))
        .collect();
    if !missing.is_empty() {
        skip(
            "import::real_rt_tests_and_iperf3_output_become_runs",
            &format!(
                "not installed: {} (scripts/test.sh installs rt-tests and iperf3)",
                missing.join(", ")
            ),
        );
        return;
    }
    let _g = exclusive();
    let dir = Dir::new();
    let d = dir.path();
    let store = format!("sqlite:{}", d.join("s.db").display());
    // cyclictest, with a histogram (-h) so the samples are kept.
    let ct = d.join("ct.json");
    run_tool(
        Command::new("cyclictest")
            .args(["-D", "2", "-q", "-t", "1", "-h", "400"])
            .arg(format!("--json={}", ct.display())),
    );
    let ids = import(&store, "cyclictest", &ct);
    assert_eq!(ids.len(), 1);
    // The same file again is the same run, found present: not a copy counted twice.
    let again = latlab()
        .args(["runs", "import", "--from", "cyclictest", "--store", &store])
        .arg(&ct)
        .assert_ok();
    assert!(
        again
            .stdout
            .contains(&format!("already present: run {}", ids[0])),
        "{again}"
    );
    assert!(!again.stdout.contains("not added"), "{again}");
    // With a tag it lacks: said, not silently dropped.
    let tagged = latlab()
        .args(["runs", "import", "--from", "cyclictest", "--store", &store])
        .args(["--tag", "board=rev2"])
        .arg(&ct)
        .assert_ok();
    assert!(tagged.stdout.contains("board=rev2 not added"), "{tagged}");
    let g = latlab()
        .args([
            "gate",
            "p50<1h",
            "--assume-independent-samples",
            "--store",
            &store,
        ])
        .arg(format!("run:{}", ids[0]))
        .output();
    let text = &g.stdout;
    assert_eq!(g.status.code(), Some(0), "{text}");
    assert!(!text.contains("samples: 0 "), "{text}");
    let c = latlab()
        .args(["compare", "--bootstrap", "100", "--store", &store])
        .arg(format!("a=run:{}", ids[0]))
        .arg(format!("b=run:{}", ids[0]))
        .output();
    c.assert_ok();
    let show = latlab()
        .args(["runs", "show", "--json", &ids[0], "--store", &store])
        .assert_ok();
    let v: serde_json::Value = serde_json::from_str(&show.stdout).unwrap();
    assert_eq!(v["run"]["kind"], "cyclictest");
    assert_eq!(v["tags"]["tool"], "cyclictest");
    assert_eq!(v["tags"]["suite"], "it");
    let s = &v["run"]["series"][0];
    let in_hist: u64 = s["histogram"]["buckets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b[1].as_u64().unwrap())
        .sum();
    assert_eq!(in_hist, s["count"].as_u64().unwrap());
    assert!(in_hist > 0);
    // oslat.
    let os = d.join("os.json");
    run_tool(Command::new("oslat").args(["-D", "2", "--json"]).arg(&os));
    assert_eq!(import(&store, "oslat", &os).len(), 1);
    // hackbench: two runs, one per Time: line.
    let mut text = String::new();
    for _ in 0..2 {
        let out = run_tool(Command::new("hackbench").args(["-l", "20", "-g", "2"]));
        text.push_str(&String::from_utf8_lossy(&out.stdout));
    }
    let hb = d.join("hb.txt");
    std::fs::write(&hb, text).unwrap();
    assert_eq!(import(&store, "hackbench", &hb).len(), 2);
    // Its text holds no start time: dated by the file, so the same file again is found
    // present, not stored twice.
    let again = latlab()
        .args(["runs", "import", "--from", "hackbench", "--store", &store])
        .arg(&hb)
        .assert_ok();
    assert_eq!(
        again.stdout.matches("already present: run ").count(),
        2,
        "{again}"
    );
    // iperf3 on loopback, one second.
    let port = (5300 + std::process::id() % 1000).to_string();
    let mut server = Command::new("iperf3")
        .args(["-s", "-1", "-p", &port])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut out = None;
    for _ in 0..25 {
        std::thread::sleep(std::time::Duration::from_millis(200));
        let o = Command::new("iperf3")
            .args(["-c", "127.0.0.1", "-p", &port, "-t", "1", "-J"])
            .output()
            .unwrap();
        if o.status.success() {
            out = Some(o);
            break;
        }
    }
    let _ = server.kill();
    let _ = server.wait();
    let out = out.expect("iperf3 client never connected");
    let ip = d.join("ip.json");
    std::fs::write(&ip, &out.stdout).unwrap();
    let ids = import(&store, "iperf3", &ip);
    let show = latlab()
        .args(["runs", "show", "--json", &ids[0], "--store", &store])
        .assert_ok();
    let v: serde_json::Value = serde_json::from_str(&show.stdout).unwrap();
    assert_eq!(v["run"]["series"][0]["unit"], "kbit/s");
    assert!(v["run"]["series"][0]["max_ns"].as_u64().unwrap() > 0);
    let list = latlab()
        .args(["runs", "list", "--store", &store, "--tag", "suite=it"])
        .assert_ok();
    assert_eq!(list.stdout.lines().count(), 1 + 5);
    // Not the tool's output: exit 2 naming the file.
    let bad = latlab()
        .args(["runs", "import", "--from", "iperf3", "--store", &store])
        .arg(&hb)
        .output();
    assert_eq!(bad.status.code(), Some(2));
    assert!(bad.stderr.contains("hb.txt"));
}

#[test]
fn runs_list_validates_kind_and_aligns_columns() {
    let dir = Dir::new();
    let store = format!("sqlite:{}", dir.join("s.db").display());
    let bad = latlab()
        .args(["runs", "list", "--kind", "cyclc", "--store", &store])
        .output();
    assert_eq!(bad.status.code(), Some(2));
    let err = &bad.stderr;
    assert!(
        err.contains("--kind") && err.contains("cyclictest"),
        "{err}"
    );
    let hb = dir.join("hb.txt");
    std::fs::write(&hb, "Time: 0.5\nTime: 0.25\n").unwrap();
    assert_eq!(import(&store, "hackbench", &hb).len(), 2);
    let list = latlab()
        .args(["runs", "list", "--kind", "hackbench", "--store", &store])
        .output();
    let text = &list.stdout;
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "{text}");
    // Left-aligned: every column starts where its header does.
    let at = lines[0].find("kind").unwrap();
    assert!(
        lines[1..].iter().all(|l| l[at..].starts_with("hackbench")),
        "{text}"
    );
}

#[test]
fn cyclic_writes_cyclictest_json_that_imports_back() {
    let dir = Dir::new();
    let d = dir.path();
    let store = format!("sqlite:{}", d.join("s.db").display());
    let f = d.join("rt.json");
    latlab()
        .words("cyclic -t 2 -l 40 -i 200us -q --no-store")
        .arg("--json")
        .arg(&f)
        .words("--json-format rt-tests")
        .assert_ok();
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&f).unwrap()).unwrap();
    assert_eq!(v["num_threads"], 2);
    for t in ["0", "1"] {
        assert_eq!(v["thread"][t]["cycles"], 40);
        let h: u64 = v["thread"][t]["histogram"]
            .as_object()
            .unwrap()
            .values()
            .map(|c| c.as_u64().unwrap())
            .sum();
        assert_eq!(h, 40);
    }
    // The same top-level keys as real cyclictest output.
    let keys = |v: &serde_json::Value| {
        let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
        k.sort();
        k
    };
    if have("cyclictest") {
        let ct = d.join("ct.json");
        run_tool(
            Command::new("cyclictest")
                .args(["-l", "20", "-q", "-t", "1", "-h", "100"])
                .arg(format!("--json={}", ct.display())),
        );
        let real: serde_json::Value = serde_json::from_slice(&std::fs::read(&ct).unwrap()).unwrap();
        assert_eq!(keys(&v), keys(&real));
        assert_eq!(
            keys(&v["thread"]["0"]),
            keys(&real["thread"]["0"]),
            "per-thread keys"
        );
    } else {
        skip(
            "import::cyclic_writes_cyclictest_json (key check)",
            "cyclictest not installed",
        );
    }
    let ids = import(&store, "cyclictest", &f);
    let show = latlab()
        .args(["runs", "show", "--json", &ids[0], "--store", &store])
        .assert_ok();
    let s: serde_json::Value = serde_json::from_str(&show.stdout).unwrap();
    assert_eq!(s["run"]["series"][1]["count"], 40);
    let bad = latlab()
        .words("cyclic -l 5 --no-store --json - --json-format rt-tests")
        .output();
    assert_eq!(bad.status.code(), Some(2));
}

/// rtla cannot run on this kernel (no timerlat/osnoise tracers): its `hist` tables are imported
/// from the examples in the kernel's documentation, and `gate`, `compare` and `runs` read them.
#[test]
fn rtla_hist_tables_from_the_documentation_become_runs() {
    let dir = Dir::new();
    let store = format!("sqlite:{}", dir.join("r.db").display());
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/rtla");
    let timerlat = import(&store, "rtla-hist", &fixtures.join("timerlat-hist.txt"));
    let osnoise = import(&store, "rtla-hist", &fixtures.join("osnoise-hist.txt"));
    assert_eq!((timerlat.len(), osnoise.len()), (1, 1));
    // Thread latency on CPU 1 reached 58 us in 600 002 samples: p99.9 < 100 us is met on the
    // pooled samples (one run: only with the independence assumption named).
    let out = latlab()
        .args(["gate", "p99.9<100us", &timerlat[0], "--series", "Thr-001"])
        .args(["--assume-independent-samples", "--store", &store])
        .output();
    let text = &out.stdout;
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("600002"), "{text}");
    // IRQ against thread latency of the same run, as two sets.
    let out = latlab()
        .args([
            "compare",
            &format!("irq=run:{}", timerlat[0]),
            &format!("thr=run:{}", timerlat[0]),
            "--series",
            "IRQ-000",
            "--store",
            &store,
            "--bootstrap",
            "200",
        ])
        .assert_ok();
    assert!(out.stdout.contains("600002"));
    let shown = latlab()
        .args(["runs", "show", &timerlat[0], "--store", &store])
        .assert_ok();
    let shown = shown.stdout.clone();
    let row = shown
        .lines()
        .find(|l| l.starts_with("Thr-001 "))
        .expect(&shown);
    assert_eq!(row.split_whitespace().nth(3), Some("600002"), "{shown}");
    let out = latlab()
        .args(["runs", "list", "--kind", "rtla-hist", "--store", &store])
        .assert_ok();
    let listed = out.stdout.clone();
    assert_eq!(
        listed.lines().filter(|l| l.contains(" rtla-hist ")).count(),
        2,
        "{listed}"
    );
    // Not an rtla table: exit 2 naming the file.
    let bad = dir.join("bad.txt");
    std::fs::write(&bad, "Index CPU-000\n0 1 2\n").unwrap();
    let out = latlab()
        .args(["runs", "import", "--from", "rtla-hist", "--store", &store])
        .arg(&bad)
        .output();
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stderr.contains("bad.txt: line 2"));
}

/// `rtla timerlat top -q`'s summary from the RT guest joins the store: per CPU an IRQ and a
/// thread series with rtla's exact count, min, avg and max (no histogram, said).
#[test]
fn rtla_timerlat_top_summaries_become_runs_a_gate_reads() {
    let dir = Dir::new();
    let store = format!("sqlite:{}", dir.join("r.db").display());
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/rtla/timerlat-top.txt");
    let ids = import(&store, "rtla-top", &file);
    assert_eq!(ids.len(), 1);
    let shown = latlab()
        .args(["runs", "show", &ids[0], "--store", &store])
        .assert_ok();
    let row = shown
        .stdout
        .lines()
        .find(|l| l.starts_with("Thr-000 "))
        .unwrap_or_else(|| panic!("{}", shown.stdout));
    assert!(row.contains("5781"), "{row}");
    // rtla's exact max (7885 us) is what a gate on the max reads (one run: undecided).
    let out = latlab()
        .args([
            "gate", "max<5ms", &ids[0], "--series", "Thr-000", "--store", &store,
        ])
        .output();
    assert_eq!(out.status.code(), Some(4), "{}", out.stdout);
    assert!(out.stdout.contains("7885 us"), "{}", out.stdout);
    // The hist table is not a top screen: exit 2 naming the file.
    let hist = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/rtla/timerlat-hist.txt");
    let out = latlab()
        .args(["runs", "import", "--from", "rtla-top", "--store", &store])
        .arg(&hist)
        .output();
    assert_eq!(out.status.code(), Some(2), "{}", out.stderr);
    assert!(out.stderr.contains("timerlat-hist.txt"), "{}", out.stderr);
}

/// A result file and a one-run bundle stand for each other: `runs import` takes a `--json`
/// result, and `compare`, `gate` and `report` read a bundle of one run (what `runs export ID`
/// writes, and the file a run the store refused is kept in).
#[test]
fn a_result_file_and_a_one_run_bundle_are_interchangeable() {
    let dir = Dir::new();
    let store = format!("sqlite:{}", dir.join("s.db").display());
    latlab()
        .words("cyclic -l 300 -i 200us -q --no-store --json r.json")
        .current_dir(dir.path())
        .assert_ok();
    let out = latlab()
        .args(["runs", "import", "--store", &store, "r.json"])
        .current_dir(dir.path())
        .assert_ok();
    assert!(out.stdout.contains("imported 1 new run(s)"), "{out}");
    let id = crate::util::read_json(&dir.join("r.json"))["id"]
        .as_str()
        .unwrap()
        .to_string();
    let bundle = latlab()
        .args(["runs", "export", &id, "--store", &store])
        .assert_ok()
        .stdout
        .clone();
    std::fs::write(dir.join("one.json"), bundle).unwrap();
    for args in [
        &["gate", "max<1h", "one.json", "--assume-independent-samples"][..],
        &["compare", "r.json", "one.json"][..],
        &["report", "one.json", "-o", "one.html"][..],
    ] {
        latlab().args(args).current_dir(dir.path()).assert_ok();
    }
    let out = latlab()
        .args(["runs", "import", "--store", &store, "/etc/hostname"])
        .output();
    out.assert_exit(2);
    assert!(out.stderr.contains("neither a latlab bundle"), "{out}");
    // An rt-tests file without --from is named for what it is, with the command to use.
    std::fs::write(
        dir.join("ct.json"),
        r#"{"file_version": 1, "cmdline:": "/usr/bin/cyclictest -q --json=ct.json",
            "thread": {"0": {"histogram": {}, "cycles": 3, "min": 1, "max": 3, "avg": 2.0}}}"#,
    )
    .unwrap();
    let out = latlab()
        .args(["runs", "import", "--store", &store, "ct.json"])
        .current_dir(dir.path())
        .output();
    out.assert_exit(2);
    assert!(
        out.stderr
            .contains("cyclictest's --json output, not a latlab file: import it with `latlab runs import --from cyclictest ct.json`"),
        "{out}"
    );
}
