//! `latlab tail`: value files, runs (from histograms and from a raw sample log in order),
//! refusals with exit 4, the JSON shape, bad input naming the flag or file (exit 2), and where
//! the tail shows elsewhere (compare --tail-at, gate --extrapolate, the report).

use crate::util::{expect_exit, latlab, Dir};
use latlab_core::result::{Run, Series};
use latlab_core::stats::summary::Recorder;
use std::path::{Path, PathBuf};
use std::time::{Duration, UNIX_EPOCH};

/// `n` exponential-tailed values (mean 2 above 10) at the golden-ratio quantiles: a smooth tail
/// with no randomness, so every figure is reproducible.
fn values(n: usize) -> Vec<f64> {
    (1..=n)
        .map(|i| 10.0 - 2.0 * ((i as f64 * 0.6180339887498949) % 1.0).ln())
        .collect()
}

fn write_values(dir: &Path, name: &str, v: &[f64]) -> PathBuf {
    let p = dir.join(name);
    let text: String = v.iter().map(|x| format!("{x}\n")).collect();
    std::fs::write(&p, text).unwrap();
    p
}

fn tail(dir: &Path, args: &[&str]) -> (Option<i32>, String, String) {
    let out = latlab().arg("tail").args(args).current_dir(dir).output();
    let err = out.stderr.clone();
    assert!(!err.contains("panicked"), "{args:?}: {err}");
    (out.code(), out.stdout.clone(), err)
}

/// A run of the latencies `ns` (one series, in this order) over `secs`, optionally with its
/// raw sample log written beside it.
fn run_file(dir: &Path, name: &str, ns: &[u64], secs: f64, log: bool) -> PathBuf {
    let mut rec = Recorder::new();
    ns.iter().for_each(|&x| rec.record(x));
    let started = UNIX_EPOCH + Duration::from_secs(1_800_000_000);
    let mut run = Run::new(
        "cyclic",
        started,
        vec!["latlab".into(), "cyclic".into()],
        serde_json::json!({}),
        latlab_core::result::env::Environment::capture(),
    );
    run.id = format!("20270115T000000Z-{:08x}", name.len() * 7919);
    run.duration_s = secs;
    run.series = vec![Series::from_recorder("T0".into(), &rec)];
    if log {
        let lp = dir.join(format!("{name}.samples"));
        let mut b = b"LATLABSM".to_vec();
        b.extend(1u32.to_le_bytes());
        b.extend(1u32.to_le_bytes());
        b.extend(2u16.to_le_bytes());
        b.extend(b"T0");
        b.extend((-1i32).to_le_bytes());
        for chunk in ns.chunks(4096) {
            b.extend(0u32.to_le_bytes());
            b.extend((chunk.len() as u32).to_le_bytes());
            chunk.iter().for_each(|x| b.extend(x.to_le_bytes()));
        }
        b.extend(u32::MAX.to_le_bytes());
        b.extend(1u32.to_le_bytes());
        b.extend(0u64.to_le_bytes());
        std::fs::write(&lp, b).unwrap();
        run.samples_path = Some(lp.display().to_string());
    }
    let p = dir.join(name);
    std::fs::write(&p, serde_json::to_vec(&run).unwrap()).unwrap();
    p
}

/// 200 000 latencies in bursts: 20 µs plus a moving maximum of exponential jitter (mean
/// 1.5 µs), X_t = max(E_t, E_t-1 − 0.3 µs, E_t-2 − 0.6 µs) (a fixed seed). A spike is followed
/// by two samples a little below it: clusters of about 2.5 above a high threshold (extremal
/// index about 0.4), and the marginal tail is still exponential.
fn bursty_ns(seed: u64) -> Vec<u64> {
    use rand::{RngExt, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let e: Vec<f64> = (0..200_002)
        .map(|_| -1500.0 * (1.0 - rng.random::<f64>()).ln())
        .collect();
    (2..e.len())
        .map(|t| (20_000.0 + e[t].max(e[t - 1] - 300.0).max(e[t - 2] - 600.0)) as u64)
        .collect()
}

#[test]
fn a_value_file_gets_levels_with_intervals_and_the_json_shape() {
    let dir = Dir::new();
    let d = dir.path();
    write_values(d, "v.txt", &values(20_000));
    let (code, out, err) = tail(d, &["v.txt", "--at", "1e-5,1e-7", "--json"]);
    assert_eq!(code, Some(0), "{out}{err}");
    let j: serde_json::Value = serde_json::from_str(&out).unwrap();
    let q = j["quantiles"].as_array().unwrap();
    assert_eq!(q.len(), 2);
    for (e, p) in q.iter().zip([1e-5, 1e-7]) {
        assert_eq!(e["p"].as_f64(), Some(p));
        let (v, lo, hi) = (
            e["value"].as_f64().unwrap(),
            e["low"].as_f64().unwrap(),
            e["high"].as_f64().unwrap(),
        );
        assert!(lo < v && v < hi, "{e}");
        // The truth (10 + 2·ln(1/p)) lies inside.
        let truth = 10.0 + 2.0 * (1.0 / p).ln();
        assert!(lo < truth && truth < hi, "{e} vs {truth}");
    }
    let f = &j["fit"];
    for k in ["threshold", "xi", "sigma", "gof_p"] {
        assert!(f[k].is_f64(), "fit.{k}: {f}");
    }
    assert!(f["exceedances"].as_u64().unwrap() >= 30);
    assert!(f["extremal_index"].as_f64().unwrap() > 0.5, "{f}");
    assert!(j["refusal"].is_null());
    assert_eq!(j["unit"], "");
    // The text form says the same.
    let (code, out, _) = tail(d, &["v.txt", "--at", "1e-5"]);
    assert_eq!(code, Some(0));
    assert!(out.contains("threshold") && out.contains("1e-05"), "{out}");
    // Standard input too.
    let out = latlab()
        .args(["tail", "-", "--at", "1e-5"])
        .stdin(std::fs::read(d.join("v.txt")).unwrap())
        .output();
    assert_eq!(out.code(), Some(0));
}

#[test]
fn refusals_exit_4_with_the_reason_and_what_would_help() {
    let dir = Dir::new();
    let d = dir.path();
    // Too few.
    write_values(d, "few.txt", &values(200));
    let (code, out, err) = tail(d, &["few.txt", "--at", "1e-6", "--json"]);
    assert_eq!(code, Some(4), "{out}{err}");
    let j: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(j["refusal"]["kind"], "too_few");
    assert!(j["refusal"]["reason"].as_str().unwrap().contains("too few"));
    assert!(j["refusal"]["help"].as_str().unwrap().contains("more data"));
    assert!(j["quantiles"].as_array().unwrap().is_empty());
    assert!(err.contains("no estimate"), "{err}");
    // A second regime: three values far beyond a plain exponential tail.
    let mut v = values(20_000);
    v.extend([400.0, 410.0, 420.0]);
    write_values(d, "far.txt", &v);
    let (code, out, _) = tail(d, &["far.txt", "--at", "1e-6"]);
    assert_eq!(code, Some(4), "{out}");
    assert!(out.contains("second regime"), "{out}");
    assert!(out.contains("what would help"), "{out}");
}

#[test]
fn runs_from_histograms_and_from_their_sample_log() {
    let dir = Dir::new();
    let d = dir.path();
    let ns = bursty_ns(31);
    run_file(d, "h.json", &ns, 200.0, false);
    run_file(d, "s.json", &ns, 200.0, true);
    // From the histograms: no order, per day at the run's rate (1000/s).
    let (code, out, err) = tail(d, &["h.json", "--at", "0.5", "--per", "1d", "--json"]);
    assert_eq!(code, Some(0), "{out}{err}");
    let j: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(j["unit"], "ns");
    assert_eq!(j["ordered"], false);
    assert_eq!(j["per"], "1d");
    assert!((j["rate_hz"].as_f64().unwrap() - 1000.0).abs() < 1e-6);
    assert!(j["fit"]["extremal_index"].is_null());
    assert!(j["quantiles"][0]["value"].as_f64().unwrap() > 30_000.0);
    // In order: the bursts are found (extremal index 1/(1 + e^-0.2 + e^-0.4) = 0.40) and
    // counted once each. A burst starts above 20 µs + y at a rate of e^(-y/1.5 µs) per sample,
    // so at 1000 samples/s a day has a 50 % chance of one above 20 + 1.5·ln(8.64e7/ln 2) µs.
    let (code, out, err) = tail(d, &["s.json", "--at", "0.5", "--per", "1d", "--json"]);
    assert_eq!(code, Some(0), "{out}{err}");
    let j: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(j["ordered"], true, "{}", j["notes"]);
    let theta = j["fit"]["extremal_index"].as_f64().unwrap();
    assert!(theta > 0.3 && theta < 0.5, "{theta}");
    let truth = 20_000.0 + 1500.0 * (8.64e7 / 2f64.ln()).ln();
    let q = &j["quantiles"][0];
    assert!(
        q["low"].as_f64().unwrap() < truth && truth < q["high"].as_f64().unwrap(),
        "{q} vs {truth}"
    );
    // The log alone (no rate: --per needs --rate).
    let (code, _, err) = tail(d, &["s.json.samples", "--at", "1e-6", "--per", "1d"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--rate"), "{err}");
    let (code, out, err) = tail(
        d,
        &[
            "s.json.samples",
            "--at",
            "1e-6",
            "--per",
            "1d",
            "--rate",
            "1000",
        ],
    );
    assert_eq!(code, Some(0), "{out}{err}");
    // A log that is not complete is not trusted for the order.
    let lp = d.join("s.json.samples");
    let b = std::fs::read(&lp).unwrap();
    std::fs::write(&lp, &b[..b.len() - 4000]).unwrap();
    let (code, out, _) = tail(d, &["s.json", "--at", "1e-6", "--json"]);
    assert_eq!(code, Some(0));
    let j: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(j["ordered"], false);
    assert!(
        j["notes"].to_string().contains("histograms"),
        "{}",
        j["notes"]
    );
}

#[test]
fn bad_input_is_exit_2_naming_the_flag_or_file() {
    let dir = Dir::new();
    let d = dir.path();
    let v = write_values(d, "v.txt", &values(2000));
    let v = v.to_str().unwrap();
    for (args, want) in [
        (vec![v, "--at", "0"], "--at"),
        (vec![v, "--at", "1"], "--at"),
        (vec![v, "--at", "-1e-3"], "--at"),
        (vec![v, "--at", "NaN"], "--at"),
        // As written: a value that reads as 0 is named as given.
        (vec![v, "--at", "1e-400"], "--at 1e-400"),
        (vec![v, "--at", "1e-6", "--per", "0s"], "--per"),
        (vec![v, "--at", "1e-6", "--per", "soon"], "--per"),
        (vec![v, "--at", "1e-6", "--per", "1d"], "--rate"),
        (vec![v, "--at", "1e-6", "--rate", "-5"], "--rate"),
        (
            vec![v, "--at", "1e-6", "--confidence", "1.5"],
            "--confidence",
        ),
        (vec![v, "--at", "1e-6", "-C", "0"], "--column"),
        (vec!["missing.txt", "--at", "1e-6"], "missing.txt"),
        (vec![d.to_str().unwrap(), "--at", "1e-6"], "directory"),
        (vec!["run:", "--at", "1e-6"], "run:"),
    ] {
        expect_exit(&["tail"], &args, 2, want);
    }
    // A dangling link and a file of garbage name themselves.
    std::os::unix::fs::symlink(d.join("nowhere"), d.join("dangling")).unwrap();
    expect_exit(
        &["tail"],
        &[d.join("dangling").to_str().unwrap(), "--at", "1e-6"],
        2,
        "dangling",
    );
    std::fs::write(d.join("junk.txt"), "1\n2\nthree\n").unwrap();
    expect_exit(
        &["tail"],
        &[d.join("junk.txt").to_str().unwrap(), "--at", "1e-6"],
        2,
        "junk.txt",
    );
    expect_exit(&["tail"], &["/dev/zero", "--at", "1e-6"], 2, "/dev/zero");
    // A FIFO without a writer is refused at once, never waited on.
    let fifo = dir.fifo("fifo");
    expect_exit(
        &["tail"],
        &[fifo.to_str().unwrap(), "--at", "1e-6"],
        2,
        "fifo",
    );
    // A run and a value file do not pool.
    let r = run_file(d, "r.json", &bursty_ns(31)[..5000], 5.0, false);
    // A run whose count contradicts its histogram names the series.
    let mut run: serde_json::Value = serde_json::from_slice(&std::fs::read(&r).unwrap()).unwrap();
    run["series"][0]["count"] = 1_000_000_000u64.into();
    let bad = d.join("count.json");
    std::fs::write(&bad, serde_json::to_vec(&run).unwrap()).unwrap();
    expect_exit(
        &["tail"],
        &[bad.to_str().unwrap(), "--at", "1e-6"],
        2,
        "contradicts its histogram",
    );
    expect_exit(
        &["tail"],
        &[r.to_str().unwrap(), v, "--at", "1e-6"],
        2,
        "cannot be pooled",
    );
}

#[test]
fn compare_gate_and_report_show_the_tail() {
    let dir = Dir::new();
    let d = dir.path();
    write_values(d, "a.txt", &values(20_000));
    let b: Vec<f64> = values(20_000).iter().map(|x| x * 1.5).collect();
    write_values(d, "b.txt", &b);
    let out = latlab()
        .args(["compare", "a.txt", "b.txt", "--tail-at", "1e-6"])
        .current_dir(d)
        .output();
    let text = out.stdout.clone();
    assert!(
        text.contains("tail: the latency exceeded with probability 1e-06"),
        "{text}"
    );
    assert!(text.contains("a.txt") && text.contains("b.txt"), "{text}");
    let out = latlab()
        .args([
            "compare",
            "a.txt",
            "b.txt",
            "--tail-at",
            "1e-6",
            "--format",
            "json",
        ])
        .current_dir(d)
        .output();
    let j: serde_json::Value = out.json();
    assert_eq!(j["tail"].as_array().unwrap().len(), 2);
    assert!(j["tail"][1]["quantile"]["high"].as_f64().unwrap() > 0.0);
    expect_exit(
        &["compare"],
        &[
            d.join("a.txt").to_str().unwrap(),
            d.join("b.txt").to_str().unwrap(),
            "--tail-at",
            "2",
        ],
        2,
        "--tail-at",
    );

    // gate: 1e-9 per sample lies far beyond three runs of 200 000: the counts cannot decide,
    // the fitted tail can.
    let ns = bursty_ns(31);
    let runs: Vec<String> = (0..3)
        .map(|i| {
            run_file(
                d,
                &format!("g{}.json", "x".repeat(i + 1)),
                &bursty_ns(40 + i as u64),
                200.0,
                false,
            )
            .display()
            .to_string()
        })
        .collect();
    let mut args = vec!["gate".to_string(), "rate(>200us)<1e-9".to_string()];
    args.extend(runs.iter().cloned());
    let out = latlab().args(&args).output();
    assert_eq!(out.code(), Some(4));
    args.push("--extrapolate".into());
    let out = latlab().args(&args).output();
    let text = out.stdout.clone();
    assert_eq!(out.code(), Some(0), "{text}");
    assert!(text.contains("extrapolation (generalized Pareto"), "{text}");
    assert!(text.contains("verdict with extrapolation: MET"), "{text}");
    // Runs too short for a tail: the requirement stays undecided, saying why.
    let short: Vec<String> = (0..3)
        .map(|i| {
            run_file(
                d,
                &format!("s{}.json", "y".repeat(i + 1)),
                &ns[..90],
                0.1,
                false,
            )
            .display()
            .to_string()
        })
        .collect();
    let mut args = vec!["gate".to_string(), "rate(>200us)<1e-9".to_string()];
    args.extend(short);
    args.push("--extrapolate".into());
    let out = latlab().args(&args).output();
    let text = out.stdout.clone();
    assert_eq!(out.code(), Some(4), "{text}");
    assert!(
        text.contains("the tail cannot be modelled: too few"),
        "{text}"
    );

    // report: the tail chart with its threshold and band (a run with its sample log).
    let rep = run_file(d, "rep.json", &ns, 200.0, true);
    let out = latlab()
        .args(["report", rep.to_str().unwrap(), "-o"])
        .arg(d.join("r.html"))
        .output();
    assert!(out.status.success(), "{}", out.stderr.clone());
    let html = std::fs::read_to_string(d.join("r.html")).unwrap();
    assert!(html.contains("Tail beyond the data"), "no tail section");
    assert!(html.contains(r#"data-kind="tail""#));
    assert!(html.contains(r#"class="threshold""#) && html.contains(r#"class="band""#));
}

#[test]
fn a_value_file_over_one_gib_is_refused_naming_it() {
    let d = Dir::new();
    let p = d.path().join("huge.txt");
    let f = std::fs::File::create(&p).unwrap();
    // Sparse: nothing is written, the file only says it is that long.
    f.set_len((1 << 30) + 1).unwrap();
    let (code, _, err) = tail(d.path(), &["huge.txt", "--at", "1e-5"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("huge.txt: 1073741825 bytes: a value file is read up to 1024 MiB"),
        "{err}"
    );
}
