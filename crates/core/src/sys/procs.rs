//! Other processes as /proc shows them, for the warnings a shared machine needs: who holds
//! latlab's settings lock (command line, owner, start time), and which real-time tasks of other
//! processes may run on the CPUs a run measures. Reads only; every reader takes its /proc root,
//! so tests give it a fake tree.

use std::path::Path;

/// What EAGAIN from clone or fork means, said after the error.
pub const LIMIT_HINT: &str =
    " (the process limit, RLIMIT_NPROC or the cgroup's pids.max, is reached)";

/// One task of another process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Task {
    /// Process id.
    pub pid: i32,
    /// Thread id.
    pub tid: i32,
    /// The thread's name (`comm`).
    pub comm: String,
    /// The process's command line, words joined by spaces (its `comm` for a kernel thread).
    pub command: String,
    /// `SCHED_FIFO`, `SCHED_RR` or `SCHED_DEADLINE`, as `fifo`, `rr`, `deadline`.
    pub policy: &'static str,
    /// Real-time priority (0 for deadline).
    pub prio: u32,
    /// CPUs it may run on.
    pub allowed: Vec<usize>,
}

/// `/proc/PID/cmdline` with NULs as spaces (bounded), or None for a process that is gone.
pub fn command_line(proc_root: &Path, pid: i32) -> Option<String> {
    let raw = std::fs::read(proc_root.join(format!("{pid}/cmdline"))).ok()?;
    let mut s: String = String::from_utf8_lossy(&raw[..raw.len().min(512)])
        .split('\0')
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    if raw.len() > 512 {
        s.push_str(" ...");
    }
    // Names are shown in messages: no terminal escapes.
    Some(
        s.chars()
            .map(|c| if c.is_control() { '?' } else { c })
            .collect(),
    )
}

/// The fields after the command name of `/proc/.../stat` (field 3 on).
fn stat_fields(text: &str) -> Option<Vec<&str>> {
    Some(text[text.rfind(')')? + 1..].split_whitespace().collect())
}

/// Seconds since the epoch at which process `pid` started, from its start (field 22, clock
/// ticks since boot) and the boot time (`btime` of /proc/stat).
pub(crate) fn started_unix_s(proc_root: &Path, pid: i32) -> Option<u64> {
    let stat = std::fs::read_to_string(proc_root.join(format!("{pid}/stat"))).ok()?;
    let ticks: u64 = stat_fields(&stat)?.get(19)?.parse().ok()?;
    Some(boot_unix_s(proc_root)? + ticks / 100)
}

/// Seconds since the epoch at which the machine booted (`btime` of /proc/stat).
pub fn boot_unix_s(proc_root: &Path) -> Option<u64> {
    std::fs::read_to_string(proc_root.join("stat"))
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("btime "))?
        .trim()
        .parse()
        .ok()
}

/// The real uid of process `pid`.
pub(crate) fn uid(proc_root: &Path, pid: i32) -> Option<u32> {
    std::fs::read_to_string(proc_root.join(format!("{pid}/status")))
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// Process `pid` in words: `pid 4242 (latlab run plan.toml; uid 0; started 20:01:02 UTC)`,
/// or just `pid 4242` when /proc no longer shows it.
pub fn describe(proc_root: &Path, pid: i32) -> String {
    let Some(cmd) = command_line(proc_root, pid) else {
        return format!("pid {pid}");
    };
    let mut parts = vec![cmd];
    if let Some(u) = uid(proc_root, pid) {
        parts.push(format!("uid {u}"));
    }
    if let Some(t) = started_unix_s(proc_root, pid) {
        let secs = t % 86_400;
        parts.push(format!(
            "started {:02}:{:02}:{:02} UTC, {} s ago",
            secs / 3600,
            secs / 60 % 60,
            secs % 60,
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs())
                .saturating_sub(t)
        ));
    }
    format!("pid {pid} ({})", parts.join("; "))
}

/// A CPU list as the kernel writes it (`0-3,6`).
fn cpu_list(text: &str) -> Vec<usize> {
    let mut v = Vec::new();
    for part in text.trim().split(',').filter(|p| !p.is_empty()) {
        let mut ends = part.splitn(2, '-').map(|x| x.trim().parse::<usize>());
        match (ends.next(), ends.next()) {
            (Some(Ok(a)), None) => v.push(a),
            (Some(Ok(a)), Some(Ok(b))) if b >= a && b - a < 4096 => v.extend(a..=b),
            _ => {}
        }
    }
    v
}

/// The kernel's flag for a kernel thread in `/proc/.../stat` (field 9).
const PF_KTHREAD: u64 = 0x0020_0000;

/// A task's real-time policy and priority from its `stat` fields (field 3 on), None for any
/// other policy.
fn rt_policy(f: &[&str]) -> Option<(&'static str, u32)> {
    // Fields 40 (rt_priority) and 41 (policy), counted from 1; `f` starts at field 3.
    let prio = f.get(37)?.parse::<u32>().ok()?;
    let policy = match f.get(38)?.parse::<u32>().ok()? {
        1 => "fifo",
        2 => "rr",
        6 => "deadline",
        _ => return None,
    };
    Some((policy, prio))
}

/// Whether `proc_root` is this process's own /proc, whose pids `sched_getscheduler` takes as
/// they are (the same pid namespace) and whose `task` directories count their threads in their
/// link count (2 + threads, checked on this process's own): then [`may_be_real_time`] can ask
/// the kernel instead of reading every task's `stat`.
fn kernel_answers_for(proc_root: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    if proc_root != Path::new("/proc") {
        return false;
    }
    let same_namespace = same_pid_namespace();
    let counted = || std::fs::read_dir("/proc/self/task").map(|d| d.count() as u64);
    let links = std::fs::metadata("/proc/self/task").map(|m| m.nlink());
    // Threads may start between the two reads: read the count on both sides.
    same_namespace
        && matches!((counted(), links, counted()), (Ok(a), Ok(l), Ok(b)) if a == b && l == a + 2)
}

/// The process (thread group) that thread `tid` belongs to, from `<proc_root>/<tid>/status`;
/// None when it is gone. On this process's own /proc a thread-group leader (most tasks) is
/// told by the kernel instead: `pidfd_open` accepts only a leader's id, one system call where
/// `status` makes the kernel format some fifty lines.
pub fn tgid_of(proc_root: &Path, tid: i32) -> Option<i32> {
    if tid > 0 && own_proc(proc_root) {
        // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, tid, 0) };
        if fd >= 0 {
            // SAFETY: the descriptor was just opened here and is closed once.
            unsafe { libc::close(fd as i32) };
            return Some(tid);
        }
        if std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH) {
            return None;
        }
        // EINVAL: a thread that does not lead its group (or no pidfd_open): read status.
    }
    status_field(proc_root, tid, "Tgid:")
}

/// A numeric field (`key` with its colon, e.g. `PPid:`) of `<proc_root>/<pid>/status`.
pub fn status_field(proc_root: &Path, pid: i32, key: &str) -> Option<i32> {
    std::fs::read_to_string(proc_root.join(format!("{pid}/status")))
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix(key))?
        .trim()
        .parse()
        .ok()
}

/// Whether `proc_root` is `/proc` of this process's own pid namespace (its pids are the ones
/// system calls take), worked out once per process.
fn own_proc(proc_root: &Path) -> bool {
    static OWN: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    proc_root == Path::new("/proc") && *OWN.get_or_init(same_pid_namespace)
}

/// Whether `/proc/self` names this process by the pid `getpid` gives.
fn same_pid_namespace() -> bool {
    std::fs::read_link("/proc/self")
        .ok()
        .and_then(|l| l.to_str()?.parse::<i32>().ok())
        == Some(crate::sys::process::getpid())
}

/// Whether any thread of process `pid` may run under a real-time policy, asked of the kernel
/// (`sched_getscheduler` per thread, and a process's thread count from its `task` link count)
/// rather than read from `stat`: a `stat` read makes the kernel format some fifty fields, which
/// at the start and end of every measurement, for every process, was most of a short run's
/// fixed cost. A thread that cannot be asked for another reason than being gone counts as
/// maybe (its `stat` is read).
fn may_be_real_time(proc_root: &Path, pid: i32) -> bool {
    use std::os::unix::fs::MetadataExt;
    let task = proc_root.join(format!("{pid}/task"));
    let maybe = |tid: i32| {
        // SAFETY: sched_getscheduler only reads the policy of the task named.
        let p = unsafe { libc::sched_getscheduler(tid) };
        if p < 0 {
            return std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH);
        }
        matches!(
            p & !libc::SCHED_RESET_ON_FORK,
            libc::SCHED_FIFO | libc::SCHED_RR | SCHED_DEADLINE
        )
    };
    match std::fs::metadata(&task).map(|m| m.nlink()) {
        Ok(3) => maybe(pid),
        Ok(_) => std::fs::read_dir(&task).map_or(true, |d| {
            d.flatten().any(|t| {
                t.file_name()
                    .to_str()
                    .and_then(|n| n.parse::<i32>().ok())
                    .is_some_and(maybe)
            })
        }),
        // Gone since it was listed.
        Err(_) => false,
    }
}

/// `SCHED_DEADLINE` (not in every libc crate's list).
const SCHED_DEADLINE: i32 = 6;

/// Every real-time task (FIFO, RR, deadline) of processes other than `except` (and not kernel
/// threads: those are the kernel's own, per CPU by design), whose allowed CPUs meet `cpus`.
///
/// Cheap on a machine of ordinary tasks (it runs at the start and end of every measurement):
/// on this process's own /proc the kernel is asked each thread's policy ([`may_be_real_time`])
/// and only a process with a real-time thread is read further; under another root (tests' fake
/// trees) one `stat` read per process decides most of them (a kernel thread by its flag, a
/// process of one thread by its own policy). Only a real-time task's command line and allowed
/// CPUs are read.
pub fn rt_tasks_on(proc_root: &Path, cpus: &[usize], except: i32) -> Vec<Task> {
    let mut out = Vec::new();
    let Ok(dir) = std::fs::read_dir(proc_root) else {
        return out;
    };
    let ask_kernel = kernel_answers_for(proc_root);
    for e in dir.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
            continue;
        };
        if pid == except || (ask_kernel && !may_be_real_time(proc_root, pid)) {
            continue;
        }
        let Ok(stat) = std::fs::read_to_string(proc_root.join(format!("{pid}/stat"))) else {
            continue;
        };
        let Some(f) = stat_fields(&stat) else {
            continue;
        };
        // Field 9: flags; field 20: threads; field 3: state (a zombie runs nothing).
        let flags = f.get(6).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
        if flags & PF_KTHREAD != 0 || f.first() == Some(&"Z") {
            continue;
        }
        let threads = f.get(17).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
        let mut found: Vec<(i32, String)> = Vec::new();
        if threads == 1 {
            if rt_policy(&f).is_some() {
                found.push((pid, stat.clone()));
            }
        } else if let Ok(tasks) = std::fs::read_dir(proc_root.join(format!("{pid}/task"))) {
            for t in tasks.flatten() {
                let Some(tid) = t.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
                    continue;
                };
                let path = proc_root.join(format!("{pid}/task/{tid}/stat"));
                let Ok(ts) = std::fs::read_to_string(path) else {
                    continue;
                };
                if stat_fields(&ts).is_some_and(|tf| rt_policy(&tf).is_some()) {
                    found.push((tid, ts));
                }
            }
        }
        if found.is_empty() {
            continue;
        }
        // A kernel thread has an empty command line (where its flag did not say so).
        let Some(command) = command_line(proc_root, pid).filter(|c| !c.is_empty()) else {
            continue;
        };
        for (tid, stat) in found {
            let Some((policy, prio)) = stat_fields(&stat).and_then(|f| rt_policy(&f)) else {
                continue;
            };
            let base = if tid == pid && threads == 1 {
                proc_root.join(pid.to_string())
            } else {
                proc_root.join(format!("{pid}/task/{tid}"))
            };
            let status = std::fs::read_to_string(base.join("status")).unwrap_or_default();
            let allowed = status
                .lines()
                .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
                .map(cpu_list)
                .unwrap_or_default();
            if !allowed.iter().any(|c| cpus.contains(c)) {
                continue;
            }
            let comm = stat
                .split_once('(')
                .and_then(|(_, r)| r.rsplit_once(')'))
                .map(|(c, _)| {
                    c.chars()
                        .map(|c| if c.is_control() { '?' } else { c })
                        .collect()
                })
                .unwrap_or_default();
            out.push(Task {
                pid,
                tid,
                comm,
                command: command.clone(),
                policy,
                prio,
                allowed,
            });
        }
    }
    out.sort_by_key(|t| (t.pid, t.tid));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kernel_is_asked_on_the_real_proc_and_finds_a_real_time_process_and_thread() {
        assert!(kernel_answers_for(Path::new("/proc")));
        // A thread group's leader (asked of the kernel), one of its threads (read from
        // status), something gone, and a fake tree's status.
        let me = crate::sys::process::getpid();
        assert_eq!(tgid_of(Path::new("/proc"), me), Some(me));
        let (tx, rx) = std::sync::mpsc::channel();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let t = std::thread::spawn(move || {
            tx.send(crate::sys::sched::gettid()).unwrap();
            let _ = done_rx.recv();
        });
        let tid = rx.recv().unwrap();
        assert_ne!(tid, me);
        assert_eq!(tgid_of(Path::new("/proc"), tid), Some(me));
        drop(done_tx);
        t.join().unwrap();
        assert_eq!(tgid_of(Path::new("/proc"), i32::MAX), None);
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("42")).unwrap();
        std::fs::write(
            d.path().join("42/status"),
            "Name:\tx\nTgid:\t40\nPid:\t42\n",
        )
        .unwrap();
        assert_eq!(tgid_of(d.path(), 42), Some(40));
        assert_eq!(tgid_of(d.path(), 43), None);
        assert!(!kernel_answers_for(Path::new("/tmp")));
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let pid = child.id() as i32;
        std::thread::sleep(std::time::Duration::from_millis(20));
        let before = may_be_real_time(Path::new("/proc"), pid);
        let p = libc::sched_param { sched_priority: 1 };
        // SAFETY: sets the policy of the child started above.
        let set = unsafe { libc::sched_setscheduler(pid, libc::SCHED_FIFO, &p) };
        let after = may_be_real_time(Path::new("/proc"), pid);
        let found = rt_tasks_on(Path::new("/proc"), &[0], -1);
        let _ = child.kill();
        let _ = child.wait();
        assert!(!before, "a plain sleep is not real-time");
        if set != 0 {
            // Not root: the kernel's answer for a plain task is all this can check.
            assert!(std::env::var_os("LATLAB_NO_SKIP").is_none(), "needs root");
            return;
        }
        assert!(after, "a FIFO process is seen by the kernel's answer");
        assert!(found
            .iter()
            .any(|t| t.pid == pid && t.policy == "fifo" && t.prio == 1));
        assert!(
            !may_be_real_time(Path::new("/proc"), i32::MAX),
            "a pid that does not exist"
        );
        // A multi-threaded process (this one) with one FIFO thread among ordinary ones.
        let (tx, rx) = std::sync::mpsc::channel();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let t = std::thread::spawn(move || {
            // SAFETY: sets this thread's own policy.
            let r = unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &p) };
            tx.send(r).unwrap();
            let _ = done_rx.recv();
        });
        assert_eq!(rx.recv().unwrap(), 0);
        let seen = may_be_real_time(Path::new("/proc"), crate::sys::process::getpid());
        done_tx.send(()).unwrap();
        t.join().unwrap();
        assert!(seen, "one FIFO thread of many is found");
    }

    fn stat(comm: &str, prio: u32, policy: u32) -> String {
        // pid (comm) state ppid ... : 37 fields after the name, then rt_priority and policy.
        let mut f: Vec<String> = (3..=52).map(|_| "0".to_string()).collect();
        f[0] = "S".into();
        f[19] = "500".into();
        f[37] = prio.to_string();
        f[38] = policy.to_string();
        format!("42 ({comm}) {}", f.join(" "))
    }

    #[test]
    fn real_time_tasks_on_the_measured_cpus_are_found_with_their_process() {
        let d = tempfile::tempdir().unwrap();
        let r = d.path();
        std::fs::write(r.join("stat"), "cpu 1 2 3\nbtime 1000\n").unwrap();
        let add = |pid: i32, tid: i32, cmd: &[u8], comm: &str, prio, pol, cpus: &str| {
            let t = r.join(format!("{pid}/task/{tid}"));
            std::fs::create_dir_all(&t).unwrap();
            std::fs::write(r.join(format!("{pid}/cmdline")), cmd).unwrap();
            std::fs::write(r.join(format!("{pid}/stat")), stat(comm, prio, pol)).unwrap();
            std::fs::write(t.join("stat"), stat(comm, prio, pol)).unwrap();
            std::fs::write(
                t.join("status"),
                format!("Name:\t{comm}\nCpus_allowed_list:\t{cpus}\n"),
            )
            .unwrap();
        };
        add(10, 10, b"hog\0--cpu\x001\0", "hog (1)", 99, 1, "1");
        add(11, 11, b"other\0", "other", 0, 0, "0-1");
        add(12, 12, b"", "ksoftirqd/1", 1, 1, "1");
        add(13, 14, b"latlab\0cyclic\0", "latlab-cpu0", 80, 1, "0");
        add(15, 15, b"rr\0", "rr", 5, 2, "0-3");
        let got = rt_tasks_on(r, &[1], 99);
        let seen: Vec<(i32, &str, u32, &str)> = got
            .iter()
            .map(|t| (t.pid, t.policy, t.prio, t.comm.as_str()))
            .collect();
        assert_eq!(seen, vec![(10, "fifo", 99, "hog (1)"), (15, "rr", 5, "rr")]);
        assert_eq!(got[0].command, "hog --cpu 1");
        assert!(rt_tasks_on(r, &[1], 10).iter().all(|t| t.pid != 10));
        assert_eq!(started_unix_s(r, 10), Some(1005));
        assert!(describe(r, 10).starts_with("pid 10 (hog --cpu 1; "));
        assert_eq!(describe(r, 77), "pid 77");
        assert_eq!(cpu_list("0-2,5"), vec![0, 1, 2, 5]);
    }

    #[test]
    fn a_single_threaded_process_is_read_from_its_own_stat_and_kernel_threads_by_their_flag() {
        let d = tempfile::tempdir().unwrap();
        let r = d.path();
        // stat with flags (field 9) and thread count (field 20) set; no task/ directory.
        let with = |comm: &str, pol: u32, flags: u64, threads: u32| {
            let mut f: Vec<String> = stat(comm, 50, pol)
                .split(") ")
                .nth(1)
                .unwrap()
                .split(' ')
                .map(String::from)
                .collect();
            f[6] = flags.to_string();
            f[17] = threads.to_string();
            format!("1 ({comm}) {}", f.join(" "))
        };
        let add = |pid: i32, stat: String, cmd: &[u8]| {
            std::fs::create_dir_all(r.join(pid.to_string())).unwrap();
            std::fs::write(r.join(format!("{pid}/stat")), stat).unwrap();
            std::fs::write(r.join(format!("{pid}/cmdline")), cmd).unwrap();
            std::fs::write(r.join(format!("{pid}/status")), "Cpus_allowed_list:\t0-1\n").unwrap();
        };
        add(20, with("solo", 1, 0, 1), b"solo\0");
        add(21, with("kworker", 1, PF_KTHREAD, 1), b"not-empty\0");
        add(22, with("plain", 0, 0, 1), b"plain\0");
        let got = rt_tasks_on(r, &[0], 1);
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!((got[0].pid, got[0].tid, got[0].policy), (20, 20, "fifo"));
        assert_eq!(
            (got[0].command.as_str(), got[0].allowed.clone()),
            ("solo", vec![0, 1])
        );
    }
}
