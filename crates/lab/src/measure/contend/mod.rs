//! `latlab contend`: the cpupri story of seed 002. One thread per CPU at the same RT priority
//! repeatedly enters and leaves a shared per-priority structure (a count per level and a
//! bitmask of non-empty levels, as cpupri keeps) and scans it, under `--sync mutex|spin|
//! atomic|percpu`. The `vec` (update) and `loop` (scan) sections are timed per CPU with the
//! public `probe` API and printed in the seed's table.

pub(crate) mod args;
mod lower;

use latlab_core::config::Policy;
use crate::driver::Ctx;
use latlab_core::error::Result;
use latlab_core::probe::Probe;
use latlab_core::result::{Run, Series};
use latlab_core::rt;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Barrier, Mutex};
use std::time::{Duration, Instant, SystemTime};

/// Priority levels in the shared structure (as the kernel's RT priorities).
pub(crate) const LEVELS: usize = 100;

/// How the shared structure is synchronised.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Sync {
    /// One mutex per level (the vec->lock before the patch).
    Mutex,
    /// One spinlock per level.
    Spin,
    /// Atomic counters and barriers, no lock (the patch).
    Atomic,
    /// Per-CPU counters: no sharing at all; the scan sums over CPUs.
    Percpu,
}

/// Validated `contend` settings.
#[derive(Debug, Clone, serde::Serialize)]
pub(crate) struct ContendConfig {
    /// CPUs, one thread each.
    pub(crate) cpus: Vec<usize>,
    /// Synchronisation.
    pub(crate) sync: Sync,
    /// Priority of every thread (they share it, as in the seed).
    pub(crate) prio: i32,
    /// Policy.
    pub(crate) policy: Policy,
    /// Iterations per thread (None: run for `duration_ns`).
    pub(crate) iterations: Option<u64>,
    /// Run length when no iteration count is given.
    pub(crate) duration_ns: u64,
    /// Priority level every thread enqueues at (1..=99).
    pub(crate) level: usize,
}

/// The shared per-priority structure.
struct Shared {
    counts: Vec<AtomicI64>,
    mask: [AtomicU64; 2],
    locks: Vec<Mutex<()>>,
    spins: Vec<AtomicBool>,
    percpu: Vec<Vec<AtomicI64>>,
}

impl Shared {
    fn new(ncpu: usize) -> Shared {
        Shared {
            counts: (0..LEVELS).map(|_| AtomicI64::new(0)).collect(),
            mask: [AtomicU64::new(0), AtomicU64::new(0)],
            locks: (0..LEVELS).map(|_| Mutex::new(())).collect(),
            spins: (0..LEVELS).map(|_| AtomicBool::new(false)).collect(),
            percpu: (0..ncpu)
                .map(|_| (0..LEVELS).map(|_| AtomicI64::new(0)).collect())
                .collect(),
        }
    }

    fn set_bit(&self, l: usize, on: bool) {
        let (w, b) = (l / 64, 1u64 << (l % 64));
        if on {
            self.mask[w].fetch_or(b, Ordering::Relaxed);
        } else {
            self.mask[w].fetch_and(!b, Ordering::Relaxed);
        }
    }

    /// Adds `d` (+1 or −1) to level `l`: the `vec` section.
    #[inline]
    fn update(&self, sync: Sync, me: usize, l: usize, d: i64) {
        match sync {
            Sync::Mutex => {
                let _g = self.locks[l].lock().unwrap_or_else(|p| p.into_inner());
                let c = self.counts[l].load(Ordering::Relaxed) + d;
                self.counts[l].store(c, Ordering::Relaxed);
                self.set_bit(l, c > 0);
            }
            Sync::Spin => {
                while self.spins[l]
                    .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
                    .is_err()
                {
                    std::hint::spin_loop();
                }
                let c = self.counts[l].load(Ordering::Relaxed) + d;
                self.counts[l].store(c, Ordering::Relaxed);
                self.set_bit(l, c > 0);
                self.spins[l].store(false, Ordering::Release);
            }
            Sync::Atomic => {
                self.counts[l].fetch_add(d, Ordering::SeqCst);
            }
            Sync::Percpu => {
                self.percpu[me][l].fetch_add(d, Ordering::Relaxed);
            }
        }
    }

    /// Finds the lowest non-empty level below `below`: the `loop` section.
    #[inline]
    fn scan(&self, sync: Sync, below: usize) -> Option<usize> {
        match sync {
            Sync::Mutex | Sync::Spin => {
                let m = [
                    self.mask[0].load(Ordering::Relaxed),
                    self.mask[1].load(Ordering::Relaxed),
                ];
                (1..below).find(|&l| m[l / 64] & (1 << (l % 64)) != 0)
            }
            Sync::Atomic => (1..below).find(|&l| self.counts[l].load(Ordering::Acquire) > 0),
            Sync::Percpu => (1..below).find(|&l| {
                self.percpu
                    .iter()
                    .map(|c| c[l].load(Ordering::Relaxed))
                    .sum::<i64>()
                    > 0
            }),
        }
    }
}

/// A finished `contend` run.
pub(crate) struct ContendOutcome {
    /// The result model.
    pub(crate) run: Run,
    /// The seed's table.
    pub(crate) table: String,
}

/// Runs the measurement.
pub(crate) fn run(cfg: ContendConfig, ctx: &mut Ctx<'_>) -> Result<ContendOutcome> {
    let mut warnings = Vec::new();
    let rt_granted = ctx.rt_granted();
    let policy = if rt_granted {
        cfg.policy
    } else {
        Policy::Other
    };
    let prio = if rt_granted { cfg.prio } else { 0 };
    if policy.is_rt() && cfg.cpus.len() >= ctx.environment().cpus_online {
        warnings.push(format!(
            "{policy} {prio} threads on every CPU: other tasks run only when RT throttling allows"
        ));
    }
    let control = ctx.control().clone();
    let probe = Probe::new(&["loop", "vec"]);
    let shared = Shared::new(cfg.cpus.len());
    let stop = AtomicBool::new(false);
    let barrier = Barrier::new(cfg.cpus.len() + 1);
    let started = SystemTime::now();
    let t0 = Instant::now();
    let log = ctx.placement().clone();
    // Where each CPU's thread really ran (read back), by the CPU it was meant for.
    let mut ran = BTreeMap::new();
    std::thread::scope(|s| {
        let hs: Vec<_> = cfg
            .cpus
            .iter()
            .enumerate()
            .map(|(me, &cpu)| {
                let (probe, shared, stop, barrier, log) = (&probe, &shared, &stop, &barrier, &log);
                let (sync, level, limit) =
                    (cfg.sync, cfg.level, cfg.iterations.unwrap_or(u64::MAX));
                s.spawn(move || {
                    let applied = rt::place_current(
                        &rt::Placement {
                            name: format!("cpu{cpu}"),
                            cpu: Some(cpu),
                            policy,
                            prio,
                        },
                        rt::PREFAULT,
                        log,
                    );
                    let mut rec = probe.recorder(cpu);
                    barrier.wait();
                    let mut n = 0u64;
                    while n < limit && !stop.load(Ordering::Relaxed) {
                        let t = rec.start();
                        shared.update(sync, me, level, 1);
                        rec.stop(1, t);
                        let t = rec.start();
                        std::hint::black_box(shared.scan(sync, LEVELS));
                        rec.stop(0, t);
                        let t = rec.start();
                        shared.update(sync, me, level, -1);
                        rec.stop(1, t);
                        n += 1;
                    }
                    (cpu, n, applied.cpu_for(Some(cpu)))
                })
            })
            .collect();
        barrier.wait();
        let deadline = cfg
            .iterations
            .is_none()
            .then(|| t0 + Duration::from_nanos(cfg.duration_ns));
        wait_for_end(&hs, &control, deadline);
        stop.store(true, Ordering::Relaxed);
        for h in hs {
            if let Ok((cpu, _, ran_on)) = h.join() {
                ran.insert(cpu, ran_on);
            }
        }
    });
    // With iterations given, a signal still ends the threads at their next check.
    let series = series(&probe, &ran, (policy, prio), cfg.sync);
    ctx.warnings().extend(warnings);
    let run = Run {
        interrupted: control.was_interrupted(),
        series,
        duration_s: t0.elapsed().as_secs_f64(),
        ..ctx.run_at(started, serde_json::to_value(&cfg).unwrap_or_default())
    };
    Ok(ContendOutcome {
        run,
        table: probe.table(),
    })
}

/// Waits until the deadline (or, without one, until every thread is done) or a signal,
/// whichever comes first.
fn wait_for_end<T>(
    hs: &[std::thread::ScopedJoinHandle<'_, T>],
    control: &rt::Control,
    deadline: Option<Instant>,
) {
    loop {
        if control.was_interrupted() || deadline.is_some_and(|d| Instant::now() >= d) {
            break;
        }
        if hs.iter().all(|h| h.is_finished()) {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// One series per CPU and section, on the CPU its thread really ran on (`ran`, by the CPU
/// it was meant for).
fn series(
    probe: &Probe,
    ran: &BTreeMap<usize, Option<usize>>,
    (policy, prio): (Policy, i32),
    sync: Sync,
) -> Vec<Series> {
    let mut series = Vec::new();
    for (cpu, secs) in probe.stats() {
        for (name, r) in probe.names().iter().zip(secs) {
            let mut sr = Series::from_recorder(format!("cpu{cpu}/{name}"), &r);
            sr.cpu = ran.get(&cpu).copied().flatten().or(Some(cpu));
            sr.policy = policy.to_string();
            sr.prio = prio;
            sr.extra = Some(serde_json::json!({ "total_ns": r.sum as u64, "sync": sync }));
            series.push(sr);
        }
    }
    series
}

/// The report: header, the seed's table, warnings.
pub(crate) fn render(o: &ContendOutcome, cfg: &ContendConfig) -> String {
    let sync = serde_json::to_value(cfg.sync)
        .ok()
        .and_then(|v| v.as_str().map(String::from))
        .unwrap_or_default();
    let mut s = format!(
        "latlab contend  sync {sync}  {} thread(s) at level {}  run {}{}\n\
         All times are in microseconds. 'vec' is one update of the shared per-priority structure \
         (enter or leave), 'loop' one scan of it.\n\n",
        cfg.cpus.len(),
        cfg.level,
        o.run.id,
        if o.run.interrupted {
            "  (interrupted)"
        } else {
            ""
        }
    );
    s.push_str(&o.table);
    for w in &o.run.warnings {
        s.push_str(&format!("warning: {w}\n"));
    }
    s
}

impl crate::driver::Measurement for ContendConfig {
    type Outcome = ContendOutcome;
    const KIND: &'static str = "contend";

    fn planned(&self) -> Option<Duration> {
        self.iterations
            .is_none()
            .then(|| Duration::from_nanos(self.duration_ns))
    }

    fn measured_cpus(&self) -> Option<latlab_core::config::CpuSet> {
        Some(latlab_core::config::CpuSet::from_cpus(self.cpus.iter().copied()))
    }

    fn footprint(&self) -> crate::driver::Footprint {
        crate::driver::Footprint {
            min_rt_prio: self.policy.is_rt().then_some(self.prio),
            rt: Some((self.policy, self.prio)),
            mlock: true,
            dma_latency_us: None,
            rt_required: false,
        }
    }

    fn measure(&mut self, ctx: &mut Ctx<'_>) -> Result<ContendOutcome> {
        run(self.clone(), ctx)
    }

    fn result(o: &mut ContendOutcome) -> &mut Run {
        &mut o.run
    }

    fn render(&self, o: &ContendOutcome) -> crate::driver::Text {
        render(o, self).into()
    }
}
