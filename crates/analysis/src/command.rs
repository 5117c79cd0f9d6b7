//! The shape of an analysis command — one that reads stored runs and never measures — so the
//! command line can parse, document and run it from one row of [`crate::COMMANDS`], as it
//! does a measurement from the table of measurements. A command is its folder (its arguments,
//! implementing [`Command`]) plus that row; dispatch, `latlab help`, completions and man pages
//! read the row.

use latlab_core::error::{Error, Result};
use latlab_core::result::kind::Kinds;

/// The arguments of an analysis command, which know how to run it.
pub trait Command: clap::Args + clap::FromArgMatches {
    /// Runs the command. Its exit code comes from the error: `Error::Usage` is 2,
    /// `Error::Undecided` 4 (as every command's).
    fn run(self, lab: &Lab) -> Result<()>;
}

/// What the table of measurements knows of stored kinds, handed down by the binary: the
/// analysis half stands on the core alone and never sees the measurements.
#[derive(Debug, Clone, Copy)]
pub struct Lab {
    /// The facts of a stored kind (latency facts for one no measurement stores).
    pub facts: Kinds,
    /// The kinds latlab's own measurements store, in the table's order.
    pub kinds: fn() -> Vec<&'static str>,
}

impl Lab {
    /// The kind whose runs are a monitor's snapshots (`report --fleet` reads them).
    pub fn snapshots(&self) -> &'static str {
        (self.kinds)()
            .into_iter()
            .find(|k| (self.facts)(k).snapshots)
            .unwrap_or("monitor")
    }

    /// Whether a measurement of latlab's own stores runs of `kind` (not an imported peer's).
    pub fn is_native(&self, kind: &str) -> bool {
        (self.kinds)().contains(&kind)
    }
}

/// One analysis command: a row of [`crate::COMMANDS`].
pub struct Entry {
    /// The subcommand (`latlab NAME`).
    pub name: &'static str,
    /// One line of help (`latlab help`).
    pub about: &'static str,
    /// Adds its arguments to a clap command.
    args: fn(clap::Command) -> clap::Command,
    /// Parses its arguments from the matches and runs it.
    run: fn(&clap::ArgMatches, &Lab) -> Result<()>,
}

impl std::fmt::Debug for Entry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Entry").field("name", &self.name).finish()
    }
}

/// The row of the analysis command whose arguments are `A`.
pub(crate) const fn entry<A: Command>(name: &'static str, about: &'static str) -> Entry {
    Entry {
        name,
        about,
        args: arguments::<A>,
        run: run::<A>,
    }
}

/// Adds the arguments of `A`, keeping the help line the row gave.
fn arguments<A: Command>(c: clap::Command) -> clap::Command {
    keeping_about(c, A::augment_args)
}

/// `c` with arguments added by `add`, keeping the help line `c` was given (the arguments'
/// own doc comment would replace it) and no long one: what a table's row gives a command,
/// here and in the table of measurements.
pub fn keeping_about(
    c: clap::Command,
    add: impl FnOnce(clap::Command) -> clap::Command,
) -> clap::Command {
    let about = c.get_about().cloned();
    let c = add(c);
    match about {
        Some(a) => c.about(a),
        None => c,
    }
    .long_about(None)
}

fn run<A: Command>(m: &clap::ArgMatches, lab: &Lab) -> Result<()> {
    A::from_arg_matches(m)
        .map_err(|e| Error::Usage(e.to_string()))?
        .run(lab)
}

impl Entry {
    /// Its clap subcommand: name, help and arguments.
    pub fn command(&self) -> clap::Command {
        (self.args)(clap::Command::new(self.name).about(self.about))
    }

    /// Parses its arguments from `m` (its subcommand's matches) and runs it.
    pub fn run(&self, m: &clap::ArgMatches, lab: &Lab) -> Result<()> {
        (self.run)(m, lab)
    }
}

/// The row named `name`, if an analysis command has it.
pub fn find(name: &str) -> Option<&'static Entry> {
    crate::COMMANDS.iter().find(|e| e.name == name)
}
