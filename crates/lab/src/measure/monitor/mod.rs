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
pub(crate) mod probe;
mod session;
pub mod snapshot;
mod state;
pub mod tally;
pub(crate) mod traced;
pub mod window;

use latlab_core::config::{CpuSet, Policy};
use latlab_http::server as http;
use latlab_http::webconfig;
use crate::driver::Ctx;
use latlab_core::error::{Error, Result};
use latlab_core::result::Run;
use latlab_core::rt;
use latlab_core::stats::Recorder;
use metrics::Shared;
pub(crate) use probe::Probe;
use serde::Serialize;
use state::shared_state;
pub(crate) use state::status;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

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
    let policy = probe::policy(cfg.engine, (cfg.policy, cfg.prio), driver.rt_granted());
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
    let tracer = driver.take_tracer();
    let causes = tracer
        .as_ref()
        .map(|_| Arc::new(causes::Causes::new(&cfg.cpus, cfg.trace_culprits)));
    let (spike_prods, spikes) = traced::spike_rings(tracer.is_some(), n, SPIKE_RING);
    let tallies = probe::tallies(n, cfg.threshold_ns);
    let shared = Arc::new(shared_state(cfg, &env, &tallies, causes.clone()));
    if let Some(w) = &shared.exposure {
        latlab_core::note!("latlab monitor: warning: {w}");
    }
    let server = start_endpoint(cfg, shared.clone())?;
    let listen = server.addr;
    let hup = hangup_flag();
    let probe = Probe {
        cpus: &cfg.cpus,
        interval_ns: cfg.interval_ns,
        trace_threshold_ns: cfg.trace_threshold_ns,
        engine: cfg.engine,
    };
    let (running, mut rings) = probe.start(policy, driver, &tallies, spike_prods)?;

    let trace = session::Trace {
        tracer,
        causes,
        spikes,
    };
    let mut s = session::Session::new(cfg, policy, shared, tallies, trace, warnings);
    let every = Duration::from_nanos(cfg.snapshot_every_ns);
    let t0 = Instant::now();
    let deadline = cfg.duration_ns.map(|d| t0 + Duration::from_nanos(d));
    s.trace_ends(&control, deadline);
    let mut next_snapshot = t0 + every;
    s.keep_in_background(driver);
    loop {
        s.visit(&mut rings);
        if hup.swap(false, Ordering::Relaxed) {
            latlab_core::note!("{}", status(&s.shared, &cfg.monitor_id).trim_end());
        }
        if control.was_interrupted() || deadline.is_some_and(|d| Instant::now() >= d) {
            control.stop.store(true, Ordering::Release);
        }
        if control.stop.load(Ordering::Acquire) || running.all_done() {
            break;
        }
        if Instant::now() >= next_snapshot {
            s.snapshot(driver);
            next_snapshot = next_ahead(next_snapshot, every);
        }
        let until_close = s.shared.windows.until_close(window::unix_now_ns());
        running.bell.wait(Duration::from_millis(100).min(until_close));
    }
    let outs = running.stop(&control)?;
    server.stop();
    saved_state.restore();
    Ok(s.finish(driver, &mut rings, outs, control.was_interrupted(), listen))
}

/// The boundary after `last` (every `every`) that is still ahead: a visit that came late
/// skips those it missed rather than taking them in a burst.
pub(crate) fn next_ahead(last: Instant, every: Duration) -> Instant {
    let mut next = last + every;
    while next <= Instant::now() {
        next += every;
    }
    next
}

/// The flag SIGHUP sets, for the control thread to print the status.
fn hangup_flag() -> Arc<AtomicBool> {
    let hup = Arc::new(AtomicBool::new(false));
    // (Under `nohup`, a hang-up stays ignored: no status.)
    if !latlab_core::sys::process::hangup_ignored() {
        let _ = signal_hook::flag::register(libc::SIGHUP, hup.clone());
    }
    // Held since start (sys::process): a hang-up that came meanwhile prints the status now.
    latlab_core::sys::process::release_hangup();
    hup
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
