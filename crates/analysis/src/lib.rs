//! latlab's reading half: what reads stored runs and never measures — comparisons and their
//! verdicts, tail bounds, gates, HTML reports, exports and imports of other tools' output.
//! The analysis commands that are a folder plus one row of [`COMMANDS`] are declared here.

pub mod command;
pub mod dataset;
pub mod export;
pub mod import;
pub mod since;

/// Declares each analysis command's module and its row of [`COMMANDS`], in `latlab help`'s
/// order.
/// A row is `MODULE => ARGS, HELP;`, or `MODULE as "NAME" => ...` for a command whose module
/// has another name (one the core's modules already take).
macro_rules! analyses {
    ($( $module:ident $(as $name:literal)? => $args:ty, $about:expr; )*) => {
        $( pub mod $module; )*

        /// The analysis commands: each is its folder plus this row.
        pub static COMMANDS: &[command::Entry] = &[
            $( command::entry::<$args>(analyses!(@name $module $($name)?), $about), )*
        ];
    };
    (@name $module:ident $name:literal) => { $name };
    (@name $module:ident) => { stringify!($module) };
}

analyses! {
    compare => compare::args::CompareArgs,
        "Compare data sets: quantiles with bootstrap intervals, Mann-Whitney U, Welch's t, Holm–Bonferroni; or ministat's output with --ministat";
    ministat => ministat::MinistatArgs,
        "FreeBSD's ministat, byte for byte: `latlab ministat [-C column] [-c confidence] [-d delimiter(s)] [-Ans] [-w width] [file ...]`. Also `latlab compare --ministat ...`";
    samples_cmd as "samples" => samples_cmd::SamplesArgs,
        "Read a raw sample log written by `--samples`: summary per series, or CSV";
    report => report::args::ReportArgs,
        "One self-contained HTML page (inline SVG, no script) of runs, an experiment or a comparison: environment, histograms, maximum over time, percentiles, verdicts";
    plot => plot::PlotArgs,
        "One chart of a run as SVG or PNG: histogram, maximum over time, or cumulative distribution";
    gate => gate::args::GateArgs,
        "Judge a latency requirement on runs for CI: met (exit 0), violated (exit 1) or undecided (exit 4), with exact binomial bounds; --plan-for says how long to measure";
    tail => tail::args::TailArgs,
        "The latency exceeded with probability P per sample or per unit of time, beyond the largest one seen: a generalized Pareto tail with intervals, or a refusal saying why not";
}
