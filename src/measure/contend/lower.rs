//! Lowers `latlab contend`'s raw arguments (cli) into its validated config: every flag checked, each
//! failure an exit-2 message naming the flag and the value.

use super::args::ContendArgs;
use crate::config::{CpuSet, Policy};
use crate::error::{Error, Result};
use crate::measure::contend::{ContendConfig, LEVELS};

impl ContendConfig {
    /// Validates raw arguments.
    pub fn from_args(a: &ContendArgs, online: &CpuSet) -> Result<ContendConfig> {
        let cpus: Vec<usize> = match &a.cpus {
            None => online.iter().collect(),
            Some(v) => CpuSet::parse_online("--cpus", v, online)?.iter().collect(),
        };
        Policy::Fifo
            .check_prio(a.priority)
            .map_err(|e| Error::Usage(format!("-p/--priority: {e}")))?;
        if a.level == 0 || a.level >= LEVELS {
            return Err(Error::flag(
                "--level",
                a.level,
                format!("use 1 to {}", LEVELS - 1),
            ));
        }
        let duration_ns = a.duration;
        if a.iterations == Some(0) {
            return Err(Error::flag("-n/--iterations", 0, "must be at least 1"));
        }
        if let Some(n) = a.iterations {
            crate::config::bounds::work("-n/--iterations", n, u128::from(n), 1)?;
        }
        Ok(ContendConfig {
            cpus,
            sync: a.sync,
            prio: a.priority,
            policy: Policy::Fifo,
            iterations: a.iterations,
            duration_ns,
            level: a.level,
        })
    }
}
