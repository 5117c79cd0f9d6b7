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
pub(crate) mod ground;
mod kmsg;
pub mod signals;
#[cfg(test)]
mod tests;
mod watchdog;

pub(crate) use ctx::Ctx;

pub(crate) use args::{Lowering, MeasureArgs, StoreArgs};

use crate::loadgen::{LoadSet, LoadSpec};
use latlab_analysis::export::json::JsonSink;
use latlab_core::error::{Error, Result};
use latlab_core::result::Run;
use std::collections::BTreeMap;
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

/// The store a result goes to, opened before measuring so a bad store fails before any time
/// is spent.
struct Keeper {
    store: Option<Box<dyn latlab_core::store::Store>>,
    /// The store as named (`--store`, else `$LATLAB_STORE` or the default), for a second
    /// connection (`Ctx::keep_in_background`); None when the store was handed in opened.
    spec: Option<Option<String>>,
    tags: BTreeMap<String, String>,
    /// Tags the measurement gave its result (`Ctx::tag_result`).
    result_tags: Vec<(String, String)>,
}

impl Keeper {
    fn open(
        c: &Common,
        given: Option<Box<dyn latlab_core::store::Store>>,
        control: &latlab_core::rt::Control,
    ) -> Result<Keeper> {
        let tags = latlab_core::store::parse_tags(&c.tags)?;
        let spec = given.is_none().then(|| c.store.clone());
        let store = match given {
            _ if c.no_store => None,
            Some(s) => Some(s),
            None => open_unless_interrupted(c.store.clone(), control)?,
        };
        Ok(Keeper {
            store,
            spec,
            tags,
            result_tags: Vec::new(),
        })
    }

    fn keep(&mut self, run: &Run) -> Result<()> {
        let extra = std::mem::take(&mut self.result_tags);
        let Some(st) = self.store.as_mut() else {
            return Ok(());
        };
        let mut tags = self.tags.clone();
        tags.extend(extra);
        let first = st.rescue_dir();
        // Made JSON once, for the store and, should it refuse, the file. While the store takes
        // it (a lock another process holds can keep it 30 s) the run is ready: a second
        // Ctrl-C, which ends latlab at once, keeps it in a file.
        let value = std::sync::Arc::new(
            serde_json::to_value(run).map_err(|e| Error::Env(format!("run {}: {e}", run.id)))?,
        );
        pend((run.id.clone(), value.clone(), tags.clone(), first.clone()));
        let done = signals::note_unless_done(STORE_PATIENCE, || {
            "latlab: waiting for the store to take the run (another process holds it locked, \
             or its server is slow to answer); a second Ctrl-C or SIGTERM keeps the run in a file instead"
        });
        let kept = st.save_json(&value, &tags);
        done.store(true, std::sync::atomic::Ordering::Release);
        unpend(&run.id);
        if let Err(e) = kept {
            return Err(rescued(e, &run.id, &value, &tags, first));
        }
        latlab_core::note!("latlab: run {} stored in {}", run.id, st.location());
        Ok(())
    }

    /// Saves without a word (the measurement says what it keeps); a run the store refuses is
    /// kept in a file all the same (a qualification's checkpoint interval).
    fn keep_tagged(&mut self, run: &Run, extra: &[(&str, &str)]) -> Result<()> {
        if let Some(st) = self.store.as_mut() {
            let mut tags = self.tags.clone();
            tags.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
            let value = serde_json::to_value(run)
                .map_err(|e| Error::Env(format!("run {}: {e}", run.id)))?;
            if let Err(e) = st.save_json(&value, &tags) {
                return Err(rescued(e, &run.id, &value, &tags, st.rescue_dir()));
            }
        }
        Ok(())
    }
}

/// Pids named in the line that says what latlab ended at its exit.
const SHOWN_PIDS: usize = 8;

/// The store refused run `id` (`e`): it is kept in a file instead, never lost, and the error
/// says where (or why it could not be).
fn rescued(
    e: Error,
    id: &str,
    value: &serde_json::Value,
    tags: &BTreeMap<String, String>,
    first: Option<std::path::PathBuf>,
) -> Error {
    Error::Env(kept_instead(&e.to_string(), id, value, tags, first))
}

/// `why` run `id` was not stored, and the file it is kept in instead (or why it could not be).
fn kept_instead(
    why: &str,
    id: &str,
    value: &serde_json::Value,
    tags: &BTreeMap<String, String>,
    first: Option<std::path::PathBuf>,
) -> String {
    match latlab_core::store::rescue_value(id, value, tags, first) {
        Ok(p) => {
            let p = latlab_core::output::shell_quote(&p.display().to_string());
            format!("{why}; the run is kept in {p} (`latlab runs import {p}` stores it)")
        }
        Err(e) => format!("{why}; the run could not be kept in a file either ({e})"),
    }
}

impl ctx::Keep for Keeper {
    fn keep(&mut self, run: &Run) -> Result<()> {
        Keeper::keep(self, run)
    }

    fn keep_tagged(&mut self, run: &Run, extra: &[(&str, &str)]) -> Result<()> {
        Keeper::keep_tagged(self, run, extra)
    }

    fn tag_result(&mut self, key: &str, value: &str) {
        self.result_tags.push((key.to_string(), value.to_string()));
    }

    fn background(&mut self, report: background::Report) -> Option<background::Background> {
        // Only beside a store the driver opened itself (so it knows how to open another).
        let spec = self.spec.clone().filter(|_| self.store.is_some())?;
        background::Background::start(spec, self.tags.clone(), report).ok()
    }
}

/// How long a store may take to open before latlab says it is waiting.
const STORE_PATIENCE: Duration = Duration::from_secs(2);

/// The run being stored, made JSON (run id, the run, its tags, the store's rescue directory),
/// for a second Ctrl-C during the store's wait.
type Pending = (
    String,
    std::sync::Arc<serde_json::Value>,
    BTreeMap<String, String>,
    Option<std::path::PathBuf>,
);
static PENDING: std::sync::Mutex<Vec<Pending>> = std::sync::Mutex::new(Vec::new());

/// Notes a run handed to a store and not kept yet (a second Ctrl-C then keeps it in a file).
fn pend(p: Pending) {
    if let Ok(mut v) = PENDING.lock() {
        v.push(p);
    }
    latlab_core::rt::at_exit(keep_pending_on_exit);
}

/// The run `id` is kept (in the store or a file): a second Ctrl-C leaves it alone.
fn unpend(id: &str) {
    if let Ok(mut v) = PENDING.lock() {
        v.retain(|p| p.0 != id);
    }
}

/// Whether a finished run waits for the store (a second Ctrl-C then keeps it in a file).
fn run_pending() -> bool {
    PENDING.lock().is_ok_and(|p| !p.is_empty())
}

/// The exit hook of a second Ctrl-C: every run not stored yet (the final result, a monitor's
/// snapshots queued for its keeping thread) goes to a file.
fn keep_pending_on_exit() {
    let taken = PENDING
        .lock()
        .map(|mut p| std::mem::take(&mut *p))
        .unwrap_or_default();
    for (id, run, tags, first) in taken {
        match latlab_core::store::rescue_value(&id, &run, &tags, first) {
            Ok(p) => latlab_core::note!(
                "latlab: run {id} was not stored yet: it is kept in {} (`latlab runs import` stores it)",
                p.display()
            ),
            Err(why) => latlab_core::note!(
                "latlab: run {id} was not stored yet, and could not be kept in a file ({why})"
            ),
        }
    }
}

/// Opens the store on a helper thread, waiting for it only while no signal has come: a
/// server that does not answer (PostgreSQL's connect waits up to 5 s) or a SQLite file
/// another process holds locked cannot keep a Ctrl-C waiting. Interrupted, the run goes on
/// without a store (it then ends at once; its JSON is still written) and says so.
fn open_unless_interrupted(
    spec: Option<String>,
    control: &latlab_core::rt::Control,
) -> Result<Option<Box<dyn latlab_core::store::Store>>> {
    // This run's waits for the store are said here and when it is saved, in its own words.
    latlab_core::store::busy::say_waits_elsewhere();
    let (tx, rx) = std::sync::mpsc::channel();
    // A helper's stack, not std's 2 MiB: glibc keeps an ended thread's stack for the next
    // thread, so it is still mapped when mlockall makes every page of it present.
    std::thread::Builder::new()
        .name("latlab-store".into())
        .stack_size(latlab_core::sys::mem::HELPER_STACK)
        .spawn(move || {
            let _ = tx.send(latlab_core::store::open_send(spec.as_deref()));
        })
        .map_err(|e| latlab_core::rt::start_error("cannot start a thread to open the store", e))?;
    let (t0, mut said) = (std::time::Instant::now(), false);
    loop {
        if !said && t0.elapsed() > STORE_PATIENCE {
            said = true;
            latlab_core::note!(
                "latlab: waiting for the store to open (another process holds it locked, or \
                 its server is slow to answer); Ctrl-C gives up on storing this run"
            );
        }
        match rx.recv_timeout(Duration::from_millis(20)) {
            Ok(r) => return r.map(|s| Some(s as Box<dyn latlab_core::store::Store>)),
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                return Err(Error::Env("the store could not be opened".into()))
            }
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) if control.was_interrupted() => {
                latlab_core::note!(
                    "latlab: interrupted while opening the store: this run is not stored"
                );
                return Ok(None);
            }
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
        }
    }
}

/// Warnings (or, under `--strict`, a refusal) for loads that outrank the measurement: an
/// unpinned real-time load at or above the measuring threads' priority can starve them.
fn outranking(m: &Footprint, c: &Common) -> Result<Vec<String>> {
    let mut w = Vec::new();
    let Some(mine) = m.min_rt_prio else {
        return Ok(w);
    };
    for l in &c.loads {
        if let Some(p) = l.rt_prio() {
            if p >= mine {
                let why = format!(
                    "--load {}: its real-time priority {p} is not below the measurement's ({mine}); \
                     it can starve measuring threads (the driver stops loads at the deadline)",
                    l.text
                );
                if c.strict {
                    return Err(Error::Usage(format!("--strict: {why}")));
                }
                w.push(why);
            }
        }
    }
    Ok(w)
}

/// Warnings for loads confined to CPUs that overlap the measured ones.
fn overlapping(measured: Option<&latlab_core::config::CpuSet>, c: &Common) -> Vec<String> {
    let Some(m) = measured else {
        return Vec::new();
    };
    c.loads
        .iter()
        .filter_map(|l| {
            let cpus = l.cpus()?;
            let shared = cpus.difference(&cpus.difference(m));
            (!shared.is_empty()).then(|| {
                format!(
                    "--load {}: its CPUs {cpus} overlap the measured CPUs {m} (shared: {shared})",
                    l.text
                )
            })
        })
        .collect()
}

/// Real-time tasks of other processes allowed on the measured CPUs: a warning each; another
/// latlab measuring there too is exit 3 under `--strict` (each would disturb the other).
/// Also every real-time task the scan saw there, for the run's watch (None when nothing is
/// pinned: nothing was scanned).
fn company(
    pinned: Option<&latlab_core::config::CpuSet>,
    strict: bool,
) -> Result<(Vec<String>, Option<ground::Keyed>)> {
    let Some(cpus) = pinned else {
        return Ok((Vec::new(), None));
    };
    let cpus: Vec<usize> = cpus.iter().collect();
    let found = ground::company_at_start(&cpus);
    if strict && found.twin {
        return Err(Error::Env(format!(
            "--strict: {}",
            found
                .warnings
                .iter()
                .find(|w| w.contains("another latlab"))
                .cloned()
                .unwrap_or_default()
        )));
    }
    Ok((found.warnings, Some(found.seen)))
}

/// The online CPUs other than `measured` (None when there are none, or nothing is measured).
fn housekeeping(measured: Option<&latlab_core::config::CpuSet>) -> Option<Vec<usize>> {
    let m = measured?;
    let rest: Vec<usize> = latlab_core::config::CpuSet::online_here()
        .iter()
        .filter(|&c| !m.contains(c))
        .collect();
    (!rest.is_empty()).then_some(rest)
}

/// Measured CPUs no thread of this process can be pinned to (a cpuset narrower than them, or
/// an offline CPU): exit 3 naming them under `--strict`, before anything starts; else a
/// warning (each thread's own placement is recorded as it happens). A `taskset` narrower than
/// them is not one: it sets only the affinity threads inherit, and each measuring thread pins
/// itself, so each CPU outside it is tried (on a thread that then ends).
fn unplaceable(
    measured: Option<&latlab_core::config::CpuSet>,
    strict: bool,
) -> Result<Vec<String>> {
    let Some(m) = measured else {
        return Ok(Vec::new());
    };
    let Ok(allowed) = latlab_core::sys::sched::affinity() else {
        return Ok(Vec::new());
    };
    let outside: Vec<usize> = m.iter().filter(|c| !allowed.contains(c)).collect();
    if outside.is_empty() {
        return Ok(Vec::new());
    }
    let refused = std::thread::scope(|sc| {
        std::thread::Builder::new()
            .name("latlab-probe".into())
            .stack_size(latlab_core::sys::mem::HELPER_STACK)
            .spawn_scoped(sc, || {
                outside
                    .iter()
                    .copied()
                    .filter(|&c| latlab_core::sys::sched::pin_to_cpu(c).is_err())
                    .collect::<Vec<usize>>()
            })
            .ok()
            .and_then(|h| h.join().ok())
            .unwrap_or_else(|| outside.clone())
    });
    if refused.is_empty() {
        return Ok(Vec::new());
    }
    let list = |v: &[usize]| v.iter().map(usize::to_string).collect::<Vec<_>>().join(",");
    let why = format!(
        "the measured CPU(s) {} are outside the CPUs this process may use ({}: a cpuset or \
         an offline CPU); threads meant for them cannot be pinned there",
        list(&refused),
        list(&allowed)
    );
    if strict {
        return Err(Error::Env(format!("--strict: {why}")));
    }
    Ok(vec![why])
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
    // The first pids (an interrupted hackbench leaves its 160 tasks: a line, not a screen).
    let pids = |v: &[i32]| {
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
    };
    if !strays.signalled.is_empty() {
        latlab_core::note!(
            "latlab: ended {} process(es) the run's command or loads left running (pids {})",
            strays.signalled.len() - strays.left.len(),
            pids(&strays.signalled)
        );
    }
    if !strays.left.is_empty() {
        latlab_core::note!(
            "latlab: warning: {} process(es) the run left could not be ended, even by SIGKILL \
             (uninterruptible or frozen): pids {}",
            strays.left.len(),
            pids(&strays.left)
        );
    }
    done
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
    let footprint = m.footprint();
    let mut warnings = common.warnings.clone();
    warnings.extend(outranking(&footprint, common)?);
    warnings.extend(overlapping(m.measured_cpus().as_ref(), common));
    let environment = latlab_core::result::Environment::capture();
    let mut prep_warnings = Vec::new();
    let prepared = latlab_core::rt::prepare(
        &latlab_core::rt::Needs {
            rt: footprint.rt,
            mlock: footprint.mlock,
            dma_latency_us: footprint.dma_latency_us,
            strict: common.strict || footprint.rt_required,
        },
        &mut prep_warnings,
    )?;

    // Under --strict a failed placement ends the run at once (it would be refused at the end).
    let placement_log = if common.strict {
        latlab_core::rt::PlacementLog::stopping(control.stop.clone())
    } else {
        latlab_core::rt::PlacementLog::default()
    };
    warnings.extend(unplaceable(m.pinned_cpus().as_ref(), common.strict)?);
    let (company_warnings, company_seen) = company(m.pinned_cpus().as_ref(), common.strict)?;
    warnings.extend(company_warnings);

    for why in crate::loadgen::policy_refusals(&common.loads) {
        latlab_core::rt::degrade(common.strict, why, &mut warnings)?;
    }
    let loads = LoadSet::start(&common.loads, &control)?;
    let dog = watchdog::Watchdog::start(loads.pids(), m.planned(), control.clone());
    // --trace: the session starts once the loads run and before the measuring threads; its
    // reader stays off the measured CPUs where there are others.
    let tracer = match m.trace_request() {
        None => None,
        Some(mut r) => {
            if r.reader_cpus.is_none() {
                r.reader_cpus = housekeeping(m.pinned_cpus().as_ref());
            }
            r.roots.extend(loads.roots());
            match latlab_trace::session::Tracer::begin(&r, control.stop.clone()) {
                Ok(t) => Some(t),
                Err(e) => {
                    let asked = dog.finish();
                    let _ = loads.stop(&asked);
                    return Err(e);
                }
            }
        }
    };
    // What the result depends on, read now and watched until the measurement returns.
    let watched: Vec<usize> = m.pinned_cpus().map_or_else(
        || latlab_core::config::CpuSet::online_here().iter().collect(),
        |c| c.iter().collect(),
    );
    // The start's scan of real-time tasks stands for the watch's first look when it covered
    // the same CPUs and no load has started since (a load's own real-time tasks must not be
    // reported at the end as company that came during the run).
    let seen = company_seen.filter(|_| common.loads.is_empty());
    let watch = ground::Watch::start(&watched, housekeeping(m.pinned_cpus().as_ref()), seen);
    let (measured, unrestored, held, ground_from) = {
        let mut ctx = Ctx::new(ctx::Start {
            control: control.clone(),
            environment,
            kind: M::KIND,
            command_line,
            strict: common.strict,
            prepared,
            warnings: prep_warnings,
            keeper: &mut keeper,
            placement: placement_log.clone(),
            tracer,
        })
        .with_loads(loads.progress())
        .with_ground(watch.log());
        let measured = m.measure(&mut ctx);
        // Settings go back before anything is written, on every way out of the measurement.
        let held = ctx.held_files();
        let failed = ctx.restore_settings();
        (measured, failed, held, ctx.result_ground_from())
    };
    let mut moved = watch.finish(&held);
    // A result that covers only the run's last stretch carries only that stretch's changes
    // (those seen only at the end may have been at any time: they stay).
    if let Some(from) = ground_from {
        moved.retain(|c| c.at_s.is_none_or(|t| t >= from));
        for c in &mut moved {
            c.at_s = c.at_s.map(|t| t - from);
        }
    }
    let asked = dog.finish();
    let stopped_loads = loads.stop(&asked);
    if measured.is_err() {
        for f in &unrestored {
            latlab_core::note!("latlab: could not restore {f}; run 'latlab restore'");
        }
    }
    let mut outcome = measured?;

    let run = M::result(&mut outcome);
    let placement = placement_log.failures();
    assemble(
        run,
        warnings,
        stopped_loads,
        moved,
        &unrestored,
        &placement,
        &control,
    );

    let (written, stored) = keep(run, &json, &mut keeper, common, &placement)?;

    show(&m, &mut outcome, &json, out)?;
    let run = M::result(&mut outcome);
    written?;
    stored?;
    if let Some(t) = run.trace.as_ref().and_then(|t| t.untraced_after_s) {
        if common.strict {
            return Err(Error::Env(format!(
                "--strict: another process turned tracing off in latlab's instance {t:.2} s \
                 into the trace; the result was kept with what was traced before"
            )));
        }
    }
    let failed = run.check_failure.clone();
    let end = match (failed, M::exit_status(&outcome)) {
        (Some(c), _) => Err(Error::CheckFailed(c)),
        (None, Some(code)) if code != 0 => Err(Error::Passed(code)),
        _ => Ok(()),
    };
    if exiting {
        std::mem::forget(outcome);
    }
    end
}

/// The run's own record of what happened around the measurement: its loads' reports, the
/// warnings of every layer, the ground that moved, settings not restored, threads not placed,
/// and whether a signal ended it.
fn assemble(
    run: &mut Run,
    mut warnings: Vec<String>,
    stopped_loads: crate::loadgen::Stopped,
    moved: Vec<latlab_core::result::GroundChange>,
    unrestored: &[String],
    placement: &[String],
    control: &latlab_core::rt::Control,
) {
    run.loads.extend(stopped_loads.reports);
    warnings.extend(stopped_loads.warnings);
    warnings.extend(moved.iter().map(ground::warning));
    run.ground.extend(moved);
    run.ground.extend(stopped_loads.ground);
    warnings.extend(
        unrestored
            .iter()
            .map(|f| format!("could not restore {f}; run 'latlab restore'")),
    );
    warnings.extend(placement.iter().cloned());
    run.warnings.extend(warnings);
    if control.was_interrupted() {
        run.interrupted = true;
    }
}

/// Keeps the run before any text: `--json FILE` atomically, then the store. Their failures
/// come back to be reported after the text (what was measured is still shown and kept where it
/// could be); under `--strict`, threads not placed as asked end it here, with no figures shown.
fn keep(
    run: &mut Run,
    json: &Option<JsonSink>,
    keeper: &mut Keeper,
    common: &Common,
    placement: &[String],
) -> Result<(Result<()>, Result<()>)> {
    let written = match json {
        Some(j @ JsonSink::File(_)) => j.write(run),
        _ => Ok(()),
    };
    if let Err(e) = &written {
        // The stored run says what became of its JSON.
        run.warnings.push(format!("--json: not written: {e}"));
    }
    let stored = keeper.keep(run);
    // --strict refuses a run whose threads were not placed as asked: its figures are not
    // shown as a result (a "Passed!" followed by exit 3), only what became of it.
    if common.strict && !placement.is_empty() {
        written?;
        stored?;
        let kept = if common.no_store && json.is_none() {
            "nothing was kept (--no-store)".to_string()
        } else {
            "the result was kept with these warnings".to_string()
        };
        return Err(Error::Env(format!(
            "--strict: thread placement failed ({}); the run stopped there and {kept}",
            placement.join("; ")
        )));
    }
    Ok((written, stored))
}

/// Prints the measurement's report (to stderr when stdout carries figures or JSON), its
/// figures and `--json -`.
fn show<M: Measurement>(
    m: &M,
    outcome: &mut M::Outcome,
    json: &Option<JsonSink>,
    out: &mut dyn std::io::Write,
) -> Result<()> {
    let mut text = m.render(outcome);
    let run = M::result(outcome);
    if !text.loads_shown {
        text.report.push_str(&load_lines(run));
    }
    if run.interrupted && !text.report.contains("interrupted") {
        text.report
            .push_str("(interrupted: stopped early; the figures cover what was measured)\n");
    }
    // Names in a report come from other programs (task names, culprits): shown, not obeyed.
    text.report = latlab_core::output::printable(&text.report).into_owned();
    let stdout_taken = json.as_ref().is_some_and(JsonSink::is_stdout) || text.figures.is_some();
    if stdout_taken {
        latlab_core::output::stderr(&text.report);
    } else {
        latlab_core::output::to(out, &text.report).map_err(|e| Error::io("stdout", e))?;
    }
    if let Some(f) = &text.figures {
        latlab_core::output::to(out, f).map_err(|e| Error::io("stdout", e))?;
    }
    if let Some(JsonSink::Stdout) = &json {
        latlab_core::output::to(out, &JsonSink::text(run)?).map_err(|e| Error::io("stdout", e))?;
    }
    Ok(())
}

/// One line per load for the text report, with rates in readable units.
fn load_lines(run: &Run) -> String {
    run.loads
        .iter()
        .map(|l| {
            format!(
                "load {}: {} {}/s over {:.2} s{}{}\n",
                l.spec,
                latlab_core::config::units::si(l.rate_per_s),
                l.unit,
                l.seconds,
                l.cpus
                    .as_ref()
                    .map(|c| format!(" on CPUs {c}"))
                    .unwrap_or_default(),
                l.note
                    .as_ref()
                    .map(|n| format!(" ({n})"))
                    .unwrap_or_default()
            )
        })
        .collect()
}
