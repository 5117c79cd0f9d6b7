//! The walkthrough of docs/commands/run.md, run as written: every command block marked
//! `<!-- readme-test: commands -->` runs in order (as root, in a scratch store and journal,
//! `EXP` standing for the experiment id the walkthrough's plan printed), and the output block
//! marked `<!-- readme-test: output -->` after it must be what those commands print, up to the
//! figures a measurement cannot repeat. `LATLAB_README_UPDATE=1` writes the generated output
//! into the page instead, so it shows exactly what this test made; without it the output goes
//! to target/tmp/readme-walkthrough.md for comparison. Its measuring time is the
//! walkthrough's: 10 runs of 3 s. The README's excerpt of it (marked
//! `<!-- readme-test: excerpt of docs/commands/run.md -->`) must be lines the page shows.

use crate::util::{exclusive, scratch, skip, test_store};
use std::path::{Path, PathBuf};
use std::process::Command;

const MARK_COMMANDS: &str = "<!-- readme-test: commands -->";
const MARK_OUTPUT: &str = "<!-- readme-test: output -->";

/// One marked command block: its commands and the line range of its output block (the fence
/// lines excluded) in the page.
struct Block {
    commands: Vec<String>,
    output: Option<(usize, usize)>,
}

/// The fenced block starting after line `at` (the marker): its inner lines' range.
fn fenced(lines: &[&str], at: usize) -> Option<(usize, usize)> {
    let open = at + 1;
    if !lines.get(open)?.starts_with("```") {
        return None;
    }
    let close = (open + 1..lines.len()).find(|&i| lines[i].starts_with("```"))?;
    Some((open + 1, close))
}

/// Every marked block of `readme`, in order.
fn blocks(readme: &str) -> Vec<Block> {
    let lines: Vec<&str> = readme.lines().collect();
    let mut out: Vec<Block> = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        if l.trim() == MARK_COMMANDS {
            let (a, b) = fenced(&lines, i).expect("a fenced block after the commands marker");
            out.push(Block {
                commands: lines[a..b]
                    .iter()
                    .map(|s| s.trim().to_string())
                    .filter(|s| !s.is_empty())
                    .collect(),
                output: None,
            });
        } else if l.trim() == MARK_OUTPUT {
            let r = fenced(&lines, i).expect("a fenced block after the output marker");
            out.last_mut()
                .expect("an output block follows its commands")
                .output = Some(r);
        }
    }
    out
}

/// Digits and the figures a rerun changes masked, so two runs of the walkthrough compare.
fn shape(text: &str) -> String {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let mut s = String::new();
            let mut digit = false;
            for c in l.chars() {
                if c.is_ascii_digit() {
                    if !digit {
                        s.push('#');
                    }
                    digit = true;
                } else {
                    digit = false;
                    s.push(c);
                }
            }
            s
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The page whose walkthrough this test runs.
const WALKTHROUGH: &str = "docs/commands/run.md";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn the_clocksource_walkthrough_runs_as_written() {
    const T: &str = "the_clocksource_walkthrough_runs_as_written";
    // SAFETY: no arguments.
    if unsafe { libc::geteuid() } != 0 {
        return skip(T, "not root: the plan switches the clocksource");
    }
    let cs = Path::new("/sys/devices/system/clocksource/clocksource0");
    let avail = std::fs::read_to_string(cs.join("available_clocksource")).unwrap_or_default();
    if !avail.split_whitespace().any(|c| c == "kvm-clock")
        || !avail.split_whitespace().any(|c| c == "tsc")
    {
        return skip(
            T,
            "the walkthrough switches tsc and kvm-clock; this machine lacks one",
        );
    }
    let _x = exclusive();
    let readme_path = root().join(WALKTHROUGH);
    let readme = std::fs::read_to_string(&readme_path).unwrap();
    let bl = blocks(&readme);
    assert!(bl.len() >= 3, "the walkthrough's marked blocks are missing");
    // `latlab` on the PATH is the binary under test; the store and journal are scratch ones.
    let bin = scratch().join("readme-bin");
    std::fs::create_dir_all(&bin).unwrap();
    let link = bin.join("latlab");
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_latlab"), &link).unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let store = format!("{}-readme", test_store());
    let mut exp: Option<String> = None;
    let mut generated: Vec<(Option<(usize, usize)>, String)> = Vec::new();
    let mut last_run_output = String::new();
    for b in &bl {
        let mut text = String::new();
        for c in &b.commands {
            let cmd = match &exp {
                Some(e) => c.replace("EXP", e),
                None => c.clone(),
            };
            let out = Command::new("sh")
                .arg("-c")
                .arg(&cmd)
                .current_dir(root())
                .env("PATH", &path)
                .env("LATLAB_STORE", &store)
                .env("LATLAB_JOURNAL", scratch().join("readme-restore.json"))
                .output()
                .unwrap();
            let both = format!(
                "{}{}",
                String::from_utf8_lossy(&out.stderr),
                String::from_utf8_lossy(&out.stdout)
            );
            assert!(
                out.status.success(),
                "`{cmd}` failed ({}):\n{both}",
                out.status
            );
            if let Some(e) = both
                .split_whitespace()
                .find(|w| w.starts_with("exp-"))
                .filter(|_| exp.is_none())
            {
                exp = Some(e.trim_end_matches([',', ':']).to_string());
            }
            if c.starts_with("latlab run ") && !c.contains("--dry-run") {
                last_run_output = both.clone();
            }
            text.push_str(&format!("$ {c}\n{both}"));
        }
        generated.push((b.output, text));
    }
    // The clocksource is back where it was.
    assert_eq!(
        std::fs::read_to_string(cs.join("current_clocksource"))
            .unwrap()
            .trim(),
        "tsc",
        "the plan must put the clocksource back"
    );
    // The walkthrough ends with a verdict to paste: conditions first, one line per metric
    // after (baseline → value with the unit, change and interval, verdict and its runs), then
    // what would decide the open ones.
    let lines: Vec<&str> = last_run_output.lines().collect();
    let at = lines
        .iter()
        .rposition(|l| l.starts_with("verdict: "))
        .expect("the plan's report ends with a verdict");
    let verdict = lines[at..].join("\n");
    for want in [
        "cyclic -t 1 -a 1 -i 1ms, 5 × 3 s runs per level",
        "load",
        "kernel ",
        "kvm-clock vs tsc:\n",
        "\n  p99 ",
        " µs (",
        "(5+5 runs of 3 s",
        "\n  p99.9 not estimable",
        "\n  p99.9: runs of ",
        " s would give it",
    ] {
        assert!(verdict.contains(want), "'{want}' missing from: {verdict}");
    }
    assert!(
        lines[at + 1..].iter().all(|l| l.starts_with("  ")),
        "one indented line per metric and note: {verdict}"
    );
    // No relative interval below -100 % anywhere in what the walkthrough prints.
    for (_, t) in &generated {
        for w in t.split('[').skip(1) {
            if let Some(lo) = w.split(" %").next().and_then(|x| x.parse::<f64>().ok()) {
                assert!(lo >= -100.0, "a relative interval below -100 %: [{w}");
            }
        }
    }
    if std::env::var_os("LATLAB_README_UPDATE").is_some_and(|v| v == "1") {
        let mut lines: Vec<String> = readme.lines().map(String::from).collect();
        // From the last block up, so earlier line numbers stay valid.
        for (range, text) in generated.iter().rev() {
            if let Some((a, b)) = range {
                let shown = text.replace(&store, "sqlite:STORE");
                lines.splice(*a..*b, shown.lines().map(String::from));
            }
        }
        std::fs::write(&readme_path, lines.join("\n") + "\n").unwrap();
        return;
    }
    let dump = Path::new(env!("CARGO_TARGET_TMPDIR")).join("readme-walkthrough.md");
    let all: String = generated.iter().map(|g| g.1.clone()).collect();
    std::fs::write(&dump, &all).unwrap();
    // The page shows what the commands print: the same lines, up to the figures.
    let lines: Vec<&str> = readme.lines().collect();
    for ((range, text), b) in generated.iter().zip(&bl) {
        let Some((a, z)) = range else { continue };
        let shown = lines[*a..*z].join("\n");
        let want = shape(&text.replace(&store, "sqlite:STORE"));
        let have = shape(&shown);
        // What a dry run prints depends on the plan alone: all of it must match. Elsewhere the
        // commands must (the figures are the measurement's).
        let planned = b.commands.iter().all(|c| c.contains("--dry-run"));
        if planned {
            assert_eq!(
                have,
                want,
                "{WALKTHROUGH}'s walkthrough is stale (generated output in {}; \
                 LATLAB_README_UPDATE=1 rewrites the page)",
                dump.display()
            );
        }
        let (w, h): (Vec<&str>, Vec<&str>) = (want.lines().collect(), have.lines().collect());
        for l in w.iter().filter(|l| l.starts_with("$ ")) {
            assert!(
                h.contains(l),
                "{WALKTHROUGH}'s walkthrough is stale: it lacks the line\n{l}\n(generated output in \
                 {}; LATLAB_README_UPDATE=1 rewrites the page)",
                dump.display()
            );
        }
    }
}

/// The README's excerpt of the walkthrough is what the page shows, line for line (the page is
/// checked against what the commands print above).
#[test]
fn the_readme_excerpt_is_the_walkthroughs() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let page = std::fs::read_to_string(root().join(WALKTHROUGH)).unwrap();
    let mark = format!("<!-- readme-test: excerpt of {WALKTHROUGH} -->");
    let lines: Vec<&str> = readme.lines().collect();
    let at = lines
        .iter()
        .position(|l| *l == mark)
        .unwrap_or_else(|| panic!("README.md has no {mark}"));
    let (a, z) = fenced(&lines, at).expect("a fenced block after the excerpt's mark");
    assert!(z > a, "the excerpt is empty");
    let shown: std::collections::BTreeSet<&str> = page.lines().collect();
    for l in &lines[a..z] {
        assert!(
            shown.contains(l),
            "README.md's excerpt shows a line {WALKTHROUGH} does not:\n{l}"
        );
    }
}
