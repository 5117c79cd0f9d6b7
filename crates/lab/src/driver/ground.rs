//! The ground a run stands on, watched: what its result depends on is read when it starts and
//! again when it ends — the clocksource, RT throttling, each measured CPU's frequency governor
//! and limits, the isolated and nohz_full CPUs, every setting a plan put in force (handed down
//! in `LATLAB_WATCH`), and the real-time tasks of other processes allowed on the measured
//! CPUs. The cheap ones (the clocksource, RT throttling, the plan's settings) are also polled
//! while it runs, from a thread off the measured CPUs, so a change says when it happened. Each
//! change becomes a [`GroundChange`] in the result: what, from, to, and when.

mod company;
mod poll;

pub(crate) use company::{company_at_start, Keyed};

use company::company;
use latlab_core::result::GroundChange;
use poll::poll;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// The environment variable a plan sets for its runs: the settings it put in force, one per
/// line (its path, then a tab and what it read once the plan set it), watched like the
/// clocksource.
pub(crate) const WATCH_ENV: &str = "LATLAB_WATCH";

use latlab_core::result::{NOT_THE_LEVEL, STOPPED};

/// A [`WATCH_ENV`] line for the setting at `path`, as it reads now.
pub(crate) fn watch_line(path: &Path) -> String {
    match read(path) {
        // (A value of several lines or with a tab is watched, not compared.)
        Some(v) if !v.contains(['\n', '\t']) => format!("{}\t{v}", path.display()),
        _ => path.display().to_string(),
    }
}

/// One setting read from a file, and whether it is cheap enough to poll.
#[derive(Debug, Clone)]
struct Item {
    what: String,
    path: PathBuf,
    poll: bool,
}

/// Whether `c` is a change of one of the files the run changed itself (its held settings).
fn own(c: &GroundChange, items: &[Item], held: &[PathBuf]) -> bool {
    items.iter().any(|i| {
        i.what == c.what
            && held
                .iter()
                .any(|h| h == &i.path || std::fs::canonicalize(&i.path).is_ok_and(|p| &p == h))
    })
}

fn read(path: &Path) -> Option<String> {
    use std::io::Read;
    let f = std::fs::File::open(path).ok()?;
    let mut s = String::new();
    f.take(4096).read_to_string(&mut s).ok()?;
    Some(s.trim().to_string())
}

/// What is watched for a run on `cpus` under roots `sys` and `proc`.
fn items(sys: &Path, proc: &Path, cpus: &[usize], plan: &[PathBuf]) -> Vec<Item> {
    let mut v = vec![
        Item {
            what: "clocksource".into(),
            path: sys.join("devices/system/clocksource/clocksource0/current_clocksource"),
            poll: true,
        },
        // Read at the start and the end only: on 6.x kernels every read of these two sysctls
        // (not only a write) rebuilds the scheduler domains' deadline accounting under its
        // locks, which polled five times a second was most of the watch's CPU and work the
        // measured CPUs could feel. A change is still seen, at the end, without its time.
        Item {
            what: "sched_rt_runtime_us".into(),
            path: proc.join("sys/kernel/sched_rt_runtime_us"),
            poll: false,
        },
        Item {
            what: "sched_rt_period_us".into(),
            path: proc.join("sys/kernel/sched_rt_period_us"),
            poll: false,
        },
        // A CPU taken offline breaks its threads' pinning without a word (the kernel moves
        // them): the online set is one cheap file, polled.
        Item {
            what: "online CPUs".into(),
            path: sys.join("devices/system/cpu/online"),
            poll: true,
        },
        Item {
            what: "isolated CPUs".into(),
            path: sys.join("devices/system/cpu/isolated"),
            poll: false,
        },
        Item {
            what: "nohz_full CPUs".into(),
            path: sys.join("devices/system/cpu/nohz_full"),
            poll: false,
        },
    ];
    for c in cpus {
        for f in ["scaling_governor", "scaling_min_freq", "scaling_max_freq"] {
            v.push(Item {
                what: format!("CPU {c} {f}"),
                path: sys.join(format!("devices/system/cpu/cpu{c}/cpufreq/{f}")),
                poll: false,
            });
        }
    }
    for p in plan {
        v.push(Item {
            what: p.display().to_string(),
            path: p.clone(),
            poll: true,
        });
    }
    v
}

/// The settings a plan put in force, from [`WATCH_ENV`], each with what it read when the plan
/// set it (when known).
fn plan_settings() -> Vec<(PathBuf, Option<String>)> {
    std::env::var(WATCH_ENV)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.starts_with('/'))
        .map(|l| match l.split_once('\t') {
            Some((p, v)) => (PathBuf::from(p.trim()), Some(v.to_string())),
            None => (PathBuf::from(l.trim()), None),
        })
        .collect()
}

/// What the polling has seen so far, for results stored while the run goes on (a monitor's
/// snapshot, a qualification's checkpoint): each carries the changes of its own interval.
#[derive(Clone)]
pub(crate) struct GroundLog {
    seen: Arc<std::sync::Mutex<Vec<GroundChange>>>,
    items: Arc<Vec<Item>>,
    t0: Instant,
}

impl GroundLog {
    /// Seconds since the watch started (the clock of [`GroundChange::at_s`]).
    pub(crate) fn seconds(&self) -> f64 {
        self.t0.elapsed().as_secs_f64()
    }

    /// The changes polling saw from `from` (inclusive) to `to` seconds, but those of the
    /// files in `held` (the settings the run changed itself).
    pub(crate) fn between(&self, from: f64, to: f64, held: &[PathBuf]) -> Vec<GroundChange> {
        let seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        seen.iter()
            .filter(|c| c.at_s.is_some_and(|t| t >= from && t < to))
            .filter(|c| !own(c, &self.items, held))
            .cloned()
            .collect()
    }
}

/// A running watch; [`Watch::finish`] ends it and returns what changed.
pub(crate) struct Watch {
    log: GroundLog,
    stop: Arc<AtomicBool>,
    /// SIGCONT's handler (the flag it sets is the poller's).
    continued_id: Option<signal_hook::SigId>,
    /// The plan's settings found off their level at the start.
    not_level: Vec<GroundChange>,
    thread: Option<std::thread::JoinHandle<Vec<GroundChange>>>,
    items: Vec<Item>,
    first: Vec<Option<String>>,
    company: Keyed,
    cpus: Vec<usize>,
    proc: PathBuf,
}

impl Watch {
    /// Reads everything for a run on `cpus` and starts polling the cheap settings on
    /// `housekeeping` CPUs (where there are any). `company`: the real-time tasks on `cpus`
    /// when a scan just found them ([`company::StartCompany::seen`]); None scans now.
    pub(crate) fn start(
        cpus: &[usize],
        housekeeping: Option<Vec<usize>>,
        company: Option<Keyed>,
    ) -> Watch {
        // The kernel log tells a switch the polling would miss (undone within one poll).
        let kmsg = super::kmsg::Kmsg::open();
        Watch::begin(
            (Path::new("/sys"), Path::new("/proc")),
            cpus,
            housekeeping,
            company,
            kmsg,
        )
    }

    /// [`Watch::start`] under chosen roots (tests), without the kernel log.
    #[cfg(test)]
    pub(crate) fn start_in(
        sys: &Path,
        proc: &Path,
        cpus: &[usize],
        hk: Option<Vec<usize>>,
        known: Option<Keyed>,
    ) -> Watch {
        Watch::begin((sys, proc), cpus, hk, known, None)
    }

    fn begin(
        (sys, proc): (&Path, &Path),
        cpus: &[usize],
        hk: Option<Vec<usize>>,
        known: Option<Keyed>,
        kmsg: Option<super::kmsg::Kmsg>,
    ) -> Watch {
        let plan = plan_settings();
        let paths: Vec<PathBuf> = plan.iter().map(|p| p.0.clone()).collect();
        let items = items(sys, proc, cpus, &paths);
        let first: Vec<Option<String>> = items.iter().map(|i| read(&i.path)).collect();
        // A plan's setting that no longer holds its level as the run starts.
        let not_level: Vec<GroundChange> = plan
            .iter()
            .filter_map(|(p, level)| {
                let level = level.as_ref()?;
                let i = items.iter().position(|i| &i.path == p)?;
                let now = first[i].clone().unwrap_or_else(|| "(unreadable)".into());
                (&now != level).then(|| GroundChange {
                    what: format!("{}{NOT_THE_LEVEL}", p.display()),
                    from: level.clone(),
                    to: now,
                    at_s: Some(0.0),
                })
            })
            .collect();
        let stop = Arc::new(AtomicBool::new(false));
        let t0 = Instant::now();
        // The same instant on the kernel log's clock (seconds since boot).
        let boot_s = latlab_core::sys::clock::now_ns(libc::CLOCK_MONOTONIC) as f64 / 1e9;
        let polled: Vec<(Item, Option<String>)> = items
            .iter()
            .zip(&first)
            .filter(|(i, v)| i.poll && v.is_some())
            .map(|(i, v)| (i.clone(), v.clone()))
            .collect();
        let s = stop.clone();
        let continued = Arc::new(AtomicBool::new(false));
        let continued_id = signal_hook::flag::register(libc::SIGCONT, continued.clone()).ok();
        let cont = continued;
        let log = GroundLog {
            seen: Arc::default(),
            items: Arc::new(items.clone()),
            t0,
        };
        let seen = log.seen.clone();
        seen.lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend(not_level.iter().cloned());
        let thread = std::thread::Builder::new()
            .name("latlab-ground".into())
            .stack_size(latlab_core::sys::mem::HELPER_STACK)
            .spawn(move || {
                if let Some(c) = hk.filter(|c| !c.is_empty()) {
                    let _ = latlab_core::sys::sched::pin_to_cpus(c);
                }
                poll(polled, (&s, &cont), (t0, boot_s), &seen, kmsg)
            })
            .ok();
        Watch {
            log,
            stop,
            continued_id,
            not_level,
            thread,
            items,
            first,
            company: known.unwrap_or_else(|| company(proc, cpus)),
            cpus: cpus.to_vec(),
            proc: proc.to_path_buf(),
        }
    }

    /// What polling has seen so far, as it goes on.
    pub(crate) fn log(&self) -> GroundLog {
        self.log.clone()
    }

    /// Stops polling and reads everything again: every change, in the order seen, but those
    /// of the files in `held` (the settings the run changed itself).
    pub(crate) fn finish(mut self, held: &[PathBuf]) -> Vec<GroundChange> {
        self.stop.store(true, Ordering::Release);
        if let Some(t) = &self.thread {
            t.thread().unpark();
        }
        let mut changes = self
            .thread
            .take()
            .and_then(|t| t.join().ok())
            .unwrap_or_default();
        if let Some(id) = self.continued_id.take() {
            signal_hook::low_level::unregister(id);
        }
        changes.splice(0..0, std::mem::take(&mut self.not_level));
        for (i, first) in self.items.iter().zip(&self.first) {
            let now = read(&i.path);
            // What polling saw last, else what the start saw.
            let last = changes
                .iter()
                .rev()
                .find(|c| c.what == i.what)
                .map(|c| Some(c.to.clone()))
                .unwrap_or_else(|| first.clone());
            if now != last && (now.is_some() || last.is_some()) {
                changes.push(GroundChange {
                    what: i.what.clone(),
                    from: last.unwrap_or_else(|| "(unreadable)".into()),
                    to: now.unwrap_or_else(|| "(unreadable)".into()),
                    at_s: None,
                });
            }
        }
        changes.retain(|c| !own(c, &self.items, held));
        let before: std::collections::BTreeMap<i32, String> = self.company.into_iter().collect();
        for (tid, text) in company(&self.proc, &self.cpus) {
            if !before.contains_key(&tid) {
                changes.push(GroundChange {
                    what: latlab_core::result::COMPANY.into(),
                    from: "(none)".into(),
                    to: text,
                    at_s: None,
                });
            }
        }
        changes
    }
}

/// A change as a warning: `clocksource changed from tsc to kvm-clock 3.2 s into the run`.
pub(crate) fn warning(c: &GroundChange) -> String {
    if let Some(path) = c.what.strip_suffix(NOT_THE_LEVEL) {
        return format!(
            "the plan set {path} to {}, but it read {} when the run started (a pre command or \
             another process changed it): the run was measured under {}, not under its level; \
             it is marked disturbed",
            c.from, c.to, c.to
        );
    }
    if c.what == STOPPED {
        return format!(
            "latlab's process was {} {} (SIGSTOP, Ctrl-Z): the wake-ups its threads were due \
             meanwhile are late by the stop, not by the system; the run is marked disturbed",
            c.to,
            match c.at_s {
                Some(t) => format!("{t:.1} s into the run"),
                None => "during the run".into(),
            }
        );
    }
    format!(
        "the ground moved: {} changed from {} to {} {} (the run was measured partly under each)",
        c.what,
        c.from,
        c.to,
        match c.at_s {
            Some(t) => format!("{t:.1} s into the run"),
            None => "between the start and the end of the run".into(),
        }
    )
}

#[cfg(test)]
mod tests {
    use super::poll::{stopped, Polled, POLL};
    use super::*;

    #[test]
    fn a_stop_is_said_with_the_range_its_length_can_have() {
        // Seen 0.6 s after the last poll: the stop began at most one poll (0.2 s) later.
        let c = stopped(3.0, 0.6);
        assert_eq!(c.to, "stopped for 0.4 to 0.6 s, then continued (SIGCONT)");
        assert!(warning(&c).contains("was stopped for 0.4 to 0.6 s"));
    }

    #[test]
    fn a_polled_file_is_read_again_from_its_start_and_opened_again_after_it_failed() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("online");
        std::fs::write(&f, "0-1\n").unwrap();
        let mut buf = [0u8; 4096];
        let mut p = Polled::new(&f);
        assert_eq!(p.read(&mut buf), Some("0-1"));
        // Rewritten in place (as sysfs and procfs values change): the open file reads it.
        std::fs::write(&f, "0\n").unwrap();
        assert_eq!(p.read(&mut buf), Some("0"));
        // A file that cannot be read (a directory in its place) is unreadable, then read
        // again once it is back.
        std::fs::remove_file(&f).unwrap();
        std::fs::create_dir(&f).unwrap();
        let mut p = Polled::new(&f);
        assert_eq!(p.read(&mut buf), None);
        std::fs::remove_dir(&f).unwrap();
        std::fs::write(&f, "0-3\n").unwrap();
        assert_eq!(p.read(&mut buf), Some("0-3"));
        // Not text: unreadable, as at the start.
        std::fs::write(&f, [0xff, 0xfe]).unwrap();
        assert_eq!(p.read(&mut buf), None);
        assert_eq!(read(&f), None);
    }

    #[test]
    fn a_setting_changed_during_the_run_is_seen_with_its_time_and_one_at_the_end_too() {
        let d = tempfile::tempdir().unwrap();
        let sys = d.path().join("sys");
        let proc = d.path().join("proc");
        let cs = sys.join("devices/system/clocksource/clocksource0");
        std::fs::create_dir_all(&cs).unwrap();
        std::fs::create_dir_all(proc.join("sys/kernel")).unwrap();
        std::fs::create_dir_all(sys.join("devices/system/cpu/cpu1/cpufreq")).unwrap();
        std::fs::write(cs.join("current_clocksource"), "tsc\n").unwrap();
        std::fs::write(proc.join("sys/kernel/sched_rt_runtime_us"), "950000\n").unwrap();
        let gov = sys.join("devices/system/cpu/cpu1/cpufreq/scaling_governor");
        std::fs::write(&gov, "performance\n").unwrap();
        let online = sys.join("devices/system/cpu/online");
        std::fs::write(&online, "0-1\n").unwrap();
        let w = Watch::start_in(&sys, &proc, &[1], None, None);
        std::thread::sleep(POLL * 2);
        // The polled files change in one write each, as a sysfs value does (fs::write
        // truncates first, and a poll between the two would read an empty value).
        let overwrite = |p: &std::path::Path, v: &str| {
            use std::os::unix::fs::FileExt;
            let f = std::fs::OpenOptions::new().write(true).open(p).unwrap();
            f.write_all_at(v.as_bytes(), 0).unwrap();
        };
        overwrite(&cs.join("current_clocksource"), "kvm-clock\n");
        std::thread::sleep(POLL * 3);
        std::fs::write(&gov, "powersave\n").unwrap();
        std::fs::write(proc.join("sys/kernel/sched_rt_runtime_us"), "-1\n").unwrap();
        // As long as "0-1\n", so nothing of it is left over.
        overwrite(&online, "0  \n");
        std::thread::sleep(POLL * 3);
        let c = w.finish(&[]);
        assert_eq!(c.len(), 4, "{c:?}");
        assert_eq!(
            (c[0].what.as_str(), c[0].from.as_str(), c[0].to.as_str()),
            ("clocksource", "tsc", "kvm-clock")
        );
        assert!(c[0].at_s.is_some_and(|t| t > 0.0), "{c:?}");
        // Polled: with its time (a CPU taken offline).
        assert_eq!(
            (c[1].what.as_str(), c[1].from.as_str(), c[1].to.as_str()),
            ("online CPUs", "0-1", "0")
        );
        assert!(c[1].at_s.is_some_and(|t| t > c[0].at_s.unwrap()), "{c:?}");
        // Seen at the end (not polled): no time.
        assert_eq!(
            (c[2].what.as_str(), c[2].to.as_str(), c[2].at_s),
            ("sched_rt_runtime_us", "-1", None)
        );
        assert_eq!(c[3].what, "CPU 1 scaling_governor");
        assert_eq!(c[3].at_s, None);
        assert!(warning(&c[0]).contains("from tsc to kvm-clock"));
        // Nothing moved: nothing said.
        let w = Watch::start_in(&sys, &proc, &[1], None, None);
        assert!(w.finish(&[]).is_empty());
    }
}
