//! Lowers `latlab clocks`'s raw arguments (cli) into its validated config: every flag checked, each
//! failure an exit-2 message naming the flag and the value.

use super::args::ClocksArgs;
use latlab_core::error::{Error, Result};
use crate::measure::clocks::{probes, ClocksConfig};
use latlab_core::sys::clocksource;

impl ClocksConfig {
    /// Validates raw arguments.
    pub(crate) fn from_args(a: &ClocksArgs) -> Result<ClocksConfig> {
        let probes: Vec<String> = match &a.clocks {
            None => probes::ALL.iter().map(|p| p.name().to_string()).collect(),
            Some(list) => {
                let mut v = Vec::new();
                for n in list.split(',').map(str::trim) {
                    if n == "all" {
                        v.extend(probes::ALL.iter().map(|p| p.name().to_string()));
                        continue;
                    }
                    if probes::by_name(n).is_none() {
                        let known: Vec<&str> = probes::ALL.iter().map(|p| p.name()).collect();
                        return Err(Error::flag(
                            "--clocks",
                            n,
                            format!("unknown clock (known: {})", known.join(", ")),
                        ));
                    }
                    v.push(n.to_string());
                }
                latlab_core::config::distinct(v)
            }
        };
        let clocksources = match &a.clocksource {
            None => Vec::new(),
            Some(list) => {
                let avail = clocksource::available(&latlab_core::sys::roots::Roots::host().sys_root)?;
                let mut v = Vec::new();
                for n in list.split(',').map(str::trim) {
                    if n == "all" {
                        v.extend(avail.iter().cloned());
                    } else if avail.iter().any(|x| x == n) {
                        v.push(n.to_string());
                    } else {
                        return Err(Error::flag(
                            "--clocksource",
                            n,
                            format!(
                                "not offered by this kernel (available: {})",
                                avail.join(" ")
                            ),
                        ));
                    }
                }
                latlab_core::config::distinct(v)
            }
        };
        let check_monotonic_ns = a.check_monotonic.unwrap_or(0);
        let calls = (a.batches as u128)
            .saturating_mul(a.batch as u128)
            .saturating_mul(probes.len() as u128)
            .saturating_mul(clocksources.len().max(1) as u128);
        latlab_core::config::bounds::work(
            "--batches/--batch",
            format!("{}x{}", a.batches, a.batch),
            calls,
            1,
        )?;
        Ok(ClocksConfig {
            probes,
            clocksources,
            check_monotonic_ns,
            batches: a.batches as usize,
            batch: a.batch as usize,
            unit: *a.unit,
        })
    }
}
