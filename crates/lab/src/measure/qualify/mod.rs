//! `latlab qualify`: the day-long qualification run that survives its own death (rteval's
//! job). Cyclic threads on the measured CPUs (the monitor's probe: cyclic's worker per CPU,
//! publishing through a tally and a sample ring), loads on the housekeeping CPUs, and every
//! checkpoint interval stored as a run of its own by the control thread, pinned off the
//! measured CPUs, while the threads go on measuring (`run.rs`). A killed qualification is
//! continued by `--resume` (`resume.rs`); at the end the final result spans every segment,
//! records the gaps, and judges each `--require` on the intervals (`summary.rs`), written as
//! text, JUnit and an HTML report (`render.rs`, `latlab_analysis::report::qualify`).

pub(crate) mod args;
mod lower;
mod progress;
mod render;
pub(crate) mod resume;
mod run;
mod summary;

use latlab_core::config::Policy;
use crate::driver::Ctx;
use latlab_core::error::Result;
use latlab_core::result::Run;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// A validated `latlab qualify`: what a resumed segment reads back from the store (its
/// checkpoints' parameters), so every segment runs with the same settings.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct QualifyConfig {
    /// The qualification's id (its intervals' experiment id).
    pub(crate) id: String,
    /// Measured CPUs, one thread each.
    pub(crate) cpus: Vec<usize>,
    /// The probe (`--engine`; cyclic in qualifications begun before it existed).
    #[serde(default)]
    pub(crate) engine: crate::measure::timerlat::probe::Engine,
    /// Period (ns).
    pub(crate) interval_ns: u64,
    /// SCHED_FIFO priority (0: SCHED_OTHER).
    pub(crate) prio: i32,
    /// Length of the whole qualification (ns), segments added up.
    pub(crate) duration_ns: u64,
    /// Time between checkpoints (ns).
    pub(crate) checkpoint_ns: u64,
    /// `--require`, as written.
    pub(crate) requirements: Vec<String>,
    /// Confidence of the verdicts.
    pub(crate) confidence: f64,
    /// `--load` specs (the defaults when none was given).
    pub(crate) loads: Vec<String>,
    /// `--housekeeping`.
    pub(crate) housekeeping: Option<String>,
    /// `--trace`: explain wake-ups at or above this (ns).
    pub(crate) trace_threshold_ns: Option<u64>,
    /// `--trace-stacks`.
    pub(crate) trace_stacks: bool,
    /// `--trace-save FILE.dat`.
    pub(crate) trace_save: Option<PathBuf>,
    /// `--on-threshold` rules, as written.
    pub(crate) on_threshold: Vec<String>,
    /// `--on-threshold-max`.
    pub(crate) on_threshold_max: Option<u64>,
    /// `--trace-budget`, as written.
    #[serde(default)]
    pub(crate) trace_budget: Option<String>,
    /// `--on-threshold-env`: the variables' names only (a value is never stored; a resumed
    /// segment passes latlab's own value of each name it has).
    #[serde(default)]
    pub(crate) on_threshold_env: Vec<String>,
    /// `--junit` (absolute).
    pub(crate) junit: Option<PathBuf>,
    /// `--report` (absolute).
    pub(crate) report: Option<PathBuf>,
    /// `--json` (absolute, or `-`).
    pub(crate) json: Option<PathBuf>,
    /// `--tag`.
    pub(crate) tags: Vec<String>,
    /// Lock memory.
    pub(crate) mlock: bool,
    /// `--strict`.
    pub(crate) strict: bool,
    /// `-q/--quiet`: no progress bar and no line per checkpoint (this command line's, never
    /// stored: a resumed qualification takes the resuming command's).
    #[serde(skip)]
    pub(crate) quiet: bool,
    /// What is parsed from the text above, and what a resumed segment brings along.
    #[serde(skip)]
    pub(crate) derived: Derived,
}

/// The parts of a config that are not stored as they are.
#[derive(Debug, Clone, Default)]
pub(crate) struct Derived {
    /// The requirements, parsed.
    pub requirements: Vec<latlab_analysis::gate::requirement::Requirement>,
    /// The `--on-threshold` rules, parsed.
    pub actions: Vec<latlab_trace::actions::Rule>,
    /// The actions' bounds: `--on-threshold-max`, `--trace-budget`, `--on-threshold-env`.
    pub limits: latlab_trace::actions::Limits,
    /// The segments before this one (a resumed qualification).
    pub(crate) before: Option<Arc<resume::Before>>,
    /// The qualification's lock, held while a segment measures.
    pub(crate) lock: Option<Arc<resume::Lock>>,
}

impl QualifyConfig {
    /// The policy of the measuring threads.
    pub(crate) fn policy(&self) -> Policy {
        if self.prio == 0 {
            Policy::Other
        } else {
            Policy::Fifo
        }
    }

    /// Seconds measured by earlier segments.
    fn measured_before_s(&self) -> f64 {
        self.derived.before.as_ref().map_or(0.0, |b| b.measured_s)
    }

    /// What is left to measure.
    fn remaining(&self) -> Duration {
        let left = self.duration_ns as f64 / 1e9 - self.measured_before_s();
        Duration::from_secs_f64(left.max(0.0))
    }
}

/// `latlab qualify`: a new qualification, or a resumed one (`resume::start`).
fn start(
    a: args::QualifyArgs,
    online: &latlab_core::config::CpuSet,
    command_line: Vec<String>,
) -> Result<()> {
    resume::start(a, online, command_line)
}

/// A finished segment: the final result and what its text needs.
pub(crate) struct QualifyOutcome {
    /// The final result (spanning every segment).
    pub(crate) run: Run,
    /// The verdicts' exit: None met (or no requirement), Some(4) undecided.
    pub(crate) undecided: bool,
    /// Files written (report, JUnit), for the text.
    pub(crate) written: Vec<String>,
}

impl crate::driver::Measurement for QualifyConfig {
    type Outcome = QualifyOutcome;
    const KIND: &'static str = "qualify";
    const FACTS: latlab_core::result::kind::Facts = latlab_core::result::kind::Facts {
        chart: latlab_core::result::kind::Chart::Histogram,
        timeline_caption: Some("the maximum of each checkpoint interval, per CPU"),
        ..latlab_core::result::kind::Facts::LATENCY
    };

    fn planned(&self) -> Option<Duration> {
        // The driver's watchdog stops the loads a little after the end: what is left, plus
        // the time to store the last interval and the final result.
        Some(self.remaining() + Duration::from_secs(30))
    }

    fn planned_rate(&self) -> Option<f64> {
        Some(self.cpus.len() as f64 * 1e9 / self.interval_ns.max(1) as f64)
    }

    fn footprint(&self) -> crate::driver::Footprint {
        let policy = self.policy();
        crate::driver::Footprint {
            min_rt_prio: policy.is_rt().then_some(self.prio),
            rt: policy.is_rt().then_some((policy, self.prio)),
            mlock: self.mlock,
            dma_latency_us: Some(0),
            rt_required: false,
        }
    }

    fn measured_cpus(&self) -> Option<latlab_core::config::CpuSet> {
        Some(latlab_core::config::CpuSet::from_cpus(self.cpus.iter().copied()))
    }

    fn trace_request(&self) -> Option<latlab_trace::session::Request> {
        Some(latlab_trace::session::Request {
            cpus: self.cpus.clone(),
            threshold_ns: self.trace_threshold_ns?,
            names: self.cpus.iter().map(|c| format!("cpu{c}")).collect(),
            stacks: self.trace_stacks,
            save: self.trace_save.clone(),
            actions: self.derived.actions.clone(),
            limits: self.derived.limits.clone(),
            needs_root: "--trace needs root (it reads the kernel's tracepoints through tracefs)",
            ..Default::default()
        })
    }

    fn measure(&mut self, ctx: &mut Ctx<'_>) -> Result<QualifyOutcome> {
        run::run(self, ctx)
    }

    fn result(o: &mut QualifyOutcome) -> &mut Run {
        &mut o.run
    }

    fn render(&self, o: &QualifyOutcome) -> crate::driver::Text {
        render::text(&o.run, &o.written).into()
    }

    fn exit_status(o: &QualifyOutcome) -> Option<i32> {
        o.undecided.then_some(4)
    }

    fn render_stored(run: &Run, _unit: latlab_core::config::DisplayUnit) -> Option<String> {
        run.qualification
            .as_ref()
            .filter(|q| q.interval.is_none())
            .map(|_| render::text(run, &[]))
    }
}
