//! `latlab ipc --method sigwait --ring N`: signaltest's measurement. N threads pass one signal
//! round a ring (each waits in sigwait, then signals the next with tgkill); the first times each
//! round trip, from right before its send to the moment the signal comes back. Rounds run back
//! to back in bursts (`--burst`, 16 as signaltest), the first thread waiting for the next
//! interval between bursts. One series: the round-trip times.

use super::{IpcConfig, Method, MethodOut};
use crate::driver::Ctx;
use latlab_core::error::{Error, Result};
use latlab_core::rt::{Applied, Placement};
use latlab_core::stats::Recorder;
use latlab_core::sys::{clock, ipcprim};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::{Arc, Barrier};

/// What the ring's threads share.
struct Ring {
    sig: i32,
    tids: Vec<AtomicI32>,
    quit: AtomicBool,
    broken: AtomicBool,
    rounds: AtomicU64,
    /// Signals another process sent into the ring: taken and dropped, not passed on (a
    /// second token would make every later round trip short).
    foreign: AtomicU64,
    /// latlab's process id: the sender of every signal of the ring.
    pid: i32,
}

impl Ring {
    fn signal(&self, to: usize) -> bool {
        ipcprim::signal_task(self.pid, self.tids[to].load(Ordering::Relaxed), self.sig)
    }

    /// Waits for the ring's signal from latlab itself, dropping (and counting) any another
    /// process sends; false when the wait failed.
    fn take(&self, set: &libc::sigset_t) -> bool {
        loop {
            match ipcprim::wait_signal_from(set, self.pid) {
                ipcprim::Took::Own => return true,
                ipcprim::Took::Foreign => {
                    self.foreign.fetch_add(1, Ordering::Relaxed);
                }
                ipcprim::Took::Failed => return false,
            }
        }
    }

    /// Ends the ring: every other thread gets its own signal and sees `quit`.
    fn end(&self) {
        self.quit.store(true, Ordering::SeqCst);
        for i in 1..self.tids.len() {
            self.signal(i);
        }
    }
}

/// The first thread: paces bursts, times round trips.
fn lead(ring: &Ring, set: &libc::sigset_t, cfg: &IpcConfig, stop: &AtomicBool) -> (Recorder, u64) {
    let clk = libc::CLOCK_MONOTONIC;
    let mut rec = Recorder::new();
    let begin = clock::now_ns(clk);
    let end = cfg
        .duration_ns
        .map_or(u64::MAX, |d| begin.saturating_add(d));
    let loops = cfg.loops.unwrap_or(u64::MAX);
    let burst = cfg.burst.max(1);
    let mut next = begin + cfg.interval_ns;
    let (mut rounds, mut overruns) = (0u64, 0u64);
    'run: while rounds < loops && next < end {
        while clock::sleep_until_ns(clk, next) == libc::EINTR && !stop.load(Ordering::Relaxed) {}
        if stop.load(Ordering::Relaxed) {
            break;
        }
        for _ in 0..burst {
            let t = clock::now_ns(clk);
            if !ring.signal(1) || !ring.take(set) {
                ring.broken.store(true, Ordering::SeqCst);
                break 'run;
            }
            // Woken by the end of a ring found stuck, not by the round: nothing to time.
            if ring.broken.load(Ordering::SeqCst) {
                break 'run;
            }
            rec.record(clock::now_ns(clk).saturating_sub(t));
            rounds += 1;
            ring.rounds.store(rounds, Ordering::Relaxed);
            if rounds >= loops || stop.load(Ordering::Relaxed) || clock::now_ns(clk) >= end {
                break 'run;
            }
        }
        next += cfg.interval_ns;
        let now = clock::now_ns(clk);
        if now >= next {
            let missed = (now - next) / cfg.interval_ns + 1;
            overruns += missed;
            next += missed * cfg.interval_ns;
        }
    }
    ring.end();
    (rec, overruns)
}

/// Any other thread: pass the signal on until told to quit.
fn pass(ring: &Ring, me: usize, set: &libc::sigset_t) {
    let next = (me + 1) % ring.tids.len();
    while ring.take(set) && !ring.quit.load(Ordering::SeqCst) {
        if !ring.signal(next) {
            ring.broken.store(true, Ordering::SeqCst);
            break;
        }
    }
}

/// Runs the ring of `n` threads; the outcome as one method (`sigwait`) with the round trips.
pub(crate) fn measure(ctx: &Ctx<'_>, cfg: &IpcConfig, n: usize) -> Result<(MethodOut, Option<String>)> {
    let ring = Arc::new(Ring {
        sig: ipcprim::rt_signal(2),
        tids: (0..n).map(|_| AtomicI32::new(0)).collect(),
        quit: AtomicBool::new(false),
        broken: AtomicBool::new(false),
        rounds: AtomicU64::new(0),
        foreign: AtomicU64::new(0),
        pid: latlab_core::sys::process::getpid(),
    });
    let _harmless = ipcprim::Harmless::install(&[ring.sig])
        .map_err(|e| Error::Env(format!("--ring: cannot set up its signal: {e}")))?;
    let placements: Vec<Placement> = (0..n)
        .map(|i| Placement {
            name: format!("ipc-ring{i}"),
            cpu: cfg.cpus[i % 2],
            policy: cfg.policy,
            prio: cfg.prio,
        })
        .collect();
    let barrier = Arc::new(Barrier::new(n + 1));
    let stop = ctx.control().stop.clone();
    let c = cfg.clone();
    let handles = ctx
        .spawn_workers(&placements, barrier.clone(), |i| {
            let ring = ring.clone();
            let stop = stop.clone();
            let c = c.clone();
            move || {
                ring.tids[i].store(latlab_core::sys::sched::gettid(), Ordering::SeqCst);
                let blocked = ipcprim::block_signals(&[ring.sig]).is_ok();
                let set = ipcprim::set_of(ring.sig);
                move || -> Option<(Recorder, u64)> {
                    if !blocked {
                        ring.broken.store(true, Ordering::SeqCst);
                        if i == 0 {
                            ring.end();
                        }
                        return None;
                    }
                    if i == 0 {
                        Some(lead(&ring, &set, &c, &stop))
                    } else {
                        pass(&ring, i, &set);
                        None
                    }
                }
            }
        })
        .map_err(|e| latlab_core::rt::start_error("spawning the ring's threads", e))?;
    barrier.wait();
    // A signal lost in the ring: every thread, the lead too, gets its own, with the ring
    // marked broken.
    super::await_workers(ctx, &handles, &mut || false, || {
        ring.broken.store(true, Ordering::SeqCst);
        ring.end();
        ring.signal(0);
    });
    let mut applied: Vec<Applied> = Vec::new();
    let mut out = None;
    for h in handles {
        let (a, r) = h
            .join()
            .map_err(|_| Error::Env("a ring thread panicked".into()))?;
        applied.push(a);
        if let Some(r) = r {
            out = Some(r);
        }
    }
    let (rec, overruns) = out.unwrap_or_else(|| (Recorder::new(), 0));
    let mut it = applied.into_iter();
    let first = it.next().unwrap_or_else(super::fallback);
    let second = it.next().unwrap_or_else(super::fallback);
    let broken = ring.broken.load(Ordering::SeqCst).then(|| {
        format!(
            "--ring {n}: a signal could not be sent or taken after {} round trips",
            rec.count
        )
    });
    Ok((
        MethodOut {
            method: Method::Sigwait,
            sent: ring.rounds.load(Ordering::SeqCst),
            rec,
            overruns,
            foreign: ring.foreign.load(Ordering::SeqCst),
            applied: [first, second],
        },
        broken,
    ))
}
