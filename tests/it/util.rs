//! Helpers shared by the integration tests: the binary, capability checks, stall injection.

use std::process::Command;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// A `Command` for the latlab binary under test, storing into a scratch store and journaling
/// into a scratch journal (never the user's own).
pub fn latlab() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_latlab"));
    c.env("LATLAB_STORE", test_store());
    c.env("LATLAB_JOURNAL", scratch().join("restore.json"));
    c
}

/// This test process's scratch directory, inside cargo's target directory (never /tmp), removed
/// when the process exits.
pub fn scratch() -> std::path::PathBuf {
    static DIR: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let d = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("it-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        extern "C" fn clean() {
            let d = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
                .join(format!("it-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(d);
        }
        // SAFETY: registering a plain extern "C" function to run at exit.
        unsafe { libc::atexit(clean) };
        d
    })
    .clone()
}

/// The scratch store of this test process.
pub fn test_store() -> String {
    format!("sqlite:{}", scratch().join("store.db").display())
}

/// Serialises tests that inject stalls, so one test's stall is not another's surprise.
pub fn exclusive() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|p| p.into_inner())
}

/// Why a real-time test cannot run here, if it cannot (not root, or fewer than 2 CPUs).
pub fn rt_unavailable() -> Option<String> {
    // SAFETY: no arguments.
    if unsafe { libc::geteuid() } != 0 {
        return Some("not root: SCHED_FIFO stall injection needs root".into());
    }
    let n = std::thread::available_parallelism().map_or(1, |n| n.get());
    if n < 2 {
        return Some(format!("{n} CPU available; the test needs 2"));
    }
    None
}

/// Says why a test is skipped. Under `LATLAB_NO_SKIP=1` (set by scripts/test.sh, where every
/// prerequisite is installed) a skip fails the test instead: a skipped test never looks like a
/// pass there.
pub fn skip(test: &str, why: &str) {
    if std::env::var_os("LATLAB_NO_SKIP").is_some_and(|v| v == "1") {
        panic!("{test} could not run ({why}) and LATLAB_NO_SKIP=1 forbids skipping");
    }
    eprintln!("SKIPPED {test}: {why}");
}

/// True once process `pid` has a thread named `name` (threads are named `latlab-<series>`).
pub fn has_thread(pid: u32, name: &str) -> bool {
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return false;
    };
    dir.flatten()
        .any(|t| std::fs::read_to_string(t.path().join("comm")).is_ok_and(|c| c.trim() == name))
}

/// Starts a thread that pins itself to `cpu` and becomes SCHED_FIFO `prio` at once (before any
/// spinner can hold the CPUs), waits until latlab process `pid` has its thread `thread`, then
/// after `after` busy-waits for `busy`, starving anything of lower priority on `cpu`.
pub fn stall_when_running(
    pid: u32,
    thread: &'static str,
    cpu: usize,
    prio: i32,
    after: Duration,
    busy: Duration,
) -> std::thread::JoinHandle<()> {
    stall_repeatedly(pid, thread, cpu, prio, after, busy, 1)
}

/// As `stall_when_running`, stalling `times` times one second apart (for a run that must see at
/// least one stall even if it started late on a busy machine).
pub fn stall_repeatedly(
    pid: u32,
    thread: &'static str,
    cpu: usize,
    prio: i32,
    after: Duration,
    busy: Duration,
    times: usize,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        // SAFETY: plain libc calls on the calling thread with valid arguments.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(cpu, &mut set);
            assert_eq!(
                libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set),
                0
            );
        }
        let p = libc::sched_param {
            sched_priority: prio,
        };
        // SAFETY: as above.
        let r = unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &p) };
        assert_eq!(r, 0, "could not become SCHED_FIFO {prio}");
        let t0 = Instant::now();
        while !has_thread(pid, thread) {
            assert!(
                t0.elapsed() < Duration::from_secs(30),
                "latlab never started {thread}"
            );
            std::thread::sleep(Duration::from_millis(2));
        }
        std::thread::sleep(after);
        for k in 0..times {
            if k > 0 {
                std::thread::sleep(Duration::from_secs(1));
            }
            let t0 = Instant::now();
            while t0.elapsed() < busy {
                std::hint::spin_loop();
            }
        }
        let p = libc::sched_param { sched_priority: 0 };
        // SAFETY: as above.
        unsafe { libc::sched_setscheduler(0, libc::SCHED_OTHER, &p) };
    })
}

/// Parses a JSON file.
pub fn read_json(path: &std::path::Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Runs latlab with `cmd` then `args`; asserts the exit code, that stderr names `want`, and
/// that nothing panicked.
pub fn expect_exit(cmd: &[&str], args: &[&str], code: i32, want: &str) {
    let out = latlab().args(cmd).args(args).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(code), "{cmd:?} {args:?}: {err}");
    assert!(
        err.contains(want),
        "{cmd:?} {args:?}: stderr does not name {want}: {err}"
    );
    assert!(!err.contains("panicked"), "{cmd:?} {args:?}: {err}");
}

/// Processes whose environment carries `LATLAB_TEST_TAG=tag` (every descendant of a latlab
/// started with that variable), as "pid: command line".
pub fn tagged(tag: &str) -> Vec<String> {
    let needle = format!("LATLAB_TEST_TAG={tag}");
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        if !name.chars().all(|c| c.is_ascii_digit()) {
            continue;
        }
        if let Ok(env) = std::fs::read(e.path().join("environ")) {
            if env.split(|&b| b == 0).any(|kv| kv == needle.as_bytes()) {
                let cmd = std::fs::read_to_string(e.path().join("cmdline"))
                    .unwrap_or_default()
                    .replace('\0', " ");
                found.push(format!("{name}: {cmd}"));
            }
        }
    }
    found
}

/// Waits (ten seconds at most) until no process tagged `tag` is left; fails naming the
/// orphans.
pub fn none_left(tag: &str) {
    let t0 = Instant::now();
    loop {
        let left = tagged(tag);
        if left.is_empty() {
            return;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "orphans left behind: {left:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Spawning with both output streams captured.
pub trait SpawnPiped {
    /// Spawns with stdout and stderr piped (panics if the binary cannot start).
    fn spawn_piped(&mut self) -> std::process::Child;
}

impl SpawnPiped for Command {
    fn spawn_piped(&mut self) -> std::process::Child {
        self.stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    }
}

/// Asserts the exit code, showing stderr when it differs.
pub fn assert_exit(out: &std::process::Output, code: i32) {
    assert_eq!(
        out.status.code(),
        Some(code),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Waits for `child` to end; if it is still running after `limit`, kills it and fails the test
/// with `what` (a hang fails instead of holding the suite).
pub fn wait_bounded(child: &mut std::process::Child, limit: std::time::Duration, what: &str) {
    let t0 = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t0.elapsed() > limit {
            let _ = child.kill();
            panic!("{what}");
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// CLOCK_MONOTONIC now, in ns (the trace clock latlab records spikes in).
pub fn mono_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}
