//! The integration tests' harness (the shape of ripgrep's tests/util.rs): `Dir`, a scratch
//! directory with the files hostile tests need; `TestCommand`, the latlab binary with the
//! scratch store and journal, run with a bounded wait and exit-code assertions that show what
//! it wrote; `Running` for signal tests; stall injection; and `skip`, the one way a test that
//! cannot run here says so.

mod command;
mod dir;
mod proc;
mod stall;
mod tracefs;

pub use command::{latlab, Output, Running, TestCommand, LATLAB};
pub use dir::Dir;
pub use proc::{blocks, handles, has_thread, none_left, processes_matching, tagged, wait_until};
pub use stall::{exec_bursts, mono_ns, pin, stall, Injected};
pub use tracefs::{bpf_programs_of, instance_of, trace_test, tracefs_mounts, turn_tracing_off};

use std::sync::{Mutex, MutexGuard};

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

/// Held by a test that must have the machine to itself (see [`exclusive`]).
pub struct Exclusive {
    // Dropped in this order: the machine-wide lock, then this process's.
    _machine: Option<std::fs::File>,
    _process: MutexGuard<'static, ()>,
}

/// Serialises tests that trace, inject stalls or change system settings, so one test's stall
/// is not another's surprise: within this process, and across test processes on the machine
/// (two `cargo test` runs at once trace each other's workloads — both run threads named
/// `waiter` — and change the same settings), through an `flock` on a file in the temporary
/// directory (where that cannot be had, this process's lock alone).
pub fn exclusive() -> Exclusive {
    static LOCK: Mutex<()> = Mutex::new(());
    let process = LOCK.lock().unwrap_or_else(|p| p.into_inner());
    let machine = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(std::env::temp_dir().join("latlab-it-exclusive.lock"))
        .ok()
        .filter(|f| {
            use std::os::fd::AsRawFd;
            // SAFETY: flock on an open descriptor; blocks until no other process holds it.
            unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX) == 0 }
        });
    Exclusive {
        _machine: machine,
        _process: process,
    }
}

/// Why a real-time test cannot run here, if it cannot (not root, or fewer than 2 CPUs).
pub fn rt_unavailable() -> Option<String> {
    if !is_root() {
        return Some("not root: SCHED_FIFO stall injection needs root".into());
    }
    let n = std::thread::available_parallelism().map_or(1, |n| n.get());
    if n < 2 {
        return Some(format!("{n} CPU available; the test needs 2"));
    }
    None
}

/// Whether the tests run as root.
pub fn is_root() -> bool {
    // SAFETY: no arguments.
    unsafe { libc::geteuid() == 0 }
}

/// Says why a test is skipped. Under `LATLAB_NO_SKIP=1` (set by scripts/test.sh, where every
/// prerequisite is installed) a skip fails the test instead: a skipped test never looks like a
/// pass there. Every test that cannot run goes through here.
pub fn skip(test: &str, why: &str) {
    if std::env::var_os("LATLAB_NO_SKIP").is_some_and(|v| v == "1") {
        panic!("{test} could not run ({why}) and LATLAB_NO_SKIP=1 forbids skipping");
    }
    eprintln!("SKIPPED {test}: {why}");
}

/// The running test's name (the test harness names each test's thread after it).
pub fn test_name() -> String {
    std::thread::current()
        .name()
        .unwrap_or("this test")
        .to_string()
}

/// Skips the running test (through `skip`) when `why` says it cannot run; true if it did:
/// `if skipped(rt_unavailable()) { return; }`.
pub fn skipped(why: Option<String>) -> bool {
    match why {
        Some(why) => {
            skip(&test_name(), &why);
            true
        }
        None => false,
    }
}

/// For a test that runs real-time threads or injects stalls: the exclusive lock, or None
/// after saying (through `skip`) why it cannot run here.
pub fn rt_test() -> Option<Exclusive> {
    (!skipped(rt_unavailable())).then(exclusive)
}

/// Parses a JSON file.
pub fn read_json(path: &std::path::Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The names of a result's series, in order.
pub fn series_names(run: &serde_json::Value) -> Vec<&str> {
    run["series"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect()
}

/// Asserts that a result file latlab wrote reads back (a report of it is written beside it).
pub fn reads_back(json: &std::path::Path) {
    latlab()
        .arg("report")
        .arg(json)
        .arg("-o")
        .arg(json.with_extension("html"))
        .assert_ok();
}

/// Runs latlab with `cmd` then `args`; asserts the exit code, that stderr names `want`, and
/// that nothing panicked.
pub fn expect_exit(cmd: &[&str], args: &[&str], code: i32, want: &str) {
    latlab().args(cmd).args(args).assert_refused(code, want);
}

/// Whether `program` is on the PATH.
pub fn have(program: &str) -> bool {
    latlab_core::sys::process::command_exists(program)
}

/// The PostgreSQL store the tests may use (`LATLAB_TEST_PG`, which
/// `scripts/pg-test-server.sh start` sets), or None after saying (through `skip`) that there
/// is none.
pub fn pg_store() -> Option<String> {
    let pg = std::env::var("LATLAB_TEST_PG")
        .ok()
        .filter(|v| !v.is_empty());
    let why = "LATLAB_TEST_PG is not set (scripts/test.sh starts a server and sets it)";
    (!skipped(pg.is_none().then(|| why.to_string()))).then(|| pg.unwrap())
}

/// latlab run as `nobody` (`runuser -u nobody -- env VARS... BIN`, BIN a world-readable copy
/// of the binary in `dir`, which is opened to every user: the checkout itself may sit under a
/// directory `nobody` cannot enter, as a `mktemp -d` clone's 0700 does); the caller adds the
/// arguments. None after saying (through `skip`) why that cannot be done here.
pub fn latlab_as_nobody(dir: &Dir, vars: &[String]) -> Option<std::process::Command> {
    if !is_root() || !have("runuser") {
        skip(&test_name(), "needs root and runuser to drop to 'nobody'");
        return None;
    }
    use std::os::unix::fs::PermissionsExt;
    dir.open_to_all();
    let bin = dir.join("latlab");
    if !bin.exists() {
        std::fs::copy(LATLAB, &bin).unwrap();
        std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let mut c = std::process::Command::new("runuser");
    c.args(["-u", "nobody", "--", "env"]).args(vars).arg(bin);
    Some(c)
}

/// Runs another program (a peer tool the tests compare against or drive) to its end and
/// asserts it succeeded, showing the command and what it wrote on stderr when it did not.
pub fn run_tool(cmd: &mut std::process::Command) -> std::process::Output {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("{cmd:?}: cannot start: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?}: {}\n--- stdout\n{}\n--- stderr\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}
