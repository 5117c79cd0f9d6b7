//! `latlab compare` (tail-aware mode): reproducibility, formats, JSON results as input, bad
//! input.

use crate::util::{latlab, read_json, Dir, Output};
use std::path::Path;

fn write_values(dir: &Path, name: &str, v: impl Iterator<Item = f64>) {
    let text: String = v.map(|x| format!("{x}\n")).collect();
    std::fs::write(dir.join(name), text).unwrap();
}

fn compare(dir: &Path, args: &[&str]) -> Output {
    latlab().arg("compare").args(args).current_dir(dir).output()
}

#[test]
fn same_seed_same_output_and_a_shift_is_found() {
    let dir = Dir::new();
    write_values(
        dir.path(),
        "base",
        (0..3000).map(|i| ((i * 7919) % 1000) as f64),
    );
    write_values(
        dir.path(),
        "slow",
        (0..3000).map(|i| ((i * 104_729) % 1000) as f64 + 60.0),
    );
    let a = compare(dir.path(), &["base", "slow", "--seed", "9"]);
    let b = compare(dir.path(), &["base", "slow", "--seed", "9"]);
    a.assert_ok();
    assert_eq!(a.stdout, b.stdout, "same seed, different output");
    let text = &a.stdout;
    assert!(text.contains("seed 9"));
    let p50 = text
        .lines()
        .find(|l| l.trim_start().starts_with("slow") && l.contains("p50"))
        .unwrap();
    assert!(p50.ends_with("worse"), "{p50}");
    // p99.9 from 3000 samples is flagged, not compared.
    assert!(text.contains("p99.9 not estimable from fewer than 10 000 values, neither shown nor compared: base (3000), slow (3000)"), "{text}");
    let c = compare(dir.path(), &["base", "slow", "--seed", "10"]);
    assert!(c.stdout.contains("seed 10"));
}

#[test]
fn markdown_and_json_formats() {
    let dir = Dir::new();
    write_values(dir.path(), "a", (0..50).map(|i| i as f64));
    write_values(dir.path(), "b", (0..50).map(|i| i as f64 + 0.5));
    let md = compare(dir.path(), &["a", "b", "--format", "markdown"]);
    let md = &md.stdout;
    assert!(
        md.contains("| set | N |") && md.contains("|---|---:|"),
        "{md}"
    );
    let js = compare(dir.path(), &["a", "b", "--format", "json"]);
    let v: serde_json::Value = serde_json::from_str(&js.stdout).unwrap();
    assert_eq!(v["sets"][1]["n"], 50);
    assert_eq!(v["comparisons"][0]["baseline"], "a");
    let metrics = v["comparisons"][0]["metrics"].as_array().unwrap();
    assert!(metrics.iter().any(|m| m["metric"] == "distribution"));
}

#[test]
fn latlab_json_results_are_sets() {
    let dir = Dir::new();
    for name in [
        "r1.json", "r2.json", "r3.json", "r4.json", "r5.json", "r6.json",
    ] {
        let out = latlab()
            .args([
                "cyclic", "-t", "2", "-l", "50", "-i", "100us", "-q", "--json", name,
            ])
            .current_dir(dir.path())
            .output();
        out.assert_ok();
    }
    let out = compare(
        dir.path(),
        &["base=r1.json", "new=r2.json", "--series", "T1"],
    );
    let text = &out.stdout;
    out.assert_ok();
    assert!(text.contains("values in us"));
    let n_line = text.lines().find(|l| l.starts_with("base ")).unwrap();
    assert!(n_line.split_whitespace().nth(1) == Some("50"), "{n_line}");
    // One figure per run.
    let out = compare(
        dir.path(),
        &[
            "base=r1.json,r2.json,r3.json",
            "new=r4.json,r5.json,r6.json",
            "--metric",
            "max",
        ],
    );
    out.assert_ok();
    // Three runs a side: per metric over the runs, the verdict sentence leading with max.
    let text = &out.stdout;
    assert!(text.contains("unit of replication: the run"), "{text}");
    assert!(text.contains("verdict: new vs base:\n  max "), "{text}");
    assert!(text.contains("(3+3 runs"), "{text}");
    // One run a side: one figure per run, as ministat sees them (too few to compare).
    let out = compare(
        dir.path(),
        &["base=r1.json", "new=r4.json", "--metric", "max"],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stderr.contains("1 value(s)"));
    let out = compare(dir.path(), &["r1.json", "r2.json", "--series", "T9"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stderr.contains("no series T9"));
}

#[test]
fn bad_input_exits_2_naming_file_and_line() {
    let dir = Dir::new();
    let d = dir.path();
    std::fs::write(d.join("ok"), "1\n2\n3\n4\n").unwrap();
    std::fs::write(d.join("word"), "1\n2\nthree\n4\n").unwrap();
    std::fs::write(d.join("empty"), "").unwrap();
    std::fs::write(d.join("single"), "42\n").unwrap();
    std::fs::write(d.join("nan"), "1\n2\nNaN\n4\n").unwrap();
    std::fs::write(d.join("inf"), "1\n2\ninf\n4\n").unwrap();
    std::fs::write(d.join("long"), format!("1\n{}\n3\n", "9".repeat(10_000))).unwrap();
    std::fs::write(
        d.join("bin"),
        b"\x00\x01\x02\n\xff\xfe\x80garbage\n\x7fELF\n",
    )
    .unwrap();
    let cases: &[(&[&str], &str)] = &[
        (&["ok", "word"], "line 3 in word"),
        (&["ok", "empty"], "empty"),
        (&["ok", "single"], "single"),
        (&["ok", "nan"], "line 3 in nan"),
        (&["ok", "inf"], "line 3 in inf"),
        (&["ok", "long"], "line 2 in long"),
        (&["ok", "bin"], "bin"),
        (&["ok", "missing"], "missing"),
        (&["ok", "ok", "-c", "100"], "--confidence"),
        (&["ok", "ok", "-c", "7"], "--confidence"),
        (&["ok"], "at least two data sets"),
        (&["ok", "ok"], "two sets are labelled 'ok'"),
        (&["ok", "ok", "-C", "0"], "--column"),
    ];
    for (args, want) in cases {
        let out = compare(d, args);
        let err = &out.stderr;
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: stderr lacks {want}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}

#[test]
fn values_across_f64s_range_never_panic() {
    let dir = Dir::new();
    let d = dir.path();
    std::fs::write(d.join("small"), "1\n2\n3\n4\n5\n").unwrap();
    std::fs::write(d.join("e77"), "1e77\n2e77\n3e77\n4e77\n").unwrap();
    std::fs::write(d.join("huge"), "1e300\n-1e308\n1.7976931348623157e308\n5\n").unwrap();
    std::fs::write(d.join("tiny"), "4.9e-324\n1e-320\n0\n-4.9e-324\n").unwrap();
    for pair in [
        ["small", "e77"],
        ["small", "huge"],
        ["huge", "small"],
        ["e77", "huge"],
        ["tiny", "huge"],
    ] {
        for extra in [&[][..], &["--format", "json"][..], &["--ministat"][..]] {
            let out = compare(d, &[&pair[..], extra].concat());
            let err = &out.stderr;
            assert!(
                matches!(out.status.code(), Some(0 | 2)),
                "{pair:?} {extra:?}: {err}"
            );
            assert!(!err.contains("panicked"), "{pair:?} {extra:?}: {err}");
        }
    }
}

#[test]
fn file_names_that_are_not_utf8_open() {
    use std::os::unix::ffi::OsStrExt;
    let dir = Dir::new();
    let a = dir
        .path()
        .join(std::ffi::OsStr::from_bytes(b"base-\xff.txt"));
    let b = dir
        .path()
        .join(std::ffi::OsStr::from_bytes(b"new-\xfe.txt"));
    std::fs::write(&a, "1\n2\n3\n4\n5\n").unwrap();
    std::fs::write(&b, "2\n3\n4\n5\n6\n").unwrap();
    for sub in [
        &["compare"][..],
        &["ministat"][..],
        &["compare", "--ministat"][..],
    ] {
        let out = latlab().args(sub).arg(&a).arg(&b).output();
        assert!(out.status.success(), "{sub:?}: {}", &out.stderr);
        assert!(!out.stdout.is_empty());
    }
}

/// A copy of a latlab result whose every histogram bucket (and summary) is `k` times slower.
fn slowed(run: &serde_json::Value, k: f64) -> serde_json::Value {
    let mut r = run.clone();
    for s in r["series"].as_array_mut().unwrap() {
        for b in s["histogram"]["buckets"].as_array_mut().unwrap() {
            b[0] = ((b[0].as_u64().unwrap() as f64 * k) as u64).into();
        }
        for f in ["min_ns", "max_ns"] {
            if let Some(v) = s[f].as_u64() {
                s[f] = ((v as f64 * k) as u64).into();
            }
        }
        // Scaled buckets leave the HDR grid: the top one's range may now start above the
        // scaled maximum, which a result must not hold; the maximum follows it.
        let top = s["histogram"]["buckets"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|b| b[0].as_u64())
            .max()
            .unwrap_or(0);
        if let Some(m) = s["max_ns"].as_u64() {
            s["max_ns"] = m.max(top).into();
        }
    }
    r
}

#[test]
fn identical_runs_prove_nothing_and_a_real_shift_is_found() {
    let dir = Dir::new();
    let names: Vec<String> = (1..=6).map(|i| format!("c{i}.json")).collect();
    for name in &names {
        let out = latlab()
            .words("cyclic -t 1 -a 1 -i 1ms -D 1s -q")
            .args(["--no-store", "--json", name])
            .current_dir(dir.path())
            .output();
        out.assert_ok();
    }
    // One run a side, pairwise: figures shown, no difference proven.
    for i in 0..names.len() {
        for j in i + 1..names.len() {
            let args = [
                &names[i],
                &names[j],
                "--bootstrap",
                "200",
                "--format",
                "json",
            ];
            let out = compare(dir.path(), &args);
            out.assert_ok();
            let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
            let why = v["replication"].as_str().unwrap();
            assert!(why.contains("run-to-run variation is unknown"), "{why}");
            for m in v["comparisons"][0]["metrics"].as_array().unwrap() {
                let verdict = m["verdict"].as_str().unwrap();
                assert!(verdict != "better" && verdict != "worse", "{m}");
            }
        }
    }
    let out = compare(
        dir.path(),
        &[
            &names[0],
            &names[1],
            "--bootstrap",
            "200",
            "--assume-independent-samples",
        ],
    );
    assert!(out.stdout.contains("ASSUMING samples are independent"));
    // Three runs a side: per-run figures, the run as the unit.
    let out = compare(
        dir.path(),
        &["a=c1.json,c2.json,c3.json", "b=c4.json,c5.json,c6.json"],
    );
    let text = &out.stdout;
    assert!(text.contains("unit of replication: the run"), "{text}");
    let a = text.lines().find(|l| l.starts_with("a ")).unwrap();
    assert_eq!(a.split_whitespace().nth(2), Some("3"), "{text}");
    // The same runs made 3x slower on one side: found.
    for (i, name) in names.iter().enumerate() {
        let v: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dir.join(name)).unwrap()).unwrap();
        let s = serde_json::to_vec(&slowed(&v, 3.0)).unwrap();
        std::fs::write(dir.join(format!("s{}.json", i + 1)), s).unwrap();
    }
    let out = compare(
        dir.path(),
        &[
            "--format",
            "json",
            "a=c1.json,c2.json,c3.json,c4.json,c5.json,c6.json",
            "b=s1.json,s2.json,s3.json,s4.json,s5.json,s6.json",
        ],
    );
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let p50 = &v["comparisons"][0]["metrics"][0];
    assert_eq!(p50["metric"], "p50");
    assert_eq!(p50["verdict"], "worse", "{p50}");
}

#[test]
fn json_sets_use_the_exact_max() {
    let dir = Dir::new();
    let out = latlab()
        .words("cyclic -t 1 -l 200 -i 100us -q --no-store")
        .words("--json m.json")
        .current_dir(dir.path())
        .output();
    out.assert_ok();
    let run: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("m.json")).unwrap()).unwrap();
    let max_us = run["series"][0]["max_ns"].as_u64().unwrap() as f64 * 1e-3;
    let out = compare(
        dir.path(),
        &[
            "a=m.json",
            "b=m.json",
            "--format",
            "json",
            "--bootstrap",
            "100",
        ],
    );
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let got = v["sets"][0]["max"].as_f64().unwrap();
    assert!((got - max_us).abs() < 1e-9, "max {got} vs exact {max_us}");
    assert!(v["sets"][0]["p99_9"].as_f64().unwrap() <= got);
}

/// Runs `latlab` with `args` in `dir`, failing (instead of hanging the suite) if it has not
/// finished after two minutes.
fn bounded(dir: &Path, args: &[&str]) -> Output {
    latlab()
        .args(args)
        .current_dir(dir)
        .limit(std::time::Duration::from_secs(120))
        .output()
}

/// An hour at 10 kHz on two threads is 72 million samples: statistics whose degrees of freedom
/// follow the sample count must stay exact there (statrs' t quantile drifted past 1e5 and
/// never returned at 1.4e8, which hung `compare --assume-independent-samples`).
#[test]
fn hour_long_runs_compare_and_gate() {
    let dir = Dir::new();
    let out = latlab()
        .words("cyclic -t 2 -l 300 -i 100us -q")
        .words("--no-store --json m.json")
        .current_dir(dir.path())
        .output();
    out.assert_ok();
    let mut big = read_json(&dir.join("m.json"));
    big["duration_s"] = 3600.0.into();
    for s in big["series"].as_array_mut().unwrap() {
        let mut n = 0;
        for b in s["histogram"]["buckets"].as_array_mut().unwrap() {
            b[1] = (b[1].as_u64().unwrap() * 120_000).into();
            n += b[1].as_u64().unwrap();
        }
        s["count"] = n.into();
    }
    let slow = slowed(&big, 1.5);
    let mut again = big.clone();
    again["id"] = "another-hour".into();
    for (name, v) in [("a.json", &big), ("a2.json", &again), ("b.json", &slow)] {
        std::fs::write(dir.join(name), serde_json::to_vec(v).unwrap()).unwrap();
    }
    let out = bounded(
        dir.path(),
        &[
            "compare",
            "a.json",
            "b.json",
            "--assume-independent-samples",
            "--format",
            "json",
            "--bootstrap",
            "200",
        ],
    );
    out.assert_ok();
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let sets = &v["sets"];
    assert_eq!(sets[0]["n"].as_u64(), Some(72_000_000));
    let mean = v["comparisons"][0]["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["metric"] == "mean")
        .expect("a mean row")
        .clone();
    // Welch's interval is diff ± t(0.975, df) · se, and at 1.4e8 degrees of freedom t is the
    // normal 1.95996.
    let (sa, sb) = (
        sets[0]["stddev"].as_f64().unwrap(),
        sets[1]["stddev"].as_f64().unwrap(),
    );
    let se = ((sa * sa + sb * sb) / 72e6).sqrt();
    let half = (mean["ci"][1].as_f64().unwrap() - mean["ci"][0].as_f64().unwrap()) / 2.0;
    assert!(
        (half / se - 1.959964).abs() < 1e-3,
        "{mean}: half-width {half}, se {se}"
    );
    assert_eq!(mean["verdict"], "worse", "{mean}");
    // The gate judges two such runs.
    let out = bounded(dir.path(), &["gate", "p99.9<10s", "a.json", "a2.json"]);
    assert_eq!(out.status.code(), Some(0), "{}", &out.stdout);
}

/// A run named in two sets is said (the sets then look more alike than they are); the
/// comparison still runs.
#[test]
fn a_run_in_two_sets_is_said() {
    let dir = Dir::new();
    for name in ["r1.json", "r2.json", "r3.json"] {
        latlab()
            .words("cyclic -l 200 -i 200us -q --no-store --json")
            .arg(name)
            .current_dir(dir.path())
            .output()
            .assert_ok();
    }
    let out = latlab()
        .args(["compare", "a=r1.json,r2.json", "b=r1.json,r3.json"])
        .current_dir(dir.path())
        .output();
    out.assert_ok();
    assert!(out.stderr.contains("r1.json in both 'a' and 'b'"), "{out}");
    // Told by its id, whatever it is named: another path, a copy.
    std::fs::copy(dir.join("r1.json"), dir.join("copy.json")).unwrap();
    let out = latlab()
        .args(["compare", "a=r1.json,r2.json", "b=./copy.json,r3.json"])
        .current_dir(dir.path())
        .output();
    out.assert_ok();
    assert!(out.stderr.contains("r1.json in both 'a' and 'b'"), "{out}");
    let out = latlab()
        .args(["compare", "a=r1.json,r2.json", "b=r3.json,./r3.json"])
        .current_dir(dir.path())
        .output();
    assert!(out.stderr.contains("are the same run"), "{out}");
}

/// Sets of two different latlab measurements are said to be so (a wake-up latency against a
/// clock's cost); a cyclic run against an imported cyclictest run (the peer) is not.
#[test]
fn different_measurements_in_the_sets_are_said() {
    let dir = Dir::new();
    latlab()
        .words("cyclic -l 200 -i 200us -q --no-store --json c.json")
        .current_dir(dir.path())
        .output()
        .assert_ok();
    let mut v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("c.json")).unwrap()).unwrap();
    for (kind, file) in [("clocks", "k.json"), ("cyclictest", "p.json")] {
        v["kind"] = kind.into();
        v["id"] = format!("edited-{kind}").into();
        std::fs::write(dir.join(file), serde_json::to_vec(&v).unwrap()).unwrap();
    }
    let out = latlab()
        .args(["compare", "c.json", "k.json"])
        .current_dir(dir.path())
        .output();
    out.assert_ok();
    assert!(
        out.stderr
            .contains("different measurements (clocks, cyclic)"),
        "{out}"
    );
    let out = latlab()
        .args(["compare", "c.json", "p.json"])
        .current_dir(dir.path())
        .output();
    out.assert_ok();
    assert!(!out.stderr.contains("different measurements"), "{out}");
}

/// cyclictest's `-h` text output is not a file of values (its first column is the buckets'
/// numbers, the same in every such file): refused with what to do instead, exit 2.
#[test]
fn cyclictest_histogram_text_is_not_read_as_values() {
    let dir = Dir::new();
    let mut text = String::from("# /dev/cpu_dma_latency set to 0us\n# Histogram\n");
    for b in 0..100 {
        text.push_str(&format!("{b:06} {:06}\n", if b == 20 { 300 } else { 0 }));
    }
    text.push_str("# Total: 000000300\n# Min Latencies: 00020\n# Max Latencies: 00020\n");
    std::fs::write(dir.join("a.txt"), &text).unwrap();
    write_values(dir.path(), "b.txt", (0..50).map(|i| i as f64));
    let out = compare(dir.path(), &["a.txt", "b.txt"]);
    out.assert_exit(2);
    assert!(
        out.stderr
            .contains("a.txt: this is cyclictest's histogram output (-h)"),
        "{out}"
    );
}
