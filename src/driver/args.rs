//! The options every measurement takes (clap), flattened into each one's arguments, and
//! [`Lowering`], the contract between a measurement's raw arguments and the driver: the table
//! of measurements (`crate::table`) needs nothing else to parse, check, plan and run one.

use super::{execute, Common, Measurement};
use crate::config::CpuSet;
use crate::error::Result;
use clap::Args;
use std::path::Path;

/// Options every measurement takes: loads to run during it, where its result is kept, and
/// whether a refused real-time setting degrades (with a warning) or fails.
#[derive(Debug, Args, Clone, Default)]
#[command(next_help_heading = "Common options")]
pub struct MeasureArgs {
    /// Where results are kept.
    #[command(flatten)]
    pub store: StoreArgs,
    /// Run a load during the measurement: hackbench, cpu, memory, io, net or exec, with
    /// options (hackbench:groups=10,loops=100; io:path=/dev/vda,direct=1; exec:CMD).
    /// Repeatable; loads warm up before the start and are reaped after it.
    #[arg(long = "load", value_name = "KIND[:OPTS]")]
    pub load: Vec<String>,
    /// Confine every --load to these CPUs (a load's own cpus=LIST wins), as rteval keeps its
    /// loads on housekeeping CPUs; a warning is recorded when they overlap the measured CPUs.
    #[arg(long = "housekeeping", value_name = "CPUSET")]
    pub housekeeping: Option<String>,
    /// Fail (exit 3) instead of falling back with a warning when real-time scheduling, memory
    /// locking, thread placement or the DMA latency request is refused.
    #[arg(long)]
    pub strict: bool,
}

/// Where a measurement's result is kept.
#[derive(Debug, Args, Clone, Default)]
pub struct StoreArgs {
    /// The results store: sqlite:PATH, or a PostgreSQL server as postgres://USER@HOST/DB or a
    /// libpq "host=... dbname=..." string (password from PGPASSWORD or ~/.pgpass, never on the
    /// command line). Default: $LATLAB_STORE, else $XDG_DATA_HOME/latlab/results.db.
    #[arg(long = "store", value_name = "STORE", global = false)]
    pub store: Option<String>,
    /// Do not store the result.
    #[arg(long = "no-store")]
    pub no_store: bool,
    /// Tag the stored run (repeatable): --tag kernel=6.1 --tag patch=vec-lock.
    #[arg(long = "tag", value_name = "KEY=VALUE")]
    pub tag: Vec<String>,
}

impl MeasureArgs {
    /// The shared options, validated (a bad `--load` spec is exit 2 naming it).
    pub fn to_common(&self, json: Option<&Path>) -> Result<Common> {
        Ok(Common {
            json: json.map(Path::to_path_buf),
            store: self.store.store.clone(),
            no_store: self.store.no_store,
            tags: self.store.tag.clone(),
            loads: {
                let mut loads: Vec<crate::loadgen::LoadSpec> = self
                    .load
                    .iter()
                    .map(|s| crate::loadgen::LoadSpec::parse(s))
                    .collect::<Result<_>>()?;
                if let Some(h) = &self.housekeeping {
                    let set = CpuSet::parse_online("--housekeeping", h, &CpuSet::online_here())?;
                    for l in &mut loads {
                        l.confine_to(&set);
                    }
                }
                loads
            },
            strict: self.strict,
        })
    }
}

/// A measurement's raw arguments: how they lower into its validated config, and how the
/// config runs. The table of measurements holds one of these per measurement.
pub trait Lowering: clap::Args + clap::FromArgMatches + Sized {
    /// The validated config, which runs through the driver.
    type Config: Measurement;

    /// The options every measurement shares.
    fn common(&self) -> &MeasureArgs;

    /// `--json FILE|-`, if given.
    fn json(&self) -> Option<&Path>;

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
        let common = self.common().to_common(self.json())?;
        execute(config, &common, command_line)
    }
}

/// Parses one measurement's arguments as `latlab NAME ARGS...` would (`argv` starts with the
/// program and NAME): the table's dispatch and tests share it.
pub fn parse_args<A: clap::Args + clap::FromArgMatches, I, T>(
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
    let m = A::augment_args(clap::Command::new(name).no_binary_name(false))
        .try_get_matches_from(std::iter::once(program).chain(argv))?;
    A::from_arg_matches(&m)
}
