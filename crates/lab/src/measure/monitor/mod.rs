//! `latlab monitor`: a long-running `cyclic` measurement for a fleet. Measuring threads (cyclic's
//! worker) publish per-CPU buckets and counters through atomics (`tally`); housekeeping threads,
//! pinned off the measured CPUs where any are left, serve them as OpenMetrics (`metrics`, over
//! `http`) and store a snapshot run of each interval (`snapshot`). SIGTERM/SIGINT end it with a
//! last snapshot (stored by the driver); SIGHUP prints the status, as `/status` shows it.

pub(crate) mod args;
mod lower;

pub(crate) mod causes;
pub(crate) mod exemplar;
pub mod metrics;
pub mod snapshot;
mod state;
pub mod tally;
pub mod window;

use latlab_core::config::{CpuSet, Policy};
use latlab_http::server as http;
use latlab_http::webconfig;
use crate::driver::Ctx;
use latlab_core::error::{Error, Result};
use crate::measure::timerlat::probe::Threads;
use crate::measure::cyclic::worker::{Worker, WorkerOut};
use latlab_core::result::Run;
use latlab_core::rt::{self, Live, Placement};
use latlab_core::stats::Recorder;
use metrics::Shared;
use serde::Serialize;
use state::shared_state;
pub(crate) use state::status;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};
use tally::Tally;

/// Where the endpoint listens unless `--listen` says otherwise (loopback only).
pub(crate) const DEFAULT_LISTEN: &str = "127.0.0.1:9477";

/// A validated `latlab monitor`.
#[derive(Debug, Clone, Serialize)]
pub struct MonitorConfig {
    /// Measured CPUs, one thread each.
    pub(crate) cpus: Vec<usize>,
    /// The probe (`--engine`).
    pub(crate) engine: crate::measure::timerlat::probe::Engine,
    /// Period (ns).
    pub(crate) interval_ns: u64,
    /// Policy of the measuring threads.
    pub(crate) policy: Policy,
    /// Their priority.
    pub(crate) prio: i32,
    /// Endpoint address.
    pub(crate) listen: SocketAddr,
    /// Time between stored snapshots (ns).
    pub(crate) snapshot_every_ns: u64,
    /// Exceedance threshold (ns).
    pub(crate) threshold_ns: Option<u64>,
    /// Length of the aligned windows (ns).
    pub(crate) window_ns: u64,
    /// TLS and basic authentication of the endpoint (`--web-config`).
    #[serde(skip)]
    pub web: Option<Arc<webconfig::WebConfig>>,
    /// Name of this monitor (tag `monitor=`).
    pub(crate) monitor_id: String,
    /// Stop after this long (ns); None: until SIGTERM/SIGINT.
    pub(crate) duration_ns: Option<u64>,
    /// Lock memory.
    pub(crate) mlock: bool,
    /// Refuse instead of degrading.
    pub(crate) strict: bool,
    /// The store snapshots go to (never serialised: it may name a server).
    #[serde(skip)]
    #[allow(dead_code)] // shown in its Debug text, which the grammar test compares
    pub(crate) store: Option<String>,
    /// Snapshots are not stored.
    pub(crate) no_store: bool,
    /// Tags every snapshot carries (host, monitor, `--tag`).
    #[serde(skip)]
    pub(crate) tags: Vec<String>,
    /// `--trace`: explain wake-ups at or above this latency (ns).
    pub(crate) trace_threshold_ns: Option<u64>,
    /// `--trace-stacks`.
    pub(crate) trace_stacks: bool,
    /// `--trace-save FILE.dat`: the run's last raw trace pages.
    pub(crate) trace_save: Option<std::path::PathBuf>,
    /// `--on-threshold` rules.
    pub trace_actions: Vec<latlab_trace::actions::Rule>,
    /// `--on-threshold-max`, `--trace-budget`, `--on-threshold-env`.
    pub trace_limits: latlab_trace::actions::Limits,
    /// `--trace-culprits`: culprit groups with a series of their own, per CPU.
    pub(crate) trace_culprits: usize,
    /// `-q/--quiet`: no "serving" note (unless the port was picked by the kernel).
    #[serde(skip)]
    pub(crate) quiet: bool,
}

/// A finished monitor: the last interval's snapshot (stored by the driver) and whole-session
/// figures for the text report.
pub struct MonitorOutcome {
    /// The last snapshot.
    pub(crate) run: Run,
    /// (CPU, whole-session recorder, overruns, lost) per thread.
    pub(crate) session: Vec<(usize, Recorder, u64, u64)>,
    /// Snapshots stored during the run (the last one not counted).
    pub(crate) snapshots: u64,
    /// Where the endpoint listened.
    pub(crate) listen: SocketAddr,
    /// `--trace`: the session's cause totals per CPU (empty without).
    pub(crate) causes: Vec<(usize, causes::CpuTotals)>,
}

/// Spikes one thread can hand over between two visits of the control thread.
const SPIKE_RING: usize = 16384;
/// How long after a spike ends its groups are named (the reader has then read every fork and
/// exec before it, whichever CPU recorded them).
const SETTLE_NS: u64 = 500_000_000;

/// Hands the spikes the measuring threads reported to the tracer, attributes those it can, and
/// folds the settled ones into the totals and the interval.
pub(crate) fn trace_step(
    t: &mut latlab_trace::session::Tracer,
    rings: &mut [rtrb::Consumer<latlab_trace::session::RawSpike>],
    causes: &causes::Causes,
    interval: &mut snapshot::Interval,
) {
    for r in rings.iter_mut() {
        while let Ok(s) = r.pop() {
            t.offer(s);
        }
    }
    t.poll();
    let now = latlab_core::sys::clock::now_ns(libc::CLOCK_MONOTONIC);
    let settled = t.take_settled(now.saturating_sub(SETTLE_NS));
    causes.add(&settled);
    causes.set_counts(&t.counts());
    interval.keep(settled, t.take_actions());
}

/// Trace events read and lost so far, all CPUs.
pub fn event_counts(t: &latlab_trace::session::Tracer) -> (u64, u64) {
    t.counts()
        .iter()
        .fold((0, 0), |(r, l), c| (r + c.1, l + c.2))
}

/// Pins the calling (control) thread, and so every housekeeping thread it starts, to the online
/// CPUs not measured; returns a warning naming those threads (`threads`, as a sentence says
/// them) when none is left.
pub fn pin_housekeeping(cpus: &[usize], threads: &str, log: &rt::PlacementLog) -> Option<String> {
    let online = CpuSet::online_here();
    let measured = CpuSet::from_cpus(cpus.iter().copied());
    let hk = online.difference(&measured);
    if hk.is_empty() {
        return Some(format!(
            "no housekeeping CPU is left (all of {online} are measured): {threads} share CPUs with the measuring threads"
        ));
    }
    let what = format!("monitor housekeeping threads: could not pin to CPUs {hk}");
    log.check(latlab_core::sys::sched::pin_to_cpus(hk.iter()), || what);
    None
}

/// Runs the monitor until the deadline or a signal.
pub(crate) fn run(cfg: &MonitorConfig, driver: &mut Ctx<'_>) -> Result<MonitorOutcome> {
    // The returned run is the last interval's snapshot: it carries that interval's ground.
    driver.result_is_last_interval();
    let env = driver.environment().clone();
    let mut warnings = std::mem::take(driver.warnings());
    let mut policy = cfg.policy;
    let mut prio = cfg.prio;
    if !driver.rt_granted() {
        (policy, prio) = (Policy::Other, 0);
    }
    // The kernel's timerlat threads are SCHED_FIFO: at -p's priority, else the kernel's 95.
    (policy, prio) = crate::measure::timerlat::probe::thread_policy(cfg.engine, (policy, prio));
    let mut saved_state = latlab_core::sys::sched::ThreadState::save();
    warnings.extend(pin_housekeeping(
        &cfg.cpus,
        "the endpoint and snapshot threads",
        driver.placement(),
    ));
    // What the start could not get (real-time priority, locked memory, idle states): said now,
    // as the measurements say it, not only in the snapshots.
    for w in &warnings {
        latlab_core::note!("latlab monitor: warning: {w}");
    }

    let n = cfg.cpus.len();
    // --trace: the instance and its reader start (on the housekeeping CPUs) before the threads.
    let control = driver.control().clone();
    let mut tracer = driver.take_tracer();
    let cause_totals = tracer
        .as_ref()
        .map(|_| Arc::new(causes::Causes::new(&cfg.cpus, cfg.trace_culprits)));
    let (mut spike_prods, mut spike_cons): (Vec<_>, Vec<_>) = if tracer.is_some() {
        (0..n).map(|_| rtrb::RingBuffer::new(SPIKE_RING)).unzip()
    } else {
        (Vec::new(), Vec::new())
    };
    let spike_prods: Vec<Option<_>> = spike_prods.drain(..).map(Some).collect();
    let tallies: Vec<Arc<Tally>> = (0..n)
        .map(|_| Arc::new(Tally::new(cfg.threshold_ns.unwrap_or(u64::MAX))))
        .collect();
    let shared = Arc::new(shared_state(cfg, &env, &tallies, cause_totals.clone()));
    if let Some(w) = &shared.exposure {
        latlab_core::note!("latlab monitor: warning: {w}");
    }
    let server = start_endpoint(cfg, shared.clone())?;
    let listen = server.addr;

    let (producers, mut consumers) =
        latlab_core::samples::rings(n, crate::measure::cyclic::ring_capacity(cfg.interval_ns));
    let producers: Vec<_> = producers.into_iter().map(Some).collect();
    rt::install_wake_handler();
    let hup = Arc::new(AtomicBool::new(false));
    // (Under `nohup`, a hang-up stays ignored: no status.)
    if !latlab_core::sys::process::hangup_ignored() {
        let _ = signal_hook::flag::register(libc::SIGHUP, hup.clone());
    }
    // Held since start (sys::process): a hang-up that came meanwhile prints the status now.
    latlab_core::sys::process::release_hangup();
    let done = Arc::new(AtomicUsize::new(0));
    let bell = Arc::new(rt::Doorbell::default());
    let probe = Probe {
        cpus: &cfg.cpus,
        interval_ns: cfg.interval_ns,
        trace_threshold_ns: cfg.trace_threshold_ns,
        engine: cfg.engine,
    };
    let barrier = Arc::new(Barrier::new(probe.parties() + 1));
    let handles = spawn(
        &probe,
        (policy, prio),
        driver,
        &barrier,
        (producers, spike_prods),
        (&tallies, &done, &bell),
    )?;
    barrier.wait();

    let ctx = snapshot::Context {
        cpus: &cfg.cpus,
        interval_ns: cfg.interval_ns,
        policy,
        prio,
        parameters: serde_json::to_value(cfg).unwrap_or(serde_json::Value::Null),
    };
    let mut interval = snapshot::Interval::new(&tallies);
    // Exemplars name the snapshot that stores a spike: each interval's run id, chosen as it
    // opens, with the wake-ups counted by then.
    let open_run = |interval: &snapshot::Interval| {
        if !cfg.no_store {
            let mut runs = shared.runs.lock().unwrap_or_else(|p| p.into_inner());
            runs.open(interval.id(), interval.opened_after());
        }
    };
    open_run(&interval);
    let every = Duration::from_nanos(cfg.snapshot_every_ns);
    let t0 = Instant::now();
    let deadline = cfg.duration_ns.map(|d| t0 + Duration::from_nanos(d));
    if let Some(t) = tracer.as_mut() {
        t.ends(control.interrupted.clone(), deadline);
    }
    let mut next_snapshot = t0 + every;
    let mut seq = 0u64;
    // Threads moved off their CPU: said at once, and in the snapshot of the interval.
    let mut strayed = vec![0u64; n];
    let mut moved: Vec<String> = Vec::new();
    // Snapshots are kept from a thread of their own: a store that stalls must not stop the
    // windows closing, the rings draining or the run ending on time.
    let keeping = if cfg.no_store {
        None
    } else {
        let s = shared.clone();
        driver.keep_in_background(Box::new(move |r| counted(&s, r)))
    };
    loop {
        // First, so a window closes as soon after its boundary as the wait allows.
        shared.windows.tick(&tallies, window::unix_now_ns());
        interval.drain(&mut consumers);
        if let (Some(t), Some(c)) = (tracer.as_mut(), &cause_totals) {
            trace_step(t, &mut spike_cons, c, &mut interval);
            exemplar::publish(&shared.explained, &interval, !cfg.no_store);
        }
        if let Some(w) = tracer.as_mut().and_then(|t| t.untraced_news()) {
            latlab_core::note!("latlab monitor: warning: {w}");
            moved.push(w);
        }
        for w in tally::strayed_since(&tallies, &cfg.cpus, &mut strayed) {
            latlab_core::note!("latlab monitor: warning: {w}");
            moved.push(w);
        }
        // A measuring thread's policy another process changed (seen by the ground watch).
        for (name, own, seen) in rt::policy::news() {
            let w = rt::Held::policy_news(&name, own, seen);
            latlab_core::note!("latlab monitor: warning: {w}");
            moved.push(w);
        }
        if hup.swap(false, Ordering::Relaxed) {
            latlab_core::note!("{}", status(&shared, &cfg.monitor_id).trim_end());
        }
        if control.was_interrupted() || deadline.is_some_and(|d| Instant::now() >= d) {
            control.stop.store(true, Ordering::Release);
        }
        if control.stop.load(Ordering::Acquire) || done.load(Ordering::Acquire) == n {
            break;
        }
        if Instant::now() >= next_snapshot {
            seq += 1;
            let now = match (&tracer, &cause_totals) {
                (Some(t), Some(c)) => Some(snapshot::TraceNow {
                    causes: c,
                    header: t.header(),
                    events: event_counts(t),
                }),
                _ => None,
            };
            let mut said = warnings.clone();
            said.append(&mut moved);
            let run = interval.take(&ctx, driver, seq, &tallies, said, now);
            open_run(&interval);
            match &keeping {
                _ if cfg.no_store => driver.interval_ended(),
                Some(bg) => driver.hand_over(bg, &run),
                None => counted(
                    &shared,
                    driver.keep(&run).map_err(|e| format!("run {}: {e}", run.id)),
                ),
            }
            next_snapshot += every;
            while next_snapshot <= Instant::now() {
                next_snapshot += every;
            }
        }
        bell.wait(
            Duration::from_millis(100).min(shared.windows.until_close(window::unix_now_ns())),
        );
    }
    let outs = stop_workers(&control, handles)?;
    server.stop();
    saved_state.restore();
    interval.drain(&mut consumers);
    // Placement failures reach the warnings through the run's placement log.
    let total_lost: u64 = outs.iter().map(|(_, o)| o.lost).sum();
    warnings.extend((total_lost > 0).then(|| {
        format!("the snapshot thread lost {total_lost} samples (it fell behind); the endpoint counted them")
    }));
    // --trace: what is left is attributed and named now; the finished report (hardware
    // counts, warnings) is the last snapshot's trace.
    let spikes_lost = outs.iter().map(|(_, o)| o.spikes_lost).sum();
    let now = match (tracer.take(), &cause_totals) {
        (Some(t), Some(c)) => Some(finish_trace(
            t,
            &mut spike_cons,
            spikes_lost,
            c,
            &mut interval,
            &mut warnings,
        )),
        _ => None,
    };
    moved.extend(tally::strayed_since(&tallies, &cfg.cpus, &mut strayed));
    warnings.append(&mut moved);
    let mut run = interval.take(&ctx, driver, seq + 1, &tallies, warnings, now);
    run.interrupted = control.was_interrupted();
    // The snapshots handed over are kept (or in files) before the last interval's result,
    // whose figures and duration end where the measuring did.
    if let Some(bg) = keeping {
        // A second Ctrl-C while it waits for a stalled store keeps this last result too.
        bg.finish_with(&run);
    }
    let session = outs.into_iter().zip(&cfg.cpus).map(|((_, o), &c)| (c, o.rec, o.overruns, o.lost)).collect();
    Ok(MonitorOutcome {
        run,
        session,
        snapshots: shared.snapshots.load(Ordering::Relaxed),
        listen,
        causes: cause_totals.map(|c| c.read()).unwrap_or_default(),
    })
}

/// Stops the measuring threads (waking any asleep) and collects what each kept.
fn stop_workers(control: &rt::Control, handles: Threads) -> Result<Vec<(rt::Applied, WorkerOut)>> {
    control.stop.store(true, Ordering::Release);
    handles.wake();
    handles.join()
}

/// Counts what became of a snapshot; a failure is said, and the monitor goes on.
fn counted(shared: &Shared, outcome: std::result::Result<(), String>) {
    match outcome {
        Ok(()) => {
            shared.snapshots.fetch_add(1, Ordering::Relaxed);
        }
        Err(e) => {
            shared.snapshot_failures.fetch_add(1, Ordering::Relaxed);
            latlab_core::note!("latlab monitor: snapshot not stored: {e}");
        }
    }
}

/// The per-CPU raw-sample rings and spike rings of the measuring threads, one each.
pub(crate) type Rings = (
    Vec<Option<rtrb::Producer<u64>>>,
    Vec<Option<rtrb::Producer<latlab_trace::session::RawSpike>>>,
);

/// The measuring threads of a long-running cyclic measurement (a monitor, a qualification).
pub(crate) struct Probe<'a> {
    /// One thread per CPU.
    pub(crate) cpus: &'a [usize],
    /// Their period (ns).
    pub(crate) interval_ns: u64,
    /// `--trace`: wake-ups at or above this go to the spike rings.
    pub(crate) trace_threshold_ns: Option<u64>,
    /// Cyclic threads, or the kernel's timerlat tracer.
    pub(crate) engine: crate::measure::timerlat::probe::Engine,
}

impl Probe<'_> {
    /// The threads that wait at the start barrier (one per CPU, or the tracer's reader).
    pub(crate) fn parties(&self) -> usize {
        match self.engine {
            crate::measure::timerlat::probe::Engine::Cyclic => self.cpus.len(),
            crate::measure::timerlat::probe::Engine::Timerlat => 1,
        }
    }
}

/// Spawns one measuring thread per CPU (cyclic's worker, publishing through its CPU's tally)
/// behind `barrier`.
pub(crate) fn spawn(
    cfg: &Probe<'_>,
    (policy, prio): (Policy, i32),
    driver: &mut Ctx<'_>,
    barrier: &Arc<Barrier>,
    (mut producers, mut spike_prods): Rings,
    (tallies, done, bell): (&[Arc<Tally>], &Arc<AtomicUsize>, &Arc<rt::Doorbell>),
) -> Result<Threads> {
    if cfg.engine == crate::measure::timerlat::probe::Engine::Timerlat {
        // The kernel's threads measure; latlab's reader feeds the same rings and tallies.
        let started = crate::measure::timerlat::probe::start(
            driver,
            cfg.cpus,
            cfg.interval_ns,
            policy.is_rt().then_some(prio),
        )?;
        let stop = driver.control().stop.clone();
        return started
            .spawn(barrier.clone(), producers, tallies.to_vec(), stop, bell.clone())
            .map(Threads::Tracer);
    }
    let placements: Vec<Placement> = cfg
        .cpus
        .iter()
        .map(|&c| Placement {
            name: format!("cpu{c}"),
            cpu: Some(c),
            policy,
            prio,
        })
        .collect();
    let stop = driver.control().stop.clone();
    let log = driver.placement().clone();
    driver
        .spawn_workers(&placements, barrier.clone(), |i| {
            let w = Worker {
                clock: libc::CLOCK_MONOTONIC,
                interval_ns: cfg.interval_ns,
                relative: false,
                loops: u64::MAX,
                break_on_ns: u64::MAX,
                rec: Recorder::new(),
                // Kept for the worker's contract; a monitor's history lives in its snapshots.
                timeline: latlab_core::result::TimelineRecorder::new(
                    latlab_core::result::timeline::DEFAULT_WIDTH_NS,
                ),
                linear: Vec::new(),
                ring: producers[i].take(),
                live: Arc::new(Live::new()),
                stop: stop.clone(),
                tripped: Arc::new(AtomicBool::new(false)),
                done: done.clone(),
                bell: bell.clone(),
                tally: Some(tallies[i].clone() as Arc<dyn rt::Tap>),
                spikes: spike_prods.get_mut(i).and_then(Option::take).map(|ring| {
                    crate::measure::cyclic::worker::SpikeOut {
                        threshold_ns: cfg.trace_threshold_ns.unwrap_or(u64::MAX),
                        series: i as u32,
                        cpu: Some(cfg.cpus[i] as u32),
                        tid: 0,
                        ring,
                    }
                }),
                held: Some((format!("cpu{}", cfg.cpus[i]), log.clone())),
            };
            move || move || w.run()
        })
        .map(Threads::Workers)
        .map_err(|e| latlab_core::rt::start_error("cannot start measuring threads", e))
}

/// Ends the trace: the spikes left are attributed and named, counted into the cause totals
/// and kept for the last snapshot, whose trace is the finished report.
pub(crate) fn finish_trace<'c>(
    mut t: latlab_trace::session::Tracer,
    spike_cons: &mut [rtrb::Consumer<latlab_trace::session::RawSpike>],
    spikes_lost: u64,
    c: &'c Arc<causes::Causes>,
    interval: &mut snapshot::Interval,
    warnings: &mut Vec<String>,
) -> snapshot::TraceNow<'c> {
    for r in spike_cons.iter_mut() {
        while let Ok(s) = r.pop() {
            t.offer(s);
        }
    }
    t.dropped(spikes_lost);
    let mut header = t.finish();
    let rest = std::mem::take(&mut header.spikes);
    c.add(&rest);
    interval.keep(rest, std::mem::take(&mut header.actions));
    warnings.extend(header.warnings.iter().cloned());
    let events = (header.events, header.lost_events);
    header.per_cpu.clear();
    snapshot::TraceNow {
        causes: c,
        header,
        events,
    }
}

/// Starts the endpoint and says where it serves.
fn start_endpoint(cfg: &MonitorConfig, shared: Arc<Shared>) -> Result<http::Server> {
    let server = serve(cfg, shared)?;
    let scheme = if cfg.web.as_ref().is_some_and(|w| w.tls.is_some()) {
        "https"
    } else {
        "http"
    };
    if !cfg.quiet || cfg.listen.port() == 0 {
        latlab_core::note!("latlab monitor: serving {scheme}://{}/metrics", server.addr);
    }
    Ok(server)
}

/// The endpoint: `/metrics`, `/status`, and 404 for anything else.
fn serve(cfg: &MonitorConfig, shared: Arc<Shared>) -> Result<http::Server> {
    let registry = Arc::new(metrics::registry(shared.clone()));
    let id = cfg.monitor_id.clone();
    let handler: Arc<http::Handler> = Arc::new(move |path: &str, accept: &str| match path {
        "/metrics" => {
            shared.scrapes.fetch_add(1, Ordering::Relaxed);
            let (content_type, body) =
                metrics::page(&registry, &shared, metrics::negotiate(accept));
            http::Response {
                status: 200,
                content_type,
                body,
            }
        }
        "/status" => http::Response::text(200, status(&shared, &id)),
        "/" => http::Response::text(200, "latlab monitor: /metrics, /status\n"),
        _ => http::Response::text(404, "not found (try /metrics or /status)\n"),
    });
    http::Server::start(cfg.listen, handler, cfg.web.clone())
        .map_err(|e| Error::Env(format!("--listen {}: cannot listen there: {e}", cfg.listen)))
}

impl crate::driver::Measurement for MonitorConfig {
    type Outcome = MonitorOutcome;
    const KIND: &'static str = "monitor";
    /// SIGHUP prints the monitor's status instead of ending it.
    const KEEPS_HANGUP: bool = true;
    const FACTS: latlab_core::result::kind::Facts = latlab_core::result::kind::Facts {
        snapshots: true,
        ..latlab_core::result::kind::Facts::LATENCY
    };

    fn planned(&self) -> Option<Duration> {
        self.duration_ns.map(Duration::from_nanos)
    }

    fn trace_request(&self) -> Option<latlab_trace::session::Request> {
        Some(latlab_trace::session::Request {
            cpus: self.cpus.clone(),
            threshold_ns: self.trace_threshold_ns?,
            names: self.cpus.iter().map(|c| format!("cpu{c}")).collect(),
            stacks: self.trace_stacks,
            save: self.trace_save.clone(),
            actions: self.trace_actions.clone(),
            limits: self.trace_limits.clone(),
            needs_root: "--trace needs root (it reads the kernel's tracepoints through tracefs)",
            ..Default::default()
        })
    }

    fn measured_cpus(&self) -> Option<latlab_core::config::CpuSet> {
        Some(latlab_core::config::CpuSet::from_cpus(self.cpus.iter().copied()))
    }

    fn footprint(&self) -> crate::driver::Footprint {
        crate::driver::Footprint {
            min_rt_prio: self.policy.is_rt().then_some(self.prio),
            rt: self.policy.is_rt().then_some((self.policy, self.prio)),
            mlock: self.mlock,
            dma_latency_us: None,
            rt_required: false,
        }
    }

    fn measure(&mut self, ctx: &mut Ctx<'_>) -> Result<MonitorOutcome> {
        run(self, ctx)
    }

    fn result(o: &mut MonitorOutcome) -> &mut Run {
        &mut o.run
    }

    fn render(&self, o: &MonitorOutcome) -> crate::driver::Text {
        snapshot::render(self, o).into()
    }
}
