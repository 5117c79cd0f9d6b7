//! The command line: latlab's subcommands (the measurements from the table of measurements,
//! the analysis commands from `latlab_analysis::COMMANDS`, the rest declared here) parsed into
//! raw arguments, then dispatched (`commands`).

pub use store::{BisectArgs, RunArgs, RunsCmd};

use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand};
use std::path::PathBuf;

/// latlab — a latency lab for Linux.
#[derive(Debug, Parser)]
#[command(name = "latlab", version, about, long_about = None, propagate_version = true)]
pub struct Cli {
    /// The measurement or tool to run.
    #[command(subcommand)]
    pub command: Command,
}

/// latlab's subcommands other than measurements and the analysis commands of
/// `latlab_analysis::COMMANDS` (those come from their tables, `crate::table` and that one, and
/// are added to the parser by [`command`]).
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Runs one --load in a worker process (internal).
    #[command(hide = true)]
    LoadWorker(LoadWorkerArgs),
    /// Runs one --on-threshold shell: command in a process group that dies with latlab
    /// (internal).
    #[command(hide = true)]
    ActionWorker(ActionWorkerArgs),
    /// Run an experiment plan (TOML): factors x levels x repeats, knobs restored, runs stored
    /// under one experiment id, each level compared with the baseline.
    Run(RunArgs),
    /// Find the first kernel of an ordered list that made a plan's measurement worse, each
    /// step decided over fresh boots against the good and bad ends.
    Bisect(BisectArgs),
    /// Put back system settings a plan changed and could not restore (after a crash or kill).
    Restore,
    /// The results store: list, show, export, import, delete runs.
    #[command(subcommand)]
    Runs(RunsCmd),
    /// Print a shell completion script: `latlab completions bash > /etc/bash_completion.d/latlab`.
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Write man pages (latlab.1, latlab-SUBCOMMAND.1) into DIR, e.g. /usr/local/share/man/man1.
    Man {
        /// Directory the pages go to (created if missing).
        dir: PathBuf,
    },
}

/// A parsed command line: a measurement from the table with its matches, or another command.
#[derive(Debug)]
pub enum Parsed {
    /// A measurement and its arguments, still to be lowered.
    Measure(&'static crate::table::Entry, clap::ArgMatches),
    /// An analysis command of `latlab_analysis::COMMANDS` and its arguments.
    Analysis(&'static latlab_analysis::command::Entry, clap::ArgMatches),
    /// Any other command.
    Other(Command),
}

/// The order `latlab help` lists the commands that are not measurements in (they follow the
/// measurements): `*` stands for the analysis commands not named, in their table's order, so a
/// new one needs no line here.
const LISTING: &[&str] = &[
    "compare",
    "ministat",
    "run",
    "bisect",
    "restore",
    "runs",
    "samples",
    "report",
    "plot",
    "gate",
    "*",
    "completions",
    "man",
];

/// latlab's whole command line: the measurements from the table first, then the other
/// commands and the analysis commands of `latlab_analysis::COMMANDS` in [`LISTING`]'s order.
/// Help, completions and man pages are drawn from it.
pub fn command() -> clap::Command {
    let mut cmd = Cli::command();
    for (i, e) in crate::table::TABLE.iter().enumerate() {
        cmd = cmd.subcommand(e.deferred().display_order(i));
    }
    for e in latlab_analysis::COMMANDS {
        cmd = cmd.subcommand(e.command());
    }
    let n = crate::table::TABLE.len();
    let rest = LISTING
        .iter()
        .position(|&l| l == "*")
        .unwrap_or(LISTING.len());
    let unnamed = latlab_analysis::COMMANDS
        .iter()
        .filter(|e| !LISTING.contains(&e.name))
        .map(|e| e.name);
    let order: Vec<&str> = LISTING[..rest]
        .iter()
        .copied()
        .chain(unnamed)
        .chain(LISTING[rest..].iter().copied().filter(|&l| l != "*"))
        .collect();
    for (i, name) in order.iter().enumerate() {
        cmd = cmd.mut_subcommand(name, |c| c.display_order(n + i));
    }
    cmd
}

/// Parses a command line (with the program name first).
pub fn parse<I, T>(argv: I) -> Result<Parsed, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let argv: Vec<std::ffi::OsString> = argv.into_iter().map(Into::into).collect();
    let mut cmd = command();
    let m = cmd.try_get_matches_from_mut(&argv).map_err(|e| {
        if e.kind() == clap::error::ErrorKind::InvalidUtf8 {
            return not_utf8(&argv).unwrap_or(e);
        }
        if e.kind() == clap::error::ErrorKind::UnknownArgument {
            return negative_value(&e, &argv, sub_named(&cmd, &argv)).unwrap_or(e);
        }
        latlab_lab::driver::args::name_the_flag(e, sub_named(&cmd, &argv))
    })?;
    if let Some((name, sub)) = m.subcommand() {
        if let Some(e) = crate::table::find(name) {
            return Ok(Parsed::Measure(e, sub.clone()));
        }
        if let Some(e) = latlab_analysis::command::find(name) {
            return Ok(Parsed::Analysis(e, sub.clone()));
        }
    }
    Ok(Parsed::Other(Cli::from_arg_matches(&m)?.command))
}

/// clap takes a negative number after a flag (`--bootstrap -1`) for an unknown flag of its
/// own and names neither: said as the flag's bad value.
fn negative_value(
    e: &clap::Error,
    argv: &[std::ffi::OsString],
    sub: &clap::Command,
) -> Option<clap::Error> {
    use clap::error::{ContextKind, ContextValue};
    let Some(ContextValue::String(arg)) = e.get(ContextKind::InvalidArg) else {
        return None;
    };
    if !(arg.starts_with('-') && arg[1..].starts_with(|c: char| c.is_ascii_digit() || c == '.')) {
        return None;
    }
    // clap names `-0` of `-0.5` (a cluster of short flags): the word it came from is the
    // number.
    let (i, word) = argv.iter().enumerate().skip(1).find_map(|(i, w)| {
        let w = w.to_str()?;
        (w.starts_with(arg.as_str()) && w.parse::<f64>().is_ok()).then_some((i, w))
    })?;
    let flag = argv.get(i.checked_sub(1)?)?.to_str()?;
    if !(flag.starts_with('-') && flag.len() > 1 && !flag.contains('=')) {
        return None;
    }
    // A switch (`--higher-is-better -1`) takes no value at all.
    let switch = sub
        .get_arguments()
        .find(|a| match flag.strip_prefix("--") {
            Some(long) => a.get_long() == Some(long),
            None => flag.len() == 2 && a.get_short() == flag.chars().nth(1),
        })
        .is_some_and(|a| !a.get_action().takes_values());
    let why = if switch {
        format!("{flag} takes no value, and {word} is no option")
    } else {
        "a negative number is not a value it takes".to_string()
    };
    Some(clap::Error::raw(
        clap::error::ErrorKind::ValueValidation,
        format!("{flag} {word}: {why}\n"),
    ))
}

/// clap's "invalid UTF-8" error names no argument: the first value that is not UTF-8 where
/// an option takes text (`--tag k=\xff`, `--tag=k=\xff`), with its option. File names need not
/// be UTF-8, so a word that follows no option is passed over.
fn not_utf8(argv: &[std::ffi::OsString]) -> Option<clap::Error> {
    use std::os::unix::ffi::OsStrExt;
    let (flag, word) = argv.iter().enumerate().skip(1).find_map(|(i, w)| {
        if w.to_str().is_some() {
            return None;
        }
        let bytes = w.as_bytes();
        if bytes.starts_with(b"--") {
            let end = bytes.iter().position(|&b| b == b'=').unwrap_or(bytes.len());
            let value = &bytes[(end + 1).min(bytes.len())..];
            return Some((
                String::from_utf8_lossy(&bytes[..end]).into_owned(),
                String::from_utf8_lossy(value).into_owned(),
            ));
        }
        let before = argv[i - 1].to_str()?;
        (before.starts_with('-') && before.len() > 1)
            .then(|| (before.to_string(), w.to_string_lossy().into_owned()))
    })?;
    Some(clap::Error::raw(
        clap::error::ErrorKind::InvalidUtf8,
        format!("{flag}: its value '{word}' is not valid UTF-8\n"),
    ))
}

/// The subcommand `argv` names (its flags are the ones a bad value belongs to), else `cmd`.
pub fn sub_named<'c>(cmd: &'c clap::Command, argv: &[std::ffi::OsString]) -> &'c clap::Command {
    argv.get(1)
        .and_then(|n| cmd.find_subcommand(n))
        .unwrap_or(cmd)
}

/// Arguments of the hidden `action-worker`.
#[derive(Debug, Args)]
pub struct ActionWorkerArgs {
    /// The latlab process whose death ends the command.
    pub parent: i32,
    /// The shell command.
    #[arg(allow_hyphen_values = true)]
    pub cmd: String,
}

/// Arguments of the hidden `load-worker`.
#[derive(Debug, Args)]
pub struct LoadWorkerArgs {
    /// The load spec.
    pub spec: String,
}

pub mod check;
pub mod commands;
pub mod docs;
pub mod store;

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsString;
    use std::os::unix::ffi::OsStringExt;

    fn os(words: &[&[u8]]) -> Vec<OsString> {
        words
            .iter()
            .map(|w| OsString::from_vec(w.to_vec()))
            .collect()
    }

    #[test]
    fn a_negative_value_after_a_flag_names_the_flag() {
        let e = match parse(["latlab", "compare", "--bootstrap", "-1", "a", "b"]) {
            Err(e) => e.to_string(),
            Ok(_) => panic!("-1 accepted"),
        };
        assert!(
            e.contains("--bootstrap -1: a negative number is not a value it takes"),
            "{e}"
        );
        let e = match parse(["latlab", "compare", "--confidence", "-0.5", "a", "b"]) {
            Err(e) => e.to_string(),
            Ok(_) => panic!("-0.5 accepted"),
        };
        assert!(e.contains("--confidence -0.5: a negative number"), "{e}");
        let e = match parse(["latlab", "compare", "--higher-is-better", "-1", "a", "b"]) {
            Err(e) => e.to_string(),
            Ok(_) => panic!("-1 accepted"),
        };
        assert!(
            e.contains(
                "--higher-is-better -1: --higher-is-better takes no value, and -1 is no option"
            ),
            "{e}"
        );
    }

    #[test]
    fn a_value_that_is_not_utf8_is_refused_naming_its_option() {
        for argv in [
            os(&[b"latlab", b"cyclic", b"--tag", b"k=\xff"]),
            os(&[b"latlab", b"cyclic", b"--tag=k=\xff"]),
        ] {
            let e = parse(argv).unwrap_err();
            assert_eq!(e.kind(), clap::error::ErrorKind::InvalidUtf8);
            assert!(e.use_stderr());
            let text = e.to_string();
            assert!(text.contains("--tag: its value 'k=\u{fffd}'"), "{text}");
        }
    }
}
