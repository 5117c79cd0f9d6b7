//! The table of measurements seen from the command line: options every measurement shares
//! (`--strict`), getopt-style values that name their flag, and planned work that is bounded.

use crate::util::{expect_exit, latlab, latlab_as_nobody, Dir};

/// Every measurement `latlab help` lists before the other commands.
const MEASUREMENTS: &[&str] = &[
    "cyclic", "noise", "ctxsw", "clocks", "tcp", "contend", "migrate", "monitor",
];

#[test]
fn every_measurement_takes_the_common_options_after_its_own() {
    for m in MEASUREMENTS {
        let out = latlab().args([m, "--help"]).assert_ok();
        let help = &out.stdout;
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
    let out = latlab().arg("--help").output();
    let help = &out.stdout;
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
    let dir = Dir::new();
    latlab()
        .current_dir(dir.path())
        .words("cyclic -l 5 -q --store --no-store")
        .assert_refused(2, "'--no-store'")
        .assert_refused_naming("--store");
    assert!(
        !dir.join("--no-store").exists(),
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
    latlab()
        .words("cyclic -l 5 -q --no-store --json -")
        .assert_ok();
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
    latlab()
        .words("cyclic -t -a -l 3 -q --no-store -p 0")
        .assert_ok();
}

/// Runs latlab as `nobody` with its state and store in `dir`; None (after a skip) where that
/// cannot be done.
fn as_nobody(dir: &Dir, args: &[&str]) -> Option<std::process::Output> {
    let vars = [
        format!("XDG_STATE_HOME={}", dir.join("state").display()),
        format!("HOME={}", dir.path().display()),
        "LATLAB_JOURNAL=".to_string(),
    ];
    let mut c = latlab_as_nobody(dir, &vars)?;
    Some(c.args(args).current_dir(dir.path()).output().unwrap())
}

#[test]
fn strict_refuses_and_nothing_is_journaled_that_cannot_change_as_nobody() {
    let dir = Dir::new();
    // --strict holds for every measurement: contend's FIFO 50 is refused, not degraded.
    let Some(out) = as_nobody(&dir, &["contend", "--strict", "-D", "1s", "--no-store"]) else {
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
    let out = as_nobody(&dir, &args).unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("--clocksource"), "{err}");
    assert!(
        !dir.join("state/latlab/restore.json").exists(),
        "a journal was left behind"
    );
    let out = as_nobody(&dir, &["runs", "list", "--store", "sqlite:r.db"]).unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("restore"), "a later start warns: {err}");
}

/// noise as `nobody`: real time refused, its spinners run SCHED_OTHER, and no warning about
/// RT throttling gaps "caused by latlab's own RT priority" (there is none) is recorded.
#[test]
fn noise_without_real_time_warns_of_no_rt_throttling() {
    let dir = Dir::new();
    let Some(out) = as_nobody(
        &dir,
        &["noise", "-D", "1200ms", "--no-store", "--json", "n.json"],
    ) else {
        return;
    };
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let v = crate::util::read_json(&dir.join("n.json"));
    let w = v["warnings"].to_string();
    assert!(!w.contains("caused by latlab's own RT priority"), "{w}");
}
