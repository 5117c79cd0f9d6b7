//! How a plan reaches the measurements without importing the command line: the checker of a
//! measurement's options and the list of measurements a plan may run, both registered by `cli`
//! from the table of measurements, and the flags and tags the runner sets itself.

/// How a plan checks a measurement's command line as the run would (parse, build its
/// configuration) and learns what one run is planned to be. The command-line layer registers
/// it at start-up, so this module never depends on the command line (its unit tests register
/// a stand-in).
pub type Checker = fn(&str, &[String]) -> std::result::Result<Planned, String>;

pub use crate::driver::entry::Planned;

pub(super) static CHECKER: std::sync::OnceLock<Checker> = std::sync::OnceLock::new();

/// Registers the measurement checker (once; later calls are ignored).
pub fn set_checker(c: Checker) {
    let _ = CHECKER.set(c);
}

/// The measurements a plan may run, registered by the command-line layer from the table of
/// measurements.
static MEASUREMENTS: std::sync::OnceLock<fn() -> Vec<&'static str>> = std::sync::OnceLock::new();

/// Registers the list of measurements a plan may run (once; later calls are ignored).
pub fn set_measurements(names: fn() -> Vec<&'static str>) {
    let _ = MEASUREMENTS.set(names);
}

/// The measurements a plan may run (empty before registration).
pub fn measurements() -> Vec<&'static str> {
    MEASUREMENTS.get().map(|f| f()).unwrap_or_default()
}

/// Flags the runner sets itself, so a plan's `args` may not.
pub const RUNNER_FLAGS: &[(&str, &str)] = &[
    ("json", "--json"),
    ("store", "--store"),
    ("no_store", "--no-store"),
];
/// Tag keys the runner sets on every run.
pub const RUNNER_TAGS: &[&str] = &["experiment", "repeat", "combination", "plan"];
