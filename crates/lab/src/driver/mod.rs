//! The one lifecycle every measurement goes through, so none of them wires its own loads,
//! signals, outputs or exit codes: validate outputs -> start loads (warmed) -> measure, with a
//! watchdog that stops the loads at the deadline or on Ctrl-C -> stop and reap loads -> write
//! JSON (atomically) and store -> print (a closed stdout is not an error) -> exit code.
//!
//! A measurement is one folder under `measure/` implementing [`Measurement`] for its config and
//! [`Lowering`] for its arguments, plus one entry in the table of measurements
//! (`src/table.rs`); this file never needs to change for it.

pub mod args;
pub(crate) mod background;
mod ctx;
pub mod entry;
mod finish;
pub(crate) mod ground;
mod keeper;
mod kmsg;
mod preflight;
pub mod signals;
#[cfg(test)]
mod tests;
mod watchdog;

pub(crate) use ctx::Ctx;

pub(crate) use args::{Lowering, MeasureArgs, StoreArgs};

// The record of runs not kept yet, which the keeping thread and the signal thread reach too.
use keeper::{kept_instead, pend, run_pending, unpend, Keeper};

use crate::loadgen::{LoadSet, LoadSpec};
use latlab_analysis::export::json::JsonSink;
use latlab_core::error::Result;
use latlab_core::result::Run;
use std::path::PathBuf;
use std::time::Duration;

/// What a measurement printed: the report, and (rarely) figures meant for a pipe.
#[derive(Debug, Default)]
pub struct Text {
    /// The human report (stdout, or stderr when `figures` or the JSON take stdout).
    pub(crate) report: String,
    /// Bare figures for stdout (`tcp --repeat` feeds ministat this way); the report then goes
    /// to stderr.
    pub(crate) figures: Option<String>,
    /// The report already shows the run's loads (`latlab load`): no load lines are added.
    pub(crate) loads_shown: bool,
}

impl From<String> for Text {
    fn from(report: String) -> Text {
        Text {
            report,
            figures: None,
            loads_shown: false,
        }
    }
}

/// The real-time footprint of a measurement: what the driver prepares before it starts
/// (privilege probe, memory locking, PM QoS) and what it checks loads against.
#[derive(Debug, Clone, Default)]
pub struct Footprint {
    /// The lowest real-time priority its measuring threads ask for (None: not real-time).
    pub(crate) min_rt_prio: Option<i32>,
    /// The highest real-time (policy, priority) any of its threads will use, if any.
    pub rt: Option<(latlab_core::config::Policy, i32)>,
    /// Lock memory (mlockall) before it starts.
    pub(crate) mlock: bool,
    /// Hold /dev/cpu_dma_latency at this many µs while it runs.
    pub(crate) dma_latency_us: Option<i32>,
    /// It cannot work at all without real-time scheduling (refused, not degraded).
    pub(crate) rt_required: bool,
}

/// One experiment: a validated config that can run and render itself. Everything else (loads,
/// signals, deadline enforcement, outputs, store, exit code) belongs to the driver.
pub trait Measurement {
    /// The finished measurement: the result plus what only the text report needs.
    type Outcome;

    /// The kind its runs are stored as.
    const KIND: &'static str;

    /// What the layers below the table need to know about its runs (higher is better, the
    /// metric a plan compares by default, how a page draws them).
    const FACTS: latlab_core::result::kind::Facts = latlab_core::result::kind::Facts::LATENCY;

    /// A hang-up (SIGHUP: a closed terminal or ssh session) is its own business (the
    /// monitor's status line) rather than the end of the run, as SIGTERM is.
    const KEEPS_HANGUP: bool = false;

    /// How long the measurement is planned to take, if it has a deadline; the driver stops
    /// the loads then, whatever they do, so no load can hold the run past its end.
    fn planned(&self) -> Option<Duration>;

    /// Samples one run is planned to have per second, all its series together, when the
    /// configuration says (cyclic: each thread's wake-ups): a plan knows before measuring
    /// whether its runs are long enough for the percentiles it compares.
    fn planned_rate(&self) -> Option<f64> {
        None
    }

    /// Its real-time footprint.
    fn footprint(&self) -> Footprint;

    /// The CPUs its measuring threads are pinned to, when known: a load confined to CPUs
    /// (`cpus=`, `--housekeeping`) that overlap them is warned about.
    fn measured_cpus(&self) -> Option<latlab_core::config::CpuSet> {
        None
    }

    /// The CPUs its own threads are pinned to (by default its measured CPUs): the driver
    /// checks them against the CPUs this process may use before anything starts.
    fn pinned_cpus(&self) -> Option<latlab_core::config::CpuSet> {
        self.measured_cpus()
    }

    /// What it asks to be traced (`--trace`), if anything: the driver starts the session
    /// after the loads and before [`Measurement::measure`], which takes it with
    /// `ctx.take_tracer()`. A measurement that declares nothing is never traced.
    fn trace_request(&self) -> Option<latlab_trace::session::Request> {
        None
    }

    /// Runs it. `ctx.control()` carries the stop and interrupt flags (SIGINT/SIGTERM set
    /// both): a measurement ends within a second of either and returns what it collected,
    /// marked interrupted. Its result comes from `ctx.run(...)`.
    fn measure(&mut self, ctx: &mut Ctx<'_>) -> Result<Self::Outcome>;

    /// The result inside the outcome.
    fn result(o: &mut Self::Outcome) -> &mut Run;

    /// The text report.
    fn render(&self, o: &Self::Outcome) -> Text;

    /// The exit status to pass on (a measured command's, `latlab sched -- CMD`), if any; a
    /// failed check still exits 1 first.
    fn exit_status(_o: &Self::Outcome) -> Option<i32> {
        None
    }

    /// A stored run of this kind as the measurement printed it (`latlab runs show`), when it
    /// can render one from the run alone; None gives the common per-series table.
    fn render_stored(_run: &Run, _unit: latlab_core::config::DisplayUnit) -> Option<String> {
        None
    }
}

/// Options every measurement shares, validated.
#[derive(Debug, Clone, Default)]
pub(crate) struct Common {
    /// `--json FILE|-`.
    pub(crate) json: Option<PathBuf>,
    /// `--store` (None: the default store).
    pub(crate) store: Option<String>,
    /// `--no-store`.
    pub(crate) no_store: bool,
    /// `--tag KEY=VALUE`.
    pub(crate) tags: Vec<String>,
    /// `--load` specs, parsed.
    pub(crate) loads: Vec<LoadSpec>,
    /// `--strict`: refuse instead of degrading.
    pub(crate) strict: bool,
    /// Warnings about the command line itself (an old spelling), recorded with the result.
    pub(crate) warnings: Vec<String>,
}

/// Runs `m` through the whole lifecycle and returns its exit status as a `Result`
/// (`Err(CheckFailed)` when a requested check tripped).
pub(crate) fn execute<M: Measurement>(
    m: M,
    common: &Common,
    command_line: Vec<String>,
) -> Result<()> {
    // A hang-up (a closed terminal or ssh session) ends a measurement as SIGTERM does: saved,
    // restored, reaped. The monitor keeps SIGHUP for its status.
    if !M::KEEPS_HANGUP {
        signals::stop_on_hangup();
    }
    // Tasks of its loads and commands whose parents die before them come back to latlab, which
    // ends and reaps them before it returns (not daemons or zombies left to init).
    // What a wrapper left latlab (`sidecar & exec latlab`) is not latlab's to end.
    latlab_core::sys::family::note_inherited();
    latlab_core::sys::process::become_subreaper();
    let mut out = std::io::stdout();
    let done = execute_with(
        m,
        common,
        command_line,
        Io {
            control: signals::control(),
            stdout: &mut out,
            store: None,
            exiting: true,
        },
    );
    // What is left (a daemon a command or a load started in a session of its own) is ended:
    // nothing latlab started outlives it.
    let strays = latlab_core::sys::family::end_children(std::time::Duration::from_millis(300));
    say_strays(&strays);
    done
}

/// Pids named in the line that says what latlab ended at its exit.
const SHOWN_PIDS: usize = 8;

/// Says what latlab ended at its exit that the run's command or loads left running, and what
/// it could not end.
fn say_strays(strays: &latlab_core::sys::family::Ended) {
    if !strays.signalled.is_empty() {
        latlab_core::note!(
            "latlab: ended {} process(es) the run's command or loads left running (pids {})",
            strays.signalled.len() - strays.left.len(),
            first_pids(&strays.signalled)
        );
    }
    if !strays.left.is_empty() {
        latlab_core::note!(
            "latlab: warning: {} process(es) the run left could not be ended, even by SIGKILL \
             (uninterruptible or frozen): pids {}",
            strays.left.len(),
            first_pids(&strays.left)
        );
    }
}

/// The first pids of `v` (an interrupted hackbench leaves its 160 tasks: a line, not a screen).
fn first_pids(v: &[i32]) -> String {
    let mut s = v
        .iter()
        .take(SHOWN_PIDS)
        .map(|p| p.to_string())
        .collect::<Vec<_>>()
        .join(" ");
    if v.len() > SHOWN_PIDS {
        s.push_str(&format!(" and {} more", v.len() - SHOWN_PIDS));
    }
    s
}

/// Where [`execute_with`] takes its flags and sends its text: the process's own in
/// [`execute`], a test's in the driver's tests.
pub(crate) struct Io<'w> {
    /// The stop and interrupt flags.
    pub control: latlab_core::rt::Control,
    /// Where the report (or figures, or `--json -`) goes.
    pub(crate) stdout: &'w mut dyn std::io::Write,
    /// A store to use instead of opening `Common::store` (ignored under `--no-store`).
    pub(crate) store: Option<Box<dyn latlab_core::store::Store>>,
    /// The process exits after this: the result, once written and shown, is left to the
    /// exit instead of being freed piece by piece (a `sched --all` run's is millions of
    /// allocations).
    pub(crate) exiting: bool,
}

/// [`execute`] with its flags, stdout and store given.
pub(crate) fn execute_with<M: Measurement>(
    mut m: M,
    common: &Common,
    command_line: Vec<String>,
    io: Io<'_>,
) -> Result<()> {
    let Io {
        control,
        stdout: out,
        store,
        exiting,
    } = io;
    let json = common.json.as_deref().map(JsonSink::open).transpose()?;
    let mut keeper = Keeper::open(common, store, &control)?;
    let ready = preflight::ready(&m, common, &control)?;
    let loads = LoadSet::start(&common.loads, &control)?;
    let dog = watchdog::Watchdog::start(loads.pids(), m.planned(), control.clone());
    let tracer = match begin_trace(&m, &loads, &control) {
        Ok(t) => t,
        Err(e) => {
            let asked = dog.finish();
            let _ = loads.stop(&asked);
            return Err(e);
        }
    };
    let watch = watch(&m, common, ready.company_seen);
    let ctx = Ctx::new(ctx::Start {
        control: control.clone(),
        environment: ready.environment,
        kind: M::KIND,
        command_line,
        strict: common.strict,
        prepared: ready.prepared,
        warnings: ready.prep_warnings,
        keeper: &mut keeper,
        placement: ready.placement.clone(),
        tracer,
    })
    .with_loads(loads.progress())
    .with_ground(watch.log());
    let measured = measure(&mut m, ctx);
    let moved = since(watch.finish(&measured.held), measured.ground_from);
    let asked = dog.finish();
    let stopped_loads = loads.stop(&asked);
    if measured.outcome.is_err() {
        for f in &measured.unrestored {
            latlab_core::note!("latlab: could not restore {f}; run 'latlab restore'");
        }
    }
    let mut outcome = measured.outcome?;

    let run = M::result(&mut outcome);
    let placement = ready.placement.failures();
    finish::assemble(
        run,
        ready.warnings,
        stopped_loads,
        moved,
        &measured.unrestored,
        &placement,
        &control,
    );

    let (written, stored) = finish::keep(run, &json, &mut keeper, common, &placement)?;

    finish::show(&m, &mut outcome, &json, out)?;
    written?;
    stored?;
    let end = finish::exit_status::<M>(&mut outcome, common.strict);
    if exiting {
        std::mem::forget(outcome);
    }
    end
}

/// `--trace`: the session the measurement asks for, started once the loads run and before the
/// measuring threads, its reader off the measured CPUs where there are others.
fn begin_trace<M: Measurement>(
    m: &M,
    loads: &LoadSet,
    control: &latlab_core::rt::Control,
) -> Result<Option<latlab_trace::session::Tracer>> {
    let Some(mut r) = m.trace_request() else {
        return Ok(None);
    };
    if r.reader_cpus.is_none() {
        r.reader_cpus = preflight::housekeeping(m.pinned_cpus().as_ref());
    }
    r.roots.extend(loads.roots());
    latlab_trace::session::Tracer::begin(&r, control.stop.clone()).map(Some)
}

/// The watch on what the result depends on, read now and watched until the measurement
/// returns.
fn watch<M: Measurement>(
    m: &M,
    common: &Common,
    company_seen: Option<ground::Keyed>,
) -> ground::Watch {
    let watched: Vec<usize> = m.pinned_cpus().map_or_else(
        || latlab_core::config::CpuSet::online_here().iter().collect(),
        |c| c.iter().collect(),
    );
    // The start's scan of real-time tasks stands for the watch's first look when it covered
    // the same CPUs and no load has started since (a load's own real-time tasks must not be
    // reported at the end as company that came during the run).
    let seen = company_seen.filter(|_| common.loads.is_empty());
    ground::Watch::start(
        &watched,
        preflight::housekeeping(m.pinned_cpus().as_ref()),
        seen,
    )
}

/// What a measurement left when it returned, its settings already put back.
struct Measured<O> {
    /// The measurement's outcome, or why it failed.
    outcome: Result<O>,
    /// The settings that could not be put back.
    unrestored: Vec<String>,
    /// The files of the settings the run held: their changes are its own, not the ground's.
    held: Vec<std::path::PathBuf>,
    /// From which second of the run the returned result's ground counts (None: all of it).
    ground_from: Option<f64>,
}

/// Runs the measurement in `ctx`, then puts its settings back.
fn measure<M: Measurement>(m: &mut M, mut ctx: Ctx<'_>) -> Measured<M::Outcome> {
    let outcome = m.measure(&mut ctx);
    // Settings go back before anything is written, on every way out of the measurement.
    let held = ctx.held_files();
    let unrestored = ctx.restore_settings();
    Measured {
        outcome,
        unrestored,
        held,
        ground_from: ctx.result_ground_from(),
    }
}

/// The ground's changes a result carries: when it covers only the run's last stretch (from
/// second `from`), only that stretch's, timed from its start (those seen only at the end may
/// have been at any time: they stay).
fn since(
    mut moved: Vec<latlab_core::result::GroundChange>,
    from: Option<f64>,
) -> Vec<latlab_core::result::GroundChange> {
    if let Some(from) = from {
        moved.retain(|c| c.at_s.is_none_or(|t| t >= from));
        for c in &mut moved {
            c.at_s = c.at_s.map(|t| t - from);
        }
    }
    moved
}
