//! latlab's reading half: what reads stored runs and never measures — comparisons and their
//! verdicts, tail bounds, gates, HTML reports, exports and imports of other tools' output.
//! The analysis commands that are a folder plus one row of [`COMMANDS`] are declared here.

pub mod command;
pub mod compare;
pub mod export;
pub mod gate;
pub mod import;
pub mod report;

/// Declares each analysis command's module and its row of [`COMMANDS`], in `latlab help`'s
/// order.
macro_rules! analyses {
    ($( $module:ident => $args:ty, $about:expr; )*) => {
        $( pub mod $module; )*

        /// The analysis commands that are their folder plus this row (compare, gate and report
        /// are still wired by hand in the command line).
        pub static COMMANDS: &[command::Entry] = &[
            $( command::entry::<$args>(stringify!($module), $about), )*
        ];
    };
}

analyses! {
    tail => tail::args::TailArgs,
        "The latency exceeded with probability P per sample or per unit of time, beyond the largest one seen: a generalized Pareto tail with intervals, or a refusal saying why not";
}
