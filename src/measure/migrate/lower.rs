//! Lowers `latlab migrate`'s raw arguments (cli) into its validated config: every flag checked, each
//! failure an exit-2 message naming the flag and the value.

use super::args::MigrateArgs;
use crate::config::CpuSet;
use crate::error::{Error, Result};
use crate::measure::migrate::MigrateConfig;

impl MigrateConfig {
    /// Validates raw arguments.
    pub fn from_args(a: &MigrateArgs, online: &CpuSet) -> Result<MigrateConfig> {
        let tasks = a.tasks.unwrap_or(online.len() + 1);
        if !(2..=64).contains(&tasks) {
            return Err(Error::flag("-t/--tasks", tasks, "use 2 to 64 tasks"));
        }
        let top = a.prio as i64 + tasks as i64;
        if a.prio < 2 || top > 98 {
            return Err(Error::flag("-p/--prio", a.prio, format!("tasks use priorities prio..prio+{tasks} and the controller one above: keep them within 2..98")));
        }
        let t = |flag: &str, v: &str| {
            crate::config::parse_time_ns(v, crate::config::BareUnit::Micros)
                .map_err(|e| Error::flag(flag, v, e))
        };
        if a.loops == 0 || a.loops > 100_000 {
            return Err(Error::flag("-l/--loops", a.loops, "use 1 to 100000"));
        }
        Ok(MigrateConfig {
            tasks,
            base_prio: a.prio,
            loops: a.loops,
            run_ns: t("-r/--run-time", &a.run_time)?,
            sleep_ns: t("-s/--sleep-time", &a.sleep_time)?,
            max_err_ns: t("--max-err", &a.max_err)?,
            inject_inversion: a.inject_inversion,
        })
    }
}
