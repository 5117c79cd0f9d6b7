//! `latlab sched`: the scheduling latency of any task, not latlab's own threads: from the
//! `sched` tracepoints of every CPU (read by the `--trace` flight recorder), each measured
//! task's wake-up latency, preemption delay, run time, migrations and wakers, with the worst
//! delays explained by the same attribution as `--trace`; or, where the kernel takes BPF,
//! aggregated in kernel (`kernel`, the engine chosen in `engine`). Targets are chosen in `target`, the
//! replay is `track` (a task's latencies kept in `samples`), the text is `report`, a command
//! run under it is `child`.

pub(crate) mod args;
mod child;
pub(crate) mod engine;
mod follow;
mod kernel;
pub(crate) mod report;
pub(crate) mod samples;
pub(crate) mod target;
pub(crate) mod track;

use latlab_core::config::DisplayUnit;
use crate::driver::Ctx;
use latlab_core::error::Result;
use latlab_core::result::Run;
use follow::Follower;
use latlab_trace::session::Tracer;
use serde::Serialize;
use std::time::{Duration, Instant, SystemTime};
use target::{Matcher, Target};
use track::Tracker;

/// A validated `latlab sched`.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct SchedConfig {
    /// What to measure.
    pub(crate) target: Target,
    /// Delays count on these CPUs only (None: every CPU).
    pub(crate) cpus: Option<Vec<usize>>,
    /// How long (None: until the command or the processes exit, or Ctrl-C).
    pub(crate) duration_ns: Option<u64>,
    /// Delays at or over this are attributed.
    pub(crate) threshold_ns: u64,
    /// Display unit.
    pub(crate) unit: DisplayUnit,
    /// What lowering had to change in the request, recorded as warnings of the run.
    pub(crate) notes: Vec<String>,
    /// The engine that measures (in the parameters of every run).
    pub(crate) engine: engine::Engine,
}

/// A finished `latlab sched`.
#[derive(Debug)]
pub(crate) struct SchedOutcome {
    /// The result.
    pub(crate) run: Run,
    /// The command's exit status (`-- CMD`), 128 + N for a death by signal N.
    pub(crate) status: Option<i32>,
}

/// `sched` events read besides attribution's: migrations, exits, new tasks' first wake-ups,
/// forks and execs (for a command's family and names), and run-time accounting (which dates
/// a switch-in the kernel did not trace: see `track`).
const EXTRA: &[&str] = &[
    "sched_stat_runtime",
    "sched_migrate_task",
    "sched_process_exit",
    "sched_wakeup_new",
    "sched_process_fork",
    "sched_process_exec",
];

/// How often the events read are replayed and the end conditions checked.
const TICK: Duration = Duration::from_millis(50);

fn now_mono() -> u64 {
    latlab_core::sys::clock::now_ns(libc::CLOCK_MONOTONIC)
}

/// The CPUs not measured, where latlab's own work (the reader, the replay) runs: empty when
/// every CPU is measured.
fn housekeeping(cfg: &SchedConfig, all: &[usize]) -> Vec<usize> {
    match &cfg.cpus {
        Some(m) => all.iter().copied().filter(|c| !m.contains(c)).collect(),
        None => Vec::new(),
    }
}

/// Keeps the calling thread (and threads it starts) on `cpus` until dropped, when its own
/// CPUs are put back; does nothing for an empty set.
struct Confined {
    before: Option<Vec<usize>>,
}

impl Confined {
    fn to(cpus: &[usize]) -> Confined {
        if cpus.is_empty() {
            return Confined { before: None };
        }
        let before = latlab_core::sys::sched::affinity().ok();
        match latlab_core::sys::sched::pin_to_cpus(cpus.iter().copied()) {
            Ok(()) => Confined { before },
            Err(_) => Confined { before: None },
        }
    }
}

impl Confined {
    /// Runs `f` on the calling thread's own CPUs (a command started there gets them, not the
    /// housekeeping ones), then confines it to `cpus` again.
    fn lifted<T>(&mut self, cpus: &[usize], f: impl FnOnce() -> T) -> T {
        // The old value, dropped here, puts the CPUs back.
        *self = Confined { before: None };
        let out = f();
        *self = Confined::to(cpus);
        out
    }
}

impl Drop for Confined {
    fn drop(&mut self) {
        if let Some(b) = self.before.take() {
            let _ = latlab_core::sys::sched::pin_to_cpus(b);
        }
    }
}

/// Shortest run whose event rate is given: the trace starts before the run's clock, so over
/// a few milliseconds its events make a meaningless rate.
const MIN_RATE_SPAN_S: f64 = 0.1;

/// Events per second over `duration_s`, None for a run shorter than [`MIN_RATE_SPAN_S`].
fn rate(events: u64, duration_s: f64) -> Option<f64> {
    (duration_s >= MIN_RATE_SPAN_S).then(|| events as f64 / duration_s)
}

/// True while any of `pids` is alive.
fn any_alive(pids: &[i32]) -> bool {
    pids.iter()
        .any(|p| std::path::Path::new(&format!("/proc/{p}/status")).exists())
}

fn run(cfg: &SchedConfig, ctx: &mut Ctx<'_>) -> Result<SchedOutcome> {
    let all: Vec<usize> = latlab_core::config::CpuSet::online_here().iter().collect();
    let home = housekeeping(cfg, &all);
    // The reader thread runs on the housekeeping CPUs (`trace_request`), and so does this one.
    let mut confined = Confined::to(&home);
    let Some(mut tracer) = ctx.take_tracer() else {
        return Err(latlab_core::error::Error::Env(
            "latlab sched: the scheduler trace did not start".into(),
        ));
    };
    let started = SystemTime::now();
    let t0 = Instant::now();
    let start_ns = now_mono();
    let mut matcher = Matcher::new(cfg.target.clone(), std::path::Path::new("/proc"));
    let mut kid = match &cfg.target {
        Target::Command(argv) => Some(start_command(
            argv,
            (&mut confined, &home),
            &mut matcher,
            &mut tracer,
        )?),
        _ => None,
    };
    let tracker = Tracker::new(matcher, cfg.cpus.clone(), cfg.threshold_ns);
    let mut follower = Follower::new(tracer, tracker, start_ns);
    let deadline = cfg.duration_ns.map(|d| t0 + Duration::from_nanos(d));
    let pids = match &cfg.target {
        Target::Pid(p) => p.clone(),
        _ => Vec::new(),
    };
    let (status, ended_by) = watch(
        &mut || follower.step(),
        ctx,
        kid.as_mut(),
        &pids,
        deadline,
    );
    let stopped = end_command(ctx, kid, status);
    let end_ns = now_mono();
    let duration_s = t0.elapsed().as_secs_f64();
    // Read what is left: wait (a little) for the reader to pass the end.
    follower.finish(ctx, end_ns);
    drop(confined);
    let Follower {
        tracer, tracker, ..
    } = follower;
    let losses = tracer.recorder().losses();
    let mut trace = tracer.finish();
    // What the trace could not measure is the run's to say (once, among its warnings).
    for w in &trace.warnings {
        ctx.warn(w.clone());
    }
    let events_per_s = rate(trace.events, duration_s);
    let out = report::Assembled::new(&tracker.tasks, &losses);
    name_spikes(&mut trace, &out.thread_names);
    warn_after(ctx, cfg, &tracker, &losses, trace.events, duration_s);
    Ok(outcome(
        ctx,
        cfg,
        (started, duration_s),
        trace,
        events_per_s,
        out,
        (&ended_by, status, &stopped),
    ))
}

/// The finished run, either engine's: its series, its trace, its parameters.
fn outcome(
    ctx: &mut Ctx<'_>,
    cfg: &SchedConfig,
    (started, duration_s): (SystemTime, f64),
    trace: latlab_core::result::trace::TraceReport,
    events_per_s: Option<f64>,
    out: report::Assembled,
    ended: (&Option<String>, Option<i32>, &Option<i32>),
) -> SchedOutcome {
    let params = parameters(cfg, &trace, events_per_s, &out.processes, ended);
    let run = Run {
        series: out.series,
        duration_s,
        trace: Some(trace),
        ..ctx.run_at(started, params)
    };
    SchedOutcome {
        run,
        status: ended.1,
    }
}

/// Starts the command measured (`-- CMD`) on latlab's own CPUs, the calling thread
/// `confined` to `home` again after; the matcher and the tracer learn its pid.
fn start_command(
    argv: &[String],
    (confined, home): (&mut Confined, &[usize]),
    matcher: &mut Matcher,
    tracer: &mut Tracer,
) -> Result<child::Child> {
    let k = confined.lifted(home, || child::Child::spawn(argv))?;
    matcher.adopt(k.pid());
    // Everything the command starts is one culprit group.
    tracer.add_root(latlab_trace::groups::Root::command(
        k.pid(),
        argv.first().map_or("", String::as_str),
    ));
    Ok(k)
}

/// Follows the trace every [`TICK`] until a stop (Ctrl-C), the deadline, the command's exit
/// or the last `--pid` process's: the command's status, and how the run ended when it ended
/// by itself.
fn watch(
    step: &mut dyn FnMut(),
    ctx: &Ctx<'_>,
    mut kid: Option<&mut child::Child>,
    pids: &[i32],
    deadline: Option<Instant>,
) -> (Option<i32>, Option<String>) {
    let mut last_alive_check = Instant::now();
    loop {
        let control = ctx.control();
        control.sleep(TICK);
        step();
        if control.should_stop() || deadline.is_some_and(|d| Instant::now() >= d) {
            return (None, None);
        }
        if let Some(s) = kid.as_mut().and_then(|k| k.try_status()) {
            return (Some(s), Some(format!("the command exited (status {s})")));
        }
        if !pids.is_empty() && last_alive_check.elapsed() >= Duration::from_millis(500) {
            last_alive_check = Instant::now();
            if !any_alive(pids) {
                return (None, Some("every --pid process exited".into()));
            }
        }
    }
}

/// Ends the command, if any. A command still running (the duration ended, or latlab alone
/// was signalled) is stopped with everything it started; its status then is latlab's doing
/// and is returned, not passed on. One that exited by itself (`status`) has what it left
/// running ended (a daemon it started).
fn end_command(
    ctx: &mut Ctx<'_>,
    kid: Option<child::Child>,
    status: Option<i32>,
) -> Option<i32> {
    let mut k = kid?;
    if status.is_none() {
        return Some(k.stop());
    }
    let l = k.end_leftovers();
    if l.ended > 0 {
        ctx.warn(format!(
            "the command exited leaving {} process(es) it started running (a daemon, \
             a double fork or setsid); latlab ended them",
            l.ended
        ));
    }
    if !l.left.is_empty() {
        ctx.warn(format!(
            "the command left {} process(es) that could not be ended, even by SIGKILL \
             (uninterruptible or frozen): pids {:?}",
            l.left.len(),
            l.left
        ));
    }
    None
}

/// Spikes were named by task index (`task-N`); now by the task's series name.
fn name_spikes(trace: &mut latlab_core::result::trace::TraceReport, thread_names: &[String]) {
    for s in &mut trace.spikes {
        if let Some(i) = s
            .series
            .strip_prefix("task-")
            .and_then(|i| i.parse::<usize>().ok())
        {
            if let Some(n) = thread_names.get(i) {
                s.series = n.clone();
            }
        }
    }
}

/// What the run leaves to be said: no task matched, tasks beyond the cap, lost events, the
/// event rate of `--all`.
fn warn_after(
    ctx: &mut Ctx<'_>,
    cfg: &SchedConfig,
    tracker: &Tracker<Matcher>,
    losses: &[(usize, Vec<(u64, u64)>)],
    events: u64,
    duration_s: f64,
) {
    if tracker.tasks.is_empty() {
        ctx.warn(format!(
            "no task matched {} during the run",
            cfg.target.describe()
        ));
    }
    if tracker.overflow > 0 {
        ctx.warn(format!(
            "{} tasks were not measured: at most {} are kept per run",
            tracker.overflow,
            track::MAX_TASKS
        ));
    }
    for (cpu, l) in losses {
        let n: u64 = l.iter().map(|x| x.1).sum();
        if n > 0 {
            ctx.warn(format!(
                "CPU {cpu}: the kernel lost {n} trace events (reader too slow); tasks flagged \
                 'lost' may be missing wake-ups"
            ));
        }
    }
    if matches!(cfg.target, Target::All) {
        ctx.warn(match rate(events, duration_s) {
            Some(r) => format!("--all: {r:.0} events/s read ({events} events in {duration_s:.1} s)"),
            None => format!(
                "--all: {events} events read in {duration_s:.3} s (too short a run for a rate)"
            ),
        });
    }
}

/// The run's parameters: the config, the target in words, the trace's figures, the
/// processes merged, and how the run ended (and the command with it).
fn parameters(
    cfg: &SchedConfig,
    trace: &latlab_core::result::trace::TraceReport,
    events_per_s: Option<f64>,
    processes: &[serde_json::Value],
    (ended_by, status, stopped): (&Option<String>, Option<i32>, &Option<i32>),
) -> serde_json::Value {
    let mut params = serde_json::to_value(cfg).unwrap_or_default();
    if let Some(o) = params.as_object_mut() {
        o.insert("target_text".into(), cfg.target.describe().into());
        o.insert("events".into(), trace.events.into());
        o.insert(
            "events_per_s".into(),
            events_per_s.map_or(serde_json::Value::Null, |r| r.round().into()),
        );
        o.insert("lost_events".into(), trace.lost_events.into());
        o.insert("processes".into(), processes.to_vec().into());
        if let Some(e) = ended_by {
            o.insert("ended_by".into(), e.clone().into());
        }
        if let Some(s) = status {
            o.insert("command_status".into(), s.into());
        }
        if let Some(s) = stopped {
            o.insert("command_stopped".into(), (*s).into());
        }
    }
    params
}

impl crate::driver::Measurement for SchedConfig {
    const FACTS: latlab_core::result::kind::Facts = latlab_core::result::kind::Facts {
        always_traced: true,
        ..latlab_core::result::kind::Facts::LATENCY
    };
    type Outcome = SchedOutcome;
    const KIND: &'static str = "sched";

    fn planned(&self) -> Option<Duration> {
        self.duration_ns.map(Duration::from_nanos)
    }

    fn measured_cpus(&self) -> Option<latlab_core::config::CpuSet> {
        self.cpus
            .as_ref()
            .map(|c| latlab_core::config::CpuSet::from_cpus(c.iter().copied()))
    }

    fn trace_request(&self) -> Option<latlab_trace::session::Request> {
        if self.engine == engine::Engine::Bpf {
            return None;
        }
        let all: Vec<usize> = latlab_core::config::CpuSet::online_here().iter().collect();
        let home = housekeeping(self, &all);
        Some(latlab_trace::session::Request {
            // A wake-up is recorded on the waker's CPU: every CPU is traced.
            cpus: all,
            threshold_ns: self.threshold_ns,
            extra: EXTRA,
            reader_cpus: (!home.is_empty()).then_some(home),
            needs_root: "latlab sched needs root (it reads the kernel's sched tracepoints \
                         through tracefs)",
            ..Default::default()
        })
    }

    fn pinned_cpus(&self) -> Option<latlab_core::config::CpuSet> {
        // The CPUs that count are watched, not run on: latlab's threads are not pinned there.
        None
    }

    fn footprint(&self) -> crate::driver::Footprint {
        crate::driver::Footprint::default()
    }

    fn measure(&mut self, ctx: &mut Ctx<'_>) -> Result<SchedOutcome> {
        for n in &self.notes {
            ctx.warn(n.clone());
        }
        match self.engine {
            engine::Engine::Bpf => kernel::run(self, ctx),
            engine::Engine::Tracefs => run(self, ctx),
        }
    }

    fn result(o: &mut SchedOutcome) -> &mut Run {
        &mut o.run
    }

    fn exit_status(o: &SchedOutcome) -> Option<i32> {
        o.status
    }

    fn render(&self, o: &SchedOutcome) -> crate::driver::Text {
        report::render(&o.run, self.unit, true).into()
    }

    fn render_stored(run: &Run, unit: DisplayUnit) -> Option<String> {
        Some(report::render(run, unit, false))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rate_needs_a_run_long_enough_to_mean_one() {
        assert_eq!(rate(354, 0.004), None);
        assert_eq!(rate(354, 0.0), None);
        assert_eq!(rate(1000, 2.0), Some(500.0));
    }
}
