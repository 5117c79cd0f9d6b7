//! The test harness (tests/it/util/) on its own: a command fed on stdin, its exit code and
//! output when an assertion fails, a bounded wait that fails instead of hanging, and the
//! hostile files a `Dir` makes (a directory where a file belongs, a dangling link).

use crate::util::{latlab, Dir};
use std::time::Duration;

#[test]
fn stdin_is_fed_and_closed() {
    let out = latlab()
        .words("ministat -")
        .stdin("1\n2\n3\n4\n")
        .assert_ok();
    assert!(out.stdout.contains("x <stdin>"), "{out}");
    // Without input stdin is /dev/null (never the terminal the tests run from): ministat then
    // has no values to report.
    let out = latlab().words("ministat -").output();
    assert_ne!(out.code(), Some(0), "{out}");
}

#[test]
fn a_failed_exit_code_assertion_shows_the_command_and_what_it_wrote() {
    let failed = std::panic::catch_unwind(|| {
        latlab().words("cyclic --policy edf").assert_ok();
    })
    .unwrap_err();
    let msg = failed.downcast_ref::<String>().cloned().unwrap_or_default();
    for want in ["latlab cyclic --policy edf", "--- stderr", "--policy"] {
        assert!(msg.contains(want), "{want} not in {msg}");
    }
}

#[test]
fn a_command_that_outlives_its_limit_fails_the_test_and_is_killed() {
    // A measurement planned for a minute, given half a second.
    let failed = std::panic::catch_unwind(|| {
        latlab()
            .words("cyclic -t 1 -D 60s --no-store")
            .limit(Duration::from_millis(500))
            .output();
    })
    .unwrap_err();
    let msg = failed.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(msg.contains("still running"), "{msg}");
}

#[test]
fn a_directory_and_a_dangling_link_as_input_exit_2_naming_them() {
    let dir = Dir::new();
    let inputs = [dir.mkdir("sub"), dir.dangling_link("gone.txt")];
    for p in &inputs {
        let name = p.display().to_string();
        latlab()
            .arg("compare")
            .arg(format!("a={name}"))
            .arg(format!("b={name}"))
            .assert_refused(2, &name);
    }
    assert_eq!(dir.entries(), ["gone.txt", "sub"], "nothing was written");
}
