//! The environment snapshot recorded with every result: what kernel, clock, CPUs and RT
//! settings the numbers were measured under. Reads procfs/sysfs through an injectable root.

use serde::{Deserialize, Serialize};

pub(crate) use crate::sys::roots::Roots;

/// The machine and kernel a result was measured on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Environment {
    /// Host name.
    pub hostname: String,
    /// `uname -r`.
    pub kernel_release: String,
    /// `/proc/version`.
    pub kernel_version: String,
    /// `/proc/cmdline`.
    pub kernel_cmdline: String,
    /// This boot's id (`/proc/sys/kernel/random/boot_id`): runs with one id ran in one boot,
    /// which is what kernel comparisons replicate. Empty when unknown (imported, older runs).
    #[serde(default)]
    pub boot_id: String,
    /// SHA-256 of the kernel's build configuration (`/proc/config.gz`, else
    /// `/boot/config-RELEASE`), first 16 hex digits: two kernels of one release built
    /// differently tell apart. Empty when the kernel's configuration cannot be read.
    #[serde(default)]
    pub kernel_config: String,
    /// none / voluntary / full / rt / dynamic(...) as far as it can be told.
    pub preemption: String,
    /// Current clocksource.
    pub clocksource: String,
    /// Available clocksources.
    pub(crate) available_clocksources: Vec<String>,
    /// CPU model name.
    pub cpu_model: String,
    /// Number of CPUs online.
    pub cpus_online: usize,
    /// Online CPU list.
    pub online_cpus: String,
    /// `isolated` CPUs (isolcpus=), empty if none.
    pub isolated_cpus: String,
    /// `nohz_full` CPUs, empty if none.
    pub nohz_full_cpus: String,
    /// `sched_rt_runtime_us` (-1: RT throttling off).
    pub sched_rt_runtime_us: Option<i64>,
    /// `sched_rt_period_us`.
    pub sched_rt_period_us: Option<i64>,
    /// cpufreq governor of CPU 0, if cpufreq exists.
    pub governor: Option<String>,
    /// latlab's version.
    pub tool_version: String,
}

/// Largest kernel configuration read (Debian's is about 300 KiB).
const MAX_CONFIG_BYTES: u64 = 16 << 20;

/// The first 16 hex digits of the SHA-256 of the running kernel's configuration, from
/// `/proc/config.gz` (decompressed) or `/boot/config-RELEASE`; empty when neither reads.
fn kernel_config(r: &Roots, release: &str) -> String {
    use sha2::Digest;
    use std::io::Read;
    let from_proc = || -> Option<Vec<u8>> {
        let f = std::fs::File::open(r.proc_path("config.gz")).ok()?;
        let mut text = Vec::new();
        flate2::read::GzDecoder::new(f)
            .take(MAX_CONFIG_BYTES)
            .read_to_end(&mut text)
            .ok()?;
        Some(text)
    };
    let from_boot = || -> Option<Vec<u8>> {
        if release.is_empty() || release.contains('/') {
            return None;
        }
        let f = std::fs::File::open(r.boot_path(&format!("config-{release}"))).ok()?;
        let mut text = Vec::new();
        f.take(MAX_CONFIG_BYTES).read_to_end(&mut text).ok()?;
        Some(text)
    };
    match from_proc().or_else(from_boot).filter(|t| !t.is_empty()) {
        Some(text) => sha2::Sha256::digest(&text)[..8]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect(),
        None => String::new(),
    }
}

impl Environment {
    /// Snapshot of the running machine.
    pub fn capture() -> Environment {
        Environment::capture_from(&Roots::default())
    }

    /// Nothing known (an imported run: what its file says is filled in, the rest stays
    /// unknown rather than the importing machine's).
    pub fn unknown() -> Environment {
        let u = || "unknown".to_string();
        Environment {
            hostname: u(),
            kernel_release: u(),
            kernel_version: String::new(),
            kernel_cmdline: String::new(),
            boot_id: String::new(),
            kernel_config: String::new(),
            preemption: u(),
            clocksource: u(),
            available_clocksources: Vec::new(),
            cpu_model: u(),
            cpus_online: 0,
            online_cpus: String::new(),
            isolated_cpus: String::new(),
            nohz_full_cpus: String::new(),
            sched_rt_runtime_us: None,
            sched_rt_period_us: None,
            governor: None,
            tool_version: env!("CARGO_PKG_VERSION").to_string(),
        }
    }

    /// `N CPUs`, or `CPUs unknown` (an imported run whose file does not say).
    pub fn cpus_said(&self) -> String {
        if self.cpus_online == 0 {
            "CPUs unknown".into()
        } else {
            format!("{} CPUs", self.cpus_online)
        }
    }

    /// This machine's host name (what `capture` records), read alone.
    pub fn hostname() -> String {
        Roots::default()
            .proc("sys/kernel/hostname")
            .unwrap_or_else(|| "unknown".into())
    }

    /// Snapshot read from the given procfs/sysfs roots.
    pub(crate) fn capture_from(r: &Roots) -> Environment {
        let version = r.proc("version").unwrap_or_default();
        let release = r.proc("sys/kernel/osrelease").unwrap_or_default();
        let preempt_debug = r.sys("kernel/debug/sched/preempt");
        let online = r.sys("devices/system/cpu/online").unwrap_or_default();
        let cpus_online = crate::config::CpuSet::parse(&online)
            .map(|s| s.len())
            .unwrap_or(0);
        Environment {
            hostname: r
                .proc("sys/kernel/hostname")
                .unwrap_or_else(|| "unknown".into()),
            kernel_config: kernel_config(r, &release),
            kernel_release: release,
            preemption: preemption_model(&version, preempt_debug.as_deref()),
            kernel_version: version,
            kernel_cmdline: r.proc("cmdline").unwrap_or_default(),
            boot_id: r.proc("sys/kernel/random/boot_id").unwrap_or_default(),
            clocksource: r
                .sys("devices/system/clocksource/clocksource0/current_clocksource")
                .unwrap_or_default(),
            available_clocksources: r
                .sys("devices/system/clocksource/clocksource0/available_clocksource")
                .unwrap_or_default()
                .split_whitespace()
                .map(String::from)
                .collect(),
            // The first processor's block names the model on x86 and POWER; elsewhere (32-bit
            // ARM's `Model`) it may come after every processor.
            cpu_model: r
                .cpuinfo_first()
                .and_then(|c| cpu_model(&c))
                .or_else(|| r.proc("cpuinfo").and_then(|c| cpu_model(&c)))
                .unwrap_or_else(|| "unknown".into()),
            cpus_online,
            online_cpus: online,
            isolated_cpus: r.sys("devices/system/cpu/isolated").unwrap_or_default(),
            nohz_full_cpus: r
                .sys("devices/system/cpu/nohz_full")
                .map(|s| if s == "(null)" { String::new() } else { s })
                .unwrap_or_default(),
            sched_rt_runtime_us: r
                .proc("sys/kernel/sched_rt_runtime_us")
                .and_then(|s| s.parse().ok()),
            sched_rt_period_us: r
                .proc("sys/kernel/sched_rt_period_us")
                .and_then(|s| s.parse().ok()),
            governor: r.sys("devices/system/cpu/cpu0/cpufreq/scaling_governor"),
            tool_version: env!("CARGO_PKG_VERSION").to_string(),
        }
    }

    /// A warning when RT work can be throttled, i.e. an RT task may be stopped for
    /// (period − runtime) out of every period. None when throttling is off.
    pub fn rt_throttle_warning(&self) -> Option<String> {
        match (self.sched_rt_runtime_us, self.sched_rt_period_us) {
            (Some(rt), Some(p)) if rt >= 0 && rt < p => Some(format!(
                "RT throttling is on: real-time tasks may run {rt} us of every {p} us \
                 (sched_rt_runtime_us); a busy RT task is then paused for {} us",
                p - rt
            )),
            _ => None,
        }
    }
}

fn cpu_model(cpuinfo: &str) -> Option<String> {
    cpuinfo
        .lines()
        .find(|l| l.starts_with("model name") || l.starts_with("Model") || l.starts_with("cpu\t"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string())
}

/// Works out the preemption model from debugfs (exact, shows the dynamic choice) or else from
/// the version string's flags.
/// The preemption model a kernel's version string (`/proc/version`, `uname -v`) names, or the
/// debugfs setting in force where there is one.
pub fn preemption_model(version: &str, debugfs: Option<&str>) -> String {
    let dynamic = version.contains("PREEMPT_DYNAMIC");
    if let Some(d) = debugfs {
        // e.g. "none voluntary (full) lazy": the parenthesised word is in force.
        if let Some(cur) = d
            .split_whitespace()
            .find(|w| w.starts_with('(') && w.ends_with(')'))
        {
            let cur = cur.trim_matches(|c| c == '(' || c == ')');
            return if dynamic {
                format!("dynamic({cur})")
            } else {
                cur.to_string()
            };
        }
    }
    if version.contains("PREEMPT_RT") {
        "rt".into()
    } else if dynamic {
        "dynamic".into()
    } else if version.contains("PREEMPT ") || version.contains(" PREEMPT") {
        "full".into()
    } else {
        "none or voluntary".into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_fake_tree() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("proc");
        let s = dir.path().join("sys");
        let w = |rel: &std::path::Path, body: &str| {
            std::fs::create_dir_all(rel.parent().unwrap()).unwrap();
            std::fs::write(rel, body).unwrap();
        };
        w(
            &p.join("version"),
            "Linux version 6.1.0 #1 SMP PREEMPT_DYNAMIC\n",
        );
        w(&p.join("sys/kernel/osrelease"), "6.1.0\n");
        w(&p.join("sys/kernel/random/boot_id"), "b00t\n");
        w(
            &dir.path().join("boot/config-6.1.0"),
            "CONFIG_PREEMPT_RT=y\n",
        );
        w(&p.join("sys/kernel/sched_rt_runtime_us"), "950000\n");
        w(&p.join("sys/kernel/sched_rt_period_us"), "1000000\n");
        w(
            &p.join("cpuinfo"),
            "processor\t: 0\nmodel name\t: Fake CPU @ 1GHz\n",
        );
        w(&s.join("devices/system/cpu/online"), "0-3\n");
        w(&s.join("devices/system/cpu/nohz_full"), "(null)\n");
        w(
            &s.join("kernel/debug/sched/preempt"),
            "none voluntary (full) lazy\n",
        );
        w(
            &s.join("devices/system/clocksource/clocksource0/current_clocksource"),
            "tsc\n",
        );
        let env = Environment::capture_from(&Roots {
            proc_root: p,
            sys_root: s,
            trace_root: dir.path().join("tracing"),
        });
        assert_eq!(env.kernel_release, "6.1.0");
        assert_eq!(env.boot_id, "b00t");
        // sha256("CONFIG_PREEMPT_RT=y\n"), its first 8 bytes.
        assert_eq!(env.kernel_config, "6d856f247f601b09");
        let other = {
            w(
                &dir.path().join("boot/config-6.1.0"),
                "CONFIG_PREEMPT_RT=n\n",
            );
            Environment::capture_from(&Roots::under(dir.path())).kernel_config
        };
        assert_ne!(
            env.kernel_config, other,
            "a config's change changes its hash"
        );
        assert_eq!(env.cpus_online, 4);
        assert_eq!(env.cpu_model, "Fake CPU @ 1GHz");
        assert_eq!(env.preemption, "dynamic(full)");
        assert_eq!(env.clocksource, "tsc");
        assert_eq!(env.nohz_full_cpus, "");
        assert!(env.rt_throttle_warning().unwrap().contains("50000 us"));
    }

    #[test]
    fn preemption_from_version_string() {
        assert_eq!(preemption_model("#1 SMP PREEMPT_RT", None), "rt");
        assert_eq!(preemption_model("#1 SMP PREEMPT_DYNAMIC", None), "dynamic");
        assert_eq!(preemption_model("#1 SMP", None), "none or voluntary");
    }
}
