//! `latlab sched` on the in-kernel engine: the BPF programs aggregate every task's delays in
//! kernel and this side reads what they kept (`latlab_trace::bpf`), turning it into the same
//! tasks, series, table and worst delays as the tracefs engine's replay. Counts and maxima
//! are exact; quantiles come from the kernel's log-linear buckets (an eighth of an octave).

use super::samples::{Samples, FEW};
use super::target::Matcher;
use super::track::{Chooser, Task};
use super::{child, report, SchedConfig, SchedOutcome, Target};
use crate::driver::Ctx;
use latlab_core::error::{Error, Result};
use latlab_core::result::trace::{SpikeRecord, TraceReport};
use latlab_core::stats::Recorder;
use latlab_trace::bpf::{bucket_bounds, Counters, Delays, SchedProbe, Spike, TaskStat};
use std::collections::HashMap;
use std::time::{Duration, Instant, SystemTime};

/// Delays explained per run at most (the worst are kept), as the tracefs engine's records.
const MAX_SPIKES: usize = 10_000;

/// A bucket's value as read back: its middle, never over the exact maximum.
fn value(b: usize, max: u64) -> u64 {
    let (lo, w) = bucket_bounds(b);
    (lo + w / 2).min(max)
}

/// The delays as samples: the exact maximum among them, the rest at their buckets' middles.
pub(super) fn samples(d: &Delays) -> Samples {
    let total: u64 = d.hist.iter().map(|&c| c as u64).sum();
    if total == 0 {
        return Samples::default();
    }
    if total as usize <= FEW {
        let mut v: Vec<u64> = Vec::with_capacity(total as usize);
        for (b, &c) in d.hist.iter().enumerate() {
            v.extend(std::iter::repeat_n(value(b, d.max), c as usize));
        }
        if let Some(last) = v.last_mut() {
            *last = d.max;
        }
        return Samples::Few(v);
    }
    let mut r = Recorder::new();
    for (b, &c) in d.hist.iter().enumerate() {
        r.record_n(value(b, d.max), c as u64);
    }
    r.max = d.max;
    r.sum = d.sum as u128;
    Samples::Many(Box::new(r))
}

/// The measured tasks among those the kernel kept, oldest first: forks replayed in order
/// so a command's family is known, each task's process taken from the kernel where it saw it.
fn chosen(mut all: Vec<TaskStat>, matcher: &mut Matcher) -> Vec<Task> {
    all.sort_by_key(|t| (t.first_ns, t.tid));
    let mut out = Vec::new();
    for t in all {
        if t.parent > 0 {
            matcher.forked(t.parent, t.tid);
        }
        if t.tgid > 0 {
            matcher.know(t.tid, t.tgid);
        }
        let Some(c) = matcher.wants(t.tid, &t.comm) else {
            continue;
        };
        // (`Task` keeps the replay's own state private: made empty, then filled.)
        let mut x = Task::default();
        x.tid = t.tid;
        x.tgid = c.tgid;
        x.comm = t.comm;
        x.prio = t.prio;
        x.wake = samples(&t.wake);
        x.preempt = samples(&t.preempt);
        x.run_ns = t.run_ns;
        x.runs = t.runs;
        x.migrations = t.migrations;
        x.wakers = t.wakers;
        x.first_ns = t.first_ns;
        x.last_ns = t.last_ns;
        x.exited = t.exited;
        x.cpus = t.cpus;
        x.unmatched = t.unmatched;
        x.pending_at_end = t.pending;
        out.push(x);
    }
    out
}

/// The worst delays of the measured tasks as the run's spikes, with what ran instead.
fn spikes(all: Vec<Spike>, names: &HashMap<i32, String>) -> (Vec<SpikeRecord>, u64) {
    let mut kept: Vec<Spike> = all.into_iter().filter(|s| names.contains_key(&s.tid)).collect();
    kept.sort_by_key(|s| std::cmp::Reverse(s.to - s.from));
    let not_kept = kept.len().saturating_sub(MAX_SPIKES) as u64;
    kept.truncate(MAX_SPIKES);
    kept.sort_by_key(|s| s.from);
    let mut seq: HashMap<i32, u64> = HashMap::new();
    let records = kept
        .iter()
        .map(|s| {
            let n = seq.entry(s.tid).or_default();
            *n += 1;
            SpikeRecord {
                series: names[&s.tid].clone(),
                cpu: s.cpu,
                seq: *n,
                expected_ns: s.from,
                latency_ns: s.to - s.from,
                why: latlab_trace::bpf::explain::attribution(s),
            }
        })
        .collect();
    (records, not_kept)
}

/// Each task's worst delays over the threshold among the spikes, even where the ring had no
/// room for them (then with no explanation): the worst measured is always among those shown.
fn with_worst(all: &[TaskStat], sent: &mut Vec<Spike>, threshold_ns: u64) {
    let have: std::collections::HashSet<(i32, u64, u64)> =
        sent.iter().map(|s| (s.tid, s.from, s.to)).collect();
    for t in all {
        for (d, wake) in [(&t.wake, true), (&t.preempt, false)] {
            let Some((cpu, from, to)) = d.worst else {
                continue;
            };
            if to.saturating_sub(from) >= threshold_ns && !have.contains(&(t.tid, from, to)) {
                sent.push(Spike {
                    tid: t.tid,
                    comm: t.comm,
                    cpu,
                    wake,
                    from,
                    to,
                    ran: Vec::new(),
                    complete: false,
                });
            }
        }
    }
}

/// The delays over the threshold kept while the run goes on: only the measured tasks' where
/// that can be told at once (a command's family is known only at the end), and never more
/// than twice [`MAX_SPIKES`] (the worst kept): memory stays bounded however long the run and
/// however busy the rest of the machine.
struct Kept {
    spikes: Vec<Spike>,
    /// Whether each tid seen is measured (not for `-- CMD`).
    wanted: HashMap<i32, bool>,
    /// Delays let go: not among the worst.
    let_go: u64,
}

impl Kept {
    fn new() -> Kept {
        Kept {
            spikes: Vec::new(),
            wanted: HashMap::new(),
            let_go: 0,
        }
    }

    fn take(&mut self, new: &mut Vec<Spike>, matcher: &mut Matcher, by_tid: bool) {
        if self.wanted.len() > 100_000 {
            self.wanted.clear();
        }
        for s in new.drain(..) {
            let keep = !by_tid
                || *self
                    .wanted
                    .entry(s.tid)
                    .or_insert_with(|| matcher.wants(s.tid, &s.comm).is_some());
            if keep {
                self.spikes.push(s);
            }
        }
        if self.spikes.len() > 2 * MAX_SPIKES {
            self.spikes.sort_by_key(|s| std::cmp::Reverse(s.to - s.from));
            self.let_go += (self.spikes.len() - MAX_SPIKES) as u64;
            self.spikes.truncate(MAX_SPIKES);
        }
    }
}

/// What the kernel could not keep, in words.
fn losses(c: &Counters) -> Vec<String> {
    let mut w = Vec::new();
    if c.dropped > 0 {
        w.push(format!(
            "{} tasks were not measured ({} of their events): the in-kernel table of {} \
             tasks was full",
            c.dropped,
            c.unfiled,
            latlab_trace::bpf::MAX_TASKS
        ));
    }
    if c.reused > 0 {
        w.push(format!(
            "{} exited tasks were lost: their thread id was reused before their figures were \
             collected",
            c.reused
        ));
    }
    if c.spikes_lost > 0 {
        w.push(format!(
            "{} delays over the threshold were not explained: the kernel's ring was full",
            c.spikes_lost
        ));
    }
    w
}

/// Runs `latlab sched` on the in-kernel engine.
pub(super) fn run(cfg: &SchedConfig, ctx: &mut Ctx<'_>) -> Result<SchedOutcome> {
    let all: Vec<usize> = latlab_core::config::CpuSet::online_here().iter().collect();
    let home = super::housekeeping(cfg, &all);
    let mut confined = super::Confined::to(&home);
    let mut probe = SchedProbe::start(cfg.threshold_ns, cfg.cpus.as_deref()).map_err(|e| {
        Error::Env(format!(
            "latlab sched: the in-kernel engine did not start: {e} (LATLAB_TRACER=tracefs runs \
             the tracefs engine)"
        ))
    })?;
    let started = SystemTime::now();
    let t0 = Instant::now();
    let mut matcher = Matcher::new(cfg.target.clone(), std::path::Path::new("/proc"));
    let mut kid = match &cfg.target {
        Target::Command(argv) => {
            let k = confined.lifted(&home, || child::Child::spawn(argv))?;
            matcher.adopt(k.pid());
            Some(k)
        }
        _ => None,
    };
    let deadline = cfg.duration_ns.map(|d| t0 + Duration::from_nanos(d));
    let pids = match &cfg.target {
        Target::Pid(p) => p.clone(),
        _ => Vec::new(),
    };
    let (mut exited, mut fresh, mut kept) = (Vec::new(), Vec::new(), Kept::new());
    let by_tid = !matches!(cfg.target, Target::Command(_));
    let (status, ended_by) = super::watch(
        &mut || {
            probe.drain(&mut exited, &mut fresh);
            kept.take(&mut fresh, &mut matcher, by_tid);
        },
        ctx,
        kid.as_mut(),
        &pids,
        deadline,
    );
    let stopped = super::end_command(ctx, kid, status);
    let duration_s = t0.elapsed().as_secs_f64();
    probe.drain(&mut exited, &mut fresh);
    kept.take(&mut fresh, &mut matcher, by_tid);
    let Kept {
        spikes: mut sent,
        let_go,
        ..
    } = kept;
    let counters = probe.counters();
    exited.extend(probe.tasks());
    // Detached here: nothing of the engine outlives the measurement.
    drop(probe);
    drop(confined);
    with_worst(&exited, &mut sent, cfg.threshold_ns);
    let tasks = chosen(exited, &mut matcher);
    let out = report::Assembled::new(&tasks, &[]);
    let names: HashMap<i32, String> = tasks
        .iter()
        .zip(&out.thread_names)
        .filter(|(_, n)| !n.is_empty())
        .map(|(t, n)| (t.tid, n.clone()))
        .collect();
    let (records, not_kept) = spikes(sent, &names);
    let trace = TraceReport {
        threshold_ns: cfg.threshold_ns,
        cpus: cfg.cpus.clone().unwrap_or(all),
        events: counters.events,
        lost_events: counters.unfiled,
        spikes: records,
        spikes_dropped: counters.spikes_lost + not_kept + let_go,
        warnings: losses(&counters),
        ..Default::default()
    };
    for w in &trace.warnings {
        ctx.warn(w.clone());
    }
    if tasks.is_empty() {
        ctx.warn(format!("no task matched {} during the run", cfg.target.describe()));
    }
    let events_per_s = super::rate(counters.events, duration_s);
    if matches!(cfg.target, Target::All) {
        ctx.warn(match events_per_s {
            Some(r) => format!(
                "--all: {r:.0} events/s aggregated in kernel ({} events in {duration_s:.1} s)",
                counters.events
            ),
            None => format!(
                "--all: {} events aggregated in kernel in {duration_s:.3} s (too short a run \
                 for a rate)",
                counters.events
            ),
        });
    }
    Ok(super::outcome(
        ctx,
        cfg,
        (started, duration_s),
        trace,
        events_per_s,
        out,
        (&ended_by, status, &stopped),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn delays(values: &[u64]) -> Delays {
        let mut hist = vec![0u32; 280];
        for &v in values {
            // The kernel's bucket(): 8 linear, then 8 per octave.
            let b = if v < 8 {
                v as usize
            } else {
                let e = 63 - v.leading_zeros() as usize;
                8 + (e - 3) * 8 + ((v >> (e - 3)) & 7) as usize
            };
            hist[b.min(279)] += 1;
        }
        Delays {
            n: values.len() as u64,
            sum: values.iter().sum(),
            max: values.iter().copied().max().unwrap_or(0),
            worst: None,
            hist,
        }
    }

    #[test]
    fn samples_keep_the_count_and_the_exact_maximum_and_quantiles_within_a_bucket() {
        let v: Vec<u64> = (1..=1000).map(|i| i * 1000).collect();
        let s = samples(&delays(&v));
        assert_eq!(s.count(), 1000);
        assert_eq!(s.max(), 1_000_000);
        let Samples::Few(mut got) = s else { panic!("few") };
        got.sort_unstable();
        // The median, 500 us, within an eighth of an octave.
        let med = got[499] as f64;
        assert!((med - 500_000.0).abs() / 500_000.0 < 0.07, "{med}");
        // Many values go to a recorder, whose sum is the kernel's exact one.
        let many: Vec<u64> = (0..(FEW as u64 + 10)).map(|i| 1000 + i).collect();
        let d = delays(&many);
        let s = samples(&d);
        assert!(matches!(s, Samples::Many(_)));
        assert_eq!(s.count(), many.len() as u64);
        assert_eq!(s.sum(), d.sum as u128);
        assert_eq!(s.max(), d.max);
        assert_eq!(samples(&delays(&[])).count(), 0);
    }
}
