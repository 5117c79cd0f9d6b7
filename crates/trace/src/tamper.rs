//! Notices another process turning tracing off in latlab's own instance while it traces
//! (`trace-cmd reset -a`, a write to its `tracing_on` or to an event's `enable`, the instance
//! removed): the spikes after that have no events, and must not be explained by their absence
//! ("nothing visible ran") or charged to whatever ran last.

use super::files::Reach;
use std::path::PathBuf;

/// How often the instance's switches are read (ns): a dozen small reads, on the tracer's
/// thread, never on a measured CPU.
const CHECK_EVERY_NS: u64 = 250_000_000;

/// What a spike's attribution says when tracing was off around it.
pub(crate) const UNTRACED: &str =
    "not traced: tracing in latlab's instance was turned off by another \
                            process (trace-cmd reset?) before this wake-up";

/// The instance's switches and when they were last seen on.
#[derive(Debug)]
pub(crate) struct Guard {
    /// The instance, reached through its descriptor (a detached mount is not tampering).
    reach: Reach,
    /// `tracing_on` and each enabled event's `enable`, through the descriptor.
    files: Vec<PathBuf>,
    /// CLOCK_MONOTONIC of the last check that found everything on (ns).
    last_on_ns: u64,
    /// The last check (ns).
    checked_ns: u64,
    /// The first check that found a switch off: (when, which file and what it read).
    off: Option<(u64, String)>,
    /// When watching began (ns), for the warning's times.
    start_ns: u64,
    /// Whether [`Guard::news`] has given the warning.
    said: bool,
}

impl Guard {
    /// Watches `instance` with `events` (`sched/sched_switch`, ...) enabled, on from `now_ns`.
    pub(crate) fn new(instance: &Reach, events: &[String], now_ns: u64) -> Guard {
        let mut files = vec![instance.at("tracing_on")];
        files.extend(
            events
                .iter()
                .map(|e| instance.at("events").join(e).join("enable")),
        );
        Guard {
            reach: instance.clone(),
            files,
            last_on_ns: now_ns,
            checked_ns: now_ns,
            off: None,
            start_ns: now_ns,
            said: false,
        }
    }

    /// Watches nothing: the in-kernel recorder has no switch another process can turn off
    /// (its programs are attached through latlab's own descriptors).
    pub(crate) fn idle(now_ns: u64) -> Guard {
        Guard {
            reach: super::files::Reach::new(std::path::PathBuf::from("/")),
            files: Vec::new(),
            last_on_ns: now_ns,
            checked_ns: now_ns,
            off: None,
            start_ns: now_ns,
            said: false,
        }
    }

    /// Reads the switches at `now_ns` unless they were read in the last quarter second (or
    /// were already found off: once off, the rest of the run is untraced).
    pub(crate) fn tick(&mut self, now_ns: u64) {
        if now_ns < self.checked_ns.saturating_add(CHECK_EVERY_NS) {
            return;
        }
        self.check(now_ns);
    }

    /// Reads the switches now (before latlab turns tracing off itself).
    pub(crate) fn check(&mut self, now_ns: u64) {
        if self.off.is_some() {
            return;
        }
        self.checked_ns = now_ns;
        for f in &self.files {
            let what = match std::fs::read(f) {
                // An event's `enable` reads `1`, or `X` (some on) / `0` for a directory of
                // several; `tracing_on` reads 0 or 1.
                Ok(v) if v.first() == Some(&b'1') => continue,
                Ok(v) => format!("reads {:?}", String::from_utf8_lossy(&v).trim()),
                Err(e) => format!("cannot be read ({e})"),
            };
            let shown = self.reach.shown(f);
            self.off = Some((now_ns, format!("{} {what}", shown.display())));
            return;
        }
        self.last_on_ns = now_ns;
    }

    /// From when (CLOCK_MONOTONIC ns) events may be missing: the last check that found every
    /// switch on, once one was found off.
    pub(crate) fn untraced_after(&self) -> Option<u64> {
        self.off.as_ref().map(|_| self.last_on_ns)
    }

    /// Seconds from the start of the watch after which events may be missing, once a switch
    /// was found off.
    pub(crate) fn untraced_after_s(&self) -> Option<f64> {
        self.untraced_after()
            .map(|t| t.saturating_sub(self.start_ns) as f64 / 1e9)
    }

    /// The warning, once, the first time it is asked for after a switch was found off (a
    /// session that never ends says it in the interval it happened).
    pub(crate) fn news(&mut self) -> Option<String> {
        if self.said {
            return None;
        }
        let w = self.warning()?;
        self.said = true;
        Some(w)
    }

    /// The warning for the run's report, with times from the start of the watch.
    pub(crate) fn warning(&self) -> Option<String> {
        let (seen, which) = self.off.as_ref()?;
        let s = |t: u64| t.saturating_sub(self.start_ns) as f64 / 1e9;
        Some(format!(
            "{}: tracing in latlab's instance was turned off by another process between \
             {:.2} s and {:.2} s into the trace ({which}; `trace-cmd reset` does this): its \
             events from then on are missing, so the spikes after that are not explained (nor \
             blamed on the host), and what is measured from the trace (`latlab sched`) misses \
             that time",
            crate::who(),
            s(self.last_on_ns),
            s(*seen)
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_switch_turned_off_is_seen_at_the_next_check_and_dates_the_gap() {
        let d = tempfile::tempdir().unwrap();
        let ev = d.path().join("events/sched/sched_switch");
        std::fs::create_dir_all(&ev).unwrap();
        std::fs::write(d.path().join("tracing_on"), "1\n").unwrap();
        std::fs::write(ev.join("enable"), "1\n").unwrap();
        let r = Reach::new(d.path().to_path_buf());
        let mut g = Guard::new(&r, &["sched/sched_switch".into()], 1_000);
        g.tick(1_000 + CHECK_EVERY_NS);
        assert_eq!(g.untraced_after(), None);
        // Turned off: not read again before a quarter second passed...
        std::fs::write(ev.join("enable"), "0\n").unwrap();
        g.tick(1_000 + CHECK_EVERY_NS + 1);
        assert_eq!(g.untraced_after(), None);
        // ...then seen, dated from the last check that found it on.
        g.tick(1_000 + 2 * CHECK_EVERY_NS);
        assert_eq!(g.untraced_after(), Some(1_000 + CHECK_EVERY_NS));
        let w = g.warning().unwrap();
        assert!(w.contains("between 0.25 s and 0.50 s"), "{w}");
        assert!(w.contains("sched_switch/enable reads \"0\""), "{w}");
        // Named as mounted, not through the descriptor latlab reads it by.
        assert!(w.contains(&d.path().display().to_string()), "{w}");
        // Turned back on: the gap stays (events were lost).
        std::fs::write(ev.join("enable"), "1\n").unwrap();
        g.check(1_000 + 3 * CHECK_EVERY_NS);
        assert_eq!(g.untraced_after(), Some(1_000 + CHECK_EVERY_NS));
    }

    #[test]
    fn a_removed_instance_is_untraced_too() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("tracing_on"), "1").unwrap();
        let r = Reach::new(d.path().to_path_buf());
        let mut g = Guard::new(&r, &[], 0);
        g.check(5);
        assert_eq!(g.untraced_after(), None);
        std::fs::remove_file(d.path().join("tracing_on")).unwrap();
        g.check(9);
        assert_eq!(g.untraced_after(), Some(5));
        assert!(g.warning().unwrap().contains("cannot be read"));
    }
}
