//! Lowers `latlab contend`'s raw arguments (cli) into its validated config: every flag checked, each
//! failure an exit-2 message naming the flag and the value.

use super::args::ContendArgs;
use latlab_core::config::{CpuSet, Policy};
use latlab_core::error::{Error, Result};
use crate::measure::contend::{ContendConfig, LEVELS};

impl ContendConfig {
    /// Validates raw arguments.
    pub(crate) fn from_args(a: &ContendArgs, online: &CpuSet) -> Result<ContendConfig> {
        let cpus: Vec<usize> = match a.affinity.online(online)? {
            None => online.iter().collect(),
            Some(set) => set.iter().collect(),
        };
        let prio = a.priority.for_policy(Policy::Fifo, 50)?;
        if a.level == 0 || a.level >= LEVELS as u64 {
            return Err(Error::flag(
                "--level",
                a.level,
                format!("use 1 to {}", LEVELS - 1),
            ));
        }
        let duration_ns = a.duration.unwrap_or(2_000_000_000);
        if let Some(n) = *a.iterations {
            latlab_core::config::bounds::work("-n/--iterations", n, u128::from(n), 1)?;
        }
        Ok(ContendConfig {
            cpus,
            sync: a.sync,
            prio,
            policy: Policy::Fifo,
            iterations: *a.iterations,
            duration_ns,
            level: a.level as usize,
        })
    }
}
