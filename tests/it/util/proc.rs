//! What the tests read about running processes from /proc: threads, signal handlers, the
//! processes a run started (tagged through their environment).

use std::time::{Duration, Instant};

/// True once process `pid` has a thread named `name` (threads are named `latlab-<series>`).
pub fn has_thread(pid: u32, name: &str) -> bool {
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return false;
    };
    dir.flatten()
        .any(|t| std::fs::read_to_string(t.path().join("comm")).is_ok_and(|c| c.trim() == name))
}

/// Whether process `pid` has a handler for `sig` (SigCgt of /proc/PID/status).
pub fn handles(pid: u32, sig: i32) -> bool {
    signal_mask(pid, "SigCgt:").is_some_and(|m| m & (1 << (sig - 1)) != 0)
}

/// Whether process `pid`'s main thread blocks (holds pending) signal `sig`.
pub fn blocks(pid: u32, sig: i32) -> bool {
    signal_mask(pid, "SigBlk:").is_some_and(|m| m & (1 << (sig - 1)) != 0)
}

fn signal_mask(pid: u32, field: &str) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    s.lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|m| u64::from_str_radix(m.trim(), 16).ok())
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

/// How many processes have `marker` in their command line (zombies have none).
pub fn processes_matching(marker: &str) -> usize {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .bytes()
                .all(|b| b.is_ascii_digit())
        })
        .filter(|e| {
            std::fs::read(e.path().join("cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains(marker))
        })
        .count()
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

/// Polls `done` until it holds; fails naming `what` after `limit`.
pub fn wait_until(what: &str, limit: Duration, done: impl Fn() -> bool) {
    let t0 = Instant::now();
    while !done() {
        assert!(t0.elapsed() < limit, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}
