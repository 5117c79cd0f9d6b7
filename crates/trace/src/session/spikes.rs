//! A spike's way through the session: attributed once the recorder has read past it (its
//! window saved when asked), and its culprits' groups named.

use super::*;
use crate::event::{Event, Kind};
use latlab_core::result::trace::Attribution;

impl Tracer {
    /// Whether a spike of `latency_ns` is kept as a record: every spike whose window a rule
    /// asked for is, others while they are among the worst `MAX_RECORDS` (see [`Worst`]).
    /// Records that fell to the floor are dropped when they reach twice the cap.
    pub(super) fn keep(&mut self, s: &RawSpike, latency_ns: u64) -> bool {
        if self.windowed(s) {
            return true;
        }
        if !self.worst.admit(latency_ns) {
            return false;
        }
        if self.report.spikes.len() + self.pending.len() >= 2 * MAX_RECORDS {
            self.cut();
        }
        true
    }

    /// `-b`: the spike that stopped the run, handed over by its thread when it ended (not
    /// through the ring, which may have been full). Its window is saved and it is a record,
    /// whether it was kept, dropped below the floor or never handed over.
    pub fn broke_on(&mut self, s: RawSpike) {
        let series = self
            .names
            .get(s.series as usize)
            .cloned()
            .unwrap_or_default();
        let rule = "-b".to_string();
        if self
            .report
            .spikes
            .iter()
            .any(|r| r.seq == s.seq && r.series == series)
        {
            // Attributed already: its window now.
            self.save_for(&s, &series, vec![rule]);
            return;
        }
        self.windows.push((s.series, s.seq, rule));
        if !self
            .pending
            .iter()
            .any(|p| p.series == s.series && p.seq == s.seq)
        {
            // At or above the threshold it was counted as dropped (a full ring, or below the
            // floor): a record after all. Below, it was never a spike to count.
            if latency(&s) >= self.report.threshold_ns {
                self.report.spikes_dropped = self.report.spikes_dropped.saturating_sub(1);
            }
            self.pending.push(s);
        }
    }

    /// Whether a rule asked for the window of `s` (still to be saved).
    fn windowed(&self, s: &RawSpike) -> bool {
        self.windows.iter().any(|w| w.0 == s.series && w.1 == s.seq)
    }

    /// Whether a rule saved the window of this record (it is kept whatever its latency).
    fn pinned(&self, series: &str, seq: u64) -> bool {
        self.pinned.iter().any(|(n, q)| *q == seq && n == series)
    }

    /// Drops the records (attributed and waiting) at or below the floor, but those rules
    /// saved windows of, with their timeline parts; counts them as dropped.
    pub(super) fn cut(&mut self) {
        let Some(floor) = self.worst.floor() else {
            return;
        };
        let before = self.report.spikes.len() + self.pending.len();
        let spikes = std::mem::take(&mut self.report.spikes);
        self.report.spikes = spikes
            .into_iter()
            .filter(|r| r.latency_ns > floor || self.pinned(&r.series, r.seq))
            .collect();
        let pending = std::mem::take(&mut self.pending);
        self.pending = pending
            .into_iter()
            .filter(|p| latency(p) > floor || self.windowed(p))
            .collect();
        if let Some((path, parts)) = self.save.take() {
            let parts = parts
                .into_iter()
                .filter(|t| t.latency > floor || self.pinned(&t.series, t.seq))
                .collect();
            self.save = Some((path, parts));
        }
        let after = self.report.spikes.len() + self.pending.len();
        self.report.spikes_dropped += (before - after) as u64;
    }

    /// The records were taken away (a monitor's interval): the worst of those left are the
    /// ones counted from now on.
    pub(super) fn records_taken(&mut self) {
        let left: Vec<u64> = self
            .report
            .spikes
            .iter()
            .filter(|r| !self.pinned(&r.series, r.seq))
            .map(|r| r.latency_ns)
            .chain(
                self.pending
                    .iter()
                    .filter(|p| !self.windowed(p))
                    .map(latency),
            )
            .collect();
        self.worst.reset(left);
        self.cut();
    }

    /// Attributes spike `s` from its CPU's window (waiting up to `patience` for the reader),
    /// checks what its trace could not see, and keeps it as a record.
    pub(super) fn attribute(&mut self, s: RawSpike, patience: Duration) {
        // Copied out only for `--trace-save`'s text; the buffer is reused from spike to spike.
        let mut events = std::mem::take(&mut self.scratch);
        events.clear();
        let mut why = self.explain(&s, patience, &mut events);
        self.check_unseen(&s, &mut why);
        // What /proc says of each task, read now, while it may still exist.
        for t in why.components.iter().filter_map(|c| c.task.as_ref()) {
            if !self.namer.settled(t.pid, self.rec.births(t.pid)) {
                self.namer.observe(t.pid, &self.rec.lineage(t.pid));
            }
        }
        self.record(&s, why, &events);
        self.scratch = events;
    }

    /// The attribution of `s` from the events of its window, with the NMIs traced in it;
    /// the window's events are copied into `events` when the timeline is saved.
    fn explain(&self, s: &RawSpike, patience: Duration, events: &mut Vec<Event>) -> Attribution {
        let cpu = s.cpu as usize;
        let tid = (s.tid > 0).then_some(s.tid);
        let note = Note {
            text: self.report.idle_note.clone(),
            spinner: self.spinner,
        };
        // Attributed where the events are kept, under the CPU's lock (the reader waits for
        // one attribution at most; the kernel's per-CPU buffer holds far more than that).
        let (saving, nmi_traced) = (self.save.is_some(), self.report.nmi_traced);
        let (from, to) = (s.expected, s.actual);
        self.rec
            .with_window(cpu, from, to, patience, |w| {
                let mut why = attribute_window(w, from, to, tid, &note);
                if nmi_traced {
                    let (n, ns) = traced_nmis(w, from, to);
                    why.nmis = Some(n);
                    why.nmi_ns = Some(ns);
                }
                if saving {
                    events.extend(w.iter().cloned());
                }
                why
            })
            .unwrap_or_else(|| {
                let mut why = attribute_window(Window::default(), from, to, tid, &note);
                if nmi_traced {
                    why.nmis = Some(0);
                    why.nmi_ns = Some(0);
                }
                why
            })
    }

    /// What the trace of `s` could not see, in `why`: its stack's symbols, tracing turned
    /// off by another process, a guest's steal, and the time nothing visible explains
    /// checked against the counters read around it.
    fn check_unseen(&mut self, s: &RawSpike, why: &mut Attribution) {
        let cpu = s.cpu as usize;
        if let Some(k) = &self.kallsyms {
            why.stack = why.stack_addrs.iter().map(|&a| k.name(a)).collect();
        }
        // Tracing turned off by another process: what the window lacks is no explanation.
        let untraced = self.tamper.untraced_after().is_some_and(|t| s.actual > t);
        if untraced {
            *why = untraced_attribution(latency(s));
        }
        // On a guest: a late timer the steal around it covers is the host's.
        let steal =
            self.steal.as_ref().filter(|_| !untraced).and_then(|log| {
                log.judge(why, cpu, (s.expected, s.actual), self.tick_ns, mono_now())
            });
        // Time nothing visible explains: checked against the counters read around it.
        let residual: u64 = why
            .components
            .iter()
            .filter(|c| c.kind == "idle" || c.kind == "unattributed")
            .map(|c| c.ns)
            .sum();
        if residual > 0 && !untraced {
            why.residual = Some(self.watch.residual(
                cpu,
                (s.expected, s.actual),
                residual,
                why.nmis.zip(why.nmi_ns),
                steal,
                mono_now(),
            ));
        }
    }

    /// Keeps `s`, explained by `why`, as a record: its part of the `--trace-save` timeline
    /// (from the window's `events`), and the windows rules asked of it saved.
    fn record(&mut self, s: &RawSpike, why: Attribution, events: &[Event]) {
        let cpu = s.cpu as usize;
        let series = self
            .names
            .get(s.series as usize)
            .cloned()
            .unwrap_or_default();
        if let Some((_, parts)) = self.save.as_mut() {
            parts.push(Part {
                latency: latency(s),
                series: series.clone(),
                seq: s.seq,
                text: crate::event_log::render(&series, cpu, s, &why, events),
            });
        }
        let due: Vec<String> = self
            .windows
            .iter()
            .filter(|w| w.0 == s.series && w.1 == s.seq)
            .map(|w| w.2.clone())
            .collect();
        if !due.is_empty() {
            self.windows.retain(|w| !(w.0 == s.series && w.1 == s.seq));
            self.save_for(s, &series, due);
        }
        self.report.spikes.push(SpikeRecord {
            series,
            cpu,
            seq: s.seq,
            expected_ns: s.expected,
            latency_ns: latency(s),
            why,
        });
    }

    /// Saves the window of the recorded spike `s` (of `series`) for `rules`: one firing each,
    /// and the spike pinned as a record.
    fn save_for(&mut self, s: &RawSpike, series: &str, rules: Vec<String>) {
        self.pinned.push((series.to_string(), s.seq));
        let outcome = self.save_window(s);
        for rule in rules {
            self.report
                .actions
                .push(latlab_core::result::trace::Firing {
                    rule,
                    series: series.to_string(),
                    cpu: s.cpu as usize,
                    seq: s.seq,
                    latency_ns: latency(s),
                    outcome: outcome.clone(),
                });
        }
    }

    /// Writes the window of spike `s` (every traced CPU, from [`WINDOW_LEAD_NS`] before the
    /// expected wake-up to the actual one) as a trace.dat beside `--trace-save` (or in the
    /// current directory): `<name>-spike-<n>.dat`, within the run's budget and end. Returns
    /// the outcome to record.
    pub(super) fn save_window(&mut self, s: &RawSpike) -> String {
        let base = match (&self.dat, &self.save) {
            (Some(p), _) | (None, Some((p, _))) => p.with_extension(""),
            _ => std::path::PathBuf::from(format!("latlab-{}", std::process::id())),
        };
        if self.saver.past_end() {
            return self.saver.window(&base, Vec::new());
        }
        let pages = self
            .rec
            .pages_between(s.expected.saturating_sub(WINDOW_LEAD_NS), s.actual);
        self.saver.window(&base, pages)
    }

    /// Names the command group and exec chain of every thread component of `spikes`.
    /// Each (pid, name) is worked out once per call: a spike names dozens of tasks, and the
    /// same tasks recur from spike to spike.
    pub(super) fn name_groups(&self, spikes: &mut [SpikeRecord]) {
        type Named = (std::sync::Arc<str>, std::sync::Arc<[String]>);
        let mut known: crate::FastMap<i32, Vec<(String, Named)>> = Default::default();
        for c in spikes.iter_mut().flat_map(|s| s.why.components.iter_mut()) {
            let Some(t) = &c.task else { continue };
            let seen = known.entry(t.pid).or_default();
            let (group, chain) = match seen.iter().find(|(comm, _)| *comm == t.comm) {
                Some((_, id)) => id.clone(),
                None => {
                    let id: Identity = self.namer.identity(
                        t.pid,
                        &t.comm,
                        &self.rec.lineage(t.pid),
                        self.rec.identity(t.pid),
                    );
                    let named: Named = (id.group.into(), id.chain.into());
                    seen.push((t.comm.clone(), named.clone()));
                    named
                }
            };
            c.group = Some(group);
            c.chain = chain;
        }
    }
}

/// The NMIs traced on the window `w` from `from` to `to`: how many, and their time (ns).
fn traced_nmis(w: Window<'_>, from: u64, to: u64) -> (u32, u64) {
    w.iter()
        .filter(|e| e.ts >= from && e.ts <= to)
        .filter_map(|e| match e.kind {
            Kind::Nmi { delta_ns } => Some(delta_ns),
            _ => None,
        })
        .fold((0u32, 0u64), |(n, t), d| (n + 1, t + d))
}

/// A spike's latency (ns).
fn latency(s: &RawSpike) -> u64 {
    s.actual.saturating_sub(s.expected)
}

/// One spike's text in the `--trace-save` timeline, kept while its spike is a record.
pub(super) struct Part {
    latency: u64,
    series: String,
    seq: u64,
    text: String,
}

impl Part {
    /// The timeline: the parts' texts in the order their spikes were attributed.
    pub(super) fn joined(parts: &[Part]) -> String {
        parts.iter().map(|p| p.text.as_str()).collect()
    }
}

/// Which spikes stay records when there are more than `cap`: the worst, exactly. The
/// latencies of those kept are in a min-heap of `cap`; a spike worse than the least of them
/// takes its place, and the floor rises to the one that goes (with any that tie with it). So
/// only a spike that is among the worst seen so far is ever kept (and attributed), and the
/// records are always the spikes seen that are worse than the floor: at the end, the worst
/// `cap` (fewer when latencies tie at the boundary). The records themselves are dropped in
/// batches, at twice the cap and at the end.
#[derive(Debug)]
pub(super) struct Worst {
    cap: usize,
    floor: Option<u64>,
    kept: std::collections::BinaryHeap<std::cmp::Reverse<u64>>,
}

impl Worst {
    /// Keeps the worst `cap` (at least one).
    pub(super) fn new(cap: usize) -> Worst {
        Worst {
            cap: cap.max(1),
            floor: None,
            kept: std::collections::BinaryHeap::new(),
        }
    }

    /// Spikes at or below this latency (ns) are not kept (None: all are, so far).
    pub(super) fn floor(&self) -> Option<u64> {
        self.floor
    }

    /// Whether a spike of `latency` (ns) is kept: above the floor, and worse than the least of
    /// the worst `cap` kept when there are that many (which then goes).
    pub(super) fn admit(&mut self, latency: u64) -> bool {
        use std::cmp::Reverse;
        if self.floor.is_some_and(|f| latency <= f) {
            return false;
        }
        if self.kept.len() >= self.cap {
            match self.kept.peek() {
                Some(&Reverse(least)) if latency > least => self.drop_least(),
                _ => return false,
            }
        }
        self.kept.push(Reverse(latency));
        true
    }

    /// The least kept goes, with every one that ties with it; the floor rises to it.
    fn drop_least(&mut self) {
        if let Some(std::cmp::Reverse(gone)) = self.kept.pop() {
            while self.kept.peek().is_some_and(|r| r.0 == gone) {
                self.kept.pop();
            }
            self.floor = Some(self.floor.map_or(gone, |f| f.max(gone)));
        }
    }

    /// Starts again from the records left (their latencies): the worst `cap` of them are kept.
    pub(super) fn reset(&mut self, left: Vec<u64>) {
        self.floor = None;
        self.kept = left.into_iter().map(std::cmp::Reverse).collect();
        while self.kept.len() > self.cap {
            self.drop_least();
        }
    }
}

/// A spike's attribution when tracing was off around it: all of it not covered by the trace.
fn untraced_attribution(ns: u64) -> latlab_core::result::trace::Attribution {
    latlab_core::result::trace::Attribution {
        components: vec![latlab_core::result::trace::Component {
            kind: "unknown".into(),
            name: crate::tamper::UNTRACED.into(),
            ns,
            share: 1.0,
            task: None,
            group: None,
            chain: Vec::new().into(),
            folded: 0,
        }],
        notes: vec![crate::tamper::UNTRACED.into()],
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::Worst;

    /// Feeds `stream` through a `Worst` of `cap` as the session does (records dropped at
    /// twice the cap and at the end); returns what was kept and what was dropped.
    fn run(cap: usize, stream: &[u64]) -> (Vec<u64>, Vec<u64>, Worst) {
        let (mut kept, mut dropped) = (Vec::new(), Vec::new());
        let mut w = Worst::new(cap);
        let cut = |w: &Worst, kept: &mut Vec<u64>, dropped: &mut Vec<u64>| {
            if let Some(f) = w.floor() {
                let (stay, go): (Vec<u64>, Vec<u64>) = kept.iter().partition(|&&k| k > f);
                *kept = stay;
                dropped.extend(go);
            }
        };
        for &l in stream {
            if w.admit(l) {
                if kept.len() >= 2 * cap {
                    cut(&w, &mut kept, &mut dropped);
                }
                kept.push(l);
            } else {
                dropped.push(l);
            }
            assert!(kept.len() <= 2 * cap, "{} > 2 x {cap}", kept.len());
        }
        cut(&w, &mut kept, &mut dropped);
        (kept, dropped, w)
    }

    #[test]
    fn the_worst_are_kept_whatever_the_order() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for round in 0..60 {
            let n = [0, 5, 99, 100, 101, 1000, 5000][round % 7];
            let cap = [100, 7, 64][round % 3];
            let ties = round % 2 == 0;
            let mut stream: Vec<u64> = (0..n)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    // Ties too: a few hundred distinct values in some rounds.
                    if ties {
                        x % 300
                    } else {
                        x % 1_000_000_007
                    }
                })
                .collect();
            if round % 5 == 1 {
                stream.sort_unstable(); // worse and worse: every spike is a new worst
            }
            let (mut kept, dropped, w) = run(cap, &stream);
            assert_eq!(kept.len() + dropped.len(), stream.len());
            assert!(kept.len() <= cap);
            // Every record is at least as bad as every spike dropped (worse, without ties),
            // and the records are the spikes worse than the floor and not fewer than the
            // heap says.
            if let (Some(lo), Some(hi)) = (kept.iter().min(), dropped.iter().max()) {
                assert!(lo >= hi && (ties || lo > hi), "kept {lo} < dropped {hi}");
            }
            let f = w.floor();
            assert!(kept.iter().all(|&k| f.is_none_or(|f| k > f)));
            assert_eq!(kept.len(), w.kept.len());
            // Without ties: exactly the worst `cap`.
            if !ties {
                let mut all = stream.clone();
                all.sort_unstable_by(|a, b| b.cmp(a));
                all.truncate(cap);
                kept.sort_unstable_by(|a, b| b.cmp(a));
                assert_eq!(kept, all, "cap {cap}, n {n}");
            }
        }
    }

    #[test]
    fn below_the_cap_everything_is_kept_and_a_reset_starts_from_what_is_left() {
        let (kept, dropped, w) = run(10, &[5, 1, 9, 3]);
        assert_eq!((kept, dropped, w.floor()), (vec![5, 1, 9, 3], vec![], None));
        let (kept, dropped, mut w2) = run(2, &[5, 6, 7, 8, 9, 4]);
        assert_eq!((kept, dropped), (vec![8, 9], vec![5, 6, 7, 4]));
        assert_eq!(w2.floor(), Some(7));
        assert!(!w2.admit(7) && !w2.admit(8));
        w2.reset(vec![3]);
        assert_eq!(w2.floor(), None);
        assert!(w2.admit(1) && !w2.admit(1));
        // Ties with the least kept go with it.
        let (kept, _, w3) = run(3, &[5, 5, 5, 9, 9]);
        assert_eq!((kept, w3.floor()), (vec![9, 9], Some(5)));
    }
}
