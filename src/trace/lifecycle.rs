//! What must never outlive latlab: the tracefs instances it creates and the tracefs (or, for
//! `cyclic --hrtick`, debugfs) mount it makes. Every live instance is registered here, so the
//! second-signal exit path can remove it ([`cleanup_on_exit`]) as the normal drop does; a mount
//! latlab makes is shared between concurrent runs through a lock file and a list of users
//! beside the restore journal, and only its last user (or `latlab restore`, once every user is
//! dead) unmounts it.

use crate::error::{Error, Result};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A filesystem latlab mounts where it is missing, and the option that needs it (named in
/// messages).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fs {
    /// The filesystem type (`tracefs`, `debugfs`).
    pub kind: &'static str,
    /// The option that made latlab mount it.
    pub flag: &'static str,
}

/// tracefs, for `--trace`.
pub const TRACEFS: Fs = Fs {
    kind: "tracefs",
    flag: "--trace",
};
/// debugfs, for `cyclic --hrtick`.
pub const DEBUGFS: Fs = Fs {
    kind: "debugfs",
    flag: "--hrtick",
};

impl Fs {
    /// The lock file serialising mount decisions, in the journal directory.
    fn lock(&self) -> String {
        format!("{}-mount.lock", self.kind)
    }
    /// The file listing the users of the mount latlab made, in the journal directory.
    fn state(&self) -> String {
        format!("{}-mount.json", self.kind)
    }
}

/// The users of a mount latlab made.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
struct MountState {
    /// Where latlab mounted tracefs.
    mount: PathBuf,
    /// Processes using it.
    users: Vec<u32>,
}

/// True while process `pid` exists (this process always).
fn alive(pid: u32) -> bool {
    pid == std::process::id() || Path::new(&format!("/proc/{pid}")).exists()
}

/// Runs `f` holding the mount lock of `fs` in journal directory `dir` (created if needed).
fn locked<T>(fs: Fs, dir: &Path, f: impl FnOnce(&Path) -> T) -> std::io::Result<T> {
    std::fs::create_dir_all(dir)?;
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(dir.join(fs.lock()))?;
    lock.lock()?;
    let out = f(&dir.join(fs.state()));
    let _ = lock.unlock();
    Ok(out)
}

fn read_state(p: &Path) -> Option<MountState> {
    serde_json::from_str(&std::fs::read_to_string(p).ok()?).ok()
}

fn write_state(p: &Path, s: &MountState) -> std::io::Result<()> {
    let text = serde_json::to_string(s).map_err(std::io::Error::other)?;
    crate::output::write_atomic(p, text.as_bytes())
}

/// Where tracefs is mounted now, per /proc/mounts.
pub fn mounted_tracefs() -> Option<PathBuf> {
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

/// A share of a mount latlab made; released on drop (the last user unmounts).
#[derive(Debug)]
pub struct MountLease {
    /// What is mounted.
    fs: Fs,
    /// The journal directory holding the lock and the user list.
    dir: PathBuf,
    /// The mount point.
    pub point: PathBuf,
}

impl Drop for MountLease {
    fn drop(&mut self) {
        // Only a failure is worth a word here (`latlab restore` prints every line).
        for l in release_fs(self.fs, &self.dir, std::process::id()) {
            if !l.starts_with("unmounted") {
                crate::note!("latlab: {}: {l}", self.fs.flag);
            }
        }
    }
}

/// Finds tracefs, or mounts it at `default` (as root): [`acquire_fs`] for [`TRACEFS`].
pub fn acquire(
    dir: &Path,
    default: &Path,
    mount: impl FnOnce(&Path) -> std::io::Result<()>,
    current: impl FnOnce() -> Option<PathBuf>,
) -> Result<(PathBuf, Option<MountLease>)> {
    acquire_fs(TRACEFS, dir, default, mount, current)
}

/// Finds `fs`, or mounts it at `default` (as root), under its mount lock in journal
/// directory `dir`. Returns its root and, when latlab mounted it (now or in a run still
/// using it), a lease on that mount. One mounted by anyone else is used and never unmounted.
pub fn acquire_fs(
    fs: Fs,
    dir: &Path,
    default: &Path,
    mount: impl FnOnce(&Path) -> std::io::Result<()>,
    current: impl FnOnce() -> Option<PathBuf>,
) -> Result<(PathBuf, Option<MountLease>)> {
    let me = std::process::id();
    let flag = fs.flag;
    let lease = |point: &Path| MountLease {
        fs,
        dir: dir.to_path_buf(),
        point: point.to_path_buf(),
    };
    let r = locked(fs, dir, |state| -> Result<(PathBuf, Option<MountLease>)> {
        let known = read_state(state);
        if let Some(p) = current() {
            return match known {
                Some(mut s) if s.mount == p => {
                    s.users.retain(|&u| u != me && alive(u));
                    s.users.push(me);
                    write_state(state, &s)
                        .map_err(|e| Error::Env(format!("{flag}: {}: {e}", state.display())))?;
                    Ok((p.clone(), Some(lease(&p))))
                }
                _ => Ok((p, None)),
            };
        }
        mount(default).map_err(|e| {
            Error::Env(format!(
                "{flag}: {} is not mounted and mounting it on {} failed: {e} (needs root)",
                fs.kind,
                default.display()
            ))
        })?;
        let s = MountState {
            mount: default.to_path_buf(),
            users: vec![me],
        };
        // The user list is written before anything else can fail: a lease that drops from
        // here on unmounts.
        let l = lease(default);
        write_state(state, &s)
            .map_err(|e| Error::Env(format!("{flag}: {}: {e}", state.display())))?;
        Ok((default.to_path_buf(), Some(l)))
    });
    r.map_err(|e| {
        Error::Env(format!(
            "{flag}: lock {}: {e}",
            dir.join(fs.lock()).display()
        ))
    })?
}

/// Drops user `pid` (and every dead user) from the tracefs mount latlab made; when none is
/// left, unmounts it and forgets it. One line per thing done, for `latlab restore`.
pub fn release(dir: &Path, pid: u32) -> Vec<String> {
    release_fs(TRACEFS, dir, pid)
}

/// [`release`] for the mount of `fs`.
pub fn release_fs(fs: Fs, dir: &Path, pid: u32) -> Vec<String> {
    release_with(fs, dir, pid, crate::sys::mount::umount, || mounted(fs.kind))
}

fn release_with(
    fs: Fs,
    dir: &Path,
    pid: u32,
    umount: impl Fn(&Path) -> std::io::Result<()>,
    current: impl FnOnce() -> Option<PathBuf>,
) -> Vec<String> {
    if !dir.join(fs.state()).exists() {
        return Vec::new();
    }
    let r = locked(fs, dir, |state| {
        let Some(mut s) = read_state(state) else {
            return Vec::new();
        };
        s.users.retain(|&u| u != pid && alive(u));
        if !s.users.is_empty() {
            let _ = write_state(state, &s);
            return Vec::new();
        }
        if current().as_deref() != Some(s.mount.as_path()) {
            let _ = std::fs::remove_file(state);
            return Vec::new();
        }
        // An instance being removed by another process can keep it busy for a moment.
        let t0 = Instant::now();
        loop {
            match umount(&s.mount) {
                Ok(()) => {
                    let _ = std::fs::remove_file(state);
                    return vec![format!("unmounted {}", s.mount.display())];
                }
                Err(e) if e.raw_os_error() == Some(libc::EBUSY) && t0.elapsed() < WAIT => {
                    std::thread::sleep(Duration::from_millis(20))
                }
                Err(e) => {
                    // Kept: `latlab restore` tries again.
                    let _ = write_state(state, &s);
                    return vec![format!("left {} mounted: {e}", s.mount.display())];
                }
            }
        }
    });
    r.unwrap_or_else(|e| vec![format!("{}: {e}", dir.join(fs.lock()).display())])
}

/// How long teardown waits for a busy instance or mount.
const WAIT: Duration = Duration::from_secs(1);

/// What removing one instance needs.
struct Owned {
    id: u64,
    dir: PathBuf,
    journal: Option<PathBuf>,
    lease: Option<MountLease>,
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
pub fn register(dir: PathBuf, journal: Option<PathBuf>, lease: Option<MountLease>) -> u64 {
    // The second-Ctrl-C exit path (driver::signals) runs this before it exits.
    crate::rt::at_exit(cleanup_on_exit);
    let id = NEXT.fetch_add(1, Ordering::Relaxed);
    live().push(Owned {
        id,
        dir,
        journal,
        lease,
        reader: None,
    });
    id
}

/// Tells teardown how to make instance `id`'s reader close its pipes: set `stop`, then wait
/// for `closed`.
pub fn attach_reader(id: u64, stop: Arc<AtomicBool>, closed: Arc<AtomicBool>) {
    if let Some(o) = live().iter_mut().find(|o| o.id == id) {
        o.reader = Some((stop, closed));
    }
}

/// Removes instance `id` (its reader must be stopped), releases its mount lease and its
/// journal entry. A failure is noted and the journal kept, so `latlab restore` finishes it.
pub fn end(id: u64) {
    let mut l = live();
    if let Some(i) = l.iter().position(|o| o.id == id) {
        let o = l.remove(i);
        teardown(o);
    }
}

/// Removes every tracefs instance (and mount share) this process still holds: the exit path
/// of a second Ctrl-C calls it before `exit`, which runs no destructors. Safe to call from
/// any thread, any number of times.
pub fn cleanup_on_exit() {
    let mut l = live();
    // Newest first: the process-events instance goes before the one holding the mount.
    for o in l.drain(..).rev().collect::<Vec<_>>() {
        let _ = super::files::poke(&o.dir.join("tracing_on"), "0");
        if let Some((stop, closed)) = &o.reader {
            stop.store(true, Ordering::Release);
            let t0 = Instant::now();
            while !closed.load(Ordering::Acquire) && t0.elapsed() < WAIT {
                std::thread::sleep(Duration::from_millis(2));
            }
        }
        teardown(o);
    }
}

fn teardown(o: Owned) {
    let _ = super::files::poke(&o.dir.join("tracing_on"), "0");
    let removed = match super::files::remove_instance(&o.dir) {
        Ok(()) => true,
        Err(e) => {
            crate::note!("latlab: --trace: {}: {e}", o.dir.display());
            false
        }
    };
    drop(o.lease);
    if removed {
        if let Some(j) = &o.journal {
            let _ = std::fs::remove_file(j);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::{Cell, RefCell};

    #[test]
    fn the_last_user_unmounts_and_only_a_mount_latlab_made() {
        let d = tempfile::tempdir().unwrap();
        let at = d.path().join("mnt");
        let mounted: RefCell<Option<PathBuf>> = RefCell::new(None);
        let calls = Cell::new(0);
        // First run: nothing mounted, so it mounts and holds a lease.
        let (root, lease) = acquire(
            d.path(),
            &at,
            |p| {
                calls.set(calls.get() + 1);
                *mounted.borrow_mut() = Some(p.to_path_buf());
                Ok(())
            },
            || mounted.borrow().clone(),
        )
        .unwrap();
        assert_eq!(root, at);
        let lease = lease.unwrap();
        // A second user (a live process: pid 1) joins instead of mounting again.
        let mut s = read_state(&d.path().join(TRACEFS.state())).unwrap();
        assert_eq!(s.users, vec![std::process::id()]);
        s.users.push(1);
        write_state(&d.path().join(TRACEFS.state()), &s).unwrap();
        std::mem::forget(lease); // released by hand below, with a fake umount
        let umounts = Cell::new(0);
        let um = |_: &Path| {
            umounts.set(umounts.get() + 1);
            Ok(())
        };
        let out = release_with(TRACEFS, d.path(), std::process::id(), um, || {
            mounted.borrow().clone()
        });
        assert!(out.is_empty(), "{out:?}");
        assert_eq!(umounts.get(), 0, "unmounted under a live user");
        // The other user dies (or leaves): the last one out unmounts.
        let out = release_with(TRACEFS, d.path(), 1, um, || mounted.borrow().clone());
        assert_eq!(umounts.get(), 1);
        assert_eq!(out, vec![format!("unmounted {}", at.display())]);
        assert!(!d.path().join(TRACEFS.state()).exists());
        assert_eq!(calls.get(), 1);
        // A tracefs someone else mounted: used, no lease, never unmounted.
        let (root, lease) = acquire(
            d.path(),
            &at,
            |_| panic!("mounted again"),
            || Some(PathBuf::from("/elsewhere")),
        )
        .unwrap();
        assert_eq!(root, PathBuf::from("/elsewhere"));
        assert!(lease.is_none());
    }

    #[test]
    fn dead_users_are_pruned_and_a_failed_mount_is_exit_3() {
        let d = tempfile::tempdir().unwrap();
        let at = d.path().join("mnt");
        write_state(
            &d.path().join(TRACEFS.state()),
            &MountState {
                mount: at.clone(),
                users: vec![999_999_999],
            },
        )
        .unwrap();
        // Still mounted by a dead run: the next run takes over its share.
        let (_, lease) =
            acquire(d.path(), &at, |_| panic!("mounted"), || Some(at.clone())).unwrap();
        assert!(lease.is_some());
        let s = read_state(&d.path().join(TRACEFS.state())).unwrap();
        assert_eq!(s.users, vec![std::process::id()]);
        let e = acquire(
            &d.path().join("other"),
            &at,
            |_| Err(std::io::Error::from_raw_os_error(libc::EPERM)),
            || None,
        )
        .unwrap_err();
        assert_eq!(e.exit_code(), 3);
        assert!(e.to_string().contains("mounting it on"), "{e}");
    }
}
