//! Culprit groups named by what they are rather than by the binary that runs them: latlab's own
//! loads (`hackbench (latlab load)`: every process and thread of one `--load`), the command
//! `latlab sched -- CMD` runs (its whole tree), latlab's own helper threads (`latlab (self)`),
//! another latlab (its command line), kernel workers by their workqueue
//! (`kworker/u8:*-ext4-rsv-conversion`), a threaded interrupt by its IRQ (`irq 24 virtio0
//! (thread)`), the per-CPU kernel threads of PREEMPT_RT and hotplug by what they serve
//! (`timer softirq (kernel, ktimers/*)`, `stop_machine, migration (kernel, migration/*)`);
//! everything else by the command it ran (`procs`).
//! What /proc says of a task is read while it lives (when its spike is attributed) and kept:
//! most tasks of a load are gone by the end of the run.

use super::procs::{Identity, Lineage};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

/// The group of latlab's own threads (trace reader, watch, display, control).
pub(crate) const SELF: &str = "latlab (self)";

/// Tasks and processes remembered at most; beyond, new ones are named without /proc.
const MAX_FACTS: usize = 200_000;
/// Parents followed up from a process.
const MAX_PARENTS: usize = 16;
/// Threads of a process looked at to tell another latlab (its `latlab-` measuring threads).
const MAX_THREADS_LOOKED: usize = 256;
/// Characters of another latlab's command line kept in its group's name.
const MAX_COMMAND: usize = 64;

/// A process latlab started whose whole tree is one group: a load worker, a measured command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Root {
    /// Its process id.
    pub(crate) pid: i32,
    /// The group's name, as shown.
    pub(crate) group: String,
}

impl Root {
    /// A `--load` worker named `name` (the load's kind): `hackbench (latlab load)`.
    pub fn load(pid: i32, name: &str) -> Root {
        Root {
            pid,
            group: format!("{name} (latlab load)"),
        }
    }

    /// The command `latlab sched -- CMD` runs: `make (measured command)`.
    pub fn command(pid: i32, argv0: &str) -> Root {
        let base = Path::new(argv0)
            .file_name()
            .map_or_else(|| argv0.to_string(), |n| n.to_string_lossy().into_owned());
        Root {
            pid,
            group: format!("{base} (measured command)"),
        }
    }
}

/// What /proc said about a process while it lived.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Proc {
    /// Its process group.
    pgid: i32,
    /// The process, then its parents, nearest first.
    line: Vec<i32>,
    /// Its name (/proc/TGID/comm: a kernel worker's with its workqueue).
    comm: String,
    /// Another latlab, the outermost in its line (its load workers and their children are
    /// that latlab's): its pid and command line.
    latlab: Option<(i32, String)>,
    /// A kernel thread (kthreadd's child, or kthreadd).
    kernel: bool,
}

/// Names the culprit group of every task a spike charges.
#[derive(Debug, Clone)]
pub(crate) struct Namer {
    proc: PathBuf,
    self_pid: i32,
    /// latlab's own binary (device, inode), to tell another latlab however it is named.
    self_exe: Option<(u64, u64)>,
    roots: Vec<Root>,
    /// Task -> its process id, read while the task lived.
    tgid: HashMap<i32, i32>,
    /// Process id -> what /proc said of it.
    procs: HashMap<i32, Proc>,
    /// Tasks /proc no longer showed, with their births in the trace then: not looked for
    /// again until the pid is born again (a gone task charged by a thousand spikes costs one
    /// failed open, not a thousand).
    gone: HashMap<i32, u32>,
    /// Parents read while walking a process's line (every process of a load shares them).
    parents: HashMap<i32, Option<i32>>,
    /// Whether a process of a line is a latlab (asked once per process).
    latlabs: HashMap<i32, bool>,
}

fn file_id(p: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(p).ok().map(|m| (m.dev(), m.ino()))
}

impl Namer {
    /// A namer reading /proc under `proc`, for latlab process `self_pid` and the processes it
    /// started (`roots`).
    pub(crate) fn new(proc: PathBuf, self_pid: i32, roots: Vec<Root>) -> Namer {
        let self_exe = file_id(&proc.join(format!("{self_pid}/exe")));
        Namer {
            proc,
            self_pid,
            self_exe,
            roots,
            tgid: HashMap::new(),
            procs: HashMap::new(),
            gone: HashMap::new(),
            parents: HashMap::new(),
            latlabs: HashMap::new(),
        }
    }

    /// latlab itself, with the processes it started.
    pub(crate) fn system(roots: Vec<Root>) -> Namer {
        Namer::new("/proc".into(), std::process::id() as i32, roots)
    }

    /// One more process whose tree is one group (a command started after the trace).
    pub(crate) fn add_root(&mut self, r: Root) {
        self.roots.retain(|x| x.pid != r.pid);
        self.roots.push(r);
        self.scan_roots();
    }

    /// Reads every task of the roots' trees now (once the trace runs): a load's tasks that
    /// were started before the trace may be gone by the time a spike they caused is
    /// attributed, and the trace never saw them born.
    pub(crate) fn scan_roots(&mut self) {
        // latlab's own threads too (a helper may end before its spikes are attributed).
        self.read(self.self_pid);
        let me = self.self_pid;
        for t in std::fs::read_dir(self.proc.join(format!("{me}/task")))
            .into_iter()
            .flatten()
            .flatten()
        {
            if let Some(tid) = t.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) {
                self.tgid.entry(tid).or_insert(me);
            }
        }
        if self.roots.is_empty() {
            return;
        }
        // (pid, ppid, pgid) of every process.
        let mut procs: Vec<(i32, i32, i32)> = Vec::new();
        for e in std::fs::read_dir(&self.proc)
            .into_iter()
            .flatten()
            .flatten()
        {
            let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
                continue;
            };
            let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
            let f: Vec<&str> = stat
                .rfind(')')
                .map_or(Vec::new(), |i| stat[i + 1..].split_whitespace().collect());
            let num = |i: usize| f.get(i).and_then(|v| v.parse::<i32>().ok()).unwrap_or(0);
            procs.push((pid, num(1), num(2)));
        }
        let parent: HashMap<i32, i32> = procs.iter().map(|p| (p.0, p.1)).collect();
        let roots: HashSet<i32> = self.roots.iter().map(|r| r.pid).collect();
        for &(pid, _, pgid) in &procs {
            let mut p = pid;
            let mut inside = roots.contains(&pgid);
            for _ in 0..MAX_PARENTS {
                if inside || p <= 1 {
                    break;
                }
                inside = roots.contains(&p);
                p = parent.get(&p).copied().unwrap_or(0);
            }
            if !inside {
                continue;
            }
            self.read(pid);
            for t in std::fs::read_dir(self.proc.join(format!("{pid}/task")))
                .into_iter()
                .flatten()
                .flatten()
            {
                if let Some(tid) = t.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) {
                    if self.tgid.len() < MAX_FACTS {
                        self.tgid.entry(tid).or_insert(pid);
                    }
                }
            }
        }
    }

    fn root_of(&self, pids: &[i32]) -> Option<&Root> {
        self.roots.iter().find(|r| pids.contains(&r.pid))
    }

    /// Reads what /proc says of `pid` (and its process) now, unless already known or its
    /// lineage already leads to a root.
    pub(crate) fn observe(&mut self, pid: i32, lin: &Lineage) {
        let mut walked = lin.born.clone();
        walked.extend(lin.older);
        if self.root_of(&walked).is_some() {
            return;
        }
        self.read_born(pid, lin.births);
        if let Some(o) = lin.older.filter(|&o| o != pid) {
            // The first creator older than the trace was never seen born.
            self.read_born(o, 0);
        }
    }

    fn read(&mut self, pid: i32) {
        self.read_born(pid, 0);
    }

    /// True when [`Namer::observe`] has nothing more to read of `pid`, born `births` times in
    /// the trace: read already, or found gone since its last birth.
    pub(crate) fn settled(&self, pid: i32, births: u32) -> bool {
        self.tgid.contains_key(&pid) || self.gone.get(&pid) == Some(&births)
    }

    /// Reads `pid`, which the trace saw born `births` times, unless known or known gone.
    fn read_born(&mut self, pid: i32, births: u32) {
        if self.tgid.contains_key(&pid) || self.tgid.len() >= MAX_FACTS {
            return;
        }
        if self.gone.get(&pid) == Some(&births) {
            return;
        }
        let Some(tgid) = latlab_core::sys::procs::tgid_of(&self.proc, pid) else {
            if self.gone.len() < MAX_FACTS {
                self.gone.insert(pid, births);
            }
            return;
        };
        self.gone.remove(&pid);
        self.tgid.insert(pid, tgid);
        if self.procs.contains_key(&tgid) || self.procs.len() >= MAX_FACTS {
            return;
        }
        let stat =
            std::fs::read_to_string(self.proc.join(format!("{tgid}/stat"))).unwrap_or_default();
        let fields: Vec<&str> = stat
            .rfind(')')
            .map_or(Vec::new(), |i| stat[i + 1..].split_whitespace().collect());
        let pgid = fields.get(2).and_then(|v| v.parse().ok()).unwrap_or(0);
        let mut line = vec![tgid];
        let mut p = fields.get(1).and_then(|v| v.parse::<i32>().ok());
        while let Some(pp) = p.filter(|&x| x > 0 && line.len() < MAX_PARENTS) {
            line.push(pp);
            p = match self.parents.get(&pp) {
                Some(&known) => known,
                None => {
                    let up = (pp > 1)
                        .then(|| latlab_core::sys::procs::status_field(&self.proc, pp, "PPid:"))
                        .flatten();
                    if self.parents.len() < MAX_FACTS {
                        self.parents.insert(pp, up);
                    }
                    up
                }
            };
        }
        let comm = latlab_core::output::one_line(
            std::fs::read_to_string(self.proc.join(format!("{tgid}/comm")))
                .unwrap_or_default()
                .trim_end_matches('\n'),
        )
        .into_owned();
        // Kernel threads (children of kthreadd) are never latlab.
        let kernel = tgid == 2 || line.get(1) == Some(&2);
        // Never another latlab inside this latlab's own line (its load workers run its binary).
        let outer = if kernel || line.contains(&self.self_pid) {
            None
        } else {
            line.iter()
                .rev()
                .copied()
                .filter(|&p| p > 1)
                .find(|&p| self.latlab_cached(p))
        };
        let latlab = outer.map(|p| {
            let mut c = latlab_core::sys::procs::command_line(&self.proc, p)
                .filter(|c| !c.is_empty())
                .unwrap_or_else(|| comm.clone());
            if c.chars().count() > MAX_COMMAND {
                c = c.chars().take(MAX_COMMAND).collect::<String>() + "...";
            }
            (p, c)
        });
        self.procs.insert(
            tgid,
            Proc {
                pgid,
                line,
                comm,
                latlab,
                kernel,
            },
        );
    }

    /// [`Namer::is_latlab`], asked once per process.
    fn latlab_cached(&mut self, tgid: i32) -> bool {
        if let Some(&b) = self.latlabs.get(&tgid) {
            return b;
        }
        let b = self.is_latlab(tgid);
        if self.latlabs.len() < MAX_FACTS {
            self.latlabs.insert(tgid, b);
        }
        b
    }

    /// Whether process `tgid` is a latlab: its binary is latlab's own (however named) or
    /// called latlab, or one of its threads is a latlab measuring thread (`latlab-NAME`).
    fn is_latlab(&self, tgid: i32) -> bool {
        let exe = self.proc.join(format!("{tgid}/exe"));
        if self.self_exe.is_some() && file_id(&exe) == self.self_exe {
            return true;
        }
        if std::fs::read_link(&exe).is_ok_and(|t| {
            t.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("latlab"))
        }) {
            return true;
        }
        std::fs::read_dir(self.proc.join(format!("{tgid}/task")))
            .into_iter()
            .flatten()
            .flatten()
            .take(MAX_THREADS_LOOKED)
            .any(|t| {
                std::fs::read_to_string(t.path().join("comm"))
                    .is_ok_and(|c| c.starts_with("latlab-"))
            })
    }

    /// The process /proc showed `pid` in, and what it said of it.
    fn process(&self, pid: i32) -> Option<(i32, &Proc)> {
        let tgid = *self.tgid.get(&pid)?;
        Some((tgid, self.procs.get(&tgid)?))
    }

    /// The group of task `pid` (named `comm` at switch-in) from its lineage in the trace, the
    /// exec chain the trace saw (`exec_id`) and what /proc said while it lived.
    pub(crate) fn identity(
        &self,
        pid: i32,
        comm: &str,
        lin: &Lineage,
        exec_id: Option<Identity>,
    ) -> Identity {
        let one = |g: String| Identity {
            chain: vec![g.clone()],
            group: g,
        };
        let mine = self.process(pid);
        let oldest = lin.older.and_then(|o| self.process(o));
        // A root's tree: through the births the trace saw, the parents and process group
        // /proc showed.
        let mut related: Vec<i32> = lin.born.clone();
        related.extend(lin.older);
        for (_, p) in mine.iter().chain(oldest.iter()) {
            related.extend(&p.line);
            related.push(p.pgid);
        }
        if let Some(r) = self.root_of(&related) {
            return one(r.group.clone());
        }
        // The task's process: its own, or (no program run since) its oldest creator's; a
        // kernel thread kthreadd made is named by itself.
        let process = mine.or(oldest.filter(|(tgid, _)| !lin.exec && *tgid != 2));
        let own = process.map_or(
            !lin.exec && lin.older == Some(self.self_pid),
            |(tgid, _)| tgid == self.self_pid,
        );
        if own {
            return one(SELF.into());
        }
        if let Some((pid, cmd)) = process.and_then(|(_, p)| p.latlab.as_ref()) {
            return one(format!("{cmd} (another latlab, pid {pid})"));
        }
        let id = match exec_id {
            Some(id) if lin.exec => id,
            other => process
                .map(|(_, p)| one(p.comm.clone()))
                .or(other)
                .unwrap_or_else(|| one(comm.to_string())),
        };
        // A kernel thread's group by what it serves; a user task named like one is not (when
        // /proc said which it was).
        if process.is_some_and(|(_, p)| !p.kernel) {
            return id;
        }
        let irqs = self.proc.join("irq");
        match kernel_group(&id.group, &irqs).or_else(|| kernel_group(comm, &irqs)) {
            Some(g) => one(g),
            None => id,
        }
    }

    /// Forgets what it read of tasks other than `keep` (a session that never ends).
    pub(crate) fn retain(&mut self, keep: &HashSet<i32>) {
        self.tgid.retain(|pid, _| keep.contains(pid));
        let procs: HashSet<i32> = self.tgid.values().copied().collect();
        self.procs.retain(|p, _| procs.contains(p));
        // Read again when needed: a pid may since have been reused.
        self.gone.clear();
        self.parents.clear();
        self.latlabs.clear();
    }
}

/// The per-CPU kernel threads that do one kind of work for the kernel, by name prefix: the
/// group says what they serve, and the CPU number is dropped (the cause is per CPU already).
const KERNEL_WORK: &[(&str, &str)] = &[
    ("ktimers/", "timer softirq (kernel, ktimers/*)"),
    ("ktimersoftd/", "timer softirq (kernel, ktimersoftd/*)"),
    ("ksoftirqd/", "softirqs (kernel, ksoftirqd/*)"),
    ("rcuc/", "RCU callbacks (kernel, rcuc/*)"),
    ("rcuop/", "RCU offloaded callbacks (kernel, rcuo*)"),
    ("rcuos/", "RCU offloaded callbacks (kernel, rcuo*)"),
    ("rcuog/", "RCU offloaded callbacks (kernel, rcuo*)"),
    ("rcub/", "RCU priority boosting (kernel, rcub/*)"),
    ("rcu_preempt", "RCU grace periods (kernel, rcu_preempt)"),
    ("rcu_sched", "RCU grace periods (kernel, rcu_sched)"),
    (
        "migration/",
        "stop_machine, migration (kernel, migration/*)",
    ),
    ("cpuhp/", "CPU hotplug (kernel, cpuhp/*)"),
    ("watchdog/", "watchdog (kernel, watchdog/*)"),
    ("posixcputmr/", "POSIX CPU timers (kernel, posixcputmr/*)"),
    ("idle_inject/", "idle injection (kernel, idle_inject/*)"),
    ("kswapd", "page reclaim (kernel, kswapd*)"),
    ("kcompactd", "memory compaction (kernel, kcompactd*)"),
];

/// The group of kernel thread `name`: a kernel worker's workqueue ([`workqueue_group`]), a
/// threaded interrupt's IRQ (`irq/24-virtio0` -> `irq 24 virtio0 (thread)`: its handler's full
/// name from `irqs`, /proc/irq, where the thread's 15-character name cut it), the kind of
/// kernel work of [`KERNEL_WORK`]; None for any other name.
pub(crate) fn kernel_group(name: &str, irqs: &Path) -> Option<String> {
    if let Some(g) = workqueue_group(name) {
        return Some(g);
    }
    if let Some(g) = irq_thread_group(name, irqs) {
        return Some(g);
    }
    KERNEL_WORK.iter().find_map(|(prefix, group)| {
        let rest = name.strip_prefix(prefix)?;
        // `migration/3`, `kswapd0`, `rcu_preempt`: the rest is a CPU or node number, if any.
        let number = rest.trim_start_matches(|c: char| c.is_ascii_digit());
        number.is_empty().then(|| group.to_string())
    })
}

/// A threaded interrupt's group: `irq/NN-NAME` (or `irq/NN-s-NAME`, a secondary handler's
/// thread) -> `irq NN NAME (thread)`.
fn irq_thread_group(name: &str, irqs: &Path) -> Option<String> {
    let rest = name.strip_prefix("irq/")?;
    let (nr, handler) = rest.split_once('-')?;
    if nr.is_empty() || !nr.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let handler = handler.strip_prefix("s-").unwrap_or(handler);
    // The kernel names the thread after the handler, cut to 15 characters in all: the one
    // handler of that IRQ whose name starts so is the whole name.
    let full: Vec<String> = std::fs::read_dir(irqs.join(nr))
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| n.starts_with(handler) && !handler.is_empty())
        .collect();
    let handler = match full.as_slice() {
        [one] => one.as_str(),
        _ => handler,
    };
    Some(if handler.is_empty() {
        format!("irq {nr} (thread)")
    } else {
        format!("irq {nr} {handler} (thread)")
    })
}

/// A kernel worker's group: its workqueue, the worker number dropped
/// (`kworker/u8:2-ext4-rsv-conversion` -> `kworker/u8:*-ext4-rsv-conversion`; a worker
/// running its work shows `+` instead of `-`); None for any other name.
pub(crate) fn workqueue_group(name: &str) -> Option<String> {
    let rest = name.strip_prefix("kworker/")?;
    // A rescuer is named by its workqueue already.
    if rest.starts_with("R-") {
        return Some(name.to_string());
    }
    let (pool, tail) = rest.split_once(':')?;
    let tail = tail.trim_start_matches(|c: char| c.is_ascii_digit());
    let (flags, wq) = match tail.find(['-', '+']) {
        Some(i) => (&tail[..i], &tail[i + 1..]),
        None => (tail, ""),
    };
    Some(if wq.is_empty() {
        format!("kworker/{pool}:*{flags}")
    } else {
        format!("kworker/{pool}:*{flags}-{wq}")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fake /proc with processes (pid, ppid, pgid, comm, exe name, threads (tid, comm)).
    struct Fake(tempfile::TempDir);

    impl Fake {
        fn new() -> Fake {
            Fake(tempfile::tempdir().unwrap())
        }

        fn process(&self, pid: i32, ppid: i32, pgid: i32, comm: &str, threads: &[(i32, &str)]) {
            let d = self.0.path().join(pid.to_string());
            std::fs::create_dir_all(d.join("task")).unwrap();
            std::fs::write(
                d.join("status"),
                format!("Name:\t{comm}\nTgid:\t{pid}\nPPid:\t{ppid}\n"),
            )
            .unwrap();
            std::fs::write(
                d.join("stat"),
                format!("{pid} ({comm}) S {ppid} {pgid} {pgid} 0"),
            )
            .unwrap();
            std::fs::write(d.join("comm"), format!("{comm}\n")).unwrap();
            std::fs::write(d.join("cmdline"), format!("{comm}\0-x\0")).unwrap();
            for (tid, tcomm) in threads {
                let t = self.0.path().join(tid.to_string());
                std::fs::create_dir_all(&t).unwrap();
                std::fs::write(
                    t.join("status"),
                    format!("Name:\t{tcomm}\nTgid:\t{pid}\nPPid:\t{ppid}\n"),
                )
                .unwrap();
                let tt = d.join("task").join(tid.to_string());
                std::fs::create_dir_all(&tt).unwrap();
                std::fs::write(tt.join("comm"), format!("{tcomm}\n")).unwrap();
            }
        }
    }

    fn lin(born: &[i32], older: i32, exec: bool) -> Lineage {
        Lineage {
            born: born.to_vec(),
            older: Some(older),
            exec,
            births: 0,
        }
    }

    #[test]
    fn loads_self_another_latlab_and_commands_are_groups_of_their_own() {
        let f = Fake::new();
        f.process(1, 0, 1, "init", &[]);
        f.process(100, 1, 100, "bash", &[]);
        // latlab (10) with its trace reader thread 11; its load worker 20 (own process group)
        // with a thread 21 and a forked child 22.
        f.process(10, 100, 10, "latlab", &[(11, "latlab-trace")]);
        f.process(20, 10, 20, "hackbench", &[(21, "hackbench")]);
        f.process(22, 20, 20, "hackbench", &[]);
        // Another latlab (renamed binary) measuring with thread 31.
        f.process(30, 100, 30, "xq7z", &[(31, "latlab-T0")]);
        // Its load worker (latlab's binary under another name) and that worker's child: the
        // other latlab's, one group.
        f.process(32, 30, 32, "latlab-hackbenc", &[]);
        f.process(33, 32, 32, "hackbench", &[]);
        // A shell that is nothing of latlab's.
        f.process(40, 100, 40, "sh", &[]);
        f.process(23, 22, 20, "hackbench", &[]);
        let mut n = Namer::new(f.0.path().into(), 10, vec![Root::load(20, "hackbench")]);
        // Read when the trace starts: a load task gone before its spike is attributed.
        n.scan_roots();
        std::fs::remove_dir_all(f.0.path().join("23")).unwrap();
        let gone = lin(&[], 23, false);
        n.observe(23, &gone);
        assert_eq!(
            n.identity(23, "hackbench", &gone, None).group,
            "hackbench (latlab load)"
        );
        assert!(!n.tgid.contains_key(&40), "scanned beyond the roots");
        let name = |n: &mut Namer, pid: i32, comm: &str, l: Lineage| {
            n.observe(pid, &l);
            n.identity(pid, comm, &l, None).group
        };
        for (pid, comm) in [(20, "hackbench"), (21, "hackbench"), (22, "hackbench")] {
            assert_eq!(
                name(&mut n, pid, comm, lin(&[], pid, false)),
                "hackbench (latlab load)"
            );
        }
        // A hackbench child born and gone during the trace: through its births.
        let l = lin(&[77, 76], 21, false);
        assert_eq!(
            n.identity(77, "hackbench", &l, None).group,
            "hackbench (latlab load)"
        );
        assert_eq!(name(&mut n, 11, "latlab-trace", lin(&[], 11, false)), SELF);
        assert_eq!(
            name(&mut n, 31, "latlab-T0", lin(&[], 31, false)),
            "xq7z -x (another latlab, pid 30)"
        );
        for (pid, comm) in [(32, "latlab-hackbenc"), (33, "hackbench")] {
            assert_eq!(
                name(&mut n, pid, comm, lin(&[], pid, false)),
                "xq7z -x (another latlab, pid 30)"
            );
        }
        assert_eq!(name(&mut n, 40, "sh", lin(&[], 40, false)), "sh");
        // A thread latlab made during the trace, gone by the end, is latlab's; a program it
        // ran is not.
        assert_eq!(
            n.identity(90, "x", &lin(&[90], 10, false), None).group,
            SELF
        );
        let perf = Identity {
            group: "perf".into(),
            chain: vec!["perf".into(), "latlab".into()],
        };
        assert_eq!(
            n.identity(91, "perf", &lin(&[91], 10, true), Some(perf.clone())),
            perf
        );
        // A command run under sched: its whole tree.
        n.add_root(Root::command(40, "/bin/sh"));
        f.process(41, 40, 100, "sleep", &[]);
        assert_eq!(
            name(&mut n, 41, "sleep", lin(&[], 41, false)),
            "sh (measured command)"
        );
    }

    #[test]
    fn a_gone_task_is_looked_for_again_only_once_its_pid_is_born_again() {
        let f = Fake::new();
        f.process(1, 0, 1, "init", &[]);
        let mut n = Namer::new(f.0.path().into(), 10, vec![]);
        let l = |births| Lineage {
            births,
            ..lin(&[], 99, false)
        };
        n.observe(99, &l(0));
        assert_eq!(n.gone.get(&99), Some(&0));
        // The pid reappears: not looked for while the trace saw no new birth of it...
        f.process(99, 1, 99, "late", &[]);
        n.observe(99, &l(0));
        assert!(!n.tgid.contains_key(&99));
        // ...and read once it did.
        n.observe(99, &l(1));
        assert_eq!(n.tgid.get(&99), Some(&99));
        assert!(n.gone.is_empty());
        assert_eq!(n.identity(99, "x", &l(1), None).group, "late");
    }

    #[test]
    fn kernel_workers_group_by_workqueue() {
        assert_eq!(
            workqueue_group("kworker/u8:0-ext4-rsv-conversion"),
            workqueue_group("kworker/u8:2-ext4-rsv-conversion")
        );
        assert_eq!(
            workqueue_group("kworker/u8:2+ext4-rsv-conversion").unwrap(),
            "kworker/u8:*-ext4-rsv-conversion"
        );
        assert_eq!(
            workqueue_group("kworker/1:1H-kblockd").unwrap(),
            "kworker/1:*H-kblockd"
        );
        assert_eq!(workqueue_group("kworker/0:3").unwrap(), "kworker/0:*");
        assert_eq!(
            workqueue_group("kworker/R-rcu_gp").unwrap(),
            "kworker/R-rcu_gp"
        );
        assert_eq!(workqueue_group("kthreadd"), None);
        // Through the namer: /proc's name (with the workqueue) wins over the switch-in name.
        let f = Fake::new();
        f.process(2, 0, 0, "kthreadd", &[]);
        f.process(50, 2, 0, "kworker/u8:0-ext4-rsv-conversion", &[]);
        f.process(52, 2, 0, "kworker/u8:2-ext4-rsv-conversion", &[]);
        let mut n = Namer::new(f.0.path().into(), 10, vec![]);
        let ids: Vec<String> = [50, 52]
            .iter()
            .map(|&p| {
                let l = lin(&[], p, false);
                n.observe(p, &l);
                n.identity(p, "kworker/u8:0", &l, None).group
            })
            .collect();
        assert_eq!(ids[0], ids[1]);
        assert_eq!(ids[0], "kworker/u8:*-ext4-rsv-conversion");
        // A worker born during the trace and gone: its switch-in name, number dropped.
        let l = lin(&[60], 2, false);
        let born = Identity {
            group: "kthreadd".into(),
            chain: vec!["kthreadd".into()],
        };
        assert_eq!(
            n.identity(60, "kworker/u8:5", &l, Some(born)).group,
            "kworker/u8:*"
        );
    }

    #[test]
    fn threaded_interrupts_and_kernel_work_are_named_by_what_they_serve() {
        let f = Fake::new();
        let irqs = f.0.path().join("irq");
        // IRQ 24's one handler, whose name the thread's 15 characters cut.
        std::fs::create_dir_all(irqs.join("24/virtio1-requests")).unwrap();
        std::fs::write(irqs.join("24/smp_affinity_list"), "0-7\n").unwrap();
        let g = |n: &str| kernel_group(n, &irqs);
        assert_eq!(
            g("irq/24-virtio1-r").unwrap(),
            "irq 24 virtio1-requests (thread)"
        );
        assert_eq!(
            g("irq/24-s-virtio1").unwrap(),
            "irq 24 virtio1-requests (thread)"
        );
        // An IRQ /proc does not show: the name the thread has.
        assert_eq!(g("irq/9-acpi").unwrap(), "irq 9 acpi (thread)");
        assert_eq!(g("irq/x-acpi"), None);
        assert_eq!(g("irq/"), None);
        for cpu in ["0", "3", "15"] {
            assert_eq!(
                g(&format!("ktimers/{cpu}")).unwrap(),
                "timer softirq (kernel, ktimers/*)"
            );
            assert_eq!(
                g(&format!("migration/{cpu}")).unwrap(),
                "stop_machine, migration (kernel, migration/*)"
            );
            assert_eq!(
                g(&format!("rcuc/{cpu}")).unwrap(),
                "RCU callbacks (kernel, rcuc/*)"
            );
            assert_eq!(
                g(&format!("ksoftirqd/{cpu}")).unwrap(),
                "softirqs (kernel, ksoftirqd/*)"
            );
        }
        assert_eq!(
            g("rcu_preempt").unwrap(),
            "RCU grace periods (kernel, rcu_preempt)"
        );
        assert_eq!(g("kswapd0").unwrap(), "page reclaim (kernel, kswapd*)");
        assert_eq!(g("migrationd"), None);
        assert_eq!(g("migration/x"), None);
        assert_eq!(g("bash"), None);
        // Through the namer: a kernel thread is grouped, a user process that calls itself so is
        // not.
        f.process(2, 0, 0, "kthreadd", &[]);
        f.process(17, 2, 0, "migration/3", &[]);
        f.process(18, 2, 0, "irq/24-virtio1-r", &[]);
        f.process(1, 0, 1, "init", &[]);
        f.process(300, 1, 300, "migration/3", &[]);
        let mut n = Namer::new(f.0.path().into(), 10, vec![]);
        let mut name = |pid: i32, comm: &str| {
            let l = lin(&[], pid, false);
            n.observe(pid, &l);
            n.identity(pid, comm, &l, None).group
        };
        assert_eq!(
            name(17, "migration/3"),
            "stop_machine, migration (kernel, migration/*)"
        );
        assert_eq!(
            name(18, "irq/24-virtio1-r"),
            "irq 24 virtio1-requests (thread)"
        );
        assert_eq!(name(300, "migration/3"), "migration/3");
    }
}
