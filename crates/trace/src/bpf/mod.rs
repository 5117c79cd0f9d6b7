//! The in-kernel engine of `latlab sched`: loads `bpf/sched.bpf.c` (its objects, built by
//! scripts/build-bpf.sh, are embedded; the one whose tracepoint layouts the kernel's format
//! files match is loaded), attaches it to four `sched` tracepoints and reads what
//! it aggregated: the table of live tasks, the ring of tasks that exited and the ring of delays
//! over the threshold. No event crosses to user space; nothing is pinned, so the programs go
//! with the process however it ends (a SIGKILL closes their descriptors).

pub mod explain;
pub mod flight;
pub mod layout;

use aya::maps::{HashMap, MapData, PerCpuArray, RingBuf};
pub use layout::{bucket_bounds, Delays, Ran, Spike, TaskStat};

/// The objects, as scripts/build-bpf.sh built them from bpf/sched.bpf.c (aligned: the ELF
/// reader reads its headers in place): for tracepoint records with the common 8-byte header,
/// and with PREEMPT_RT's 12 bytes.
static OBJECT: &[u8] = aya::include_bytes_aligned!("sched.bpf.o");
/// See [`OBJECT`].
static OBJECT_RT: &[u8] = aya::include_bytes_aligned!("sched-rt.bpf.o");

/// The fields the programs read and their offsets in records whose common header is `hdr`
/// bytes (`struct ev_*` of bpf/sched.bpf.c).
fn expected(hdr: usize) -> Vec<(&'static str, &'static str, usize)> {
    // prev_state is a long: aligned to 8 after prev_comm, prev_pid, prev_prio.
    let state = (hdr + 24).div_ceil(8) * 8;
    let mut v = vec![
        ("sched/sched_switch", "prev_comm", hdr),
        ("sched/sched_switch", "prev_pid", hdr + 16),
        ("sched/sched_switch", "prev_prio", hdr + 20),
        ("sched/sched_switch", "prev_state", state),
        ("sched/sched_switch", "next_comm", state + 8),
        ("sched/sched_switch", "next_pid", state + 24),
        ("sched/sched_switch", "next_prio", state + 28),
        ("irq/irq_handler_entry", "irq", hdr),
        ("irq/softirq_entry", "vec", hdr),
    ];
    for ev in [
        "sched/sched_waking",
        "sched/sched_wakeup_new",
        "sched/sched_process_exit",
    ] {
        v.extend([
            (ev, "comm", hdr),
            (ev, "pid", hdr + 16),
            (ev, "prio", hdr + 20),
        ]);
    }
    v
}

/// The object whose record layouts this kernel's format files (under tracefs `root`) match,
/// field by field; why none does.
fn object_for(root: &std::path::Path) -> Result<&'static [u8], String> {
    let mut formats = std::collections::HashMap::new();
    let mut offset = |ev: &str, field: &str| -> Result<usize, String> {
        if !formats.contains_key(ev) {
            let p = root.join("events").join(ev).join("format");
            let text = std::fs::read_to_string(&p).map_err(|e| err(&p.display().to_string(), e))?;
            let f =
                crate::format::parse_format(&text).map_err(|e| err(&p.display().to_string(), e))?;
            formats.insert(ev.to_string(), f);
        }
        formats[ev]
            .fields
            .iter()
            .find(|f| f.name == field)
            .map(|f| f.offset)
            .ok_or_else(|| format!("tracepoint {ev} has no field {field}"))
    };
    let hdr = offset("sched/sched_switch", "prev_comm")?;
    let object = match hdr {
        8 => OBJECT,
        12 => OBJECT_RT,
        n => {
            return Err(format!(
                "tracepoint records with a {n}-byte header: the engine reads 8 or 12"
            ))
        }
    };
    for (ev, field, want) in expected(hdr) {
        let got = offset(ev, field)?;
        if got != want {
            return Err(format!(
                "tracepoint {ev}: field {field} at offset {got}, where the engine reads it at {want}"
            ));
        }
    }
    Ok(object)
}

/// The system's tracefs (mounted if it is not: see `lifecycle`): the format files say which
/// object fits, and attaching finds the tracepoints there.
fn tracefs() -> Result<std::path::PathBuf, String> {
    let journal = crate::tracefs::journal_file("");
    crate::tracefs::TraceFs::system(journal.parent().unwrap_or(std::path::Path::new(".")))
        .map(|fs| fs.root)
        .map_err(|e| e.to_string())
}

/// The programs and the tracepoints they attach to (interrupt contexts first: a wake-up from
/// one is credited to it from the first).
const PROGRAMS: [(&str, &str, &str); 10] = [
    ("latlab_hrt_in", "timer", "hrtimer_expire_entry"),
    ("latlab_hrt_out", "timer", "hrtimer_expire_exit"),
    ("latlab_irq_in", "irq", "irq_handler_entry"),
    ("latlab_irq_out", "irq", "irq_handler_exit"),
    ("latlab_soft_in", "irq", "softirq_entry"),
    ("latlab_soft_out", "irq", "softirq_exit"),
    ("latlab_waking", "sched", "sched_waking"),
    ("latlab_wake_new", "sched", "sched_wakeup_new"),
    ("latlab_exit", "sched", "sched_process_exit"),
    ("latlab_switch", "sched", "sched_switch"),
];

/// The names latlab's programs carry in the kernel (`restore` looks for them).
pub fn program_names() -> impl Iterator<Item = String> {
    PROGRAMS
        .iter()
        .map(|p| p.0.to_string())
        .chain(flight::programs())
}

/// Tasks the kernel's table holds at most (`MAX_TASKS` of bpf/sched.h).
pub const MAX_TASKS: usize = 8192;

/// The kernel's counters of what the engine could not keep.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counters {
    /// Tracepoint hits.
    pub events: u64,
    /// Tasks not measured: the table was full.
    pub dropped: u64,
    /// Exits whose record did not fit the ring: collected from the table instead.
    pub exits_lost: u64,
    /// Delays over the threshold whose record did not fit the ring.
    pub spikes_lost: u64,
    /// Tasks whose tid was reused before their exit was collected: lost.
    pub reused: u64,
    /// Events not filed: their task had no entry (the table was full).
    pub unfiled: u64,
}

/// Detaches `links` off the caller's path, each on a thread of its own: closing a tracepoint's
/// perf event waits for an RCU grace period in the kernel (about 0.9 s each on the project's
/// VM), which one after another held a run's end for seconds, its result not yet written. The
/// programs run on until then, into maps the kernel keeps for them; a process that exits first
/// has the kernel close what is left. A thread that cannot be had detaches its link here.
fn detach(links: Vec<aya::programs::trace_point::TracePointLink>) {
    for link in links {
        let _ = std::thread::Builder::new()
            .name("latlab-detach".into())
            .stack_size(latlab_core::sys::mem::PROBE_STACK)
            .spawn(move || drop(link));
    }
}

/// The engine, loaded and attached; detached when dropped.
pub struct SchedProbe {
    /// The programs' attachments, detached together on drop ([`detach`]).
    links: Vec<aya::programs::trace_point::TracePointLink>,
    bpf: aya::Ebpf,
    exits: RingBuf<MapData>,
    spikes: RingBuf<MapData>,
}

fn err(what: &str, e: impl std::fmt::Display) -> String {
    format!("{what}: {e}")
}

/// Loads the object (the kernel verifies it): the programs, not yet attached.
fn load(threshold_ns: u64, cpus: Option<&[usize]>) -> Result<aya::Ebpf, String> {
    // No kernel BTF: the programs read tracepoint records, not kernel structures (no CO-RE),
    // and parsing the kernel's (megabytes) would be most of the engine's own CPU.
    let object = object_for(&tracefs()?)?;
    let mut bpf = aya::EbpfLoader::new()
        .btf(None)
        .load(object)
        .map_err(|e| err("loading the BPF object", e))?;
    {
        let map = bpf
            .map_mut("settings")
            .ok_or_else(|| "the BPF object has no settings map".to_string())?;
        let mut settings: aya::maps::Array<&mut MapData, [u8; layout::CONFIG]> =
            aya::maps::Array::try_from(map).map_err(|e| err("the settings map", e))?;
        settings
            .set(0, layout::config(threshold_ns, cpus), 0)
            .map_err(|e| err("writing the settings", e))?;
    }
    for (name, _, _) in PROGRAMS {
        tracepoint(&mut bpf, name)?.load().map_err(|e| {
            let why = err(&format!("loading {name}"), e);
            keep_log(&why);
            why
        })?;
    }
    Ok(bpf)
}

/// The object's tracepoint program `name`.
fn tracepoint<'a>(
    bpf: &'a mut aya::Ebpf,
    name: &str,
) -> Result<&'a mut aya::programs::TracePoint, String> {
    bpf.program_mut(name)
        .ok_or_else(|| format!("the BPF object has no program {name}"))?
        .try_into()
        .map_err(|e| err(name, e))
}

/// Writes a refusal whole (a verifier's log runs to thousands of lines; messages carry its
/// first and last) to the file `LATLAB_BPF_LOG` names, for whoever must see why.
fn keep_log(why: &str) {
    if let Some(path) = std::env::var_os("LATLAB_BPF_LOG").filter(|p| !p.is_empty()) {
        let _ = std::fs::write(path, why);
    }
}

/// Whether the engine can run here: the object loads and the kernel's verifier takes it.
/// The reason when not (no privilege, no BPF, lockdown).
pub fn probe() -> Result<(), String> {
    load(u64::MAX, None).map(drop)
}

impl SchedProbe {
    /// Loads and attaches the engine: delays on `cpus` (None: all) count, and those at or
    /// over `threshold_ns` are sent with their explanation.
    pub fn start(threshold_ns: u64, cpus: Option<&[usize]>) -> Result<SchedProbe, String> {
        let mut bpf = load(threshold_ns, cpus)?;
        let ring = |bpf: &mut aya::Ebpf, name: &str| -> Result<RingBuf<MapData>, String> {
            let m = bpf
                .take_map(name)
                .ok_or_else(|| format!("the BPF object has no map {name}"))?;
            RingBuf::try_from(m).map_err(|e| err(name, e))
        };
        let exits = ring(&mut bpf, "exits")?;
        let spikes = ring(&mut bpf, "spikes")?;
        let mut links = Vec::with_capacity(PROGRAMS.len());
        for (name, cat, tp) in PROGRAMS {
            let prog = tracepoint(&mut bpf, name)?;
            let id = prog
                .attach(cat, tp)
                .map_err(|e| err(&format!("attaching {name} to {cat}:{tp}"), e))?;
            links.push(prog.take_link(id).map_err(|e| err(name, e))?);
        }
        Ok(SchedProbe {
            links,
            bpf,
            exits,
            spikes,
        })
    }

    /// Moves what the rings hold out: tasks that exited, and delays over the threshold (of
    /// every task: the caller keeps those it measures).
    pub fn drain(&mut self, exited: &mut Vec<TaskStat>, spikes: &mut Vec<Spike>) {
        while let Some(item) = self.exits.next() {
            if let Some(t) = TaskStat::parse(&item) {
                exited.push(t);
            }
        }
        while let Some(item) = self.spikes.next() {
            if let Some(s) = Spike::parse(&item) {
                spikes.push(s);
            }
        }
    }

    /// The table: every task seen and not yet gone (those that exited but whose record did
    /// not fit the ring among them, `exited` set).
    pub fn tasks(&self) -> Vec<TaskStat> {
        let Some(map) = self.bpf.map("tasks") else {
            return Vec::new();
        };
        let Ok(table) = HashMap::<&MapData, u32, [u8; layout::TASK]>::try_from(map) else {
            return Vec::new();
        };
        table
            .iter()
            .filter_map(|kv| kv.ok())
            .filter_map(|(_, v)| TaskStat::parse(&v))
            .collect()
    }

    /// The kernel's counters, summed over CPUs.
    pub fn counters(&self) -> Counters {
        let mut c = [0u64; 6];
        if let Some(Ok(a)) = self
            .bpf
            .map("counters")
            .map(PerCpuArray::<&MapData, u64>::try_from)
        {
            for (i, slot) in c.iter_mut().enumerate() {
                if let Ok(v) = a.get(&(i as u32), 0) {
                    *slot = v.iter().sum();
                }
            }
        }
        Counters {
            events: c[0],
            dropped: c[1],
            exits_lost: c[2],
            spikes_lost: c[3],
            reused: c[4],
            unfiled: c[5],
        }
    }
}

impl Drop for SchedProbe {
    fn drop(&mut self) {
        detach(std::mem::take(&mut self.links));
    }
}

/// latlab's programs loaded in the kernel now, by id and name (`restore` reports them: none
/// outlives the process that loaded it). Empty where the kernel cannot be asked.
pub fn loaded() -> Vec<(u32, String)> {
    let names: Vec<String> = program_names().collect();
    aya::programs::loaded_programs()
        .filter_map(|p| p.ok())
        .filter_map(|p| {
            let n = p.name_as_str()?.to_string();
            names.contains(&n).then(|| (p.id(), n))
        })
        .collect()
}

/// The processes holding each of `ids` (from their descriptors' fdinfo `prog_id`).
fn owners(ids: &[u32]) -> Vec<(u32, Vec<i32>)> {
    let mut out: Vec<(u32, Vec<i32>)> = ids.iter().map(|&i| (i, Vec::new())).collect();
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return out;
    };
    for p in procs.flatten() {
        let Some(pid) = p.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        let Ok(fds) = std::fs::read_dir(p.path().join("fdinfo")) else {
            continue;
        };
        for fd in fds.flatten() {
            let info = std::fs::read_to_string(fd.path()).unwrap_or_default();
            let id = info
                .lines()
                .find_map(|l| l.strip_prefix("prog_id:"))
                .and_then(|v| v.trim().parse::<u32>().ok());
            if let Some(o) = id.and_then(|id| out.iter_mut().find(|o| o.0 == id)) {
                if !o.1.contains(&pid) {
                    o.1.push(pid);
                }
            }
        }
    }
    out
}

/// `latlab restore`'s look for latlab's programs: none is pinned, so each goes with the
/// process that loaded it; one still loaded is named with the run that holds it, and one that
/// no process holds (which latlab never leaves) is said as not removable.
pub const RESTORER: latlab_core::io::Restorer =
    latlab_core::io::Restorer {
        name: "in-kernel programs (sched, the flight recorder)",
        run: |_| {
            let found = loaded();
            let ids: Vec<u32> = found.iter().map(|f| f.0).collect();
            Ok(owners(&ids)
                .into_iter()
                .zip(found)
                .map(|((id, pids), (_, name))| match pids.is_empty() {
                    false => format!(
                    "BPF program {name} (id {id}) is held by a running latlab (pid {}): it goes \
                     when that run ends",
                    pids.iter().map(|p| p.to_string()).collect::<Vec<_>>().join(", ")
                ),
                    true => format!(
                        "could not remove BPF program {name} (id {id}): no process holds it (a \
                     pin or link of another tool's?); `bpftool prog show id {id}` tells"
                    ),
                })
                .collect())
        },
    };

#[cfg(test)]
mod tests {
    use super::*;

    fn fake(root: &std::path::Path, hdr: usize, skew: Option<&str>) {
        let common = if hdr == 12 {
            "\tfield:unsigned char common_preempt_lazy_count;\toffset:8;\tsize:1;\tsigned:0;\n"
        } else {
            ""
        };
        let mut by: std::collections::BTreeMap<&str, Vec<(&str, usize)>> = Default::default();
        for (ev, f, o) in expected(hdr) {
            let o = if Some(f) == skew { o + 4 } else { o };
            by.entry(ev).or_default().push((f, o));
        }
        for (ev, fields) in by {
            let d = root.join("events").join(ev);
            std::fs::create_dir_all(&d).unwrap();
            let mut t = format!(
                "name: {ev}\nID: 1\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n{common}"
            );
            for (f, o) in fields {
                t.push_str(&format!(
                    "\tfield:int {f};\toffset:{o};\tsize:4;\tsigned:1;\n"
                ));
            }
            std::fs::write(d.join("format"), t).unwrap();
        }
    }

    #[test]
    fn the_object_is_the_one_whose_layouts_the_kernel_has() {
        let d = tempfile::tempdir().unwrap();
        fake(&d.path().join("a"), 8, None);
        assert!(std::ptr::eq(
            object_for(&d.path().join("a")).unwrap(),
            OBJECT
        ));
        fake(&d.path().join("rt"), 12, None);
        assert!(std::ptr::eq(
            object_for(&d.path().join("rt")).unwrap(),
            OBJECT_RT
        ));
        // PREEMPT_RT's sched_switch: prev_state aligned to 40, next_pid at 64.
        assert!(expected(12).contains(&("sched/sched_switch", "next_pid", 64)));
        fake(&d.path().join("moved"), 8, Some("pid"));
        let e = object_for(&d.path().join("moved")).unwrap_err();
        assert!(e.contains("field pid at offset 28"), "{e}");
        assert!(object_for(&d.path().join("none")).is_err());
    }
}
