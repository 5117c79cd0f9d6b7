//! Which engine measures `latlab sched`: the in-kernel one (BPF programs aggregate, user space
//! reads maps) where the kernel takes it, else the tracefs one (every event read and replayed
//! here); `LATLAB_TRACER=tracefs` or `=bpf` decides instead.

use latlab_core::error::{Error, Result};
use serde::Serialize;

/// The engine a run used (its parameters say which).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Engine {
    /// BPF programs on the `sched` tracepoints aggregate in kernel.
    Bpf,
    /// The tracefs flight recorder's events, replayed by `track`.
    #[default]
    Tracefs,
}

use latlab_trace::session::recorder::{Wanted, VAR};

/// `why` short enough for a warning: its first line, and where a verifier's log follows, the
/// log's last line (the verifier says why it refused last; the rest is its trace).
fn short(why: &str) -> String {
    let cut = |l: &str| match l.char_indices().nth(300) {
        Some((i, _)) => format!("{}...", &l[..i]),
        None => l.to_string(),
    };
    let mut lines = why.lines().map(str::trim).filter(|l| !l.is_empty());
    let first = cut(lines.next().unwrap_or_default());
    let last = lines
        .rev()
        .find(|l| !l.starts_with("verification time") && !l.starts_with("processed "))
        .filter(|l| !l.starts_with("stack depth"));
    match last {
        Some(l) => format!("{first} ... {}", cut(l)),
        None => first,
    }
}

/// The engine for this run, and what the result should say when the in-kernel one was
/// wanted but could not run.
pub(crate) fn choose() -> Result<(Engine, Option<String>)> {
    choose_with(latlab_trace::session::recorder::wanted()?, latlab_trace::bpf::probe)
}

fn choose_with(
    wanted: Wanted,
    probe: impl FnOnce() -> std::result::Result<(), String>,
) -> Result<(Engine, Option<String>)> {
    match wanted {
        Wanted::Tracefs => Ok((Engine::Tracefs, None)),
        Wanted::Bpf => match probe() {
            Ok(()) => Ok((Engine::Bpf, None)),
            Err(e) => Err(Error::Env(format!(
                "{VAR}=bpf: the in-kernel engine cannot run here: {} (it needs root, BPF and \
                 the sched tracepoints; {VAR}=tracefs runs the tracefs engine)",
                short(&e)
            ))),
        },
        Wanted::Either => Ok(match probe() {
            Ok(()) => (Engine::Bpf, None),
            Err(e) => (
                Engine::Tracefs,
                Some(format!(
                    "the in-kernel (BPF) engine could not run ({}): the tracefs engine ran",
                    short(&e)
                )),
            ),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_variable_decides_and_a_refusal_is_said() {
        let fails = || Err("loading: Operation not permitted\nverifier log".to_string());
        assert_eq!(choose_with(Wanted::Tracefs, || unreachable!()).unwrap(), (Engine::Tracefs, None));
        assert_eq!(choose_with(Wanted::Either, || Ok(())).unwrap(), (Engine::Bpf, None));
        let (e, note) = choose_with(Wanted::Either, fails).unwrap();
        assert_eq!(e, Engine::Tracefs);
        let note = note.unwrap();
        assert!(note.contains("Operation not permitted"), "{note}");
        // A verifier's log: its first line and the reason, last, not the trace between.
        let log = "loading x: failed. Verifier output: 0: R1=ctx()\n1: (85) call\n\
                   invalid bpf_context access off=2\nverification time 47 usec\n";
        let s = short(log);
        assert!(s.contains("Verifier output") && s.contains("invalid bpf_context"), "{s}");
        assert!(!s.contains("call") && !s.contains("verification time"), "{s}");
        let err = choose_with(Wanted::Bpf, fails).unwrap_err();
        assert_eq!(err.exit_code(), 3, "{err}");
    }
}
