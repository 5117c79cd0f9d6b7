//! Hostile input (issue 34): files that never end or never open, output paths that cannot be
//! written, numbers that overflow, times before the epoch. Each is refused at once with exit 2
//! naming the flag or the path — never a panic, never a wait.

use crate::util::{expect_exit, have, latlab, read_json, rt_test, skip, Dir, TestCommand, LATLAB};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// How long a refusal may take before the test calls it a wait (only a hang reaches it).
const HANG: Duration = Duration::from_secs(30);

/// A FIFO nobody writes, /dev/zero, a directory and a dangling link.
fn hostile(d: &Dir) -> Vec<PathBuf> {
    vec![
        d.fifo("fifo"),
        PathBuf::from("/dev/zero"),
        d.mkdir("dir"),
        d.dangling_link("gone"),
    ]
}

/// Runs latlab with `args` (`{}` replaced by `path`) in `cwd`: it must end by itself with
/// `code`, naming the path, without a panic.
fn refused(args: &[&str], path: &Path, code: i32, cwd: &Path) {
    let p = path.to_str().unwrap();
    let argv: Vec<String> = args.iter().map(|a| a.replace("{}", p)).collect();
    let name = path.file_name().unwrap().to_str().unwrap();
    latlab()
        .args(&argv)
        .current_dir(cwd)
        .limit(HANG)
        .assert_refused(code, name);
}

#[test]
fn every_file_input_refuses_a_fifo_a_device_a_directory_and_a_dangling_link_at_once() {
    let d = Dir::new();
    let paths = hostile(&d);
    let store = format!("sqlite:{}", d.join("s.db").display());
    let cases: Vec<Vec<&str>> = vec![
        vec!["run", "{}", "--dry-run"],
        vec!["compare", "{}", "{}"],
        vec!["gate", "p99<1ms", "{}"],
        vec!["report", "{}", "-o", "out.html"],
        vec!["plot", "{}", "--svg", "out.svg"],
        vec!["samples", "{}"],
        vec!["runs", "import", "{}", "--store", &store],
        vec![
            "runs",
            "import",
            "--from",
            "cyclictest",
            "{}",
            "--store",
            &store,
        ],
        vec![
            "runs",
            "import",
            "--from",
            "rtla-hist",
            "{}",
            "--store",
            &store,
        ],
        vec![
            "runs", "import", "--from", "rtla-top", "{}", "--store", &store,
        ],
        vec![
            "monitor",
            "-a",
            "0",
            "-p",
            "0",
            "--no-store",
            "--web-config",
            "{}",
        ],
        vec![
            "cyclic",
            "-t",
            "1",
            "-l",
            "1",
            "--no-store",
            "--load",
            "io:path={}",
        ],
    ];
    for args in &cases {
        for p in &paths {
            refused(args, p, 2, d.path());
        }
    }
    // ministat keeps its own exit code for a file that is not there (1); anything else that
    // is not a regular file is latlab's refusal (2).
    for p in &paths {
        let code = if p.ends_with("gone") { 1 } else { 2 };
        refused(&["ministat", "{}"], p, code, d.path());
    }
    assert!(
        !d.join("s.db").exists(),
        "a refused import created the store"
    );
}

#[test]
fn a_web_configs_certificate_and_key_are_typed_and_bounded() {
    let d = Dir::new();
    for p in hostile(&d) {
        for (key, other) in [("cert_file", "key_file"), ("key_file", "cert_file")] {
            let web = d.write(
                format!("web-{key}.yml"),
                format!(
                    "tls_server_config:\n  {key}: {}\n  {other}: {}\n",
                    p.display(),
                    p.display()
                ),
            );
            let w = web.to_str().unwrap().to_string();
            refused(
                &[
                    "monitor",
                    "-a",
                    "0",
                    "-p",
                    "0",
                    "--no-store",
                    "--web-config",
                    &w,
                ],
                &p,
                2,
                d.path(),
            );
        }
    }
}

#[test]
fn a_bcrypt_cost_above_the_cap_is_refused_at_start_naming_file_and_cost() {
    let d = Dir::new();
    // A well-formed hash of cost 31 (checking it would take about 36 hours).
    let h = bcrypt::hash("x", 4).unwrap().replacen("$04$", "$31$", 1);
    let web = d.write(
        "slow-web.yml",
        format!("basic_auth_users:\n  prom: '{h}'\n"),
    );
    let out = latlab()
        .words("monitor -a 0 -p 0 --no-store -D 10s --web-config")
        .arg(&web)
        .limit(HANG)
        .assert_refused(2, "slow-web.yml");
    out.assert_refused_naming("cost 31");
}

#[test]
fn output_paths_are_refused_before_measuring() {
    let d = Dir::new();
    let dir = d.mkdir("dir");
    let fifo = d.fifo("fifo");
    let missing = d.join("no/such/folder/x.dat");
    for (flag, p) in [
        ("--trace-save", dir.as_path()),
        ("--trace-save", missing.as_path()),
        ("--trace-save", Path::new("/dev/full")),
        ("--trace-save", fifo.as_path()),
        ("--json", fifo.as_path()),
        ("--samples", fifo.as_path()),
        // A kernel setting is no output file (it would be changed without a journal).
        ("--json", Path::new(DOMAINNAME)),
        ("--samples", Path::new(DOMAINNAME)),
        ("--trace-save", Path::new(DOMAINNAME)),
    ] {
        let mut c = latlab();
        c.words("cyclic -t 1 -l 1000 --no-store");
        if flag == "--trace-save" {
            c.arg("--trace");
        }
        c.arg(flag).arg(p).limit(HANG).assert_refused(2, flag);
    }
    let json = d.join("r.json");
    latlab()
        .words("cyclic -t 1 -l 5 --no-store --json")
        .arg(&json)
        .assert_ok();
    latlab()
        .arg("report")
        .arg(&json)
        .arg("-o")
        .arg(&fifo)
        .limit(HANG)
        .assert_refused(2, "fifo");
    // A result under a name that is not UTF-8 is read like any other (compare and gate took
    // it; report refused it as an argument).
    let odd = d.join(std::ffi::OsStr::from_bytes(b"r\xff.json"));
    std::fs::copy(&json, &odd).unwrap();
    latlab()
        .arg("report")
        .arg(&odd)
        .arg("-o")
        .arg(d.join("odd.html"))
        .assert_ok();
    let before = std::fs::read(DOMAINNAME).unwrap();
    latlab()
        .arg("report")
        .arg(&json)
        .arg("-o")
        .arg(DOMAINNAME)
        .limit(HANG)
        .assert_refused(2, "the kernel's proc");
    assert_eq!(std::fs::read(DOMAINNAME).unwrap(), before);
}

/// A kernel setting anyone can read and root could write.
const DOMAINNAME: &str = "/proc/sys/kernel/domainname";

#[test]
fn a_sample_log_that_fills_its_disk_mid_run_is_a_warning_in_the_saved_result() {
    let Some(_x) = rt_test() else { return };
    if !have("unshare") {
        return skip("sample log on a full disk", "no unshare(1)");
    }
    let d = Dir::new();
    let small = d.mkdir("small");
    let json = d.join("r.json");
    // A 64 KiB tmpfs in a mount namespace of the test's own (gone with it): the log fills it
    // in about a second at 10 kHz.
    let script = format!(
        "mount -t tmpfs -o size=64k none {s} && exec \"$0\" cyclic -t 1 -a 1 -i 100us -D 3s -q --no-store --samples {s}/log.samples --json {j}",
        s = small.display(),
        j = json.display()
    );
    let mut sh = Command::new("unshare");
    sh.args(["-m", "--propagation", "private", "sh", "-c", &script])
        .arg(LATLAB);
    TestCommand::wrapping(sh).assert_ok();
    let run = read_json(&json);
    let w = run["warnings"].to_string();
    assert!(w.contains("--samples"), "{w}");
    assert!(run["series"][0]["count"].as_u64().unwrap() > 0);
}

#[test]
fn numbers_that_overflow_and_times_before_the_epoch_never_panic() {
    let d = Dir::new();
    let store = format!("sqlite:{}", d.join("s.db").display());
    latlab()
        .words("runs list --since 1970-01-01T00:00:00Z --store")
        .arg(&store)
        .assert_ok();
    let out = latlab()
        .words("report --fleet --since 100000d --store")
        .arg(&store)
        .arg("-o")
        .arg(d.join("f.html"))
        .assert_exit(2);
    assert!(!out.stderr.contains("panicked"), "{out}");
    expect_exit(&["runs", "list"], &["--since", "-1d"], 2, "--since");
    expect_exit(
        &["report", "--fleet", "-o", "x.html"],
        &["--since", "-1d"],
        2,
        "--since",
    );
    expect_exit(
        &["runs", "import", "--from", "cyclictest", "x.json"],
        &["--max-runs", "-1"],
        2,
        "--max-runs",
    );
    for (spec, says) in [
        ("cpu:threads=18446744073709551615", "threads"),
        ("cpu:threads=100000", "at most 1024"),
        ("memory:size=18446744073709551615", "memory"),
        ("memory:threads=18446744073709551615", "threads"),
        ("hackbench:groups=18446744073709551615,fds=20", "4000"),
        ("io:block=18446744073709551615", "block"),
        ("net:size=18446744073709551615", "size"),
    ] {
        expect_exit(
            &["cyclic", "-t", "1", "-l", "1", "--no-store"],
            &["--load", spec],
            2,
            says,
        );
    }
}

#[test]
fn a_read_only_command_never_creates_a_store() {
    let d = Dir::new();
    let db = d.join("new.db");
    let store = format!("sqlite:{}", db.display());
    latlab()
        .words("report --fleet --store")
        .arg(&store)
        .arg("-o")
        .arg(d.join("f.html"))
        .assert_exit(2);
    // A store named but not there reads as empty, and says so (a mistyped path).
    for cmd in [
        "runs list --store",
        "runs check --store",
        "runs export --all --store",
    ] {
        let out = latlab().words(cmd).arg(&store).output();
        out.assert_ok();
        assert!(out.stderr.contains("no store at"), "{out}");
    }
    // The configured store (or the default one) before the first run: empty, not created.
    latlab()
        .words("runs list")
        .env("LATLAB_STORE", &store)
        .assert_ok();
    let home = d.join("home");
    latlab()
        .words("runs list")
        .env_remove("LATLAB_STORE")
        .env("XDG_DATA_HOME", &home)
        .assert_ok();
    assert!(!home.exists(), "runs list created the default store");
    assert!(
        !db.exists(),
        "a command that only reads created {}",
        db.display()
    );
}

/// A result edited so its figures contradict each other (a maximum below its minimum, a count
/// its histogram does not hold) is refused by `compare` and `runs import` as `gate` refuses it
/// (exit 2 naming the file and the series), never compared, "proven" better, or stored.
#[test]
fn results_whose_figures_contradict_each_other_are_refused_everywhere() {
    let d = Dir::new();
    let good = d.join("good.json");
    latlab()
        .args([
            "cyclic",
            "-l",
            "300",
            "-i",
            "200us",
            "-q",
            "--no-store",
            "--json",
        ])
        .arg(&good)
        .output()
        .assert_ok();
    let run = read_json(&good);
    let edited = |name: &str, edit: &dyn Fn(&mut serde_json::Value)| {
        let mut r = run.clone();
        edit(&mut r["series"][0]);
        let p = d.join(name);
        std::fs::write(&p, r.to_string()).unwrap();
        (p, r)
    };
    let cases = [
        edited("lowmax.json", &|s| s["max_ns"] = 5.into()),
        edited("count.json", &|s| s["count"] = 77.into()),
        edited("mean.json", &|s| s["mean_ns"] = (-3.5).into()),
    ];
    let store = format!("sqlite:{}", d.join("s.db").display());
    for ((p, r), want) in cases.iter().zip([
        "exceeds its maximum",
        "contradicts its histogram",
        "is negative",
    ]) {
        let name = p.file_name().unwrap().to_str().unwrap();
        let out = latlab()
            .args(["compare", "--assume-independent-samples"])
            .arg(&good)
            .arg(p)
            .env("LATLAB_STORE", &store)
            .output();
        out.assert_exit(2);
        assert!(
            out.stderr.contains(name)
                && out.stderr.contains("series T0")
                && out.stderr.contains(want),
            "{out}"
        );
        let bundle = d.join(format!("bundle-{name}"));
        let b = serde_json::json!({"format": "latlab.bundle/1", "runs": [{"run": r, "tags": {}}]});
        std::fs::write(&bundle, b.to_string()).unwrap();
        let out = latlab()
            .args(["runs", "import", "--store", &store])
            .arg(&bundle)
            .output();
        out.assert_exit(2);
        assert!(
            out.stderr.contains(want) && out.stderr.contains("nothing imported"),
            "{out}"
        );
    }
    // The untouched result still compares and imports.
    latlab()
        .args(["compare", "--assume-independent-samples"])
        .arg(format!("a={}", good.display()))
        .arg(format!("b={}", good.display()))
        .env("LATLAB_STORE", &store)
        .output()
        .assert_ok();
    let bundle = d.join("bundle-good.json");
    let b = serde_json::json!({"format": "latlab.bundle/1", "runs": [{"run": run, "tags": {}}]});
    std::fs::write(&bundle, b.to_string()).unwrap();
    latlab()
        .args(["runs", "import", "--store", &store])
        .arg(&bundle)
        .output()
        .assert_ok();
    // Tag keys a selector could not name are refused as the bundle's, not `--tag`'s.
    let id = run["id"].as_str().unwrap().to_string();
    for key in ["a=b", " x", ""] {
        let bad = d.join("bundle-badtag.json");
        let b = serde_json::json!({"format": "latlab.bundle/1", "runs": [{"run": run, "tags": {key: "v"}}]});
        std::fs::write(&bad, b.to_string()).unwrap();
        let out = latlab()
            .args(["runs", "import", "--store", &store])
            .arg(&bad)
            .output();
        out.assert_exit(2);
        assert!(
            out.stderr
                .contains(&format!("of the bundle: tag key {key:?}"))
                && out.stderr.contains(&format!("run 1 ({id})"))
                && !out.stderr.contains("--tag"),
            "{out}"
        );
    }
    // And values no selector can name, or that would break a line.
    for value in ["", "a\nb"] {
        let bad = d.join("bundle-badvalue.json");
        let b = serde_json::json!({"format": "latlab.bundle/1", "runs": [{"run": run, "tags": {"k": value}}]});
        std::fs::write(&bad, b.to_string()).unwrap();
        latlab()
            .args(["runs", "import", "--store", &store])
            .arg(&bad)
            .assert_refused(2, "tag k=");
    }
    // A stored run edited in the store itself: `runs show` refuses its table too.
    let id = run["id"].as_str().unwrap().to_string();
    let mut lowmax = run.clone();
    lowmax["series"][0]["max_ns"] = 5.into();
    let conn = rusqlite::Connection::open(d.join("s.db")).unwrap();
    conn.execute(
        "UPDATE runs SET body = ?1 WHERE id = ?2",
        rusqlite::params![lowmax.to_string(), id],
    )
    .unwrap();
    drop(conn);
    let out = latlab()
        .args(["runs", "show", &id, "--store", &store])
        .output();
    out.assert_exit(2);
    assert!(out.stderr.contains("exceeds its maximum"), "{out}");
}

/// A broken latlab result given to `runs import` is told what is wrong with it as a result,
/// not that a bundle's `format` is missing.
#[test]
fn a_broken_result_is_told_as_a_result() {
    let dir = Dir::new();
    latlab()
        .words("cyclic -t 1 -l 20 -i 200us -q --no-store --json r.json")
        .current_dir(dir.path())
        .output()
        .assert_ok();
    let mut v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("r.json")).unwrap()).unwrap();
    v["series"][0].as_object_mut().unwrap().remove("count");
    std::fs::write(dir.join("r.json"), v.to_string()).unwrap();
    let out = latlab()
        .args(["runs", "import", "--store"])
        .arg(format!("sqlite:{}", dir.join("s.db").display()))
        .arg(dir.join("r.json"))
        .output();
    out.assert_exit(2);
    assert!(
        out.stderr.contains("missing field `count`") && !out.stderr.contains("bundle"),
        "{out}"
    );
}

/// A file under a stored run's id with other contents is not that run: it is not imported
/// over it, and the import says so (the same file again is silently present).
#[test]
fn a_different_run_under_a_stored_id_is_said() {
    let dir = Dir::new();
    latlab()
        .words("cyclic -t 1 -l 20 -i 200us -q --no-store --json r.json")
        .current_dir(dir.path())
        .output()
        .assert_ok();
    let store = format!("sqlite:{}", dir.join("s.db").display());
    let import = |f: &str| {
        latlab()
            .args(["runs", "import", "--store", &store])
            .arg(dir.join(f))
            .output()
    };
    import("r.json").assert_ok();
    let again = import("r.json");
    again.assert_ok();
    assert!(!again.stderr.contains("other contents"), "{again}");
    let mut v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("r.json")).unwrap()).unwrap();
    v["duration_s"] = 123.0.into();
    std::fs::write(dir.join("r2.json"), v.to_string()).unwrap();
    let other = import("r2.json");
    other.assert_ok();
    assert!(
        other
            .stderr
            .contains("is already stored with other contents: the stored one is kept"),
        "{other}"
    );
}

/// A `LATLAB_JOURNAL` that cannot be a journal is bad input, named: a directory, a dangling
/// link (`restore` then failed on the link).
#[test]
fn a_journal_path_that_cannot_be_one_is_refused() {
    let dir = Dir::new();
    let link = dir.join("dangling");
    std::os::unix::fs::symlink("/nonexistent-latlab-target", &link).unwrap();
    for j in [dir.path().to_path_buf(), link] {
        for args in [
            &["cyclic", "-t", "1", "-l", "10", "-q", "--no-store"][..],
            &["restore"],
        ] {
            let out = latlab().args(args).journal(&j).output();
            out.assert_exit(2);
            assert!(out.stderr.contains("LATLAB_JOURNAL"), "{out}");
        }
    }
}

#[test]
fn a_refused_file_is_not_echoed_back_whole() {
    // A parser's message quotes what it refused: a result that is one 2 MB string came back
    // as 2 MB on stderr.
    let d = Dir::new();
    let p = d.join("string.json");
    std::fs::write(&p, format!("\"{}\"", "a".repeat(2 << 20))).unwrap();
    let html = d.join("r.html");
    let report = ["report", "-o", html.to_str().unwrap()];
    for args in [&report[..], &["gate", "max<1s"][..]] {
        let out = latlab().args(args).arg(&p).output();
        out.assert_exit(2);
        assert!(out.stderr.len() < 8192, "{} bytes", out.stderr.len());
        assert!(out.stderr.contains("string.json"), "{out}");
    }
}
