//! Culprits as people name them: which command a task belongs to. From `sched_process_fork`
//! and `sched_process_exec` on every CPU, a table of the tasks born or exec'd during the run
//! gives each its group (the command it finally ran, or its creator's group for a thread or a
//! fork that never exec'd) and its exec chain (`sh ← taskset ← chrt ← timeout`: the names it
//! ran under, newest first, then its name at birth), and its lineage (its creators back to the
//! first one older than the trace), from which `groups` names what it belongs to. Tasks that
//! exited long ago are forgotten once the table is large (`sched_process_exit`), so a trace
//! of days under a fork storm keeps naming the new ones.

use super::event::{Event, Kind, Name};

/// Tasks the table remembers at most; beyond, the longest-exited one is forgotten for a new
/// one, and with none exited new ones are counted and left out.
const MAX_TASKS: usize = 200_000;
/// Above this many tasks, those that exited [`KEEP_EXITED_NS`] ago (trace time) are forgotten:
/// a trace that runs for days under a fork storm keeps naming new tasks, while a spike's
/// culprit that exited is still named (attribution is never that far behind).
const FORGET_ABOVE: usize = 50_000;
/// How long an exited task stays known once the table is above [`FORGET_ABOVE`].
const KEEP_EXITED_NS: u64 = 60_000_000_000;
/// How far a thread's group is looked up through its creators.
const MAX_DEPTH: usize = 16;

#[derive(Debug, Clone, Default)]
struct Task {
    /// Creator and name at birth.
    birth: Option<(i32, Name)>,
    /// Programs run: (time, name), in time order.
    execs: Vec<(u64, Name)>,
    /// Times the trace saw this pid born (a pid the kernel reused is born again).
    births: u32,
    /// When it was last born (trace time).
    born_at: u64,
    /// When it exited, if it did since.
    exited: Option<u64>,
}

/// The command a task belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Identity {
    /// The group: the command name after the last exec.
    pub(crate) group: String,
    /// Names the task ran under, newest first (the group first).
    pub(crate) chain: Vec<String>,
}

/// Every task born or exec'd while tracing.
#[derive(Debug, Default)]
pub(crate) struct ProcTable {
    tasks: super::FastMap<i32, Task>,
    /// Tasks not remembered (the table was full).
    pub(crate) left_out: u64,
    /// Exited tasks forgotten (see [`FORGET_ABOVE`]).
    pub(crate) forgotten: u64,
    /// Exits of known tasks, in the order read: (time, pid).
    exits: std::collections::VecDeque<(u64, i32)>,
    /// The latest event time seen.
    latest: u64,
}

impl ProcTable {
    fn task(&mut self, pid: i32) -> Option<&mut Task> {
        if !self.tasks.contains_key(&pid) && self.tasks.len() >= MAX_TASKS && !self.forget(true) {
            self.left_out += 1;
            return None;
        }
        Some(self.tasks.entry(pid).or_default())
    }

    /// Forgets exited tasks: those past [`KEEP_EXITED_NS`] while the table is above
    /// [`FORGET_ABOVE`], or (`must`) the longest-exited one whatever its age. Returns whether
    /// one was forgotten.
    fn forget(&mut self, must: bool) -> bool {
        let mut any = false;
        while let Some(&(at, pid)) = self.exits.front() {
            let due =
                self.tasks.len() > FORGET_ABOVE && at.saturating_add(KEEP_EXITED_NS) <= self.latest;
            let room_asked = must && !any;
            if !due && !room_asked {
                break;
            }
            self.exits.pop_front();
            // Not if born again since (the entry is its new life).
            if self.tasks.get(&pid).is_some_and(|t| t.exited == Some(at)) {
                self.tasks.remove(&pid);
                self.forgotten += 1;
                any = true;
            }
        }
        any
    }

    /// Takes a fork or exec event (others are ignored). Events may come in any order across
    /// CPUs; execs are kept in time order.
    pub(crate) fn event(&mut self, e: &Event) {
        self.latest = self.latest.max(e.ts);
        match e.kind {
            Kind::Fork {
                parent_pid,
                child_pid,
                child_comm,
            } => {
                if let Some(t) = self.task(child_pid) {
                    t.birth = Some((parent_pid, child_comm));
                    t.births = t.births.saturating_add(1);
                    t.born_at = t.born_at.max(e.ts);
                    t.exited = None;
                }
            }
            Kind::Exit { pid } => {
                // An exit read after the pid's next birth belongs to its former life.
                if let Some(t) = self.tasks.get_mut(&pid).filter(|t| e.ts >= t.born_at) {
                    t.exited = Some(e.ts);
                    self.exits.push_back((e.ts, pid));
                }
                self.forget(false);
            }
            Kind::Exec { pid, comm, .. } => {
                if let Some(t) = self.task(pid) {
                    let at = t.execs.partition_point(|x| x.0 <= e.ts);
                    t.execs.insert(at, (e.ts, comm));
                }
            }
            _ => {}
        }
    }

    /// Times the trace saw `pid` born.
    pub(crate) fn births(&self, pid: i32) -> u32 {
        self.tasks.get(&pid).map_or(0, |t| t.births)
    }

    /// The identity of `pid`, when the trace saw it born or exec.
    pub(crate) fn identity(&self, pid: i32) -> Option<Identity> {
        let mut p = pid;
        for _ in 0..MAX_DEPTH {
            let t = self.tasks.get(&p)?;
            if !t.execs.is_empty() {
                let mut chain: Vec<String> =
                    t.execs.iter().rev().map(|x| x.1.as_str().into()).collect();
                if let Some((_, born)) = &t.birth {
                    chain.push(born.as_str().into());
                }
                chain.dedup();
                return Some(Identity {
                    group: chain[0].clone(),
                    chain,
                });
            }
            match t.birth {
                // A thread or a fork that never exec'd: its creator's command, if known.
                Some((parent, born)) => {
                    if !self.tasks.contains_key(&parent) {
                        let n: String = born.as_str().into();
                        return Some(Identity {
                            group: n.clone(),
                            chain: vec![n],
                        });
                    }
                    p = parent;
                }
                None => return None,
            }
        }
        None
    }
}

/// Where a task came from, as far as the trace saw: the task and its creators born during the
/// trace (the task first), the first creator older than the trace (or a task that exec'd
/// without a recorded birth), and whether any of them exec'd.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Lineage {
    /// The task and the creators born while tracing, the task first.
    pub(crate) born: Vec<i32>,
    /// The first creator the trace did not see born (None: the walk was cut short).
    pub(crate) older: Option<i32>,
    /// Whether the task or one of `born` ran a program (exec) during the trace.
    pub(crate) exec: bool,
    /// Times the trace saw the task's pid born: what /proc said of the pid (or that it was
    /// gone) holds until it is born again.
    pub(crate) births: u32,
}

impl ProcTable {
    /// The lineage of `pid` (a task never seen is its own `older`).
    pub(crate) fn lineage(&self, pid: i32) -> Lineage {
        let mut out = Lineage {
            births: self.births(pid),
            ..Lineage::default()
        };
        let mut p = pid;
        for _ in 0..MAX_DEPTH {
            let Some(t) = self.tasks.get(&p) else {
                out.older = Some(p);
                return out;
            };
            out.exec |= !t.execs.is_empty();
            match t.birth {
                Some((parent, _)) => {
                    out.born.push(p);
                    p = parent;
                }
                None => {
                    out.older = Some(p);
                    return out;
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(s: &str) -> Name {
        Name::new(s.as_bytes())
    }

    fn fork(ts: u64, parent: i32, child: i32, comm: &str) -> Event {
        Event {
            ts,
            pid: parent,
            kind: Kind::Fork {
                parent_pid: parent,
                child_pid: child,
                child_comm: n(comm),
            },
        }
    }

    fn exec(ts: u64, pid: i32, comm: &str) -> Event {
        Event {
            ts,
            pid,
            kind: Kind::Exec {
                pid,
                old_pid: pid,
                comm: n(comm),
            },
        }
    }

    fn exit(ts: u64, pid: i32) -> Event {
        Event {
            ts,
            pid,
            kind: Kind::Exit { pid },
        }
    }

    #[test]
    fn tasks_long_exited_are_forgotten_once_the_table_is_large() {
        const S: u64 = 1_000_000_000;
        let mut t = ProcTable::default();
        // A small table forgets nothing, however old the exit.
        t.event(&fork(S, 1, 10, "a"));
        t.event(&exit(2 * S, 10));
        t.event(&fork(100 * S, 1, 11, "b"));
        assert!(t.identity(10).is_some());
        // A fork storm: many tasks born and exited at 200 s, then 5 (exited at 210 s) and
        // 6 (alive), and 7 exited at 201 s but born again at 205 s.
        for pid in 1000..1000 + FORGET_ABOVE as i32 {
            t.event(&fork(200 * S, 1, pid, "hb"));
            t.event(&exit(200 * S, pid));
        }
        t.event(&fork(200 * S, 1, 5, "late"));
        t.event(&fork(200 * S, 1, 6, "alive"));
        t.event(&fork(200 * S, 1, 7, "again"));
        t.event(&exit(201 * S, 7));
        t.event(&fork(205 * S, 1, 7, "again"));
        t.event(&exit(210 * S, 5));
        assert!(t.identity(1000).is_some(), "forgotten before 60 s");
        // 270 s: at the next exit read, what exited 60 s before goes, longest-exited first,
        // down to FORGET_ABOVE tasks (10, 11, the storm, 5, 6, 7 and 8 were 6 more).
        t.event(&fork(270 * S, 1, 8, "x"));
        t.event(&exit(270 * S, 8));
        assert_eq!(t.tasks.len(), FORGET_ABOVE);
        assert_eq!(t.forgotten, 6);
        assert!(t.identity(10).is_none() && t.identity(1004).is_none());
        assert!(t.identity(1005).is_some() && t.identity(11).is_some());
        // The one born again is never taken for its former life's exit.
        for pid in 1005..1000 + FORGET_ABOVE as i32 {
            t.event(&exit(271 * S, pid));
        }
        t.event(&fork(400 * S, 1, 9, "y"));
        t.event(&exit(400 * S, 9));
        assert!(t.identity(7).is_some() && t.identity(6).is_some());
    }

    #[test]
    fn a_full_table_makes_room_from_the_exited_then_leaves_new_ones_out() {
        let mut t = ProcTable::default();
        for pid in 0..MAX_TASKS as i32 {
            t.event(&fork(10, 1, 10 + pid, "hb"));
        }
        t.event(&exit(20, 10));
        t.event(&fork(30, 1, -5, "new"));
        assert!(t.identity(-5).is_some() && t.identity(10).is_none());
        t.event(&fork(30, 1, -6, "left out"));
        assert!(t.identity(-6).is_none());
        assert_eq!((t.forgotten, t.left_out), (1, 1));
    }

    #[test]
    fn the_exec_chain_and_threads_name_one_command() {
        let mut t = ProcTable::default();
        // timeout (100) forks 101, which runs chrt, taskset, then sh; the events come out of
        // order (read CPU by CPU); sh makes a thread 102.
        for e in [
            exec(30, 101, "sh"),
            fork(10, 100, 101, "timeout"),
            exec(20, 101, "taskset"),
            exec(15, 101, "chrt"),
            fork(40, 101, 102, "sh"),
        ] {
            t.event(&e);
        }
        let id = t.identity(101).unwrap();
        assert_eq!(id.group, "sh");
        assert_eq!(id.chain, ["sh", "taskset", "chrt", "timeout"]);
        assert_eq!(t.identity(102).unwrap(), id);
        // The creator is older than the trace: the child is named by its birth name.
        assert_eq!(t.identity(100), None);
        t.event(&fork(50, 7, 103, "bash"));
        assert_eq!(t.identity(103).unwrap().group, "bash");
    }

    #[test]
    fn a_lineage_walks_births_to_the_first_older_creator() {
        let mut t = ProcTable::default();
        // 50 (older than the trace) makes thread 60, which forks 70; 70 execs.
        for e in [fork(1, 50, 60, "hackbench"), fork(2, 60, 70, "hackbench")] {
            t.event(&e);
        }
        let l = t.lineage(70);
        assert_eq!((l.born, l.older, l.exec), (vec![70, 60], Some(50), false));
        t.event(&exec(3, 70, "sh"));
        assert!(t.lineage(70).exec);
        assert_eq!(t.lineage(50).older, Some(50));
        assert!(t.lineage(50).born.is_empty());
        // A pid reused: born again.
        assert_eq!((t.lineage(70).births, t.lineage(50).births), (1, 0));
        t.event(&fork(4, 60, 70, "hackbench"));
        assert_eq!(t.lineage(70).births, 2);
    }
}
