//! Stall injection: a SCHED_FIFO busy loop pinned to one CPU, started once latlab runs the
//! thread it is meant to starve.

use super::proc::has_thread;
use std::time::{Duration, Instant};

/// What an injection did: the injecting thread's id, and its busy windows (CLOCK_MONOTONIC ns,
/// the clock latlab dates spikes with).
pub struct Injected {
    /// The kernel thread id of the injecting thread (named `inject`).
    pub tid: i32,
    /// (start, end) of each busy window.
    pub windows: Vec<(u64, u64)>,
}

/// A stall to inject on `cpu` once process `pid` has its thread `thread`: `times` busy
/// windows of `busy`, the first `after` the thread appeared, the next `gap` apart.
pub struct Stall {
    pid: u32,
    thread: &'static str,
    cpu: usize,
    prio: i32,
    after: Duration,
    busy: Duration,
    gap: Duration,
    times: usize,
}

/// A stall of CPU `cpu` aimed at latlab process `pid`'s thread `thread`: by default one
/// 60 ms window at SCHED_FIFO 90, 500 ms after the thread appears (change with the setters).
pub fn stall(pid: u32, thread: &'static str, cpu: usize) -> Stall {
    Stall {
        pid,
        thread,
        cpu,
        prio: 90,
        after: Duration::from_millis(500),
        busy: Duration::from_millis(60),
        gap: Duration::from_secs(1),
        times: 1,
    }
}

impl Stall {
    /// The SCHED_FIFO priority of the injecting thread.
    pub fn prio(mut self, prio: i32) -> Self {
        self.prio = prio;
        self
    }

    /// How long after the thread appears the first window starts.
    pub fn after(mut self, after: Duration) -> Self {
        self.after = after;
        self
    }

    /// How long each window busy-waits.
    pub fn busy(mut self, busy: Duration) -> Self {
        self.busy = busy;
        self
    }

    /// `times` windows, `gap` apart (end to start).
    pub fn repeat(mut self, times: usize, gap: Duration) -> Self {
        self.times = times;
        self.gap = gap;
        self
    }

    /// Starts the injecting thread (named `inject`: the culprit a trace names). It pins itself
    /// and becomes SCHED_FIFO at once (before any spinner of latlab's can hold the CPUs).
    pub fn start(self) -> std::thread::JoinHandle<Injected> {
        std::thread::Builder::new()
            .name("inject".into())
            .spawn(move || self.run())
            .unwrap()
    }

    /// Starts the stall and waits for its end.
    pub fn run_now(self) -> Injected {
        self.start().join().unwrap()
    }

    fn run(self) -> Injected {
        pin(self.cpu);
        let p = libc::sched_param {
            sched_priority: self.prio,
        };
        // SAFETY: a plain libc call on the calling thread with a valid parameter.
        let r = unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &p) };
        assert_eq!(r, 0, "could not become SCHED_FIFO {}", self.prio);
        // SAFETY: no arguments.
        let tid = unsafe { libc::gettid() };
        let t0 = Instant::now();
        while !has_thread(self.pid, self.thread) {
            assert!(
                t0.elapsed() < Duration::from_secs(30),
                "latlab never started {}",
                self.thread
            );
            std::thread::sleep(Duration::from_millis(2));
        }
        std::thread::sleep(self.after);
        let mut windows = Vec::new();
        for k in 0..self.times {
            if k > 0 {
                std::thread::sleep(self.gap);
            }
            let (a, t) = (mono_ns(), Instant::now());
            while t.elapsed() < self.busy {
                std::hint::spin_loop();
            }
            windows.push((a, mono_ns()));
        }
        // The thread ends at its real-time priority: a trace names the culprit with the
        // policy it ran under, read when the spike is attributed (after the last window).
        Injected { tid, windows }
    }
}

/// Pins the calling thread to `cpu`.
pub fn pin(cpu: usize) {
    // SAFETY: plain libc calls on the calling thread with a valid set.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        assert_eq!(
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set),
            0,
            "could not pin to CPU {cpu}"
        );
    }
}

/// CLOCK_MONOTONIC now, in ns (the trace clock latlab records spikes in).
pub fn mono_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Starts a 50 ms SCHED_FIFO-99 spinner on `cpu` as people start one (`timeout 0.05 chrt -f 99
/// taskset -c CPU sh -c 'while :; do :; done'`: its time spent under four names and new PIDs)
/// `times` times, `gap` apart, and waits for the last to end.
pub fn exec_bursts(cpu: usize, times: usize, gap: std::time::Duration) {
    let mut bursts = Vec::new();
    for _ in 0..times {
        bursts.push(
            std::process::Command::new("timeout")
                .args(["0.05", "chrt", "-f", "99", "taskset", "-c"])
                .arg(cpu.to_string())
                .args(["sh", "-c", "while :; do :; done"])
                .spawn()
                .unwrap(),
        );
        std::thread::sleep(gap);
    }
    for mut b in bursts {
        b.wait().unwrap();
    }
}
