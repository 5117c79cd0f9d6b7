//! What the guest cannot see run, counted rather than guessed: NMIs (the `nmi_handler` event
//! per spike where the kernel has it, else /proc/interrupts over the run), SMIs (MSR 0x34,
//! `MSR_SMI_COUNT`, through /dev/cpu/N/msr) and steal time on a VM (/proc/stat). What could not
//! be measured is said, as a warning.

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Counters of one CPU at one moment (None: not readable here).
#[derive(Debug, Clone)]
struct Snap {
    nmi: Option<u64>,
    smi: Result<u64, String>,
    steal_ticks: Option<u64>,
}

impl Default for Snap {
    fn default() -> Self {
        Snap {
            nmi: None,
            smi: Err(String::new()),
            steal_ticks: None,
        }
    }
}

/// What was counted on one traced CPU during the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CpuCounts {
    /// CPU.
    pub cpu: usize,
    /// NMIs during the run (/proc/interrupts), if readable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nmis: Option<u64>,
    /// SMIs during the run (MSR 0x34), if readable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub smis: Option<u64>,
    /// Time the hypervisor ran something else on this vCPU (/proc/stat steal), ns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steal_ns: Option<u64>,
}

/// Counter roots (the real ones, or fakes in tests).
#[derive(Debug, Clone)]
pub struct Roots {
    /// /proc.
    pub proc: PathBuf,
    /// /dev/cpu.
    pub dev_cpu: PathBuf,
}

impl Default for Roots {
    fn default() -> Self {
        Roots {
            proc: "/proc".into(),
            dev_cpu: "/dev/cpu".into(),
        }
    }
}

/// Per-CPU NMI counts from /proc/interrupts (the `NMI:` row, one column per CPU).
fn nmis(proc: &Path) -> Option<Vec<u64>> {
    let t = std::fs::read_to_string(proc.join("interrupts")).ok()?;
    let l = t.lines().find(|l| l.trim_start().starts_with("NMI:"))?;
    Some(
        l.split_whitespace()
            .skip(1)
            .map_while(|v| v.parse::<u64>().ok())
            .collect(),
    )
}

/// Per-CPU steal ticks from /proc/stat (`cpuN` lines, 8th value).
fn steal(proc: &Path, cpu: usize) -> Option<u64> {
    let t = std::fs::read_to_string(proc.join("stat")).ok()?;
    let tag = format!("cpu{cpu}");
    let l = t
        .lines()
        .find(|l| l.split_whitespace().next() == Some(&tag))?;
    l.split_whitespace().nth(8)?.parse().ok()
}

/// `MSR_SMI_COUNT` of `cpu`.
fn smi(dev_cpu: &Path, cpu: usize) -> Result<u64, String> {
    use std::os::unix::fs::FileExt;
    let p = dev_cpu.join(format!("{cpu}/msr"));
    let f = std::fs::File::open(&p).map_err(|e| format!("{}: {e}", p.display()))?;
    let mut b = [0u8; 8];
    f.read_exact_at(&mut b, 0x34)
        .map_err(|e| format!("{} MSR 0x34: {e}", p.display()))?;
    Ok(u64::from_le_bytes(b) & 0xffff_ffff)
}

/// Counters of `cpus` now.
#[derive(Debug, Clone, Default)]
pub struct Counters {
    snaps: Vec<(usize, Snap)>,
}

impl Counters {
    /// Reads every counter of `cpus` under `r`.
    pub fn read(r: &Roots, cpus: &[usize]) -> Counters {
        let n = nmis(&r.proc);
        Counters {
            snaps: cpus
                .iter()
                .map(|&c| {
                    (
                        c,
                        Snap {
                            nmi: n.as_ref().and_then(|v| v.get(c).copied()),
                            smi: smi(&r.dev_cpu, c),
                            steal_ticks: steal(&r.proc, c),
                        },
                    )
                })
                .collect(),
        }
    }

    /// The counts from `self` to `later`, and warnings naming what could not be measured.
    pub fn delta(&self, later: &Counters, tick_ns: u64) -> (Vec<CpuCounts>, Vec<String>) {
        let mut warn = Vec::new();
        let mut out = Vec::new();
        for ((c, a), (_, b)) in self.snaps.iter().zip(&later.snaps) {
            let smis = match (&a.smi, &b.smi) {
                (Ok(x), Ok(y)) => Some(y.wrapping_sub(*x) & 0xffff_ffff),
                (Err(e), _) | (_, Err(e)) => {
                    warn.push(format!(
                        "--trace: SMIs on CPU {c} not measured ({e}; as root, `modprobe msr` on \
                         bare metal)"
                    ));
                    None
                }
            };
            let nmis = a.nmi.zip(b.nmi).map(|(x, y)| y.saturating_sub(x));
            if nmis.is_none() {
                warn.push(format!(
                    "--trace: NMIs on CPU {c} not counted (/proc/interrupts has no NMI row)"
                ));
            }
            let steal_ns = a
                .steal_ticks
                .zip(b.steal_ticks)
                .map(|(x, y)| y.saturating_sub(x) * tick_ns);
            out.push(CpuCounts {
                cpu: *c,
                nmis,
                smis,
                steal_ns,
            });
        }
        (out, warn)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_come_from_fake_proc_and_msr() {
        let d = tempfile::tempdir().unwrap();
        let proc = d.path().join("proc");
        std::fs::create_dir_all(&proc).unwrap();
        let dev = d.path().join("dev");
        std::fs::create_dir_all(dev.join("1")).unwrap();
        let put = |nmi: (u64, u64), steal: u64, smi: u64| {
            std::fs::write(
                proc.join("interrupts"),
                format!(
                    "           CPU0       CPU1\n NMI: {} {} Non-maskable interrupts\n",
                    nmi.0, nmi.1
                ),
            )
            .unwrap();
            std::fs::write(
                proc.join("stat"),
                format!("cpu  1 2 3 4 5 6 7 8 0 0\ncpu0 1 2 3 4 5 6 7 1 0 0\ncpu1 1 2 3 4 5 6 7 {steal} 0 0\n"),
            )
            .unwrap();
            let mut m = vec![0u8; 0x40];
            m[0x34..0x3c].copy_from_slice(&smi.to_le_bytes());
            std::fs::write(dev.join("1/msr"), m).unwrap();
        };
        let r = Roots {
            proc: proc.clone(),
            dev_cpu: dev.clone(),
        };
        put((5, 7), 100, 3);
        let a = Counters::read(&r, &[0, 1]);
        put((5, 9), 130, 4);
        let b = Counters::read(&r, &[0, 1]);
        let (c, warn) = a.delta(&b, 10_000_000);
        assert_eq!(
            c[1],
            CpuCounts {
                cpu: 1,
                nmis: Some(2),
                smis: Some(1),
                steal_ns: Some(300_000_000)
            }
        );
        assert_eq!(c[0].smis, None);
        assert_eq!(warn.len(), 1, "{warn:?}");
        assert!(warn[0].contains("SMIs on CPU 0 not measured"), "{warn:?}");
    }
}
