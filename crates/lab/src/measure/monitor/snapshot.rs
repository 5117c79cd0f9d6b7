//! Snapshots: the samples of one interval, drained from the measuring threads' rings by the
//! control thread, become one stored run (kind `monitor`, one series per CPU); and the text
//! report at the end of a monitor.

use super::causes::{Causes, CpuTotals, CAUSES};
use super::tally::Tally;
use super::{MonitorConfig, MonitorOutcome};
use latlab_core::config::Policy;
use latlab_core::result::trace::{SpikeRecord, TraceReport};
use latlab_core::result::{Run, Series};
use latlab_core::stats::Recorder;
use rtrb::Consumer;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::SystemTime;

/// What every snapshot of a run shares (a monitor's, a qualification's checkpoints).
pub(crate) struct Context<'a> {
    /// The measured CPUs, one series each.
    pub(crate) cpus: &'a [usize],
    /// The measuring threads' period (ns).
    pub(crate) interval_ns: u64,
    /// Policy in force.
    pub(crate) policy: Policy,
    /// Priority in force.
    pub(crate) prio: i32,
    /// The run's parameters (the validated config); each snapshot adds its number.
    pub(crate) parameters: serde_json::Value,
}

/// Counters at the start of an interval, to take differences from.
#[derive(Debug, Clone, Copy, Default)]
struct Counts {
    /// Wake-ups counted (the last one's number).
    seen: u64,
    overruns: u64,
    lost: u64,
    exceeded: u64,
}

impl Counts {
    fn of(t: &Tally) -> Counts {
        Counts {
            seen: t.read_buckets().1,
            overruns: t.overruns.load(Relaxed),
            lost: t.lost.load(Relaxed),
            exceeded: t.exceeded.load(Relaxed),
        }
    }
}

/// Attributed spikes an interval keeps to summarise its causes; beyond, only the totals count
/// them.
const MAX_INTERVAL_SPIKES: usize = 10_000;
/// Spikes a snapshot stores as records: the interval's worst (and each CPU's worst).
pub const STORED_SPIKES: usize = 20;

/// Keeps the `n` worst of `spikes` (in no particular order); returns how many went.
fn worst_only(spikes: &mut Vec<SpikeRecord>, n: usize) -> u64 {
    if spikes.len() <= n {
        return 0;
    }
    spikes.select_nth_unstable_by_key(n, |s| std::cmp::Reverse(s.latency_ns));
    let gone = spikes.len() - n;
    spikes.truncate(n);
    gone as u64
}

/// What `--trace` adds to a snapshot when it is taken.
pub(crate) struct TraceNow<'a> {
    /// The session's cause totals.
    pub(crate) causes: &'a Causes,
    /// The trace report's fixed part (and at the end, the finished report: counted hardware
    /// events, warnings), its spikes taken out.
    pub(crate) header: TraceReport,
    /// Trace events read and lost so far (all CPUs).
    pub(crate) events: (u64, u64),
}

/// The traced part of an interval.
#[derive(Default)]
struct Traced {
    /// Its attributed spikes (at most [`MAX_INTERVAL_SPIKES`]).
    spikes: Vec<SpikeRecord>,
    /// Further spikes, counted only.
    over: u64,
    /// The cause totals at its start, per CPU.
    base: Vec<CpuTotals>,
    /// Trace events read and lost at its start.
    events: (u64, u64),
    /// The session's dropped spikes at its start.
    dropped: u64,
    /// `--on-threshold` firings in it.
    actions: Vec<latlab_core::result::trace::Firing>,
    /// Its worst spike per CPU: (number, latency ns), always among the spikes its snapshot
    /// stores.
    worst: std::collections::BTreeMap<usize, (u64, u64)>,
}

/// The interval being collected.
pub(crate) struct Interval {
    started: SystemTime,
    /// The id its snapshot run will have (chosen as it opens, for exemplars).
    id: String,
    recs: Vec<Recorder>,
    base: Vec<Counts>,
    traced: Traced,
}

impl Interval {
    /// A new interval starting now.
    pub(crate) fn new(tallies: &[Arc<Tally>]) -> Interval {
        let started = SystemTime::now();
        Interval {
            started,
            id: latlab_core::result::new_run_id(started),
            recs: tallies.iter().map(|_| Recorder::new()).collect(),
            base: tallies.iter().map(|t| Counts::of(t)).collect(),
            traced: Traced {
                base: vec![CpuTotals::default(); tallies.len()],
                ..Traced::default()
            },
        }
    }

    /// When the interval began.
    pub(crate) fn started(&self) -> SystemTime {
        self.started
    }

    /// The id its snapshot run will have.
    pub(crate) fn id(&self) -> &str {
        &self.id
    }

    /// The number of the last wake-up before it, per CPU: its own are numbered above (as its
    /// snapshot's `wakeups` say).
    pub(crate) fn opened_after(&self) -> Vec<u64> {
        self.base.iter().map(|c| c.seen).collect()
    }

    /// Its worst attributed spike per CPU so far: (number, latency ns).
    pub(crate) fn worst(&self) -> &std::collections::BTreeMap<usize, (u64, u64)> {
        &self.traced.worst
    }

    /// Keeps attributed spikes (and `--on-threshold` firings) for the interval's snapshot: its
    /// worst [`MAX_INTERVAL_SPIKES`] (cut to them each time twice as many gather).
    pub(crate) fn keep(&mut self, spikes: Vec<SpikeRecord>, actions: Vec<latlab_core::result::trace::Firing>) {
        let t = &mut self.traced;
        for s in spikes {
            let w = t.worst.entry(s.cpu).or_insert((s.seq, s.latency_ns));
            if s.latency_ns > w.1 {
                *w = (s.seq, s.latency_ns);
            }
            t.spikes.push(s);
            if t.spikes.len() >= 2 * MAX_INTERVAL_SPIKES {
                t.over += worst_only(&mut t.spikes, MAX_INTERVAL_SPIKES);
            }
        }
        t.actions.extend(actions);
    }

    /// The interval's `trace`: its causes per CPU from every spike kept, its worst spikes, the
    /// events read and lost in it; and the cause totals per CPU since its start.
    fn take_trace(&mut self, now: &TraceNow, cpus: &[usize]) -> (TraceReport, Vec<CpuTotals>) {
        let t = std::mem::take(&mut self.traced);
        let totals: Vec<CpuTotals> = now.causes.read().into_iter().map(|x| x.1).collect();
        let deltas = totals
            .iter()
            .zip(
                t.base
                    .iter()
                    .chain(std::iter::repeat(&CpuTotals::default())),
            )
            .map(|(a, b)| a.since(b))
            .collect();
        let mut report = now.header.clone();
        let mut worst = t.spikes;
        let over = t.over + worst_only(&mut worst, MAX_INTERVAL_SPIKES);
        report.per_cpu = latlab_core::result::culprits::summarise(&worst, cpus);
        worst.sort_by_key(|s| std::cmp::Reverse(s.latency_ns));
        // The worst overall, and each CPU's worst (what its exemplar names) beside them.
        let mut seen = std::collections::BTreeSet::new();
        let mut k = 0;
        worst.retain(|s| {
            k += 1;
            seen.insert(s.cpu) || k <= STORED_SPIKES
        });
        report.spikes_not_kept = (k - worst.len()) as u64 + over;
        worst.sort_by_key(|s| (s.expected_ns, s.cpu));
        report.spikes = worst;
        report.events = now.events.0.saturating_sub(t.events.0);
        report.lost_events = now.events.1.saturating_sub(t.events.1);
        report.actions.extend(t.actions);
        // The session's count so far, less the part earlier snapshots reported.
        report.spikes_dropped = now.header.spikes_dropped.saturating_sub(t.dropped);
        self.traced = Traced {
            base: totals,
            events: now.events,
            dropped: now.header.spikes_dropped,
            ..Traced::default()
        };
        (report, deltas)
    }

    /// Records everything waiting in the rings.
    pub(crate) fn drain(&mut self, rings: &mut [Consumer<u64>]) {
        for (ring, rec) in rings.iter_mut().zip(&mut self.recs) {
            let n = ring.slots();
            if n == 0 {
                continue;
            }
            if let Ok(chunk) = ring.read_chunk(n) {
                for v in chunk {
                    rec.record(v);
                }
            }
        }
    }

    /// Ends the interval as run number `seq` and starts the next one.
    pub(crate) fn take(
        &mut self,
        ctx: &Context,
        driver: &crate::driver::Ctx<'_>,
        seq: u64,
        tallies: &[Arc<Tally>],
        warnings: Vec<String>,
        trace: Option<TraceNow>,
    ) -> Run {
        let (trace, causes) = match trace {
            Some(now) => {
                let (r, d) = self.take_trace(&now, ctx.cpus);
                (Some(r), d)
            }
            None => (None, Vec::new()),
        };
        let mut series = Vec::with_capacity(tallies.len());
        for (i, t) in tallies.iter().enumerate() {
            let now = Counts::of(t);
            let base = self.base[i];
            let mut s = Series::from_recorder(format!("cpu{}", ctx.cpus[i]), &self.recs[i]);
            s.cpu = Some(ctx.cpus[i]);
            s.policy = ctx.policy.to_string();
            s.prio = ctx.prio;
            s.interval_ns = Some(ctx.interval_ns);
            s.overruns = now.overruns - base.overruns;
            s.lost_samples = now.lost - base.lost;
            // The numbers of its wake-ups (as exemplars and spikes name them), first and last.
            let mut extra = serde_json::json!({
                "threshold_exceeded": now.exceeded - base.exceeded,
                "wakeups": [base.seen + 1, now.seen],
            });
            // --trace: this CPU's late time and wake-ups by cause in the interval, as the
            // endpoint's counters count them.
            if let (Some(c), Some(o)) = (causes.get(i), extra.as_object_mut()) {
                if let Some(j) = c.to_json().as_object() {
                    o.extend(j.clone());
                }
            }
            s.extra = Some(extra);
            series.push(s);
            self.base[i] = now;
            self.recs[i].reset();
        }
        let mut parameters = ctx.parameters.clone();
        if let Some(o) = parameters.as_object_mut() {
            o.insert("snapshot".into(), seq.into());
        }
        let run = Run {
            series,
            trace,
            ..driver.run_with(self.started, parameters, warnings)
        };
        let run = Run {
            id: std::mem::take(&mut self.id),
            ..run
        };
        self.started = SystemTime::now();
        self.id = latlab_core::result::new_run_id(self.started);
        run
    }
}

/// The text report: the whole session per CPU, and where the snapshots went.
pub(crate) fn render(cfg: &MonitorConfig, o: &MonitorOutcome) -> String {
    let rows: Vec<Vec<String>> = o
        .session
        .iter()
        .map(|(cpu, rec, overruns, lost)| {
            let s = rec.summary();
            let us = |ns: f64| format!("{:.1}", ns / 1e3);
            vec![
                cpu.to_string(),
                s.count.to_string(),
                us(if s.count == 0 { 0.0 } else { s.min_ns as f64 }),
                us(s.mean_ns),
                us(s.max_ns as f64),
                overruns.to_string(),
                lost.to_string(),
            ]
        })
        .collect();
    let mut out = format!(
        "monitor {} (http://{}/metrics): latencies in us over the whole session\n",
        cfg.monitor_id, o.listen
    );
    out.push_str(&latlab_analysis::export::columns::render(
        &["cpu", "count", "min", "avg", "max", "overruns", "lost"],
        &rows,
    ));
    if !o.causes.is_empty() {
        out.push_str(&render_causes(cfg, &o.causes));
    }
    if cfg.no_store {
        out.push_str("--no-store: no snapshot was stored\n");
    } else {
        out.push_str(&format!(
            // Said before the driver knows whether the store takes the last one: its own line
            // ("stored in", or where it was kept instead) follows.
            "{} snapshots stored during the run; the last interval's is run {}\n",
            o.snapshots, o.run.id
        ));
    }
    out
}

/// `--trace`: the session's late time per CPU by cause (shares) and its largest culprit groups.
fn render_causes(cfg: &MonitorConfig, causes: &[(usize, CpuTotals)]) -> String {
    let mut head = vec!["cpu".to_string(), "late wake-ups".into(), "late ms".into()];
    head.extend(CAUSES.iter().map(|c| format!("{c} %")));
    head.push("top culprit groups (ms)".into());
    let rows: Vec<Vec<String>> = causes
        .iter()
        .map(|(cpu, t)| {
            let late: u64 = t.late_ns.iter().sum();
            let mut row = vec![
                cpu.to_string(),
                t.wakeups.iter().sum::<u64>().to_string(),
                format!("{:.2}", late as f64 / 1e6),
            ];
            row.extend(
                t.late_ns
                    .iter()
                    .map(|&ns| format!("{:.0}", 100.0 * ns as f64 / late.max(1) as f64)),
            );
            let mut groups: Vec<(&str, u64)> = t
                .groups
                .iter()
                .map(|(g, ns)| (g.as_str(), *ns))
                .chain([(super::causes::OTHER, t.other_ns)])
                .filter(|g| g.1 > 0)
                .collect();
            groups.sort_by_key(|g| std::cmp::Reverse(g.1));
            let top: Vec<String> = groups
                .iter()
                .take(3)
                .map(|(g, ns)| format!("{g} {:.2}", *ns as f64 / 1e6))
                .collect();
            row.push(top.join(", "));
            row
        })
        .collect();
    let head: Vec<&str> = head.iter().map(String::as_str).collect();
    format!(
        "late time by cause over the session (--trace, wake-ups >= {} us):\n{}",
        cfg.trace_threshold_ns.unwrap_or(0) as f64 / 1e3,
        latlab_analysis::export::columns::render(&head, &rows)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worst_only_keeps_the_worst() {
        let spike = |l: u64| SpikeRecord {
            series: "T0".into(),
            cpu: 0,
            seq: l,
            expected_ns: l,
            latency_ns: l,
            why: Default::default(),
        };
        let mut v: Vec<SpikeRecord> = [5u64, 1, 9, 3, 7, 2].into_iter().map(spike).collect();
        assert_eq!(worst_only(&mut v, 3), 3);
        let mut kept: Vec<u64> = v.iter().map(|s| s.latency_ns).collect();
        kept.sort_unstable();
        assert_eq!(kept, vec![5, 7, 9]);
        assert_eq!(worst_only(&mut v, 5), 0);
        assert_eq!(v.len(), 3);
    }
}
