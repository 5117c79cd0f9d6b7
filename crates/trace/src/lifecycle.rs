//! What must never outlive latlab: the tracefs instances it creates. Every live instance is
//! registered here, so the second-signal exit path can remove it ([`cleanup_on_exit`]) as the
//! normal drop does.
//!
//! Where tracefs (or, for `cyclic --hrtick`, debugfs) is not mounted, latlab mounts it and
//! never unmounts it: another tool (perf, trace-cmd, a second latlab) may be reading through
//! that mount by then, and pulling it from under them breaks their capture. As root, latlab
//! first moves into a mount namespace of its own (`sys::mount::private_mounts`, before any
//! thread starts), so a mount it makes is seen by nobody else and goes with its last process;
//! where that is refused, the mount stays, as perf and trace-cmd leave theirs.

use latlab_core::error::{Error, Result};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A filesystem latlab mounts where it is missing, and the option that needs it (named in
/// messages).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fs {
    /// The filesystem type (`tracefs`, `debugfs`).
    pub(crate) kind: &'static str,
    /// The option that made latlab mount it.
    pub(crate) flag: &'static str,
}

/// tracefs, for `--trace`.
pub(crate) const TRACEFS: Fs = Fs {
    kind: "tracefs",
    flag: "--trace",
};
/// debugfs, for `cyclic --hrtick`.
pub const DEBUGFS: Fs = Fs {
    kind: "debugfs",
    flag: "--hrtick",
};

impl Fs {
    /// The lock file serialising mount decisions, in the state directory.
    fn lock(&self) -> String {
        format!("{}-mount.lock", self.kind)
    }
}

/// Runs `f` holding the mount lock of `fs` in state directory `dir` (created if needed), so
/// two latlabs starting at once do not both mount.
fn locked<T>(fs: Fs, dir: &Path, f: impl FnOnce() -> T) -> std::io::Result<T> {
    std::fs::create_dir_all(dir)?;
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(dir.join(fs.lock()))?;
    lock.lock()?;
    let out = f();
    let _ = lock.unlock();
    Ok(out)
}

/// The words of a command line that may make latlab mount tracefs or debugfs.
const MOUNTING: &[&str] = &["--trace", "--hrtick", "sched", "restore", "monitor"];

/// Moves latlab into a mount namespace of its own (`sys::mount::private_mounts`) when it runs
/// as root, its command line may mount tracefs or debugfs, and one of them is not mounted;
/// called first thing, before any thread starts. Refused (no CAP_SYS_ADMIN, a seccomp filter),
/// latlab goes on in the host's namespace, where a mount it makes stays mounted.
pub fn isolate_mounts(args: impl Iterator<Item = std::ffi::OsString>) {
    if latlab_core::sys::sched::euid() != 0 {
        return;
    }
    let may_mount = args
        .into_iter()
        .any(|a| MOUNTING.iter().any(|m| a.to_str() == Some(m)));
    if may_mount && (mounted("tracefs").is_none() || mounted("debugfs").is_none()) {
        let _ = latlab_core::sys::mount::private_mounts();
    }
}

/// Where tracefs is mounted now, per /proc/mounts.
pub(crate) fn mounted_tracefs() -> Option<PathBuf> {
    mounted("tracefs")
}

/// Where a filesystem of type `kind` is mounted now (the first one), per /proc/mounts.
pub fn mounted(kind: &str) -> Option<PathBuf> {
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap_or_default();
    mounts.lines().find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        (f.len() > 2 && f[2] == kind).then(|| PathBuf::from(f[1]))
    })
}

/// Finds tracefs, or mounts it at `default` (as root): [`acquire_fs`] for [`TRACEFS`].
pub(crate) fn acquire(
    dir: &Path,
    default: &Path,
    mount: impl FnOnce(&Path) -> std::io::Result<()>,
    current: impl FnOnce() -> Option<PathBuf>,
) -> Result<PathBuf> {
    acquire_fs(TRACEFS, dir, default, mount, current)
}

/// Finds `fs`, or mounts it at `default` (as root), under its mount lock in state directory
/// `dir`; returns its root. A mount latlab makes is never unmounted (see the module doc).
pub fn acquire_fs(
    fs: Fs,
    dir: &Path,
    default: &Path,
    mount: impl FnOnce(&Path) -> std::io::Result<()>,
    current: impl FnOnce() -> Option<PathBuf>,
) -> Result<PathBuf> {
    // Tracefs is asked for by `--trace` or by `latlab sched`.
    let flag = if fs.kind == TRACEFS.kind {
        super::who()
    } else {
        fs.flag
    };
    let r = locked(fs, dir, || -> Result<PathBuf> {
        if let Some(p) = current() {
            return Ok(p);
        }
        mount(default).map_err(|e| {
            Error::Env(format!(
                "{flag}: {} is not mounted and mounting it on {} failed: {e} (needs root)",
                fs.kind,
                default.display()
            ))
        })?;
        Ok(default.to_path_buf())
    });
    r.map_err(|e| {
        Error::Env(format!(
            "{flag}: lock {}: {e}",
            dir.join(fs.lock()).display()
        ))
    })?
}

/// How long teardown waits for a busy instance or mount.
const WAIT: Duration = Duration::from_secs(1);

/// What removing one instance needs.
struct Owned {
    id: u64,
    /// The instance, reached even after its mount is detached.
    reach: super::files::Reach,
    journal: Option<PathBuf>,
    /// The reader's stop flag and its "pipes closed" flag.
    reader: Option<(Arc<AtomicBool>, Arc<AtomicBool>)>,
}

/// The live instances of this process.
static LIVE: Mutex<Vec<Owned>> = Mutex::new(Vec::new());
static NEXT: AtomicU64 = AtomicU64::new(1);

fn live() -> std::sync::MutexGuard<'static, Vec<Owned>> {
    LIVE.lock().unwrap_or_else(|p| p.into_inner())
}

/// Registers a created instance; returns its id for [`end`].
pub(crate) fn register(reach: super::files::Reach, journal: Option<PathBuf>) -> u64 {
    // The second-Ctrl-C exit path (driver::signals) runs this before it exits.
    latlab_core::rt::at_exit(cleanup_on_exit);
    let id = NEXT.fetch_add(1, Ordering::Relaxed);
    live().push(Owned {
        id,
        reach,
        journal,
        reader: None,
    });
    id
}

/// Tells teardown how to make instance `id`'s reader close its pipes: set `stop`, then wait
/// for `closed`.
pub(crate) fn attach_reader(id: u64, stop: Arc<AtomicBool>, closed: Arc<AtomicBool>) {
    if let Some(o) = live().iter_mut().find(|o| o.id == id) {
        o.reader = Some((stop, closed));
    }
}

/// Removes instance `id` (its reader must be stopped) and its journal entry. A failure is noted and the journal kept, so `latlab restore` finishes it.
pub(crate) fn end(id: u64) {
    let mut l = live();
    if let Some(i) = l.iter().position(|o| o.id == id) {
        let o = l.remove(i);
        teardown(o);
    }
}

/// Removes every tracefs instance this process still holds: the exit path
/// of a second Ctrl-C calls it before `exit`, which runs no destructors. Safe to call from
/// any thread, any number of times.
pub(crate) fn cleanup_on_exit() {
    let mut l = live();
    // Newest first.
    for o in l.drain(..).rev().collect::<Vec<_>>() {
        let _ = super::files::poke(&o.reach.at("tracing_on"), "0");
        if let Some((stop, closed)) = &o.reader {
            stop.store(true, Ordering::Release);
            let t0 = Instant::now();
            while !closed.load(Ordering::Acquire) && t0.elapsed() < WAIT {
                std::thread::sleep(Duration::from_millis(2));
            }
        }
        // A reader without a stop flag (latlab timerlat's, busy on the main thread) still
        // holds the buffers: the process is ending, so its descriptors go first.
        latlab_core::sys::process::close_fds_under(&o.reach.dir);
        teardown(o);
    }
}

/// Stops and removes an instance through its descriptor, so a tracefs mount detached under
/// it (`umount -l`) does not leave it recording with its journal entry gone.
fn teardown(o: Owned) {
    let _ = super::files::poke(&o.reach.at("tracing_on"), "0");
    let removed = match super::files::remove_instance(o.reach.via()) {
        Ok(()) => true,
        Err(e) => {
            latlab_core::note!(
                "latlab: {}: {}: {e} (`latlab restore` removes it)",
                super::who(),
                o.reach.dir.display()
            );
            false
        }
    };
    if removed {
        if let Some(j) = &o.journal {
            let _ = std::fs::remove_file(j);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    #[test]
    fn it_mounts_what_is_missing_once_and_uses_what_is_there() {
        let d = tempfile::tempdir().unwrap();
        let at = d.path().join("mnt");
        let calls = Cell::new(0);
        let root = acquire(
            d.path(),
            &at,
            |_| {
                calls.set(calls.get() + 1);
                Ok(())
            },
            || None,
        )
        .unwrap();
        assert_eq!((root, calls.get()), (at.clone(), 1));
        // One someone else mounted: used as it is.
        let root = acquire(
            d.path(),
            &at,
            |_| panic!("mounted again"),
            || Some(PathBuf::from("/elsewhere")),
        )
        .unwrap();
        assert_eq!(root, PathBuf::from("/elsewhere"));
    }

    #[test]
    fn a_failed_mount_is_exit_3() {
        let d = tempfile::tempdir().unwrap();
        let e = acquire(
            d.path(),
            &d.path().join("mnt"),
            |_| Err(std::io::Error::from_raw_os_error(libc::EPERM)),
            || None,
        )
        .unwrap_err();
        assert_eq!(e.exit_code(), 3);
        assert!(e.to_string().contains("mounting it on"), "{e}");
    }
}
