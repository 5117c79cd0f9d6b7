//! What the guest cannot see run, counted rather than guessed: NMIs (the `nmi_handler` event
//! per spike where the kernel has it, else /proc/interrupts over the run), SMIs (MSR 0x34,
//! `MSR_SMI_COUNT`, through /dev/cpu/N/msr; on bare metal only: a guest cannot count the
//! host's) and steal time on a VM (/proc/stat, see `host`). What could not be measured is said
//! once per run, as one warning per condition, with advice only where it applies.

use super::host::Host;
use latlab_core::result::trace::{steal_text, CpuCounts, Residual, SpikeRecord, StealAround};
use std::path::{Path, PathBuf};

/// Why SMIs are not counted in a guest.
const GUEST_SMIS: &str = "a guest cannot count the host's SMIs";

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
pub(crate) struct Roots {
    /// /proc.
    pub(crate) proc: PathBuf,
    /// /dev/cpu.
    pub(crate) dev_cpu: PathBuf,
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
pub(crate) fn smi(dev_cpu: &Path, cpu: usize) -> Result<u64, String> {
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
pub(crate) struct Counters {
    snaps: Vec<(usize, Snap)>,
}

/// Cheap NMI readings (/proc/interrupts: no IPI) taken while a run goes on, and the SMI counts
/// read so far, so each spike's unexplained time can be checked against the counters read just
/// before and after it. (Steal is read by the trace reader: `host::StealLog`.)
#[derive(Debug, Clone, Default)]
pub(crate) struct Watch {
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

/// `steal` in the residual's words: what was counted, or why it was not.
pub(crate) type StealReading = (Result<StealAround, String>, u64);

impl Watch {
    /// Starts watching `cpus` at `now_ns` from `start` (the run's first full reading).
    pub(crate) fn new(
        roots: Roots,
        cpus: &[usize],
        start: &Counters,
        now_ns: u64,
        nmis: bool,
    ) -> Watch {
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
    pub(crate) fn tick(&mut self, now_ns: u64) {
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
                            steal_ticks: None,
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
    /// visible explains; `nmis` the spike's traced NMIs (count, ns), when traced; `steal` the
    /// steal counted around it with its tick (ns), on a VM. `now_ns`: the time an SMI reading
    /// is taken (the MSR is read again now, if it can be).
    pub(crate) fn residual(
        &mut self,
        cpu: usize,
        span: (u64, u64),
        ns: u64,
        nmis: Option<(u32, u64)>,
        steal: Option<StealReading>,
        now_ns: u64,
    ) -> Residual {
        let mut r = Residual {
            ns,
            ..Residual::default()
        };
        match nmis {
            Some((n, t)) => r.measured.push(format!(
                "NMIs: {n} in the spike ({:.1} us, nmi_handler events)",
                t as f64 / 1e3
            )),
            None => self.nmis_around(&mut r, cpu, span, now_ns),
        }
        match steal {
            None => {}
            Some((Ok(st), tick)) => {
                r.steal_ticks = Some(st.ticks);
                r.steal_ns = Some(st.ticks * tick);
                r.steal_around_ns = Some(st.span_ns);
                r.measured.push(format!(
                    "steal: {} in the {} around it (/proc/stat)",
                    steal_text(st.ticks, tick),
                    millis(st.span_ns)
                ));
            }
            Some((Err(e), _)) => r.unmeasured.push(e),
        }
        self.smis_around(&mut r, cpu, span, now_ns);
        r
    }

    /// The NMIs /proc/interrupts counted on `cpu` between the readings around `span`, into
    /// `r` (a reading is taken now, stamped `now_ns`, if none is after it yet).
    fn nmis_around(&mut self, r: &mut Residual, cpu: usize, span: (u64, u64), now_ns: u64) {
        let (from, to) = span;
        if !self.readings.iter().any(|x| x.0 >= to) {
            self.read_now(now_ns.max(to));
        }
        let before = self.readings.iter().rev().find(|x| x.0 <= from);
        let after = self.readings.iter().find(|x| x.0 >= to);
        let at = |x: Option<&(u64, Counters)>| {
            x.and_then(|(t, c)| {
                c.snaps
                    .iter()
                    .find(|s| s.0 == cpu)
                    .and_then(|s| s.1.nmi.map(|n| (*t, n)))
            })
        };
        match (at(before), at(after)) {
            (Some((ta, a)), Some((tb, b))) => {
                let d = b.saturating_sub(a);
                r.nmis_around = Some(d);
                r.around_ns = Some(tb - ta);
                r.measured.push(format!(
                    "NMIs: {d} in the {} around it (/proc/interrupts)",
                    millis(tb - ta)
                ));
            }
            _ if before.is_none() || after.is_none() => r
                .unmeasured
                .push("NMIs: no counter reading before and after the spike".into()),
            _ => r
                .unmeasured
                .push("NMIs: /proc/interrupts has no NMI row".into()),
        }
    }

    /// The SMIs MSR 0x34 counted on `cpu` between the readings around `span`, into `r`; the
    /// MSR is read again (stamped `now_ns`) only when no reading after the spike exists yet.
    fn smis_around(&mut self, r: &mut Residual, cpu: usize, span: (u64, u64), now_ns: u64) {
        let (from, to) = span;
        let dev = self.roots.dev_cpu.clone();
        match self
            .cpus
            .iter()
            .position(|&c| c == cpu)
            .map(|i| &mut self.smi[i])
        {
            Some(Ok(hist)) => {
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
                        millis(tb - ta)
                    ));
                } else if !r.unmeasured.iter().any(|u| u.starts_with("SMIs")) {
                    r.unmeasured
                        .push("SMIs: no MSR reading before and after the spike".into());
                }
            }
            Some(Err(e)) => r.unmeasured.push(format!("SMIs: {e}")),
            None => r.unmeasured.push(format!("SMIs: CPU {cpu} not traced")),
        }
    }
}

/// A span in whole milliseconds, as the residual's lines say it: `12 ms`.
fn millis(d: u64) -> String {
    format!("{:.0} ms", d as f64 / 1e6)
}

/// CPUs as a list: `0, 1`.
fn cpu_list(cpus: &[usize]) -> String {
    cpus.iter()
        .map(usize::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

impl Counters {
    /// Reads every counter of `cpus` under `r`; the SMI MSR only where `smis` (bare metal).
    pub(crate) fn read(r: &Roots, cpus: &[usize], smis: bool) -> Counters {
        let n = nmis(&r.proc);
        Counters {
            snaps: cpus
                .iter()
                .map(|&c| {
                    (
                        c,
                        Snap {
                            nmi: n.as_ref().and_then(|v| v.get(c).copied()),
                            smi: if smis {
                                smi(&r.dev_cpu, c)
                            } else {
                                Err(GUEST_SMIS.into())
                            },
                            steal_ticks: steal(&r.proc, c),
                        },
                    )
                })
                .collect(),
        }
    }

    /// The counts from `self` to `later` (steal in ticks of `tick_ns`, on a VM), and a warning
    /// per condition that kept something from being measured (every CPU it applies to in one).
    pub(crate) fn delta(
        &self,
        later: &Counters,
        tick_ns: u64,
        host: &Host,
    ) -> (Vec<CpuCounts>, Vec<String>) {
        let mut out = Vec::new();
        // SMI failures by their reason (the path's CPU number left out), with their CPUs.
        let mut smi_fail: Vec<(String, Vec<usize>, String)> = Vec::new();
        let mut no_nmi = Vec::new();
        for ((c, a), (_, b)) in self.snaps.iter().zip(&later.snaps) {
            let smis = match (&a.smi, &b.smi) {
                (Ok(x), Ok(y)) => Some(y.wrapping_sub(*x) & 0xffff_ffff),
                (Err(e), _) | (_, Err(e)) => {
                    let key = e.replace(&format!("/{c}/"), "/N/");
                    match smi_fail.iter_mut().find(|f| f.0 == key) {
                        Some(f) => f.1.push(*c),
                        None => smi_fail.push((key, vec![*c], e.clone())),
                    }
                    None
                }
            };
            let nmis = a.nmi.zip(b.nmi).map(|(x, y)| y.saturating_sub(x));
            if nmis.is_none() {
                no_nmi.push(*c);
            }
            let steal_ticks = if host.vm {
                a.steal_ticks
                    .zip(b.steal_ticks)
                    .map(|(x, y)| y.saturating_sub(x))
            } else {
                None
            };
            out.push(CpuCounts {
                cpu: *c,
                nmis,
                smis,
                steal_ns: steal_ticks.map(|t| t * tick_ns),
                steal_ticks,
            });
        }
        let mut warn = Vec::new();
        for (key, cpus, first) in smi_fail {
            warn.push(if key == GUEST_SMIS {
                format!(
                    "{}: SMIs not counted: this is a VM{}, and {GUEST_SMIS}",
                    crate::who(),
                    host.hypervisor
                        .as_deref()
                        .map(|h| format!(" ({h})"))
                        .unwrap_or_default()
                )
            } else {
                let advice = if first.contains("No such file") {
                    "; as root, `modprobe msr`"
                } else if first.contains("ermission denied") || first.contains("not permitted") {
                    "; reading MSRs needs root"
                } else {
                    ""
                };
                format!(
                    "{}: SMIs not counted on CPU{} {} ({first}{advice})",
                    crate::who(),
                    if cpus.len() > 1 { "s" } else { "" },
                    cpu_list(&cpus)
                )
            });
        }
        if !no_nmi.is_empty() {
            warn.push(format!(
                "{}: NMIs not counted on CPU{} {} (/proc/interrupts has no NMI row)",
                crate::who(),
                if no_nmi.len() > 1 { "s" } else { "" },
                cpu_list(&no_nmi)
            ));
        }
        (out, warn)
    }
}

/// The spikes' time nothing visible explains, in one warning for the run: how much on which
/// CPUs, what it was checked against, the counts that were measured around it, and what could
/// not be measured that no other warning of the run says (`said`: the run's other warnings).
pub(crate) fn residual_warnings(
    spikes: &[SpikeRecord],
    said: &[String],
    tick_ns: u64,
) -> Vec<String> {
    let rs: Vec<(usize, &Residual)> = spikes
        .iter()
        .filter_map(|s| s.why.residual.as_ref().map(|r| (s.cpu, r)))
        .collect();
    if rs.is_empty() {
        return Vec::new();
    }
    let mut per_cpu: std::collections::BTreeMap<usize, usize> = Default::default();
    for (c, _) in &rs {
        *per_cpu.entry(*c).or_default() += 1;
    }
    let ns: u64 = rs.iter().map(|r| r.1.ns).sum();
    let what = |t: &String| t.split(':').next().unwrap_or("").to_string();
    let mut measured: Vec<String> = rs
        .iter()
        .flat_map(|r| r.1.measured.iter().map(what))
        .collect();
    measured.sort();
    measured.dedup();
    // What each run-level warning already says was not measured.
    let covered = |u: &String| {
        let w = what(u);
        said.iter().any(|s| s.contains(&format!("{w} not counted")))
    };
    let mut unmeasured: Vec<String> = rs
        .iter()
        .flat_map(|r| r.1.unmeasured.iter())
        .filter(|u| !covered(u))
        .cloned()
        .collect();
    unmeasured.sort();
    unmeasured.dedup();
    let cpus: Vec<String> = per_cpu
        .iter()
        .map(|(c, n)| format!("CPU {c}: {n}"))
        .collect();
    let mut w = format!(
        "{}: {} spikes ({}) hold {:.1} us nothing visible explains; checked against {} around each",
        crate::who(),
        rs.len(),
        cpus.join(", "),
        ns as f64 / 1e3,
        if measured.is_empty() {
            "nothing".to_string()
        } else {
            measured.join(", ")
        }
    );
    // Only what was counted: a count none of them measured is not shown as zero.
    let sum = |f: fn(&Residual) -> Option<u64>| {
        let v: Vec<u64> = rs.iter().filter_map(|r| f(r.1)).collect();
        (!v.is_empty()).then(|| v.iter().sum::<u64>())
    };
    let mut found = Vec::new();
    if let Some(n) = sum(|r| r.smis) {
        found.push(format!("{n} SMIs"));
    }
    if let Some(n) = sum(|r| r.nmis_around) {
        found.push(format!("{n} NMIs"));
    }
    if let Some(n) = sum(|r| r.steal_ticks) {
        found.push(format!("steal {}", steal_text(n, tick_ns)));
    }
    if !found.is_empty() {
        w.push_str(&format!(" (around them: {})", found.join(", ")));
    }
    if !unmeasured.is_empty() {
        w.push_str(&format!("; not measured: {}", unmeasured.join("; ")));
    }
    vec![w]
}

#[cfg(test)]
mod tests {
    use super::*;
    use latlab_core::result::trace::{Attribution, Component};

    fn vm() -> Host {
        Host {
            vm: true,
            hypervisor: Some("KVM".into()),
            evidence: vec![],
        }
    }

    #[test]
    fn counts_come_from_fake_proc_and_msr_and_each_condition_is_one_warning() {
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
        let a = Counters::read(&r, &[0, 1, 2], true);
        put((5, 9), 130, 4);
        let b = Counters::read(&r, &[0, 1, 2], true);
        let (c, warn) = a.delta(&b, 10_000_000, &vm());
        assert_eq!(
            c[1],
            CpuCounts {
                cpu: 1,
                nmis: Some(2),
                smis: Some(1),
                steal_ns: Some(300_000_000),
                steal_ticks: Some(30),
            }
        );
        assert_eq!(c[0].smis, None);
        // CPUs 0 and 2 lack the MSR: one warning naming both; CPU 2 has no NMI column: one.
        assert_eq!(warn.len(), 2, "{warn:?}");
        assert!(
            warn[0].starts_with("--trace: SMIs not counted on CPUs 0, 2 (")
                && warn[0].contains("0/msr")
                && warn[0].contains("`modprobe msr`"),
            "{warn:?}"
        );
        assert_eq!(
            warn[1],
            "--trace: NMIs not counted on CPU 2 (/proc/interrupts has no NMI row)"
        );
        // Bare metal: no steal is reported.
        let (c, _) = a.delta(&b, 10_000_000, &Host::default());
        assert_eq!((c[1].steal_ns, c[1].steal_ticks), (None, None));
        // A guest does not read the MSR: one warning, no hardware advice.
        let a = Counters::read(&r, &[0, 1], false);
        let b = Counters::read(&r, &[0, 1], false);
        let (c, warn) = a.delta(&b, 10_000_000, &vm());
        assert!(c.iter().all(|c| c.smis.is_none()));
        assert_eq!(
            warn,
            vec![format!(
                "--trace: SMIs not counted: this is a VM (KVM), and {GUEST_SMIS}"
            )]
        );
    }

    fn spike(cpu: usize, r: Residual) -> SpikeRecord {
        SpikeRecord {
            series: "T".into(),
            cpu,
            seq: 1,
            expected_ns: 0,
            latency_ns: r.ns,
            why: Attribution {
                components: vec![Component {
                    kind: "idle".into(),
                    name: "x".into(),
                    ns: r.ns,
                    share: 1.0,
                    task: None,
                    group: None,
                    chain: Default::default(),
                    folded: 0,
                }],
                residual: Some(r),
                ..Attribution::default()
            },
        }
    }

    #[test]
    fn a_residual_names_what_was_counted_around_it_and_what_could_not_be() {
        let d = tempfile::tempdir().unwrap();
        let proc = d.path().join("proc");
        std::fs::create_dir_all(&proc).unwrap();
        let dev = d.path().join("dev");
        std::fs::create_dir_all(dev.join("0")).unwrap();
        let put = |nmi: u64| {
            std::fs::write(
                proc.join("interrupts"),
                format!("           CPU0       CPU1\n NMI: {nmi} 0 Non-maskable interrupts\n"),
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
        put(10);
        smi_at(5);
        let start = Counters::read(&r, &[0, 1], true);
        let mut w = Watch::new(r, &[0, 1], &start, 1_000_000_000, true);
        // A reading 40 ms later is skipped (too soon), one at 1.1 s taken.
        w.tick(1_040_000_000);
        put(11);
        w.tick(1_100_000_000);
        // The spike (1.2 s .. 1.201 s), then counters move; the reading after it is taken
        // when it is checked.
        put(13);
        smi_at(7);
        let steal = StealAround {
            ticks: 1,
            span_ns: 20_000_000,
        };
        let res = w.residual(
            0,
            (1_200_000_000, 1_201_000_000),
            800_000,
            None,
            Some((Ok(steal), 10_000_000)),
            1_300_000_000,
        );
        assert_eq!(res.ns, 800_000);
        assert_eq!(res.nmis_around, Some(2));
        assert_eq!((res.steal_ns, res.steal_ticks), (Some(10_000_000), Some(1)));
        assert_eq!(res.around_ns, Some(200_000_000));
        assert_eq!(res.steal_around_ns, Some(20_000_000));
        assert_eq!(res.smis, Some(2));
        assert_eq!(res.smi_around_ns, Some(300_000_000));
        assert!(res.unmeasured.is_empty(), "{res:?}");
        let p = res.phrase();
        assert!(
            p.contains("NMIs: 2 in the 200 ms around it (/proc/interrupts)")
                && p.contains("steal: 1 tick (10 ms) in the 20 ms around it (/proc/stat)"),
            "{p}"
        );
        // CPU 1 has no MSR: said in the residual's data, with the path; traced NMIs are the
        // spike's own; bare metal: nothing about steal.
        let res1 = w.residual(
            1,
            (1_250_000_000, 1_250_500_000),
            500_000,
            Some((1, 3_000)),
            None,
            1_300_000_000,
        );
        assert_eq!(res1.nmis_around, None);
        assert!(
            res1.measured
                .iter()
                .any(|m| m.starts_with("NMIs: 1 in the spike")),
            "{res1:?}"
        );
        assert_eq!(res1.unmeasured.len(), 1, "{res1:?}");
        assert!(
            res1.unmeasured[0].starts_with("SMIs: ") && res1.unmeasured[0].contains("1/msr"),
            "{res1:?}"
        );
        assert!(!res1.measured.iter().any(|m| m.starts_with("steal")));
        // Not measured is never said per spike beside the counts.
        assert!(!res1.phrase().contains("not measured"), "{}", res1.phrase());
        // The run's one warning: counts only of what was measured; an SMI condition another
        // warning says is not repeated.
        let said = vec!["--trace: SMIs not counted on CPU 1 (...)".to_string()];
        let spikes = vec![spike(0, res), spike(1, res1.clone())];
        let w1 = residual_warnings(&spikes, &said, 10_000_000);
        assert_eq!(w1.len(), 1, "{w1:?}");
        assert!(
            w1[0].contains("2 spikes (CPU 0: 1, CPU 1: 1) hold 1300.0 us")
                && w1[0].contains("(around them: 2 SMIs, 2 NMIs, steal 1 tick (10 ms))")
                && !w1[0].contains("not measured"),
            "{w1:?}"
        );
        // Nothing counted: no zero counts beside "not measured".
        let bare = Residual {
            ns: 100,
            unmeasured: vec!["SMIs: /dev/cpu/1/msr: gone".into()],
            ..Residual::default()
        };
        let w2 = residual_warnings(&[spike(1, bare)], &[], 10_000_000);
        assert!(
            w2[0].contains("checked against nothing")
                && !w2[0].contains("around them")
                && w2[0].contains("not measured: SMIs"),
            "{w2:?}"
        );
    }
}
