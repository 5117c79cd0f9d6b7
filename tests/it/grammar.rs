//! One grammar across the measurements, checked over the whole table: every measurement takes
//! the shared flags, and a refused value is named by its flag.

use latlab::config::CpuSet;
use latlab::table::{Entry, TABLE};

/// The CPUs the lowering is checked against (what a two-CPU machine has).
fn online() -> CpuSet {
    CpuSet::from_cpus([0, 1])
}

/// What a measurement needs to lower at all (sched a target, load a spec).
fn base(name: &str) -> &'static [&'static str] {
    match name {
        "sched" => &["--all"],
        "load" => &["cpu"],
        _ => &[],
    }
}

/// Parses (as `latlab NAME ARGS` does: the table's command, the flag named in a refusal) and
/// lowers without running: the config's Debug text, or the exit code and message the command
/// would end with.
fn lower(e: &Entry, args: &[&str]) -> Result<String, (i32, String)> {
    let mut cmd = e.command();
    let argv = std::iter::once(e.name).chain(args.iter().copied());
    match cmd.try_get_matches_from_mut(argv) {
        Err(err) => {
            let err = latlab::driver::args::name_the_flag(err, &cmd);
            Err((if err.use_stderr() { 2 } else { 0 }, err.to_string()))
        }
        Ok(m) => e
            .lowered(&m, &online())
            .map_err(|err| (err.exit_code(), err.to_string())),
    }
}

#[test]
fn every_measurement_takes_quiet() {
    for e in TABLE {
        let mut args = base(e.name).to_vec();
        args.push("-q");
        lower(e, &args).unwrap_or_else(|err| panic!("{} -q: {err:?}", e.name));
    }
}

#[test]
fn the_short_and_long_spelling_of_a_value_are_named_alike() {
    // -i -5us through the short flag: the message names both spellings.
    let e = latlab::table::find("cyclic").unwrap();
    let (code, msg) = lower(e, &["-i", "-5us"]).unwrap_err();
    assert_eq!(code, 2);
    assert!(msg.contains("-i/--interval -5us: "), "{msg}");
    let (_, msg) = lower(e, &["-t", "-1"]).unwrap_err();
    assert!(msg.contains("-t/--threads -1: "), "{msg}");
}
