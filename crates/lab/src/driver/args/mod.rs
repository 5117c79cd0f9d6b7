//! The options every measurement takes (clap), flattened into each one's arguments, and
//! [`Lowering`], the contract between a measurement's raw arguments and the driver: the table
//! of measurements (`crate::table`) needs nothing else to parse, check, plan and run one.

pub(crate) mod groups;

pub(crate) use groups::{Loads, Output, StoreArgs, Strict};

use super::{execute, Common, Measurement};
use clap::Args;
use latlab_core::config::CpuSet;
use latlab_core::error::Result;

/// Options every measurement takes: its output (`-q`, `--json`), loads to run during it, where
/// its result is kept, and whether a refused real-time setting degrades (with a warning) or
/// fails.
#[derive(Debug, Args, Clone, Default)]
#[command(next_help_heading = "Common options")]
pub(crate) struct MeasureArgs {
    /// `-q/--quiet`, `--json`.
    #[command(flatten)]
    pub(crate) output: Output,
    /// Where results are kept.
    #[command(flatten)]
    pub(crate) store: StoreArgs,
    /// `--load`, `--housekeeping`.
    #[command(flatten)]
    pub(crate) loads: Loads,
    /// `--strict`.
    #[command(flatten)]
    pub(crate) rt: Strict,
}

impl MeasureArgs {
    /// The shared options, validated (a bad `--load` spec is exit 2 naming it).
    pub(crate) fn to_common(&self) -> Result<Common> {
        Ok(Common {
            json: self.output.json.clone(),
            store: self.store.store.clone(),
            no_store: self.store.no_store,
            tags: self.store.tag.clone(),
            loads: {
                let mut loads: Vec<crate::loadgen::LoadSpec> = self
                    .loads
                    .load
                    .iter()
                    .map(|s| crate::loadgen::LoadSpec::parse(s))
                    .collect::<Result<_>>()?;
                if let Some(h) = &self.loads.housekeeping {
                    let set = h.online("--housekeeping", &CpuSet::online_here())?;
                    for l in &mut loads {
                        l.confine_to(&set);
                    }
                }
                loads
            },
            strict: self.rt.strict,
            warnings: Vec::new(),
        })
    }

    /// `-q/--quiet`.
    pub(crate) fn quiet(&self) -> bool {
        self.output.quiet
    }

    /// `--strict`.
    pub(crate) fn strict(&self) -> bool {
        self.rt.strict
    }
}

/// A measurement's raw arguments: how they lower into its validated config, and how the
/// config runs. The table of measurements holds one of these per measurement.
pub(crate) trait Lowering: clap::Args + clap::FromArgMatches + Sized {
    /// The validated config, which runs through the driver (its `Debug` text is what
    /// `tests/it/grammar.rs` compares: a default stated in the help lowers as the code's).
    type Config: Measurement + std::fmt::Debug;

    /// The options every measurement shares.
    fn common(&self) -> &MeasureArgs;

    /// Old spellings given that still work for one release: one warning each, printed to
    /// stderr when the run starts and recorded in the run's warnings.
    fn deprecations(&self) -> Vec<String> {
        Vec::new()
    }

    /// The shared options, validated, with this command line's deprecation warnings (printed
    /// now, recorded with the result).
    fn common_options(&self) -> Result<Common> {
        let mut c = self.common().to_common()?;
        c.warnings = self.deprecations();
        for w in &c.warnings {
            latlab_core::note!("latlab: warning: {w}");
        }
        Ok(c)
    }

    /// Validates the raw arguments against the online CPUs: every failure is exit 2 naming
    /// the flag.
    fn lower(&self, online: &CpuSet) -> Result<Self::Config>;

    /// The time one run is expected to take (ns), for a plan's estimate; by default the
    /// driver's deadline.
    fn planned_ns(&self, config: &Self::Config) -> Option<u64> {
        config
            .planned()
            .map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
    }

    /// Refuses what a plan must not ask of this measurement (a setting the plan should journal
    /// as a knob, say). Accepts everything by default.
    fn check_in_plan(&self, _config: &Self::Config) -> std::result::Result<(), String> {
        Ok(())
    }

    /// Runs the measurement through the driver: lower, then `execute`.
    fn run(self, online: &CpuSet, command_line: Vec<String>) -> Result<()> {
        let config = self.lower(online)?;
        let common = self.common_options()?;
        execute(config, &common, command_line)
    }
}

/// Parses one measurement's arguments as `latlab NAME ARGS...` would (`argv` starts with the
/// program and NAME): the table's dispatch and tests share it.
#[cfg(test)]
pub(crate) fn parse_args<A: clap::Args + clap::FromArgMatches, I, T>(
    name: &'static str,
    argv: I,
) -> std::result::Result<A, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let mut argv = argv.into_iter().map(Into::into);
    let program = argv.next().unwrap_or_else(|| "latlab".into());
    let _ = argv.next();
    let mut cmd =
        A::augment_args(clap::Command::new(name).no_binary_name(false)).mut_args(getopt_values);
    let m = cmd
        .try_get_matches_from_mut(std::iter::once(program).chain(argv))
        .map_err(|e| name_the_flag(e, &cmd))?;
    A::from_arg_matches(&m)
}

/// An option that needs a value takes the next word whatever it looks like, as getopt does, so
/// `-i -5us` is "-i/--interval -5us: ..." (naming the flag) rather than "unexpected argument
/// '-5'". Options whose value is optional (`-t [N]`, `-a [CPUSET]`) keep clap's rule, so
/// `-t -a` still reads as two flags, but take a negative number as their value (latlab has no
/// digit flags), so `-t -1` names `-t/--threads` too.
pub(crate) fn getopt_values(a: clap::Arg) -> clap::Arg {
    let takes = a.get_action().takes_values() && !a.is_positional();
    let optional = a.get_num_args().is_some_and(|r| r.min_values() == 0);
    if takes && !optional {
        a.allow_hyphen_values(true)
    } else if takes {
        a.allow_negative_numbers(true)
    } else {
        a
    }
}

/// How latlab names a flag in messages: `-i/--interval`, `--json`, `-h`.
pub fn flag_name(a: &clap::Arg) -> String {
    match (a.get_short(), a.get_long()) {
        (Some(s), Some(l)) => format!("-{s}/--{l}"),
        (None, Some(l)) => format!("--{l}"),
        (Some(s), None) => format!("-{s}"),
        (None, None) => a.get_id().to_string(),
    }
}

/// A value a flag's parser refused, written as latlab writes every bad flag,
/// `-i/--interval -5us: must be greater than zero` (clap's own words name `--interval <TIME>`
/// only); other errors are left as clap wrote them. `cmd` is the command that parsed (its
/// subcommands are searched too).
pub fn name_the_flag(e: clap::Error, cmd: &clap::Command) -> clap::Error {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if e.kind() != ErrorKind::ValueValidation {
        return e;
    }
    let (Some(ContextValue::String(arg)), Some(ContextValue::String(value))) = (
        e.get(ContextKind::InvalidArg),
        e.get(ContextKind::InvalidValue),
    ) else {
        return e;
    };
    let Some(why) = std::error::Error::source(&e).map(ToString::to_string) else {
        return e;
    };
    // Rendering an argument needs its command built (subcommands included), or clap panics.
    let mut built = cmd.clone();
    built.build();
    let Some(flag) = find_arg(&built, arg) else {
        return e;
    };
    clap::Error::raw(
        ErrorKind::ValueValidation,
        format!("{flag} {value}: {why}\n"),
    )
}

/// The name of the argument clap renders as `shown` (`--interval <TIME>`), in `cmd` or its
/// subcommands.
fn find_arg(cmd: &clap::Command, shown: &str) -> Option<String> {
    cmd.get_arguments()
        .find(|a| a.to_string() == shown)
        .map(flag_name)
        .or_else(|| cmd.get_subcommands().find_map(|c| find_arg(c, shown)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, clap::Args)]
    struct Probe {
        #[command(flatten)]
        timing: groups::Timing,
        #[command(flatten)]
        threads: groups::ThreadsArg,
    }

    fn refusal(args: &[&str]) -> String {
        let argv = ["latlab", "probe"].iter().chain(args);
        parse_args::<Probe, _, _>("probe", argv)
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn a_refused_value_is_named_by_its_flag_in_both_spellings() {
        assert_eq!(
            refusal(&["-i", "-5us"]),
            "error: -i/--interval -5us: must be greater than zero\n"
        );
        // An optional value takes a negative number too (no "unexpected argument '-1'").
        assert!(refusal(&["-t", "-1"]).contains("-t/--threads -1: "));
        assert!(refusal(&["-D", "NaN"]).contains("-D/--duration NaN: "));
        // Other errors are left as clap wrote them.
        assert!(refusal(&["--bogus"]).contains("unexpected argument"));
        let a: Probe = parse_args("probe", ["latlab", "probe", "-t", "-i", "2"]).unwrap();
        assert_eq!(
            (*a.threads, a.timing.interval.as_ref().map(|t| t.ns)),
            (Some(None), Some(2_000))
        );
    }
}
