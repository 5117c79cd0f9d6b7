//! `--on-threshold US:ACTION`, as rtla offers: when a spike reaches a rule's latency, save its
//! trace window (`trace`), run a shell command (`shell:CMD`, told the CPU and latency through
//! its environment), send a signal (`signal:PID:SIG`) or end the run (`stop`). Each rule fires
//! at most `--on-threshold-max` times; every firing is recorded in the result.
//!
//! Actions are bounded so that none can hold the run or the machine: `shell:` commands run at
//! most [`MAX_SHELLS`] at a time, each under a small supervisor (`latlab action-worker`) that
//! leads its own process group and kills that group if latlab dies (a parent-death signal), with
//! a minimal environment (no `PGPASSWORD`, no store URL: only [`KEPT_ENV`] and what
//! `--on-threshold-env` passes); whatever still runs when the run ends is killed, group and all.
//! `signal:` refuses PID 1 and latlab itself, checks its target at start, and records what
//! kill(2) said. Trace windows share the run's disk budget (`--trace-budget`, in `saving`).

use latlab_core::error::{Error, Result};
use latlab_core::result::trace::Firing;
use serde::Serialize;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What a rule does.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) enum Action {
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
    pub(crate) spec: String,
    /// Fires for a spike at or above this (ns).
    pub(crate) threshold_ns: u64,
    /// What it does.
    pub(crate) action: Action,
}

/// Default `--on-threshold-max`: firings per rule in a run.
pub(crate) const DEFAULT_MAX: u32 = 10;
/// Default `--trace-budget`: bytes `--trace-save` and `trace` actions may write in a run.
/// 64 MiB: twenty-odd windows of a busy 2-CPU machine, more than anyone reads of one run (a
/// 1 s run with 150 `trace` firings wrote 481 MB under the old 1 GiB).
pub(crate) const DEFAULT_BUDGET: u64 = 64 << 20;
/// `shell:` commands running at once; a firing beyond is suppressed and counted.
pub(crate) const MAX_SHELLS: usize = 4;
/// The variables a `shell:` command inherits from latlab's environment (besides the
/// `LATLAB_*` ones describing the spike and what `--on-threshold-env` passes).
pub(crate) const KEPT_ENV: &[&str] = &[
    "PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "TZ", "TERM",
];
/// How long the end of a run waits for `shell:` commands still running before it kills them.
const SHELL_GRACE: Duration = Duration::from_millis(100);

/// The bounds a run's actions work within (recorded in the run's parameters; of the
/// variables passed to `shell:` commands only the names, since a value may be a secret).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Limits {
    /// `--on-threshold-max`: firings per rule.
    pub(crate) max: u32,
    /// `--trace-budget`: bytes of trace files a run may write.
    pub(crate) budget: u64,
    /// `--on-threshold-env`: variables passed to `shell:` commands.
    #[serde(serialize_with = "names_only")]
    pub(crate) env: Vec<(String, String)>,
}

fn names_only<S: serde::Serializer>(
    env: &[(String, String)],
    s: S,
) -> std::result::Result<S::Ok, S::Error> {
    s.collect_seq(env.iter().map(|(k, _)| k))
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max: DEFAULT_MAX,
            budget: DEFAULT_BUDGET,
            env: Vec::new(),
        }
    }
}

/// `--on-threshold-env NAME` (latlab's own value) or `NAME=VALUE`; exit 2 naming the flag.
pub(crate) fn parse_env(spec: &str) -> Result<(String, String)> {
    let (name, value) = match spec.split_once('=') {
        Some((n, v)) => (n, Some(v.to_string())),
        None => (spec, None),
    };
    let ok = !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !ok {
        return Err(Error::flag(
            "--on-threshold-env",
            latlab_core::store::redact_env(spec),
            "expected NAME or NAME=VALUE (letters, digits and '_')",
        ));
    }
    let value = match value {
        Some(v) => v,
        None => std::env::var(name).map_err(|_| {
            Error::flag(
                "--on-threshold-env",
                spec,
                "latlab has no such variable to pass (give NAME=VALUE)",
            )
        })?,
    };
    Ok((name.to_string(), value))
}
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
pub(crate) fn parse(spec: &str, threshold: impl Fn(&str) -> Result<u64>) -> Result<Rule> {
    let bad = |why: &str| Error::flag(FLAG, spec, why);
    let (t, act) = spec
        .split_once(':')
        .ok_or_else(|| bad("expected US:ACTION (trace, shell:CMD, signal:PID:SIG or stop)"))?;
    // `shell:CMD` with no latency first: say what the value should look like.
    if ["trace", "stop", "shell", "signal"].contains(&t) {
        return Err(bad(
            "expected US:ACTION, the latency first (500us:shell:CMD, 1ms:stop)",
        ));
    }
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
            if pid == 1 {
                return Err(bad(
                    "signal: PID 1 is init (on a systemd host SIGINT to it reboots); refused",
                ));
            }
            if pid == latlab_core::sys::process::getpid() {
                return Err(bad(
                    "signal: that PID is latlab itself; use `stop` to end the run",
                ));
            }
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

/// Checks, at start, that every `signal:` target exists and may be signalled: a missing one is
/// exit 2 naming it, one latlab may not signal exit 3.
pub(crate) fn check_targets(rules: &[Rule]) -> Result<()> {
    for r in rules {
        if let Action::Signal(pid, _) = r.action {
            match latlab_core::sys::process::signal_checked(pid, 0) {
                Ok(()) => {}
                Err(e) if e.raw_os_error() == Some(libc::ESRCH) => {
                    return Err(Error::flag(
                        FLAG,
                        &r.spec,
                        format!("signal: no process {pid}"),
                    ))
                }
                Err(e) => {
                    return Err(Error::Env(format!(
                        "{FLAG} {}: signal: cannot signal process {pid} ({e}); run as its owner or root",
                        r.spec
                    )))
                }
            }
        }
    }
    Ok(())
}

/// What a spike looks like to an action.
#[derive(Debug, Clone)]
pub(crate) struct Spike<'a> {
    /// Series name.
    pub(crate) series: &'a str,
    /// CPU.
    pub(crate) cpu: usize,
    /// Loop or interruption number.
    pub(crate) seq: u64,
    /// Latency (ns).
    pub(crate) latency_ns: u64,
}

/// The rules of a run and what they did.
#[derive(Debug, Default)]
pub(crate) struct Actions {
    rules: Vec<Rule>,
    limits: Limits,
    fired: Vec<u32>,
    stop: Option<Arc<AtomicBool>>,
    /// Running `shell:` supervisors (each leads its process group).
    children: Vec<Child>,
    /// Firings not done because their rule had reached its maximum.
    pub(crate) suppressed: u64,
    /// `shell:` firings not done because [`MAX_SHELLS`] were still running.
    pub(crate) busy: u64,
    /// `shell:` commands still running at the end of the run, killed then.
    pub(crate) killed: u64,
}

impl Actions {
    /// `rules` within `limits`; `stop` ends the run.
    pub(crate) fn new(rules: Vec<Rule>, limits: Limits, stop: Arc<AtomicBool>) -> Actions {
        Actions {
            fired: vec![0; rules.len()],
            rules,
            limits,
            stop: Some(stop),
            children: Vec::new(),
            suppressed: 0,
            busy: 0,
            killed: 0,
        }
    }

    /// True when a rule saves trace windows (the recorder must keep raw pages).
    pub(crate) fn saves_windows(&self) -> bool {
        self.rules.iter().any(|r| r.action == Action::Trace)
    }

    /// Fires every rule `s` reaches (within its maximum). `trace` rules are returned as
    /// (rule text) for the caller to save once the recorder has read the spike; the others
    /// are done now and recorded.
    pub(crate) fn fire(&mut self, s: &Spike, record: &mut Vec<Firing>) -> Vec<String> {
        let mut windows = Vec::new();
        self.children
            .retain_mut(|c| matches!(c.try_wait(), Ok(None)));
        for (i, r) in self.rules.iter().enumerate() {
            if s.latency_ns < r.threshold_ns {
                continue;
            }
            if self.fired[i] >= self.limits.max {
                self.suppressed += 1;
                continue;
            }
            if matches!(r.action, Action::Shell(_)) && self.children.len() >= MAX_SHELLS {
                self.busy += 1;
                continue;
            }
            self.fired[i] += 1;
            let outcome = match &r.action {
                Action::Trace => {
                    windows.push(r.spec.clone());
                    continue;
                }
                Action::Shell(cmd) => match shell(cmd, s, &self.limits.env) {
                    Ok(c) => {
                        let o = format!("started pid {}", c.id());
                        self.children.push(c);
                        o
                    }
                    Err(e) => format!("could not start: {e}"),
                },
                Action::Signal(pid, sig) => {
                    match latlab_core::sys::process::signal_checked(*pid, *sig) {
                        Ok(()) => format!("sent signal {sig} to {pid}"),
                        Err(e) => format!("could not send signal {sig} to {pid}: {e}"),
                    }
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

    /// Ends the `shell:` commands: those still running after a moment are killed with their
    /// whole process group (the run never waits on them).
    pub(crate) fn finish(&mut self) {
        let t0 = Instant::now();
        for c in &mut self.children {
            loop {
                match c.try_wait() {
                    Ok(Some(_)) | Err(_) => break,
                    Ok(None) if t0.elapsed() >= SHELL_GRACE => {
                        latlab_core::sys::process::kill_group(c);
                        self.killed += 1;
                        break;
                    }
                    Ok(None) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        }
        self.children.clear();
    }
}

impl Drop for Actions {
    fn drop(&mut self) {
        // A session that ends by an error still leaves nothing running.
        for c in &mut self.children {
            latlab_core::sys::process::kill_group(c);
        }
    }
}

/// Starts `sh -c CMD` under latlab's supervisor (`latlab action-worker`), in a process group
/// of its own that dies with latlab, its output on latlab's stderr, with the spike and only
/// [`KEPT_ENV`] and `env` in its environment.
fn shell(cmd: &str, s: &Spike, env: &[(String, String)]) -> std::io::Result<Child> {
    use std::os::fd::AsFd;
    let err = std::io::stderr().as_fd().try_clone_to_owned()?;
    let mut c = supervised(cmd)?;
    c.env_clear();
    for k in KEPT_ENV {
        if let Some(v) = std::env::var_os(k) {
            c.env(k, v);
        }
    }
    if std::env::var_os("PATH").is_none() {
        c.env(
            "PATH",
            "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        );
    }
    c.envs(env.iter().map(|(k, v)| (k, v)))
        .env("LATLAB_CPU", s.cpu.to_string())
        .env("LATLAB_LATENCY_NS", s.latency_ns.to_string())
        .env(
            "LATLAB_LATENCY_US",
            format!("{:.3}", s.latency_ns as f64 / 1e3),
        )
        .env("LATLAB_SERIES", s.series)
        .env("LATLAB_SEQ", s.seq.to_string())
        .env("LATLAB_PID", std::process::id().to_string())
        .stdout(Stdio::from(err));
    c.spawn()
}

/// `sh -c CMD` under latlab's supervisor ([`worker_main`]), ready to spawn: in a process group
/// of its own that dies with this process (even SIGKILLed), stdin closed. For `shell:` actions
/// and a plan's hooks.
pub fn supervised(cmd: &str) -> std::io::Result<Command> {
    use std::os::unix::process::CommandExt;
    let mut c = Command::new(std::env::current_exe()?);
    c.arg("action-worker")
        .arg(latlab_core::sys::process::getpid().to_string())
        .arg(cmd)
        .stdin(Stdio::null())
        .process_group(0);
    latlab_core::sys::process::die_with_us(&mut c);
    Ok(c)
}

/// The hidden `latlab action-worker PARENT CMD`: runs `sh -c CMD` in this process's group (which
/// it leads) and exits with its status; if latlab (`parent`) dies first, the whole group is
/// killed (a parent-death signal alone would reach only this process, not the command's own
/// children).
pub fn worker_main(parent: i32, cmd: &str) -> Result<()> {
    // Only as latlab starts it: leading a group of its own (its death kills that group, which
    // must never be a shell's or a script's).
    // (its parent must be the latlab named: a wrong one would end this group at once)
    if !latlab_core::sys::process::leads_own_group()
        || latlab_core::sys::process::getppid() != parent
    {
        return Err(Error::Usage(
            "action-worker is internal: latlab starts it for --on-threshold shell: and plan hooks"
                .into(),
        ));
    }
    latlab_core::sys::process::kill_group_when_parent_dies(parent);
    let status = Command::new("/bin/sh")
        .arg("-c")
        .arg(cmd)
        .stdin(Stdio::null())
        .status();
    let code = match status {
        Ok(s) => s.code().unwrap_or_else(|| {
            use std::os::unix::process::ExitStatusExt;
            128 + s.signal().unwrap_or(0)
        }),
        Err(_) => 127,
    };
    std::process::exit(code);
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
        // An action without its latency says that the latency comes first.
        let e = parse("shell:true", us).unwrap_err().to_string();
        assert!(e.contains("the latency first"), "{e}");
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
        let me = format!("5:signal:{}:USR1", std::process::id());
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
            "5:signal:1:USR1",
            me.as_str(),
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
        let mut a = Actions::new(
            rules,
            Limits {
                max: 2,
                ..Limits::default()
            },
            stop.clone(),
        );
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
