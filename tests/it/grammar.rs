//! One grammar across the measurements, checked over the whole table: every measurement takes
//! the shared flags, and a refused value is named by its flag.

use latlab::table::{Entry, TABLE};
use latlab_core::config::CpuSet;

/// The CPUs the lowering is checked against (what a two-CPU machine has).
fn online() -> CpuSet {
    CpuSet::from_cpus([0, 1])
}

/// What a measurement needs to lower at all (sched a target, load a spec).
fn base(name: &str) -> &'static [&'static str] {
    match name {
        "sched" => &["--all"],
        "load" => &["cpu"],
        "qualify" => &["-D", "1h"],
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
            let err = latlab_lab::driver::args::name_the_flag(err, &cmd);
            Err((if err.use_stderr() { 2 } else { 0 }, err.to_string()))
        }
        Ok(m) => e
            .lowered(&m, &online())
            .map(|text| without_id(&text))
            .map_err(|err| (err.exit_code(), err.to_string())),
    }
}

/// A config's text with its fresh id (a qualification's, made at lowering) left out, so two
/// lowerings of the same command line compare equal.
fn without_id(text: &str) -> String {
    match text.find("id: \"") {
        Some(at) => {
            let from = at + "id: \"".len();
            let to = text[from..].find('"').map_or(text.len(), |n| from + n);
            format!("{}ID{}", &text[..from], &text[to..])
        }
        None => text.to_string(),
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

/// The flags of `e` that take a value (positionals and `--help` aside), with what they need
/// beside them to be accepted at all (the `--trace-*` and `--on-threshold*` flags need
/// `--trace`).
fn valued_flags(e: &Entry) -> Vec<(clap::Arg, Vec<&'static str>)> {
    e.command()
        .get_arguments()
        .filter(|a| !a.is_positional() && a.get_action().takes_values())
        .map(|a| {
            let long = a.get_long().unwrap_or_default();
            let needs = match (e.name, long) {
                (_, l) if l != "trace" && (l.starts_with("trace") || l.starts_with("on-")) => {
                    vec!["--trace"]
                }
                // cyclic's deadline times need the deadline policy, ipc's --burst a ring.
                ("cyclic", "period" | "work" | "runtime" | "deadline") => {
                    vec!["--policy", "deadline"]
                }
                ("ipc", "burst") => vec!["--ring", "3"],
                _ => vec![],
            };
            (a.clone(), needs)
        })
        .collect()
}

/// How a message may name `a`: latlab's `-i/--interval`, or clap's own `--interval <TIME>`
/// (a value outside a flag's possible values); both contain `--interval`.
fn named(a: &clap::Arg) -> String {
    match a.get_long() {
        Some(l) => format!("--{l}"),
        None => format!("-{}", a.get_short().unwrap()),
    }
}

#[test]
fn every_refused_value_names_its_flag() {
    // Values some flag of every kind refuses: negative, not a number, zero, past u64, a unit
    // that is no unit, an empty word.
    let bad = [
        "-1",
        "NaN",
        "0",
        "18446744073709551616",
        "5parsecs",
        "",
        "-5us",
        "1ns",
        "100h",
    ];
    let mut refused = 0;
    let mut wrong = Vec::new();
    for e in TABLE {
        for (a, needs) in valued_flags(e) {
            let flag = latlab_lab::driver::args::flag_name(&a);
            for v in bad {
                // An optional value (`-t [N]`, `-a [CPUSET]`) that starts with '-' is read as
                // the next flag unless it is a number, so `-t -a` stays two flags: `-a -5us`
                // is clap's "unexpected argument '-5'", and nothing latlab can name.
                let optional = a.get_num_args().is_some_and(|r| r.min_values() == 0);
                if optional && v.starts_with('-') && v.parse::<f64>().is_err() {
                    continue;
                }
                let mut args = base(e.name).to_vec();
                args.extend(&needs);
                args.extend([flag.split('/').next_back().unwrap(), v]);
                let Err((code, msg)) = lower(e, &args) else {
                    continue;
                };
                refused += 1;
                if code != 2 || !msg.contains(&named(&a)) {
                    wrong.push(format!(
                        "latlab {} {flag} {v:?}: exit {code}: {msg}",
                        e.name
                    ));
                }
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "refused without naming the flag (or not exit 2):\n{}",
        wrong.join("\n")
    );
    assert!(
        refused > 100,
        "only {refused} refusals: the table lost its flags?"
    );
}

/// The value a help text states as the default ("Default 1000.", "Default: 5m"), when it is
/// one (a number, or a word the flag takes), not prose ("Default: until Ctrl-C").
fn stated_default(a: &clap::Arg) -> Option<String> {
    let help = a.get_help()?.to_string();
    let at = help.find("Default")?;
    let rest = help[at + "Default".len()..]
        .trim_start_matches(':')
        .trim_start();
    let word: String = rest
        .split_whitespace()
        .next()?
        .trim_end_matches(['.', ',', ')', ';'])
        .to_string();
    let takes: Vec<String> = a
        .get_possible_values()
        .iter()
        .map(|p| p.get_name().to_string())
        .collect();
    (word.starts_with(|c: char| c.is_ascii_digit()) || takes.contains(&word)).then_some(word)
}

#[test]
fn every_default_stated_in_help_is_the_default_in_code() {
    let mut compared = 0;
    let mut wrong = Vec::new();
    for e in TABLE {
        for (a, needs) in valued_flags(e) {
            let Some(default) = stated_default(&a) else {
                continue;
            };
            let flag = latlab_lab::driver::args::flag_name(&a);
            let mut args = base(e.name).to_vec();
            args.extend(&needs);
            let without = lower(e, &args);
            args.extend([flag.split('/').next_back().unwrap(), default.as_str()]);
            let with = lower(e, &args);
            if without != with {
                wrong.push(format!(
                    "latlab {} --help says {flag} defaults to {default}:\n  without: \
                     {without:?}\n  with:    {with:?}",
                    e.name
                ));
            }
            compared += 1;
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    assert!(compared > 20, "only {compared} stated defaults found");
}

#[test]
fn another_name_lowers_as_the_flag_it_names() {
    // --cpus is another name of -a/--affinity (same meaning, no warning); --prio of -p.
    let cases: &[(&str, &[&str], &[&str])] = &[
        ("noise", &["--cpus", "0"], &["-a", "0"]),
        ("ctxsw", &["--cpus", "0"], &["-a", "0"]),
        ("migrate", &["--prio", "40"], &["-p", "40"]),
        // Old spellings that changed meaning lower as their new spelling (and warn: below).
        ("migrate", &["--tasks", "3"], &["-t", "3"]),
        (
            "ipc",
            &["--method", "futex", "-a", "0,1"],
            &[
                "--method",
                "futex",
                "--sender-cpu",
                "0",
                "--receiver-cpu",
                "1",
            ],
        ),
    ];
    for (name, old, new) in cases {
        let e = latlab::table::find(name).unwrap();
        let (o, n) = (lower(e, old), lower(e, new));
        assert!(o.is_ok(), "{name} {old:?}: {o:?}");
        assert_eq!(o, n, "{name} {old:?} vs {new:?}");
    }
}

#[test]
fn an_old_spelling_that_changed_meaning_warns_on_stderr_and_in_the_run() {
    use crate::util::latlab;
    let out = latlab()
        .words("ipc --method futex -a 0,1 -l 20 -i 100us --no-store --json -")
        .assert_ok();
    assert!(
        out.stderr
            .contains("ipc -a 0,1 (the sender's CPU, then the receiver's) is deprecated")
            && out.stderr.contains("--sender-cpu 0 --receiver-cpu 1"),
        "{out}"
    );
    let warnings = out.json()["warnings"].to_string();
    assert!(warnings.contains("is deprecated"), "{warnings}");
    // The new spelling says nothing of the kind.
    let out = latlab()
        .words("ipc --method futex --sender-cpu 0 --receiver-cpu 1 -l 20 -i 100us")
        .words("--no-store --json -")
        .assert_ok();
    assert!(!out.stderr.contains("deprecated"), "{out}");
}

#[test]
fn quiet_monitor_does_not_say_where_it_serves_unless_the_kernel_picked_the_port() {
    use crate::util::latlab;
    let port = crate::monitor::free_port();
    let run = |extra: &str| {
        latlab()
            .words("monitor -a 0 -p 0 -D 1s --no-store")
            .words(extra)
            .assert_ok()
            .stderr
    };
    let said = |stderr: &str| stderr.contains("latlab monitor: serving http://");
    assert!(said(&run(&format!("--listen 127.0.0.1:{port}"))));
    assert!(!said(&run(&format!("-q --listen 127.0.0.1:{port}"))));
    // Port 0: the address is news, so even -q prints it.
    assert!(said(&run("-q --listen 127.0.0.1:0")));
}
