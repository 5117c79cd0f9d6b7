//! SysV semaphore sets (svsematest's wake-up), which outlive the process that made them: a
//! latlab killed with SIGKILL (or ended by a second Ctrl-C) would leave its set in the kernel.
//! Each set latlab makes has a key naming latlab and its process, and a record file in latlab's
//! state directory; a later run or `latlab restore` removes a set only when both say it was a
//! latlab's whose process is gone, so no other program's set is ever touched.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// A SysV semaphore set, removed when dropped.
pub struct SysvSem {
    id: libc::c_int,
    record: Option<PathBuf>,
}

/// The top byte of latlab's SysV keys; the low 24 bits are the creator's process id.
const SYSV_MARK: u32 = 0xB7 << 24;
const SYSV_PID_BITS: u32 = 0x00FF_FFFF;

/// Sets this process made and has not removed yet (for [`remove_live_sets`]).
static LIVE: Mutex<Vec<libc::c_int>> = Mutex::new(Vec::new());

fn sysv_key(pid: i32) -> libc::key_t {
    (SYSV_MARK | (pid as u32 & SYSV_PID_BITS)) as libc::key_t
}

fn record_name(pid: i32, id: libc::c_int) -> String {
    format!("sysv-sem-{pid}-{id}")
}

impl SysvSem {
    /// A set of `n` semaphores, each 0. With `registry` (latlab's state directory), sets that
    /// killed latlabs left there are removed first, and this one is recorded there.
    pub fn new(n: i32, registry: Option<&Path>) -> io::Result<SysvSem> {
        if let Some(d) = registry {
            sweep_orphan_sets(d);
        }
        let flags = libc::IPC_CREAT | libc::IPC_EXCL | 0o600;
        // SAFETY: getpid has no preconditions.
        let pid = unsafe { libc::getpid() };
        // SAFETY: plain syscall.
        let (id, keyed) = match unsafe { libc::semget(sysv_key(pid), n, flags) } {
            // This process has one already (two at once): the second is anonymous and unrecorded.
            -1 if io::Error::last_os_error().raw_os_error() == Some(libc::EEXIST) => {
                // SAFETY: plain syscall.
                let r = unsafe { libc::semget(libc::IPC_PRIVATE, n, flags) };
                if r < 0 {
                    return Err(io::Error::last_os_error());
                }
                (r, false)
            }
            -1 => return Err(io::Error::last_os_error()),
            r => (r, true),
        };
        if let Ok(mut l) = LIVE.lock() {
            l.push(id);
        }
        let record = registry
            .filter(|_| keyed)
            .and_then(|d| write_record(d, pid, id));
        Ok(SysvSem { id, record })
    }

    fn op(&self, num: u16, delta: i16) -> bool {
        let mut b = libc::sembuf {
            sem_num: num,
            sem_op: delta,
            sem_flg: 0,
        };
        loop {
            // SAFETY: one valid sembuf on our set.
            if unsafe { libc::semop(self.id, &mut b, 1) } == 0 {
                return true;
            }
            if io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
                return false;
            }
        }
    }

    /// Adds one to semaphore `num`.
    #[inline]
    pub fn post(&self, num: u16) -> bool {
        self.op(num, 1)
    }

    /// Takes one from semaphore `num`, blocking while it is 0.
    #[inline]
    pub fn wait(&self, num: u16) -> bool {
        self.op(num, -1)
    }
}

impl Drop for SysvSem {
    fn drop(&mut self) {
        // SAFETY: removing our own set.
        unsafe { libc::semctl(self.id, 0, libc::IPC_RMID) };
        if let Ok(mut l) = LIVE.lock() {
            l.retain(|&i| i != self.id);
        }
        if let Some(p) = &self.record {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// Removes every set this process still holds: for a process about to end at once (a second
/// Ctrl-C), whose destructors will not run. Their record files go with the next sweep.
pub fn remove_live_sets() {
    if let Ok(l) = LIVE.lock() {
        for &id in l.iter() {
            // SAFETY: removing our own set.
            unsafe { libc::semctl(id, 0, libc::IPC_RMID) };
        }
    }
}

/// Records set `id` of process `pid` in `dir`, with the process's start time; None when it
/// cannot (then the set is simply not swept later).
fn write_record(dir: &Path, pid: i32, id: libc::c_int) -> Option<PathBuf> {
    use std::io::Write;
    std::fs::create_dir_all(dir).ok()?;
    let p = dir.join(record_name(pid, id));
    // A new file only: never through a link or over something planted there.
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&p)
        .ok()?;
    f.write_all(start_time(pid).unwrap_or_default().as_bytes())
        .ok()?;
    Some(p)
}

/// When process `pid` started (field 22 of /proc/PID/stat, clock ticks since boot): a process
/// id and its start time name one process, however ids are reused or the binary is named.
/// None for a process that is gone or a zombie.
fn start_time(pid: i32) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let mut f = stat[stat.rfind(')')? + 1..].split_whitespace();
    // A zombie has ended: it holds nothing any more.
    if f.next()? == "Z" {
        return None;
    }
    f.nth(18).map(str::to_string)
}

/// Whether a process still uses set `id`: the last process to operate on one of its
/// semaphores exists (the kernel gives its id in our own PID namespace).
fn in_use(id: libc::c_int) -> bool {
    (0..2).any(|num| {
        // SAFETY: plain syscall; GETPID takes no argument.
        let pid = unsafe { libc::semctl(id, num, libc::GETPID) };
        pid > 0 && start_time(pid).is_some()
    })
}

/// The key of set `id`, when it exists.
fn key_of(id: libc::c_int) -> Option<u32> {
    let text = std::fs::read_to_string("/proc/sysvipc/sem").ok()?;
    text.lines().skip(1).find_map(|l| {
        let mut f = l.split_whitespace();
        let key = f.next()?.parse::<i64>().ok()?;
        (f.next()?.parse::<libc::c_int>().ok()? == id).then_some(key as u32)
    })
}

/// SysV semaphore sets of dead latlab processes (`ipc`), for `latlab restore`.
pub const RESTORER: crate::io::Restorer = crate::io::Restorer {
    name: "SysV semaphore sets",
    run: |dir| Ok(sweep_orphan_sets(dir)),
};

/// Removes the sets recorded in `registry` whose latlab is gone (no process with the recorded
/// id and start time, and none left that operated on the set), if the set still carries that
/// latlab's key; returns what was done, in words. Only plain files count as records; a record
/// goes once its set is gone, and stays when the set could not be removed.
pub(crate) fn sweep_orphan_sets(registry: &Path) -> Vec<String> {
    let mut said = Vec::new();
    let Ok(dir) = std::fs::read_dir(registry) else {
        return said;
    };
    for e in dir.flatten() {
        if !e.file_type().is_ok_and(|t| t.is_file()) {
            continue;
        }
        let name = e.file_name().to_string_lossy().into_owned();
        let Some((pid, id)) = name
            .strip_prefix("sysv-sem-")
            .and_then(|r| r.split_once('-'))
            .and_then(|(p, i)| Some((p.parse::<i32>().ok()?, i.parse::<libc::c_int>().ok()?)))
        else {
            continue;
        };
        let recorded = std::fs::read_to_string(e.path()).unwrap_or_default();
        // An empty record is one being written: its process, if it exists, is the latlab.
        let alive = match recorded.trim() {
            "" => start_time(pid).is_some(),
            t => start_time(pid).as_deref() == Some(t),
        };
        if key_of(id) == Some(sysv_key(pid) as u32) {
            if alive || in_use(id) {
                continue;
            }
            // SAFETY: removing a set latlab made and recorded, whose process is gone.
            if unsafe { libc::semctl(id, 0, libc::IPC_RMID) } != 0 {
                said.push(format!(
                    "SysV semaphore set {id} left by latlab process {pid}: could not remove it \
                     ({}); run `latlab restore` as its owner",
                    io::Error::last_os_error()
                ));
                continue;
            }
            said.push(format!(
                "removed SysV semaphore set {id} left by latlab process {pid}"
            ));
        } else if alive {
            // Its set is not there yet or under another key: leave a live latlab's record.
            continue;
        }
        let _ = std::fs::remove_file(e.path());
    }
    said
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exists(id: libc::c_int) -> bool {
        key_of(id).is_some()
    }

    #[test]
    fn sets_pass_tokens_and_two_at_once_work() {
        let d = tempfile::tempdir().unwrap();
        let v = SysvSem::new(2, Some(d.path())).unwrap();
        assert!(v.post(1) && v.wait(1));
        let w = SysvSem::new(2, Some(d.path())).unwrap();
        assert!(w.post(0) && w.wait(0));
        let (vi, wi) = (v.id, w.id);
        drop((v, w));
        assert!(!exists(vi) && !exists(wi));
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 0);
    }

    #[test]
    fn only_recorded_sets_of_gone_latlabs_are_swept() {
        let d = tempfile::tempdir().unwrap();
        // A set as a killed latlab would have left it: its key and its record, for a process
        // id no process has.
        let dead = 0x00FF_FFF0;
        // SAFETY: plain syscalls on sets this test makes.
        let orphan = unsafe { libc::semget(sysv_key(dead), 2, libc::IPC_CREAT | 0o600) };
        assert!(orphan >= 0, "{}", io::Error::last_os_error());
        std::fs::write(d.path().join(record_name(dead, orphan)), b"").unwrap();
        // Another program's set with a key in latlab's range, but no record: never touched.
        // SAFETY: as above.
        let foreign = unsafe { libc::semget(sysv_key(dead - 1), 2, libc::IPC_CREAT | 0o600) };
        assert!(foreign >= 0, "{}", io::Error::last_os_error());
        // A record whose id now belongs to a set with another key: the record goes, the set
        // stays.
        std::fs::write(d.path().join(record_name(dead - 2, foreign)), b"").unwrap();
        let live = SysvSem::new(2, Some(d.path())).unwrap();
        assert!(!exists(orphan), "the orphan set {orphan} is still there");
        assert!(exists(foreign), "a set latlab did not record was removed");
        assert!(exists(live.id), "latlab's own live set was removed");
        let left: Vec<String> = std::fs::read_dir(d.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        // Only this live set's record may be left (none when a concurrent test held the key).
        assert!(
            left.iter()
                .all(|n| *n == record_name(std::process::id() as i32, live.id)),
            "{left:?}"
        );
        // SAFETY: removing the test's own set.
        unsafe { libc::semctl(foreign, 0, libc::IPC_RMID) };
    }

    #[test]
    fn records_never_follow_links_and_live_owners_are_kept() {
        let d = tempfile::tempdir().unwrap();
        let me = std::process::id() as i32;
        // A record for a live process (this one, whatever its name), with its start time.
        // SAFETY: plain syscalls on sets this test makes.
        let live = unsafe { libc::semget(libc::IPC_PRIVATE, 2, libc::IPC_CREAT | 0o600) };
        assert!(live >= 0);
        std::fs::write(
            d.path().join(record_name(me, live)),
            start_time(me).unwrap(),
        )
        .unwrap();
        // Links and directories named like records are not records.
        let victim = d.path().join("victim");
        std::fs::write(&victim, b"precious").unwrap();
        std::os::unix::fs::symlink(&victim, d.path().join(record_name(1, 1))).unwrap();
        std::fs::create_dir(d.path().join(record_name(0x00FF_FFF1, live))).unwrap();
        sweep_orphan_sets(d.path());
        assert!(exists(live), "a live process's set was removed");
        assert!(d.path().join(record_name(me, live)).exists());
        assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
        assert!(d.path().join(record_name(0x00FF_FFF1, live)).is_dir());
        // SAFETY: removing the test's own set.
        unsafe { libc::semctl(live, 0, libc::IPC_RMID) };
    }

    #[test]
    fn a_record_is_never_written_through_a_planted_link() {
        let d = tempfile::tempdir().unwrap();
        let victim = d.path().join("victim");
        std::fs::write(&victim, b"precious").unwrap();
        let me = std::process::id() as i32;
        std::os::unix::fs::symlink(&victim, d.path().join(record_name(me, 7))).unwrap();
        assert_eq!(write_record(d.path(), me, 7), None);
        assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
        let p = write_record(d.path(), me, 8).unwrap();
        assert_eq!(std::fs::read_to_string(p).unwrap(), start_time(me).unwrap());
    }
}
