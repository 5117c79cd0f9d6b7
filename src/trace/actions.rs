//! `--on-threshold US:ACTION`, as rtla offers: when a spike reaches a rule's latency, save its
//! trace window (`trace`), run a shell command (`shell:CMD`, told the CPU and latency through
//! its environment), send a signal (`signal:PID:SIG`) or end the run (`stop`). Each rule fires
//! at most `--on-threshold-max` times; every firing is recorded in the result.

use crate::error::{Error, Result};
use crate::result::trace::Firing;
use serde::Serialize;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What a rule does.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum Action {
    /// Save the spike's trace window as a trace.dat.
    Trace,
    /// Run `sh -c CMD`.
    Shell(String),
    /// Send signal `.1` to process `.0`.
    Signal(i32, i32),
    /// End the run (not an interruption).
    Stop,
}

/// One `--on-threshold` rule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Rule {
    /// The flag's text, for the record.
    pub spec: String,
    /// Fires for a spike at or above this (ns).
    pub threshold_ns: u64,
    /// What it does.
    pub action: Action,
}

/// Default `--on-threshold-max`: firings per rule in a run.
pub const DEFAULT_MAX: u32 = 10;

const FLAG: &str = "--on-threshold";

/// A signal by number or name (`TERM`, `SIGUSR1`, `10`).
fn signal_number(s: &str) -> Option<i32> {
    if let Ok(n) = s.parse::<i32>() {
        return (1..=64).contains(&n).then_some(n);
    }
    let n = s.strip_prefix("SIG").unwrap_or(s);
    Some(match n {
        "HUP" => libc::SIGHUP,
        "INT" => libc::SIGINT,
        "QUIT" => libc::SIGQUIT,
        "KILL" => libc::SIGKILL,
        "USR1" => libc::SIGUSR1,
        "USR2" => libc::SIGUSR2,
        "TERM" => libc::SIGTERM,
        "CONT" => libc::SIGCONT,
        "STOP" => libc::SIGSTOP,
        "ALRM" => libc::SIGALRM,
        _ => return None,
    })
}

/// Parses `US:ACTION`; `threshold` reads the time (µs when bare). Bad input is exit 2
/// naming the flag.
pub fn parse(spec: &str, threshold: impl Fn(&str) -> Result<u64>) -> Result<Rule> {
    let bad = |why: &str| Error::flag(FLAG, spec, why);
    let (t, act) = spec
        .split_once(':')
        .ok_or_else(|| bad("expected US:ACTION (trace, shell:CMD, signal:PID:SIG or stop)"))?;
    let threshold_ns = threshold(t)?;
    if threshold_ns == 0 {
        return Err(bad("the latency must be above zero"));
    }
    let action = match act.split_once(':') {
        None if act == "trace" => Action::Trace,
        None if act == "stop" => Action::Stop,
        Some(("shell", cmd)) if !cmd.trim().is_empty() => Action::Shell(cmd.to_string()),
        Some(("shell", _)) => return Err(bad("shell: needs a command")),
        Some(("signal", rest)) => {
            let (pid, sig) = rest
                .split_once(':')
                .ok_or_else(|| bad("expected signal:PID:SIG"))?;
            let pid = pid
                .parse::<i32>()
                .ok()
                .filter(|&p| p > 0)
                .ok_or_else(|| bad("signal: the PID must be a positive number"))?;
            let sig = signal_number(sig)
                .ok_or_else(|| bad("signal: unknown signal (a number, or TERM, USR1 ...)"))?;
            Action::Signal(pid, sig)
        }
        _ => {
            return Err(bad(
                "unknown action (trace, shell:CMD, signal:PID:SIG or stop)",
            ))
        }
    };
    Ok(Rule {
        spec: spec.to_string(),
        threshold_ns,
        action,
    })
}

/// What a spike looks like to an action.
#[derive(Debug, Clone)]
pub struct Spike<'a> {
    /// Series name.
    pub series: &'a str,
    /// CPU.
    pub cpu: usize,
    /// Loop or interruption number.
    pub seq: u64,
    /// Latency (ns).
    pub latency_ns: u64,
}

/// The rules of a run and what they did.
#[derive(Debug, Default)]
pub struct Actions {
    rules: Vec<Rule>,
    max: u32,
    fired: Vec<u32>,
    stop: Option<Arc<AtomicBool>>,
    children: Vec<Child>,
    /// Firings not done because their rule had reached its maximum.
    pub suppressed: u64,
}

/// How long the end of a run waits for `shell:` commands before killing them.
const SHELL_GRACE: Duration = Duration::from_secs(10);

impl Actions {
    /// `rules`, each firing at most `max` times; `stop` ends the run.
    pub fn new(rules: Vec<Rule>, max: u32, stop: Arc<AtomicBool>) -> Actions {
        Actions {
            fired: vec![0; rules.len()],
            rules,
            max,
            stop: Some(stop),
            ..Actions::default()
        }
    }

    /// True when a rule saves trace windows (the recorder must keep raw pages).
    pub fn saves_windows(&self) -> bool {
        self.rules.iter().any(|r| r.action == Action::Trace)
    }

    /// Fires every rule `s` reaches (within its maximum). `trace` rules are returned as
    /// (rule text) for the caller to save once the recorder has read the spike; the others
    /// are done now and recorded.
    pub fn fire(&mut self, s: &Spike, record: &mut Vec<Firing>) -> Vec<String> {
        let mut windows = Vec::new();
        for (i, r) in self.rules.iter().enumerate() {
            if s.latency_ns < r.threshold_ns {
                continue;
            }
            if self.fired[i] >= self.max {
                self.suppressed += 1;
                continue;
            }
            self.fired[i] += 1;
            let outcome = match &r.action {
                Action::Trace => {
                    windows.push(r.spec.clone());
                    continue;
                }
                Action::Shell(cmd) => match shell(cmd, s) {
                    Ok(c) => {
                        let o = format!("started pid {}", c.id());
                        self.children.push(c);
                        o
                    }
                    Err(e) => format!("could not start: {e}"),
                },
                Action::Signal(pid, sig) => {
                    crate::sys::process::signal(*pid, *sig);
                    format!("sent signal {sig} to {pid}")
                }
                Action::Stop => {
                    if let Some(f) = &self.stop {
                        f.store(true, Ordering::SeqCst);
                    }
                    "stopped the run".into()
                }
            };
            record.push(Firing {
                rule: r.spec.clone(),
                series: s.series.into(),
                cpu: s.cpu,
                seq: s.seq,
                latency_ns: s.latency_ns,
                outcome,
            });
        }
        windows
    }

    /// Waits for the `shell:` commands (killing those still running after a grace period).
    pub fn finish(&mut self) {
        let t0 = Instant::now();
        for c in &mut self.children {
            loop {
                match c.try_wait() {
                    Ok(Some(_)) | Err(_) => break,
                    Ok(None) if t0.elapsed() >= SHELL_GRACE => {
                        crate::sys::process::kill_group(c);
                        break;
                    }
                    Ok(None) => std::thread::sleep(Duration::from_millis(10)),
                }
            }
        }
        self.children.clear();
    }
}

/// Starts `sh -c CMD` in its own process group, its output on latlab's stderr, with the
/// spike in its environment.
fn shell(cmd: &str, s: &Spike) -> std::io::Result<Child> {
    use std::os::fd::AsFd;
    use std::os::unix::process::CommandExt;
    let err = std::io::stderr().as_fd().try_clone_to_owned()?;
    Command::new("/bin/sh")
        .arg("-c")
        .arg(cmd)
        .env("LATLAB_CPU", s.cpu.to_string())
        .env("LATLAB_LATENCY_NS", s.latency_ns.to_string())
        .env(
            "LATLAB_LATENCY_US",
            format!("{:.3}", s.latency_ns as f64 / 1e3),
        )
        .env("LATLAB_SERIES", s.series)
        .env("LATLAB_SEQ", s.seq.to_string())
        .env("LATLAB_PID", std::process::id().to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::from(err))
        .process_group(0)
        .spawn()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn us(t: &str) -> Result<u64> {
        t.parse::<u64>()
            .map(|v| v * 1000)
            .map_err(|_| Error::flag(FLAG, t, "not a time"))
    }

    #[test]
    fn specs_parse_and_bad_ones_name_the_flag() {
        assert_eq!(parse("500:trace", us).unwrap().action, Action::Trace);
        assert_eq!(parse("500:stop", us).unwrap().threshold_ns, 500_000);
        assert_eq!(
            parse("1:shell:echo $LATLAB_CPU:x", us).unwrap().action,
            Action::Shell("echo $LATLAB_CPU:x".into())
        );
        assert_eq!(
            parse("1:signal:42:USR1", us).unwrap().action,
            Action::Signal(42, libc::SIGUSR1)
        );
        assert_eq!(
            parse("1:signal:42:SIGTERM", us).unwrap().action,
            Action::Signal(42, libc::SIGTERM)
        );
        for bad in [
            "trace",
            "x:trace",
            "0:trace",
            "5:nap",
            "5:shell:",
            "5:signal:0:TERM",
            "5:signal:42",
            "5:signal:42:NOPE",
            "5:signal:-3:TERM",
        ] {
            let e = parse(bad, us).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{bad}");
            assert!(e.to_string().contains(FLAG), "{bad}: {e}");
        }
    }

    #[test]
    fn a_rule_fires_up_to_its_maximum_and_stop_stops() {
        let stop = Arc::new(AtomicBool::new(false));
        let rules = vec![
            parse("100:stop", us).unwrap(),
            parse("5:trace", us).unwrap(),
        ];
        let mut a = Actions::new(rules, 2, stop.clone());
        let mut rec = Vec::new();
        let s = |lat: u64| Spike {
            series: "T0",
            cpu: 1,
            seq: 3,
            latency_ns: lat,
        };
        assert_eq!(a.fire(&s(10_000), &mut rec), vec!["5:trace".to_string()]);
        assert!(rec.is_empty() && !stop.load(Ordering::SeqCst));
        assert_eq!(a.fire(&s(200_000), &mut rec).len(), 1);
        assert!(stop.load(Ordering::SeqCst));
        assert_eq!(rec[0].outcome, "stopped the run");
        assert!(a.fire(&s(200_000), &mut rec).is_empty(), "over the maximum");
        assert_eq!(a.suppressed, 1);
        assert_eq!(rec.len(), 2);
    }
}
