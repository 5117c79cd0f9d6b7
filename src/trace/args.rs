//! The `--trace` options a measurement flattens into its arguments (clap).

use crate::config::{parse_time_ns, BareUnit};
use crate::error::{Error, Result};
use clap::Args;

/// `--trace`: attribute every spike to IRQs, softirqs and threads from kernel tracepoints.
#[derive(Debug, Args, Clone, Default)]
pub struct TraceArgs {
    /// Trace the measured CPUs (private tracefs instance; needs root) and explain every
    /// latency at or above --trace-threshold: IRQ, softirq and thread interference, the
    /// blocking task and an unattributed rest. Adds `trace` to the JSON and a "why" summary.
    #[arg(long)]
    pub trace: bool,

    /// Latency from which a wake-up is explained (µs or with unit). Default 100us.
    #[arg(long = "trace-threshold", value_name = "TIME", requires = "trace")]
    pub trace_threshold: Option<String>,

    /// Write each explained spike's events (from 1 ms before the expected wake-up to the
    /// actual one) to FILE as a readable timeline.
    #[arg(long = "trace-save", value_name = "FILE", requires = "trace")]
    pub trace_save: Option<std::path::PathBuf>,
}

impl TraceArgs {
    /// The validated `--trace-threshold` (None without `--trace`).
    pub fn threshold_ns(&self) -> Result<Option<u64>> {
        if !self.trace {
            return Ok(None);
        }
        match self.trace_threshold.as_deref() {
            None => Ok(Some(crate::trace::spikes::DEFAULT_THRESHOLD_NS)),
            Some(v) => {
                let ns = parse_time_ns(v, BareUnit::Micros)
                    .map_err(|e| Error::flag("--trace-threshold", v, e))?;
                if ns == 0 {
                    return Err(Error::flag("--trace-threshold", v, "must be above zero"));
                }
                Ok(Some(ns))
            }
        }
    }
}
