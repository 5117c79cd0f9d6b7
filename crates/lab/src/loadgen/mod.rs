//! Loads that provoke latency (`latlab load`, `--load` on every measurement). Each `--load` runs
//! in its own worker process (`latlab load-worker SPEC`, hidden), in its own process group,
//! with SIGKILL as parent-death signal; its own children get the same. A `LoadSet` starts and
//! warms them up before a measurement and stops, reaps and reports them after it — and kills
//! them on every other way out.

pub(crate) mod build;
pub(crate) mod hackbench;
pub(crate) mod kinds;
pub(crate) mod spec;

pub(crate) use kinds::LoadReport;
pub(crate) use spec::{LoadKind, LoadSpec};

use latlab_core::error::{Error, Result};
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long loads run before the measurement starts.
pub(crate) const WARM_UP: Duration = Duration::from_millis(500);
/// How long a load may take to stop and report before it is killed.
pub(crate) const STOP_GRACE: Duration = Duration::from_secs(10);

/// The environment variable that tells a load worker which process it must die with.
const PARENT_ENV: &str = "LATLAB_LOAD_PARENT";
/// The environment variable that tells a load worker its name (its tasks' `comm`).
const NAME_ENV: &str = "LATLAB_LOAD_NAME";

/// The name each load's tasks carry (`comm`, 15 bytes) and its culprit group is named by: its
/// kind (`hackbench`), numbered from the second load of a kind on (`cpu#2`).
pub(crate) fn names(specs: &[LoadSpec]) -> Vec<String> {
    let mut seen: std::collections::BTreeMap<String, usize> = Default::default();
    specs
        .iter()
        .map(|s| {
            let kind = s.kind.to_string();
            let n = seen.entry(kind.clone()).or_insert(0);
            *n += 1;
            if *n == 1 {
                kind
            } else {
                format!("{kind}#{n}")
            }
        })
        .collect()
}

/// How often a load worker reports its progress (one JSON line on its stdout).
pub(crate) const PROGRESS_EVERY: Duration = Duration::from_secs(1);

/// What each running load reported last (its progress so far; after the stop, its final
/// report), shared with the measurement (`driver::Ctx::load_progress`).
#[derive(Debug, Clone, Default)]
pub(crate) struct LoadProgress(Arc<std::sync::Mutex<Vec<Option<LoadReport>>>>);

impl LoadProgress {
    /// The latest report of each load, in `--load` order (None: none yet).
    pub(crate) fn now(&self) -> Vec<Option<LoadReport>> {
        self.0.lock().map(|v| v.clone()).unwrap_or_default()
    }

    fn set(&self, i: usize, r: LoadReport) {
        if let Ok(mut v) = self.0.lock() {
            if v.len() <= i {
                v.resize(i + 1, None);
            }
            v[i] = Some(r);
        }
    }
}

/// Running loads.
pub(crate) struct LoadSet {
    running: Vec<(LoadSpec, Child, Option<std::thread::JoinHandle<()>>)>,
    progress: LoadProgress,
    /// Each load's name (see [`names`]).
    names: Vec<String>,
}

/// Why each load that asks for a real-time policy (`cpu:policy=fifo,prio=N`) will not get it
/// (not root, RLIMIT_RTPRIO, a cgroup without an RT budget), asked of the kernel before the
/// loads start: its threads then run at SCHED_OTHER, which the run must say (or refuse under
/// `--strict`), not only the load worker's stderr.
pub(crate) fn policy_refusals(specs: &[LoadSpec]) -> Vec<String> {
    specs
        .iter()
        .filter_map(|s| {
            let prio = s.rt_prio()?;
            let policy: latlab_core::config::Policy = s.opts.get("policy")?.parse().ok()?;
            latlab_core::sys::privilege::probe_policy(policy, prio)
                .err()
                .map(|why| format!("load {}: {why}; its threads run SCHED_OTHER", s.text))
        })
        .collect()
}

impl LoadSet {
    /// Starts every load and lets them warm up; fails (exit 3) if one dies during warm-up. A
    /// Ctrl-C during the warm-up cuts it short (the measurement then ends at once, saved and
    /// marked interrupted).
    pub fn start(specs: &[LoadSpec], control: &latlab_core::rt::Control) -> Result<LoadSet> {
        let mut set = LoadSet {
            running: Vec::new(),
            progress: LoadProgress::default(),
            names: names(specs),
        };
        if specs.is_empty() {
            return Ok(set);
        }
        let exe = std::env::current_exe()
            .map_err(|e| Error::Env(format!("cannot find latlab's own binary: {e}")))?;
        // A load's tasks that outlive their worker (killed first) come back to latlab, which
        // reaps them when it stops the load (`stop`).
        latlab_core::sys::process::become_subreaper();
        for (s, name) in specs.iter().zip(names(specs)) {
            let mut c = Command::new(&exe);
            c.env(NAME_ENV, name);
            c.arg("load-worker")
                .arg(&s.text)
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped());
            c.process_group(0)
                .env(PARENT_ENV, latlab_core::sys::process::getpid().to_string());
            latlab_core::sys::process::die_with_us(&mut c);
            if let Some(set) = s.cpus() {
                latlab_core::sys::process::confine_command(&mut c, set.iter()).map_err(|e| {
                    Error::Env(format!(
                        "--load {}: cannot confine it to CPUs {set}: {e}",
                        s.text
                    ))
                })?;
            }
            let mut child = c
                .spawn()
                .map_err(|e| Error::Env(format!("--load {}: cannot start: {e}", s.text)))?;
            // Its reports are read as they come, so the pipe never fills and the latest is
            // known at any time.
            let (out, progress, i) = (child.stdout.take(), set.progress.clone(), set.running.len());
            let reader = std::thread::Builder::new()
                .name("latlab-load-reader".into())
                .stack_size(latlab_core::sys::mem::HELPER_STACK)
                .spawn(move || read_reports(out, &progress, i))
                .ok();
            set.running.push((s.clone(), child, reader));
        }
        control.sleep(WARM_UP);
        for (s, c, _) in set.running.iter_mut() {
            if let Ok(Some(status)) = c.try_wait() {
                let mut err = String::new();
                if let Some(e) = c.stderr.as_mut() {
                    let _ = e.read_to_string(&mut err);
                }
                let said = match err.trim() {
                    "" => String::new(),
                    e => format!(": {e}"),
                };
                return Err(Error::Env(format!(
                    "--load {} stopped during warm-up ({status}){said}",
                    s.text
                )));
            }
        }
        Ok(set)
    }

    /// The pids of the load workers (each leads its own process group).
    pub(crate) fn pids(&self) -> Vec<i32> {
        self.running.iter().map(|(_, c, _)| c.id() as i32).collect()
    }

    /// The loads' progress as they report it, for the measurement.
    pub(crate) fn progress(&self) -> LoadProgress {
        self.progress.clone()
    }

    /// Each load worker's tree as one culprit group for `--trace`: `hackbench (latlab load)`.
    pub fn roots(&self) -> Vec<latlab_trace::groups::Root> {
        self.running
            .iter()
            .zip(&self.names)
            .map(|((_, c, _), n)| latlab_trace::groups::Root::load(c.id() as i32, n))
            .collect()
    }

    /// Stops every load (SIGTERM, then SIGKILL after the grace time), reaps the whole process
    /// group and collects the reports, with a warning and a ground change (the run is then
    /// disturbed) for each load that ended early or was stopped for a while. `asked`: the
    /// workers latlab had already asked to stop while they ran (its watchdog, at a Ctrl-C or
    /// the deadline): one of them that has ended since did not end early.
    pub(crate) fn stop(mut self, asked: &[i32]) -> Stopped {
        let mut reports = Vec::new();
        let mut warnings = Vec::new();
        let mut ground = Vec::new();
        for (i, (s, mut c, reader)) in std::mem::take(&mut self.running).into_iter().enumerate() {
            let pid = c.id() as i32;
            // Ended before the run did (killed by someone else, or crashed): the rest of the
            // run was measured without it.
            let ended = c.try_wait().ok().flatten();
            let ended_early = ended.filter(|_| !asked.contains(&pid));
            if ended.is_none() {
                // (Not to a worker already reaped: its pid may be another process's now.)
                latlab_core::sys::process::signal(pid, libc::SIGTERM);
                // A worker someone stopped (SIGSTOP) hears it only once continued.
                latlab_core::sys::process::signal_group(pid, libc::SIGCONT);
                let t0 = Instant::now();
                while t0.elapsed() < STOP_GRACE {
                    if let Ok(Some(_)) = c.try_wait() {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(10));
                }
            }
            kill_group(pid);
            let _ = c.wait();
            // Its tasks that outlived it are latlab's children now (a subreaper): reaped here,
            // not left as zombies.
            latlab_core::sys::process::reap_group(pid, STOP_GRACE);
            if let Some(r) = reader {
                let _ = r.join();
            }
            let last = self.progress.now().get(i).cloned().flatten();
            if let Some(status) = ended_early {
                warnings.push(ended_early_warning(&s.text, status, last.as_ref()));
                ground.push(load_change(
                    &s.text,
                    format!("ended ({status}) {}", ended_when(last.as_ref())),
                ));
            }
            if let Some(gone) = last.as_ref().and_then(|r| r.stopped_s) {
                warnings.push(format!(
                    "--load {} was stopped (SIGSTOP) for about {gone:.1} s in all while latlab \
                     ran it: the run was measured that long without it; the run is marked \
                     disturbed",
                    s.text
                ));
                ground.push(load_change(
                    &s.text,
                    format!("stopped for about {gone:.1} s in all (SIGSTOP)"),
                ));
            }
            let last = match (last, ended_early) {
                // Its last progress report is what it did before it ended.
                (Some(mut r), Some(status)) if r.note.as_deref() == Some(PROGRESS_NOTE) => {
                    r.note = Some(format!(
                        "ended during the run ({status}): counted up to its last progress report"
                    ));
                    Some(r)
                }
                (last, _) => last.filter(|r| r.note.as_deref() != Some(PROGRESS_NOTE)),
            };
            match last {
                Some(mut r) => {
                    r.cpus = s.cpus().map(|c| c.to_string());
                    reports.push(r)
                }
                None if ended_early.is_some() => {}
                // Asked to stop before it could report (a Ctrl-C in the first moments).
                None if ended.is_some() => warnings.push(format!(
                    "--load {}: no report (it was stopped before it made one)",
                    s.text
                )),
                None => warnings.push(format!(
                    "--load {}: no report (it was killed after {STOP_GRACE:?})",
                    s.text
                )),
            }
        }
        Stopped {
            reports,
            warnings,
            ground,
        }
    }
}

/// What stopping the loads gave.
pub(crate) struct Stopped {
    /// Each load's final report (or its last progress report, marked).
    pub(crate) reports: Vec<LoadReport>,
    /// What the run must say about its loads.
    pub(crate) warnings: Vec<String>,
    /// A load that ended early or was stopped for a while: the run's conditions changed.
    pub(crate) ground: Vec<latlab_core::result::GroundChange>,
}

/// A load's change, as the run's ground records it (`--load cpu`: running → `to`).
fn load_change(text: &str, to: String) -> latlab_core::result::GroundChange {
    latlab_core::result::GroundChange {
        what: format!("{}{text}", latlab_core::result::LOAD_PREFIX),
        from: "running".into(),
        to,
        at_s: None,
    }
}

/// The warning for a load whose worker ended before the run did: how, and from about when the
/// run went on without it (its last progress report, one a second).
fn ended_early_warning(
    text: &str,
    status: std::process::ExitStatus,
    last: Option<&LoadReport>,
) -> String {
    let when = ended_when(last);
    format!(
        "--load {text} ended during the run ({status}) {when}: the rest of the run was \
         measured without it; the run is marked disturbed"
    )
}

/// From about when a load that ended early was gone: its last progress report (one a second).
fn ended_when(last: Option<&LoadReport>) -> String {
    match last {
        Some(r) => format!("after about {:.1} s of load (its last report)", r.seconds),
        None => "before its first report".into(),
    }
}

/// How often a load worker's ticker wakes (to report, and to see a stop).
const TICK: Duration = Duration::from_millis(50);

/// Stops of the worker (SIGSTOP, Ctrl-Z of its group: a tick that came late, with a SIGCONT)
/// are said once they add up to this. Less is not: a busy load can keep its own ticker from a
/// CPU for a while, and the stop at the run's end sends every load a SIGCONT.
const STOP_SAID: Duration = Duration::from_millis(500);

/// The seconds stopped so far, once they add up to [`STOP_SAID`].
fn stopped_s(ms: &std::sync::atomic::AtomicU64) -> Option<f64> {
    let ms = ms.load(std::sync::atomic::Ordering::Acquire);
    (ms >= STOP_SAID.as_millis() as u64).then_some(ms as f64 / 1000.0)
}

/// The note of a report printed while the load runs (the final one has its own).
const PROGRESS_NOTE: &str = "in progress";

/// Reads a worker's report lines until its stdout closes, keeping the latest.
fn read_reports(out: Option<std::process::ChildStdout>, progress: &LoadProgress, i: usize) {
    use std::io::BufRead;
    let Some(out) = out else {
        return;
    };
    for line in std::io::BufReader::new(out).lines() {
        let Ok(line) = line else {
            break;
        };
        if let Ok(r) = serde_json::from_str::<LoadReport>(&line) {
            progress.set(i, r);
        }
    }
}

fn kill_group(pid: i32) {
    latlab_core::sys::process::signal_group(pid, libc::SIGKILL);
}

impl Drop for LoadSet {
    fn drop(&mut self) {
        for (_, c, _) in self.running.iter_mut() {
            kill_group(c.id() as i32);
            let _ = c.wait();
            latlab_core::sys::process::reap_group(c.id() as i32, STOP_GRACE);
        }
    }
}

/// The hidden `load-worker` entry: runs one load until SIGTERM/SIGINT, then prints its report
/// as one JSON line.
pub fn worker_main(spec_text: &str) -> Result<()> {
    let spec = LoadSpec::parse(spec_text)?;
    // Its tasks whose parent dies first (a double fork, `setsid`) come back to the worker,
    // which ends them with the load instead of leaving them to init.
    latlab_core::sys::process::become_subreaper();
    // Every task of the load carries its name (threads and children inherit it).
    let name = std::env::var(NAME_ENV).unwrap_or_else(|_| spec.kind.to_string());
    latlab_core::sys::process::set_comm(&name);
    if let Some(parent) = std::env::var(PARENT_ENV).ok().and_then(|p| p.parse().ok()) {
        latlab_core::sys::process::kill_group_when_parent_dies(parent);
    }
    // Plain flags, not the driver's: the watchdog and the stop may both send SIGTERM, and a
    // second one must not cut the report short.
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [libc::SIGTERM, libc::SIGINT] {
        let _ = signal_hook::flag::register(sig, stop.clone());
    }
    // Progress: the count so far, one line a second, until the load ends; and how long the
    // worker was stopped (SIGSTOP, then SIGCONT), which its reports carry.
    let count = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let ended = Arc::new(AtomicBool::new(false));
    let stopped_ms = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let continued = Arc::new(AtomicBool::new(false));
    let _ = signal_hook::flag::register(libc::SIGCONT, continued.clone());
    let ticker = {
        let (spec, count, ended) = (spec.clone(), count.clone(), ended.clone());
        let stopped_ms = stopped_ms.clone();
        std::thread::spawn(move || {
            let t0 = Instant::now();
            let mut next = t0 + PROGRESS_EVERY;
            let mut last = Instant::now();
            loop {
                let gap = last.elapsed();
                last = Instant::now();
                // The gap beyond the tick's own sleep, when a SIGCONT ended it: every stop
                // is counted, short ones too (a stop and continue many times a second).
                if continued.swap(false, std::sync::atomic::Ordering::AcqRel) && gap > TICK {
                    stopped_ms.fetch_add(
                        (gap - TICK).as_millis() as u64,
                        std::sync::atomic::Ordering::AcqRel,
                    );
                }
                if ended.load(std::sync::atomic::Ordering::Acquire) {
                    break;
                }
                if Instant::now() >= next {
                    let n = count.load(std::sync::atomic::Ordering::Relaxed);
                    let mut r = kinds::report(
                        &spec,
                        n,
                        kinds::unit_of(spec.kind),
                        t0,
                        Some(PROGRESS_NOTE.into()),
                    );
                    r.stopped_s = stopped_s(&stopped_ms);
                    let _ = latlab_core::output::stdout(
                        &(serde_json::to_string(&r).unwrap_or_default() + "\n"),
                    );
                    // After a stop: the next report a period from now, not one per period
                    // missed.
                    next = (next + PROGRESS_EVERY).max(Instant::now());
                }
                std::thread::sleep(TICK);
            }
        })
    };
    let r = kinds::run(&spec, &stop, &count);
    ended.store(true, std::sync::atomic::Ordering::Release);
    let _ = ticker.join();
    kinds::end_strays();
    let mut r = r.map_err(|e| Error::Env(format!("--load {spec_text}: {e}")))?;
    r.stopped_s = stopped_s(&stopped_ms);
    let _ = latlab_core::output::stdout(&(serde_json::to_string(&r).unwrap_or_default() + "\n"));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_load_that_ended_early_says_how_and_from_when() {
        use std::os::unix::process::ExitStatusExt;
        let killed = std::process::ExitStatus::from_raw(libc::SIGKILL);
        let r = LoadReport {
            spec: "cpu".into(),
            kind: "cpu".into(),
            count: 5,
            unit: "loops".into(),
            seconds: 3.2,
            rate_per_s: 1.5,
            note: Some(PROGRESS_NOTE.into()),
            cpus: None,
            stopped_s: None,
        };
        let w = ended_early_warning("cpu", killed, Some(&r));
        assert!(w.contains("signal: 9") && w.contains("about 3.2 s"), "{w}");
        assert!(ended_early_warning("cpu", killed, None).contains("before its first report"));
    }
}
