//! One run of a boot level: the measurement made inside a fresh guest boot of the level's
//! kernel (scripts/guest.sh, built into latlab so a plan needs no checkout), its result back on
//! the guest's stdout and stored here, in the host's store, with the plan's tags. The guest
//! has no way to this machine's store (its root is read-only, it has no network), so the host
//! keeps the run.

use crate::experiment::plan::boot::Boot;
use crate::experiment::plan::Plan;
use latlab_core::error::{Error, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The guest engine, the same script the tests and benchmarks boot guests with.
const GUEST_SH: &str = include_str!("../../../../../scripts/guest.sh");

/// Exit codes of the guest engine that say the boot, not the measurement, failed: its time
/// ran out (124) or the guest ended without running the command to its end (125).
pub(super) const BOOT_FAILED: [i32; 2] = [124, 125];
/// The guest engine's exit when something it needs cannot be had (a package, a kernel).
pub(super) const CANNOT_BOOT: i32 = 3;

/// Where the guest engine keeps kernels, initramfs images and itself.
fn cache_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("LATLAB_GUEST_CACHE").filter(|d| !d.is_empty()) {
        return PathBuf::from(d);
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(|| PathBuf::from("/var/cache"));
    base.join("latlab/guest")
}

/// The guest engine as a file (it reads its own guest init from itself), written once per
/// version of it into the cache.
fn script() -> Result<PathBuf> {
    use sha2::Digest;
    let sum: String = sha2::Sha256::digest(GUEST_SH.as_bytes())[..6]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let dir = cache_dir();
    let path = dir.join(format!("guest-{sum}.sh"));
    if path.is_file() {
        return Ok(path);
    }
    let fail = |e: std::io::Error| {
        Error::Env(format!(
            "cannot write the guest engine into {}: {e} (LATLAB_GUEST_CACHE names another place)",
            dir.display()
        ))
    };
    std::fs::create_dir_all(&dir).map_err(fail)?;
    let tmp = dir.join(format!(".guest-{sum}.{}", std::process::id()));
    std::fs::write(&tmp, GUEST_SH).map_err(fail)?;
    std::fs::rename(&tmp, &path).map_err(fail)?;
    Ok(path)
}

/// The command that boots `boot` and makes the measurement (`exe` with `args`) inside it, its
/// result as JSON on stdout and nothing stored in the guest.
pub(super) fn command(exe: &Path, plan: &Plan, boot: &Boot, args: &[String]) -> Result<Command> {
    let g = &plan.guest;
    let mut c = Command::new("bash");
    c.arg(script()?)
        .args(["--kernel", &boot.kernel])
        .args(["--cpus", &g.cpus.to_string()])
        .args(["--memory", &g.memory])
        .args(["--timeout", &g.timeout.to_string()])
        .args(["--accel", &g.accel])
        .args(["--cmdline", &boot.cmdline]);
    // latlab's own directory, shared at its path: the guest mounts a fresh /tmp, which would
    // hide a latlab built or unpacked under it.
    if let Some(dir) = exe.parent() {
        c.arg("--share").arg(dir);
    }
    c.arg("--")
        .arg(exe)
        .arg(&plan.measure.command)
        .args(args)
        .args(["--json", "-", "--no-store"]);
    // The guest engine passes LATLAB_* variables on into the guest: the store (which may carry
    // a password, and which the guest cannot reach) and this machine's settings to watch are
    // not the guest's.
    c.env_remove("LATLAB_STORE")
        .env_remove(crate::driver::ground::WATCH_ENV);
    Ok(c)
}

/// The kernel a boot level ran, as its result says: release, command line (what the guest
/// engine adds for its console left out), config hash and boot id, for progress lines.
pub(super) fn said(run: &latlab_core::result::Run) -> String {
    let e = &run.environment;
    let own: Vec<&str> = e
        .kernel_cmdline
        .split_whitespace()
        .filter(|w| !ENGINE_CMDLINE.contains(w))
        .collect();
    format!(
        "kernel {}{}, boot {}",
        e.kernel_release,
        if own.is_empty() {
            String::new()
        } else {
            format!(" '{}'", own.join(" "))
        },
        e.boot_id.get(..8).unwrap_or(&e.boot_id)
    )
}

/// What the guest engine puts on every guest's command line (its console and panic policy).
pub(crate) const ENGINE_CMDLINE: [&str; 4] = ["console=ttyS0", "panic=-1", "quiet", "loglevel=4"];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_engine_is_written_once_and_runs_as_a_file() {
        let d = tempfile::tempdir().unwrap();
        std::env::set_var("LATLAB_GUEST_CACHE", d.path());
        let a = script().unwrap();
        let b = script().unwrap();
        std::env::remove_var("LATLAB_GUEST_CACHE");
        assert_eq!(a, b);
        assert_eq!(std::fs::read_to_string(&a).unwrap(), GUEST_SH);
        assert!(
            GUEST_SH.contains("#--init--"),
            "the engine carries its init"
        );
    }
}
