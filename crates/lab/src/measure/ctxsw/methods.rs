//! The three ways of forcing context switches (seed 000; lmbench lat_ctx; perf bench sched):
//! `yield` between two SCHED_FIFO tasks on one CPU, a token passed round a `pipe` ring, and a
//! `futex` ping-pong. Each runs its partner tasks as threads or forked processes and times the
//! measuring task's round trips in ticks; sample vectors are allocated before the loop.

use latlab_core::sys::taskpair::{self, Pipe, SharedPage};
use latlab_core::sys::tsc::Ticks;
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering;
use std::sync::Arc;

pub use latlab_core::config::TaskKind;

/// Where and how the tasks run.
#[derive(Debug, Clone)]
pub(crate) struct Setup {
    /// Threads or processes.
    pub(crate) kind: TaskKind,
    /// CPU of each task, by task index (cycled).
    pub(crate) cpus: Vec<usize>,
    /// Policy (`SCHED_*`) and priority of every task.
    pub(crate) policy: libc::c_int,
    /// Priority.
    pub(crate) prio: i32,
    /// Timed iterations.
    pub(crate) iterations: usize,
    /// Untimed iterations first.
    pub(crate) warmup: usize,
    /// Tick source.
    pub(crate) ticks: Ticks,
    /// Set on Ctrl-C/SIGTERM: the measuring loops end and keep what they timed.
    pub(crate) stop: Arc<std::sync::atomic::AtomicBool>,
    /// The run's placement log (a forked task's refusals stay in its own copy).
    pub log: latlab_core::rt::PlacementLog,
}

impl Setup {
    fn cpu(&self, task: usize) -> usize {
        self.cpus[task % self.cpus.len()]
    }
}

/// What one method measured (all figures in ticks).
#[derive(Debug, Clone)]
pub(crate) struct Raw {
    /// One sample per timed iteration: a round trip.
    pub(crate) samples: Vec<u64>,
    /// Context switches in one sample.
    pub(crate) switches_per_sample: f64,
    /// Ticks of non-switch work in one sample, subtracted before dividing (pipe method).
    pub(crate) overhead_per_sample: u64,
    /// Bytes another process wrote into the pipe ring (through /proc/PID/fd): dropped, never
    /// passed on as a second token.
    pub(crate) foreign: u64,
}

/// A partner task: a thread or a forked process.
enum Partner {
    Thread(std::thread::JoinHandle<()>),
    Process(libc::pid_t),
}

fn start_partner(
    s: &Setup,
    task: usize,
    body: impl FnOnce() + Send + 'static,
) -> std::io::Result<Partner> {
    let cpu = s.cpu(task);
    match s.kind {
        TaskKind::Threads => {
            let (policy, prio, log) = (s.policy, s.prio, s.log.clone());
            std::thread::Builder::new()
                .name(format!("latlab-task{task}"))
                .spawn(move || {
                    log.check(latlab_core::sys::sched::pin_to_cpu(cpu), || {
                        format!("ctxsw task: pin to CPU {cpu} refused")
                    });
                    log.check(latlab_core::sys::sched::set_policy_raw(policy, prio), || {
                        format!("ctxsw task: policy {policy} priority {prio} refused")
                    });
                    body();
                })
                .map(Partner::Thread)
        }
        TaskKind::Processes => {
            taskpair::fork_task(Some(cpu), s.policy, s.prio, body).map(Partner::Process)
        }
    }
}

fn finish(p: Partner, kill: bool) {
    match p {
        Partner::Thread(h) => {
            let _ = h.join();
        }
        Partner::Process(pid) if kill => {
            taskpair::kill_task(pid);
        }
        Partner::Process(pid) => taskpair::wait_task(pid),
    }
}

/// Runs `body` on a measuring thread placed on task 0's CPU at the setup's policy.
fn on_measuring_thread<T: Send + 'static>(
    s: &Setup,
    body: impl FnOnce() -> T + Send + 'static,
) -> std::io::Result<T> {
    let cpu = s.cpu(0);
    let (policy, prio, log) = (s.policy, s.prio, s.log.clone());
    std::thread::Builder::new()
        .name("latlab-task0".into())
        .spawn(move || {
            log.check(latlab_core::sys::sched::pin_to_cpu(cpu), || {
                format!("ctxsw task: pin to CPU {cpu} refused")
            });
            log.check(latlab_core::sys::sched::set_policy_raw(policy, prio), || {
                format!("ctxsw task: policy {policy} priority {prio} refused")
            });
            latlab_core::sys::mem::prefault_stack(64 * 1024);
            body()
        })
        ?
        .join()
        .map_err(|_| std::io::Error::other("the measuring thread panicked"))
}

/// `ioperm` hook: called on the measuring task (and partners when asked) before timing.
pub(crate) type Prep = Arc<dyn Fn() + Send + Sync>;

/// Two tasks on one CPU yielding to each other; a sample is t(after yield) − t(before).
pub(crate) fn yield_pair(s: &Setup, measuring_prep: Prep, partner_prep: Prep) -> std::io::Result<Raw> {
    let page = Arc::new(SharedPage::new()?);
    let stop = page.clone();
    let partner = start_partner(s, 1, move || {
        partner_prep();
        while stop.word(0).load(Ordering::Relaxed) == 0 {
            taskpair::yield_now();
        }
    })?;
    let (iters, warm, ticks, stop) = (s.iterations, s.warmup, s.ticks, s.stop.clone());
    let samples = on_measuring_thread(s, move || {
        measuring_prep();
        let mut v = Vec::with_capacity(iters);
        for i in 0..iters + warm {
            if stop.load(Ordering::Relaxed) {
                break;
            }
            let t1 = ticks.read();
            taskpair::yield_now();
            let t2 = ticks.read();
            if i >= warm {
                v.push(t2.wrapping_sub(t1));
            }
        }
        v
    });
    page.word(0).store(1, Ordering::Relaxed);
    finish(partner, false);
    Ok(Raw {
        // The partner is stopped first, whether or not the measuring thread started.
        samples: samples?,
        switches_per_sample: 2.0,
        overhead_per_sample: 0,
        foreign: 0,
    })
}

fn touch(buf: &mut [u8]) {
    let mut i = 0;
    while i < buf.len() {
        buf[i] = buf[i].wrapping_add(1);
        i += 64;
    }
    std::hint::black_box(&buf);
}

/// A ring of `n` tasks passing a one-byte token through pipes, each touching `touch_kb` of its
/// own memory per hop. A sample is one trip round the ring (n switches); the cost of n hops
/// without switching (write + read of one's own pipe + the touch) is measured separately and
/// subtracted, as lmbench does. The token is the round's number (mod 256) and every task knows
/// which comes next: a byte another process writes into a pipe of the ring (same user, through
/// /proc/PID/fd) is dropped and counted, not passed on as a second token that would make
/// every later round short.
pub(crate) fn pipe_ring(s: &Setup, n: usize, touch_kb: usize) -> std::io::Result<Raw> {
    let pipes: Vec<Pipe> = (0..n).map(|_| Pipe::new()).collect::<Result<_, _>>()?;
    // Shared with forked partners: the count of stray bytes dropped.
    let stray = Arc::new(SharedPage::new()?);
    let all_raw: Vec<i32> = pipes.iter().flat_map(|p| [p.rfd(), p.wfd()]).collect();
    let (reads, writes): (Vec<_>, Vec<_>) = pipes.into_iter().map(|p| (p.r, Some(p.w))).unzip();
    let mut writes = writes;
    let processes = s.kind == TaskKind::Processes;
    let mut partners = Vec::new();
    for (i, read) in reads.iter().enumerate().skip(1) {
        let rd = read.as_raw_fd();
        let next = (i + 1) % n;
        let wr = writes[next].as_ref().map_or(-1, |w| w.as_raw_fd());
        // A partner thread owns its write end and closes it when the ring ends, passing the
        // end on; a forked partner closes its own copies, and the parent keeps its ends.
        let owned_wr = if processes { None } else { writes[next].take() };
        // Never dropped: a forked child must not call the allocator (the ring ends once).
        let mut buf = std::mem::ManuallyDrop::new(vec![0u8; touch_kb * 1024]);
        let all = std::mem::ManuallyDrop::new(all_raw.clone());
        let stray = stray.clone();
        partners.push(start_partner(s, i, move || {
            if processes {
                for &fd in all.iter() {
                    if fd != rd && fd != wr {
                        taskpair::close(fd);
                    }
                }
            }
            let mut expect = 0u8;
            while let Some(b) = taskpair::get_byte(rd) {
                if b != expect {
                    stray.word(0).fetch_add(1, Ordering::Relaxed);
                    continue;
                }
                expect = expect.wrapping_add(1);
                touch(&mut buf);
                if !taskpair::put_byte(wr, b) {
                    break;
                }
            }
            // Pass the end on round the ring.
            match owned_wr {
                Some(w) => drop(w),
                None => taskpair::close(wr),
            }
        })?);
    }
    let (iters, warm, ticks, stop) = (s.iterations, s.warmup, s.ticks, s.stop.clone());
    let rd = reads[0].as_raw_fd();
    let wr = writes[1 % n].as_ref().map_or(-1, |w| w.as_raw_fd());
    let lead_stray = stray.clone();
    let measured = on_measuring_thread(s, move || {
        let mut buf = vec![0u8; touch_kb * 1024];
        let hop = hop_overhead(ticks, touch_kb, iters.clamp(100, 20_000));
        let mut v = Vec::with_capacity(iters);
        for i in 0..iters + warm {
            if stop.load(Ordering::Relaxed) {
                break;
            }
            let round = i as u8;
            let t1 = ticks.read();
            taskpair::put_byte(wr, round);
            while let Some(b) = taskpair::get_byte(rd) {
                if b == round {
                    break;
                }
                lead_stray.word(0).fetch_add(1, Ordering::Relaxed);
            }
            touch(&mut buf);
            let t2 = ticks.read();
            if i >= warm {
                v.push(t2.wrapping_sub(t1));
            }
        }
        (v, hop * n as u64)
    });
    // Threads: closing the first write end sends EOF round the ring, each partner closing the
    // next write end it owns. Processes are killed; their copies die with them.
    drop(writes[1 % n].take());
    for p in partners {
        finish(p, processes);
    }
    drop(writes);
    drop(reads);
    let (samples, overhead) = measured?;
    Ok(Raw {
        samples,
        switches_per_sample: n as f64,
        overhead_per_sample: overhead,
        foreign: u64::from(stray.word(0).load(Ordering::SeqCst)),
    })
}

/// Median ticks of one hop without a context switch: write and read one's own pipe, touch.
pub(crate) fn hop_overhead(ticks: Ticks, touch_kb: usize, reps: usize) -> u64 {
    let Ok(p) = Pipe::new() else { return 0 };
    let (r, w) = (p.rfd(), p.wfd());
    let mut buf = vec![0u8; touch_kb * 1024];
    let mut v = Vec::with_capacity(reps);
    for _ in 0..reps {
        let t1 = ticks.read();
        taskpair::put(w);
        taskpair::get(r);
        touch(&mut buf);
        v.push(ticks.read().wrapping_sub(t1));
    }
    drop(p);
    v.sort_unstable();
    v[v.len() / 2]
}

/// Two tasks waking each other through a futex word; a sample is one round trip.
pub(crate) fn futex_pair(s: &Setup) -> std::io::Result<Raw> {
    let page = Arc::new(SharedPage::new()?);
    let pp = page.clone();
    // word 0: 0 = partner's turn to wait, 1 = partner must answer, 2 = stop.
    let partner = start_partner(s, 1, move || {
        let w = pp.word(0);
        loop {
            let v = w.load(Ordering::Acquire);
            if v == 2 {
                break;
            }
            if v == 0 {
                taskpair::futex_wait(w, 0);
                continue;
            }
            w.store(0, Ordering::Release);
            taskpair::futex_wake(w, 1);
        }
    })?;
    let (iters, warm, ticks, stop) = (s.iterations, s.warmup, s.ticks, s.stop.clone());
    let mp = page.clone();
    let samples = on_measuring_thread(s, move || {
        let w = mp.word(0);
        let mut v = Vec::with_capacity(iters);
        for i in 0..iters + warm {
            if stop.load(Ordering::Relaxed) {
                break;
            }
            let t1 = ticks.read();
            w.store(1, Ordering::Release);
            taskpair::futex_wake(w, 1);
            while w.load(Ordering::Acquire) == 1 {
                taskpair::futex_wait(w, 1);
            }
            let t2 = ticks.read();
            if i >= warm {
                v.push(t2.wrapping_sub(t1));
            }
        }
        v
    });
    page.word(0).store(2, Ordering::Release);
    taskpair::futex_wake(page.word(0), 1);
    finish(partner, false);
    Ok(Raw {
        samples: samples?,
        switches_per_sample: 2.0,
        overhead_per_sample: 0,
        foreign: 0,
    })
}

/// Per-switch cost of one sample: (sample − overhead) / switches, never below zero.
pub(crate) fn per_switch(sample: u64, overhead: u64, switches: f64) -> f64 {
    sample.saturating_sub(overhead) as f64 / switches
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overhead_is_subtracted_before_dividing() {
        assert_eq!(per_switch(10_000, 4_000, 2.0), 3_000.0);
        assert_eq!(per_switch(3_000, 4_000, 2.0), 0.0);
        assert_eq!(per_switch(900, 0, 2.0), 450.0);
    }

    #[test]
    fn hop_overhead_is_positive_and_grows_with_touching() {
        let t = Ticks::best();
        let plain = hop_overhead(t, 0, 2000);
        let heavy = hop_overhead(t, 1024, 2000);
        assert!(plain > 0);
        assert!(
            heavy > plain,
            "touching 1 MiB per hop costs nothing? {plain} vs {heavy}"
        );
    }
}
