//! `latlab ministat` against Debian's real `ministat`, byte for byte, on generated data and
//! flag combinations; and the seed 001 figures.

use crate::util::{latlab, skip, Dir, Output};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

fn have_ministat() -> bool {
    Command::new("ministat")
        .arg("-n")
        .arg("/dev/null")
        .output()
        .is_ok()
}

/// xorshift64*: deterministic data without a dependency.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn gen_set(r: &mut Rng, dir: &Path, name: &str, csv: bool) -> PathBuf {
    let big = r.below(4) == 0;
    let n = 3 + r.below(if big { 400 } else { 40 }) as usize;
    let kind = r.below(5);
    let scale = [1e-4, 1.0, 37.5, 2.5e3, 1e8][r.below(5) as usize];
    let shift = (r.unit() - 0.3) * scale * 10.0;
    let mut text = String::new();
    if r.below(3) == 0 {
        text.push_str("# a comment line\n\n");
    }
    for i in 0..n {
        let v = match kind {
            0 => shift + scale * r.unit(),
            1 => (r.below(12) as f64) * scale.max(1.0).round(), // ties
            2 => shift + scale * (r.unit() + r.unit() + r.unit()),
            3 => shift + scale * (-r.unit().ln()), // heavy tail
            _ => ((shift + scale * r.unit()) * 1000.0).round() / 1000.0,
        };
        if csv {
            let _ = writeln!(text, "{i},{v}");
        } else if r.below(10) == 0 {
            let _ = writeln!(text, "{v:e} # sci");
        } else {
            // Blanks before, other tokens, comments or a CR after: the shapes real files have.
            let pre = ["", "", "", " ", "\t ", "  "][r.below(6) as usize];
            let post = ["", "", "", "", " 17", "\t# c", "\r", " \t"][r.below(8) as usize];
            let _ = writeln!(text, "{pre}{v}{post}");
        }
        if r.below(9) == 0 {
            // Lines of blanks only (a CRLF file's empty line): nothing once the end is stripped.
            text.push_str([" \r\n", "\r\n", "\t\x0c\n"][r.below(3) as usize]);
        }
    }
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// Runs ministat and latlab on `args` in `dir` and asserts the same stderr, stdout and status.
fn assert_same(args: &[String], dir: &Path) {
    let (real, ours) = both(args, dir);
    assert_eq!(
        ours.stderr,
        String::from_utf8_lossy(&real.stderr),
        "ministat {args:?}"
    );
    assert_eq!(ours.stdout_bytes, real.stdout, "ministat {args:?}");
    assert_eq!(ours.status.code(), real.status.code(), "ministat {args:?}");
}

fn both(args: &[String], dir: &Path) -> (std::process::Output, Output) {
    let real = Command::new("ministat")
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    let ours = latlab()
        .arg("ministat")
        .args(args)
        .current_dir(dir)
        .output();
    (real, ours)
}

#[test]
fn byte_identical_to_ministat_on_generated_data() {
    if !have_ministat() {
        return skip(
            "byte_identical_to_ministat_on_generated_data",
            "Debian's ministat is not installed (scripts/test.sh installs it)",
        );
    }
    let dir = Dir::new();
    let mut r = Rng(0x5EED_0001);
    for case in 0..600 {
        let csv = r.below(5) == 0;
        let nsets = 1 + r.below(7) as usize;
        let mut args: Vec<String> = Vec::new();
        for (flag, p) in [("-A", 6), ("-n", 8), ("-s", 4)] {
            if r.below(p) == 0 {
                args.push(flag.into());
            }
        }
        if r.below(2) == 0 {
            args.push("-w".into());
            args.push(["2", "3", "10", "40", "74", "100", "131"][r.below(7) as usize].into());
        }
        if r.below(2) == 0 {
            args.push(format!(
                "-c{}",
                ["80", "90", "95", "98", "99", "99.5"][r.below(6) as usize]
            ));
        }
        if csv {
            args.extend(["-C".into(), "2".into(), "-d".into(), ",".into()]);
        }
        for k in 0..nsets {
            let p = gen_set(&mut r, dir.path(), &format!("c{case}_{k}.txt"), csv);
            args.push(p.file_name().unwrap().to_string_lossy().into_owned());
        }
        let (real, ours) = both(&args, dir.path());
        assert_eq!(
            ours.stdout,
            String::from_utf8_lossy(&real.stdout),
            "case {case}: ministat {}",
            args.join(" ")
        );
        assert_eq!(
            ours.stderr_bytes,
            real.stderr,
            "case {case}: stderr of ministat {}",
            args.join(" ")
        );
        assert_eq!(ours.status.code(), real.status.code(), "case {case}");
    }
}

/// Three files of 150 000 values (several read blocks each, a plot of thousands of rows in
/// which the third set's stacks, taller than the second's, wipe the first's above the second's
/// height, as ministat does).
#[test]
fn byte_identical_to_ministat_on_large_files() {
    if !have_ministat() {
        return skip(
            "byte_identical_to_ministat_on_large_files",
            "Debian's ministat is not installed (scripts/test.sh installs it)",
        );
    }
    let dir = Dir::new();
    let mut r = Rng(0x5EED_0002);
    let mut names = Vec::new();
    for (k, spread) in [(0, 3.0), (1, 40.0), (2, 2.5)] {
        let mut text = String::new();
        for _ in 0..150_000 {
            let v = 20.0 + spread * (r.unit() + r.unit() + r.unit() - 1.5);
            let _ = match r.below(50) {
                0 => writeln!(text, "{v:e}"),
                1 => writeln!(text, " {v:.3}\t{k}"),
                _ => writeln!(text, "{v:.6}"),
            };
        }
        let name = format!("big{k}");
        std::fs::write(dir.join(&name), text).unwrap();
        names.push(name);
    }
    for flags in [&[][..], &["-s"][..], &["-w", "131"][..]] {
        let mut args: Vec<String> = flags.iter().map(|s| s.to_string()).collect();
        args.extend(names.iter().cloned());
        let (real, ours) = both(&args, dir.path());
        assert!(real.status.success(), "{real:?}");
        assert!(
            ours.stdout_bytes == real.stdout,
            "ministat {}: outputs differ",
            args.join(" ")
        );
        assert_eq!(ours.status.code(), Some(0));
    }
}

#[test]
fn errors_match_ministat() {
    if !have_ministat() {
        return skip(
            "errors_match_ministat",
            "Debian's ministat is not installed",
        );
    }
    let dir = Dir::new();
    let w = |name: &str, body: &[u8]| std::fs::write(dir.join(name), body).unwrap();
    w("ok", b"1\n2\n3\n");
    w("bad", b"1\n2\nthree\n4\n");
    w("two", b"1\n2\n");
    w("empty", b"");
    w(
        "garbage",
        b"\x7fELF\x02\x01\x01\x00\x00\x00\xff\xfe\n\x01\x02\n",
    );
    w("crlf", b"1\r\n2\r\n3\r\n");
    let cases: &[&[&str]] = &[
        &["bad"],
        &["two"],
        &["empty"],
        &["missing-file"],
        &["garbage"],
        &["crlf"],
        &["-c", "97", "ok"],
        &["-c", "x", "ok"],
        &["-C", "0", "ok"],
        &["-C", "x", "ok"],
        &["-w", "-1", "ok"],
        &["-w", "x", "ok"],
        &["-d", "", "ok"],
        &["-q", "ok"],
        &["ok", "-C"],
        &["ok", "ok", "ok", "ok", "ok", "ok", "ok", "ok"],
        // ministat keeps strtol's long in an int: 32-bit truncation, saturation past a long.
        &["-w", "4294967298", "ok", "ok"],
        &["-w", "2147483648", "ok"],
        &["-C", "4294967297", "ok"],
        &["-C", "2147483648", "ok"],
        &["-C", "99999999999999999999", "ok"],
        &["-c", "95 ", "ok"],
    ];
    for args in cases {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        assert_same(&args, dir.path());
    }
}

#[test]
fn lines_over_ministats_buffer_are_cut_where_its_fgets_cuts_them() {
    if !have_ministat() {
        return skip(
            "lines_over_ministats_buffer_are_cut_where_its_fgets_cuts_them",
            "Debian's ministat is not installed",
        );
    }
    let dir = Dir::new();
    let w = |name: &str, body: String| std::fs::write(dir.join(name), body).unwrap();
    // One piece exactly (the newline then reads as an empty line); blanks over a piece; a
    // long comment whose second piece is no number (the error names that piece's line); a
    // number cut in two; a line longer than latlab's read block; a last line without newline.
    w("piece", format!("1\n2\n{}3\n4\n", "0".repeat(8190)));
    w("blanks", format!("1\n2\n{}3\n4\n", " ".repeat(8200)));
    w("comment", format!("1\n2\n3\n# {}\n4\n", "x".repeat(20_000)));
    w("cut", format!("1\n2\n{}5\n", "0".repeat(8191)));
    w("block", format!("1\n2\n{}\n7\n", "0 ".repeat(150_000)));
    w("eof", format!("1\n2\n{}", "0".repeat(2 * 8191)));
    for name in ["piece", "blanks", "comment", "cut", "block", "eof"] {
        assert_same(&["-A".to_string(), name.to_string()], dir.path());
    }
}

#[test]
fn refuses_clearly_where_ministat_crashes() {
    let dir = Dir::new();
    std::fs::write(dir.join("a"), "1\n2\n3\n4\n").unwrap();
    std::fs::write(dir.join("inf"), "1\n2\n1e999\n").unwrap();
    std::fs::write(dir.join("nan"), "1\nnan\n2\n3\n").unwrap();
    std::fs::write(dir.join("huge"), "1e308\n1e308\n1e308\n").unwrap();
    // 8191 ones: a piece of its own to ministat's fgets, and a number no double holds.
    std::fs::write(dir.join("long"), format!("{}\n1\n2\n", "1".repeat(9000))).unwrap();
    for (args, want) in [
        (vec!["-w", "1", "a", "a"], "-w 1"),
        (vec!["inf"], "line 3 in inf"),
        (vec!["nan"], "line 2 in nan"),
        (vec!["long"], "line 1 in long"),
        (vec!["huge"], "huge: the values' sums overflow"),
        (vec!["-w", "2000000", "a"], "-w 2000000: wider than"),
    ] {
        latlab()
            .arg("ministat")
            .args(&args)
            .current_dir(dir.path())
            .assert_refused(2, want);
    }
}

/// Twelve values with exactly the given mean and sample standard deviation.
fn with_stats(mean: f64, sd: f64) -> String {
    let z: Vec<f64> = [
        0.3, -1.2, 0.8, 0.1, -0.4, 1.5, -0.9, 0.05, -0.2, 0.6, -1.0, 0.35,
    ]
    .to_vec();
    let m = z.iter().sum::<f64>() / 12.0;
    let s = (z.iter().map(|x| (x - m).powi(2)).sum::<f64>() / 11.0).sqrt();
    z.iter()
        .map(|x| format!("{:.12}\n", mean + sd * (x - m) / s))
        .collect()
}

#[test]
fn seed_001_figures() {
    let dir = Dir::new();
    std::fs::write(dir.join("preempt"), with_stats(2181.4983, 19.144156)).unwrap();
    std::fs::write(dir.join("preempt.tsc"), with_stats(2460.1725, 6.5242305)).unwrap();
    let out = latlab()
        .words("compare --ministat preempt preempt.tsc")
        .current_dir(dir.path())
        .assert_ok();
    let text = &out.stdout;
    for want in [
        "x preempt\n+ preempt.tsc\n",
        "x  12",
        "2181.4983     19.144156\n",
        "2460.1725     6.5242305\n",
        "Difference at 95.0% confidence\n\t278.674 +/- 12.1092\n\t12.7744% +/- 0.555084%\n\t(Student's t, pooled s = 14.3015)\n",
    ] {
        assert!(text.contains(want), "missing {want:?} in\n{text}");
    }
    if have_ministat() {
        let real = Command::new("ministat")
            .args(["preempt", "preempt.tsc"])
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert_eq!(*text, String::from_utf8_lossy(&real.stdout));
    } else {
        skip(
            "seed_001_figures against ministat",
            "Debian's ministat is not installed (scripts/test.sh installs it)",
        );
    }
}

/// Files are read in order where order matters: an error in an early file ends the run at once
/// (as in ministat) instead of waiting for a later FIFO or stdin that never delivers.
#[test]
fn an_early_error_does_not_wait_for_a_later_pipe() {
    let dir = Dir::new();
    dir.fifo("fifo");
    std::fs::write(dir.join("inv.txt"), "1\nx\n3\n").unwrap();
    for (first, code, want) in [
        ("missing.txt", 1, "ministat: Cannot open missing.txt"),
        ("inv.txt", 2, "ministat: Invalid data on line 2 in inv.txt"),
    ] {
        // stdin kept open: it never ends.
        let out = latlab()
            .args(["ministat", first, "fifo", "-"])
            .current_dir(dir.path())
            .spawn_with_open_stdin()
            .end_within(std::time::Duration::from_secs(60));
        out.assert_exit(code);
        assert!(out.stderr.contains(want), "{out}");
    }
}
