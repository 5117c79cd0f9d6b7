//! Which tasks `latlab sched` measures: processes, threads, a command name, a cgroup, every
//! task, or a command it runs with its descendants; decided per task from what the trace shows
//! and /proc (its process and cgroup), so tasks that start later are measured too.

use super::track::{Choice, Chooser};
use latlab_core::error::{Error, Result};
use latlab_trace::event::Name;
use serde::Serialize;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

/// What to measure.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", content = "value", rename_all = "lowercase")]
pub(crate) enum Target {
    /// Every thread of these processes.
    Pid(Vec<i32>),
    /// These threads.
    Tid(Vec<i32>),
    /// Tasks with this name (as the kernel keeps it: 15 bytes), whenever they start.
    Comm(String),
    /// Tasks in this cgroup (v2 path, from the hierarchy's root) or below it.
    Cgroup(String),
    /// Every task (latlab's own threads excepted).
    All,
    /// A command latlab runs, with every thread and child it makes.
    Command(Vec<String>),
}

impl Target {
    /// As a person would write it on the command line.
    pub(crate) fn describe(&self) -> String {
        let list = |v: &[i32]| {
            v.iter()
                .map(|p| p.to_string())
                .collect::<Vec<_>>()
                .join(",")
        };
        match self {
            Target::Pid(p) => format!("--pid {}", list(p)),
            Target::Tid(t) => format!("--tid {}", list(t)),
            Target::Comm(c) => format!("--comm {c}"),
            Target::Cgroup(g) => format!("--cgroup {g}"),
            Target::All => "--all".into(),
            Target::Command(c) => format!("-- {}", c.join(" ")),
        }
    }
}

/// Parses `flag`'s list of ids and checks each exists under `proc` (exit 2 naming it).
pub(crate) fn ids(flag: &str, v: &str, proc: &Path) -> Result<Vec<i32>> {
    let mut out = Vec::new();
    for part in v.split(',').map(str::trim) {
        let id: i32 = part
            .parse()
            .ok()
            .filter(|&n: &i32| n > 0)
            .ok_or_else(|| Error::flag(flag, v, format!("'{part}' is not a task id")))?;
        if !proc.join(id.to_string()).join("status").exists() {
            return Err(Error::flag(flag, v, format!("no task {id} (not in /proc)")));
        }
        if !out.contains(&id) {
            out.push(id);
        }
    }
    Ok(out)
}

/// The cgroup v2 path `v` names (`/sys/fs/cgroup/x/y`, `/x/y` or `x/y`), checked to exist
/// under `root` (the cgroup2 mount).
pub(crate) fn cgroup(v: &str, root: &Path) -> Result<String> {
    let rel = v
        .strip_prefix(root.to_str().unwrap_or("/sys/fs/cgroup"))
        .unwrap_or(v)
        .trim_matches('/');
    if rel.split('/').any(|c| c == "..") {
        return Err(Error::flag("--cgroup", v, "'..' is not allowed"));
    }
    if rel.is_empty() {
        // An empty value (or the root itself) would be every task on the machine.
        return Err(Error::Usage(format!(
            "--cgroup '{v}': names the root cgroup, every task of the machine: give a cgroup below it, or --all"
        )));
    }
    if !root.join(rel).join("cgroup.procs").exists() {
        return Err(Error::flag(
            "--cgroup",
            v,
            format!(
                "no such cgroup ({} has no cgroup.procs)",
                root.join(rel).display()
            ),
        ));
    }
    Ok(format!("/{rel}"))
}

/// The [`Chooser`] for a [`Target`], looking tasks up in /proc.
pub(crate) struct Matcher {
    target: Target,
    proc: PathBuf,
    /// latlab's own process: never measured.
    own: i32,
    /// The command's tasks (its pid, then every task forked from one of them).
    family: HashSet<i32>,
    /// Who forked whom, for tasks gone before /proc could be read.
    parents: HashMap<i32, i32>,
    /// Process of each task looked up.
    tgids: HashMap<i32, i32>,
}

impl Matcher {
    /// A matcher for `target`, reading tasks under `proc`.
    pub(crate) fn new(target: Target, proc: &Path) -> Matcher {
        Matcher {
            target,
            proc: proc.to_path_buf(),
            own: std::process::id() as i32,
            family: HashSet::new(),
            parents: HashMap::new(),
            tgids: HashMap::new(),
        }
    }

    /// The command's first task (its pid).
    pub(crate) fn adopt(&mut self, pid: i32) {
        self.family.insert(pid);
        self.tgids.insert(pid, pid);
    }

    /// `tid` is (or was) a thread of process `tgid`, as the kernel said.
    pub(crate) fn know(&mut self, tid: i32, tgid: i32) {
        self.tgids.insert(tid, tgid);
    }

    /// The process `tid` belongs to: from /proc, else (gone already) its parent's when it was
    /// forked during the run (a short-lived thread, most likely), else itself.
    /// The process `tid` belongs to: from /proc while it lives, else up the parents the
    /// trace saw until one is known. A walk, not recursion: a chain of forks may be as long
    /// as the run made it, and reused pids may close it into a loop (which ends it).
    fn tgid(&mut self, tid: i32) -> i32 {
        let mut walked = Vec::new();
        let mut t = tid;
        let g = loop {
            if let Some(&g) = self.tgids.get(&t) {
                break g;
            }
            if let Some(g) = latlab_core::sys::procs::tgid_of(&self.proc, t) {
                break g;
            }
            walked.push(t);
            match self.parents.get(&t).copied() {
                Some(p) if !walked.contains(&p) && walked.len() < MAX_WALK => t = p,
                _ => break t,
            }
        };
        for w in walked {
            self.tgids.insert(w, g);
        }
        self.tgids.insert(tid, g);
        g
    }

    fn in_cgroup(&self, tid: i32, want: &str) -> bool {
        let Ok(s) = std::fs::read_to_string(self.proc.join(tid.to_string()).join("cgroup")) else {
            return false;
        };
        s.lines()
            .filter_map(|l| l.strip_prefix("0::"))
            .any(|p| p == want || want == "/" || p.starts_with(&format!("{want}/")))
    }
}

/// How many parents [`Matcher::tgid`] walks up at most.
const MAX_WALK: usize = 4096;

impl Chooser for Matcher {
    fn wants(&mut self, tid: i32, comm: &Name) -> Option<Choice> {
        if tid <= 0 {
            return None;
        }
        let tgid = self.tgid(tid);
        if tgid == self.own {
            return None;
        }
        let yes = match &self.target {
            Target::Pid(p) => p.contains(&tgid),
            Target::Tid(t) => t.contains(&tid),
            Target::Comm(c) => comm.as_str() == c.as_str(),
            Target::Cgroup(g) => self.in_cgroup(tid, g),
            Target::All => true,
            Target::Command(_) => self.family.contains(&tid),
        };
        yes.then_some(Choice { tgid })
    }

    fn forked(&mut self, parent: i32, child: i32) {
        self.parents.insert(child, parent);
        self.tgids.remove(&child);
        if self.family.contains(&parent) {
            self.family.insert(child);
        }
    }
}

/// How many bytes of a task's name the kernel keeps (TASK_COMM_LEN less the NUL).
pub(crate) const COMM_LEN: usize = 15;

/// The name a task gets from `--comm NAME`: the kernel keeps 15 bytes.
pub(crate) fn comm_name(v: &str) -> Result<String> {
    if v.is_empty() {
        return Err(Error::flag("--comm", "''", "give a task name"));
    }
    Ok(Name::new(&v.as_bytes()[..v.len().min(COMM_LEN)])
        .as_str()
        .into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_and_cgroups_are_checked() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("42")).unwrap();
        std::fs::write(d.path().join("42/status"), "Tgid:\t40\n").unwrap();
        assert_eq!(ids("--pid", "42", d.path()).unwrap(), vec![42]);
        let e = ids("--pid", "42,43", d.path()).unwrap_err().to_string();
        assert!(e.contains("--pid 42,43") && e.contains("no task 43"), "{e}");
        let e = ids("--tid", "x", d.path()).unwrap_err().to_string();
        assert!(e.contains("'x' is not a task id"), "{e}");
        std::fs::create_dir_all(d.path().join("cg/a/b")).unwrap();
        std::fs::write(d.path().join("cg/a/b/cgroup.procs"), "").unwrap();
        let root = d.path().join("cg");
        assert_eq!(cgroup("/a/b", &root).unwrap(), "/a/b");
        let full = format!("{}/a/b", root.display());
        assert_eq!(cgroup(&full, &root).unwrap(), "/a/b");
        assert!(cgroup("/a/c", &root).is_err());
        assert!(cgroup("/a/../a/b", &root).is_err());
        assert_eq!(
            comm_name("a-very-long-command-name").unwrap(),
            "a-very-long-com"
        );
    }

    #[test]
    fn processes_threads_and_families_are_matched() {
        let d = tempfile::tempdir().unwrap();
        for (tid, tgid, cg) in [(40, 40, "/a"), (41, 40, "/a/b"), (50, 50, "/c")] {
            let p = d.path().join(tid.to_string());
            std::fs::create_dir_all(&p).unwrap();
            std::fs::write(p.join("status"), format!("Name:\tx\nTgid:\t{tgid}\n")).unwrap();
            std::fs::write(p.join("cgroup"), format!("0::{cg}\n")).unwrap();
        }
        let x = Name::new(b"x");
        let mut m = Matcher::new(Target::Pid(vec![40]), d.path());
        assert!(m.wants(41, &x).is_some_and(|c| c.tgid == 40));
        assert!(m.wants(50, &x).is_none());
        // A thread gone before /proc was read counts in its parent's process.
        m.forked(41, 60);
        assert_eq!(m.wants(60, &x), Some(Choice { tgid: 40 }));
        let mut m = Matcher::new(Target::Cgroup("/a".into()), d.path());
        assert!(m.wants(40, &x).is_some() && m.wants(41, &x).is_some());
        assert!(m.wants(50, &x).is_none());
        let mut m = Matcher::new(Target::Command(vec!["x".into()]), d.path());
        m.adopt(50);
        m.forked(50, 70);
        m.forked(70, 71);
        assert!(m.wants(71, &x).is_some() && m.wants(50, &x).is_some());
        assert!(m.wants(40, &x).is_none());
        let mut m = Matcher::new(Target::Comm("x".into()), d.path());
        assert!(m.wants(50, &x).is_some() && m.wants(50, &Name::new(b"y")).is_none());
    }

    #[test]
    fn a_long_chain_of_gone_tasks_and_a_loop_of_reused_pids_end() {
        let d = tempfile::tempdir().unwrap();
        let mut m = Matcher::new(Target::All, d.path());
        // A million generations of forks, none in /proc any more: no stack overflow.
        for t in 1..1_000_000 {
            m.forked(t, t + 1);
        }
        assert!(m.wants(1_000_000, &Name::new(b"x")).is_some());
        // Pids reused into a loop (200's parent 100, 100's parent 200).
        m.forked(100, 200);
        m.forked(200, 100);
        assert!(m.wants(100, &Name::new(b"x")).is_some());
    }
}
