//! What the guest cannot see run, counted rather than guessed: NMIs (the `nmi_handler` event
//! per spike where the kernel has it, else /proc/interrupts over the run), SMIs (MSR 0x34,
//! `MSR_SMI_COUNT`, through /dev/cpu/N/msr) and steal time on a VM (/proc/stat). What could not
//! be measured is said, as a warning.

use crate::result::trace::{CpuCounts, Residual, SpikeRecord};
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

/// `MSR_SMI_COUNT` of `cpu` (the kernel reads it on that CPU: an IPI, so latlab reads it only
/// at the start and end of a run and when a spike has time nothing visible explains).
pub fn smi(dev_cpu: &Path, cpu: usize) -> Result<u64, String> {
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

/// Cheap counter readings (NMIs from /proc/interrupts, steal from /proc/stat: no IPI) taken
/// while a run goes on, and the SMI counts read so far, so each spike's unexplained time can be
/// checked against the counters read just before and after it.
#[derive(Debug, Clone, Default)]
pub struct Watch {
    roots: Roots,
    cpus: Vec<usize>,
    /// (CLOCK_MONOTONIC ns, readings), oldest first.
    readings: std::collections::VecDeque<(u64, Counters)>,
    /// Per CPU: the SMI readings (time, count), oldest first, or why the MSR cannot be read.
    smi: Vec<Result<Vec<(u64, u64)>, String>>,
    /// Read NMIs from /proc/interrupts (the kernel has no `nmi_handler` event).
    count_nmis: bool,
}

/// Readings kept (at the tracer's 10 per second, a minute).
const READINGS: usize = 600;
/// Readings closer than this to the last are not taken.
const READ_EVERY_NS: u64 = 50_000_000;

impl Watch {
    /// Starts watching `cpus` at `now_ns` from `start` (the run's first full reading).
    pub fn new(roots: Roots, cpus: &[usize], start: &Counters, now_ns: u64, nmis: bool) -> Watch {
        let smi = cpus
            .iter()
            .map(|&c| {
                start
                    .snaps
                    .iter()
                    .find(|x| x.0 == c)
                    .map_or(Err("not read".to_string()), |x| x.1.smi.clone())
                    .map(|n| vec![(now_ns, n)])
            })
            .collect();
        let mut w = Watch {
            roots,
            cpus: cpus.to_vec(),
            readings: Default::default(),
            smi,
            count_nmis: nmis,
        };
        w.readings.push_back((now_ns, start.clone()));
        w
    }

    /// Takes a cheap reading at `now_ns` (unless one was taken in the last 50 ms).
    pub fn tick(&mut self, now_ns: u64) {
        if self
            .readings
            .back()
            .is_some_and(|r| now_ns < r.0 + READ_EVERY_NS)
        {
            return;
        }
        self.read_now(now_ns);
    }

    /// Takes a cheap reading, stamped `now_ns`.
    fn read_now(&mut self, now_ns: u64) {
        let n = if self.count_nmis {
            nmis(&self.roots.proc)
        } else {
            None
        };
        let c = Counters {
            snaps: self
                .cpus
                .iter()
                .map(|&c| {
                    (
                        c,
                        Snap {
                            nmi: n.as_ref().and_then(|v| v.get(c).copied()),
                            smi: Err("not read".into()),
                            steal_ticks: steal(&self.roots.proc, c),
                        },
                    )
                })
                .collect(),
        };
        self.readings.push_back((now_ns, c));
        // The first reading stays: it brackets anything older than the rest.
        while self.readings.len() > READINGS {
            self.readings.remove(1);
        }
    }

    /// What the counters say about `cpu` from `from` to `to` (ns): `ns` of the spike nothing
    /// visible explains; `nmis` the spike's traced NMIs (count, ns), when traced. `now_ns`: the
    /// time an SMI reading is taken (the MSR is read again now, if it can be).
    pub fn residual(
        &mut self,
        cpu: usize,
        span: (u64, u64),
        ns: u64,
        nmis: Option<(u32, u64)>,
        tick_ns: u64,
        now_ns: u64,
    ) -> Residual {
        let (from, to) = span;
        if !self.readings.iter().any(|x| x.0 >= to) {
            self.read_now(now_ns.max(to));
        }
        let mut r = Residual {
            ns,
            ..Residual::default()
        };
        let before = self.readings.iter().rev().find(|x| x.0 <= from);
        let after = self.readings.iter().find(|x| x.0 >= to);
        let snap = |x: Option<&(u64, Counters)>| {
            x.and_then(|(t, c)| {
                c.snaps
                    .iter()
                    .find(|s| s.0 == cpu)
                    .map(|s| (*t, s.1.clone()))
            })
        };
        let pair = snap(before).zip(snap(after));
        let ms = |a: u64, b: u64| format!("{:.0} ms", b.saturating_sub(a) as f64 / 1e6);
        match nmis {
            Some((n, t)) => r.measured.push(format!(
                "NMIs: {n} in the spike ({:.1} us, nmi_handler events)",
                t as f64 / 1e3
            )),
            None => match &pair {
                Some(((ta, a), (tb, b))) if a.nmi.is_some() && b.nmi.is_some() => {
                    let d = b.nmi.unwrap_or(0).saturating_sub(a.nmi.unwrap_or(0));
                    r.nmis_around = Some(d);
                    r.around_ns = Some(tb - ta);
                    r.measured.push(format!(
                        "NMIs: {d} in the {} around it (/proc/interrupts)",
                        ms(*ta, *tb)
                    ));
                }
                Some(_) => r
                    .unmeasured
                    .push("NMIs: /proc/interrupts has no NMI row".into()),
                None => r
                    .unmeasured
                    .push("NMIs: no counter reading before and after the spike".into()),
            },
        }
        match &pair {
            Some(((ta, a), (tb, b))) => match a.steal_ticks.zip(b.steal_ticks) {
                Some((x, y)) => {
                    let d = y.saturating_sub(x) * tick_ns;
                    r.steal_ns = Some(d);
                    r.around_ns = Some(tb - ta);
                    r.measured.push(format!(
                        "steal: {:.0} us in the {} around it (/proc/stat)",
                        d as f64 / 1e3,
                        ms(*ta, *tb)
                    ));
                }
                None => r.unmeasured.push(format!(
                    "steal: /proc/stat has no steal column for cpu{cpu}"
                )),
            },
            None => r
                .unmeasured
                .push("steal: no counter reading before and after the spike".into()),
        }
        let dev = self.roots.dev_cpu.clone();
        match self
            .cpus
            .iter()
            .position(|&c| c == cpu)
            .map(|i| &mut self.smi[i])
        {
            Some(Ok(hist)) => {
                // The MSR is read again only when no reading after the spike exists yet.
                if !hist.iter().any(|x| x.0 >= to) {
                    match smi(&dev, cpu) {
                        Ok(n) => {
                            hist.push((now_ns.max(to), n));
                            if hist.len() > READINGS {
                                hist.remove(1);
                            }
                        }
                        Err(e) => r.unmeasured.push(format!("SMIs: {e}")),
                    }
                }
                let a = hist.iter().rev().find(|x| x.0 <= from);
                let b = hist.iter().find(|x| x.0 >= to);
                if let (Some(&(ta, na)), Some(&(tb, nb))) = (a, b) {
                    let d = nb.wrapping_sub(na) & 0xffff_ffff;
                    r.smis = Some(d);
                    r.smi_around_ns = Some(tb - ta);
                    r.measured.push(format!(
                        "SMIs: {d} in the {} around it (MSR 0x34)",
                        ms(ta, tb)
                    ));
                } else if !r.unmeasured.iter().any(|u| u.starts_with("SMIs")) {
                    r.unmeasured
                        .push("SMIs: no MSR reading before and after the spike".into());
                }
            }
            Some(Err(e)) => r.unmeasured.push(format!("SMIs: {e}")),
            None => r.unmeasured.push(format!("SMIs: CPU {cpu} not traced")),
        }
        r
    }
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

/// What an idle CPU's unexplained delay means on this machine.
pub fn idle_note() -> String {
    let hv = std::fs::read_to_string("/sys/hypervisor/type")
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty());
    let flag = std::fs::read_to_string("/proc/cpuinfo")
        .map(|c| {
            c.lines()
                .any(|l| l.starts_with("flags") && l.split_whitespace().any(|f| f == "hypervisor"))
        })
        .unwrap_or(false);
    match (hv, flag) {
        (Some(t), _) => format!("nothing visible ran: hypervisor/SMI/NMI (this is a VM: {t})"),
        (None, true) => "nothing visible ran: hypervisor/SMI/NMI (this is a VM)".into(),
        _ => "nothing visible ran: SMI/NMI or idle exit".into(),
    }
}

/// Per CPU whose spikes have time nothing visible explains: how much, what it was checked
/// against and what could not be measured (a warning, so it is never silent).
pub fn residual_warnings(spikes: &[SpikeRecord], cpus: &[usize]) -> Vec<String> {
    let mut out = Vec::new();
    for &cpu in cpus {
        let rs: Vec<&crate::result::trace::Residual> = spikes
            .iter()
            .filter(|s| s.cpu == cpu)
            .filter_map(|s| s.why.residual.as_ref())
            .collect();
        if rs.is_empty() {
            continue;
        }
        let ns: u64 = rs.iter().map(|r| r.ns).sum();
        let sources = |f: fn(&crate::result::trace::Residual) -> &Vec<String>| {
            let mut v: Vec<String> = rs
                .iter()
                .flat_map(|r| f(r).iter())
                .map(|m| m.split(':').next().unwrap_or("").to_string())
                .collect();
            v.sort();
            v.dedup();
            v
        };
        let measured = sources(|r| &r.measured);
        let mut unmeasured: Vec<String> = rs
            .iter()
            .flat_map(|r| r.unmeasured.iter().cloned())
            .collect();
        unmeasured.sort();
        unmeasured.dedup();
        let mut w = format!(
            "--trace: {} spikes on CPU {cpu} hold {:.1} us nothing visible explains; checked against {} around each",
            rs.len(),
            ns as f64 / 1e3,
            if measured.is_empty() {
                "nothing".to_string()
            } else {
                measured.join(", ")
            }
        );
        if !unmeasured.is_empty() {
            w.push_str(&format!("; not measured: {}", unmeasured.join("; ")));
        }
        let smis: u64 = rs.iter().filter_map(|r| r.smis).sum();
        let nmis: u64 = rs.iter().filter_map(|r| r.nmis_around).sum();
        let steal: u64 = rs.iter().filter_map(|r| r.steal_ns).sum();
        if smis + nmis + steal > 0 {
            w.push_str(&format!(
                " (around them: {smis} SMIs, {nmis} NMIs, {:.1} us steal)",
                steal as f64 / 1e3
            ));
        }
        out.push(w);
    }
    out
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

    #[test]
    fn a_residual_names_what_was_counted_around_it_and_what_could_not_be() {
        let d = tempfile::tempdir().unwrap();
        let proc = d.path().join("proc");
        std::fs::create_dir_all(&proc).unwrap();
        let dev = d.path().join("dev");
        std::fs::create_dir_all(dev.join("0")).unwrap();
        let put = |nmi: u64, steal: u64| {
            std::fs::write(
                proc.join("interrupts"),
                format!("           CPU0       CPU1\n NMI: {nmi} 0 Non-maskable interrupts\n"),
            )
            .unwrap();
            std::fs::write(
                proc.join("stat"),
                format!("cpu0 1 2 3 4 5 6 7 {steal} 0 0\ncpu1 1 2 3 4 5 6 7 0 0 0\n"),
            )
            .unwrap();
        };
        let smi_at = |n: u64| {
            let mut m = vec![0u8; 0x40];
            m[0x34..0x3c].copy_from_slice(&n.to_le_bytes());
            std::fs::write(dev.join("0/msr"), m).unwrap();
        };
        let r = Roots {
            proc: proc.clone(),
            dev_cpu: dev.clone(),
        };
        put(10, 100);
        smi_at(5);
        let start = Counters::read(&r, &[0, 1]);
        let mut w = Watch::new(r, &[0, 1], &start, 1_000_000_000, true);
        // A reading 40 ms later is skipped (too soon), one at 1.1 s taken.
        w.tick(1_040_000_000);
        put(11, 102);
        w.tick(1_100_000_000);
        // The spike (1.2 s .. 1.201 s), then counters move; the reading after it is taken
        // when it is checked.
        put(13, 103);
        smi_at(7);
        let res = w.residual(
            0,
            (1_200_000_000, 1_201_000_000),
            800_000,
            None,
            10_000_000,
            1_300_000_000,
        );
        assert_eq!(res.ns, 800_000);
        assert_eq!(res.nmis_around, Some(2));
        assert_eq!(res.steal_ns, Some(10_000_000));
        assert_eq!(res.around_ns, Some(200_000_000));
        assert_eq!(res.smis, Some(2));
        assert_eq!(res.smi_around_ns, Some(300_000_000));
        assert!(res.unmeasured.is_empty(), "{res:?}");
        assert!(
            res.phrase()
                .contains("NMIs: 2 in the 200 ms around it (/proc/interrupts)"),
            "{}",
            res.phrase()
        );
        // CPU 1 has no MSR: said, with the path; traced NMIs are the spike's own.
        let res = w.residual(
            1,
            (1_250_000_000, 1_250_500_000),
            500_000,
            Some((1, 3_000)),
            10_000_000,
            1_300_000_000,
        );
        assert_eq!(res.nmis_around, None);
        assert!(
            res.measured
                .iter()
                .any(|m| m.starts_with("NMIs: 1 in the spike")),
            "{res:?}"
        );
        assert_eq!(res.unmeasured.len(), 1, "{res:?}");
        assert!(
            res.unmeasured[0].starts_with("SMIs: ") && res.unmeasured[0].contains("1/msr"),
            "{res:?}"
        );
        assert!(
            res.phrase().contains("; not measured: SMIs: "),
            "{}",
            res.phrase()
        );
    }
}
