//! Waiting for a SQLite store another process holds locked, out loud: SQLite's own busy
//! timeout waits in silence, so a `runs list` behind a long transaction looked hung.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long one statement waits for a lock before the store reports itself busy.
pub(crate) const WAIT: Duration = Duration::from_secs(30);
/// A wait longer than this is said on stderr (once per process).
pub(crate) const SAY_AFTER: Duration = Duration::from_secs(2);

/// Set by a caller that says its own waits (the measurement driver watches the store from
/// another thread and words them for a run in hand); the handler then waits silently.
static QUIET: AtomicBool = AtomicBool::new(false);
static SAID: AtomicBool = AtomicBool::new(false);
/// The store last opened, for the message (a process has one store open at a time).
static NAME: Mutex<String> = Mutex::new(String::new());

thread_local! {
    static SINCE: Cell<Option<Instant>> = const { Cell::new(None) };
}

/// Leaves saying waits to the caller (see `QUIET`).
pub fn say_waits_elsewhere() {
    QUIET.store(true, Ordering::Relaxed);
}

/// Installs the handler on `conn`, naming the store `name` in the message.
pub(crate) fn install(conn: &mut rusqlite::Connection, name: &str) -> rusqlite::Result<()> {
    if let Ok(mut n) = NAME.lock() {
        *n = name.to_string();
    }
    conn.busy_handler(Some(handler))
}

/// SQLite calls this with the number of times it has already been called for the same lock;
/// true retries, false gives up (the statement fails as busy).
fn handler(count: i32) -> bool {
    let now = Instant::now();
    let since = SINCE.with(|s| {
        if count == 0 || s.get().is_none() {
            s.set(Some(now));
        }
        s.get().unwrap_or(now)
    });
    let waited = now.duration_since(since);
    if waited >= WAIT {
        return false;
    }
    if waited >= SAY_AFTER && !QUIET.load(Ordering::Relaxed) && !SAID.swap(true, Ordering::Relaxed)
    {
        let name = NAME.lock().map(|n| n.clone()).unwrap_or_default();
        crate::note!(
            "latlab: waiting for the store {name}: another process holds it locked (up to {} s)",
            WAIT.as_secs()
        );
    }
    std::thread::sleep(pause(count));
    true
}

/// SQLite's own back-off (1, 2, 5 … ms), capped at 50 ms so a released lock is taken soon.
fn pause(count: i32) -> Duration {
    const STEPS: [u64; 10] = [1, 2, 5, 10, 15, 20, 25, 25, 25, 50];
    let i = usize::try_from(count).unwrap_or(0).min(STEPS.len() - 1);
    Duration::from_millis(STEPS[i])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_back_off_grows_then_stays_at_its_cap() {
        assert_eq!(pause(0), Duration::from_millis(1));
        assert_eq!(pause(-3), Duration::from_millis(1));
        assert_eq!(pause(4), Duration::from_millis(15));
        assert_eq!(pause(1_000_000), Duration::from_millis(50));
    }

    #[test]
    fn a_wait_past_its_limit_gives_up() {
        // A wait that began WAIT ago: the next call reports the store busy.
        SINCE.with(|s| s.set(Some(Instant::now() - WAIT)));
        say_waits_elsewhere();
        assert!(!handler(7));
        // A fresh lock (count 0) starts a fresh wait.
        assert!(handler(0));
    }
}
