//! Property-based fuzzing of every reader of outside input: value files, latlab JSON results,
//! sample logs, plans and bundles get random bytes and mutations of valid inputs; none may
//! panic (an error, which the binary turns into exit 2 or 3, is fine). Each reader also goes
//! on into the analysis its input feeds (ministat's report, the comparison), where huge,
//! tiny and degenerate values used to panic. `LATLAB_FUZZ_CASES` sets the cases per reader
//! (default 3000: about ten seconds in all; scripts/test.sh keeps it within a minute).

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use std::path::Path;
use std::sync::OnceLock;

use crate::util::{latlab, Dir};

use latlab_analysis::compare::analyse;
use latlab_analysis::compare::analysis::Settings;
use latlab_analysis::compare::inputs::Source;
use latlab_analysis::compare::render::{render, Format};
use latlab_core::result::Run;
use latlab_core::stats::dist::Dist;

fn cases() -> u32 {
    std::env::var("LATLAB_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3000)
}

fn runner() -> TestRunner {
    TestRunner::new(Config {
        cases: cases(),
        failure_persistence: None,
        ..Config::default()
    })
}

/// A real result of this latlab (so the seed follows the schema as it changes).
fn run_json() -> &'static str {
    static JSON: OnceLock<String> = OnceLock::new();
    JSON.get_or_init(|| {
        let dir = Dir::new();
        let p = dir.join("r.json");
        let out = latlab()
            .words("cyclic -l 30 -i 200us -q -t 2 --no-store --json")
            .arg(&p)
            .output();
        out.assert_ok();
        std::fs::read_to_string(&p).unwrap()
    })
}

fn sample_log() -> Vec<u8> {
    let mut b = b"LATLABSM".to_vec();
    b.extend_from_slice(&1u32.to_le_bytes());
    b.extend_from_slice(&1u32.to_le_bytes());
    b.extend_from_slice(&2u16.to_le_bytes());
    b.extend_from_slice(b"T0");
    b.extend_from_slice(&(-1i32).to_le_bytes());
    b.extend_from_slice(&0u32.to_le_bytes());
    b.extend_from_slice(&3u32.to_le_bytes());
    for v in [5u64, 70, 600] {
        b.extend_from_slice(&v.to_le_bytes());
    }
    b.extend_from_slice(&u32::MAX.to_le_bytes());
    b.extend_from_slice(&1u32.to_le_bytes());
    b.extend_from_slice(&0u64.to_le_bytes());
    b
}

fn example_plan(name: &str) -> Vec<u8> {
    std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("examples")
            .join(name),
    )
    .unwrap()
}

/// Random bytes, or a valid input with bytes flipped, inserted, deleted or cut off.
fn mutated(seed: Vec<u8>) -> impl Strategy<Value = Vec<u8>> {
    let len = seed.len().max(1);
    let edits = prop::collection::vec((0..len, any::<u8>(), 0u8..4), 0..8);
    let random = prop::collection::vec(any::<u8>(), 0..512);
    prop_oneof![
        1 => random,
        3 => edits.prop_map(move |ed| {
            let mut v = seed.clone();
            for (at, byte, kind) in ed {
                let at = at.min(v.len());
                match kind {
                    0 if at < v.len() => v[at] = byte,
                    1 => v.insert(at, byte),
                    2 if at < v.len() => {
                        v.remove(at);
                    }
                    _ => v.truncate(at),
                }
            }
            v
        }),
    ]
}

fn settings() -> Settings {
    Settings {
        confidence: 0.95,
        replicates: 100,
        seed: 1,
        higher_is_better: false,
        unit: "us".into(),
        assume_independent: false,
    }
}

/// Everything a comparison of `d` against a fixed baseline computes and prints.
fn compare_against(d: Dist) {
    let base = Source {
        label: "base".into(),
        dist: Dist::from_values(vec![1.0, 2.0, 3.0, 4.0]),
        from_json: false,
        runs: Vec::new(),
        info: Vec::new(),
    };
    let other = Source {
        label: "other".into(),
        dist: d.clone(),
        from_json: true,
        runs: vec![d.clone(), d],
        info: Vec::new(),
    };
    let a = analyse(&[base.clone(), other.clone()], &settings());
    for f in [Format::Table, Format::Markdown, Format::Json] {
        let _ = render(&a, f);
    }
    let a = analyse(&[other, base], &settings());
    let _ = render(&a, Format::Table);
}

/// Value files: numbers as text, any magnitude.
fn number_text() -> impl Strategy<Value = Vec<u8>> {
    let num = prop_oneof![
        any::<f64>().prop_map(|v| format!("{v:e}")),
        any::<f64>().prop_map(|v| format!("{v}")),
        (-1e3f64..1e3).prop_map(|v| v.to_string()),
        Just("1e308".to_string()),
        Just("-1.7976931348623157e308".to_string()),
        Just("4.9e-324".to_string()),
        Just("1e77".to_string()),
        Just("nan".to_string()),
        Just("inf".to_string()),
        Just("0x1p1023".to_string()),
    ];
    prop::collection::vec(num, 0..40).prop_map(|v| (v.join("\n") + "\n").into_bytes())
}

fn value_file(bytes: &[u8]) {
    for (col, delim) in [(1, &b" \t"[..]), (2, &b","[..])] {
        if let Ok(set) = latlab_core::stats::ministat::read_set(bytes, "fuzz", col, delim) {
            let other =
                latlab_core::stats::ministat::read_set(&b"1\n2\n3\n4\n"[..], "b", 1, b" ").unwrap();
            let _ = latlab_core::stats::ministat::report(
                &[set.clone(), other],
                &latlab_core::stats::ministat::Options::default(),
            );
            if set.points.len() >= 3 {
                compare_against(Dist::from_values(set.points));
            }
        }
    }
}

#[test]
fn value_files_never_panic() {
    runner()
        .run(
            &prop_oneof![number_text(), mutated(b"1\n2.5\n# c\n3e2 x\n-4\n".to_vec())],
            |b| {
                value_file(&b);
                Ok(())
            },
        )
        .unwrap();
    eprintln!("fuzz: value files: {} cases, no panic", cases());
}

#[test]
fn json_results_never_panic() {
    runner()
        .run(&mutated(run_json().as_bytes().to_vec()), |b| {
            if let Ok(text) = std::str::from_utf8(&b) {
                if let Ok(run) = Run::parse(text, "fuzz.json") {
                    for s in &run.series {
                        let d = Dist::from_histogram(&s.histogram, 1e-3);
                        if d.n() >= 3 {
                            compare_against(d);
                        }
                    }
                }
            }
            Ok(())
        })
        .unwrap();
    eprintln!("fuzz: json results: {} cases, no panic", cases());
}

#[test]
fn sample_logs_never_panic() {
    runner()
        .run(&mutated(sample_log()), |b| {
            let _ = latlab_core::samples::SampleLog::from_reader(&b[..]);
            Ok(())
        })
        .unwrap();
    eprintln!("fuzz: sample logs: {} cases, no panic", cases());
}

#[test]
fn plans_never_panic() {
    let dir = Dir::new();
    let p = dir.join("plan.toml");
    let seeds = prop_oneof![
        mutated(example_plan("seed001-tcp-clocksource.toml")),
        mutated(example_plan("seed003-noise-disturb.toml")),
        mutated(example_plan("seed004-cyclic-load.toml")),
    ];
    let sets = prop::collection::vec("[a-z._]{0,12}=[a-z0-9 \\[\\]\"]{0,8}", 0..3);
    runner()
        .run(&(seeds, sets), |(b, sets)| {
            std::fs::write(&p, &b).unwrap();
            let _ = latlab_lab::experiment::plan::Plan::load_with(&p, &sets);
            Ok(())
        })
        .unwrap();
    eprintln!("fuzz: plans: {} cases, no panic", cases());
}

#[test]
fn bundles_never_panic() {
    let seed = format!(
        "{{\"format\": \"latlab.bundle/1\", \"runs\": [{{\"run\": {}, \"tags\": {{\"k\": \"v\"}}}}]}}",
        run_json()
    );
    runner()
        .run(&mutated(seed.into_bytes()), |b| {
            if let Ok(bundle) = serde_json::from_slice::<latlab_core::store::Bundle>(&b) {
                for (i, e) in bundle.runs.iter().enumerate() {
                    let _ = latlab_core::store::check_imported(&e.run, &format!("run {i}"));
                }
            }
            Ok(())
        })
        .unwrap();
    eprintln!("fuzz: bundles: {} cases, no panic", cases());
}

#[test]
fn the_binary_exits_0_2_or_3_on_mutated_inputs() {
    // A few end-to-end cases through the real binary (each costs a process start).
    let dir = Dir::new();
    let f = dir.join("in");
    let mut r = TestRunner::new(Config {
        cases: (cases() / 10).max(8),
        failure_persistence: None,
        ..Config::default()
    });
    r.run(&mutated(run_json().as_bytes().to_vec()), |b| {
        std::fs::write(&f, &b).unwrap();
        for args in [
            vec![
                "compare".to_string(),
                f.display().to_string(),
                f.display().to_string(),
            ],
            vec!["samples".to_string(), f.display().to_string()],
            vec![
                "run".to_string(),
                "--dry-run".to_string(),
                f.display().to_string(),
            ],
            vec![
                "runs".to_string(),
                "import".to_string(),
                f.display().to_string(),
                "--store".to_string(),
                format!("sqlite:{}", dir.join("s.db").display()),
            ],
        ] {
            let out = latlab().args(&args).output();
            let code = out.status.code();
            let err = &out.stderr;
            prop_assert!(
                matches!(code, Some(0 | 2 | 3)) && !err.contains("panicked"),
                "{args:?} exited {code:?}: {err}"
            );
        }
        Ok(())
    })
    .unwrap();
    eprintln!(
        "fuzz: binary: {} cases x 4 commands, exits 0/2/3",
        (cases() / 10).max(8)
    );
}
