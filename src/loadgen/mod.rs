//! Loads that provoke latency (`latlab load`, `--load` on every measurement). Each `--load` runs
//! in its own worker process (`latlab load-worker SPEC`, hidden), in its own process group,
//! with SIGKILL as parent-death signal; its own children get the same. A `LoadSet` starts and
//! warms them up before a measurement and stops, reaps and reports them after it — and kills
//! them on every other way out.

pub mod hackbench;
pub mod kinds;
pub mod spec;

pub use kinds::LoadReport;
pub use spec::{LoadKind, LoadSpec};

use crate::error::{Error, Result};
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long loads run before the measurement starts.
pub const WARM_UP: Duration = Duration::from_millis(500);
/// How long a load may take to stop and report before it is killed.
pub const STOP_GRACE: Duration = Duration::from_secs(10);

/// The environment variable that tells a load worker which process it must die with.
const PARENT_ENV: &str = "LATLAB_LOAD_PARENT";

/// Running loads.
pub struct LoadSet {
    running: Vec<(LoadSpec, Child)>,
}

impl LoadSet {
    /// Starts every load and lets them warm up; fails (exit 3) if one dies during warm-up. A
    /// Ctrl-C during the warm-up cuts it short (the measurement then ends at once, saved and
    /// marked interrupted).
    pub fn start(specs: &[LoadSpec], control: &crate::rt::Control) -> Result<LoadSet> {
        let mut set = LoadSet {
            running: Vec::new(),
        };
        if specs.is_empty() {
            return Ok(set);
        }
        let exe = std::env::current_exe()
            .map_err(|e| Error::Env(format!("cannot find latlab's own binary: {e}")))?;
        for s in specs {
            let mut c = Command::new(&exe);
            c.arg("load-worker")
                .arg(&s.text)
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped());
            c.process_group(0)
                .env(PARENT_ENV, crate::sys::process::getpid().to_string());
            crate::sys::process::die_with_us(&mut c);
            if let Some(set) = s.cpus() {
                crate::sys::process::confine_command(&mut c, set.iter()).map_err(|e| {
                    Error::Env(format!(
                        "--load {}: cannot confine it to CPUs {set}: {e}",
                        s.text
                    ))
                })?;
            }
            let child = c
                .spawn()
                .map_err(|e| Error::Env(format!("--load {}: cannot start: {e}", s.text)))?;
            set.running.push((s.clone(), child));
        }
        control.sleep(WARM_UP);
        for (s, c) in set.running.iter_mut() {
            if let Ok(Some(status)) = c.try_wait() {
                let mut err = String::new();
                if let Some(e) = c.stderr.as_mut() {
                    let _ = e.read_to_string(&mut err);
                }
                return Err(Error::Env(format!(
                    "--load {} stopped during warm-up ({status}): {}",
                    s.text,
                    err.trim()
                )));
            }
        }
        Ok(set)
    }

    /// The pids of the load workers (each leads its own process group).
    pub fn pids(&self) -> Vec<i32> {
        self.running.iter().map(|(_, c)| c.id() as i32).collect()
    }

    /// True when no load runs.
    pub fn is_empty(&self) -> bool {
        self.running.is_empty()
    }

    /// Stops every load (SIGTERM, then SIGKILL after the grace time), reaps the whole process
    /// group and collects the reports.
    pub fn stop(mut self) -> (Vec<LoadReport>, Vec<String>) {
        let mut reports = Vec::new();
        let mut warnings = Vec::new();
        for (s, mut c) in std::mem::take(&mut self.running) {
            let pid = c.id() as i32;
            crate::sys::process::signal(pid, libc::SIGTERM);
            let mut out = c.stdout.take();
            let reader = std::thread::spawn(move || {
                let mut text = String::new();
                if let Some(o) = out.as_mut() {
                    let _ = o.read_to_string(&mut text);
                }
                text
            });
            let t0 = Instant::now();
            while t0.elapsed() < STOP_GRACE {
                if let Ok(Some(_)) = c.try_wait() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            kill_group(pid);
            let _ = c.wait();
            let text = reader.join().unwrap_or_default();
            match text
                .lines()
                .last()
                .and_then(|l| serde_json::from_str::<LoadReport>(l).ok())
            {
                Some(mut r) => {
                    r.cpus = s.cpus().map(|c| c.to_string());
                    reports.push(r)
                }
                None => warnings.push(format!(
                    "--load {}: no report (it was killed after {STOP_GRACE:?})",
                    s.text
                )),
            }
        }
        (reports, warnings)
    }
}

fn kill_group(pid: i32) {
    crate::sys::process::signal_group(pid, libc::SIGKILL);
}

impl Drop for LoadSet {
    fn drop(&mut self) {
        for (_, c) in self.running.iter_mut() {
            kill_group(c.id() as i32);
            let _ = c.wait();
        }
    }
}

/// The hidden `load-worker` entry: runs one load until SIGTERM/SIGINT, then prints its report
/// as one JSON line.
pub fn worker_main(spec_text: &str) -> Result<()> {
    let spec = LoadSpec::parse(spec_text)?;
    if let Some(parent) = std::env::var(PARENT_ENV).ok().and_then(|p| p.parse().ok()) {
        crate::sys::process::kill_group_when_parent_dies(parent);
    }
    // Plain flags, not the driver's: the watchdog and the stop may both send SIGTERM, and a
    // second one must not cut the report short.
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [libc::SIGTERM, libc::SIGINT] {
        let _ = signal_hook::flag::register(sig, stop.clone());
    }
    let r = kinds::run(&spec, &stop).map_err(|e| Error::Env(format!("--load {spec_text}: {e}")))?;
    println!("{}", serde_json::to_string(&r).unwrap_or_default());
    Ok(())
}
