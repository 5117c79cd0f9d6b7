//! Which flight recorder a tracing session runs: the tracefs instance, unless
//! `LATLAB_TRACER=bpf` asks for the in-kernel one (bpf/flight.bpf.c) and the run asks for
//! nothing only tracefs has (`latlab sched`'s engine reads the same variable, and there the
//! in-kernel engine is the default). Why tracefs stays the default for `--trace`: measured side
//! by side (bench/trace.py --engines, docs/benchmarks.md), the in-kernel recorder costs the
//! measured wake-ups as much as tracefs does on this project's machine, and tracefs has what
//! people already read with their own tools (the instance, trace-cmd, the switches).

use super::Request;
use latlab_core::error::{Error, Result};

/// The variable that forces an engine.
pub const VAR: &str = "LATLAB_TRACER";

/// What [`VAR`] asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wanted {
    /// Unset or empty: each measurement's default (`sched`: the in-kernel engine where it
    /// runs, else tracefs, said; `--trace`: tracefs).
    Either,
    /// `bpf`: the in-kernel engine or an error.
    Bpf,
    /// `tracefs`.
    Tracefs,
}

/// [`VAR`] as the environment has it; exit 2 for any other value.
pub fn wanted() -> Result<Wanted> {
    wanted_from(std::env::var_os(VAR).as_deref())
}

fn wanted_from(v: Option<&std::ffi::OsStr>) -> Result<Wanted> {
    match v.map(|v| v.to_str()) {
        None | Some(Some("")) => Ok(Wanted::Either),
        Some(Some("bpf")) => Ok(Wanted::Bpf),
        Some(Some("tracefs")) => Ok(Wanted::Tracefs),
        Some(None) => Err(Error::Usage(format!(
            "{VAR}: not UTF-8; give bpf (the in-kernel engine) or tracefs"
        ))),
        Some(Some(v)) => Err(Error::Usage(format!(
            "{VAR}={v:?}: give bpf (the in-kernel engine) or tracefs"
        ))),
    }
}

/// What in `r` only the tracefs recorder can do: a stack trigger, raw pages for a trace.dat,
/// the events `latlab sched` replays.
fn needs_tracefs(r: &Request) -> Option<&'static str> {
    if r.stacks {
        Some("--trace-stacks (a stacktrace trigger on the tracefs instance)")
    } else if r.save.as_deref().is_some_and(crate::dat::wanted) {
        Some("--trace-save FILE.dat (the kernel's raw trace pages)")
    } else if r.break_on.is_some()
        || r.actions
            .iter()
            .any(|a| a.action == crate::actions::Action::Trace)
    {
        Some("saving trace windows as trace.dat files (the kernel's raw trace pages)")
    } else if !r.extra.is_empty() {
        Some("the tracefs engine of latlab sched")
    } else {
        None
    }
}

/// Whether the in-kernel recorder runs: where the variable asks for it; an error where the
/// run then needs tracefs.
pub(super) fn in_kernel(r: &Request, w: Wanted) -> Result<bool> {
    match (w, needs_tracefs(r)) {
        (Wanted::Bpf, Some(what)) => Err(Error::Usage(format!(
            "{VAR}=bpf: {what} needs the tracefs recorder; unset {VAR} or set it to tracefs"
        ))),
        (Wanted::Bpf, None) => Ok(true),
        _ => Ok(false),
    }
}

/// A refusal of the in-kernel recorder, asked for by name: exit 3 with the reason.
pub(super) fn refused(why: &str) -> Error {
    let why = why.lines().next().unwrap_or_default();
    Error::Env(format!(
        "{VAR}=bpf: the in-kernel flight recorder cannot run here: {why} (it needs root and \
         BPF; unset {VAR} to trace with tracefs)"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::ffi::OsStrExt;

    #[test]
    fn the_variable_and_the_options_decide() {
        let os = |s: &[u8]| wanted_from(Some(std::ffi::OsStr::from_bytes(s)));
        assert_eq!(wanted_from(None).unwrap(), Wanted::Either);
        assert_eq!(os(b"").unwrap(), Wanted::Either);
        assert_eq!(os(b"bpf").unwrap(), Wanted::Bpf);
        assert_eq!(os(b"tracefs").unwrap(), Wanted::Tracefs);
        for bad in [&b"ebpf"[..], b"\xff"] {
            let e = os(bad).unwrap_err();
            assert_eq!(e.exit_code(), 2);
            assert!(e.to_string().contains(VAR), "{e}");
        }
        let plain = Request::default();
        assert!(in_kernel(&plain, Wanted::Bpf).unwrap());
        assert!(!in_kernel(&plain, Wanted::Either).unwrap());
        assert!(!in_kernel(&plain, Wanted::Tracefs).unwrap());
        let stacks = Request {
            stacks: true,
            ..Request::default()
        };
        assert!(!in_kernel(&stacks, Wanted::Either).unwrap());
        let e = in_kernel(&stacks, Wanted::Bpf).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(e.to_string().contains("--trace-stacks"), "{e}");
        let dat = Request {
            save: Some("x.dat".into()),
            ..Request::default()
        };
        assert!(in_kernel(&dat, Wanted::Bpf).is_err());
        let json = Request {
            save: Some("x.json".into()),
            ..Request::default()
        };
        assert!(in_kernel(&json, Wanted::Bpf).unwrap());
        let e = refused("EPERM\nlog");
        assert_eq!(e.exit_code(), 3);
        assert!(
            e.to_string().contains("EPERM") && !e.to_string().contains("log"),
            "{e}"
        );
    }
}
