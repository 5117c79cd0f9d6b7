//! Held-out calibration on real runs: fit the tail on the first part of each series of a raw
//! sample log and compare the exceedance counts it predicts for the rest with the counts the
//! rest shows. Run by `bench/tail.py holdout` (an ignored test: it reads the logs named in
//! `LATLAB_HOLDOUT_LOGS`, colon-separated), which prints the table docs/benchmarks.md records.

use super::part::KEEP;
use super::values::spread_ties;
use latlab_core::stats::evt::{estimate, Config, Exceedance, Sample};

#[test]
#[ignore = "reads real sample logs named in LATLAB_HOLDOUT_LOGS: bench/tail.py holdout"]
fn holdout() {
    let Some(logs) = std::env::var_os("LATLAB_HOLDOUT_LOGS") else {
        panic!("set LATLAB_HOLDOUT_LOGS to sample logs, colon-separated");
    };
    let frac: f64 = std::env::var("LATLAB_HOLDOUT_FRACTION")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0.1);
    println!("| log | samples fit / held out | threshold (µs) | ξ | θ | level (µs) | expected count | 95 % interval | observed |");
    println!("|---|---|---|---|---|---|---|---|---|");
    let (mut inside, mut rows) = (0, 0);
    for path in std::env::split_paths(&logs) {
        let log = latlab_core::samples::SampleLog::read(&path).unwrap();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let mut train = Vec::new();
        let mut test: Vec<f64> = Vec::new();
        let mut n_train = 0u64;
        for (s, v) in log.samples.iter().enumerate() {
            let cut = ((v.len() as f64) * frac).ceil() as usize;
            n_train += cut as u64;
            train.extend(v[..cut].iter().enumerate().map(|(i, &x)| Exceedance {
                value: x as f64,
                series: s as u32,
                pos: i as u64,
            }));
            test.extend(v[cut..].iter().map(|&x| x as f64));
        }
        train.sort_by(|a, b| b.value.total_cmp(&a.value));
        train.truncate(KEEP);
        let sample = Sample {
            n: n_train,
            top: spread_ties(train, Some(1.0)),
            ordered: true,
        };
        let n_test = test.len() as f64;
        let m = match estimate(&sample, &Config::default()) {
            Ok(m) => m,
            Err(r) => {
                println!(
                    "| {name} | {n_train} / {n_test} | refused: {} | | | | | | |",
                    r.reason
                );
                continue;
            }
        };
        for c in latlab_core::stats::evt::holdout::check(&m, &test, &[100.0, 10.0, 1.0]) {
            inside += c.inside() as usize;
            rows += 1;
            println!(
                "| {name} | {n_train} / {n_test} | {:.1} | {:.3} | {} | {:.1} | {} | [{:.0}, {:.0}] | {}{} |",
                m.threshold / 1e3,
                m.fit.xi,
                m.extremal_index.map_or("-".into(), |t| format!("{t:.2}")),
                c.level / 1e3,
                c.expected,
                c.interval.0,
                c.interval.1,
                c.observed,
                if c.inside() { "" } else { " (outside)" }
            );
        }
    }
    println!("\n{inside} of {rows} observed counts inside their predicted interval");
}
