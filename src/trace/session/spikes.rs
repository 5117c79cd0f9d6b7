//! A spike's way through the session: attributed once the recorder has read past it (its
//! window saved when asked), and its culprits' groups named.

use super::*;

impl Tracer {
    /// Whether a spike of `latency_ns` is kept as a record (see [`Worst`]; a spike whose
    /// window a rule asked for always is). Records that fall to the floor are dropped here,
    /// attributed or not, and counted as dropped.
    pub(super) fn keep(&mut self, s: &RawSpike, latency_ns: u64) -> bool {
        let windowed = |w: &Vec<(u32, u64, String)>, s: &RawSpike| {
            w.iter().any(|w| w.0 == s.series && w.1 == s.seq)
        };
        if windowed(&self.windows, s) {
            return true;
        }
        let kept = self.report.spikes.len() + self.pending.len();
        let (spikes, pending) = (&self.report.spikes, &self.pending);
        let before = self.worst.floor();
        let admitted = self.worst.admits(latency_ns, kept, || {
            spikes
                .iter()
                .map(|r| r.latency_ns)
                .chain(pending.iter().map(|p| p.actual.saturating_sub(p.expected)))
                .collect()
        });
        if let Some(floor) = self.worst.floor().filter(|_| self.worst.floor() != before) {
            self.report.spikes.retain(|r| r.latency_ns > floor);
            let windows = &self.windows;
            self.pending
                .retain(|p| p.actual.saturating_sub(p.expected) > floor || windowed(windows, p));
            let after = self.report.spikes.len() + self.pending.len();
            self.report.spikes_dropped += (kept - after) as u64;
        }
        admitted
    }

    pub(super) fn attribute(&mut self, s: RawSpike, patience: Duration) {
        let cpu = s.cpu as usize;
        let tid = (s.tid > 0).then_some(s.tid);
        let note = Note {
            text: self.report.idle_note.clone(),
            spinner: self.spinner,
        };
        // Attributed where the events are kept, under the CPU's lock (the reader waits for
        // one attribution at most; the kernel's per-CPU buffer holds far more than that).
        // Copied out only for `--trace-save`'s text.
        let mut events = std::mem::take(&mut self.scratch);
        events.clear();
        let (saving, nmi_traced) = (self.save.is_some(), self.report.nmi_traced);
        let (from, to) = (s.expected, s.actual);
        let mut why = self
            .rec
            .with_window(cpu, from, to, patience, |w| {
                let mut why = attribute_window(w, from, to, tid, &note);
                if nmi_traced {
                    let (n, ns) = w
                        .iter()
                        .filter(|e| e.ts >= from && e.ts <= to)
                        .filter_map(|e| match e.kind {
                            crate::trace::event::Kind::Nmi { delta_ns } => Some(delta_ns),
                            _ => None,
                        })
                        .fold((0u32, 0u64), |(n, t), d| (n + 1, t + d));
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
            });
        if let Some(k) = &self.kallsyms {
            why.stack = why.stack_addrs.iter().map(|&a| k.name(a)).collect();
        }
        // On a guest: a late timer the steal around it covers is the host's.
        let steal = self.steal.as_ref().and_then(|log| {
            log.judge(
                &mut why,
                cpu,
                (s.expected, s.actual),
                self.tick_ns,
                mono_now(),
            )
        });
        // Time nothing visible explains: checked against the counters read around it.
        let residual: u64 = why
            .components
            .iter()
            .filter(|c| c.kind == "idle" || c.kind == "unattributed")
            .map(|c| c.ns)
            .sum();
        if residual > 0 {
            why.residual = Some(self.watch.residual(
                cpu,
                (s.expected, s.actual),
                residual,
                why.nmis.zip(why.nmi_ns),
                steal,
                mono_now(),
            ));
        }
        // What /proc says of each task, read now, while it may still exist.
        for t in why.components.iter().filter_map(|c| c.task.as_ref()) {
            if !self.namer.settled(t.pid, self.rec.births(t.pid)) {
                self.namer.observe(t.pid, &self.rec.lineage(t.pid));
            }
        }
        let series = self
            .names
            .get(s.series as usize)
            .cloned()
            .unwrap_or_default();
        if let Some((_, text)) = self.save.as_mut() {
            text.push_str(&crate::trace::event_log::render(
                &series, cpu, &s, &why, &events,
            ));
        }
        let due: Vec<String> = self
            .windows
            .iter()
            .filter(|w| w.0 == s.series && w.1 == s.seq)
            .map(|w| w.2.clone())
            .collect();
        if !due.is_empty() {
            self.windows.retain(|w| !(w.0 == s.series && w.1 == s.seq));
            let outcome = self.save_window(&s);
            for rule in due {
                self.report.actions.push(crate::result::trace::Firing {
                    rule,
                    series: series.clone(),
                    cpu,
                    seq: s.seq,
                    latency_ns: s.actual.saturating_sub(s.expected),
                    outcome: outcome.clone(),
                });
            }
        }
        self.report.spikes.push(SpikeRecord {
            series,
            cpu,
            seq: s.seq,
            expected_ns: s.expected,
            latency_ns: s.actual.saturating_sub(s.expected),
            why,
        });
        self.scratch = events;
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
        let mut known: crate::trace::FastMap<i32, Vec<(String, Named)>> = Default::default();
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

/// Which spikes stay records when there are more than `cap`: the worst. Once `cap` are kept,
/// the floor rises to their median latency, the records at or below it are dropped, and from
/// then on a spike must be worse than the floor to be kept. So the records are always exactly
/// the spikes seen that are worse than the floor (every one kept is worse than every one
/// dropped), at least the worst `cap / 2` of them when latencies differ, and the cost is one
/// selection per `cap / 2` spikes kept.
#[derive(Debug)]
pub(super) struct Worst {
    cap: usize,
    floor: Option<u64>,
}

impl Worst {
    /// Keeps at most `cap` records.
    pub(super) fn new(cap: usize) -> Worst {
        Worst { cap, floor: None }
    }

    /// Spikes at or below this latency (ns) are not kept (None: all are, so far).
    pub(super) fn floor(&self) -> Option<u64> {
        self.floor
    }

    /// Whether a spike of `latency` is kept beside `kept` records; `latencies` gives theirs
    /// when the floor must rise (the caller then drops those at or below the new floor).
    pub(super) fn admits(
        &mut self,
        latency: u64,
        kept: usize,
        latencies: impl FnOnce() -> Vec<u64>,
    ) -> bool {
        if self.floor.is_some_and(|f| latency <= f) {
            return false;
        }
        if kept < self.cap {
            return true;
        }
        let mut all = latencies();
        if all.is_empty() {
            return true;
        }
        let k = all.len() / 2;
        let (_, &mut median, _) = all.select_nth_unstable(k);
        let floor = self.floor.map_or(median, |f| f.max(median));
        self.floor = Some(floor);
        latency > floor
    }

    /// The records were taken away (a monitor's interval): every spike is kept again.
    pub(super) fn reset(&mut self) {
        self.floor = None;
    }
}

#[cfg(test)]
mod tests {
    use super::Worst;

    /// Feeds `stream` through a `Worst` of `cap` as the session does; returns what was kept
    /// and what was dropped.
    fn run(cap: usize, stream: &[u64]) -> (Vec<u64>, Vec<u64>, Worst) {
        let (mut kept, mut dropped) = (Vec::new(), Vec::new());
        let mut w = Worst::new(cap);
        for &l in stream {
            let before = w.floor();
            let admitted = w.admits(l, kept.len(), || kept.clone());
            if let Some(f) = w.floor().filter(|_| w.floor() != before) {
                let (stay, go): (Vec<u64>, Vec<u64>) = kept.iter().partition(|&&k| k > f);
                kept = stay;
                dropped.extend(go);
            }
            if admitted {
                kept.push(l);
            } else {
                dropped.push(l);
            }
            assert!(kept.len() <= cap, "{} > {cap}", kept.len());
        }
        (kept, dropped, w)
    }

    #[test]
    fn the_worst_are_kept_whatever_the_order() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for round in 0..60 {
            let n = [0, 5, 99, 100, 101, 1000, 5000][round % 7];
            let cap = [100, 7, 64][round % 3];
            let mut stream: Vec<u64> = (0..n)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    // Ties too: a few hundred distinct values in some rounds.
                    if round % 2 == 0 {
                        x % 300
                    } else {
                        x % 1_000_000_007
                    }
                })
                .collect();
            if round % 5 == 1 {
                stream.sort_unstable(); // worse and worse: every spike is a new worst
            }
            let (kept, dropped, w) = run(cap, &stream);
            assert_eq!(kept.len() + dropped.len(), stream.len());
            // Every record is worse than every spike dropped, and the records are exactly
            // the spikes worse than the floor.
            if let (Some(lo), Some(hi)) = (kept.iter().min(), dropped.iter().max()) {
                assert!(lo > hi, "kept {lo} <= dropped {hi}");
            }
            let f = w.floor();
            let want = stream.iter().filter(|&&l| f.is_none_or(|f| l > f)).count();
            assert_eq!(kept.len(), want);
            // Without ties, at least the worst half of the cap stays.
            if round % 2 == 1 {
                assert!(
                    kept.len() >= n.min(cap / 2),
                    "{} of {n}, cap {cap}",
                    kept.len()
                );
            }
        }
    }

    #[test]
    fn below_the_cap_everything_is_kept_and_a_reset_lowers_the_floor() {
        let (kept, dropped, mut w) = run(10, &[5, 1, 9, 3]);
        assert_eq!((kept, dropped, w.floor()), (vec![5, 1, 9, 3], vec![], None));
        let (_, _, mut w2) = run(4, &[5, 6, 7, 8, 9]);
        assert!(w2.floor().is_some());
        assert!(!w2.admits(1, 2, Vec::new));
        w2.reset();
        assert!(w2.admits(1, 2, Vec::new));
        w.reset();
        assert_eq!(w.floor(), None);
    }
}
