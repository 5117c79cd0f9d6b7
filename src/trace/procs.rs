//! Culprits as people name them: which command a task belongs to. From `sched_process_fork`
//! and `sched_process_exec` on every CPU, a table of the tasks born or exec'd during the run
//! gives each its group (the command it finally ran, or its creator's group for a thread or a
//! fork that never exec'd) and its exec chain (`sh ← taskset ← chrt ← timeout`: the names it
//! ran under, newest first, then its name at birth), and its lineage (its creators back to the
//! first one older than the trace), from which `groups` names what it belongs to.

use super::event::{Event, Kind, Name};

/// Tasks the table remembers at most; beyond, new ones are counted and left out.
const MAX_TASKS: usize = 200_000;
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
}

/// The command a task belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// The group: the command name after the last exec.
    pub group: String,
    /// Names the task ran under, newest first (the group first).
    pub chain: Vec<String>,
}

/// Every task born or exec'd while tracing.
#[derive(Debug, Default)]
pub struct ProcTable {
    tasks: super::FastMap<i32, Task>,
    /// Tasks not remembered (the table was full).
    pub left_out: u64,
}

impl ProcTable {
    fn task(&mut self, pid: i32) -> Option<&mut Task> {
        if !self.tasks.contains_key(&pid) && self.tasks.len() >= MAX_TASKS {
            self.left_out += 1;
            return None;
        }
        Some(self.tasks.entry(pid).or_default())
    }

    /// Takes a fork or exec event (others are ignored). Events may come in any order across
    /// CPUs; execs are kept in time order.
    pub fn event(&mut self, e: &Event) {
        match e.kind {
            Kind::Fork {
                parent_pid,
                child_pid,
                child_comm,
            } => {
                if let Some(t) = self.task(child_pid) {
                    t.birth = Some((parent_pid, child_comm));
                    t.births = t.births.saturating_add(1);
                }
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
    pub fn births(&self, pid: i32) -> u32 {
        self.tasks.get(&pid).map_or(0, |t| t.births)
    }

    /// The identity of `pid`, when the trace saw it born or exec.
    pub fn identity(&self, pid: i32) -> Option<Identity> {
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
pub struct Lineage {
    /// The task and the creators born while tracing, the task first.
    pub born: Vec<i32>,
    /// The first creator the trace did not see born (None: the walk was cut short).
    pub older: Option<i32>,
    /// Whether the task or one of `born` ran a program (exec) during the trace.
    pub exec: bool,
    /// Times the trace saw the task's pid born: what /proc said of the pid (or that it was
    /// gone) holds until it is born again.
    pub births: u32,
}

impl ProcTable {
    /// The lineage of `pid` (a task never seen is its own `older`).
    pub fn lineage(&self, pid: i32) -> Lineage {
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
