//! Hostile input (issue 34): files that never end or never open, output paths that cannot be
//! written, numbers that overflow, times before the epoch. Each is refused at once with exit 2
//! naming the flag or the path — never a panic, never a wait.

use crate::util::{expect_exit, latlab, scratch};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// A directory with a FIFO nobody writes (`fifo`), a dangling link (`gone`) and a directory
/// (`dir`).
fn hostile_dir() -> (tempfile::TempDir, Vec<PathBuf>) {
    let d = tempfile::tempdir().unwrap();
    let fifo = d.path().join("fifo");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let gone = d.path().join("gone");
    std::os::unix::fs::symlink(d.path().join("nothing-here"), &gone).unwrap();
    let dir = d.path().join("dir");
    std::fs::create_dir(&dir).unwrap();
    let paths = vec![fifo, PathBuf::from("/dev/zero"), dir, gone];
    (d, paths)
}

/// Runs latlab with `args` (`{}` replaced by `path`); it must end by itself (exit `code`)
/// within a bounded time, naming the path, without a panic.
fn refused(args: &[&str], path: &Path, code: i32, cwd: &Path) {
    let p = path.to_str().unwrap();
    let argv: Vec<String> = args.iter().map(|a| a.replace("{}", p)).collect();
    let mut child = latlab()
        .args(&argv)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    crate::util::wait_bounded(
        &mut child,
        Duration::from_secs(30),
        &format!("latlab {argv:?} waited on {p}"),
    );
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(code), "{argv:?}: {err}");
    let name = path.file_name().unwrap().to_str().unwrap();
    assert!(
        err.contains(name),
        "{argv:?}: stderr does not name {p}: {err}"
    );
    assert!(!err.contains("panicked"), "{argv:?}: {err}");
}

#[test]
fn every_file_input_refuses_a_fifo_a_device_a_directory_and_a_dangling_link_at_once() {
    let (d, paths) = hostile_dir();
    let store = format!("sqlite:{}", d.path().join("s.db").display());
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
        !d.path().join("s.db").exists(),
        "a refused import created the store"
    );
}

#[test]
fn a_web_configs_certificate_and_key_are_typed_and_bounded() {
    let (d, paths) = hostile_dir();
    for p in &paths {
        for key in ["cert_file", "key_file"] {
            let other = if key == "cert_file" {
                "key_file"
            } else {
                "cert_file"
            };
            let web = d.path().join(format!("web-{key}.yml"));
            std::fs::write(
                &web,
                format!(
                    "tls_server_config:\n  {key}: {}\n  {other}: {}\n",
                    p.display(),
                    p.display()
                ),
            )
            .unwrap();
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
                p,
                2,
                d.path(),
            );
        }
    }
}

#[test]
fn a_bcrypt_cost_above_the_cap_is_refused_at_start_naming_file_and_cost() {
    let d = tempfile::tempdir().unwrap();
    // A well-formed hash of cost 31 (its check would take about 36 hours).
    let h = bcrypt::hash("x", 4).unwrap().replacen("$04$", "$31$", 1);
    let web = d.path().join("slow-web.yml");
    std::fs::write(&web, format!("basic_auth_users:\n  prom: '{h}'\n")).unwrap();
    let mut child = latlab()
        .args(["monitor", "-a", "0", "-p", "0", "--no-store", "-D", "10s"])
        .arg("--web-config")
        .arg(&web)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    crate::util::wait_bounded(
        &mut child,
        Duration::from_secs(30),
        "monitor verified a cost-31 hash",
    );
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("slow-web.yml") && err.contains("cost 31"),
        "{err}"
    );
}

#[test]
fn output_paths_are_refused_before_measuring() {
    let (d, paths) = hostile_dir();
    let dir = d.path().join("dir");
    let fifo = d.path().join("fifo");
    let missing = d.path().join("no/such/folder/x.dat");
    for (flag, p) in [
        ("--trace-save", dir.as_path()),
        ("--trace-save", missing.as_path()),
        ("--trace-save", Path::new("/dev/full")),
        ("--trace-save", fifo.as_path()),
        ("--json", fifo.as_path()),
        ("--samples", fifo.as_path()),
    ] {
        let mut args = vec!["cyclic", "-t", "1", "-l", "1000", "--no-store"];
        if flag == "--trace-save" {
            args.extend(["--trace"]);
        }
        args.extend([flag, p.to_str().unwrap()]);
        let mut child = latlab()
            .args(&args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        crate::util::wait_bounded(
            &mut child,
            Duration::from_secs(30),
            &format!("{args:?} waited on its output"),
        );
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(flag), "{args:?}: {err}");
    }
    refused(&["report", "{}", "-o", "x.html"], &paths[1], 2, d.path());
    let json = d.path().join("r.json");
    let out = latlab()
        .args(["cyclic", "-t", "1", "-l", "5", "--no-store", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    crate::util::assert_exit(&out, 0);
    let mut child = latlab()
        .arg("report")
        .arg(&json)
        .arg("-o")
        .arg(&fifo)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    crate::util::wait_bounded(&mut child, Duration::from_secs(30), "report -o FIFO");
    assert_eq!(child.wait().unwrap().code(), Some(2));
}

#[test]
fn a_sample_log_that_fills_its_disk_mid_run_is_a_warning_in_the_saved_result() {
    if let Some(why) = crate::util::rt_unavailable() {
        return crate::util::skip("sample log on a full disk", &why);
    }
    if !latlab::sys::process::command_exists("unshare") {
        return crate::util::skip("sample log on a full disk", "no unshare(1)");
    }
    let d = tempfile::tempdir().unwrap();
    let small = d.path().join("small");
    std::fs::create_dir(&small).unwrap();
    let json = d.path().join("r.json");
    // A 64 KiB tmpfs in a mount namespace of the test's own (gone with it): the log fills it
    // in about a second at 10 kHz.
    let script = format!(
        "mount -t tmpfs -o size=64k none {s} && exec \"$0\" cyclic -t 1 -a 1 -i 100us -D 3s -q --no-store --samples {s}/log.samples --json {j}",
        s = small.display(),
        j = json.display()
    );
    let out = Command::new("unshare")
        .args(["-m", "--propagation", "private", "sh", "-c", &script])
        .arg(env!("CARGO_BIN_EXE_latlab"))
        .env("LATLAB_JOURNAL", scratch().join("restore.json"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let run = crate::util::read_json(&json);
    let w = run["warnings"].to_string();
    assert!(w.contains("--samples"), "{w}");
    assert!(run["series"][0]["count"].as_u64().unwrap() > 0);
}

#[test]
fn numbers_that_overflow_and_times_before_the_epoch_never_panic() {
    let d = tempfile::tempdir().unwrap();
    let store = format!("sqlite:{}", d.path().join("s.db").display());
    let out = latlab()
        .args([
            "runs",
            "list",
            "--since",
            "1970-01-01T00:00:00Z",
            "--store",
            &store,
        ])
        .output()
        .unwrap();
    crate::util::assert_exit(&out, 0);
    let html = d.path().join("f.html");
    let out = latlab()
        .args([
            "report", "--fleet", "--since", "100000d", "--store", &store, "-o",
        ])
        .arg(&html)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(!err.contains("panicked"), "{err}");
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
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("new.db");
    let store = format!("sqlite:{}", db.display());
    let out = latlab()
        .args(["report", "--fleet", "--store", &store, "-o"])
        .arg(d.path().join("f.html"))
        .output()
        .unwrap();
    crate::util::assert_exit(&out, 2);
    for args in [
        vec!["runs", "list", "--store", &store],
        vec!["runs", "check", "--store", &store],
    ] {
        let out = latlab().args(&args).output().unwrap();
        crate::util::assert_exit(&out, 0);
    }
    assert!(
        !db.exists(),
        "a command that only reads created {}",
        db.display()
    );
}
