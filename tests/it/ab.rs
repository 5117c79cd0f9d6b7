//! A/B from plan to verdict on synthetic stored runs (the store is built directly, so every
//! figure is deterministic): run selectors in every command that takes runs, and the
//! clocksource experiment compared level by level.

use crate::util::{latlab, Dir, Output};
use latlab_core::result::{Run, Series};
use latlab_core::stats::summary::Recorder;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, UNIX_EPOCH};

/// One synthetic cyclic run of `n` samples over `secs`: a run-level offset, exponential
/// jitter and bursts of slow samples, all in ns, `scale` times slower than the reference.
pub fn synthetic_run(rng: &mut ChaCha8Rng, i: u64, n: usize, secs: f64, scale: f64) -> Run {
    let mut rec = Recorder::new();
    let offset = 2000.0 * (rng.random::<f64>() - 0.5);
    let mut burst = 0;
    for _ in 0..n {
        if burst == 0 && rng.random::<f64>() < 0.002 {
            burst = 20;
        }
        let spike = if burst > 0 {
            burst -= 1;
            30_000.0
        } else {
            0.0
        };
        let jitter = -3000.0 * (1.0 - rng.random::<f64>()).ln();
        rec.record(((20_000.0 + offset + jitter + spike) * scale) as u64);
    }
    let started = UNIX_EPOCH + Duration::from_secs(1_800_000_000 + i * 10);
    let mut run = Run::new(
        "cyclic",
        started,
        vec!["latlab".into(), "cyclic".into()],
        serde_json::json!({}),
        latlab_core::result::env::Environment::capture(),
    );
    run.id = format!("20270115T000000Z-{i:08x}");
    run.started = latlab_core::result::rfc3339(started);
    run.ended = latlab_core::result::rfc3339(started + Duration::from_secs_f64(secs));
    run.duration_s = secs;
    run.series = vec![Series::from_recorder("T0".into(), &rec)];
    run
}

/// A store holding experiment `exp`: `levels` (the first is the baseline), `repeats` runs of
/// `n` samples each; level `shifted` (if any) is `scale` times slower. Returns the store spec.
pub fn experiment_store(
    dir: &Path,
    exp: &str,
    levels: &[&str],
    repeats: u64,
    n: usize,
    shifted: Option<(usize, f64)>,
) -> String {
    let spec = format!("sqlite:{}", dir.join("ab.db").display());
    let mut st = latlab_core::store::open(Some(&spec)).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(19);
    let mut i = 0;
    // Interleaved, as a plan makes them.
    for r in 1..=repeats {
        for (c, level) in levels.iter().enumerate() {
            let scale = match shifted {
                Some((l, k)) if l == c => k,
                _ => 1.0,
            };
            let mut run = synthetic_run(&mut rng, i, n, n as f64 / 1000.0, scale);
            // As a plan's knob makes it: each level's runs see their own clocksource.
            run.environment.clocksource = level.to_string();
            if c == 1 {
                run.warnings
                    .push(format!("{level}: a warning every run of this level has"));
            }
            i += 1;
            let tags: BTreeMap<String, String> = [
                ("experiment", exp.to_string()),
                ("repeat", r.to_string()),
                ("combination", c.to_string()),
                ("clocksource", level.to_string()),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
            st.save(&run, &tags).unwrap();
        }
    }
    spec
}

fn run(args: &[&str]) -> Output {
    latlab().args(args).output()
}

fn ok(args: &[&str]) -> String {
    latlab().args(args).assert_ok().stdout
}

/// `compare --format json` of the sets `a` and `b` in `store` (200 bootstrap rounds).
fn compare_json(store: &str, a: &str, b: &str) -> serde_json::Value {
    let out = ok(&[
        "compare",
        "--store",
        store,
        "--format",
        "json",
        "--bootstrap",
        "200",
        a,
        b,
    ]);
    serde_json::from_str(&out).unwrap()
}

/// `compare --experiment E` of `store` in `format`.
fn compare_experiment(store: &str, format: &str) -> String {
    ok(&[
        "compare",
        "--store",
        store,
        "--experiment",
        "E",
        "--format",
        format,
    ])
}

/// Every selector form works in compare, gate, report and runs export, written with commas or
/// spaces, in one argument or several.
#[test]
fn selectors_work_in_every_command() {
    let dir = Dir::new();
    let s = experiment_store(dir.path(), "E", &["tsc", "kvm-clock"], 5, 3000, None);
    let file = dir.join("one.json");
    let one = ok(&[
        "runs",
        "show",
        "--json",
        "--store",
        &s,
        "20270115T000000Z-00000004",
    ]);
    let v: serde_json::Value = serde_json::from_str(&one).unwrap();
    std::fs::write(&file, v["run"].to_string()).unwrap();
    let file = file.to_str().unwrap();
    let (r0, r2, r4) = (
        "run:20270115T000000Z-00000000",
        "run:20270115T000000Z-00000002",
        "run:20270115T000000Z-00000004",
    );
    // compare: sets of 5 runs by level, by tags, by run lists with either separator.
    for (a, b) in [
        ("exp:E/clocksource=tsc", "exp:E/clocksource=kvm-clock"),
        (
            "a=tag:clocksource=tsc,experiment=E",
            "b=tag:clocksource=kvm-clock experiment=E",
        ),
    ] {
        let v = compare_json(&s, a, b);
        for set in v["sets"].as_array().unwrap() {
            assert_eq!(set["runs"], 5, "{a} {b}: {set}");
        }
        if a.starts_with("exp:") {
            assert_eq!(v["sets"][0]["label"], "clocksource=tsc");
        }
    }
    let list_comma = format!("a={r0},{r2},{file}");
    let list_space = format!("a={r0} {r2} {r4}");
    for a in [&list_comma, &list_space] {
        let v = compare_json(&s, a, "b=exp:E/clocksource=kvm-clock");
        assert_eq!(v["sets"][0]["runs"], 3, "{a}");
    }
    // gate: an experiment level, tags, run lists either way.
    for args in [
        vec!["exp:E"],
        vec![file],
        vec!["exp:E/clocksource=tsc"],
        vec!["tag:clocksource=tsc,experiment=E"],
        vec!["run:20270115T000000Z-00000000,run:20270115T000000Z-00000002"],
        vec![r0, r2],
        vec![&list_space[2..]],
    ] {
        let mut a = vec!["gate", "p99.9<200us", "--store", &s, "--json"];
        a.extend(&args);
        let out = run(&a);
        assert!(
            matches!(out.status.code(), Some(0 | 1 | 4)),
            "{args:?}: {}",
            &out.stderr
        );
        let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
        let want = match args[0] {
            "exp:E" => 10,
            a if a == file => 1,
            a if a.matches("run:").count() == 3 => 3,
            a if a.starts_with("run:") => 2,
            _ => 5,
        };
        let n = v["runs"].as_array().unwrap().len();
        assert_eq!(n, want, "{args:?}: {v}");
    }
    // report: each multi-run selector is one group; exp:E alone is the experiment.
    let html = dir.join("r.html");
    let h = html.to_str().unwrap();
    ok(&[
        "report",
        "--store",
        &s,
        "-o",
        h,
        "exp:E/clocksource=tsc,exp:E/clocksource=kvm-clock",
    ]);
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("clocksource=tsc (5 run(s))"), "groups");
    ok(&["report", "--store", &s, "-o", h, "exp:E"]);
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("clocksource=kvm-clock (5 run(s))"));
    ok(&["report", "--store", &s, "-o", h, r0, file]);
    // runs export.
    for (sel, n) in [
        ("exp:E", 10),
        ("exp:E/clocksource=tsc", 5),
        ("tag:clocksource=kvm-clock,experiment=E", 5),
        ("run:20270115T000000Z-00000000 20270115T000000Z-00000001", 2),
    ] {
        let out = ok(&["runs", "export", "--store", &s, sel]);
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["runs"].as_array().unwrap().len(), n, "{sel}");
    }
}

/// Every bad selector in every command: exit 2, the selector named.
#[test]
fn a_bad_selector_names_itself_in_every_command() {
    let dir = Dir::new();
    let s = experiment_store(dir.path(), "E", &["tsc", "kvm-clock"], 2, 100, None);
    let h = dir.join("r.html");
    let h = h.to_str().unwrap();
    for (bad, why) in [
        ("run:", "no run id"),
        ("exp:", "no experiment id"),
        ("exp:E/", "not KEY=VALUE"),
        ("tag:", "no KEY=VALUE"),
        ("tag:k", "not KEY=VALUE"),
        ("foo:bar", "unknown kind"),
        ("missing.json", "no such file"),
        ("exp:NOPE", "no run in"),
        (
            "exp:E/clocksource=hpet",
            "clocksource=kvm-clock, clocksource=tsc",
        ),
        ("tag:nope=1", "no run in"),
    ] {
        for cmd in [
            vec!["compare", "--store", &s, "exp:E/clocksource=tsc", bad],
            vec!["gate", "p99<1ms", "--store", &s, bad],
            vec!["report", "--store", &s, "-o", h, bad],
            vec!["runs", "export", "--store", &s, bad],
        ] {
            let out = run(&cmd);
            let err = &out.stderr;
            assert_eq!(out.status.code(), Some(2), "{cmd:?}: {err}");
            assert!(
                err.contains(&format!("selector '{bad}'")) && err.contains(why),
                "{cmd:?}: {err}"
            );
        }
    }
}

/// The clocksource A/B as a kernel developer runs it: 5 vs 5 runs of 3 s (3000 samples each),
/// compared level by level. One row per metric, figures pooled (never a percentile of
/// percentiles), one warning for the runs too short for p99.9, and the sentence to paste.
#[test]
fn the_clocksource_experiment_compares_per_metric_and_ends_with_a_sentence() {
    let dir = Dir::new();
    let s = experiment_store(dir.path(), "E", &["tsc", "kvm-clock"], 5, 3000, None);
    let json = compare_experiment(&s, "json");
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let c = &v["comparisons"][0];
    assert_eq!(c["label"], "clocksource=kvm-clock");
    assert_eq!(c["baseline"], "clocksource=tsc");
    let names: Vec<&str> = c["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["metric"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["p50", "p99", "p99.9", "max", "mean"]);
    for set in v["sets"].as_array().unwrap() {
        assert_eq!(set["runs"], 5);
        assert_eq!(set["n"], 15000, "pooled samples, not five per-run figures");
    }
    // One warning per condition, naming the runs: the short runs, and the level's own one.
    let warnings = v["warnings"].as_array().unwrap();
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(warnings[0]
        .as_str()
        .unwrap()
        .contains("10 run(s) of 3000 samples"));
    let own = warnings[1].as_str().unwrap();
    assert!(
        own.starts_with("kvm-clock: a warning every run of this level has (5 of 10 runs: run:"),
        "{own}"
    );
    // JSON keeps full precision.
    assert!(c["metrics"][1]["ci"][0].as_f64().unwrap().fract() != 0.0);
    let md = compare_experiment(&s, "markdown");
    let (head, items) = verdict_of(&md);
    // Conditions first, then one line per metric, the headline first, each with baseline →
    // value and unit, the change and its interval, the verdict and the runs it rests on; then
    // what would decide the open ones.
    assert!(
        head.starts_with("cyclic, 5 × 3 s runs per level, no load, kernel ")
            && head.ends_with("; kvm-clock vs tsc"),
        "{md}"
    );
    assert!(
        items[0].starts_with("p99 ") && items[0].contains(" → "),
        "{md}"
    );
    for m in items.iter().filter(|l| l.contains(" → ")) {
        assert!(m.contains(" µs (") && m.contains(" % ["), "{m}");
        assert!(m.contains("(5+5 runs of 3 s"), "{m}");
    }
    assert!(
        items.contains(&"p99.9 not estimable: runs of 3000 samples, need 10 000"),
        "{md}"
    );
    assert!(
        items.contains(
            &"p99.9: runs of 11 s would give it (at 1000 samples/s, 5 % kept for overruns)"
        ),
        "{md}"
    );
    assert_eq!(md.matches("> warning:").count(), 2, "{md}");
    assert_eq!(md.matches("a warning every run").count(), 1, "{md}");
    // Figures rounded to their interval: no long tails of digits (a kernel release such as
    // 6.18.44, in the conditions, is not a figure).
    let long = md
        .split(|c: char| !(c.is_ascii_digit() || c == '.'))
        .filter(|t| t.matches('.').count() == 1)
        .any(|t| t.split_once('.').is_some_and(|(_, f)| f.len() > 4));
    assert!(!long, "{md}");
    // `compare exp:E` is the same comparison; the text form ends with the same verdict.
    let text = ok(&["compare", "--store", &s, "exp:E"]);
    let mut want = format!("verdict: {head}:\n");
    for l in &items {
        want.push_str(&format!("  {l}\n"));
    }
    assert!(text.ends_with(&want), "{text}");
    assert_eq!(text.matches("warning:").count(), 2, "{text}");
    // report --experiment shows the same verdicts, a forest row per metric and level.
    let html = dir.join("e.html");
    ok(&[
        "report",
        "--store",
        &s,
        "--experiment",
        "E",
        "-o",
        html.to_str().unwrap(),
    ]);
    let page = std::fs::read_to_string(&html).unwrap();
    let esc = |t: &str| {
        t.replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
            .replace('"', "&quot;")
            .replace('\'', "&#39;")
    };
    assert!(page.contains(&esc(&head)), "the verdict in the report");
    for l in &items {
        assert!(
            page.contains(&format!("<li>{}</li>", esc(l))),
            "{l} in the report"
        );
    }
    let block = &page[page.find("id=\"warnings\"").unwrap()..];
    let block = &block[..block.find("</div>").unwrap()];
    assert_eq!(block.matches("<li>").count(), 1, "{block}");
    assert!(block.contains("(5 of 10 runs: run:"), "{block}");
    assert!(
        page.contains("data-label=\"clocksource=kvm-clock: p99.9\"><text"),
        "the p99.9 row, without a bar"
    );
    for m in ["p50", "p99", "max", "mean"] {
        assert!(
            page.contains(&format!("row\" data-label=\"clocksource=kvm-clock: {m}\"")),
            "forest row {m}"
        );
    }
}

/// A real 20 % slowdown of one level is proven worse in p99.
#[test]
fn a_slower_level_is_proven_worse() {
    let dir = Dir::new();
    let s = experiment_store(dir.path(), "E", &["tsc", "hpet"], 5, 3000, Some((1, 1.2)));
    let md = compare_experiment(&s, "markdown");
    let (head, items) = verdict_of(&md);
    assert!(head.ends_with("; hpet vs tsc"), "{md}");
    // Decided: before → after in µs, the change with its interval, the test and Holm's p.
    let p99 = items[0];
    assert!(
        p99.starts_with("p99 ") && p99.contains(" → ") && p99.contains(" µs (+"),
        "{p99}"
    );
    assert!(
        p99.contains(
            ", worse (5+5 runs of 3 s; Welch's t on the logs of per-run figures; Holm-adjusted p "
        ),
        "{p99}"
    );
}

/// A Markdown comparison's verdict: its head (without `**verdict**: ` and the closing `:`)
/// and its list items, metrics then notes.
fn verdict_of(md: &str) -> (String, Vec<&str>) {
    let at = md
        .find("**verdict**: ")
        .unwrap_or_else(|| panic!("no verdict:\n{md}"));
    let rest = &md[at..];
    let head = rest.lines().next().unwrap();
    let head = head
        .strip_prefix("**verdict**: ")
        .and_then(|h| h.strip_suffix(':'))
        .unwrap_or_else(|| panic!("{head}"))
        .to_string();
    let items = rest.lines().filter_map(|l| l.strip_prefix("- ")).collect();
    (head, items)
}

fn hackbench_text(mode: &str, times: &[f64]) -> String {
    let mut s = format!(
        "Running in {mode} mode with 10 groups using 40 file descriptors each (== 400 tasks)\n\
         Each sender will pass 100 messages of 100 bytes\n"
    );
    for t in times {
        s.push_str(&format!("Time: {t:.3}\n"));
    }
    s
}

fn exported(store: &str) -> Vec<serde_json::Value> {
    let out = ok(&["runs", "export", "--store", store, "tag:tool=hackbench"]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    v["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["run"].clone())
        .collect()
}

/// Many files in one import, each reported; the first bad one stops it (exit 2, named) and the
/// files before it stay; every run carries only its own setup; the runs one import may create
/// are bounded.
#[test]
fn imports_take_many_files_and_stay_linear() {
    let dir = Dir::new();
    let store = format!("sqlite:{}", dir.join("i.db").display());
    let p = |n: &str| dir.join(n).to_str().unwrap().to_string();
    let mixed = hackbench_text("process", &[0.1, 0.2]) + &hackbench_text("threaded", &[0.3]);
    std::fs::write(p("a.txt"), &mixed).unwrap();
    std::fs::write(p("b.txt"), hackbench_text("process", &[0.4])).unwrap();
    std::fs::write(p("bad.txt"), "no hackbench here\n").unwrap();
    let out = ok(&[
        "runs",
        "import",
        "--from",
        "hackbench",
        "--store",
        &store,
        &p("a.txt"),
        &p("b.txt"),
    ]);
    assert_eq!(
        out.matches(&format!("from {}", p("a.txt"))).count(),
        3,
        "{out}"
    );
    assert_eq!(
        out.matches(&format!("from {}", p("b.txt"))).count(),
        1,
        "{out}"
    );
    assert!(out.contains("2 file(s), 4 run(s) imported"), "{out}");
    // Each run has its own block's setup only.
    let runs = exported(&store);
    assert_eq!(runs.len(), 4);
    for r in &runs {
        let setup = r["parameters"]["setup"].as_str().unwrap();
        let threaded = r["duration_s"].as_f64() == Some(0.3);
        assert_eq!(setup.contains("threaded"), threaded, "{setup}");
        assert_eq!(setup.contains("process"), !threaded, "{setup}");
        assert_eq!(setup.matches("Running in").count(), 1, "{setup}");
    }
    // The first bad file: exit 2 naming it; the good file before it is kept, the one after
    // it is not read.
    let store2 = format!("sqlite:{}", dir.join("j.db").display());
    let o = run(&[
        "runs",
        "import",
        "--from",
        "hackbench",
        "--store",
        &store2,
        &p("b.txt"),
        &p("bad.txt"),
        &p("a.txt"),
    ]);
    let err = &o.stderr;
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&p("bad.txt")) && err.contains("not hackbench output"),
        "{err}"
    );
    let kept = exported(&store2);
    assert_eq!(kept.len(), 1);
    // The run kept is named on stdout as it was imported, and in the error.
    assert!(
        err.contains(&format!(
            "the 1 file(s) before it were imported (1 run(s): {}) and are kept",
            kept[0]["id"].as_str().unwrap()
        )),
        "{err}"
    );
    assert!(o.stdout.contains(&p("b.txt")));
    let id = kept[0]["id"].as_str().unwrap();
    assert!(
        o.stdout.contains(&format!("imported run {id}")),
        "{}",
        o.stdout
    );
    // The bound: 30 Time: lines against --max-runs 20, across files too.
    let many: Vec<f64> = (0..30).map(|i| i as f64 / 100.0).collect();
    std::fs::write(p("many.txt"), hackbench_text("process", &many)).unwrap();
    let store3 = format!("sqlite:{}", dir.join("k.db").display());
    let o = run(&[
        "runs",
        "import",
        "--from",
        "hackbench",
        "--store",
        &store3,
        "--max-runs",
        "20",
        &p("many.txt"),
    ]);
    let err = &o.stderr;
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("more than --max-runs 20") && err.contains("many.txt"),
        "{err}"
    );
    let o = run(&[
        "runs",
        "import",
        "--from",
        "hackbench",
        "--store",
        &store3,
        "--max-runs",
        "4",
        &p("a.txt"),
        &p("b.txt"),
        &p("b.txt"),
    ]);
    assert_eq!(o.status.code(), Some(2));
    ok(&[
        "runs",
        "import",
        "--from",
        "hackbench",
        "--store",
        &store3,
        "--max-runs",
        "30",
        &p("many.txt"),
    ]);
    // A bound that allows no run is refused before any file is read (this one does not exist).
    let o = run(&[
        "runs",
        "import",
        "--from",
        "hackbench",
        "--store",
        &store3,
        "--max-runs",
        "0",
        &p("no-such-file.txt"),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", o.stderr);
    assert!(
        o.stderr.contains("--max-runs 0: at least 1"),
        "{}",
        o.stderr
    );
    assert!(!o.stderr.contains("no-such-file"), "{}", o.stderr);
}

/// Wide per-run maxima (a burst in some runs, none in others): the relative intervals are
/// ratios, never below -100 %, and each row's columns add up as printed.
#[test]
fn relative_intervals_never_pass_minus_100_and_columns_add_up() {
    let dir = Dir::new();
    let s = experiment_store(dir.path(), "E", &["tsc", "kvm-clock"], 3, 1200, None);
    let json = ok(&["compare", "--store", &s, "exp:E", "--format", "json"]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    for m in v["comparisons"][0]["metrics"].as_array().unwrap() {
        if let Some(ci) = m["change_ci"].as_array() {
            let lo = ci[0].as_f64().unwrap();
            assert!(lo >= -100.0, "{m}");
        }
    }
    let md = ok(&["compare", "--store", &s, "exp:E", "--format", "markdown"]);
    let mut rows = 0;
    for l in md
        .lines()
        .filter(|l| l.starts_with("| clocksource=kvm-clock |"))
    {
        let c: Vec<&str> = l.split('|').map(str::trim).collect();
        // | set | metric | baseline | value | diff | interval | change | p | verdict |
        if !["p50", "p99", "p99.9", "max", "mean"].contains(&c[2]) {
            continue;
        }
        let (b, v, d) = (
            c[3].parse::<f64>(),
            c[4].parse::<f64>(),
            c[5].parse::<f64>(),
        );
        if let (Ok(b), Ok(v), Ok(d)) = (b, v, d) {
            rows += 1;
            assert!(((v - b) - d).abs() < 1e-6 * b.abs().max(1.0), "{l}");
        }
        for w in c[7].split('[').skip(1) {
            let lo: f64 = w.split(" %").next().unwrap().parse().unwrap();
            assert!(lo >= -100.0, "{l}");
        }
    }
    assert!(rows >= 3, "{md}");
}

/// `runs list --experiments`: one line per experiment with its start, plan, kind, runs and
/// levels; the report of an experiment shows each level's environment, what differs from the
/// baseline's highlighted.
#[test]
fn experiments_are_listed_and_each_level_shows_its_environment() {
    let dir = Dir::new();
    let s = experiment_store(dir.path(), "E", &["tsc", "kvm-clock"], 2, 500, None);
    let out = ok(&["runs", "list", "--experiments", "--store", &s]);
    let line = out.lines().find(|l| l.starts_with("E ")).expect(&out);
    assert!(line.contains("cyclic") && line.contains(" 4 "), "{line}");
    assert!(
        line.contains("clocksource=tsc (2), clocksource=kvm-clock (2)"),
        "{line}"
    );
    let html = dir.join("e.html");
    ok(&[
        "report",
        "--store",
        &s,
        "exp:E",
        "-o",
        html.to_str().unwrap(),
    ]);
    let page = std::fs::read_to_string(&html).unwrap();
    let env = &page[page.find("id=\"environment\"").unwrap()..];
    let env = &env[..env.find("</section>").unwrap()];
    assert!(env.contains("clocksource=tsc (2 run(s))"), "{env}");
    assert!(env.contains("<td class=\"l\">tsc</td>"), "{env}");
    assert!(env.contains("<td class=\"l diff\">kvm-clock</td>"), "{env}");
    assert!(
        !env.contains("class=\"warn\""),
        "a factor is no surprise: {env}"
    );
}

/// An argument that names an existing file is that file, whatever its name holds.
#[test]
fn run_lists_take_any_file_name() {
    let dir = Dir::new();
    let s = experiment_store(dir.path(), "E", &["tsc", "kvm-clock"], 2, 500, None);
    let mut names = Vec::new();
    for (i, name) in ["my run.json", "a,b.json", "k=v.json"].iter().enumerate() {
        let one = ok(&[
            "runs",
            "show",
            "--json",
            "--store",
            &s,
            &format!("20270115T000000Z-{i:08x}"),
        ]);
        let v: serde_json::Value = serde_json::from_str(&one).unwrap();
        let p = dir.join(name);
        std::fs::write(&p, v["run"].to_string()).unwrap();
        names.push(p.display().to_string());
    }
    let html = dir.join("r.html");
    ok(&["report", &names[0], "-o", html.to_str().unwrap()]);
    let out = run(&["gate", "max<1h", &names[0], &names[1], &names[2]]);
    assert_eq!(out.status.code(), Some(0), "{}", &out.stderr);
    // compare: the whole argument is the file, not LABEL=PATH.
    let out = run(&["compare", &names[2], &names[1]]);
    let err = &out.stderr;
    assert!(!err.contains("no such file"), "{err}");
}
