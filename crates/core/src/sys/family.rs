//! Processes as a family tree, so nothing latlab starts outlives it: a command's or a load's
//! descendants found from the parent ids in /proc, and the strays a subreaper adopts (tasks
//! whose parent died first, a double fork or `setsid` among them) ended and reaped.

use std::path::Path;
use std::time::{Duration, Instant};

/// One process as its `/proc/PID/stat` shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Proc {
    /// Process id.
    pub(crate) pid: i32,
    /// Parent's process id.
    pub(crate) ppid: i32,
    /// Process group.
    pub(crate) pgrp: i32,
    /// Session.
    pub(crate) sid: i32,
}

/// Parses one `/proc/PID/stat` line (`pid (comm) state ppid pgrp session ...`; the comm may
/// hold spaces and parentheses).
pub(crate) fn parse_stat(stat: &str) -> Option<Proc> {
    let (head, rest) = stat.rsplit_once(')')?;
    let pid = head.split_once(' ')?.0.trim().parse().ok()?;
    let mut f = rest
        .split_whitespace()
        .skip(1)
        .map(|v| v.parse::<i32>().ok());
    Some(Proc {
        pid,
        ppid: f.next()??,
        pgrp: f.next()??,
        sid: f.next()??,
    })
}

/// The one-letter state of a `/proc/PID/stat` line (R, S, D, T, t, Z...).
pub(crate) fn state_of(stat: &str) -> Option<char> {
    stat.rsplit_once(')')?
        .1
        .split_whitespace()
        .next()?
        .chars()
        .next()
}

/// Process `pid`'s one-letter state now (None: gone or unreadable): `R` runs or waits for a
/// CPU; `T`/`t` is stopped (SIGSTOP, a tracer) until someone continues it.
pub fn state(pid: i32) -> Option<char> {
    state_of(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// Every process under `proc_root` (/proc).
pub fn table(proc_root: &Path) -> Vec<Proc> {
    std::fs::read_dir(proc_root)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_str()
                .is_some_and(|n| n.parse::<i32>().is_ok())
        })
        .filter_map(|e| parse_stat(&std::fs::read_to_string(e.path().join("stat")).ok()?))
        .collect()
}

/// The processes of `table` descended from `root` (not `root` itself), parents first.
pub fn descendants(table: &[Proc], root: i32) -> Vec<i32> {
    let mut out: Vec<i32> = Vec::new();
    let mut i = 0;
    let mut frontier = root;
    loop {
        for p in table {
            if p.ppid == frontier && p.pid != root && !out.contains(&p.pid) {
                out.push(p.pid);
            }
        }
        let Some(&next) = out.get(i) else {
            return out;
        };
        frontier = next;
        i += 1;
    }
}

/// The children of `me` (a subreaper) that are strays of the command `root` it runs in its own
/// process group: in `me`'s group (the command's, before they were orphaned), or in a session
/// other than `me`'s (they called `setsid`). Loads and `shell:` actions lead groups of their
/// own in `me`'s session and are not taken, nor what `me` inherited (`inherited`, see
/// [`note_inherited`]) and its descendants. With the descendants of each.
pub fn adopted_strays(table: &[Proc], me: Proc, root: i32, inherited: &[i32]) -> Vec<i32> {
    let keep = trees(table, inherited);
    let mut out = Vec::new();
    for p in table {
        if p.ppid == me.pid
            && p.pid != root
            && !keep.contains(&p.pid)
            && (p.pgrp == me.pgrp || p.sid != me.sid)
        {
            out.push(p.pid);
            out.extend(descendants(table, p.pid));
        }
    }
    out
}

/// `roots` with all their descendants.
fn trees(table: &[Proc], roots: &[i32]) -> Vec<i32> {
    let mut out = roots.to_vec();
    for &r in roots {
        out.extend(descendants(table, r));
    }
    out
}

/// The children this process had before it started any: a wrapper's `sidecar & exec latlab`
/// leaves them to it. Never ended by [`end_children`], nor taken for a command's strays.
static INHERITED: std::sync::OnceLock<Vec<i32>> = std::sync::OnceLock::new();

/// Notes the children this process has now as inherited ones (once; later calls keep the
/// first note). Called before latlab starts any process of its own.
pub fn note_inherited() {
    INHERITED.get_or_init(|| {
        if !has_children() {
            return Vec::new();
        }
        // Only the main thread runs yet: its children are the process's.
        let me = super::process::getpid();
        match std::fs::read_to_string(format!("/proc/{me}/task/{me}/children")) {
            Ok(s) => s
                .split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect(),
            Err(_) => table(Path::new("/proc"))
                .iter()
                .filter(|p| p.ppid == me)
                .map(|p| p.pid)
                .collect(),
        }
    });
}

/// What [`note_inherited`] found (none when it was not called).
pub fn inherited() -> &'static [i32] {
    INHERITED.get().map_or(&[], Vec::as_slice)
}

/// This process as /proc shows it.
pub fn me(proc_root: &Path) -> Option<Proc> {
    parse_stat(&std::fs::read_to_string(proc_root.join("self/stat")).ok()?)
}

/// Sends `sig` to each of `pids`.
pub fn signal_all(pids: &[i32], sig: libc::c_int) {
    for &p in pids {
        super::process::signal(p, sig);
    }
}

/// Whether process `pid` is gone: reaped here when it is an ended child of this process, or
/// no longer there (a zombie of another parent still counts as there).
pub fn gone(pid: i32) -> bool {
    let mut status = 0;
    // SAFETY: waitpid on one positive pid with WNOHANG; ECHILD when it is not a child of
    // ours. kill with signal 0 only checks existence.
    unsafe {
        pid <= 0 || libc::waitpid(pid, &mut status, libc::WNOHANG) > 0 || libc::kill(pid, 0) != 0
    }
}

/// Whether this process has a child left (ended or not); reaps none.
pub(crate) fn has_children() -> bool {
    // SAFETY: siginfo_t is plain data (all-zero is valid); waitid with WNOWAIT|WNOHANG only
    // inspects, and ECHILD (-1) says there is no child.
    unsafe {
        let mut info: libc::siginfo_t = std::mem::zeroed();
        libc::waitid(
            libc::P_ALL,
            0,
            &mut info,
            libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
        ) == 0
    }
}

/// What [`end_children`] did: the processes it signalled, and those of them still there after
/// SIGKILL (a task in uninterruptible sleep, a frozen cgroup).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Ended {
    /// Every process signalled.
    pub signalled: Vec<i32>,
    /// Those still there when it gave up.
    pub left: Vec<i32>,
}

/// Ends every process this one still has as a child, with their descendants, except what it
/// inherited ([`note_inherited`]): SIGTERM, then SIGKILL after `grace` to what is left, each
/// reaped (a subreaper's strays: a daemon a command started, a load task that called
/// `setsid`). One syscall when there is no child.
pub fn end_children(grace: Duration) -> Ended {
    let mut done = Ended::default();
    if !has_children() {
        return done;
    }
    let t0 = Instant::now();
    let me = super::process::getpid();
    let mut live = Vec::new();
    // Rounds, about 10 ms apart (2 s at most after the grace): an ended process may leave
    // children of its own, adopted in turn.
    for _ in 0..(grace.as_millis() / 10 + 200) {
        reap_ended();
        let t = table(Path::new("/proc"));
        let keep = trees(&t, inherited());
        live = descendants(&t, me);
        live.retain(|p| !keep.contains(p));
        if live.is_empty() {
            break;
        }
        let kill = t0.elapsed() >= grace;
        for &p in &live {
            let new = !done.signalled.contains(&p);
            if kill || new {
                super::process::signal(p, if kill { libc::SIGKILL } else { libc::SIGTERM });
            }
            if new {
                done.signalled.push(p);
            }
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    reap_ended();
    done.left = live.into_iter().filter(|&p| !gone(p)).collect();
    done
}

/// Reaps every child that has ended; waits for none.
fn reap_ended() {
    loop {
        let mut status = 0;
        // SAFETY: waitpid(-1, WNOHANG) reaps any ended child; status is a valid int.
        if unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) } <= 0 {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(pid: i32, ppid: i32, pgrp: i32, sid: i32) -> Proc {
        Proc {
            pid,
            ppid,
            pgrp,
            sid,
        }
    }

    #[test]
    fn stat_lines_with_odd_names_parse() {
        assert_eq!(
            parse_stat("42 (a (b) c) S 7 42 1 34816 0"),
            Some(p(42, 7, 42, 1))
        );
        assert_eq!(parse_stat("42 (x) S 7"), None);
        assert_eq!(state_of("42 (a) T) x) t 7 42 1"), Some('t'));
        assert_eq!(state_of("42 (x)"), None);
        assert_eq!(parse_stat(""), None);
        let mine = me(Path::new("/proc")).unwrap();
        assert_eq!(mine.pid, std::process::id() as i32);
    }

    #[test]
    fn a_stopped_process_is_told_from_a_waiting_one() {
        let stopped = |pid| state(pid) == Some('T');
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let pid = child.id() as i32;
        let settles = |want: bool| {
            let t0 = Instant::now();
            while stopped(pid) != want && t0.elapsed() < Duration::from_secs(5) {
                std::thread::sleep(Duration::from_millis(5));
            }
            stopped(pid) == want
        };
        assert!(settles(false), "a sleeping process is not stopped");
        super::super::process::signal(pid, libc::SIGSTOP);
        assert!(settles(true), "SIGSTOP stops it");
        super::super::process::signal(pid, libc::SIGCONT);
        assert!(settles(false), "SIGCONT continues it");
        let _ = child.kill();
        let _ = child.wait();
        assert!(!stopped(pid), "a reaped process is not stopped");
    }

    #[test]
    fn descendants_and_strays_of_a_command() {
        // latlab 10 (group 10, session 1) runs command 20 in its group; 20 started 21, which
        // started 22. 30 was 20's child, orphaned (now 10's) in group 10; 40 called setsid
        // (session 40) and was orphaned; 50 is a load worker (its own group, session 1) with
        // child 51; 60 is another process's.
        let me = p(10, 1, 10, 1);
        let t = [
            me,
            p(20, 10, 10, 1),
            p(21, 20, 10, 1),
            p(22, 21, 10, 1),
            p(30, 10, 10, 1),
            p(31, 30, 10, 1),
            p(40, 10, 40, 40),
            p(50, 10, 50, 1),
            p(51, 50, 50, 1),
            p(60, 2, 60, 60),
        ];
        assert_eq!(descendants(&t, 20), vec![21, 22]);
        assert_eq!(descendants(&t, 10).len(), 8);
        assert!(descendants(&t, 99).is_empty());
        let mut s = adopted_strays(&t, me, 20, &[]);
        s.sort();
        assert_eq!(s, vec![30, 31, 40]);
        // 30 was there before latlab started anything (a wrapper's sidecar): kept, with 31.
        let mut s = adopted_strays(&t, me, 20, &[30]);
        s.sort();
        assert_eq!(s, vec![40]);
        assert_eq!(trees(&t, &[30, 50]), vec![30, 50, 31, 51]);
        // A cycle in a (corrupt) table ends.
        let c = [p(1, 2, 1, 1), p(2, 1, 1, 1)];
        assert_eq!(descendants(&c, 1), vec![2]);
    }
}
