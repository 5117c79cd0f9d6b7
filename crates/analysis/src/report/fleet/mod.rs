//! `latlab report --fleet`: one page over the snapshots (stored runs of kind `monitor`) that
//! several monitors wrote into one store. A fleet member is one monitor: a host (its `host`
//! tag) running one monitor is one member; a host running several (different `--monitor-id`,
//! each on its own CPUs or settings) has a member per monitor id, labelled `host/monitor`.
//! Per member: each snapshot's max and p99 over time, its rank by its worst snapshot, and
//! whether its last day differs from the week before it, the snapshot being the unit of
//! replication (`crate::compare::levels::compare_levels`, the run-as-unit comparison).
//! Reading and deciding are here; the page is drawn in `page`.

pub(crate) mod causes;
pub mod page;

use crate::compare::analysis::{MetricCmp, Settings, Verdict};
use latlab_core::error::{Error, Result};
use latlab_core::result::Run;
use latlab_core::store::{Filter, RunRow};
use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

/// One day: the "last day" each member's newest snapshots are taken from.
pub(crate) const DAY: Duration = Duration::from_secs(86_400);
/// The week before the last day, which the last day is compared with.
pub(crate) const WEEK: Duration = Duration::from_secs(7 * 86_400);
/// How far back `--fleet` reads by default: the last day and the week before it.
pub const DEFAULT_SINCE: Duration = Duration::from_secs(8 * 86_400);
/// Snapshots each side needs before the last day is compared with the week (fewer: "cannot
/// decide"). Five, as a plan's repeats: two would run Welch's t but find only huge changes.
pub(crate) const MIN_SNAPSHOTS: usize = 5;
/// The chance, over the whole fleet, of calling any member's unchanged day different.
pub(crate) const ALPHA: f64 = 0.05;

/// One snapshot, reduced to what the page shows.
#[derive(Debug, Clone)]
pub(crate) struct Snapshot {
    /// Run id (for `latlab runs show ID`).
    pub(crate) id: String,
    /// When its interval started.
    pub(crate) at: SystemTime,
    /// Its largest latency over every CPU, µs (exact).
    pub(crate) max_us: f64,
    /// The p99 of its samples, every CPU merged, µs (as `compare` reads a run).
    pub(crate) p99_us: f64,
}

/// What the last day of a member says against its previous week.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Too few snapshots on a side, or nothing could be compared.
    CannotDecide,
    /// No metric changed beyond its interval.
    NoDifference,
    /// At least one metric got worse, none better.
    Worse,
    /// At least one metric got better, none worse.
    Better,
    /// Some metrics got worse and others better.
    Mixed,
}

impl Outcome {
    /// Whether the last day was found to differ from the week.
    pub fn differs(self) -> bool {
        matches!(self, Outcome::Worse | Outcome::Better | Outcome::Mixed)
    }

    /// Short text for tables.
    pub(crate) fn text(self) -> &'static str {
        match self {
            Outcome::CannotDecide => "cannot decide",
            Outcome::NoDifference => "no difference proven",
            Outcome::Worse => "worse",
            Outcome::Better => "better",
            Outcome::Mixed => "differs (some metrics worse, some better)",
        }
    }
}

/// The last day of a member against its previous week.
#[derive(Debug, Clone)]
pub struct Decision {
    /// Snapshots in the last day.
    pub(crate) day: usize,
    /// Snapshots in the week before it.
    pub(crate) week: usize,
    /// The outcome.
    pub outcome: Outcome,
    /// Each per-snapshot figure compared (p50, p99, p99.9, max, mean), the week as baseline.
    pub(crate) metrics: Vec<MetricCmp>,
    /// Why it cannot decide, or what was not compared.
    pub(crate) notes: Vec<String>,
}

impl Decision {
    fn cannot(day: usize, week: usize, why: String) -> Decision {
        Decision {
            day,
            week,
            outcome: Outcome::CannotDecide,
            metrics: Vec::new(),
            notes: vec![why],
        }
    }
}

/// One member of the fleet: a host's monitor and its snapshots, oldest first.
#[derive(Debug, Clone)]
pub struct Member {
    /// The monitor id (its `monitor` tag).
    pub(crate) monitor: String,
    /// How the page names it: the host, or `host/monitor` when the host runs several.
    pub(crate) label: String,
    /// Its snapshots that hold samples, oldest first.
    pub(crate) snaps: Vec<Snapshot>,
    /// Kernel release and preemption model of its newest snapshot.
    pub(crate) kernel: String,
    /// The last day against the week before it.
    pub decision: Decision,
    /// What made it late over the snapshots read (`monitor --trace`).
    pub(crate) causes: causes::MemberCauses,
}

impl Member {
    /// The snapshot with the largest max (the member's worst window).
    pub(crate) fn worst(&self) -> Option<&Snapshot> {
        self.snaps
            .iter()
            .max_by(|a, b| a.max_us.total_cmp(&b.max_us))
    }

    /// The median of its snapshots' p99.
    pub(crate) fn median_p99(&self) -> f64 {
        let mut v: Vec<f64> = self.snaps.iter().map(|s| s.p99_us).collect();
        v.sort_by(f64::total_cmp);
        match v.len() {
            0 => f64::NAN,
            n if n % 2 == 1 => v[n / 2],
            n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
        }
    }
}

/// What `report --fleet` reads.
#[derive(Debug, Clone)]
pub struct Query {
    /// The kind of the runs read (the monitor's snapshots).
    pub kind: &'static str,
    /// Snapshots that started before this are not read.
    pub since: SystemTime,
    /// Only snapshots with all these tags.
    pub tags: Vec<(String, String)>,
    /// The store (None: `$LATLAB_STORE` or the default).
    pub store: Option<String>,
}

/// The fleet as the page shows it.
#[derive(Debug, Clone)]
pub struct Fleet {
    /// Members, ranked (worst first, see [`rank`]).
    pub members: Vec<Member>,
    /// The store, as messages show it (no password).
    pub(crate) location: String,
    /// The query.
    pub(crate) query: Query,
    /// Confidence of each member's comparison (Bonferroni over the members compared).
    pub(crate) confidence: f64,
    /// Members with enough snapshots on both sides to be compared (the Bonferroni count).
    pub(crate) compared: usize,
    /// What was left out, and why.
    pub(crate) notes: Vec<String>,
}

fn at_of(r: &RunRow) -> Option<SystemTime> {
    humantime::parse_rfc3339_weak(&r.started).ok()
}

/// Splits snapshot start times into the last day (relative to the newest) and the week before
/// it: (indices of the day, indices of the week). Older ones are in neither.
pub(crate) fn split(times: &[SystemTime]) -> (Vec<usize>, Vec<usize>) {
    let Some(&newest) = times.iter().max() else {
        return (Vec::new(), Vec::new());
    };
    let day_from = newest.checked_sub(DAY).unwrap_or(SystemTime::UNIX_EPOCH);
    let week_from = day_from.checked_sub(WEEK).unwrap_or(SystemTime::UNIX_EPOCH);
    let (mut day, mut week) = (Vec::new(), Vec::new());
    for (i, &t) in times.iter().enumerate() {
        if t > day_from {
            day.push(i);
        } else if t > week_from {
            week.push(i);
        }
    }
    (day, week)
}

/// Compares the last day's snapshots with the previous week's, each snapshot one replicate:
/// every snapshot's p50, p99, p99.9, max and mean, Welch's t across snapshots, Holm over the
/// five (`compare_levels`, as `compare` does with runs) at `confidence`. Fewer than
/// [`MIN_SNAPSHOTS`] on a side: cannot decide.
pub(crate) fn decide(
    day: Vec<(Run, String)>,
    week: Vec<(Run, String)>,
    confidence: f64,
) -> Decision {
    let (nd, nw) = (day.len(), week.len());
    if nd < MIN_SNAPSHOTS || nw < MIN_SNAPSHOTS {
        return Decision::cannot(
            nd,
            nw,
            format!(
                "{nd} snapshot(s) in the last day and {nw} in the week before it; a comparison \
                 needs {MIN_SNAPSHOTS} on each side"
            ),
        );
    }
    let st = Settings {
        confidence,
        replicates: 2000,
        seed: 1,
        higher_is_better: false,
        unit: "µs".into(),
        assume_independent: false,
    };
    let levels = vec![
        ("previous week".to_string(), week),
        ("last day".to_string(), day),
    ];
    let (a, notes) = crate::compare::levels::compare_levels(&levels, &st, 1e-3, "p99");
    let Some(a) = a else {
        return Decision {
            notes,
            ..Decision::cannot(nd, nw, "nothing could be compared".into())
        };
    };
    let metrics = a
        .comparisons
        .into_iter()
        .next()
        .map_or_else(Vec::new, |c| c.metrics);
    let worse = metrics.iter().any(|m| m.verdict == Verdict::Worse);
    let better = metrics.iter().any(|m| m.verdict == Verdict::Better);
    let outcome = match (worse, better) {
        (true, true) => Outcome::Mixed,
        (true, false) => Outcome::Worse,
        (false, true) => Outcome::Better,
        (false, false) if metrics.iter().all(|m| m.verdict == Verdict::NotEstimable) => {
            Outcome::CannotDecide
        }
        (false, false) => Outcome::NoDifference,
    };
    let mut notes = notes;
    notes.extend(a.warnings);
    Decision {
        day: nd,
        week: nw,
        outcome,
        metrics,
        notes,
    }
}

/// Ranks members worst first: by their worst snapshot's max, then their median p99, then name.
pub(crate) fn rank(members: &mut [Member]) {
    let key = |m: &Member| m.worst().map_or(f64::NEG_INFINITY, |s| s.max_us);
    members.sort_by(|a, b| {
        key(b)
            .total_cmp(&key(a))
            .then(b.median_p99().total_cmp(&a.median_p99()))
            .then(a.label.cmp(&b.label))
    });
}

/// Reads the fleet: every snapshot matching `q`, grouped by member, reduced, compared and
/// ranked. One member's last eight days of runs are in memory at a time. An empty result is exit 2 naming
/// `--fleet` and `--since`.
pub fn load(q: &Query) -> Result<Fleet> {
    let st = latlab_core::store::open_for_reading(q.store.as_deref())?;
    let rows = st.list(&Filter {
        kind: Some(q.kind.into()),
        tags: q.tags.clone(),
        host: None,
        started_from: Some(latlab_core::store::since_bound(q.since)),
    })?;
    let (by, undated) = group_members(&rows, q.since);
    let since = humantime::format_rfc3339_seconds(q.since);
    let tags = if q.tags.is_empty() {
        String::new()
    } else {
        let t: Vec<String> = q.tags.iter().map(|(k, v)| format!("{k}={v}")).collect();
        format!(" with tag(s) {}", t.join(","))
    };
    if by.is_empty() {
        return Err(Error::Usage(format!(
            "--fleet: no monitor snapshots (runs of kind monitor) in {} started since {since} \
             (--since){tags}; monitors store them with --store (docs/monitoring.md)",
            st.location()
        )));
    }
    let mut notes = Vec::new();
    if undated > 0 {
        notes.push(format!(
            "{undated} snapshot(s) without a readable start time left out"
        ));
    }
    // Bonferroni over the members that have enough snapshots to be compared at all.
    let testable = by.values().filter(|v| comparable(v)).count();
    let confidence = 1.0 - ALPHA / testable.max(1) as f64;
    let mut per_host: BTreeMap<&str, usize> = BTreeMap::new();
    for (h, _) in by.keys() {
        *per_host.entry(h.as_str()).or_default() += 1;
    }
    let mut members = Vec::new();
    let (mut read, mut empty, mut unreadable) = (0usize, 0usize, Vec::new());
    for ((host, monitor), ids) in &by {
        let mut snaps = Vec::new();
        // Only the last day and the week before it are compared: older runs are reduced to
        // their snapshot figures and dropped at once.
        let newest = ids.iter().map(|x| x.0).max().unwrap_or(q.since);
        let keep_from = newest
            .checked_sub(DAY + WEEK)
            .unwrap_or(SystemTime::UNIX_EPOCH);
        let mut runs: Vec<(SystemTime, Run, String)> = Vec::new();
        let mut member_causes = causes::MemberCauses::default();
        for (t, id) in ids {
            let e = st.get(id)?;
            read += 1;
            let run: Run = match serde_json::from_value(e.run) {
                Ok(r) => r,
                Err(why) => {
                    unreadable.push(format!("{id} ({why})"));
                    continue;
                }
            };
            member_causes.add(&run);
            let name = format!("run:{id}");
            let Ok(d) = crate::compare::inputs::run_latency(&run, &name, 1e-3) else {
                empty += 1;
                continue;
            };
            snaps.push(Snapshot {
                id: id.clone(),
                at: *t,
                max_us: d.max(),
                p99_us: d.quantile(0.99),
            });
            if *t > keep_from {
                runs.push((*t, run, name));
            }
        }
        if snaps.is_empty() {
            continue;
        }
        let kernel = runs.last().map_or(String::new(), |(_, r, _)| {
            format!(
                "{} ({})",
                r.environment.kernel_release, r.environment.preemption
            )
        });
        let times: Vec<SystemTime> = runs.iter().map(|r| r.0).collect();
        let (day_i, week_i) = split(&times);
        let mut slots: Vec<Option<(Run, String)>> =
            runs.into_iter().map(|(_, r, n)| Some((r, n))).collect();
        let mut take = |idx: &[usize]| -> Vec<(Run, String)> {
            idx.iter().filter_map(|&i| slots[i].take()).collect()
        };
        let day = take(&day_i);
        let week = take(&week_i);
        drop(slots);
        let decision = decide(day, week, confidence);
        let label = if per_host.get(host.as_str()).copied().unwrap_or(0) > 1 {
            format!("{host}/{monitor}")
        } else {
            host.clone()
        };
        members.push(Member {
            monitor: monitor.clone(),
            label,
            snaps,
            kernel,
            decision,
            causes: member_causes,
        });
    }
    if empty > 0 {
        notes.push(format!(
            "{empty} snapshot(s) holding no samples left out (a monitor stopped at once)"
        ));
    }
    if !unreadable.is_empty() {
        notes.push(format!(
            "{} stored run(s) of kind monitor do not read as latlab runs and were left out: {}",
            unreadable.len(),
            unreadable.join(", ")
        ));
    }
    if members.is_empty() {
        return Err(Error::Usage(format!(
            "--fleet: the {read} monitor snapshot(s) in {} since {since} (--since){tags} hold no \
             samples",
            st.location()
        )));
    }
    rank(&mut members);
    Ok(Fleet {
        members,
        location: st.location(),
        query: q.clone(),
        confidence,
        compared: testable,
        notes,
    })
}

/// The snapshots of each member, (host, monitor) -> (start, run id), oldest first, started
/// since `since`; and how many rows had no readable start time.
#[allow(clippy::type_complexity)]
fn group_members(
    rows: &[latlab_core::store::RunRow],
    since: SystemTime,
) -> (BTreeMap<(String, String), Vec<(SystemTime, String)>>, usize) {
    let mut by: BTreeMap<(String, String), Vec<(SystemTime, String)>> = BTreeMap::new();
    let mut undated = 0usize;
    for r in rows.iter().rev() {
        let Some(t) = at_of(r) else {
            undated += 1;
            continue;
        };
        if t < since {
            continue;
        }
        let host = r
            .tags
            .get("host")
            .cloned()
            .unwrap_or_else(|| r.host.clone());
        let monitor = r
            .tags
            .get("monitor")
            .cloned()
            .unwrap_or_else(|| host.clone());
        by.entry((host, monitor))
            .or_default()
            .push((t, r.id.clone()));
    }
    (by, undated)
}

/// Whether a member has enough snapshots in the last day and in the week before it to be
/// compared at all.
fn comparable(snaps: &[(SystemTime, String)]) -> bool {
    let times: Vec<SystemTime> = snaps.iter().map(|x| x.0).collect();
    let (d, w) = split(&times);
    d.len() >= MIN_SNAPSHOTS && w.len() >= MIN_SNAPSHOTS
}

#[cfg(test)]
mod tests {
    use super::*;
    use latlab_core::result::Series;
    use latlab_core::stats::Recorder;
    use rand::{RngExt, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    fn env() -> latlab_core::result::Environment {
        serde_json::from_value(serde_json::json!({
            "hostname": "h", "kernel_release": "6.1", "kernel_version": "v", "kernel_cmdline": "",
            "preemption": "full", "clocksource": "tsc", "available_clocksources": [],
            "cpu_model": "m", "cpus_online": 2, "online_cpus": "0-1", "isolated_cpus": "",
            "nohz_full_cpus": "", "sched_rt_runtime_us": 950000, "sched_rt_period_us": 1000000,
            "governor": null, "tool_version": "0"
        }))
        .unwrap()
    }

    /// A snapshot of `n` latencies (ns) around `level` ns, with a long tail, from `rng`.
    fn snapshot(level: f64, n: usize, rng: &mut ChaCha8Rng) -> Run {
        let mut rec = Recorder::new();
        for _ in 0..n {
            let u: f64 = rng.random_range(0.0..1.0);
            // Exponential tail: p99 about level * (1 + 4.6 / 4).
            let v = level * (1.0 - (1.0 - u).ln() / 4.0);
            rec.record(v as u64);
        }
        let mut r = Run::new(
            "monitor",
            SystemTime::now(),
            vec![],
            serde_json::Value::Null,
            env(),
        );
        static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        r.id = format!("s{}", N.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
        let mut s = Series::from_recorder("cpu1".into(), &rec);
        s.cpu = Some(1);
        r.series.push(s);
        r
    }

    /// Snapshots whose level varies from snapshot to snapshot (±20 %: the run-to-run
    /// variation a single snapshot cannot show) around `level`.
    fn snapshots(k: usize, level: f64, rng: &mut ChaCha8Rng) -> Vec<(Run, String)> {
        (0..k)
            .map(|i| {
                let l = level * rng.random_range(0.8..1.2);
                (snapshot(l, 2000, rng), format!("run:{i}"))
            })
            .collect()
    }

    fn member(label: &str, maxes: &[f64], p99: f64) -> Member {
        Member {
            monitor: label.into(),
            label: label.into(),
            snaps: maxes
                .iter()
                .enumerate()
                .map(|(i, &m)| Snapshot {
                    id: format!("{label}{i}"),
                    at: SystemTime::UNIX_EPOCH + Duration::from_secs(i as u64 * 300),
                    max_us: m,
                    p99_us: p99,
                })
                .collect(),
            kernel: String::new(),
            decision: Decision::cannot(0, 0, String::new()),
            causes: Default::default(),
        }
    }

    #[test]
    fn a_store_of_snapshots_becomes_ranked_members_with_verdicts() {
        use latlab_core::store::Store;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("fleet.db");
        let mut st = latlab_core::store::sqlite::SqliteStore::open(&path).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let now = SystemTime::now();
        let ago = |h: u64| now - Duration::from_secs(h * 3600);
        let mut save = |host: &str, monitor: &str, at: SystemTime, level: f64, site: &str| {
            let l = level * rng.random_range(0.9..1.1);
            let mut r = snapshot(l, 2000, &mut rng);
            r.started = latlab_core::result::rfc3339(at);
            let tags: BTreeMap<String, String> =
                [("host", host), ("monitor", monitor), ("site", site)]
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect();
            st.save(&r, &tags).unwrap();
        };
        // Eight days of 4-hourly snapshots. "steady" stays as it was; "slower" is twice as
        // late in its last day; "twin" runs two monitors; "old" stopped ten days ago.
        for h in (2..192).step_by(4) {
            save("steady", "steady", ago(h), 50_000.0, "lab");
            let late = if h < 24 { 100_000.0 } else { 50_000.0 };
            save("slower", "slower", ago(h), late, "lab");
            save("twin", "twin-a", ago(h), 40_000.0, "lab");
            save("twin", "twin-b", ago(h), 40_000.0, "lab");
        }
        save("old", "old", ago(240), 50_000.0, "lab");
        save("elsewhere", "elsewhere", ago(3), 50_000.0, "other");
        drop(st);
        let q = Query {
            kind: "monitor",
            since: now - DEFAULT_SINCE,
            tags: vec![("site".into(), "lab".into())],
            store: Some(format!("sqlite:{}", path.display())),
        };
        let f = load(&q).unwrap();
        let labels: Vec<&str> = f.members.iter().map(|m| m.label.as_str()).collect();
        assert_eq!(labels.len(), 4, "{labels:?}");
        assert!(labels.contains(&"twin/twin-a") && labels.contains(&"twin/twin-b"));
        assert!(!labels.contains(&"old") && !labels.contains(&"elsewhere"));
        // All four compared: Bonferroni over four.
        assert_eq!(f.compared, 4);
        assert!((f.confidence - (1.0 - ALPHA / 4.0)).abs() < 1e-12);
        let get = |l: &str| f.members.iter().find(|m| m.label == l).unwrap();
        let slower = get("slower");
        assert_eq!(
            slower.decision.outcome,
            Outcome::Worse,
            "{:?}",
            slower.decision
        );
        assert_eq!((slower.decision.day, slower.decision.week), (6, 42));
        assert_eq!(get("steady").decision.outcome, Outcome::NoDifference);
        assert_eq!(slower.snaps.len(), 48);
        assert!(
            slower.snaps.windows(2).all(|w| w[0].at < w[1].at),
            "oldest first"
        );
        // Ranked by the worst max: the slower day tops the fleet.
        assert_eq!(labels[0], "slower");
        // Nothing matches: exit 2 naming the flags.
        let none = Query {
            tags: vec![("site".into(), "nowhere".into())],
            ..q.clone()
        };
        let e = load(&none).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(e.to_string().contains("--fleet") && e.to_string().contains("--since"));
        let later = Query {
            since: now + Duration::from_secs(60),
            ..q
        };
        assert_eq!(load(&later).unwrap_err().exit_code(), 2);
    }

    #[test]
    fn members_rank_by_their_worst_snapshot_then_median_p99_then_name() {
        let mut m = vec![
            member("quiet", &[10.0, 12.0, 11.0], 5.0),
            member("stalled", &[10.0, 900.0, 12.0], 5.0),
            member("busy", &[40.0, 45.0], 30.0),
            member("b-tie", &[40.0, 45.0], 31.0),
            member("a-tie", &[40.0, 45.0], 31.0),
        ];
        rank(&mut m);
        let order: Vec<&str> = m.iter().map(|x| x.label.as_str()).collect();
        assert_eq!(order, ["stalled", "a-tie", "b-tie", "busy", "quiet"]);
        assert_eq!(m[0].worst().unwrap().id, "stalled1");
        assert_eq!(m[0].median_p99(), 5.0);
        let even = member("e", &[1.0, 2.0], 0.0);
        assert_eq!(even.median_p99(), 0.0);
    }

    #[test]
    fn the_last_day_is_counted_from_the_newest_snapshot() {
        let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(100 * 86_400);
        let h = |x: u64| t0 + Duration::from_secs(x * 3600);
        // Newest at 200 h: the day is (176 h, 200 h], the week (8 h, 176 h].
        let times = [h(0), h(8), h(9), h(100), h(176), h(177), h(200)];
        let (day, week) = split(&times);
        assert_eq!(day, [5, 6]);
        assert_eq!(week, [2, 3, 4]);
        assert_eq!(split(&[]), (vec![], vec![]));
    }

    #[test]
    fn too_few_snapshots_on_a_side_cannot_decide() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        // Even a tenfold change: two snapshots in the day are not enough.
        let d = decide(
            snapshots(2, 500_000.0, &mut rng),
            snapshots(40, 50_000.0, &mut rng),
            0.95,
        );
        assert_eq!(d.outcome, Outcome::CannotDecide);
        assert!(!d.outcome.differs());
        assert_eq!((d.day, d.week), (2, 40));
        assert!(d.notes[0].contains("needs 5 on each side"), "{:?}", d.notes);
        let d = decide(snapshots(8, 50_000.0, &mut rng), Vec::new(), 0.95);
        assert_eq!(d.outcome, Outcome::CannotDecide);
    }

    #[test]
    fn a_worse_day_is_found_and_an_identical_one_is_not() {
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        let week = snapshots(40, 50_000.0, &mut rng);
        // Identical data: the day's ten snapshots, and a week of the same ten four times over.
        let day = snapshots(10, 50_000.0, &mut rng);
        let copies: Vec<(Run, String)> = (0..4)
            .flat_map(|k| {
                day.iter().map(move |(r, n)| {
                    let mut r = r.clone();
                    r.id = format!("{}-copy{k}", r.id);
                    (r, format!("{n}-copy{k}"))
                })
            })
            .collect();
        let same = decide(day, copies, 0.95);
        assert_eq!(same.outcome, Outcome::NoDifference, "{:?}", same.metrics);
        let tested: Vec<_> = same
            .metrics
            .iter()
            .filter(|m| m.verdict != Verdict::NotEstimable)
            .collect();
        assert_eq!(tested.len(), 4, "p50, p99, max, mean (p99.9 needs 10 000)");
        assert!(
            tested.iter().all(|m| m.diff.abs() <= 1e-9 * m.base.abs()),
            "{tested:?}"
        );
        // A day twice as late.
        let d = decide(snapshots(10, 100_000.0, &mut rng), week, 0.95);
        assert_eq!(d.outcome, Outcome::Worse, "{:?}", d.metrics);
        assert!(d.outcome.differs());
        let p99 = d.metrics.iter().find(|m| m.metric == "p99").unwrap();
        assert_eq!(p99.verdict, Verdict::Worse);
        assert!(p99.change_pct > 50.0, "{}", p99.change_pct);
    }

    #[test]
    fn days_like_their_week_are_called_different_at_most_at_the_nominal_rate() {
        // 60 members whose last day comes from the same process as their week, with
        // snapshot-to-snapshot variation: taking samples as the replicates "proves" a
        // difference almost every time; the snapshot as the unit keeps false alarms at the
        // nominal rate (Holm over five metrics: at most 5 % of members, on average).
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let (mut differs, mut by_samples) = (0, 0);
        let pooled = Settings {
            confidence: 0.95,
            replicates: 200,
            seed: 1,
            higher_is_better: false,
            unit: "µs".into(),
            assume_independent: true,
        };
        for k in 0..60 {
            let week = snapshots(30, 50_000.0, &mut rng);
            let day = snapshots(8, 50_000.0, &mut rng);
            if k < 10 {
                // The same data, samples taken as the replicates.
                let levels = vec![("week".into(), week.clone()), ("day".into(), day.clone())];
                let (a, _) = crate::compare::levels::compare_levels(&levels, &pooled, 1e-3, "p99");
                by_samples += a.unwrap().comparisons[0]
                    .metrics
                    .iter()
                    .any(|m| matches!(m.verdict, Verdict::Worse | Verdict::Better))
                    as usize;
            }
            let d = decide(day, week, 0.95);
            assert_ne!(d.outcome, Outcome::CannotDecide, "{:?}", d.notes);
            differs += d.outcome.differs() as usize;
        }
        assert!(
            by_samples >= 7,
            "samples as replicates called only {by_samples} of 10 different: the data lack \
             the snapshot-to-snapshot variation this test is about"
        );
        // Binomial(60, 0.05): P(X > 8) < 0.2 %.
        assert!(
            differs <= 8,
            "{differs} of 60 identical members called different"
        );
    }
}
