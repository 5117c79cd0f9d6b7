//! The in-kernel engine of `latlab sched`: loads `bpf/sched.bpf.c` (its object, built by
//! scripts/build-bpf.sh, is embedded), attaches it to four `sched` tracepoints and reads what
//! it aggregated: the table of live tasks, the ring of tasks that exited and the ring of delays
//! over the threshold. No event crosses to user space; nothing is pinned, so the programs go
//! with the process however it ends (a SIGKILL closes their descriptors).

pub mod explain;
pub mod layout;

use aya::maps::{HashMap, MapData, PerCpuArray, RingBuf};
pub use layout::{bucket_bounds, Delays, Ran, Spike, TaskStat};

/// The object, as scripts/build-bpf.sh built it from bpf/sched.bpf.c.
/// (aligned: the ELF reader reads its headers in place).
static OBJECT: &[u8] = aya::include_bytes_aligned!("sched.bpf.o");

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
pub fn program_names() -> impl Iterator<Item = &'static str> {
    PROGRAMS.iter().map(|p| p.0)
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

/// The engine, loaded and attached; detached when dropped.
pub struct SchedProbe {
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
    let mut bpf = aya::EbpfLoader::new()
        .btf(None)
        .load(OBJECT)
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
        let p: &mut aya::programs::TracePoint = bpf
            .program_mut(name)
            .ok_or_else(|| format!("the BPF object has no program {name}"))?
            .try_into()
            .map_err(|e| err(name, e))?;
        p.load().map_err(|e| err(&format!("loading {name}"), e))?;
    }
    Ok(bpf)
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
        // Attaching finds the tracepoints in tracefs: mounted if it is not (see `lifecycle`).
        let journal = crate::tracefs::journal_file("");
        crate::tracefs::TraceFs::system(journal.parent().unwrap_or(std::path::Path::new(".")))
            .map_err(|e| e.to_string())?;
        let exits = ring(&mut bpf, "exits")?;
        let spikes = ring(&mut bpf, "spikes")?;
        for (name, cat, tp) in PROGRAMS {
            let p: &mut aya::programs::TracePoint = bpf
                .program_mut(name)
                .ok_or_else(|| format!("the BPF object has no program {name}"))?
                .try_into()
                .map_err(|e| err(name, e))?;
            p.attach(cat, tp)
                .map_err(|e| err(&format!("attaching {name} to {cat}:{tp}"), e))?;
        }
        Ok(SchedProbe { bpf, exits, spikes })
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

/// latlab's programs loaded in the kernel now, by id and name (`restore` reports them: none
/// outlives the process that loaded it). Empty where the kernel cannot be asked.
pub fn loaded() -> Vec<(u32, String)> {
    let names: Vec<&str> = program_names().collect();
    aya::programs::loaded_programs()
        .filter_map(|p| p.ok())
        .filter_map(|p| {
            let n = p.name_as_str()?.to_string();
            names.iter().any(|x| n == *x).then(|| (p.id(), n))
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
        name: "in-kernel sched programs",
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
