//! `latlab sched`'s result and text: one series per measured thread (wake-up latency, named
//! by command so runs compare across restarts), one merged per process with several, the
//! per-thread table with the seed's columns, the worst delays with who ran instead, and who
//! woke each thread.

use super::track::Task;
use latlab_core::config::DisplayUnit;
use latlab_analysis::export::columns;
use latlab_core::result::{Run, Series};
use latlab_core::stats::Recorder;
use std::collections::BTreeMap;

/// Series built from the tasks, and each task's series name (by task index).
pub(crate) struct Assembled {
    /// One series per thread.
    pub(crate) series: Vec<Series>,
    /// Per process with two or more measured threads, its threads merged: kept beside the
    /// series (not as one), so `compare` and `gate`, which pool a run's series, count each
    /// wake-up once.
    pub(crate) processes: Vec<serde_json::Value>,
    /// The name of task i's series ("" for a task with no delay measured).
    pub(crate) thread_names: Vec<String>,
}

fn policy_of(kprio: i32) -> (String, i32) {
    match kprio {
        p if p < 0 => ("deadline".into(), 0),
        p if p < 100 => ("rt".into(), 99 - p),
        _ => ("other".into(), 0),
    }
}

/// Names unique within a run, stable across runs: the command name, then `NAME#2`, ... in
/// the order tasks were first seen.
fn unique(used: &mut BTreeMap<String, u32>, base: &str) -> String {
    let n = used.entry(base.to_string()).or_insert(0);
    *n += 1;
    if *n == 1 {
        base.to_string()
    } else {
        format!("{base}#{n}")
    }
}

/// True when the kernel lost events on any CPU while `t` was being followed.
fn lost_during(t: &Task, losses: &[(usize, Vec<(u64, u64)>)]) -> bool {
    losses
        .iter()
        .flat_map(|(_, l)| l.iter())
        .any(|&(ts, _)| ts >= t.first_ns && ts <= t.last_ns.saturating_add(100_000_000))
}

fn extra(t: &Task, lost: bool) -> serde_json::Value {
    let total: u64 = t.wakers.iter().map(|w| w.1).sum();
    serde_json::json!({
        "tid": t.tid,
        "pid": t.tgid,
        "comm": t.comm.as_str(),
        "wakeups": t.wake.count(),
        "preemptions": t.preempt.count(),
        "preempt_max_ns": t.preempt.max(),
        "preempt_mean_ns": if t.preempt.count() > 0 {
            t.preempt.sum() as f64 / t.preempt.count() as f64
        } else {
            0.0
        },
        "run_ns": t.run_ns,
        "runs": t.runs,
        "migrations": t.migrations,
        "cpus": t.cpus,
        "woken_by": t.wakers.iter().map(|(w, n)| serde_json::json!({
            "waker": w, "count": n, "share": *n as f64 / total.max(1) as f64
        })).collect::<Vec<_>>(),
        "exited": t.exited,
        "unmatched": t.unmatched,
        "inferred": t.inferred,
        "pending_at_end": t.pending_at_end,
        "lost_events": lost,
    })
}

impl Assembled {
    /// The series of `tasks`, flagging those followed while the kernel lost events.
    pub(crate) fn new(tasks: &[Task], losses: &[(usize, Vec<(u64, u64)>)]) -> Assembled {
        let mut used = BTreeMap::new();
        let mut series = Vec::new();
        let mut thread_names = Vec::new();
        // Per process: its series name base, merged recorder, threads.
        let mut procs: BTreeMap<i32, (String, Recorder, u32, bool)> = BTreeMap::new();
        // Only a process of two or more measured threads is merged: no histogram (hundreds of
        // KiB each) for the many processes of one thread.
        let mut threads: latlab_trace::FastMap<i32, u32> = Default::default();
        let shape = latlab_core::stats::LatHistogram::new();
        for t in tasks.iter().filter(|t| t.wake.count() + t.preempt.count() > 0) {
            *threads.entry(t.tgid).or_default() += 1;
        }
        for t in tasks {
            if t.wake.count() + t.preempt.count() == 0 {
                thread_names.push(String::new());
                continue;
            }
            let name = unique(&mut used, &t.comm.as_str());
            let lost = lost_during(t, losses);
            let (summary, hist) = t.wake.summarise(&shape);
            let mut s = Series::from_summary(name.clone(), summary, hist);
            s.cpu = (t.cpus.len() == 1).then(|| t.cpus[0]);
            (s.policy, s.prio) = policy_of(t.prio);
            s.lost_samples = t.unmatched;
            s.extra = Some(extra(t, lost));
            series.push(s);
            thread_names.push(name);
            if threads.get(&t.tgid).is_none_or(|&n| n < 2) {
                continue;
            }
            let p = procs.entry(t.tgid).or_insert_with(|| {
                let leader = tasks.iter().find(|x| x.tid == t.tgid).unwrap_or(t);
                (leader.comm.as_str().into_owned(), Recorder::new(), 0, false)
            });
            t.wake.add_to(&mut p.1);
            p.2 += 1;
            p.3 |= lost;
        }
        let mut processes = Vec::new();
        for (pid, (base, rec, threads, lost)) in procs {
            if threads < 2 {
                continue;
            }
            let x = rec.summary();
            processes.push(serde_json::json!({
                "name": base, "pid": pid, "threads": threads, "lost_events": lost,
                "wakeups": x.count, "mean_ns": x.mean_ns, "max_ns": x.max_ns,
                "p99_ns": x.percentiles.p99, "p99_9_ns": x.percentiles.p99_9,
            }));
        }
        Assembled {
            series,
            processes,
            thread_names,
        }
    }
}

fn get<'a>(s: &'a Series, k: &str) -> Option<&'a serde_json::Value> {
    s.extra.as_ref().and_then(|e| e.get(k))
}

/// Rows shown in the per-thread table (the rest are summed up in a line).
const ROWS: usize = 30;

/// The text report of a `sched` run; `why` adds the per-CPU summary of the delays' causes
/// (`runs show` adds it itself for any traced run).
pub(crate) fn render(run: &Run, u: DisplayUnit, why: bool) -> String {
    let p = &run.parameters;
    let target = p.get("target_text").and_then(|v| v.as_str()).unwrap_or("?");
    let events = p.get("events").and_then(|v| v.as_u64()).unwrap_or(0);
    let lost = p.get("lost_events").and_then(|v| v.as_u64()).unwrap_or(0);
    let rate = p
        .get("events_per_s")
        .and_then(|v| v.as_f64())
        .map_or_else(|| "no rate: too short".to_string(), |r| format!("{r} /s"));
    let mut s = format!(
        "latlab sched {target}  {:.1} s  {events} events ({rate}), {lost} lost  run {}\n",
        run.duration_s, run.id
    );
    let threads: Vec<&Series> = run.series.iter().collect();
    if threads.is_empty() {
        s.push_str("no measured task was woken or preempted\n");
    } else {
        s.push_str(&format!(
            "wake-up latency (sched_waking -> switched in) per thread, {u}; preemption delay \
             (runnable -> back on a CPU)\n"
        ));
        let mut sorted = threads.clone();
        sorted.sort_by_key(|x| std::cmp::Reverse(x.summary.max_ns));
        let rows: Vec<Vec<String>> = sorted.iter().take(ROWS).map(|x| thread_row(x, u)).collect();
        s.push_str(&columns::render(
            &[
                "thread", "tid", "prio", "cpu", "wake-ups", "min", "avg", "p99", "max", "preempt",
                "max", "migr", "woken by",
            ],
            &rows,
        ));
        if sorted.len() > ROWS {
            s.push_str(&format!(
                "({} more threads in the result: --json FILE, or latlab runs show {} --json \
                 where it was stored)\n",
                sorted.len() - ROWS,
                run.id
            ));
        }
        let flagged: Vec<&str> = threads
            .iter()
            .filter(|x| get(x, "lost_events").and_then(|v| v.as_bool()) == Some(true))
            .map(|x| x.name.as_str())
            .collect();
        if !flagged.is_empty() {
            s.push_str(&format!(
                "lost: the kernel lost events while these were followed (figures may be \
                 short): {}\n",
                flagged.join(", ")
            ));
        }
        for x in p
            .get("processes")
            .and_then(|v| v.as_array())
            .into_iter()
            .flatten()
        {
            let f = |k: &str| x.get(k).and_then(|v| v.as_f64()).unwrap_or(0.0);
            s.push_str(&format!(
                "{} (pid {}, {} threads): {} wake-ups, avg {} p99 {} max {} {u}\n",
                x.get("name").and_then(|v| v.as_str()).unwrap_or("?"),
                f("pid"),
                f("threads"),
                f("wakeups"),
                u.fmt_ns(f("mean_ns")),
                u.fmt_ns(f("p99_ns")),
                u.fmt_ns(f("max_ns"))
            ));
        }
    }
    if let Some(t) = &run.trace {
        s.push_str(&worst(t, u));
        if why {
            s.push_str(&latlab_analysis::export::why::why_for(run, u, true));
        }
    }
    for w in &run.warnings {
        s.push_str(&format!("warning: {w}\n"));
    }
    // Task names come from the traced programs: escapes in them are shown, never obeyed.
    latlab_core::output::printable(&s).into_owned()
}

fn thread_row(x: &Series, u: DisplayUnit) -> Vec<String> {
    let n = |k: &str| get(x, k).and_then(|v| v.as_u64()).unwrap_or(0);
    let wakers = get(x, "woken_by")
        .and_then(|v| v.as_array())
        .map(|a| {
            a.iter()
                .take(2)
                .map(|w| {
                    format!(
                        "{} {:.0}%",
                        w.get("waker").and_then(|v| v.as_str()).unwrap_or("?"),
                        100.0 * w.get("share").and_then(|v| v.as_f64()).unwrap_or(0.0)
                    )
                })
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_default();
    let cpus = get(x, "cpus")
        .and_then(|v| v.as_array())
        .map(|a| {
            a.iter()
                .filter_map(|c| c.as_u64())
                .map(|c| c.to_string())
                .collect::<Vec<_>>()
                .join(",")
        })
        .unwrap_or_default();
    let mut name = x.name.clone();
    if get(x, "exited").and_then(|v| v.as_bool()) == Some(true) {
        name.push_str(" (exited)");
    }
    if get(x, "lost_events").and_then(|v| v.as_bool()) == Some(true) {
        name.push_str(" *lost");
    }
    let some = x.summary.count > 0;
    let v = |ns: f64| if some { u.fmt_ns(ns) } else { "-".into() };
    vec![
        name,
        n("tid").to_string(),
        if x.policy == "other" {
            "normal".into()
        } else {
            format!("{} {}", x.policy, x.prio)
        },
        cpus,
        x.summary.count.to_string(),
        v(x.summary.min_ns as f64),
        v(x.summary.mean_ns),
        x.summary.percentiles.supported(x.summary.count)[2]
            .map_or("-".to_string(), |p| v(p as f64)),
        v(x.summary.max_ns as f64),
        n("preemptions").to_string(),
        if n("preemptions") > 0 {
            u.fmt_ns(n("preempt_max_ns") as f64)
        } else {
            "-".into()
        },
        n("migrations").to_string(),
        wakers,
    ]
}

/// The worst delays, each with what held the CPU.
fn worst(t: &latlab_core::result::trace::TraceReport, u: DisplayUnit) -> String {
    if t.spikes.is_empty() {
        return String::new();
    }
    let mut v: Vec<&latlab_core::result::trace::SpikeRecord> = t.spikes.iter().collect();
    v.sort_by_key(|x| std::cmp::Reverse(x.latency_ns));
    let mut s = format!(
        "worst delays (>= {} {u}), who ran instead:\n",
        u.fmt_ns(t.threshold_ns as f64)
    );
    for x in v.iter().take(10) {
        let parts: Vec<String> = x
            .why
            .components
            .iter()
            .take(3)
            .map(|c| {
                let who = match (&c.group, &c.task) {
                    (Some(g), Some(task)) if c.folded > 0 => format!(
                        "{} {} threads ({g})",
                        c.folded,
                        task.comm
                    ),
                    (Some(g), Some(task)) => format!(
                        "{} ({g}, {})",
                        task.comm,
                        latlab_core::result::trace::policy_label(task.prio)
                    ),
                    _ => latlab_core::result::culprits::component_phrase(&c.kind, &c.name),
                };
                match (&c.group, &c.task) {
                    (Some(_), Some(_)) => format!("{:.0} % {} {who}", 100.0 * c.share, c.kind),
                    _ => format!("{:.0} % {who}", 100.0 * c.share),
                }
            })
            .collect();
        s.push_str(&format!(
            "  {} {} {u} on CPU {}: {}\n",
            x.series,
            u.fmt_ns(x.latency_ns as f64),
            x.cpu,
            parts.join(", ")
        ));
    }
    s
}
