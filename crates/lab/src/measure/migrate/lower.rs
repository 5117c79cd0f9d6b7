//! Lowers `latlab migrate`'s raw arguments (cli) into its validated config: every flag checked, each
//! failure an exit-2 message naming the flag and the value.

use super::args::MigrateArgs;
use latlab_core::config::CpuSet;
use latlab_core::error::{Error, Result};
use crate::measure::migrate::MigrateConfig;

impl MigrateConfig {
    /// Validates raw arguments.
    pub(crate) fn from_args(a: &MigrateArgs, online: &CpuSet) -> Result<MigrateConfig> {
        let (flag, given) = match (*a.threads, a.tasks) {
            (_, Some(n)) => ("--tasks", Some(n)),
            (Some(None), None) => {
                return Err(Error::Usage(
                    "-t/--threads: give a number of threads (2 to 64)".into(),
                ))
            }
            (n, None) => ("-t/--threads", n.flatten()),
        };
        let tasks = match given {
            None => online.len() + 1,
            Some(n) => usize::try_from(n)
                .ok()
                .filter(|n| (2..=64).contains(n))
                .ok_or_else(|| Error::flag(flag, n, "use 2 to 64 threads"))?,
        };
        if !(2..=64).contains(&tasks) {
            return Err(Error::flag(flag, tasks, "use 2 to 64 threads"));
        }
        let prio = a.priority.unwrap_or(2);
        let top = prio as i64 + tasks as i64;
        if prio < 2 || top > 98 {
            return Err(Error::flag("-p/--priority", prio, format!("threads use priorities prio..prio+{tasks} and the controller one above: keep them within 2..98")));
        }
        let loops = a.loops.unwrap_or(20);
        if loops > 100_000 {
            return Err(Error::flag("-l/--loops", loops, "use 1 to 100000"));
        }
        Ok(MigrateConfig {
            tasks,
            base_prio: prio,
            loops: loops as usize,
            run_ns: a.run_time.ns,
            sleep_ns: a.sleep_time.ns,
            max_err_ns: a.max_err.ns,
            inject_inversion: a.inject_inversion,
        })
    }
}
