//! Host time on a virtual machine. Whether this is a guest, and under which hypervisor (CPUID's
//! hypervisor leaf, the `hypervisor` CPU flag, DMI, /sys/hypervisor), and each traced CPU's
//! steal time — the best source a guest has is the per-CPU steal column of /proc/stat, which
//! counts USER_HZ ticks (10 ms) — read every 10 ms by a sampler thread, so each spike has
//! steal counted just before and just after it. A late timer interrupt is
//! "interrupts off or host"; where the steal counted around it covers it, "host (steal)".

use latlab_core::result::trace::{Attribution, StealAround, HOST_STEAL};
use latlab_core::sys::roots::Roots;
use std::collections::VecDeque;
use std::sync::Mutex;

/// Steal samples kept per session (at one per 10 ms, about a minute).
const KEEP_SAMPLES: usize = 6_000;
/// A spike's steal is not judged from readings further apart than this (the reader fell
/// behind, or the spike predates the samples kept).
pub(crate) const MAX_SPAN_NS: u64 = 200_000_000;

/// What this machine is: bare metal or a guest, and how that was found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Host {
    /// A virtual machine.
    pub(crate) vm: bool,
    /// The hypervisor, when named (`KVM`, `Hyper-V`, `Xen`, ...).
    pub(crate) hypervisor: Option<String>,
    /// What said so (`CPUID 0x40000000: KVMKVMKVM`, `/proc/cpuinfo flag hypervisor`, ...).
    pub(crate) evidence: Vec<String>,
}

/// The hypervisor a CPUID vendor signature (leaf 0x40000000) names.
fn vendor_name(sig: &str) -> String {
    match sig.trim_end_matches('\0').trim() {
        "KVMKVMKVM" => "KVM".into(),
        "Microsoft Hv" => "Hyper-V".into(),
        "VMwareVMware" => "VMware".into(),
        "XenVMMXenVMM" => "Xen".into(),
        "TCGTCGTCGTCG" => "QEMU (TCG)".into(),
        "bhyve bhyve" => "bhyve".into(),
        "ACRNACRNACRN" => "ACRN".into(),
        "lrpepyh  vr" | "prl hyperv" => "Parallels".into(),
        "VBoxVBoxVBox" => "VirtualBox".into(),
        other => other.to_string(),
    }
}

/// The hypervisor a DMI vendor and product name say, if they name one.
fn dmi_name(vendor: &str, product: &str) -> Option<String> {
    let v = vendor.to_ascii_lowercase();
    let p = product.to_ascii_lowercase();
    let name = if v.contains("qemu") || p.contains("kvm") || p.contains("qemu") {
        "KVM/QEMU"
    } else if v.contains("vmware") || p.contains("vmware") {
        "VMware"
    } else if v.contains("innotek") || p.contains("virtualbox") {
        "VirtualBox"
    } else if v.contains("xen") || p.contains("hvm domu") {
        "Xen"
    } else if v.contains("microsoft") && p.contains("virtual machine") {
        "Hyper-V"
    } else if v.contains("amazon ec2") || p.contains("ec2") {
        "Amazon EC2"
    } else if v.contains("google") && p.contains("compute engine") {
        "Google Compute Engine"
    } else if v.contains("firecracker") || p.contains("firecracker") {
        "Firecracker"
    } else if v.contains("bochs") || p.contains("bochs") {
        "Bochs"
    } else {
        return None;
    };
    Some(name.into())
}

/// CPUID's hypervisor vendor signature, when the CPU says it runs under a hypervisor.
pub(crate) fn cpuid_vendor() -> Option<String> {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::__cpuid;
        if (__cpuid(1).ecx >> 31) & 1 == 0 {
            return None;
        }
        let r = __cpuid(0x4000_0000);
        let mut b = Vec::with_capacity(12);
        for x in [r.ebx, r.ecx, r.edx] {
            b.extend_from_slice(&x.to_le_bytes());
        }
        Some(
            String::from_utf8_lossy(&b)
                .trim_end_matches('\0')
                .to_string(),
        )
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        None
    }
}

/// Whether this is a guest, from `cpuid` (the vendor signature, if the CPU reported one), the
/// `hypervisor` flag of /proc/cpuinfo, DMI (/sys/class/dmi/id/{sys_vendor,product_name}) and
/// /sys/hypervisor/type under `roots`.
pub(crate) fn detect(roots: &Roots, cpuid: Option<&str>) -> Host {
    let mut h = Host::default();
    let mut names = Vec::new();
    if let Some(sig) = cpuid.filter(|s| !s.trim_matches('\0').trim().is_empty()) {
        h.evidence.push(format!("CPUID 0x40000000: {}", sig.trim()));
        names.push(vendor_name(sig));
    }
    let flag = roots
        .cpuinfo_first()
        .map(|c| {
            c.lines()
                .any(|l| l.starts_with("flags") && l.split_whitespace().any(|f| f == "hypervisor"))
        })
        .unwrap_or(false);
    if flag {
        h.evidence.push("/proc/cpuinfo flag hypervisor".into());
    }
    if let Some(t) = roots.sys("hypervisor/type").filter(|t| !t.is_empty()) {
        h.evidence.push(format!("/sys/hypervisor/type: {t}"));
        names.push(match t.as_str() {
            "xen" => "Xen".into(),
            other => other.to_string(),
        });
    }
    let vendor = roots.sys("class/dmi/id/sys_vendor").unwrap_or_default();
    let product = roots.sys("class/dmi/id/product_name").unwrap_or_default();
    if let Some(n) = dmi_name(&vendor, &product) {
        h.evidence.push(
            format!("DMI: {} {}", vendor.trim(), product.trim())
                .trim_end()
                .into(),
        );
        names.push(n);
    }
    h.vm = !h.evidence.is_empty();
    h.hypervisor = names.into_iter().next();
    h
}

impl Host {
    /// This machine (CPUID and the real /proc and /sys).
    pub(crate) fn here() -> Host {
        detect(&Roots::host(), cpuid_vendor().as_deref())
    }

    /// What an idle CPU's unexplained delay means here.
    pub(crate) fn idle_note(&self) -> String {
        match (&self.hypervisor, self.vm) {
            (Some(n), _) => format!("nothing visible ran: host/SMI/NMI (this is a VM: {n})"),
            (None, true) => "nothing visible ran: host/SMI/NMI (this is a VM)".into(),
            _ => "nothing visible ran: SMI/NMI or idle exit".into(),
        }
    }
}

/// Steal's unit in /proc/stat: one USER_HZ tick (ns).
pub(crate) fn steal_tick_ns() -> u64 {
    latlab_core::sys::clock::user_hz_tick_ns()
}

/// Per-CPU steal ticks from the text of /proc/stat (`cpuN` lines, 8th value).
fn steal_of(stat: &str, cpu: usize) -> Option<u64> {
    let tag = format!("cpu{cpu}");
    let l = stat
        .lines()
        .find(|l| l.split_whitespace().next() == Some(&tag))?;
    l.split_whitespace().nth(8)?.parse().ok()
}

/// Steal readings of the traced CPUs over time, taken by the trace reader.
#[derive(Debug)]
pub(crate) struct StealLog {
    roots: Roots,
    cpus: Vec<usize>,
    /// (CLOCK_MONOTONIC ns, steal ticks per CPU of `cpus`), oldest first.
    samples: Mutex<VecDeque<(u64, Vec<Option<u64>>)>>,
    /// /proc/stat kept open with a buffer: read again from its start, the kernel formats it
    /// afresh, without an open, a close and an allocation every 10 ms.
    stat: Mutex<(Option<std::fs::File>, Vec<u8>)>,
}

/// The whole of `f` read from its start into `buf` (grown until it holds it); None when it
/// cannot be read.
fn read_from_start(f: &std::fs::File, buf: &mut Vec<u8>) -> Option<usize> {
    use std::os::unix::fs::FileExt;
    if buf.is_empty() {
        buf.resize(16 << 10, 0);
    }
    loop {
        match f.read_at(buf, 0) {
            Ok(n) if n < buf.len() => return Some(n),
            Ok(_) if buf.len() < 16 << 20 => {
                let grown = buf.len() * 2;
                buf.resize(grown, 0);
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            _ => return None,
        }
    }
}

impl StealLog {
    /// An empty log of `cpus`' steal, read from /proc/stat under `roots`.
    pub(crate) fn new(roots: Roots, cpus: &[usize]) -> StealLog {
        StealLog {
            roots,
            cpus: cpus.to_vec(),
            samples: Mutex::new(VecDeque::new()),
            stat: Mutex::new((None, Vec::new())),
        }
    }

    /// Reads /proc/stat once, stamped `now_ns`.
    pub(crate) fn sample(&self, now_ns: u64) {
        let v = {
            let mut g = self.stat.lock().unwrap_or_else(|p| p.into_inner());
            let (file, buf) = &mut *g;
            if file.is_none() {
                *file = std::fs::File::open(self.roots.proc_path("stat")).ok();
            }
            let n = file.as_ref().and_then(|f| read_from_start(f, buf));
            if n.is_none() {
                // Opened again next time (a file replaced under a test's fake tree).
                *file = None;
            }
            let stat = std::str::from_utf8(&buf[..n.unwrap_or(0)]).unwrap_or("");
            self.cpus.iter().map(|&c| steal_of(stat, c)).collect()
        };
        let mut q = self.samples.lock().unwrap_or_else(|p| p.into_inner());
        if q.back().is_some_and(|b| b.0 > now_ns) {
            return;
        }
        q.push_back((now_ns, v));
        while q.len() > KEEP_SAMPLES {
            q.pop_front();
        }
    }

    /// The steal counted on `cpu` between the last reading at or before `from` and the first
    /// at or after `to` (reading now, stamped `now_ns`, when none is after `to` yet); Err says
    /// why it cannot be told.
    pub(crate) fn around(
        &self,
        cpu: usize,
        from: u64,
        to: u64,
        now_ns: u64,
    ) -> Result<StealAround, String> {
        let i = self
            .cpus
            .iter()
            .position(|&c| c == cpu)
            .ok_or_else(|| format!("steal: CPU {cpu} not traced"))?;
        let late = {
            let q = self.samples.lock().unwrap_or_else(|p| p.into_inner());
            !q.iter().any(|x| x.0 >= to)
        };
        if late {
            self.sample(now_ns.max(to));
        }
        let q = self.samples.lock().unwrap_or_else(|p| p.into_inner());
        let before = q.iter().rev().find(|x| x.0 <= from);
        let after = q.iter().find(|x| x.0 >= to);
        let (Some(a), Some(b)) = (before, after) else {
            return Err("steal: no /proc/stat reading before and after the spike".into());
        };
        let (Some(x), Some(y)) = (a.1[i], b.1[i]) else {
            return Err(format!(
                "steal: /proc/stat has no steal column for cpu{cpu}"
            ));
        };
        Ok(StealAround {
            ticks: y.saturating_sub(x),
            span_ns: b.0 - a.0,
        })
    }
}

/// How often the sampler reads steal: /proc/stat's resolution, so no reading is wasted.
pub(crate) const SAMPLE_EVERY: std::time::Duration = std::time::Duration::from_millis(10);

/// The thread that reads steal every [`SAMPLE_EVERY`] into a [`StealLog`]; stopped and
/// joined when dropped.
pub(crate) struct Sampler {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Sampler {
    /// Starts sampling into `log` on `cpus` (housekeeping; None: wherever latlab may run), at
    /// latlab's own SCHED_OTHER weight: never real-time and never boosted, since a helper
    /// waking every 10 ms must not preempt a measured SCHED_OTHER thread. A reading the
    /// sampler missed is taken when a spike is checked. None if no thread could be started
    /// (steal is then read when a spike is checked).
    pub(crate) fn start(
        log: std::sync::Arc<StealLog>,
        cpus: Option<Vec<usize>>,
    ) -> Option<Sampler> {
        use std::sync::atomic::{AtomicBool, Ordering};
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let st = stop.clone();
        let thread = std::thread::Builder::new()
            .name("latlab-steal".into())
            .stack_size(latlab_core::sys::mem::HELPER_STACK)
            .spawn(move || {
                if let Some(c) = cpus.filter(|c| !c.is_empty()) {
                    let _ = latlab_core::sys::sched::pin_to_cpus(c);
                }
                while !st.load(Ordering::Acquire) {
                    log.sample(latlab_core::sys::clock::now_ns(libc::CLOCK_MONOTONIC));
                    std::thread::sleep(SAMPLE_EVERY);
                }
            })
            .ok()?;
        Some(Sampler {
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Release);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl StealLog {
    /// For a spike on `cpu` over `span` with a late timer or time nothing visible explains:
    /// the steal counted around it (kept in `why.steal`), its late timer renamed the host's
    /// where that steal covers it ([`classify`]); returns the reading for the residual. None
    /// for a spike with neither.
    pub(crate) fn judge(
        &self,
        why: &mut Attribution,
        cpu: usize,
        span: (u64, u64),
        tick_ns: u64,
        now_ns: u64,
    ) -> Option<(Result<StealAround, String>, u64)> {
        let wanted = why
            .components
            .iter()
            .any(|c| matches!(c.kind.as_str(), "timer" | "idle" | "unattributed"));
        let st = self.around(cpu, span.0, span.1, now_ns);
        if let Ok(a) = &st {
            if wanted {
                why.steal = Some(*a);
                classify(why, a, tick_ns);
            }
            steal_behind_tasks(why, a, tick_ns);
        }
        wanted.then_some((st, tick_ns))
    }
}

/// A guest's task seems to run on while the host has its vCPU (no switch marks the stolen
/// time), so time charged to a thread or to the measured task's own running may be the host's.
/// Where steal was counted around a spike with such time, the spike says so (a note, and the
/// reading in `why.steal`); the time stays where the trace put it: steal is counted in whole
/// ticks over readings milliseconds apart, too coarse to take a named task's time away.
fn steal_behind_tasks(why: &mut Attribution, steal: &StealAround, tick_ns: u64) {
    let charged: u64 = why
        .components
        .iter()
        .filter(|c| matches!(c.kind.as_str(), "thread" | "self"))
        .map(|c| c.ns)
        .sum();
    if charged == 0 || steal.ticks == 0 || steal.span_ns > MAX_SPAN_NS + charged {
        return;
    }
    why.steal.get_or_insert(*steal);
    let stolen_ms = steal.ticks.saturating_mul(tick_ns) as f64 / 1e6;
    why.notes.push(format!(
        "the host stole {stolen_ms:.0} ms of this vCPU around this spike ({} steal tick(s) in \
         /proc/stat within {:.0} ms): part of the time charged to a task here may be the host's",
        steal.ticks,
        steal.span_ns as f64 / 1e6
    ));
}

/// Renames the late-timer time of `why` the host's (`host`, "host (steal)") where the steal
/// counted around the spike covers it: `steal.ticks` ticks of `tick_ns` (at least one) add up
/// to at least the late-timer time, over readings at most [`MAX_SPAN_NS`] apart. Otherwise it
/// stays `timer`, "interrupts off or host". Returns whether it was renamed.
pub(crate) fn classify(why: &mut Attribution, steal: &StealAround, tick_ns: u64) -> bool {
    let late: u64 = why
        .components
        .iter()
        .filter(|c| c.kind == "timer")
        .map(|c| c.ns)
        .sum();
    let covered = late > 0
        && steal.ticks > 0
        && steal.span_ns <= MAX_SPAN_NS + late
        && steal.ticks.saturating_mul(tick_ns) >= late;
    if covered {
        for c in why.components.iter_mut().filter(|c| c.kind == "timer") {
            c.kind = "host".into();
            c.name = HOST_STEAL.into();
            c.task = None;
        }
    }
    covered
}

#[cfg(test)]
mod tests {
    use super::*;
    use latlab_core::result::trace::{Component, IRQS_OFF_OR_HOST};

    fn put(roots: &Roots, rel: &str, text: &str) {
        let p = if let Some(r) = rel.strip_prefix("proc/") {
            roots.proc_root.join(r)
        } else {
            roots.sys_root.join(rel.trim_start_matches("sys/"))
        };
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    #[test]
    fn a_guest_is_told_by_cpuid_the_cpu_flag_dmi_or_sys_hypervisor() {
        let d = tempfile::tempdir().unwrap();
        let r = Roots::under(d.path());
        put(&r, "proc/cpuinfo", "processor\t: 0\nflags\t\t: fpu sse\n");
        let bare = detect(&r, None);
        assert!(!bare.vm && bare.hypervisor.is_none(), "{bare:?}");
        assert_eq!(
            bare.idle_note(),
            "nothing visible ran: SMI/NMI or idle exit"
        );
        let kvm = detect(&r, Some("KVMKVMKVM\0\0\0"));
        assert_eq!((kvm.vm, kvm.hypervisor.as_deref()), (true, Some("KVM")));
        assert!(kvm.idle_note().contains("this is a VM: KVM"), "{kvm:?}");
        put(&r, "proc/cpuinfo", "flags\t\t: fpu hypervisor sse\n");
        let flag = detect(&r, None);
        assert!(flag.vm && flag.hypervisor.is_none(), "{flag:?}");
        put(&r, "sys/class/dmi/id/sys_vendor", "QEMU\n");
        put(
            &r,
            "sys/class/dmi/id/product_name",
            "Standard PC (Q35 + ICH9, 2009)\n",
        );
        assert_eq!(detect(&r, None).hypervisor.as_deref(), Some("KVM/QEMU"));
        put(&r, "sys/hypervisor/type", "xen\n");
        let xen = detect(&r, None);
        assert_eq!(xen.hypervisor.as_deref(), Some("Xen"));
        assert_eq!(xen.evidence.len(), 3, "{xen:?}");
    }

    fn stat(roots: &Roots, steal1: u64) {
        put(
            roots,
            "proc/stat",
            &format!(
                "cpu  1 2 3 4 5 6 7 9 0 0\ncpu0 1 2 3 4 5 6 7 4 0 0\ncpu1 1 2 3 4 5 6 7 {steal1} 0 0\n"
            ),
        );
    }

    fn late_timer(ns: u64, thread_ns: u64) -> Attribution {
        let c = |kind: &str, name: &str, ns: u64| Component {
            kind: kind.into(),
            name: name.into(),
            ns,
            share: 0.0,
            task: None,
            group: None,
            chain: Default::default(),
            folded: 0,
        };
        Attribution {
            components: vec![
                c("timer", IRQS_OFF_OR_HOST, ns),
                c("thread", "cat:10351", thread_ns),
            ],
            ..Attribution::default()
        }
    }

    /// A spike charged only to a thread (the vCPU taken while it "ran") never had its steal
    /// looked at: it says the host stole time around it, and the thread keeps its time.
    #[test]
    fn steal_behind_a_thread_is_said_without_taking_its_time() {
        let d = tempfile::tempdir().unwrap();
        let r = Roots::under(d.path());
        let ms = 1_000_000u64;
        let log = StealLog::new(r.clone(), &[1]);
        for (t, s) in [(0, 100), (10, 100), (20, 103), (30, 103)] {
            stat(&r, s);
            log.sample(t * ms);
        }
        let mut why = late_timer(0, 4 * ms);
        why.components.retain(|c| c.kind == "thread");
        let residual = log.judge(&mut why, 1, (12 * ms, 16 * ms), 10 * ms, 40 * ms);
        assert!(residual.is_none(), "no residual to judge");
        assert_eq!(why.steal.map(|s| s.ticks), Some(3));
        assert!(
            why.notes.iter().any(|n| n.contains("the host stole 30 ms")),
            "{:?}",
            why.notes
        );
        assert_eq!(
            (why.components[0].kind.as_str(), why.components[0].ns),
            ("thread", 4 * ms)
        );
        // No steal around it: nothing said.
        let mut quiet = late_timer(0, 4 * ms);
        quiet.components.retain(|c| c.kind == "thread");
        log.judge(&mut quiet, 1, (ms, 5 * ms), 10 * ms, 40 * ms);
        assert!(
            quiet.notes.is_empty() && quiet.steal.is_none(),
            "{:?}",
            quiet.notes
        );
    }

    #[test]
    fn steal_under_a_spike_makes_its_late_timer_the_hosts() {
        let d = tempfile::tempdir().unwrap();
        let r = Roots::under(d.path());
        let ms = 1_000_000u64;
        let log = StealLog::new(r.clone(), &[0, 1]);
        // Readings every 10 ms; CPU 1's steal moves by 2 ticks between 30 and 40 ms, under the
        // spike (32 .. 38 ms) whose timer came 5 ms late.
        for (t, s) in [
            (0, 100),
            (10, 100),
            (20, 100),
            (30, 100),
            (40, 102),
            (50, 102),
        ] {
            stat(&r, s);
            log.sample(t * ms);
        }
        let under = log.around(1, 32 * ms, 38 * ms, 60 * ms).unwrap();
        assert_eq!(
            under,
            StealAround {
                ticks: 2,
                span_ns: 10 * ms
            }
        );
        let mut why = late_timer(5 * ms, ms);
        assert!(classify(&mut why, &under, 10 * ms));
        let host = &why.components[0];
        assert_eq!(
            (host.kind.as_str(), host.name.as_str()),
            ("host", HOST_STEAL)
        );
        assert!(host.task.is_none() && host.group.is_none());
        // The thread's own share stays the thread's.
        assert_eq!(why.components[1].kind, "thread");
        // A spike elsewhere (12 .. 18 ms) saw no steal: interrupts off or host.
        let quiet = log.around(1, 12 * ms, 18 * ms, 60 * ms).unwrap();
        assert_eq!(quiet.ticks, 0);
        let mut why = late_timer(5 * ms, ms);
        assert!(!classify(&mut why, &quiet, 10 * ms));
        assert_eq!(
            (
                why.components[0].kind.as_str(),
                why.components[0].name.as_str()
            ),
            ("timer", IRQS_OFF_OR_HOST)
        );
        // Steal that does not cover the gap (1 tick of 10 ms against 25 ms late) is not enough.
        let one = StealAround {
            ticks: 1,
            span_ns: 30 * ms,
        };
        assert!(!classify(&mut late_timer(25 * ms, 0), &one, 10 * ms));
        // Readings too far apart say nothing about this spike.
        let wide = StealAround {
            ticks: 50,
            span_ns: 2_000 * ms,
        };
        assert!(!classify(&mut late_timer(5 * ms, 0), &wide, 10 * ms));
        // CPU 0 never moved; a CPU not traced is said.
        assert_eq!(log.around(0, 32 * ms, 38 * ms, 60 * ms).unwrap().ticks, 0);
        assert!(log.around(5, 32 * ms, 38 * ms, 60 * ms).is_err());
        // No reading after the spike yet: one is taken then.
        stat(&r, 105);
        let fresh = log.around(1, 55 * ms, 58 * ms, 70 * ms).unwrap();
        assert_eq!(
            fresh,
            StealAround {
                ticks: 3,
                span_ns: 20 * ms
            }
        );
    }
}
