//! The system facts a qualification records, as rteval collects them: DMI (vendor, product,
//! BIOS), CPU model and microcode, SMT, the kernel and the real-time bits of its configuration
//! (PREEMPT_RT, HZ, NO_HZ_FULL, from /proc/config.gz or /boot/config-RELEASE), the command
//! line's isolation options, clocksource, governors, the IRQs that may run on the measured
//! CPUs, and memory. Read through injectable roots (procfs, sysfs, the boot directory), so
//! tests build fake trees.

use crate::sys::roots::Roots;
use serde::{Deserialize, Serialize};
use std::io::Read;
use std::path::Path;

/// Largest kernel configuration read (a distribution's is ~300 KB uncompressed).
const MAX_CONFIG_BYTES: u64 = 8 << 20;

/// One IRQ that may be delivered to a measured CPU.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IrqFact {
    /// The IRQ number (`/proc/irq/N`).
    pub(crate) irq: String,
    /// Its name(s) from /proc/interrupts (the device or handler), if listed.
    pub(crate) name: String,
    /// `smp_affinity_list`.
    pub(crate) affinity: String,
    /// `effective_affinity_list`, where the kernel has it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) effective: Option<String>,
}

/// The facts of the machine a qualification ran on.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SystemFacts {
    /// DMI system vendor (`/sys/class/dmi/id/sys_vendor`), empty where there is no DMI.
    pub vendor: String,
    /// DMI product name.
    pub product: String,
    /// BIOS vendor.
    pub bios_vendor: String,
    /// BIOS version.
    pub bios_version: String,
    /// BIOS date.
    pub bios_date: String,
    /// CPU model name.
    pub cpu_model: String,
    /// Microcode revision (the first CPU's), empty when /proc/cpuinfo does not say.
    pub microcode: String,
    /// Logical CPUs online.
    pub cpus_online: usize,
    /// SMT control (`on`, `off`, `forceoff`, `notsupported`, `notimplemented`; empty: unknown).
    pub smt: String,
    /// NUMA nodes (0: unknown).
    pub numa_nodes: usize,
    /// `uname -r`.
    pub kernel_release: String,
    /// `/proc/version`.
    pub kernel_version: String,
    /// Where the kernel configuration was read (`/proc/config.gz`, `/boot/config-...`), empty
    /// when none was found.
    pub kernel_config: String,
    /// CONFIG_PREEMPT_RT=y (None: no configuration found).
    pub preempt_rt: Option<bool>,
    /// The preemption model the configuration builds (`rt`, `full`, `voluntary`, `none`, with
    /// `dynamic` when CONFIG_PREEMPT_DYNAMIC lets the command line choose).
    pub preempt_config: String,
    /// CONFIG_HZ.
    pub hz: Option<u32>,
    /// CONFIG_NO_HZ_FULL=y.
    pub no_hz_full: Option<bool>,
    /// CONFIG_HIGH_RES_TIMERS=y.
    pub high_res_timers: Option<bool>,
    /// The whole kernel command line.
    pub cmdline: String,
    /// `isolcpus=` from the command line (empty: not given).
    pub isolcpus: String,
    /// `nohz_full=`.
    pub nohz_full: String,
    /// `rcu_nocbs=`.
    pub rcu_nocbs: String,
    /// `irqaffinity=`.
    pub irqaffinity: String,
    /// Current clocksource.
    pub clocksource: String,
    /// Available clocksources.
    pub available_clocksources: String,
    /// cpufreq governor per measured CPU (`cpu1: performance`), empty without cpufreq.
    pub governors: Vec<String>,
    /// IRQs whose affinity includes a measured CPU.
    pub irqs_on_measured: Vec<IrqFact>,
    /// MemTotal in kB.
    pub mem_total_kb: Option<u64>,
    /// MemAvailable in kB when captured.
    pub mem_available_kb: Option<u64>,
    /// Huge pages configured (HugePages_Total).
    pub hugepages: Option<u64>,
}

/// The value of `key=` on a kernel command line (the last one given wins, as the kernel reads
/// it); empty when absent.
pub(crate) fn cmdline_value(cmdline: &str, key: &str) -> String {
    cmdline
        .split_whitespace()
        .filter_map(|w| w.strip_prefix(key).and_then(|r| r.strip_prefix('=')))
        .next_back()
        .unwrap_or("")
        .to_string()
}

/// `CONFIG_KEY`'s value in a kernel configuration (`y`, `m`, a number; None when unset or
/// absent).
fn config_value<'a>(config: &'a str, key: &str) -> Option<&'a str> {
    config.lines().find_map(|l| {
        l.strip_prefix(key)
            .and_then(|r| r.strip_prefix('='))
            .map(|v| v.trim().trim_matches('"'))
    })
}

/// The kernel configuration: `/proc/config.gz` (gzip) when the kernel exports it, else
/// `/boot/config-RELEASE`; with where it came from.
fn kernel_config(r: &Roots, boot: &Path, release: &str) -> Option<(String, String)> {
    let gz = r.proc_path("config.gz");
    if let Ok(f) = std::fs::File::open(&gz) {
        let mut text = String::new();
        let dec = flate2::read::GzDecoder::new(f);
        if dec.take(MAX_CONFIG_BYTES).read_to_string(&mut text).is_ok() && !text.is_empty() {
            return Some(("/proc/config.gz".into(), text));
        }
    }
    let p = boot.join(format!("config-{release}"));
    let f = std::fs::File::open(&p).ok()?;
    let mut text = String::new();
    f.take(MAX_CONFIG_BYTES).read_to_string(&mut text).ok()?;
    Some((p.display().to_string(), text))
}

/// The preemption model a configuration builds.
fn preempt_model(config: &str) -> String {
    let on = |k: &str| config_value(config, k) == Some("y");
    let base = if on("CONFIG_PREEMPT_RT") {
        "rt"
    } else if on("CONFIG_PREEMPT") {
        "full"
    } else if on("CONFIG_PREEMPT_VOLUNTARY") {
        "voluntary"
    } else if on("CONFIG_PREEMPT_NONE") {
        "none"
    } else {
        "unknown"
    };
    if on("CONFIG_PREEMPT_DYNAMIC") {
        format!("{base} (dynamic)")
    } else {
        base.to_string()
    }
}

/// A field of /proc/meminfo in kB (or a plain count for HugePages_*).
fn meminfo(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let rest = l.strip_prefix(key)?.strip_prefix(':')?;
        rest.split_whitespace().next()?.parse().ok()
    })
}

/// The IRQ names in /proc/interrupts, by number (the last columns of each line).
fn irq_names(interrupts: &str) -> std::collections::BTreeMap<String, String> {
    let cpus = interrupts
        .lines()
        .next()
        .map_or(0, |h| h.split_whitespace().count());
    interrupts
        .lines()
        .skip(1)
        .filter_map(|l| {
            let (n, rest) = l.split_once(':')?;
            let words: Vec<&str> = rest.split_whitespace().collect();
            let name = words.get(cpus..).map(|w| w.join(" ")).unwrap_or_default();
            Some((n.trim().to_string(), name))
        })
        .collect()
}

/// The IRQs whose affinity includes one of `measured`.
fn irqs_on(r: &Roots, measured: &[usize]) -> Vec<IrqFact> {
    let names = r
        .proc("interrupts")
        .map(|t| irq_names(&t))
        .unwrap_or_default();
    let Ok(dir) = std::fs::read_dir(r.proc_path("irq")) else {
        return Vec::new();
    };
    let mut out: Vec<IrqFact> = dir
        .flatten()
        .filter_map(|e| {
            let irq = e.file_name().to_string_lossy().into_owned();
            if !irq.chars().all(|c| c.is_ascii_digit()) {
                return None;
            }
            let affinity = r.proc(&format!("irq/{irq}/smp_affinity_list"))?;
            let set = crate::config::CpuSet::parse(&affinity).ok()?;
            measured.iter().any(|c| set.contains(*c)).then(|| IrqFact {
                name: names.get(&irq).cloned().unwrap_or_default(),
                effective: r.proc(&format!("irq/{irq}/effective_affinity_list")),
                irq,
                affinity,
            })
        })
        .collect();
    out.sort_by_key(|f| f.irq.parse::<u64>().unwrap_or(u64::MAX));
    out
}

impl SystemFacts {
    /// The facts of this machine, for the measured CPUs.
    pub fn capture(measured: &[usize]) -> SystemFacts {
        SystemFacts::capture_from(&Roots::default(), Path::new("/boot"), measured)
    }

    /// The facts read from the given roots and boot directory.
    pub(crate) fn capture_from(r: &Roots, boot: &Path, measured: &[usize]) -> SystemFacts {
        let dmi = |f: &str| r.sys(&format!("class/dmi/id/{f}")).unwrap_or_default();
        let cpuinfo = r.proc("cpuinfo").unwrap_or_default();
        let field = |k: &str| {
            cpuinfo
                .lines()
                .find(|l| l.split(':').next().is_some_and(|n| n.trim() == k))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
                .unwrap_or_default()
        };
        let model = [field("model name"), field("Model"), field("cpu")]
            .into_iter()
            .find(|m| !m.is_empty())
            .unwrap_or_default();
        let online = r.sys("devices/system/cpu/online").unwrap_or_default();
        let release = r.proc("sys/kernel/osrelease").unwrap_or_default();
        let config = kernel_config(r, boot, &release);
        let cfg = config.as_ref().map(|c| c.1.as_str());
        let yes = |k: &str| cfg.map(|c| config_value(c, k) == Some("y"));
        let cmdline = r.proc("cmdline").unwrap_or_default();
        let meminfo_text = r.proc("meminfo").unwrap_or_default();
        let numa_nodes = std::fs::read_dir(r.sys_path("devices/system/node"))
            .map(|d| {
                d.flatten()
                    .filter(|e| {
                        let n = e.file_name().to_string_lossy().into_owned();
                        n.strip_prefix("node")
                            .is_some_and(|k| !k.is_empty() && k.chars().all(|c| c.is_ascii_digit()))
                    })
                    .count()
            })
            .unwrap_or(0);
        SystemFacts {
            vendor: dmi("sys_vendor"),
            product: dmi("product_name"),
            bios_vendor: dmi("bios_vendor"),
            bios_version: dmi("bios_version"),
            bios_date: dmi("bios_date"),
            cpu_model: model,
            microcode: field("microcode"),
            cpus_online: crate::config::CpuSet::parse(&online).map_or(0, |s| s.len()),
            smt: r.sys("devices/system/cpu/smt/control").unwrap_or_default(),
            numa_nodes,
            kernel_version: r.proc("version").unwrap_or_default(),
            kernel_config: config.as_ref().map(|c| c.0.clone()).unwrap_or_default(),
            preempt_rt: yes("CONFIG_PREEMPT_RT"),
            preempt_config: cfg.map(preempt_model).unwrap_or_default(),
            hz: cfg.and_then(|c| config_value(c, "CONFIG_HZ")?.parse().ok()),
            no_hz_full: yes("CONFIG_NO_HZ_FULL"),
            high_res_timers: yes("CONFIG_HIGH_RES_TIMERS"),
            isolcpus: cmdline_value(&cmdline, "isolcpus"),
            nohz_full: cmdline_value(&cmdline, "nohz_full"),
            rcu_nocbs: cmdline_value(&cmdline, "rcu_nocbs"),
            irqaffinity: cmdline_value(&cmdline, "irqaffinity"),
            cmdline,
            kernel_release: release,
            clocksource: r
                .sys("devices/system/clocksource/clocksource0/current_clocksource")
                .unwrap_or_default(),
            available_clocksources: r
                .sys("devices/system/clocksource/clocksource0/available_clocksource")
                .unwrap_or_default(),
            governors: measured
                .iter()
                .filter_map(|c| {
                    r.sys(&format!(
                        "devices/system/cpu/cpu{c}/cpufreq/scaling_governor"
                    ))
                    .map(|g| format!("cpu{c}: {g}"))
                })
                .collect(),
            irqs_on_measured: irqs_on(r, measured),
            mem_total_kb: meminfo(&meminfo_text, "MemTotal"),
            mem_available_kb: meminfo(&meminfo_text, "MemAvailable"),
            hugepages: meminfo(&meminfo_text, "HugePages_Total"),
        }
    }

    /// The facts as (name, value) rows, as the report and the text show them.
    pub fn rows(&self) -> Vec<(&'static str, String)> {
        let mut rows = self.machine_rows();
        rows.extend(self.kernel_rows());
        rows.extend(self.running_rows());
        rows
    }

    /// The machine's rows: DMI, CPUs, microcode, SMT, NUMA.
    fn machine_rows(&self) -> Vec<(&'static str, String)> {
        vec![
            (
                "system",
                or_said(
                    format!("{} {}", self.vendor, self.product).trim(),
                    "unknown (no DMI)",
                ),
            ),
            (
                "BIOS",
                or_said(
                    format!(
                        "{} {} {}",
                        self.bios_vendor, self.bios_version, self.bios_date
                    )
                    .trim(),
                    "unknown (no DMI)",
                ),
            ),
            (
                "CPU",
                format!(
                    "{} × {}",
                    self.cpus_online,
                    or_said(&self.cpu_model, "unknown")
                ),
            ),
            ("microcode", or_said(&self.microcode, "unknown")),
            ("SMT", or_said(&self.smt, "unknown")),
            (
                "NUMA nodes",
                if self.numa_nodes == 0 {
                    "unknown".into()
                } else {
                    self.numa_nodes.to_string()
                },
            ),
        ]
    }

    /// The kernel's rows: its release, its real-time configuration and the isolation its
    /// command line asks for.
    fn kernel_rows(&self) -> Vec<(&'static str, String)> {
        vec![
            ("kernel", self.kernel_release.clone()),
            ("kernel version", self.kernel_version.clone()),
            (
                "kernel configuration",
                or_said(
                    &self.kernel_config,
                    "not found (/proc/config.gz, /boot/config-RELEASE)",
                ),
            ),
            ("PREEMPT_RT", config_option(self.preempt_rt)),
            (
                "preemption (configured)",
                or_said(&self.preempt_config, "unknown"),
            ),
            ("HZ", self.hz.map_or("unknown".into(), |h| h.to_string())),
            ("NO_HZ_FULL", config_option(self.no_hz_full)),
            ("HIGH_RES_TIMERS", config_option(self.high_res_timers)),
            ("isolcpus", or_said(&self.isolcpus, "not set")),
            ("nohz_full", or_said(&self.nohz_full, "not set")),
            ("rcu_nocbs", or_said(&self.rcu_nocbs, "not set")),
            ("irqaffinity", or_said(&self.irqaffinity, "not set")),
            ("kernel command line", self.cmdline.clone()),
        ]
    }

    /// The rows of what the measured CPUs ran with: clocksource, governors, the IRQs that may
    /// come to them, memory.
    fn running_rows(&self) -> Vec<(&'static str, String)> {
        vec![
            (
                "clocksource",
                format!(
                    "{} (available: {})",
                    self.clocksource, self.available_clocksources
                ),
            ),
            (
                "governor",
                if self.governors.is_empty() {
                    "no cpufreq".into()
                } else {
                    self.governors.join(", ")
                },
            ),
            ("IRQs on the measured CPUs", self.irqs_said()),
            ("memory", self.memory_said()),
            (
                "huge pages",
                self.hugepages.map_or("unknown".into(), |h| h.to_string()),
            ),
        ]
    }

    /// The IRQs that may come to the measured CPUs, each with the CPUs it goes to.
    fn irqs_said(&self) -> String {
        if self.irqs_on_measured.is_empty() {
            return "none".into();
        }
        self.irqs_on_measured
            .iter()
            .map(|i| {
                format!(
                    "{} {} ({})",
                    i.irq,
                    i.name,
                    i.effective.as_deref().unwrap_or(&i.affinity)
                )
            })
            .collect::<Vec<_>>()
            .join("; ")
    }

    /// The memory, and what of it was available when the run started.
    fn memory_said(&self) -> String {
        match (self.mem_total_kb, self.mem_available_kb) {
            (Some(t), Some(a)) => {
                format!("{} MiB ({} MiB available at the start)", t / 1024, a / 1024)
            }
            (Some(t), None) => format!("{} MiB", t / 1024),
            _ => "unknown".into(),
        }
    }
}

/// A fact as read, or `none` (what its absence means) when it is empty.
fn or_said(s: &str, none: &str) -> String {
    if s.is_empty() {
        none.to_string()
    } else {
        s.to_string()
    }
}

/// A kernel configuration option: set or not, unknown when no configuration was found.
fn config_option(b: Option<bool>) -> String {
    match b {
        Some(true) => "yes".to_string(),
        Some(false) => "no".to_string(),
        None => "unknown (no kernel configuration found)".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn w(p: &Path, body: &str) {
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, body).unwrap();
    }

    /// A fake machine: DMI, cpuinfo with microcode, SMT, a command line with isolation, IRQs
    /// on and off the measured CPU, meminfo; the configuration given by the caller.
    fn tree(dir: &Path) -> Roots {
        let r = Roots::under(dir);
        let (p, s) = (&r.proc_root, &r.sys_root);
        w(&s.join("class/dmi/id/sys_vendor"), "Acme\n");
        w(&s.join("class/dmi/id/product_name"), "RT-1000\n");
        w(&s.join("class/dmi/id/bios_vendor"), "Acme BIOS\n");
        w(&s.join("class/dmi/id/bios_version"), "2.17\n");
        w(&s.join("class/dmi/id/bios_date"), "03/04/2025\n");
        w(
            &p.join("cpuinfo"),
            "processor\t: 0\nmodel name\t: Fake CPU @ 3GHz\nmicrocode\t: 0xde\n\nprocessor\t: 1\nmodel name\t: Fake CPU @ 3GHz\nmicrocode\t: 0xde\n",
        );
        w(&s.join("devices/system/cpu/online"), "0-3\n");
        w(&s.join("devices/system/cpu/smt/control"), "off\n");
        w(&s.join("devices/system/node/node0/cpulist"), "0-3\n");
        w(&s.join("devices/system/node/node1/cpulist"), "\n");
        w(
            &s.join("devices/system/cpu/cpu2/cpufreq/scaling_governor"),
            "performance\n",
        );
        w(
            &s.join("devices/system/cpu/cpu3/cpufreq/scaling_governor"),
            "powersave\n",
        );
        w(&p.join("sys/kernel/osrelease"), "6.6.0-rt15\n");
        w(
            &p.join("version"),
            "Linux version 6.6.0-rt15 #1 SMP PREEMPT_RT\n",
        );
        w(
            &p.join("cmdline"),
            "BOOT_IMAGE=/vmlinuz isolcpus=1 isolcpus=domain,managed_irq,2-3 nohz_full=2-3 rcu_nocbs=2-3 irqaffinity=0-1 quiet\n",
        );
        w(
            &s.join("devices/system/clocksource/clocksource0/current_clocksource"),
            "tsc\n",
        );
        w(
            &s.join("devices/system/clocksource/clocksource0/available_clocksource"),
            "tsc hpet acpi_pm\n",
        );
        w(
            &p.join("interrupts"),
            "           CPU0       CPU1       CPU2       CPU3\n  0:         10          0          0          0   IO-APIC    2-edge      timer\n 24:          0          0        500          0   PCI-MSI 1-edge      eth0-rx\nLOC:       100        100        100        100   Local timer interrupts\n",
        );
        w(&p.join("irq/0/smp_affinity_list"), "0-1\n");
        w(&p.join("irq/24/smp_affinity_list"), "0-3\n");
        w(&p.join("irq/24/effective_affinity_list"), "2\n");
        w(&p.join("irq/default_smp_affinity"), "3\n");
        w(
            &p.join("meminfo"),
            "MemTotal:       16318480 kB\nMemFree:  100 kB\nMemAvailable:   12000000 kB\nHugePages_Total:       8\n",
        );
        r
    }

    #[test]
    fn reads_a_fake_rt_machine_with_a_boot_config() {
        let dir = tempfile::tempdir().unwrap();
        let r = tree(dir.path());
        let boot = dir.path().join("boot");
        w(
            &boot.join("config-6.6.0-rt15"),
            "# comment\nCONFIG_PREEMPT_RT=y\nCONFIG_PREEMPT_DYNAMIC=y\nCONFIG_HZ_1000=y\nCONFIG_HZ=1000\nCONFIG_NO_HZ_FULL=y\nCONFIG_HIGH_RES_TIMERS=y\n",
        );
        let f = SystemFacts::capture_from(&r, &boot, &[2, 3]);
        assert_eq!((f.vendor.as_str(), f.product.as_str()), ("Acme", "RT-1000"));
        assert_eq!(f.bios_version, "2.17");
        assert_eq!(f.cpu_model, "Fake CPU @ 3GHz");
        assert_eq!(f.microcode, "0xde");
        assert_eq!((f.cpus_online, f.smt.as_str(), f.numa_nodes), (4, "off", 2));
        assert_eq!(
            f.kernel_config,
            boot.join("config-6.6.0-rt15").display().to_string()
        );
        assert_eq!(f.preempt_rt, Some(true));
        assert_eq!(f.preempt_config, "rt (dynamic)");
        assert_eq!(f.hz, Some(1000));
        assert_eq!((f.no_hz_full, f.high_res_timers), (Some(true), Some(true)));
        // The last isolcpus= wins, as the kernel reads it.
        assert_eq!(f.isolcpus, "domain,managed_irq,2-3");
        assert_eq!((f.nohz_full.as_str(), f.rcu_nocbs.as_str()), ("2-3", "2-3"));
        assert_eq!(f.irqaffinity, "0-1");
        assert_eq!(f.clocksource, "tsc");
        assert_eq!(f.governors, ["cpu2: performance", "cpu3: powersave"]);
        // IRQ 0 stays on 0-1; IRQ 24 may reach 2-3 and is named.
        assert_eq!(f.irqs_on_measured.len(), 1);
        let i = &f.irqs_on_measured[0];
        assert_eq!(
            (i.irq.as_str(), i.name.as_str()),
            ("24", "PCI-MSI 1-edge eth0-rx")
        );
        assert_eq!(i.effective.as_deref(), Some("2"));
        assert_eq!(f.mem_total_kb, Some(16_318_480));
        assert_eq!(
            (f.mem_available_kb, f.hugepages),
            (Some(12_000_000), Some(8))
        );
        let rows = f.rows();
        assert!(rows.iter().any(|(k, v)| *k == "PREEMPT_RT" && v == "yes"));
        assert!(rows
            .iter()
            .any(|(k, v)| *k == "system" && v == "Acme RT-1000"));
    }

    #[test]
    fn proc_config_gz_wins_and_no_config_says_unknown() {
        let dir = tempfile::tempdir().unwrap();
        let r = tree(dir.path());
        let boot = dir.path().join("boot");
        w(
            &boot.join("config-6.6.0-rt15"),
            "CONFIG_PREEMPT_RT=y\nCONFIG_HZ=1000\n",
        );
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(
            b"CONFIG_PREEMPT_VOLUNTARY=y\nCONFIG_HZ=250\n# CONFIG_NO_HZ_FULL is not set\n",
        )
        .unwrap();
        w(&r.proc_path("config.gz"), "");
        std::fs::write(r.proc_path("config.gz"), gz.finish().unwrap()).unwrap();
        let f = SystemFacts::capture_from(&r, &boot, &[1]);
        assert_eq!(f.kernel_config, "/proc/config.gz");
        assert_eq!(
            (f.preempt_rt, f.hz, f.no_hz_full),
            (Some(false), Some(250), Some(false))
        );
        assert_eq!(f.preempt_config, "voluntary");
        // No configuration anywhere: unknown, not "no".
        let empty = tempfile::tempdir().unwrap();
        let r2 = tree(empty.path());
        let f = SystemFacts::capture_from(&r2, &empty.path().join("boot"), &[0]);
        assert_eq!(
            (f.preempt_rt, f.hz, f.kernel_config.as_str()),
            (None, None, "")
        );
        assert!(f
            .rows()
            .iter()
            .any(|(k, v)| *k == "PREEMPT_RT" && v.starts_with("unknown")));
        // A machine without DMI or cpufreq says so.
        let bare = tempfile::tempdir().unwrap();
        let f = SystemFacts::capture_from(&Roots::under(bare.path()), bare.path(), &[0]);
        let rows = f.rows();
        assert!(rows
            .iter()
            .any(|(k, v)| *k == "system" && v == "unknown (no DMI)"));
        assert!(rows
            .iter()
            .any(|(k, v)| *k == "governor" && v == "no cpufreq"));
    }

    #[test]
    fn cmdline_values() {
        assert_eq!(cmdline_value("a isolcpus=1-3 b", "isolcpus"), "1-3");
        assert_eq!(cmdline_value("a xisolcpus=1 b", "isolcpus"), "");
        assert_eq!(cmdline_value("nohz_full", "nohz_full"), "");
    }
}
