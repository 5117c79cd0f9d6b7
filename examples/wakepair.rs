//! A known workload for `latlab sched` (its tests and the README): a `waiter` thread pinned to
//! a CPU sleeps on a futex; a `peer` thread on another CPU wakes it at known times and the
//! waiter records, from its own clock, how late it ran. Run as `hog` (through a link with any
//! name), it is instead a SCHED_FIFO 99 thread that takes the CPU for a while at known times.
//!
//! With `--waiter-fifo P` the waiter is SCHED_FIFO P, so only higher real-time work (the hog)
//! and interrupts can hold it off, whatever else the machine runs.
//!
//! Both modes share a time base (`--t0`, CLOCK_MONOTONIC ns) so the peer's wake-ups can be
//! placed inside the hog's bursts. The waiter prints one JSON line at the end:
//! `{"waiter": TID, "peer": TID, "wakes": [[woken_ns, running_ns], ...]}`; the hog prints
//! `{"hog": TID, "bursts": [[start_ns, end_ns], ...]}`.
#![allow(unsafe_code)]

use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};
use std::sync::Arc;

fn now() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn sleep_until(t: u64) {
    let ts = libc::timespec {
        tv_sec: (t / 1_000_000_000) as libc::time_t,
        tv_nsec: (t % 1_000_000_000) as libc::c_long,
    };
    // SAFETY: absolute sleep on a valid timespec; EINTR just returns early.
    unsafe {
        libc::clock_nanosleep(
            libc::CLOCK_MONOTONIC,
            libc::TIMER_ABSTIME,
            &ts,
            std::ptr::null_mut(),
        )
    };
}

fn pin(cpu: usize) {
    // SAFETY: cpu_set_t is plain data; the call affects the calling thread only.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

fn tid() -> i32 {
    // SAFETY: no arguments.
    unsafe { libc::gettid() }
}

fn futex(word: &AtomicI32, op: libc::c_int, val: i32) {
    // SAFETY: the futex word is a live, aligned i32 for the duration of the call.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            op | libc::FUTEX_PRIVATE_FLAG,
            val,
            std::ptr::null::<libc::timespec>(),
        )
    };
}

struct Opts {
    cpu: usize,
    peer_cpu: usize,
    t0: u64,
    period: u64,
    count: u64,
    offset: u64,
    busy: u64,
    /// SCHED_FIFO priority of the waiter (0: SCHED_OTHER).
    waiter_fifo: i32,
}

fn opts(args: &[String]) -> Opts {
    let get = |k: &str, d: u64| {
        args.iter()
            .position(|a| a == k)
            .and_then(|i| args.get(i + 1))
            .map(|v| {
                v.parse()
                    .unwrap_or_else(|_| panic!("{k}: not a number: {v}"))
            })
            .unwrap_or(d)
    };
    Opts {
        cpu: get("--cpu", 1) as usize,
        peer_cpu: get("--peer-cpu", 0) as usize,
        t0: get("--t0", now() + 200_000_000),
        period: get("--period-us", 100_000) * 1000,
        count: get("--count", 30),
        offset: get("--offset-us", 300) * 1000,
        busy: get("--busy-us", 2_000) * 1000,
        waiter_fifo: get("--waiter-fifo", 0) as i32,
    }
}

/// The hog: FIFO 99 on `cpu`, busy for `busy` at every period start.
fn hog(o: &Opts) {
    pin(o.cpu);
    let p = libc::sched_param { sched_priority: 99 };
    // SAFETY: valid sched_param for the calling thread.
    if unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &p) } != 0 {
        eprintln!("hog: cannot become SCHED_FIFO 99 (run as root)");
        std::process::exit(3);
    }
    let mut bursts = Vec::new();
    for k in 0..o.count {
        let at = o.t0 + k * o.period;
        sleep_until(at);
        let start = now();
        while now() < start + o.busy {
            std::hint::spin_loop();
        }
        bursts.push(format!("[{start},{}]", now()));
    }
    println!("{{\"hog\":{},\"bursts\":[{}]}}", tid(), bursts.join(","));
}

/// The waiter and its peer: two wake-ups per period, one `offset` after the period start
/// (inside a hog's burst) and one half a period later (outside it).
fn pair(o: Opts) {
    let word = Arc::new(AtomicI32::new(0));
    let woken_at = Arc::new(AtomicU64::new(0));
    let waiter_tid = Arc::new(AtomicI32::new(0));
    let (w, at, wt, cpu) = (word.clone(), woken_at.clone(), waiter_tid.clone(), o.cpu);
    let fifo = o.waiter_fifo;
    let total = 2 * o.count as i32;
    // The waiter is set up (pinned, its record allocated and touched) before the peer exists:
    // a thread faulting a page or growing the heap takes the process's memory lock, and one
    // waiting on it is woken by whoever releases it — a real wake-up by the peer that no futex
    // made, had the peer been starting meanwhile (the tests count the peer's wake-ups exactly).
    let ready = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let set_up = ready.clone();
    let waiter = std::thread::Builder::new()
        .name("waiter".into())
        .spawn(move || {
            pin(cpu);
            if fifo > 0 {
                let p = libc::sched_param {
                    sched_priority: fifo,
                };
                // SAFETY: valid sched_param for the calling thread.
                if unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &p) } != 0 {
                    eprintln!("waiter: cannot become SCHED_FIFO {fifo} (run as root)");
                    std::process::exit(3);
                }
            }
            wt.store(tid(), Ordering::SeqCst);
            // Nothing allocated or faulted in while woken; the main thread formats the record.
            let mut wakes = vec![(0u64, 0u64); total as usize];
            for x in wakes.iter_mut() {
                // SAFETY: a valid, aligned element; volatile so that the page is really
                // written now (fresh zeroed memory may not be mapped yet).
                unsafe { std::ptr::write_volatile(x, (0, 0)) };
            }
            let mut seen = 0i32;
            now();
            set_up.store(true, Ordering::SeqCst);
            while seen < total {
                futex(&w, libc::FUTEX_WAIT, seen);
                let v = w.load(Ordering::SeqCst);
                if v != seen {
                    wakes[seen as usize] = (at.load(Ordering::SeqCst), now());
                    seen = v;
                }
            }
            wakes.retain(|x| x.1 != 0);
            wakes
        })
        .expect("spawn waiter");
    while !ready.load(Ordering::SeqCst) {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    // The peer ends only once the waiter has: its exit takes the memory lock too.
    let release = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let hold = release.clone();
    let peer = std::thread::Builder::new()
        .name("peer".into())
        .spawn(move || {
            pin(o.peer_cpu);
            let me = tid();
            for k in 0..o.count {
                for at in [o.offset, o.period / 2] {
                    sleep_until(o.t0 + k * o.period + at);
                    woken_at.store(now(), Ordering::SeqCst);
                    word.fetch_add(1, Ordering::SeqCst);
                    futex(&word, libc::FUTEX_WAKE, 1);
                }
            }
            while !hold.load(Ordering::SeqCst) {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            me
        })
        .expect("spawn peer");
    let wakes = waiter.join().expect("waiter");
    release.store(true, Ordering::SeqCst);
    let peer_tid = peer.join().expect("peer");
    let wakes: Vec<String> = wakes.iter().map(|(a, b)| format!("[{a},{b}]")).collect();
    println!(
        "{{\"waiter\":{},\"peer\":{peer_tid},\"wakes\":[{}]}}",
        waiter_tid.load(Ordering::SeqCst),
        wakes.join(",")
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let o = opts(&args);
    if args.get(1).map(String::as_str) == Some("hog") {
        hog(&o);
    } else {
        pair(o);
    }
}
