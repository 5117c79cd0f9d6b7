//! `latlab clocks`'s raw arguments (clap), lowered in `lower.rs`.

use latlab_core::config::values;
use latlab_core::config::CpuSet;
use crate::driver::args::groups::UnitArg;
use crate::driver::args::MeasureArgs;
use latlab_core::error::Result;
use clap::Args;

/// Arguments of `latlab clocks`.
#[derive(Debug, Args)]
#[command(mut_arg("unit", |a| a.default_value("ns").help(
    "Unit for resolution and granularity (costs per call are always in ns; the JSON always \
     in ns). Sub-microsecond values keep three significant digits in us."
)))]
pub(crate) struct ClocksArgs {
    /// Sources to measure, comma-separated: realtime, monotonic, monotonic_raw, boottime, tai,
    /// realtime_coarse, monotonic_coarse, process_cputime, thread_cputime, gettimeofday, time,
    /// rdtsc, rdtscp, or all. Default: all.
    #[arg(long, value_name = "LIST")]
    pub(crate) clocks: Option<String>,
    /// Measure under each of these clocksources (e.g. tsc,kvm-clock, or all); the original is
    /// restored afterwards, also on Ctrl-C and errors.
    #[arg(long, value_name = "LIST")]
    pub(crate) clocksource: Option<String>,
    /// Also check monotonicity across CPUs for this long (monotonic, monotonic_raw, rdtsc): a
    /// bare number is seconds. A backward step fails the check (exit 1).
    #[arg(long, value_name = "TIME", value_parser = values::run_length)]
    pub(crate) check_monotonic: Option<u64>,
    /// Batches timed per source.
    #[arg(long, value_name = "N", default_value = "2000", value_parser = values::count)]
    pub(crate) batches: u64,
    /// Calls per batch.
    #[arg(long, value_name = "N", default_value = "100", value_parser = values::count)]
    pub(crate) batch: u64,
    /// `--unit`.
    #[command(flatten)]
    pub(crate) unit: UnitArg,

    /// Output, loads and where the result is kept.
    #[command(flatten)]
    pub(crate) common: MeasureArgs,
}

impl crate::driver::Lowering for ClocksArgs {
    type Config = super::ClocksConfig;

    fn common(&self) -> &MeasureArgs {
        &self.common
    }

    fn lower(&self, _online: &CpuSet) -> Result<Self::Config> {
        super::ClocksConfig::from_args(self)
    }

    fn check_in_plan(&self, c: &Self::Config) -> std::result::Result<(), String> {
        if c.clocksources.is_empty() {
            return Ok(());
        }
        Err("--clocksource inside a plan: make the clocksource a knob factor (knob = \"/sys/devices/system/clocksource/clocksource0/current_clocksource\"), so the plan journals and restores it".into())
    }
}
