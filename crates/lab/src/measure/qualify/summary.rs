//! The final result of a qualification: every segment's intervals (earlier segments' read back
//! from the store, this one's as measured), the series per CPU merged over all of them, the
//! gaps between segments, facts that changed between them, and each requirement judged with
//! gate's semantics on the intervals as replicates (as `latlab gate` judges runs).

use super::QualifyConfig;
use latlab_analysis::gate::judge::{judge, text, Outcome, RunCount};
use latlab_analysis::gate::junit;
use latlab_core::result::qualification::{
    CpuFigures, Gap, IntervalFigures, Qualification, RequirementVerdict, State,
};
use latlab_core::result::sysfacts::SystemFacts;
use latlab_core::result::trace::{SpikeRecord, TraceReport};
use latlab_core::result::{LoadReport, Run, Series};
use latlab_core::stats::Recorder;

/// What earlier segments of a qualification left in the store.
#[derive(Debug, Default)]
pub(crate) struct Before {
    /// Segments so far.
    pub(crate) segments: u32,
    /// Seconds measured.
    pub(crate) measured_s: f64,
    /// The first start, RFC 3339.
    pub(crate) first_started: String,
    /// Every stored interval, oldest first.
    pub(crate) intervals: Vec<IntervalFigures>,
    /// Per requirement (in the config's order), each interval counted.
    pub(crate) counts: Vec<Vec<RunCount>>,
    /// Per measured CPU: everything its intervals recorded, merged; overruns; lost samples.
    pub(crate) merged: Vec<(usize, Recorder, u64, u64)>,
    /// Per segment with a stored interval: its number, first interval's start, last
    /// checkpoint's end and boot id.
    pub(crate) ends: Vec<SegmentSpan>,
    /// Per segment: its system facts.
    pub(crate) facts: Vec<SystemFacts>,
    /// Per load (in `--load` order): what every earlier segment's checkpoints counted.
    pub(crate) loads: Vec<LoadReport>,
    /// Every explained spike the intervals kept.
    pub(crate) spikes: Vec<latlab_core::result::trace::SpikeRecord>,
    /// Every `--on-threshold` firing of the intervals, in order.
    pub(crate) actions: Vec<latlab_core::result::trace::Firing>,
}

/// Where an earlier segment's stored intervals begin and end.
#[derive(Debug, Clone)]
pub(crate) struct SegmentSpan {
    /// Its number.
    pub(crate) number: u32,
    /// Its first interval's start, RFC 3339.
    pub(crate) started: String,
    /// Its last checkpoint's end.
    pub(crate) ended: String,
    /// The boot it ran in.
    pub(crate) boot_id: String,
}

/// Spikes the final result keeps as records: the worst of the whole qualification.
const KEPT_SPIKES: usize = 50;

/// An interval run's figures for the final result's list.
pub(crate) fn figures(run: &Run) -> Option<IntervalFigures> {
    let q = run.qualification.as_ref()?;
    Some(IntervalFigures {
        seq: q.interval?,
        segment: q.segment,
        run: run.id.clone(),
        started: run.started.clone(),
        ended: run.ended.clone(),
        duration_s: run.duration_s,
        cpus: run
            .series
            .iter()
            .map(|s| CpuFigures {
                cpu: s.cpu.unwrap_or(usize::MAX),
                count: s.summary.count,
                max_ns: s.summary.max_ns,
                p99_ns: s.summary.percentiles.p99,
                overruns: s.overruns,
            })
            .collect(),
        spikes: run
            .trace
            .as_ref()
            .map_or(0, |t| t.spikes.len() as u64 + t.spikes_not_kept),
    })
}

/// One interval counted against each requirement (an interval without samples counts for
/// none).
pub(crate) fn counts(cfg: &QualifyConfig, run: &Run, seq: u64) -> Vec<Option<RunCount>> {
    cfg.derived
        .requirements
        .iter()
        .map(|req| {
            latlab_analysis::gate::count::count(run, &format!("interval {seq}"), req, None)
                .ok()
                .map(|c| c.0)
        })
        .collect()
}

/// Adds an interval's loads to the running totals per load.
pub(crate) fn add_loads(totals: &mut Vec<LoadReport>, loads: &[LoadReport]) {
    for l in loads {
        match totals.iter_mut().find(|t| t.spec == l.spec) {
            Some(t) => {
                t.count += l.count;
                t.seconds += l.seconds;
                t.rate_per_s = if t.seconds > 0.0 {
                    t.count as f64 / t.seconds
                } else {
                    0.0
                };
            }
            None => totals.push(l.clone()),
        }
    }
}

/// What earlier segments' stored intervals (oldest first) give the final result.
pub(crate) fn before(cfg: &QualifyConfig, runs: &[Run]) -> Before {
    let mut b = Before {
        counts: vec![Vec::new(); cfg.derived.requirements.len()],
        ..Before::default()
    };
    for run in runs {
        let Some(q) = run.qualification.as_ref() else {
            continue;
        };
        if b.first_started.is_empty() {
            b.first_started = q.first_started.clone();
        }
        match b.ends.last_mut() {
            Some(e) if e.number == q.segment => e.ended = run.ended.clone(),
            _ => {
                b.ends.push(SegmentSpan {
                    number: q.segment,
                    started: run.started.clone(),
                    ended: run.ended.clone(),
                    boot_id: q.boot_id.clone(),
                });
                b.facts.push(q.system.clone().unwrap_or_default());
            }
        }
        b.segments = b.segments.max(q.segment);
        b.measured_s += run.duration_s;
        if let Some(f) = figures(run) {
            b.intervals.push(f);
        }
        for (i, c) in counts(cfg, run, q.interval.unwrap_or(0)).into_iter().enumerate() {
            b.counts[i].extend(c);
        }
        for s in &run.series {
            let cpu = s.cpu.unwrap_or(usize::MAX);
            let rec = Recorder::from_stored(&s.summary, &s.histogram);
            match b.merged.iter_mut().find(|m| m.0 == cpu) {
                Some(m) => {
                    m.1.merge(&rec);
                    m.2 += s.overruns;
                    m.3 += s.lost_samples;
                }
                None => b.merged.push((cpu, rec, s.overruns, s.lost_samples)),
            }
        }
        add_loads(&mut b.loads, &run.loads);
        if let Some(t) = &run.trace {
            b.spikes.extend(t.spikes.iter().cloned());
            b.actions.extend(t.actions.iter().cloned());
        }
    }
    b
}

/// This segment, as measured.
pub(crate) struct Segment {
    /// Its number, from 1.
    pub(crate) number: u32,
    /// When it started, RFC 3339.
    pub(crate) started: String,
    /// The boot it ran in.
    pub(crate) boot_id: String,
    /// The machine's facts at its start.
    pub(crate) facts: SystemFacts,
    /// Its intervals.
    pub(crate) intervals: Vec<IntervalFigures>,
    /// Per requirement, its intervals counted.
    pub(crate) counts: Vec<Vec<RunCount>>,
    /// Per CPU: everything its thread recorded, overruns, lost samples.
    pub(crate) recs: Vec<(usize, Recorder, u64, u64)>,
    /// Seconds it measured.
    pub(crate) measured_s: f64,
    /// Its explained spikes.
    pub(crate) spikes: Vec<SpikeRecord>,
    /// Its intervals' `--on-threshold` firings, in order.
    pub(crate) actions: Vec<latlab_core::result::trace::Firing>,
    /// The finished trace report (`--trace`), its spikes taken out.
    pub(crate) trace: Option<TraceReport>,
    /// Stopped by a signal.
    pub(crate) interrupted: bool,
    /// Per load: what its checkpoints counted.
    pub(crate) loads: Vec<LoadReport>,
}

/// The verdict of each requirement on every interval, with the JUnit cases and whether any
/// is violated or undecided.
fn verdicts(
    cfg: &QualifyConfig,
    counts: &[Vec<RunCount>],
    seconds: f64,
) -> (Vec<RequirementVerdict>, Vec<junit::Case>) {
    let mut out = Vec::new();
    let mut cases = Vec::new();
    for (req, runs) in cfg.derived.requirements.iter().zip(counts) {
        let (verdict, because, to_decide) = if runs.is_empty() {
            (
                Outcome::Undecided,
                "no checkpoint interval with samples".to_string(),
                Some("a qualification that measures at least two intervals".to_string()),
            )
        } else {
            let j = judge(req, runs, cfg.confidence, false);
            let n: u64 = runs.iter().map(|r| r.n).sum();
            let over = runs.iter().filter(|r| r.max_ns >= req.threshold_ns()).count();
            let because = match (req.quantile, j.outcome, &req.event) {
                (_, _, latlab_analysis::gate::requirement::Event::Max(t)) => format!(
                    "{over} of {} intervals had a maximum at or above {} us ({n} samples)",
                    runs.len(),
                    *t as f64 / 1e3
                ),
                (_, Outcome::Met, _) => format!(
                    "rate upper bound {} < {} over {} intervals ({n} samples, {} events)",
                    latlab_core::stats::cfmt::g(j.bounds.1, 4),
                    latlab_core::stats::cfmt::g(req.limit, 6),
                    runs.len(),
                    j.m.1
                ),
                (_, Outcome::Violated, _) => format!(
                    "rate lower bound {} > {} over {} intervals ({n} samples, {} events)",
                    latlab_core::stats::cfmt::g(j.bounds.0, 4),
                    latlab_core::stats::cfmt::g(req.limit, 6),
                    runs.len(),
                    j.m.0
                ),
                (_, Outcome::Undecided, _) => format!(
                    "rate bounds [{}, {}] straddle {} over {} intervals ({n} samples)",
                    latlab_core::stats::cfmt::g(j.bounds.0, 4),
                    latlab_core::stats::cfmt::g(j.bounds.1, 4),
                    latlab_core::stats::cfmt::g(req.limit, 6),
                    runs.len()
                ),
            };
            let because = match &j.single_run {
                Some(w) => format!("{because}; {w}"),
                None => because,
            };
            (j.verdict(), because, j.to_decide.clone())
        };
        let line = format!("{}: {} ({because})", req.text, text(verdict).to_uppercase());
        let mut detail = line.clone();
        if let Some(t) = &to_decide {
            detail.push_str(&format!("\nto decide: {t}"));
        }
        cases.push(junit::Case {
            name: req.text.clone(),
            outcome: verdict,
            message: line,
            detail,
            seconds,
        });
        out.push(RequirementVerdict {
            requirement: req.text.clone(),
            verdict: text(verdict).to_string(),
            because,
            to_decide,
        });
    }
    (out, cases)
}

/// What changed between segments' facts (a new kernel or BIOS after a reboot).
fn changed(facts: &[SystemFacts]) -> Vec<String> {
    let mut out = Vec::new();
    for (i, w) in facts.windows(2).enumerate() {
        let (a, b) = (&w[0], &w[1]);
        for (what, x, y) in [
            ("kernel", &a.kernel_release, &b.kernel_release),
            ("kernel command line", &a.cmdline, &b.cmdline),
            ("BIOS version", &a.bios_version, &b.bios_version),
            ("microcode", &a.microcode, &b.microcode),
            ("clocksource", &a.clocksource, &b.clocksource),
            ("SMT", &a.smt, &b.smt),
        ] {
            if x != y {
                out.push(format!("segment {}: {what} {x} -> {y}", i + 2));
            }
        }
        if a.governors != b.governors {
            out.push(format!(
                "segment {}: governor {} -> {}",
                i + 2,
                a.governors.join(", "),
                b.governors.join(", ")
            ));
        }
    }
    out
}

/// The gaps between segments: each segment's last checkpoint to the next one's start.
fn gaps(b: Option<&Before>, seg: &Segment) -> Vec<Gap> {
    let Some(b) = b else {
        return Vec::new();
    };
    let mut starts: Vec<(&str, &str)> = b
        .ends
        .iter()
        .skip(1)
        .map(|s| (s.started.as_str(), s.boot_id.as_str()))
        .collect();
    starts.push((&seg.started, &seg.boot_id));
    b.ends
        .iter()
        .zip(starts)
        .map(|(e, (start, next_boot))| {
            let t = |s: &str| humantime::parse_rfc3339(s).ok();
            let seconds = match (t(&e.ended), t(start)) {
                (Some(a), Some(z)) => z.duration_since(a).map_or(0.0, |d| d.as_secs_f64()),
                _ => 0.0,
            };
            Gap {
                after_segment: e.number,
                from: e.ended.clone(),
                to: start.to_string(),
                seconds,
                reboot: e.boot_id != next_boot,
            }
        })
        .collect()
}

/// Per requirement, every interval counted: earlier segments' and this one's.
fn all_counts(cfg: &QualifyConfig, b: Option<&Before>, seg: &Segment) -> Vec<Vec<RunCount>> {
    let mut counts: Vec<Vec<RunCount>> = b.map(|b| b.counts.clone()).unwrap_or_default();
    counts.resize(cfg.derived.requirements.len(), Vec::new());
    for (all, mine) in counts.iter_mut().zip(&seg.counts) {
        all.extend(mine.iter().cloned());
    }
    counts
}

/// The final series, one per CPU: every earlier interval merged, plus this segment's
/// threads.
fn series(
    cfg: &QualifyConfig,
    b: Option<&Before>,
    seg: &Segment,
    (policy, prio): (latlab_core::config::Policy, i32),
) -> Vec<Series> {
    let mut merged: Vec<(usize, Recorder, u64, u64)> = b
        .map(|b| {
            b.merged
                .iter()
                .map(|m| (m.0, m.1.clone(), m.2, m.3))
                .collect()
        })
        .unwrap_or_default();
    for (cpu, rec, o, l) in &seg.recs {
        match merged.iter_mut().find(|m| m.0 == *cpu) {
            Some(m) => {
                m.1.merge(rec);
                m.2 += o;
                m.3 += l;
            }
            None => merged.push((*cpu, rec.clone(), *o, *l)),
        }
    }
    merged.sort_by_key(|m| m.0);
    merged
        .iter()
        .map(|(cpu, rec, o, l)| {
            let mut s = Series::from_recorder(format!("cpu{cpu}"), rec);
            s.cpu = Some(*cpu);
            s.policy = policy.to_string();
            s.prio = prio;
            s.interval_ns = Some(cfg.interval_ns);
            s.overruns = *o;
            s.lost_samples = *l;
            s
        })
        .collect()
}

/// The final trace report (`--trace`): this segment's finished report with every
/// segment's spikes (the worst [`KEPT_SPIKES`] kept) and firings.
fn trace(cfg: &QualifyConfig, b: Option<&Before>, seg: &Segment) -> Option<TraceReport> {
    let mut t = seg.trace.clone()?;
    let mut spikes: Vec<SpikeRecord> = b.map(|b| b.spikes.clone()).unwrap_or_default();
    spikes.extend(seg.spikes.iter().cloned());
    t.per_cpu = latlab_core::result::culprits::summarise(&spikes, &cfg.cpus);
    spikes.sort_by_key(|s| std::cmp::Reverse(s.latency_ns));
    t.spikes_not_kept = spikes.len().saturating_sub(KEPT_SPIKES) as u64;
    spikes.truncate(KEPT_SPIKES);
    t.spikes = spikes;
    // Each interval took its own firings; the final result lists them all.
    let mut actions = b.map(|b| b.actions.clone()).unwrap_or_default();
    actions.extend(seg.actions.iter().cloned());
    actions.extend(std::mem::take(&mut t.actions));
    t.actions = actions;
    Some(t)
}

/// After a resume, every segment's loads as their checkpoints counted them (the driver adds
/// this segment's final reports; a single segment has those alone).
fn loads(b: Option<&Before>, seg: &Segment) -> Vec<LoadReport> {
    let mut loads: Vec<LoadReport> = b.map(|b| b.loads.clone()).unwrap_or_default();
    if b.is_some() {
        add_loads(&mut loads, &seg.loads);
    }
    for l in &mut loads {
        l.note = Some(format!(
            "all {} segment(s), from their checkpoints",
            seg.number
        ));
    }
    loads
}


/// The final result: `base` (the run the context built) filled with everything.
pub(crate) fn finish(
    cfg: &QualifyConfig,
    mut base: Run,
    seg: Segment,
    policy: latlab_core::config::Policy,
    prio: i32,
) -> (Run, Vec<junit::Case>) {
    let b = cfg.derived.before.as_deref();
    let measured_s = b.map_or(0.0, |b| b.measured_s) + seg.measured_s;
    let mut intervals: Vec<IntervalFigures> = b.map(|b| b.intervals.clone()).unwrap_or_default();
    intervals.extend(seg.intervals.iter().cloned());
    let (verdicts, cases) = verdicts(cfg, &all_counts(cfg, b, &seg), measured_s);
    base.series = series(cfg, b, &seg, (policy, prio));
    if let Some(t) = trace(cfg, b, &seg) {
        base.trace = Some(t);
    }
    base.loads.extend(loads(b, &seg));
    let mut facts: Vec<SystemFacts> = b.map(|b| b.facts.clone()).unwrap_or_default();
    facts.push(seg.facts.clone());
    let gaps = gaps(b, &seg);
    // A signal in the last moment of a qualification that already measured all of its length
    // does not make it unfinished (a --resume would add an empty segment and a false gap).
    let finished = !seg.interrupted || measured_s >= cfg.duration_ns as f64 / 1e9;
    base.interrupted = !finished;
    base.duration_s = measured_s;
    if let Some(f) = b.filter(|b| !b.first_started.is_empty()) {
        base.started = f.first_started.clone();
    }
    let violated: Vec<&str> = verdicts
        .iter()
        .filter(|v| v.verdict == "violated")
        .map(|v| v.requirement.as_str())
        .collect();
    if !violated.is_empty() {
        base.check_failure = Some(format!("requirement {} violated", violated.join(", ")));
    }
    let changed = changed(&facts);
    base.warnings.extend(changed.iter().map(|c| format!("the machine changed between segments: {c}")));
    base.qualification = Some(Box::new(Qualification {
        id: cfg.id.clone(),
        state: if finished {
            State::Finished
        } else {
            State::Interrupted
        },
        segment: seg.number,
        interval: None,
        planned_s: cfg.duration_ns as f64 / 1e9,
        measured_s,
        first_started: base.started.clone(),
        host: base.environment.hostname.clone(),
        boot_id: seg.boot_id,
        pid: std::process::id(),
        checkpoint_ms: None,
        rss_kb: None,
        system: Some(seg.facts),
        intervals,
        gaps,
        verdicts,
        changed,
    }));
    (base, cases)
}

#[cfg(test)]
mod tests {
    use super::*;
    use latlab_core::result::Environment;
    use std::time::{Duration, SystemTime, UNIX_EPOCH};

    fn cfg() -> QualifyConfig {
        let a: super::super::args::QualifyArgs = crate::driver::args::parse_args(
            "qualify",
            ["latlab", "qualify", "-D", "60s", "-a", "1", "--require", "max<1ms", "--no-loads"],
        )
        .unwrap();
        QualifyConfig::from_args(&a, &latlab_core::config::CpuSet::from_cpus([0, 1])).unwrap()
    }

    /// A stored interval of segment `seg` from `t` s to `t + 10` s: 1000 samples on CPU 1 of
    /// `ns` each.
    fn interval(seq: u64, seg: u32, t: u64, ns: u64, boot: &str) -> Run {
        let start = UNIX_EPOCH + Duration::from_secs(1_800_000_000 + t);
        let mut rec = Recorder::new();
        for _ in 0..1000 {
            rec.record(ns);
        }
        let mut s = Series::from_recorder("cpu1".into(), &rec);
        s.cpu = Some(1);
        let mut r = Run::new("qualify", start, vec![], serde_json::Value::Null, Environment::capture());
        r.started = latlab_core::result::rfc3339(start);
        r.ended = latlab_core::result::rfc3339(start + Duration::from_secs(10));
        r.duration_s = 10.0;
        r.series = vec![s];
        r.loads = vec![load(10)];
        r.qualification = Some(Box::new(Qualification {
            id: "Q".into(),
            state: State::InProgress,
            segment: seg,
            interval: Some(seq),
            planned_s: 60.0,
            measured_s: 0.0,
            first_started: latlab_core::result::rfc3339(UNIX_EPOCH + Duration::from_secs(1_800_000_000)),
            host: "h".into(),
            boot_id: boot.into(),
            pid: 1,
            checkpoint_ms: None,
            rss_kb: None,
            system: Some(SystemFacts {
                kernel_release: format!("k{seg}"),
                ..Default::default()
            }),
            intervals: vec![],
            gaps: vec![],
            verdicts: vec![],
            changed: vec![],
        }));
        r
    }

    /// A hackbench load's report of `count` messages in 10 s.
    fn load(count: u64) -> LoadReport {
        LoadReport {
            spec: "hackbench".into(),
            kind: "hackbench".into(),
            count,
            unit: "messages".into(),
            seconds: 10.0,
            rate_per_s: count as f64 / 10.0,
            note: None,
            cpus: None,
            stopped_s: None,
        }
    }

    #[test]
    fn segments_merge_gaps_are_recorded_and_intervals_are_the_replicates() {
        let mut c = cfg();
        // Segment 1: two intervals; killed; segment 2 (after a reboot, a new kernel) one
        // interval 100 s after segment 1's last checkpoint ended.
        let runs = [
            interval(1, 1, 0, 5_000, "b1"),
            interval(2, 1, 10, 7_000, "b1"),
            interval(3, 2, 120, 6_000, "b2"),
        ];
        c.derived.before = Some(std::sync::Arc::new(before(&c, &runs)));
        let b = c.derived.before.as_deref().unwrap();
        assert_eq!((b.segments, b.measured_s, b.intervals.len()), (2, 30.0, 3));
        assert_eq!(b.counts[0].len(), 3, "each interval counted");
        assert_eq!(b.merged[0].1.count, 3000);
        assert_eq!(b.merged[0].1.max, 7_000);
        // Segment 3 now: one more interval, 2000 samples of 2 µs, after another gap.
        let mut rec = Recorder::new();
        for _ in 0..2000 {
            rec.record(2_000);
        }
        let seg = Segment {
            number: 3,
            started: latlab_core::result::rfc3339(UNIX_EPOCH + Duration::from_secs(1_800_000_200)),
            boot_id: "b2".into(),
            facts: SystemFacts {
                kernel_release: "k2".into(),
                ..Default::default()
            },
            intervals: vec![],
            counts: vec![vec![]],
            recs: vec![(1, rec, 0, 0)],
            measured_s: 20.0,
            spikes: vec![],
            actions: vec![],
            trace: None,
            interrupted: false,
            loads: vec![load(5)],
        };
        let base = Run::new("qualify", SystemTime::now(), vec![], serde_json::Value::Null, Environment::capture());
        let (run, cases) = finish(&c, base, seg, latlab_core::config::Policy::Fifo, 95);
        let q = run.qualification.unwrap();
        assert_eq!(q.state, State::Finished);
        assert_eq!((q.segment, q.measured_s), (3, 50.0));
        assert_eq!(run.series[0].summary.count, 5000);
        assert_eq!(run.series[0].summary.max_ns, 7_000);
        // Two gaps: 1 -> 2 (100 s, a reboot), 2 -> 3 (70 s, same boot).
        assert_eq!(q.gaps.len(), 2, "{:?}", q.gaps);
        assert_eq!((q.gaps[0].after_segment, q.gaps[0].seconds, q.gaps[0].reboot), (1, 100.0, true));
        assert_eq!((q.gaps[1].after_segment, q.gaps[1].seconds, q.gaps[1].reboot), (2, 70.0, false));
        assert_eq!(q.changed, ["segment 2: kernel k1 -> k2"]);
        // max<1ms on three intervals, every maximum below: met.
        assert_eq!(q.verdicts[0].verdict, "met", "{:?}", q.verdicts);
        assert_eq!(cases.len(), 1);
        // The loads over every segment, from their checkpoints: 3 intervals of 10, this
        // segment's 5.
        assert_eq!(run.loads.len(), 1, "{:?}", run.loads);
        assert_eq!(run.loads[0].count, 35);
        assert!(run.loads[0].note.as_deref().unwrap().contains("all 3 segment(s)"));
        assert_eq!(run.started, latlab_core::result::rfc3339(UNIX_EPOCH + Duration::from_secs(1_800_000_000)));
    }
}
