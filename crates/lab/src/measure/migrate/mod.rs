//! `latlab migrate`: RT push/pull stress and priority-order check (rt-migrate-test; seed 002's
//! load). CPUs+1 SCHED_FIFO tasks at increasing priorities are released together each
//! iteration and each busy for a fixed time; the highest is re-pinned round-robin to force
//! migrations. With one task more than CPUs, the lowest must wait: any higher-priority task that
//! started (or finished) after a lower one by more than `--max-err` fails the check.

pub(crate) mod args;
mod lower;

use latlab_core::config::{CpuSet, DisplayUnit, Policy};
use crate::driver::Ctx;
use latlab_core::error::Result;
use latlab_analysis::export::columns;
use latlab_core::result::{Run, Series};
use latlab_core::stats::Recorder;
use latlab_core::sys::{self, taskpair};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};

/// Validated `migrate` settings.
#[derive(Debug, Clone, serde::Serialize)]
pub(crate) struct MigrateConfig {
    /// Tasks (default CPUs + 1).
    pub(crate) tasks: usize,
    /// Priority of the lowest task; task i runs at base + i.
    pub(crate) base_prio: i32,
    /// Iterations.
    pub(crate) loops: usize,
    /// Busy time of every task per iteration, ns.
    pub(crate) run_ns: u64,
    /// Pause between iterations, ns.
    pub(crate) sleep_ns: u64,
    /// Tolerance of the order check, ns.
    pub(crate) max_err_ns: u64,
    /// Test hook: the highest task drops below the lowest half-way through.
    pub(crate) inject_inversion: bool,
}

/// A finished `migrate` run.
pub(crate) struct MigrateOutcome {
    /// The result model (check_failure set when Failed).
    pub(crate) run: Run,
    /// Order violations found.
    pub(crate) violations: Vec<String>,
}

/// The priority-order check over the iterations done: a higher-priority task that never
/// started, started later than a lower one by more than the allowed error, or finished behind
/// it, is a violation.
fn check_order(
    cfg: &MigrateConfig,
    starts: &[Vec<AtomicU64>],
    ends: &[Vec<AtomicU64>],
    done_loops: usize,
) -> Vec<String> {
    let load = |v: &Vec<AtomicU64>, it: usize| v[it].load(Ordering::Relaxed);
    let mut violations = Vec::new();
    for it in 0..done_loops {
        for hi in 0..cfg.tasks {
            for lo in 0..hi {
                let (sh, sl) = (load(&starts[hi], it), load(&starts[lo], it));
                let (eh, el) = (load(&ends[hi], it), load(&ends[lo], it));
                if sl == 0 {
                    continue;
                }
                if sh == 0 {
                    violations.push(format!(
                        "iteration {it}: task {hi} (prio {}) never started while lower-priority task {lo} (prio {}) ran",
                        cfg.base_prio + hi as i32,
                        cfg.base_prio + lo as i32
                    ));
                } else if sh > sl + cfg.max_err_ns {
                    violations.push(format!(
                        "iteration {it}: task {hi} (prio {}) started {:.1} us after lower-priority task {lo} (prio {})",
                        cfg.base_prio + hi as i32,
                        (sh - sl) as f64 / 1e3,
                        cfg.base_prio + lo as i32
                    ));
                } else if eh > el + cfg.max_err_ns {
                    violations.push(format!(
                        "iteration {it}: task {hi} (prio {}) finished {:.1} us after lower-priority task {lo} (prio {}): it ran behind it",
                        cfg.base_prio + hi as i32,
                        (eh - el) as f64 / 1e3,
                        cfg.base_prio + lo as i32
                    ));
                }
            }
        }
    }
    violations
}

/// Runs the stress and the check.
pub(crate) fn run(cfg: MigrateConfig, ctx: &mut Ctx<'_>) -> Result<MigrateOutcome> {
    let warnings: Vec<String> = Vec::new();
    let control = ctx.control().clone();
    let ncpu = CpuSet::online_here().len().max(1);
    let gen = AtomicU32::new(0);
    let cell = || {
        (0..cfg.loops)
            .map(|_| AtomicU64::new(0))
            .collect::<Vec<_>>()
    };
    let starts: Vec<Vec<AtomicU64>> = (0..cfg.tasks).map(|_| cell()).collect();
    let ends: Vec<Vec<AtomicU64>> = (0..cfg.tasks).map(|_| cell()).collect();
    let release: Vec<AtomicU64> = cell();
    let started = SystemTime::now();
    let t0 = Instant::now();
    let mono = || sys::clock::now_ns(libc::CLOCK_MONOTONIC);
    let mut done_loops = 0usize;
    let log = ctx.placement().clone();
    std::thread::scope(|s| {
        for i in 0..cfg.tasks {
            let (gen, starts, ends, cfg, log) = (&gen, &starts, &ends, &cfg, &log);
            s.spawn(move || {
                let prio = cfg.base_prio + i as i32;
                log.check(sys::sched::set_policy(Policy::Fifo, prio), || {
                    format!("migrate task: FIFO {prio} refused")
                });
                let highest = i + 1 == cfg.tasks;
                for it in 0..cfg.loops {
                    if highest {
                        log.check(sys::sched::pin_to_cpu(it % ncpu), || {
                            format!("migrate task: pin to CPU {} refused", it % ncpu)
                        });
                    }
                    if highest && cfg.inject_inversion && it == cfg.loops / 2 {
                        log.check(sys::sched::set_policy(Policy::Fifo, 1), || {
                            "migrate task: FIFO 1 refused".into()
                        });
                    }
                    loop {
                        let g = gen.load(Ordering::Acquire);
                        if g as usize > it {
                            break;
                        }
                        taskpair::futex_wait(gen, g);
                    }
                    if gen.load(Ordering::Acquire) == u32::MAX {
                        return;
                    }
                    let a = mono();
                    starts[i][it].store(a, Ordering::Relaxed);
                    while mono() < a + cfg.run_ns {
                        std::hint::spin_loop();
                    }
                    ends[i][it].store(mono(), Ordering::Relaxed);
                }
            });
        }
        done_loops = release_tasks(&cfg, &gen, &release, &control, &log);
    });
    let violations = check_order(&cfg, &starts, &ends, done_loops);
    let series = start_delays(&cfg, &starts, &release, done_loops);
    let check_failure = (!violations.is_empty()).then(|| {
        format!(
            "migrate: Failed: {} priority-order violation(s); first: {}",
            violations.len(),
            violations[0]
        )
    });
    ctx.warnings().extend(warnings);
    let run = Run {
        interrupted: control.was_interrupted(),
        check_failure,
        series,
        duration_s: t0.elapsed().as_secs_f64(),
        ..ctx.run_at(started, serde_json::to_value(&cfg).unwrap_or_default())
    };
    Ok(MigrateOutcome { run, violations })
}

/// The controller's side: above every task, it releases them `cfg.loops` times (or until
/// a signal), lets the last round finish, ends the tasks and goes back to SCHED_OTHER.
/// Returns the rounds released.
fn release_tasks(
    cfg: &MigrateConfig,
    gen: &AtomicU32,
    release: &[AtomicU64],
    control: &latlab_core::rt::Control,
    log: &latlab_core::rt::PlacementLog,
) -> usize {
    let top = cfg.base_prio + cfg.tasks as i32;
    let mono = || sys::clock::now_ns(libc::CLOCK_MONOTONIC);
    let mut done_loops = 0usize;
    // The controller sits above every task so each release is one instant.
    log.check(sys::sched::set_policy(Policy::Fifo, top + 1), || {
        format!("migrate control thread: FIFO {} refused", top + 1)
    });
    for (it, rel) in release.iter().enumerate() {
        std::thread::sleep(Duration::from_nanos(
            cfg.sleep_ns
                + if it == 0 {
                    0
                } else {
                    cfg.run_ns * cfg.tasks as u64
                },
        ));
        if control.was_interrupted() {
            break;
        }
        rel.store(mono(), Ordering::Relaxed);
        gen.store(it as u32 + 1, Ordering::Release);
        taskpair::futex_wake(gen, i32::MAX);
        done_loops = it + 1;
    }
    std::thread::sleep(Duration::from_nanos(cfg.run_ns * (cfg.tasks as u64 + 1)));
    gen.store(u32::MAX, Ordering::Release);
    taskpair::futex_wake(gen, i32::MAX);
    log.check(sys::sched::set_policy(Policy::Other, 0), || {
        "migrate control thread: return to SCHED_OTHER refused".into()
    });
    done_loops
}

/// Each task's series: how long after each release it started.
fn start_delays(
    cfg: &MigrateConfig,
    starts: &[Vec<AtomicU64>],
    release: &[AtomicU64],
    done_loops: usize,
) -> Vec<Series> {
    let load = |v: &Vec<AtomicU64>, it: usize| v[it].load(Ordering::Relaxed);
    let mut series = Vec::new();
    for (i, task_starts) in starts.iter().enumerate() {
        let mut r = Recorder::new();
        for (it, rel) in release.iter().enumerate().take(done_loops) {
            let (st, rel) = (load(task_starts, it), rel.load(Ordering::Relaxed));
            if st > 0 {
                r.record(st.saturating_sub(rel));
            }
        }
        let mut s = Series::from_recorder(format!("task{i}"), &r);
        s.policy = "fifo".into();
        s.prio = cfg.base_prio + i as i32;
        series.push(s);
    }
    series
}

/// The report: per-task start delays after each release, then Passed or Failed.
pub(crate) fn render(o: &MigrateOutcome, cfg: &MigrateConfig) -> String {
    let u = DisplayUnit::Us;
    let mut s = format!(
        "latlab migrate  {} tasks  {} loops  run {:.1} ms  sleep {:.1} ms  max-err {} us  run {}\n",
        cfg.tasks,
        cfg.loops,
        cfg.run_ns as f64 / 1e6,
        cfg.sleep_ns as f64 / 1e6,
        cfg.max_err_ns / 1000,
        o.run.id
    );
    s.push_str("start delay after release (us)\n");
    let rows: Vec<Vec<String>> = o
        .run
        .series
        .iter()
        .map(|x| {
            vec![
                x.name.clone(),
                x.prio.to_string(),
                x.summary.count.to_string(),
                u.fmt_ns(x.summary.min_ns as f64),
                u.fmt_ns(x.summary.mean_ns),
                u.fmt_ns(x.summary.max_ns as f64),
            ]
        })
        .collect();
    s.push_str(&columns::render(
        &["task", "prio", "loops", "min", "avg", "max"],
        &rows,
    ));
    for v in o.violations.iter().take(10) {
        s.push_str(&format!("  {v}\n"));
    }
    s.push_str(if o.violations.is_empty() {
        " Passed!\n"
    } else {
        " Failed!\n"
    });
    for w in &o.run.warnings {
        s.push_str(&format!("warning: {w}\n"));
    }
    s
}

impl crate::driver::Measurement for MigrateConfig {
    type Outcome = MigrateOutcome;
    const KIND: &'static str = "migrate";

    fn planned(&self) -> Option<std::time::Duration> {
        None
    }

    fn footprint(&self) -> crate::driver::Footprint {
        crate::driver::Footprint {
            min_rt_prio: Some(self.base_prio),
            rt: Some((Policy::Fifo, self.base_prio + self.tasks as i32)),
            mlock: true,
            dma_latency_us: None,
            rt_required: true,
        }
    }

    fn measure(&mut self, ctx: &mut Ctx<'_>) -> Result<MigrateOutcome> {
        run(self.clone(), ctx)
    }

    fn result(o: &mut MigrateOutcome) -> &mut Run {
        &mut o.run
    }

    fn render(&self, o: &MigrateOutcome) -> crate::driver::Text {
        render(o, self).into()
    }
}
