//! The table of measurements seen from the command line: options every measurement shares
//! (`--strict`), getopt-style values that name their flag, and planned work that is bounded.

use crate::util::{expect_exit, latlab};

/// Every measurement `latlab help` lists before the other commands.
const MEASUREMENTS: &[&str] = &[
    "cyclic", "noise", "ctxsw", "clocks", "tcp", "contend", "migrate", "monitor",
];

#[test]
fn every_measurement_takes_the_common_options_after_its_own() {
    for m in MEASUREMENTS {
        let out = latlab().args([m, "--help"]).output().unwrap();
        assert!(out.status.success(), "{m} --help");
        let help = String::from_utf8_lossy(&out.stdout);
        let common = help
            .find("Common options:")
            .unwrap_or_else(|| panic!("{m}: no common options heading:\n{help}"));
        for flag in ["--strict", "--store", "--no-store", "--tag", "--load"] {
            let at = help
                .find(&format!("{flag} "))
                .or_else(|| help.find(&format!("{flag}\n")))
                .unwrap_or_else(|| panic!("{m}: no {flag}:\n{help}"));
            assert!(
                at > common,
                "{m}: {flag} is listed before the measurement's own flags"
            );
        }
    }
}

#[test]
fn help_lists_the_measurements_first_in_table_order() {
    let out = latlab().arg("--help").output().unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    let at: Vec<usize> = MEASUREMENTS
        .iter()
        .map(|m| {
            help.find(&format!("\n  {m} "))
                .unwrap_or_else(|| panic!("{m}:\n{help}"))
        })
        .collect();
    assert!(at.windows(2).all(|w| w[0] < w[1]), "{help}");
    assert!(at.last().copied() < help.find("\n  compare "), "{help}");
}

#[test]
fn a_negative_value_names_its_flag() {
    expect_exit(
        &["cyclic"],
        &["-i", "-5us", "--no-store"],
        2,
        "-i/--interval",
    );
    expect_exit(&["cyclic"], &["-D", "-1s", "--no-store"], 2, "--duration");
    expect_exit(&["noise"], &["-D", "-1", "--no-store"], 2, "--duration");
    expect_exit(
        &["monitor"],
        &["-i", "-1ms", "--no-store"],
        2,
        "-i/--interval",
    );
}

#[test]
fn an_option_where_a_value_belongs_is_refused_naming_the_option() {
    let dir = tempfile::tempdir().unwrap();
    let out = latlab()
        .current_dir(dir.path())
        .args(["cyclic", "-l", "5", "-q", "--store", "--no-store"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--store") && err.contains("'--no-store'"),
        "{err}"
    );
    assert!(
        !dir.path().join("--no-store").exists(),
        "a store file named --no-store was made"
    );
    expect_exit(&["cyclic"], &["--json", "--quiet", "-l", "5"], 2, "--json");
    // Values that start with '-' but are not options still pass: a negative time names its
    // flag for its sign, and `--json -` is stdout.
    expect_exit(
        &["cyclic"],
        &["-i", "-5us", "--no-store"],
        2,
        "must be greater than zero",
    );
    let out = latlab()
        .args(["cyclic", "-l", "5", "-q", "--no-store", "--json", "-"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn absurd_planned_work_is_refused_before_it_starts() {
    let huge = "18446744073709551615";
    expect_exit(
        &["clocks"],
        &["--batch", huge, "--clocks", "monotonic", "--no-store"],
        2,
        "--batch",
    );
    expect_exit(
        &["cyclic"],
        &["-l", "99999999999999999", "--no-store"],
        2,
        "-l/--loops",
    );
    expect_exit(
        &["cyclic"],
        &["-D", "100000h", "--no-store"],
        2,
        "--duration",
    );
    expect_exit(
        &["contend"],
        &["-n", huge, "--no-store"],
        2,
        "-n/--iterations",
    );
    expect_exit(
        &["monitor"],
        &["-D", "1000d", "--no-store"],
        2,
        "-D/--duration",
    );
    expect_exit(
        &["tcp"],
        &["-D", "1h", "--repeat", "9999", "--no-store"],
        2,
        "--repeat",
    );
}

#[test]
fn optional_values_still_read_as_flags() {
    // `-t -a` is two flags (cyclictest's habit), not -t with the value "-a".
    let out = latlab()
        .args([
            "cyclic",
            "-t",
            "-a",
            "-l",
            "3",
            "-q",
            "--no-store",
            "-p",
            "0",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Runs latlab as `nobody` from a world-readable copy of the binary, with its state and store
/// in `dir`; None (and a skip line) where that cannot be done.
fn as_nobody(test: &str, dir: &std::path::Path, args: &[&str]) -> Option<std::process::Output> {
    // SAFETY: no arguments.
    let root = unsafe { libc::geteuid() } == 0;
    if !root || !std::path::Path::new("/usr/sbin/runuser").exists() {
        crate::util::skip(test, "needs root and runuser to drop to 'nobody'");
        return None;
    }
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let bin = dir.join("latlab");
    if !bin.exists() {
        std::fs::copy(env!("CARGO_BIN_EXE_latlab"), &bin).unwrap();
        std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let state = dir.join("state");
    Some(
        std::process::Command::new("runuser")
            .args(["-u", "nobody", "--", "env"])
            .arg(format!("XDG_STATE_HOME={}", state.display()))
            .arg(format!("HOME={}", dir.display()))
            .arg("LATLAB_JOURNAL=")
            .arg(&bin)
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap(),
    )
}

#[test]
fn strict_refuses_and_nothing_is_journaled_that_cannot_change_as_nobody() {
    let dir = tempfile::tempdir().unwrap();
    let t = "strict_refuses_and_nothing_is_journaled_that_cannot_change_as_nobody";
    // --strict holds for every measurement: contend's FIFO 50 is refused, not degraded.
    let Some(out) = as_nobody(
        t,
        dir.path(),
        &["contend", "--strict", "-D", "1s", "--no-store"],
    ) else {
        return;
    };
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(
        err.contains("--strict") || err.contains("required"),
        "{err}"
    );
    // A clocksource switch nobody may not make is refused before anything is journaled, so no
    // later start warns about a journal only root could clear.
    let args = [
        "clocks",
        "--clocksource",
        "kvm-clock",
        "--clocks",
        "monotonic",
        "--no-store",
    ];
    let out = as_nobody(t, dir.path(), &args).unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("--clocksource"), "{err}");
    assert!(
        !dir.path().join("state/latlab/restore.json").exists(),
        "a journal was left behind"
    );
    let out = as_nobody(t, dir.path(), &["runs", "list", "--store", "sqlite:r.db"]).unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("restore"), "a later start warns: {err}");
}
