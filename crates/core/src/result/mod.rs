//! The one result model every measurement produces (`Run` with its `Series`), serialised as
//! JSON schema v1 (docs/json-schema.md).

pub mod check;
pub mod culprits;
pub mod env;
pub mod kind;
pub mod qualification;
pub mod sysfacts;
pub mod timeline;
pub mod trace;

pub use env::Environment;
pub use timeline::{Timeline, TimelineRecorder};

use crate::stats::{HistogramData, Recorder, Summary};
use serde::{Deserialize, Serialize};

/// The schema identifier written into every result.
pub(crate) const SCHEMA: &str = "latlab.run/1";

/// One measurement run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Run {
    /// Always [`SCHEMA`].
    pub schema: String,
    /// Unique id: `YYYYMMDDTHHMMSSZ-<8 hex>`.
    pub id: String,
    /// The measurement: `cyclic`, `noise`, ...
    pub kind: String,
    /// Start time, RFC 3339 UTC.
    pub started: String,
    /// End time, RFC 3339 UTC.
    pub ended: String,
    /// Measured wall time in seconds.
    pub duration_s: f64,
    /// True when the run was stopped by SIGINT/SIGTERM before its planned end.
    pub interrupted: bool,
    /// The full command line.
    pub command_line: Vec<String>,
    /// The validated parameters of the measurement.
    pub parameters: serde_json::Value,
    /// Everything that did not go as asked (fallbacks, throttling, lost samples).
    pub warnings: Vec<String>,
    /// A requested check that tripped (e.g. `--break-on`), if any.
    pub check_failure: Option<String>,
    /// The machine it ran on.
    pub environment: Environment,
    /// Per-thread or per-CPU series.
    pub series: Vec<Series>,
    /// Path of the raw sample log, when one was written.
    pub samples_path: Option<String>,
    /// Loads that ran during the measurement, with what they achieved.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub loads: Vec<LoadReport>,
    /// `--trace`: every spike over the threshold with what delayed it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<trace::TraceReport>,
    /// What the result depends on that changed while it was measured (the clocksource, RT
    /// throttling, a plan's setting, new real-time company): a run with any is disturbed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ground: Vec<GroundChange>,
    /// `latlab qualify`: which qualification, segment and checkpoint interval this run is, or
    /// (the final result) the intervals, gaps, system facts and verdicts it spans.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub qualification: Option<Box<qualification::Qualification>>,
}

/// One change of what a run depends on, seen while it ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GroundChange {
    /// What changed (`clocksource`, `CPU 1 scaling_governor`, a setting's path).
    pub what: String,
    /// Its value before.
    pub from: String,
    /// Its value after.
    pub to: String,
    /// Seconds into the run when the change was seen (None: found only at the end).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_s: Option<f64>,
}

/// How a [`GroundChange`] of a load begins (`--load cpu`): one that ended early or was stopped
/// for a while.
pub const LOAD_PREFIX: &str = "--load ";

/// What a [`GroundChange`] names when another process's real-time task appeared on the
/// measured CPUs: a warning, not a disturbance (a shared machine has company all the time).
pub const COMPANY: &str = "real-time company on the measured CPUs";

/// What a [`GroundChange`] names when latlab's own process was stopped (SIGSTOP, Ctrl-Z's
/// SIGTSTP) and continued while it measured: its threads' wake-ups held meanwhile are late by
/// the stop, not by the system.
pub const STOPPED: &str = "latlab's process";

/// What a [`GroundChange`]'s `what` ends with when a plan's setting did not hold its level when
/// the run started: `from` is the level as set, `to` what the run found.
pub const NOT_THE_LEVEL: &str = " (the plan's level)";

impl GroundChange {
    /// The change in a few words, for a list: `clocksource changed`, `latlab's process stopped`.
    pub fn short(&self) -> String {
        if let Some(path) = self.what.strip_suffix(NOT_THE_LEVEL) {
            format!("{path} not at its level")
        } else if self.what == STOPPED {
            "latlab's process stopped".into()
        } else if self.what.starts_with(LOAD_PREFIX) {
            // `--load cpu stopped`, `--load cpu ended`.
            let how = self.to.split_whitespace().next().unwrap_or("changed");
            format!("{} {how}", self.what)
        } else {
            format!("{} changed", self.what)
        }
    }
}

impl Run {
    /// True when a setting the result depends on (the clocksource, a plan's level, RT
    /// throttling, a governor, ...) changed while it was measured. New real-time company is
    /// recorded too, but only warned about.
    pub fn disturbed(&self) -> bool {
        self.ground.iter().any(|g| g.what != COMPANY)
    }
}

/// Largest latlab JSON result read.
pub const MAX_JSON_BYTES: u64 = 256 << 20;

impl Run {
    /// Parses a latlab JSON result (`name` is used in messages); checks its schema and that its
    /// histogram counts add up without overflowing.
    pub fn parse(text: &str, name: &str) -> crate::Result<Run> {
        let run: Run = match serde_json::from_str(text) {
            Ok(run) => run,
            // A bundle of one run (what `runs export ID` writes, and the file a run the store
            // refused is kept in) reads as that run.
            Err(e) => match one_run_bundle(text) {
                Some(run) => run,
                None => {
                    return Err(crate::Error::Usage(format!(
                        "{name}: not a latlab result: {e} (line {}, column {})",
                        e.line(),
                        e.column()
                    )))
                }
            },
        };
        if run.schema != crate::result::SCHEMA {
            return Err(crate::Error::Usage(format!(
                "{name}: schema '{}' is not {}",
                run.schema,
                crate::result::SCHEMA
            )));
        }
        run.check_figures()
            .map_err(|e| crate::Error::Usage(format!("{name}: {e}")))?;
        for d in run.doubts() {
            crate::note!("latlab: warning: {name}: {d}");
        }
        Ok(run)
    }

    /// Reads a stored run's JSON: a latlab run of this schema whose counts add up. Every run
    /// passes this before a store keeps it, so a stored run always reads back.
    pub fn from_stored(text: &str) -> std::result::Result<Run, String> {
        let run: Run = serde_json::from_str(text).map_err(|e| e.to_string())?;
        run.check_figures()?;
        Ok(run)
    }

    /// A run of `kind` that started at `started` and ends now: id, times and duration filled
    /// in; no series, warnings or loads yet, not interrupted, no failed check.
    pub fn new(
        kind: &str,
        started: std::time::SystemTime,
        command_line: Vec<String>,
        parameters: serde_json::Value,
        environment: Environment,
    ) -> Run {
        let ended = std::time::SystemTime::now();
        Run {
            schema: SCHEMA.into(),
            id: new_run_id(started),
            kind: kind.into(),
            started: rfc3339(started),
            ended: rfc3339(ended),
            duration_s: ended
                .duration_since(started)
                .map_or(0.0, |d| d.as_secs_f64()),
            interrupted: false,
            command_line,
            parameters,
            warnings: Vec::new(),
            check_failure: None,
            environment,
            series: Vec::new(),
            samples_path: None,
            loads: Vec::new(),
            trace: None,
            ground: Vec::new(),
            qualification: None,
        }
    }
}

/// Checks that `run` reads back as it would be stored (no number JSON cannot hold: an
/// infinite or NaN figure is written as null and would make the stored run unreadable).
pub fn check_round_trip(run: &Run) -> std::result::Result<(), String> {
    let text = serde_json::to_string(run).map_err(|e| e.to_string())?;
    Run::from_stored(&text)
        .map(|_| ())
        .map_err(|e| format!("run {} would not read back once stored ({e})", run.id))
}

/// One thread's or CPU's measurements.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Series {
    /// Name, e.g. `T0`.
    pub name: String,
    /// CPU the thread was pinned to (None: not pinned).
    pub cpu: Option<usize>,
    /// Scheduling policy in force.
    pub policy: String,
    /// Priority in force.
    pub prio: i32,
    /// Period for periodic measurements, ns.
    pub interval_ns: Option<u64>,
    /// Unit of the recorded values (`ns` unless said otherwise, e.g. `kbit/s`).
    #[serde(default = "default_unit")]
    pub unit: String,
    /// Summary statistics (ns).
    #[serde(flatten)]
    pub summary: Summary,
    /// Missed periods: wake-ups so late that whole periods passed.
    pub overruns: u64,
    /// Samples the raw log lost because its writer fell behind (always reported).
    pub lost_samples: u64,
    /// Full-range HDR histogram.
    pub histogram: HistogramData,
    /// Figures particular to the measurement (e.g. `noise`: loop rate, interruptions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extra: Option<serde_json::Value>,
    /// Count, max and p99 per interval over the run (absent in older results).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeline: Option<Timeline>,
}

impl Series {
    /// Builds a series from a recorder.
    pub fn from_recorder(name: String, rec: &Recorder) -> Series {
        let (summary, histogram) = rec.summary_and_data();
        Series::from_summary(name, summary, histogram)
    }

    /// A series with only a name, its summary and its histogram.
    pub fn from_summary(
        name: String,
        summary: crate::stats::Summary,
        histogram: crate::stats::HistogramData,
    ) -> Series {
        Series {
            name,
            cpu: None,
            policy: String::new(),
            prio: 0,
            interval_ns: None,
            unit: default_unit(),
            summary,
            overruns: 0,
            lost_samples: 0,
            histogram,
            extra: None,
            timeline: None,
        }
    }
}

fn default_unit() -> String {
    "ns".into()
}

/// A new run id from the current time and a random suffix.
pub fn new_run_id(now: std::time::SystemTime) -> String {
    let ts = humantime::format_rfc3339_seconds(representable(now)).to_string();
    let compact: String = ts.chars().filter(|c| c.is_ascii_alphanumeric()).collect();
    let nanos = now
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let mut x = (nanos as u64) ^ ((std::process::id() as u64) << 32) ^ 0x9E37_79B9_7F4A_7C15;
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    format!("{compact}-{:08x}", x as u32)
}

/// RFC 3339 text of a time, to the microsecond (a time past year 9999, which RFC 3339 cannot
/// write, as the last instant it can).
pub fn rfc3339(t: std::time::SystemTime) -> String {
    humantime::format_rfc3339_micros(representable(t)).to_string()
}

/// The last instant RFC 3339 can write: 9999-12-31T23:59:59.999999Z.
pub(crate) const LAST_DATE: std::time::Duration =
    std::time::Duration::new(253_402_300_799, 999_999_000);

/// `t`, or [`LAST_DATE`] when it is later (formatting a later time panics in humantime).
fn representable(t: std::time::SystemTime) -> std::time::SystemTime {
    let last = std::time::UNIX_EPOCH + LAST_DATE;
    t.min(last)
}

/// What a load achieved.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LoadReport {
    /// The spec as given.
    pub spec: String,
    /// Kind.
    pub kind: String,
    /// Units done (messages, bytes, loops, runs).
    pub count: u64,
    /// What `count` counts.
    pub unit: String,
    /// Seconds it ran.
    pub seconds: f64,
    /// count / seconds.
    pub rate_per_s: f64,
    /// Anything worth knowing (e.g. O_DIRECT refused).
    pub note: Option<String>,
    /// The CPUs the load was confined to (`cpus=` or `--housekeeping`; None: anywhere).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpus: Option<String>,
    /// Seconds the load was stopped (SIGSTOP, then SIGCONT) while it ran, where it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped_s: Option<f64>,
}

/// The run of a bundle (`latlab.bundle/1`, the store's export format) that holds exactly one.
fn one_run_bundle(text: &str) -> Option<Run> {
    #[derive(serde::Deserialize)]
    struct Entry {
        run: Run,
    }
    #[derive(serde::Deserialize)]
    struct Bundle {
        format: String,
        runs: Vec<Entry>,
    }
    let b: Bundle = serde_json::from_str(text).ok()?;
    (b.format == "latlab.bundle/1" && b.runs.len() == 1)
        .then(|| b.runs.into_iter().next())?
        .map(|e| e.run)
}
