//! Lowers `latlab timerlat`'s raw arguments into its validated config: every flag checked,
//! each failure an exit-2 message naming the flag and the value.

use super::args::TimerlatArgs;
use super::config::{TimerlatConfig, MAX_PERIOD_NS, MIN_PERIOD_NS};
use latlab_core::config::CpuSet;
use latlab_core::error::{Error, Result};

impl TimerlatConfig {
    /// Validates raw arguments against the online CPUs.
    pub(crate) fn from_args(a: &TimerlatArgs, online: &CpuSet) -> Result<TimerlatConfig> {
        let cpus: Vec<usize> = match a.affinity.online(online)? {
            Some(set) => set.iter().collect(),
            None => online.iter().collect(),
        };
        let period_ns = a.timing.interval.interval.as_ref().map_or(1_000_000, |t| t.ns);
        if !(MIN_PERIOD_NS..=MAX_PERIOD_NS).contains(&period_ns) || !period_ns.is_multiple_of(1000) {
            let text = a
                .timing
                .interval
                .interval
                .as_ref()
                .map_or(String::new(), |t| t.text.clone());
            return Err(Error::flag(
                "-i/--interval",
                text,
                "the kernel's timerlat period is a whole number of µs from 100 us to 1 s",
            ));
        }
        let loops = *a.timing.loops;
        if loops == Some(0) {
            return Err(Error::flag("-l/--loops", 0, "at least 1"));
        }
        if let Some(n) = loops {
            latlab_core::config::bounds::work("-l/--loops", n, u128::from(n), period_ns)?;
        }
        let threshold_ns = a.threshold.threshold.as_ref().map(|t| t.ns);
        if threshold_ns == Some(0) {
            return Err(Error::flag("--threshold", "0", "explaining every sample: give a latency above 0"));
        }
        Ok(TimerlatConfig {
            cpus,
            period_ns,
            duration_ns: *a.timing.duration,
            loops,
            prio: a.priority,
            threshold_ns,
            unit: *a.unit,
            quiet: a.common.quiet(),
            json: a.common.output.json.clone(),
        })
    }
}
