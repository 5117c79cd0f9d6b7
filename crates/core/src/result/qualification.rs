//! The part of a run that makes it one piece of a qualification (`latlab qualify`): which
//! qualification, which segment and checkpoint interval, its state; and in the final result the
//! intervals it spans, the gaps between segments, the system facts and the verdicts. Every
//! checkpoint interval is stored as a run of its own, the unit of replication, as a monitor's
//! snapshots are.

use super::sysfacts::SystemFacts;
use serde::{Deserialize, Serialize};

/// Where a qualification stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum State {
    /// Measuring (a checkpoint interval), or stopped without a final result (killed).
    InProgress,
    /// Stopped by a signal before its planned length: resumable.
    Interrupted,
    /// Measured its whole planned length: final.
    Finished,
}

/// One checkpoint interval's figures, per measured CPU, as the final result lists them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IntervalFigures {
    /// Its number in the qualification, from 1.
    pub seq: u64,
    /// The segment (process lifetime) it belongs to, from 1.
    pub segment: u32,
    /// Its stored run.
    pub run: String,
    /// Start and end, RFC 3339.
    pub started: String,
    /// End.
    pub ended: String,
    /// Seconds measured.
    pub duration_s: f64,
    /// Per CPU: (cpu, samples, exact max ns, p99 ns, overruns).
    pub cpus: Vec<CpuFigures>,
    /// Spikes explained in it (`--trace`).
    pub spikes: u64,
}

/// One CPU's figures in one interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CpuFigures {
    /// The CPU.
    pub cpu: usize,
    /// Samples.
    pub count: u64,
    /// Exact maximum (ns).
    pub max_ns: u64,
    /// p99 (ns).
    pub p99_ns: u64,
    /// Missed periods.
    pub overruns: u64,
}

/// Time nothing was measured: between the last checkpoint of a segment and the start of the
/// next (the process was killed, the machine rebooted).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Gap {
    /// The segment that ended.
    pub after_segment: u32,
    /// Its last stored checkpoint, RFC 3339.
    pub from: String,
    /// The next segment's start.
    pub to: String,
    /// Seconds in between.
    pub seconds: f64,
    /// Whether the machine rebooted in between (its boot id changed).
    pub reboot: bool,
}

/// One requirement's verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RequirementVerdict {
    /// As written (`p99.99<100us`).
    pub requirement: String,
    /// `met`, `violated` or `undecided`.
    pub verdict: String,
    /// One line: why.
    pub because: String,
    /// What would decide it, when undecided.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to_decide: Option<String>,
}

/// A qualification's part of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Qualification {
    /// The qualification's id (its experiment id: every interval run is tagged
    /// `experiment=ID`).
    pub id: String,
    /// Where it stands.
    pub state: State,
    /// This run's segment (a checkpoint interval's), or the number of segments (the final
    /// result).
    pub segment: u32,
    /// A checkpoint interval's number, from 1 (None: the final result).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<u64>,
    /// The planned length (s).
    pub planned_s: f64,
    /// Seconds measured so far, this interval included.
    pub measured_s: f64,
    /// The qualification's first start, RFC 3339.
    pub first_started: String,
    /// The host it runs on.
    pub host: String,
    /// The boot it ran in (`/proc/sys/kernel/random/boot_id`).
    pub boot_id: String,
    /// The process that measured it.
    pub pid: u32,
    /// How long storing the previous checkpoint took (ms), for the cost of checkpoints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint_ms: Option<f64>,
    /// The process's resident memory when the interval ended (kB).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rss_kb: Option<u64>,
    /// The machine's facts, read when the segment started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<SystemFacts>,
    /// The final result: every interval, oldest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub intervals: Vec<IntervalFigures>,
    /// The final result: the gaps between segments.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gaps: Vec<Gap>,
    /// The final result: the verdict per requirement, judged on the intervals.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub verdicts: Vec<RequirementVerdict>,
    /// The final result: facts that changed between segments (a new kernel after a reboot).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub changed: Vec<String>,
}

impl Qualification {
    /// The stored runs this one is made of (a final result's intervals), the unit of
    /// replication when it is compared or gated.
    pub fn replicates(&self) -> Vec<String> {
        self.intervals.iter().map(|i| i.run.clone()).collect()
    }
}
