//! One row of the table of measurements (`crate::measure::TABLE`): a measurement's name, help,
//! stored kind, whether a plan may run it, its facts, and — through its argument type's
//! [`Lowering`] — how its arguments are parsed, checked and run through the driver. The
//! table's rows are made by [`entry`]; dispatch, the plan checker, completions, man pages and
//! `latlab help` read them.

use super::Lowering;
use latlab_core::config::CpuSet;
use latlab_core::error::{Error, Result};

/// One measurement.
pub struct Entry {
    /// The subcommand (`latlab NAME`).
    pub name: &'static str,
    /// One line of help (`latlab help`).
    pub about: &'static str,
    /// The kind its runs are stored as (`runs list --kind`): its config's `Measurement::KIND`.
    pub kind: &'static str,
    /// Whether a plan (`latlab run`) may run it.
    pub plannable: bool,
    /// What the layers below the table need to know about its runs.
    pub facts: latlab_core::result::kind::Facts,
    /// Adds its arguments to a clap command.
    args: fn(clap::Command) -> clap::Command,
    /// Lowers parsed arguments without running (the plan checker): the expected length of one
    /// run (ns) when known, or why a plan cannot run it.
    check: fn(&clap::ArgMatches, &CpuSet) -> std::result::Result<Planned, String>,
    /// Lowers parsed arguments and runs the measurement through the driver.
    run: fn(&clap::ArgMatches, &CpuSet, Vec<String>) -> Result<()>,
    /// Renders a stored run of its kind as it printed it, when it can.
    show: fn(&latlab_core::result::Run, latlab_core::config::DisplayUnit) -> Option<String>,
    /// Lowers parsed arguments without running: the config's `Debug` text.
    lowered: fn(&clap::ArgMatches, &CpuSet) -> Result<String>,
}

impl std::fmt::Debug for Entry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Entry")
            .field("name", &self.name)
            .field("kind", &self.kind)
            .field("plannable", &self.plannable)
            .finish()
    }
}

/// The row of the measurement whose arguments are `A`.
pub(crate) const fn entry<A: Lowering>(
    name: &'static str,
    about: &'static str,
    plannable: bool,
) -> Entry {
    Entry {
        name,
        about,
        kind: <A::Config as crate::driver::Measurement>::KIND,
        plannable,
        facts: <A::Config as crate::driver::Measurement>::FACTS,
        args: arguments::<A>,
        check: check::<A>,
        run: run::<A>,
        show: <A::Config as crate::driver::Measurement>::render_stored,
        lowered: lowered::<A>,
    }
}

fn lowered<A: Lowering>(m: &clap::ArgMatches, online: &CpuSet) -> Result<String> {
    Ok(format!("{:?}", parsed::<A>(m)?.lower(online)?))
}

/// What the configuration says of one run before it is made (the plan checker's answer).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Planned {
    /// Its expected length (ns), when it has a deadline.
    pub(crate) ns: Option<u64>,
    /// Samples per second, all series together, when the measurement knows it.
    pub(crate) rate: Option<f64>,
}

fn parsed<A: Lowering>(m: &clap::ArgMatches) -> Result<A> {
    A::from_arg_matches(m).map_err(|e| Error::Usage(e.to_string()))
}

fn check<A: Lowering>(
    m: &clap::ArgMatches,
    online: &CpuSet,
) -> std::result::Result<Planned, String> {
    let a = parsed::<A>(m).map_err(|e| e.to_string())?;
    for s in &a.common().loads.load {
        crate::loadgen::LoadSpec::parse(s).map_err(|e| e.to_string())?;
    }
    let c = a.lower(online).map_err(|e| e.to_string())?;
    a.check_in_plan(&c)?;
    Ok(Planned {
        ns: a.planned_ns(&c),
        rate: crate::driver::Measurement::planned_rate(&c),
    })
}

fn run<A: Lowering>(
    m: &clap::ArgMatches,
    online: &CpuSet,
    command_line: Vec<String>,
) -> Result<()> {
    parsed::<A>(m)?.run(online, command_line)
}

/// Adds the arguments of `A` to a measurement's command, keeping the help line it was given
/// (the arguments' own doc comment would replace it).
fn arguments<A: Lowering>(c: clap::Command) -> clap::Command {
    latlab_analysis::command::keeping_about(c, |c| {
        A::augment_args(c).mut_args(crate::driver::args::getopt_values)
    })
}

impl Entry {
    /// Its clap subcommand: name, help and arguments.
    pub fn command(&self) -> clap::Command {
        (self.args)(clap::Command::new(self.name).about(self.about))
    }

    /// Its clap subcommand with the arguments added only when it is used (a command line
    /// names one measurement: building every measurement's arguments costs a millisecond).
    pub fn deferred(&self) -> clap::Command {
        clap::Command::new(self.name)
            .about(self.about)
            .long_about(None)
            .defer(self.args)
    }

    /// Lowers its parsed arguments as the run would, without running: the expected length of
    /// one run (ns) when known, or the first problem.
    pub fn check(&self, m: &clap::ArgMatches) -> std::result::Result<Planned, String> {
        self.no_option_as_value(m).map_err(|e| e.to_string())?;
        (self.check)(m, &CpuSet::online_here())
    }

    /// An option's value may start with `-` (`-i -5us`, `--json -`), but an option given where
    /// a value belongs (`--store --no-store`) is refused naming the option that lacks its value,
    /// instead of becoming a file called `--no-store`.
    fn no_option_as_value(&self, m: &clap::ArgMatches) -> Result<()> {
        let cmd = self.command();
        for a in cmd
            .get_arguments()
            .filter(|a| a.is_allow_hyphen_values_set())
        {
            let Ok(Some(raw)) = m.try_get_raw(a.get_id().as_str()) else {
                continue;
            };
            for v in raw {
                let v = v.to_string_lossy();
                let mut c = v.chars();
                let looks_like_option = c.next() == Some('-')
                    && c.next().is_some_and(|d| !(d.is_ascii_digit() || d == '.'));
                if looks_like_option {
                    let flag = crate::driver::args::flag_name(a);
                    return Err(Error::Usage(format!(
                        "{flag}: needs a value, but the next word is the option '{v}'"
                    )));
                }
            }
        }
        Ok(())
    }

    /// A stored run of its kind as it printed it (`runs show`), when it can render one.
    pub fn show(
        &self,
        run: &latlab_core::result::Run,
        unit: latlab_core::config::DisplayUnit,
    ) -> Option<String> {
        (self.show)(run, unit)
    }

    /// Lowers its parsed arguments against `online` without running: the config's `Debug`
    /// text, or the error the run would exit with (tests compare configs through it).
    pub fn lowered(&self, m: &clap::ArgMatches, online: &CpuSet) -> Result<String> {
        self.no_option_as_value(m)?;
        (self.lowered)(m, online)
    }

    /// Lowers its parsed arguments and runs it through the driver.
    pub fn run(&self, m: &clap::ArgMatches, command_line: Vec<String>) -> Result<()> {
        self.no_option_as_value(m)?;
        (self.run)(m, &CpuSet::online_here(), command_line)
    }
}
