//! The real-time company on the measured CPUs: the tasks of other processes allowed there, at
//! the start (a warning each, and whether another latlab measures there too) and again at the
//! end of the run (who came meanwhile). latlab's own helper threads and this process's
//! ancestors (a plan's runner) are not company.

use std::path::Path;

/// Real-time tasks as text keyed by thread id (what [`super::Watch`] compares at the end).
pub(crate) type Keyed = Vec<(i32, String)>;

/// The real-time tasks of other processes allowed on `cpus`, as text keyed by task; another
/// latlab's helper threads are not company (as at the start, [`company_at_start`]).
pub(super) fn company(proc: &Path, cpus: &[usize]) -> Keyed {
    let tasks =
        latlab_core::sys::procs::rt_tasks_on(proc, cpus, latlab_core::sys::process::getpid());
    let others: Vec<_> = tasks
        .into_iter()
        .filter(|t| !HELPERS.contains(&t.comm.as_str()))
        .collect();
    keyed(&others)
}

/// Tasks as text keyed by thread.
fn keyed(tasks: &[latlab_core::sys::procs::Task]) -> Keyed {
    tasks
        .iter()
        .map(|t| {
            (
                t.tid,
                format!(
                    "{} {} {} (pid {}, thread {} '{}', CPUs {})",
                    t.policy,
                    t.prio,
                    t.command,
                    t.pid,
                    t.tid,
                    t.comm,
                    list(&t.allowed)
                ),
            )
        })
        .collect()
}

fn list(cpus: &[usize]) -> String {
    cpus.iter()
        .map(usize::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

/// latlab's own threads that do not measure (some run at a real-time priority to stay in
/// control: the signal thread at FIFO 99), by name.
const HELPERS: &[&str] = &[
    "latlab-signals",
    "latlab-trace",
    "latlab-ground",
    "latlab-live",
    "latlab-watchdog",
    "latlab-samples",
    "latlab-http",
    "latlab-http-conn",
    "latlab-probe",
    "latlab-saving",
];

/// Whether thread name `comm` is a latlab measuring thread (`latlab-<series>`).
fn measuring(comm: &str) -> bool {
    comm.starts_with("latlab-") && !HELPERS.contains(&comm)
}

/// This process's ancestors (a plan runs its measurements as children: its threads are not
/// company).
fn ancestors(proc: &Path) -> Vec<i32> {
    let mut out = Vec::new();
    let mut pid = latlab_core::sys::process::getpid();
    for _ in 0..64 {
        let ppid = std::fs::read_to_string(proc.join(format!("{pid}/stat")))
            .ok()
            .and_then(|s| {
                s.get(s.rfind(')')? + 1..)?
                    .split_whitespace()
                    .nth(1)?
                    .parse::<i32>()
                    .ok()
            });
        match ppid {
            Some(p) if p > 1 => {
                out.push(p);
                pid = p;
            }
            _ => break,
        }
    }
    out
}

/// What [`company_at_start`] found.
pub(crate) struct StartCompany {
    /// A warning per real-time task of another process on the measured CPUs.
    pub(crate) warnings: Vec<String>,
    /// Whether one of them is another latlab's measuring thread.
    pub(crate) twin: bool,
    /// Every real-time task the scan saw (helpers and ancestors included), keyed as
    /// [`super::Watch`] keeps them: a watch started on the same CPUs right after can take it
    /// instead of scanning every task again ([`super::Watch::start`]).
    pub(crate) seen: Keyed,
}

/// Real-time company found on the measured CPUs at the start: a warning each, and whether any
/// of it is another latlab's measuring thread (two measurements on the same CPUs). latlab's
/// helper threads and this process's ancestors (a plan's runner) are not company.
pub(crate) fn company_at_start(cpus: &[usize]) -> StartCompany {
    let proc = Path::new("/proc");
    let family = ancestors(proc);
    let all = latlab_core::sys::procs::rt_tasks_on(proc, cpus, latlab_core::sys::process::getpid());
    let seen = keyed(&all);
    let tasks: Vec<_> = all
        .into_iter()
        .filter(|t| !family.contains(&t.pid) && !HELPERS.contains(&t.comm.as_str()))
        .collect();
    let latlab = tasks.iter().any(|t| measuring(&t.comm));
    let warnings = tasks
        .iter()
        .map(|t| {
            format!(
                "another process's real-time task may run on the measured CPUs: pid {} ({}), \
                 thread {} '{}', {} priority {}, allowed on CPUs {}{}",
                t.pid,
                t.command,
                t.tid,
                t.comm,
                t.policy,
                t.prio,
                list(&t.allowed),
                if measuring(&t.comm) {
                    ": another latlab measurement on the same CPUs, each disturbs the other"
                } else {
                    ""
                }
            )
        })
        .collect();
    StartCompany {
        warnings,
        twin: latlab,
        seen,
    }
}
