//! A spike's way through the session: attributed once the recorder has read past it (its
//! window saved when asked), and its culprits' groups named.

use super::*;

impl Tracer {
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
