//! Fixed windows aligned to the wall clock (`--window`, 10 s by default), closed by the monitor
//! itself, so every scraper at any interval reads the same maximum and the same count over
//! threshold for the same window: a GET reads, it never resets. The control thread closes a
//! window at each boundary (a multiple of the window length since the Unix epoch, so monitors on
//! NTP-synchronised hosts share boundaries); the measuring threads only keep feeding their
//! tally's running maximum.

use super::tally::Tally;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

/// The figures of the last closed window.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Closed {
    /// Unix time the window ended (ns); 0 while none has closed yet.
    pub(crate) end_unix_ns: u64,
    /// Per CPU (in the order of the monitor's CPUs): largest latency (ns) and wake-ups over the
    /// threshold in the window.
    pub(crate) per_cpu: Vec<(u64, u64)>,
}

/// The window clock: what the control thread closes and the endpoint reads.
#[derive(Debug)]
pub struct Windows {
    /// Window length (ns).
    pub(crate) len_ns: u64,
    /// End of the open window (Unix ns).
    open_end_ns: Mutex<u64>,
    /// Each CPU's cumulative count over threshold when the open window began.
    marks: Mutex<Vec<u64>>,
    /// The last closed window.
    closed: Mutex<Closed>,
}

/// Unix time now (ns).
pub(crate) fn unix_now_ns() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// The first boundary strictly after `t` (Unix ns).
fn next_boundary(t: u64, len: u64) -> u64 {
    (t / len + 1) * len
}

impl Windows {
    /// A clock of `len_ns` windows whose first (partial) window is open at `now_unix_ns`.
    pub fn new(len_ns: u64, tallies: &[Arc<Tally>], now_unix_ns: u64) -> Windows {
        Windows {
            len_ns,
            open_end_ns: Mutex::new(next_boundary(now_unix_ns, len_ns)),
            marks: Mutex::new(tallies.iter().map(|t| t.exceeded.load(Relaxed)).collect()),
            closed: Mutex::new(Closed::default()),
        }
    }

    /// Closes the open window when `now_unix_ns` has passed its end (the control thread calls
    /// this often); windows the caller slept through merge into the one it closes. Returns
    /// whether a window closed.
    pub(crate) fn tick(&self, tallies: &[Arc<Tally>], now_unix_ns: u64) -> bool {
        let Ok(mut end) = self.open_end_ns.lock() else {
            return false;
        };
        if now_unix_ns < *end {
            return false;
        }
        let Ok(mut marks) = self.marks.lock() else {
            return false;
        };
        let per_cpu = tallies
            .iter()
            .zip(marks.iter_mut())
            .map(|(t, mark)| {
                let now = t.exceeded.load(Relaxed);
                let n = now.wrapping_sub(*mark);
                *mark = now;
                (t.take_window_max(), n)
            })
            .collect();
        let closed_end = now_unix_ns / self.len_ns * self.len_ns;
        if let Ok(mut c) = self.closed.lock() {
            *c = Closed {
                end_unix_ns: closed_end,
                per_cpu,
            };
        }
        *end = next_boundary(now_unix_ns, self.len_ns);
        true
    }

    /// How long until the open window ends (at least 1 ms, so a caller never spins).
    pub(crate) fn until_close(&self, now_unix_ns: u64) -> Duration {
        let end = self.open_end_ns.lock().map_or(now_unix_ns, |e| *e);
        Duration::from_nanos(end.saturating_sub(now_unix_ns).max(1_000_000))
    }

    /// The last closed window.
    pub(crate) fn closed(&self) -> Closed {
        self.closed.lock().map(|c| c.clone()).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_close_on_aligned_boundaries_and_reads_never_reset() {
        let s = 1_000_000_000u64;
        let t: Vec<Arc<Tally>> = (0..2).map(|_| Arc::new(Tally::new(50_000))).collect();
        let w = Windows::new(10 * s, &t, 1_003 * s);
        assert_eq!(w.until_close(1_003 * s), Duration::from_secs(7));
        t[0].observe(70_000, 1);
        t[1].observe(2_000, 1);
        assert!(!w.tick(&t, 1_009 * s));
        assert_eq!(w.closed().end_unix_ns, 0);
        assert!(w.tick(&t, 1_010 * s + 3));
        let c = w.closed();
        assert_eq!(c.end_unix_ns, 1_010 * s);
        assert_eq!(c.per_cpu, vec![(70_000, 1), (2_000, 0)]);
        // Reading twice gives the same window.
        assert_eq!(w.closed(), c);
        t[1].observe(90_000, 1);
        t[1].observe(60_000, 1);
        // A caller that slept through a boundary merges the windows into the one it closes.
        assert!(w.tick(&t, 1_031 * s));
        let c = w.closed();
        assert_eq!(c.end_unix_ns, 1_030 * s);
        assert_eq!(c.per_cpu, vec![(0, 0), (90_000, 2)]);
        assert_eq!(w.until_close(1_031 * s), Duration::from_secs(9));
    }
}
