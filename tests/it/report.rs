//! `latlab report` and `latlab plot` end to end: the timeline a real run keeps, reports of a
//! result file, a stored run and an experiment, single charts, bad input, and every kind of
//! report loaded in a real headless browser (Debian's chromium) with a screenshot kept.

use crate::util::{exclusive, latlab, run_tool, skip, Dir};
use std::path::{Path, PathBuf};
use std::process::Command;

fn store_of(dir: &Path) -> String {
    format!("sqlite:{}", dir.join("s.db").display())
}

/// A short real cyclic run: its JSON file and its stored id.
fn cyclic(dir: &Path, store: &str, tags: &[&str], args: &[&str]) -> (PathBuf, String) {
    let json = dir.join(format!("c{}.json", tags.join("_").replace('=', "-")));
    let mut c = latlab();
    c.args(["cyclic", "-q", "--store", store, "--json"])
        .arg(&json)
        .args(args);
    for t in tags {
        c.args(["--tag", t]);
    }
    (json, c.assert_ok().stored_id())
}

fn report(args: &[&str], out: &Path) -> String {
    latlab()
        .arg("report")
        .args(args)
        .arg("-o")
        .arg(out)
        .assert_ok();
    std::fs::read_to_string(out).unwrap()
}

fn charts(html: &str, kind: &str) -> usize {
    html.matches(&format!(r#"data-kind="{kind}""#)).count()
}

#[test]
fn a_real_run_keeps_a_timeline_and_reports_from_file_and_store() {
    let dir = Dir::new();
    let store = store_of(dir.path());
    let (json, id) = cyclic(
        dir.path(),
        &store,
        &[],
        &["-t", "2", "-i", "1ms", "-D", "2s"],
    );
    let run: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    for s in run["series"].as_array().unwrap() {
        let t = &s["timeline"];
        assert_eq!(t["interval_ns"], 1_000_000_000u64);
        let counts: Vec<u64> = t["count"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap())
            .collect();
        assert!(counts.len() >= 2, "{t}");
        // Every sample is in exactly one interval, and the largest interval max is the max.
        assert_eq!(counts.iter().sum::<u64>(), s["count"].as_u64().unwrap());
        let maxes = t["max"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap());
        assert_eq!(maxes.max(), s["max_ns"].as_u64());
        for (p, m) in t["pct"]
            .as_array()
            .unwrap()
            .iter()
            .zip(t["max"].as_array().unwrap())
        {
            assert!(p.as_u64() <= m.as_u64());
        }
    }
    let html = report(&[json.to_str().unwrap()], &dir.join("f.html"));
    assert!(html.starts_with("<!DOCTYPE html>") && html.trim_end().ends_with("</html>"));
    // Self-contained: no script, nothing fetched (the only URL is the SVG namespace).
    assert!(!html.contains("<script") && !html.contains("src=") && !html.contains("href="));
    assert!(html.contains("Environment") && html.contains("Percentiles"));
    assert_eq!(charts(&html, "line"), 2, "histogram and timeline");
    assert!(html.contains(r#"data-label="T0"#) && html.contains(r#"data-label="T1"#));
    let by_id = report(&["--store", &store, &id], &dir.join("i.html"));
    assert_eq!(charts(&by_id, "line"), 2);
    assert!(by_id.contains(&format!("run:{id}")));
    let by_run = report(
        &["--store", &store, &format!("run:{id}")],
        &dir.join("r.html"),
    );
    assert_eq!(charts(&by_run, "line"), 2);
}

#[test]
fn an_experiment_is_grouped_compared_and_judged() {
    // Another test switching the clocksource meanwhile would mark these runs disturbed, and the
    // page leaves disturbed runs out of an experiment: hold the lock such tests hold.
    let _x = exclusive();
    let dir = Dir::new();
    let store = store_of(dir.path());
    for level in ["a", "b"] {
        for r in 0..3 {
            cyclic(
                dir.path(),
                &store,
                &[
                    "experiment=e1",
                    &format!("level={level}"),
                    &format!("repeat={r}"),
                ],
                &["-l", "300", "-i", "200us"],
            );
        }
    }
    let html = report(
        &["--store", &store, "--experiment", "e1"],
        &dir.join("e.html"),
    );
    assert!(html.contains("experiment e1"));
    assert!(html.contains("level=a (3 run(s))") && html.contains("level=b (3 run(s))"));
    assert!(html.contains("p50, p99, p99.9, max and mean, across runs"));
    assert_eq!(charts(&html, "forest"), 1);
    assert!(charts(&html, "line") >= 2, "CDF and histogram overlays");
    assert!(html.contains("Verdicts"));
    // Six runs get their own sections (histogram + timeline each).
    assert_eq!(html.matches(r#"<section class="run""#).count(), 6);
    let out = latlab()
        .args(["report", "--store", &store, "--experiment", "nope", "-o"])
        .arg(dir.join("n.html"))
        .output();
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stderr.contains("--experiment nope"));
}

#[test]
fn plots_are_svg_old_results_still_read_and_bad_input_is_exit_2() {
    let dir = Dir::new();
    let store = store_of(dir.path());
    let (json, _) = cyclic(
        dir.path(),
        &store,
        &[],
        &["-t", "2", "-l", "200", "-i", "500us"],
    );
    for kind in ["hist", "timeline", "cdf"] {
        let svg = dir.join(format!("{kind}.svg"));
        latlab()
            .arg("plot")
            .arg(&json)
            .args(["--kind", kind, "--svg"])
            .arg(&svg)
            .assert_ok();
        let s = std::fs::read_to_string(&svg).unwrap();
        assert!(s.starts_with("<svg") && s.ends_with("</svg>"), "{kind}");
        assert_eq!(s.matches(r#"<g class="series""#).count(), 2, "{kind}");
        assert_eq!(s.matches(r#"class="legend-entry""#).count(), 2, "{kind}");
        assert!(s.contains(r#"class="xlabel""#) && s.contains(r#"class="ylabel""#));
    }
    let png = dir.join("hist.png");
    latlab()
        .arg("plot")
        .arg(&json)
        .arg("--png")
        .arg(&png)
        .assert_ok();
    let bytes = std::fs::read(&png).unwrap();
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
    let out = latlab().arg("plot").arg(&json).output();
    assert_eq!(out.status.code(), Some(2), "no output named");
    // A v1 result from before timelines: reports still work, a timeline plot says why not.
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    for s in v["series"].as_array_mut().unwrap() {
        s.as_object_mut().unwrap().remove("timeline");
    }
    let old = dir.join("old.json");
    std::fs::write(&old, serde_json::to_string(&v).unwrap()).unwrap();
    let html = report(&[old.to_str().unwrap()], &dir.join("o.html"));
    assert_eq!(charts(&html, "line"), 1, "histogram only");
    let out = latlab()
        .arg("plot")
        .arg(&old)
        .words("--kind timeline --svg")
        .arg(dir.join("x.svg"))
        .output();
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stderr.contains("no timeline"));
    let bad = dir.join("bad.json");
    std::fs::write(&bad, "{\"schema\": 3}").unwrap();
    for input in [bad.to_str().unwrap(), "/nonexistent/r.json"] {
        let out = latlab()
            .args(["report", input, "-o"])
            .arg(dir.join("b.html"))
            .output();
        assert_eq!(out.status.code(), Some(2), "{input}");
        assert!(out.stderr.contains(input));
    }
    let out = latlab()
        .args(["report", "--store", &store, "no-such-id", "-o"])
        .arg(dir.join("b.html"))
        .output();
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stderr.contains("no-such-id"));
    let out = latlab().words("report -o x.html").output();
    assert_eq!(out.status.code(), Some(2));
}

/// The headless browser installed (Debian's chromium), if any.
pub(crate) fn chromium() -> Option<String> {
    ["chromium", "chromium-browser"].into_iter().find_map(|b| {
        Command::new(b)
            .arg("--version")
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|_| b.to_string())
    })
}

/// Loads `page` headless: the dumped DOM and a screenshot at `png`.
pub(crate) fn browse(browser: &str, page: &Path, png: &Path) -> (String, String) {
    let base = |c: &mut Command| {
        let profile = Dir::new();
        c.args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--enable-logging=stderr",
            "--window-size=1200,2000",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()));
        run_tool(c)
    };
    let url = format!("file://{}", page.display());
    let dom = base(Command::new(browser).arg("--dump-dom").arg(&url));
    base(
        Command::new(browser)
            .arg(format!("--screenshot={}", png.display()))
            .arg(&url),
    );
    (
        String::from_utf8_lossy(&dom.stdout).into_owned(),
        String::from_utf8_lossy(&dom.stderr).into_owned(),
    )
}

#[test]
fn every_kind_of_report_renders_in_a_real_browser() {
    let Some(browser) = chromium() else {
        skip(
            "every_kind_of_report_renders_in_a_real_browser",
            "no chromium (scripts/test.sh installs Debian's chromium)",
        );
        return;
    };
    let dir = Dir::new();
    let store = store_of(dir.path());
    let shots = Path::new(env!("CARGO_TARGET_TMPDIR")).join("report-screenshots");
    std::fs::create_dir_all(&shots).unwrap();
    let (cyc, _) = cyclic(
        dir.path(),
        &store,
        &[],
        &[
            "-t",
            "2",
            "-i",
            "1ms",
            "-D",
            "2s",
            "--load",
            "cpu:threads=1",
        ],
    );
    let noise = dir.join("noise.json");
    latlab()
        .words("noise -D 1s --repeat 2 -q --no-store --json")
        .arg(&noise)
        .assert_ok();
    let ctxsw = dir.join("ctxsw.json");
    latlab()
        .words("ctxsw -n 300 --no-store --json")
        .arg(&ctxsw)
        .assert_ok();
    let (b, _) = cyclic(dir.path(), &store, &["x=b"], &["-l", "300", "-i", "200us"]);
    // (name, report inputs, least number of charts)
    let cases: [(&str, Vec<&Path>, usize); 4] = [
        ("cyclic", vec![&cyc], 2),
        ("noise", vec![&noise], 4),
        ("ctxsw", vec![&ctxsw], 1),
        ("comparison", vec![&cyc, &b], 5),
    ];
    for (name, inputs, least) in cases {
        let page = dir.join(format!("{name}.html"));
        latlab()
            .arg("report")
            .args(&inputs)
            .words("--hist linear")
            .arg("-o")
            .arg(&page)
            .assert_ok();
        let png = shots.join(format!("{name}.png"));
        let (dom, log) = browse(&browser, &page, &png);
        let svgs = dom.matches("<svg").count();
        assert!(
            svgs >= least,
            "{name}: {svgs} charts in the DOM, expected {least}"
        );
        assert!(
            dom.contains("<h1>latlab report"),
            "{name}: blank page? {dom:.300}"
        );
        assert!(
            !log.lines()
                .any(|l| l.contains(":CONSOLE(") || l.contains("Uncaught")),
            "{name}: console errors:\n{log}"
        );
        let size = std::fs::metadata(&png).map(|m| m.len()).unwrap_or(0);
        assert!(
            size > 20_000,
            "{name}: screenshot {} is {size} bytes",
            png.display()
        );
        if name == "cyclic" {
            // The exceedance plot and the linear histogram render, and the legend's max is the
            // percentile table's max (the exact one), as the browser shows them.
            for kind in ["exceedance", "hist-linear"] {
                assert!(dom.contains(&format!("data-kind=\"{kind}\"")), "{kind}");
            }
            for t in ["T0", "T1"] {
                let (legend, table) = legend_and_table_max(&dom, t);
                assert_eq!(legend, table, "{t}: legend max vs table max");
            }
        }
        eprintln!("{name}: {svgs} charts; screenshot {}", png.display());
    }
}

/// Series `t`'s max as the first histogram legend shows it ("T0 cpu0 min/avg/max") and as its
/// percentile table row shows it (the 12th cell).
fn legend_and_table_max(dom: &str, t: &str) -> (String, String) {
    let at = dom
        .find(&format!("class=\"legend-entry\" x=\"574\" y=\"46\">{t} "))
        .or_else(|| {
            dom.match_indices("class=\"legend-entry\"")
                .map(|(i, _)| i)
                .find(|&i| dom[i..].split('>').nth(1).is_some_and(|x| x.starts_with(t)))
        })
        .expect("a legend entry");
    let text = dom[at..]
        .split('>')
        .nth(1)
        .unwrap()
        .split('<')
        .next()
        .unwrap();
    let legend = text.rsplit('/').next().unwrap().to_string();
    let table = &dom[dom.find("class=\"percentiles\"").expect("percentile table")..];
    let row = &table[table
        .find(&format!("<td class=\"l\">{t}</td>"))
        .expect("table row")..];
    let row = &row[..row.find("</tr>").unwrap()];
    let cells: Vec<&str> = row
        .split("<td")
        .skip(1)
        .map(|c| c.split('>').nth(1).unwrap().split('<').next().unwrap())
        .collect();
    (legend, cells[11].to_string())
}
