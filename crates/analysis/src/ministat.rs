//! `latlab ministat ARGS` (also `latlab compare --ministat ARGS`, or latlab run under the name
//! `ministat`): ministat's command line, parsed like glibc `getopt("AC:c:d:snw:")` with GNU
//! argument permutation, its messages and exit codes.

use latlab_core::stats::ministat::read::MAX_VALUES_BYTES;
use latlab_core::stats::ministat::{self, read_set, read_set_sized, Options, ReadError};
use latlab_core::stats::student::LEVELS;
use std::ffi::{OsStr, OsString};
use std::io::{IsTerminal, Write};
use std::path::Path;

/// Arguments of `latlab ministat`: passed through unparsed to ministat's own option rules.
#[derive(Debug, clap::Args)]
#[command(disable_help_flag = true)]
pub struct MinistatArgs {
    /// ministat's flags and files (file names need not be UTF-8).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
    pub args: Vec<std::ffi::OsString>,
}

impl crate::command::Command for MinistatArgs {
    /// Runs ministat and exits with its code (ministat's, not latlab's: 1 for a file it cannot
    /// read, 2 for bad usage).
    fn run(self, _: &crate::command::Lab) -> latlab_core::error::Result<()> {
        std::process::exit(main(&self.args))
    }
}

const USAGE: &str = "Usage: ministat [-C column] [-c confidence] [-d delimiter(s)] [-Ans] [-w width] [file [file ...]]\n\tconfidence = {80%, 90%, 95%, 98%, 99%, 99.5%}\n\t-A : print statistics only. suppress the graph.\n\t-C : column number to extract (starts and defaults to 1)\n\t-d : delimiter(s) string, default to \" \\t\"\n\t-n : print summary statistics only, no graph/test\n\t-s : print avg/median/stddev bars on separate lines\n\t-w : width of graph/test output (default 74 or terminal width)\n";

/// The end of a ministat invocation: what goes to stderr, and the exit code.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Outcome {
    /// Standard error.
    pub(crate) stderr: String,
    /// Exit code.
    pub(crate) code: i32,
}

fn usage(whine: &str, pre: String) -> Outcome {
    Outcome {
        stderr: format!("{pre}{whine}\n{USAGE}"),
        code: 2,
    }
}

/// C `strtol(s, &p, 10)` requiring `*p == '\0'`: Ok(value) or Err(()) when text is left over.
fn strtol_whole(s: &str) -> Result<i64, ()> {
    let t = s.trim_start_matches([' ', '\t', '\n', '\x0b', '\x0c', '\r']);
    let (neg, digits) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let end = digits
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(digits.len());
    if end == 0 {
        // No conversion: strtol leaves p at the start of the string.
        return if s.is_empty() { Ok(0) } else { Err(()) };
    }
    if end != digits.len() {
        return Err(());
    }
    // Out of range, strtol saturates at LONG_MAX / LONG_MIN.
    Ok(match digits[..end].parse::<i64>() {
        Ok(v) if neg => -v,
        Ok(v) => v,
        Err(_) if neg => i64::MIN,
        Err(_) => i64::MAX,
    })
}

/// Widest plot drawn (ministat's own limit is its memory).
const MAX_WIDTH: usize = 1 << 20;

/// Parsed options and operands.
struct Parsed {
    opts: Options,
    column: usize,
    delim: Vec<u8>,
    files: Vec<OsString>,
}

fn parse<A: AsRef<OsStr>>(args: &[A], tty_width: Option<usize>) -> Result<Parsed, Outcome> {
    let mut o = Options {
        width: tty_width.unwrap_or(74),
        ..Options::default()
    };
    let mut column = 1usize;
    let mut delim = b" \t".to_vec();
    let mut files = Vec::new();
    // Options are ASCII; operands are file names, kept as the bytes given.
    let mut it = args.iter().map(|a| a.as_ref());
    let mut only_operands = false;
    while let Some(os) = it.next() {
        let a = os.to_string_lossy();
        if only_operands || a == "-" || !a.starts_with('-') {
            files.push(os.to_os_string());
            continue;
        }
        if a == "--" {
            only_operands = true;
            continue;
        }
        let chars: Vec<char> = a[1..].chars().collect();
        let mut k = 0;
        while k < chars.len() {
            let c = chars[k];
            k += 1;
            match c {
                'A' => o.no_plot = true,
                'n' => o.stats_only = true,
                's' => o.separate = true,
                'C' | 'c' | 'd' | 'w' => {
                    let arg: String = if k < chars.len() {
                        let rest: String = chars[k..].iter().collect();
                        k = chars.len();
                        rest
                    } else if let Some(next) = it.next() {
                        next.to_string_lossy().into_owned()
                    } else {
                        return Err(usage(
                            "Unknown option",
                            format!("ministat: option requires an argument -- '{c}'\n"),
                        ));
                    };
                    match c {
                        // ministat keeps strtol's long in an int: the value is truncated
                        // to 32 bits before its checks, and so it is here.
                        'C' => match strtol_whole(&arg).map(|v| v as i32) {
                            Err(()) => return Err(usage("Invalid column number.", String::new())),
                            Ok(v) if v <= 0 => {
                                return Err(usage(
                                    "Column number should be positive.",
                                    String::new(),
                                ))
                            }
                            Ok(v) => column = v as usize,
                        },
                        'c' => match read::strtod(&arg) {
                            None => {
                                return Err(usage("Not a floating point number", String::new()))
                            }
                            Some(v) => match LEVELS.iter().position(|&l| l == v) {
                                Some(i) => o.confidence = i,
                                None => {
                                    return Err(usage(
                                        "No support for confidence level",
                                        String::new(),
                                    ))
                                }
                            },
                        },
                        'd' => {
                            if arg.is_empty() {
                                return Err(usage(
                                    "Can't use empty delimiter string",
                                    String::new(),
                                ));
                            }
                            delim = arg.into_bytes();
                        }
                        _ => match strtol_whole(&arg).map(|v| v as i32) {
                            Err(()) => {
                                return Err(usage("Invalid width, not a number.", String::new()))
                            }
                            Ok(v) if v < 0 => {
                                return Err(usage(
                                    "Unable to move beyond left margin.",
                                    String::new(),
                                ))
                            }
                            Ok(v) => o.width = v as usize,
                        },
                    }
                }
                other => {
                    return Err(usage(
                        "Unknown option",
                        format!("ministat: invalid option -- '{other}'\n"),
                    ));
                }
            }
        }
    }
    Ok(Parsed {
        opts: o,
        column,
        delim,
        files,
    })
}

mod read {
    /// `strtod` over the whole string (ministat's -c check).
    pub(crate) fn strtod(s: &str) -> Option<f64> {
        latlab_core::stats::ministat::read::strtod_whole(s.as_bytes())
    }
}

/// The plot width a terminal implies, as ministat works it out (COLUMNS, else columns − 2).
pub(crate) fn terminal_width() -> Option<usize> {
    if !std::io::stdout().is_terminal() {
        return None;
    }
    if let Some(c) = std::env::var_os("COLUMNS").filter(|c| !c.is_empty()) {
        let c = c.to_string_lossy();
        return Some(strtol_whole(c.trim()).unwrap_or(0).max(0) as usize);
    }
    latlab_core::sys::term::stdout_columns()
        .filter(|&c| c > 0)
        .map(|c| c as usize - 2)
}

/// Runs ministat over `args` (everything after the command name), writing its report to `out`.
pub(crate) fn run<A: AsRef<OsStr>>(
    args: &[A],
    tty_width: Option<usize>,
    out: &mut dyn Write,
) -> Outcome {
    let p = match parse(args, tty_width) {
        Ok(p) => p,
        Err(o) => return o,
    };
    let names: Vec<OsString> = if p.files.is_empty() {
        vec!["-".into()]
    } else {
        p.files.clone()
    };
    if names.len() > 7 {
        return usage("Too many datasets.", String::new());
    }
    let read_one = |os: &OsString| {
        let n = os.to_string_lossy();
        if n == "-" {
            read_set(std::io::stdin().lock(), "<stdin>", p.column, &p.delim)
        } else {
            // Only a regular file (never waited on: a FIFO or /dev/zero is refused at once).
            match latlab_core::io::open_typed(Path::new(os), Some(MAX_VALUES_BYTES), false) {
                Ok(f) => {
                    let size = f.metadata().ok().map(|m| m.len());
                    read_set_sized(f, size, &n, p.column, &p.delim)
                }
                Err(e) if e.kind() == std::io::ErrorKind::InvalidInput => Err(ReadError::Refused(
                    format!("latlab: {n}: {e} (or - for stdin)"),
                )),
                Err(e) => Err(ReadError::Open(format!(
                    "ministat: Cannot open {n}: {}",
                    c_strerror(&e)
                ))),
            }
        }
    };
    // Regular files are read in parallel (two at a time on two cores); errors are still
    // reported for the first failing file in command-line order, as ministat does. Anything
    // else (stdin, a FIFO, a missing file) is read in order, each only after the ones before
    // it succeeded, so an early error ends the run before a later pipe is waited for.
    let all_regular = names
        .iter()
        .all(|n| n != "-" && std::fs::metadata(n).is_ok_and(|m| m.is_file()));
    let results: Vec<Result<_, ReadError>> = if !all_regular {
        let mut sets = Vec::new();
        for n in &names {
            let r = read_one(n);
            let failed = r.is_err();
            sets.push(r);
            if failed {
                break;
            }
        }
        sets
    } else {
        std::thread::scope(|sc| {
            let handles: Vec<_> = names
                .iter()
                .map(|n| sc.spawn(move || read_one(n)))
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|_| {
                        Err(ReadError::Refused(
                            "latlab: a reader thread panicked".into(),
                        ))
                    })
                })
                .collect()
        })
    };
    let mut sets = Vec::with_capacity(names.len());
    for r in results {
        match r {
            Ok(set) => sets.push(set),
            Err(e) => {
                return Outcome {
                    stderr: format!("{}\n", e.message()),
                    code: e.exit_code(),
                }
            }
        }
    }
    if !p.opts.stats_only && !p.opts.no_plot && p.opts.width < 2 {
        return Outcome {
            stderr: format!("latlab: -w {}: the plot needs a width of at least 2 (ministat crashes below that); use -A for no plot\n", p.opts.width),
            code: 2,
        };
    }
    if !p.opts.stats_only && !p.opts.no_plot && p.opts.width > MAX_WIDTH {
        return Outcome {
            stderr: format!("latlab: -w {}: wider than {MAX_WIDTH} columns (ministat would try to allocate the plot and fail); use -A for no plot\n", p.opts.width),
            code: 2,
        };
    }
    // ministat prints inf/nan statistics and then crashes drawing them: refuse instead.
    if !p.opts.stats_only && !p.opts.no_plot {
        if let Some(d) = sets
            .iter()
            .find(|d| !(d.sy.is_finite() && d.syy.is_finite()))
        {
            return Outcome {
                stderr: format!("latlab: {}: the values' sums overflow a double (ministat crashes on them); use -A for no plot\n", d.name),
                code: 2,
            };
        }
    }
    let written = ministat::write_report(&sets, &p.opts, out).and_then(|_| out.flush());
    // The process ends right after this: skip freeing large sets (that alone costs milliseconds).
    std::mem::forget(sets);
    match written {
        // A reader that went away (`| head`) is not a failure.
        Ok(()) => Outcome {
            stderr: String::new(),
            code: 0,
        },
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Outcome {
            stderr: String::new(),
            code: 0,
        },
        Err(e) => Outcome {
            stderr: format!("latlab: stdout: {e}\n"),
            code: 3,
        },
    }
}

/// The C library's text for an I/O error (Rust appends " (os error N)").
fn c_strerror(e: &std::io::Error) -> String {
    let s = e.to_string();
    match s.rfind(" (os error") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

/// Runs ministat and writes its output; returns the exit code. File names need not be UTF-8.
pub fn main<A: AsRef<OsStr>>(args: &[A]) -> i32 {
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::with_capacity(1 << 16, stdout.lock());
    let o = run(args, terminal_width(), &mut out);
    drop(out);
    let _ = std::io::stderr().write_all(o.stderr.as_bytes());
    o.code
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn getopt_rules() {
        let p = parse(
            &args(&["-An", "-C2", "-d", ",", "f1", "-s", "f2", "--", "-w"]),
            None,
        )
        .ok()
        .unwrap();
        assert!(p.opts.no_plot && p.opts.stats_only && p.opts.separate);
        assert_eq!(p.column, 2);
        assert_eq!(p.delim, b",");
        assert_eq!(p.files, vec!["f1", "f2", "-w"]);
        let e = run(&args(&["-c", "97"]), None, &mut Vec::new());
        assert_eq!(e.code, 2);
        assert!(e
            .stderr
            .starts_with("No support for confidence level\nUsage: ministat"));
        assert!(run(&args(&["-x"]), None, &mut Vec::new())
            .stderr
            .starts_with("ministat: invalid option -- 'x'\nUnknown option\n"));
        assert!(run(&args(&["-C", "0"]), None, &mut Vec::new())
            .stderr
            .starts_with("Column number should be positive."));
        assert!(run(&args(&["-w", "-3"]), None, &mut Vec::new())
            .stderr
            .starts_with("Unable to move beyond left margin."));
        let many: Vec<String> = (0..8).map(|i| format!("f{i}")).collect();
        assert!(run(&many, None, &mut Vec::new())
            .stderr
            .starts_with("Too many datasets."));
    }
}
