//! The watch's polling thread: the cheap settings read every [`POLL`] from files kept open, the
//! kernel log's switches a poll would miss, and a stop of the whole process (SIGSTOP, Ctrl-Z)
//! seen by the SIGCONT after it. Each change is timed into the run.

use super::super::kmsg::{Kmsg, Logged};
use super::Item;
use latlab_core::result::{GroundChange, STOPPED};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How often the cheap settings are read during a run.
pub(super) const POLL: Duration = Duration::from_millis(200);

/// A polled setting's file, kept open and read again from its start each poll (sysfs and
/// procfs make a fresh value at offset 0): a poll costs a read, not a path walk, an open, a
/// read and a close, and allocates only when the value changed. The watch's thread runs all
/// through a measurement, so its CPU is part of what latlab costs beside cyclictest.
pub(super) struct Polled {
    path: PathBuf,
    file: Option<std::fs::File>,
}

impl Polled {
    pub(super) fn new(path: &Path) -> Polled {
        Polled {
            path: path.to_path_buf(),
            file: None,
        }
    }

    /// The value now (its first `buf.len()` bytes, read into `buf`), trimmed, as [`super::read`]
    /// gives it; a file that fails is opened again on the next poll (one that went away and
    /// came back is read).
    pub(super) fn read<'b>(&mut self, buf: &'b mut [u8]) -> Option<&'b str> {
        use std::os::unix::fs::FileExt;
        if self.file.is_none() {
            self.file = std::fs::File::open(&self.path).ok();
        }
        let f = self.file.as_ref()?;
        let mut n = 0;
        while n < buf.len() {
            match f.read_at(&mut buf[n..], n as u64) {
                Ok(0) => break,
                // A value comes whole from one read (sysfs's show, a sysctl's handler, a
                // regular file short of its end): a second read would only say "end".
                Ok(k) if n + k < buf.len() => {
                    n += k;
                    break;
                }
                Ok(k) => n += k,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => {
                    self.file = None;
                    return None;
                }
            }
        }
        std::str::from_utf8(&buf[..n]).ok().map(str::trim)
    }
}

/// Polls `items` until `stop`: a change each time a value differs from the one before (also
/// added to `seen` as it is found). `kmsg`, when readable, adds the clocksource switches the
/// kernel logged, at the log's time (`boot_s`: the start on its clock), so one undone within a
/// poll is still seen.
pub(super) fn poll(
    items: Vec<(Item, Option<String>)>,
    (stop, continued): (&AtomicBool, &AtomicBool),
    (t0, boot_s): (Instant, f64),
    seen: &Mutex<Vec<GroundChange>>,
    kmsg: Option<Kmsg>,
) -> Vec<GroundChange> {
    let mut p = Poller {
        files: items.iter().map(|(i, _)| Polled::new(&i.path)).collect(),
        items,
        found: Found {
            changes: Vec::new(),
            seen,
        },
        kmsg,
        t0,
        boot_s,
    };
    // On the thread's stack: a heap buffer here grew the thread's malloc arena, which
    // mlockall's MCL_FUTURE makes present at once (~45 more page faults a run).
    let mut buf = [0u8; 4096];
    let mut last = Instant::now();
    loop {
        wait_for_poll(stop);
        p.logged();
        // A SIGCONT after a poll that came late: the process was stopped meanwhile. (A
        // SIGCONT alone is no stop: `timeout` sends one after its SIGTERM.)
        let gap = last.elapsed();
        last = Instant::now();
        if continued.swap(false, Ordering::AcqRel) && gap > POLL + STOP_SEEN {
            p.found
                .note(stopped(p.t0.elapsed().as_secs_f64(), gap.as_secs_f64()));
        }
        if stop.load(Ordering::Acquire) {
            break;
        }
        // The measuring threads' policies, from outside them.
        latlab_core::rt::policy::poll();
        p.read_files(&mut buf);
    }
    p.found.changes
}

/// Sleeps until the next poll is due, woken early by `finish` (an unpark), so the end of a
/// run never waits for a poll.
fn wait_for_poll(stop: &AtomicBool) {
    let due = Instant::now() + POLL;
    while !stop.load(Ordering::Acquire) && Instant::now() < due {
        std::thread::park_timeout(due.saturating_duration_since(Instant::now()));
    }
}

/// What the polling thread keeps from one poll to the next.
struct Poller<'s> {
    /// The polled settings, each with what it read last (None: unreadable).
    items: Vec<(Item, Option<String>)>,
    /// Their files, kept open, in the same order.
    files: Vec<Polled>,
    found: Found<'s>,
    kmsg: Option<Kmsg>,
    /// The watch's start, on the monotonic clock and on the kernel log's (seconds since boot).
    t0: Instant,
    boot_s: f64,
}

/// The changes found so far: the thread's own list, returned at the end, and the one results
/// stored mid-run read ([`super::GroundLog`]).
struct Found<'s> {
    changes: Vec<GroundChange>,
    seen: &'s Mutex<Vec<GroundChange>>,
}

impl Found<'_> {
    fn note(&mut self, c: GroundChange) {
        self.seen
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(c.clone());
        self.changes.push(c);
    }
}

impl Poller<'_> {
    /// Reads every polled file again: a change for each value that differs from the last.
    fn read_files(&mut self, buf: &mut [u8]) {
        for ((i, last), file) in self.items.iter_mut().zip(self.files.iter_mut()) {
            let now = file.read(buf);
            if now != last.as_deref() {
                let now = now.map(str::to_string);
                let c = GroundChange {
                    what: i.what.clone(),
                    from: last.clone().unwrap_or_else(|| "(unreadable)".into()),
                    to: now.clone().unwrap_or_else(|| "(unreadable)".into()),
                    at_s: Some(self.t0.elapsed().as_secs_f64()),
                };
                self.found.note(c);
                *last = now;
            }
        }
    }

    /// The changes the kernel logged since the last poll, at the log's time, for the items
    /// they concern (one undone within a poll leaves the file as it was).
    fn logged(&mut self) {
        let Some(k) = self.kmsg.as_mut() else { return };
        for (at, what) in k.changes() {
            let item = match what {
                Logged::Clocksource(_) => "clocksource",
                Logged::Offline(_) | Logged::Online(_) => "online CPUs",
            };
            let Some((i, last)) = self.items.iter_mut().find(|(i, _)| i.what == item) else {
                continue;
            };
            let Some(to) = logged_value(what, last.as_deref()) else {
                continue;
            };
            if last.as_deref() != Some(to.as_str()) {
                let elapsed = self.t0.elapsed().as_secs_f64();
                self.found.note(GroundChange {
                    what: i.what.clone(),
                    from: last.clone().unwrap_or_else(|| "(unreadable)".into()),
                    to: to.clone(),
                    at_s: Some((at - self.boot_s).clamp(0.0, elapsed)),
                });
                *last = Some(to);
            }
        }
    }
}

/// What its item reads after the logged change `what`: the clocksource switched to, or the
/// online set `last` with a CPU taken offline or brought up (None when `last` is no CPU set).
fn logged_value(what: Logged, last: Option<&str>) -> Option<String> {
    let (cpu, on) = match what {
        Logged::Clocksource(to) => return Some(to),
        Logged::Offline(c) => (c, false),
        Logged::Online(c) => (c, true),
    };
    // A CPU taken offline and back within one poll: the online set in between.
    let set = latlab_core::config::CpuSet::parse(last?).ok()?;
    let mut v: Vec<usize> = set.iter().filter(|&x| x != cpu).collect();
    if on {
        v.push(cpu);
    }
    v.sort_unstable();
    Some(latlab_core::config::CpuSet::from_cpus(v).to_string())
}

/// How much later than due a poll must come, with a SIGCONT, to be a stop.
const STOP_SEEN: Duration = Duration::from_millis(100);

/// The change a SIGCONT says: the process was stopped (for up to `gap_s`) and continued,
/// `at_s` into the run.
pub(super) fn stopped(at_s: f64, gap_s: f64) -> GroundChange {
    // The stop began after the last poll and before the next was due (the due time passed
    // while stopped), and ended just before this poll: it lasted from `gap - POLL` to `gap`.
    let least = (gap_s - POLL.as_secs_f64()).max(0.0);
    GroundChange {
        what: STOPPED.into(),
        from: "running".into(),
        to: format!("stopped for {least:.1} to {gap_s:.1} s, then continued (SIGCONT)"),
        at_s: Some(at_s),
    }
}
