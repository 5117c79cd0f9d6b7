//! `latlab ipc`: every method times every message it sends (lossless), `-l` is exact on one
//! CPU and across two, with the sender a thread or a forked process; `-D` bounds the run; a
//! forked sender is placed as asked and never outlives latlab (Ctrl-C, SIGKILL); a SysV set a
//! killed latlab left is removed; a sender that will not answer (stopped, frozen, a message
//! lost) ends a bounded run by itself, thread or process; bad flags exit 2 naming themselves.

use crate::util::{
    expect_exit, latlab, none_left, read_json, rt_test, rt_unavailable, skipped, stall, Dir,
    Running,
};
use std::time::Duration;

const ALL: [&str; 8] = [
    "pmq",
    "posix-sem",
    "sysv-sem",
    "sigwait",
    "signal",
    "futex",
    "eventfd",
    "pipe",
];

#[test]
fn every_method_times_every_message() {
    if skipped(rt_unavailable()) {
        return;
    }
    let dir = Dir::new();
    for (cpus, tasks) in [
        ("0", "threads"),
        ("0,1", "threads"),
        ("1", "processes"),
        ("1,0", "processes"),
    ] {
        let json = dir.join(format!("ipc{cpus}{tasks}.json"));
        let out = latlab()
            .args(["ipc", "--method", "all", "--tasks", tasks, "-a", cpus])
            .words("-l 257 -i 100us --no-store --json")
            .arg(&json)
            .assert_ok();
        let run = read_json(&json);
        assert_eq!(run["kind"], "ipc");
        let series = run["series"].as_array().unwrap();
        let names: Vec<&str> = series.iter().map(|s| s["name"].as_str().unwrap()).collect();
        assert_eq!(names, ALL);
        for s in series {
            assert_eq!(s["count"], 257, "{cpus} {}", s["name"]);
            assert_eq!(s["extra"]["sent"], 257, "{cpus} {}", s["name"]);
            assert_eq!(s["extra"]["tasks"], tasks);
            // The sender's CPU is the first given, the receiver's the last (order kept).
            let first: u64 = cpus[..1].parse().unwrap();
            let last: u64 = cpus[cpus.len() - 1..].parse().unwrap();
            assert_eq!(s["extra"]["sender_cpu"], first, "{cpus}");
            assert_eq!(s["cpu"], last, "{cpus}");
            assert!(s["max_ns"].as_u64().unwrap() >= s["min_ns"].as_u64().unwrap());
            assert_eq!(s["interval_ns"], 100_000);
        }
        assert!(out.stdout.contains("overruns"), "{out}");
    }
}

#[test]
fn duration_bounds_the_run_and_counts_match() {
    if skipped(rt_unavailable()) {
        return;
    }
    let run = latlab()
        .words("ipc --method futex,sigwait -D 200ms -i 1ms --no-store --json -")
        .assert_ok()
        .json();
    for s in run["series"].as_array().unwrap() {
        let n = s["count"].as_u64().unwrap();
        assert!(n > 0 && n <= 200, "{n}");
        assert_eq!(s["extra"]["sent"].as_u64().unwrap(), n);
    }
}

/// The children of `pid` whose name starts with "latlab-ipc" (the forked sender).
fn forked_senders(pid: u32) -> Vec<u32> {
    let list = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .unwrap_or_default()
        + &std::fs::read_dir(format!("/proc/{pid}/task"))
            .map(|d| {
                d.flatten()
                    .map(|t| std::fs::read_to_string(t.path().join("children")).unwrap_or_default())
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .unwrap_or_default();
    list.split_whitespace()
        .filter_map(|c| c.parse().ok())
        .filter(|c: &u32| {
            std::fs::read_to_string(format!("/proc/{c}/comm"))
                .is_ok_and(|n| n.starts_with("latlab-ipc"))
        })
        .collect()
}

/// A field of /proc/PID/status.
fn status_field(pid: u32, field: &str) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix(field).map(|v| v.trim().to_string()))
        .unwrap_or_default()
}

/// Starts a long `--tasks processes` run tagged `tag` and waits for its forked sender.
fn start_forked(tag: &str, method: &str, json: &std::path::Path) -> (Running, u32) {
    let mut child = latlab()
        .env("LATLAB_TEST_TAG", tag)
        .args(["ipc", "--method", method])
        .words("--tasks processes -a 1 -p 60 -D 60 --no-store --json")
        .arg(json)
        .spawn();
    let sender = ready_sender(&mut child);
    (child, sender)
}

/// Waits for the forked sender of `child` and until it is ready, which it is once it has
/// locked its memory (a loaded machine takes a while to copy and lock it): a signal before
/// that is a failed start, not what these tests are after. Its pid.
fn ready_sender(child: &mut Running) -> u32 {
    child.wait_until("forking its sender", |pid| !forked_senders(pid).is_empty());
    let sender = forked_senders(child.id())[0];
    child.wait_until("its sender locked in memory", |_| {
        !matches!(status_field(sender, "VmLck:").as_str(), "" | "0 kB")
    });
    sender
}

#[test]
fn a_forked_sender_is_placed_and_ends_with_latlab() {
    if skipped(rt_unavailable()) {
        return;
    }
    let dir = Dir::new();
    let json = dir.join("int.json");
    let (child, sender) = start_forked("ipc-fork-int", "pmq", &json);
    // Its own process, pinned to the CPU asked, at the sender's priority (one below 60).
    assert_ne!(sender, child.id());
    assert_eq!(status_field(sender, "Cpus_allowed_list:"), "1");
    let sched = std::fs::read_to_string(format!("/proc/{sender}/sched")).unwrap();
    let prio = sched
        .lines()
        .find_map(|l| {
            l.strip_prefix("prio")
                .map(|v| v.trim_start_matches([' ', ':']))
        })
        .unwrap()
        .trim()
        .to_string();
    // /proc/PID/sched's prio is 99 - rt_priority for real-time tasks.
    assert_eq!(prio, "40", "{sched}");
    std::thread::sleep(Duration::from_millis(300));
    child.signal(libc::SIGINT);
    child.end_within(Duration::from_secs(20)).assert_ok();
    none_left("ipc-fork-int");
    let run = read_json(&json);
    assert_eq!(run["interrupted"], true);
    let s = &run["series"][0];
    assert!(s["count"].as_u64().unwrap() > 0);
    assert_eq!(s["count"], s["extra"]["sent"]);

    // The forked sender killed: latlab does not wait for it forever, keeps what was timed and
    // says why the run ended early.
    let (child, sender) = start_forked("ipc-fork-lost", "sigwait", &json);
    std::thread::sleep(Duration::from_millis(300));
    // SAFETY: killing latlab's child, which this test started.
    unsafe { libc::kill(sender as i32, libc::SIGKILL) };
    child.end_within(Duration::from_secs(20)).assert_ok();
    let run = read_json(&json);
    let warnings = run["warnings"].to_string();
    assert!(warnings.contains("sender process ended"), "{warnings}");
    assert!(run["series"][0]["count"].as_u64().unwrap() > 0);

    // The forked sender stopped (SIGSTOP), then Ctrl-C: latlab does not wait for it forever.
    let (child, sender) = start_forked("ipc-fork-stopped", "eventfd", &json);
    std::thread::sleep(Duration::from_millis(300));
    // SAFETY: signalling latlab's child, which this test started.
    unsafe { libc::kill(sender as i32, libc::SIGSTOP) };
    child.signal(libc::SIGINT);
    child.end_within(Duration::from_secs(20));
    none_left("ipc-fork-stopped");
    let run = read_json(&json);
    assert_eq!(run["interrupted"], true);
    assert!(run["series"][0]["count"].as_u64().unwrap() > 0);

    // SIGKILL: the sender dies with latlab; its SysV set is found and removed afterwards.
    let (child, _) = start_forked("ipc-fork-kill", "sysv-sem", &json);
    let key = 0xB700_0000u32 | child.id();
    let has_set = || {
        std::fs::read_to_string("/proc/sysvipc/sem")
            .unwrap()
            .lines()
            .any(|l| l.split_whitespace().next() == Some(&(key as i32).to_string()))
    };
    assert!(
        has_set(),
        "no SysV set with latlab's key for {}",
        child.id()
    );
    child.kill();
    none_left("ipc-fork-kill");
    assert!(has_set(), "the set should outlive a SIGKILL (until swept)");
    let out = latlab().arg("restore").assert_ok();
    assert!(out.stdout.contains("removed SysV semaphore set"), "{out}");
    assert!(!has_set(), "restore left the set");
}

/// A forked sender that cannot get its CPU (a SCHED_FIFO loop above it holds the CPU past the
/// planned end plus the 2 s grace) is waited for: every message is timed and nothing says it
/// ended. A sender stopped (SIGSTOP) in a bounded run is given up: the run ends by itself,
/// keeps what was timed and says why.
#[test]
fn a_sender_kept_from_its_cpu_is_waited_for_and_a_stopped_one_given_up() {
    let Some(_x) = rt_test() else { return };
    let dir = Dir::new();
    let json = dir.join("starved.json");
    // 100 messages 10 ms apart: 1 s planned.
    let start = |tag: &str| {
        latlab()
            .env("LATLAB_TEST_TAG", tag)
            .words("ipc --method eventfd --tasks processes --sender-cpu 1 --receiver-cpu 0")
            .words("-p 60 -l 100 -i 10ms --no-store --json")
            .arg(&json)
            .spawn()
    };
    let mut child = start("ipc-starved");
    ready_sender(&mut child);
    // Held from about 0.3 s (the exchange under way) to 4.3 s: past 1 s planned + 2 s grace
    // even if the exchange began a second late.
    let held = stall(child.id(), "latlab-ipc-send", 1)
        .after(Duration::from_millis(300))
        .busy(Duration::from_secs(4))
        .run_now();
    assert_eq!(held.windows.len(), 1);
    let out = child.end_within(Duration::from_secs(30));
    out.assert_ok();
    let run = read_json(&json);
    assert_eq!(run["series"][0]["count"], 100, "{out}");
    assert_eq!(run["series"][0]["extra"]["sent"], 100, "{out}");
    assert!(
        !run["warnings"].to_string().contains("sender process"),
        "{out}"
    );

    let mut child = start("ipc-stopped");
    let sender = ready_sender(&mut child);
    std::thread::sleep(Duration::from_millis(300));
    // SAFETY: signalling latlab's child, which this test started.
    unsafe { libc::kill(sender as i32, libc::SIGSTOP) };
    let out = child.end_within(Duration::from_secs(30));
    out.assert_ok();
    none_left("ipc-stopped");
    let run = read_json(&json);
    let warnings = run["warnings"].to_string();
    assert!(warnings.contains("it was stopped (SIGSTOP)"), "{out}");
    assert!(run["series"][0]["count"].as_u64().unwrap() < 100, "{out}");

    // Frozen by the cgroup freezer (not stopped, not runnable): given up the same way.
    let Some(root) = cgroup2_root() else {
        crate::util::skip(&crate::util::test_name(), "no cgroup2 hierarchy mounted");
        return;
    };
    let group = Freezer(root.join(format!("latlab-it-freeze-{}", std::process::id())));
    std::fs::create_dir_all(&group.0).unwrap();
    let mut child = start("ipc-frozen");
    let sender = ready_sender(&mut child);
    std::thread::sleep(Duration::from_millis(300));
    std::fs::write(group.0.join("cgroup.procs"), sender.to_string()).unwrap();
    std::fs::write(group.0.join("cgroup.freeze"), "1").unwrap();
    let out = child.end_within(Duration::from_secs(30));
    drop(group);
    out.assert_ok();
    let run = read_json(&json);
    let warnings = run["warnings"].to_string();
    assert!(warnings.contains("did not answer for 2 s"), "{out}");
    assert!(run["series"][0]["count"].as_u64().unwrap() < 100, "{out}");
}

/// The SysV set of latlab `pid` (its key is 0xB7000000 | pid): id and number of semaphores,
/// once it exists.
fn sysv_set_of(pid: u32) -> Option<(i32, u16)> {
    let key = ((0xB700_0000u32 | pid) as i32).to_string();
    std::fs::read_to_string("/proc/sysvipc/sem")
        .ok()?
        .lines()
        .find_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            if f.first() != Some(&key.as_str()) {
                return None;
            }
            Some((
                f.get(1)?.parse::<i32>().ok()?,
                f.get(3)?.parse::<u16>().ok()?,
            ))
        })
}

/// `semop` of `op` on semaphore `num` of set `id`, waiting at most 5 s (0 for `op` > 0): true
/// when it was done (false when it timed out or the set was removed).
fn semop_on(id: i32, num: u16, op: i16) -> bool {
    let mut b = libc::sembuf {
        sem_num: num,
        sem_op: op,
        sem_flg: 0,
    };
    let t = libc::timespec {
        tv_sec: 5,
        tv_nsec: 0,
    };
    // SAFETY: plain system call on a set id, with a valid sembuf and timeout.
    unsafe { libc::syscall(libc::SYS_semtimedop, id, &mut b, 1, &t) == 0 }
}

/// Starts `latlab ipc ARGS` (tagged `tag`, JSON to `json`) and waits for its SysV set and
/// 300 ms more (the exchange under way): the set's id and size.
fn start_with_set(tag: &str, args: &str, json: &std::path::Path) -> (Running, i32, u16) {
    let mut child = latlab()
        .env("LATLAB_TEST_TAG", tag)
        .words(args)
        .words("--no-store --json")
        .arg(json)
        .spawn();
    child.wait_until("its SysV set", |pid| sysv_set_of(pid).is_some());
    let (id, n) = sysv_set_of(child.id()).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    (child, id, n)
}

/// Messages taken by another process (blocking `semop`s on latlab's SysV set, queued behind
/// latlab's waiters: the next post after a waiter re-queues goes to a thief) leave a sender
/// thread asleep and the receiver waiting: a bounded run ends the method by itself past its
/// planned end — however many of its wake-ups the thieves take too — keeps what was timed,
/// says why, and runs the next method (no Ctrl-C needed).
#[test]
fn messages_lost_in_threads_mode_end_the_method_and_the_next_one_runs() {
    let Some(_x) = rt_test() else { return };
    let dir = Dir::new();
    let json = dir.join("lost.json");
    // 100 messages 10 ms apart per method: 1 s planned each.
    let (child, id, n) = start_with_set(
        "ipc-lost",
        "ipc --method sysv-sem,eventfd --tasks threads -p 60 -l 100 -i 10ms",
        &json,
    );
    // Three one-shot thieves per semaphore.
    let thieves: Vec<_> = (0..n)
        .flat_map(|num| (0..3).map(move |_| num))
        .map(|num| std::thread::spawn(move || semop_on(id, num, -1)))
        .collect();
    let out = child.end_within(Duration::from_secs(30));
    let stolen = thieves
        .into_iter()
        .map(|t| t.join().unwrap())
        .filter(|&s| s)
        .count();
    out.assert_ok();
    assert!(stolen > 0, "nothing was taken: {out}");
    let run = read_json(&json);
    let warnings = run["warnings"].to_string();
    assert!(
        warnings.contains("the sender thread did not answer for 2 s"),
        "{out}"
    );
    let count = run["series"][0]["count"].as_u64().unwrap();
    assert!(count > 0 && count < 100, "{out}");
    assert_eq!(run["series"][1]["name"], "eventfd", "{out}");
    assert_eq!(run["series"][1]["count"], 100, "{out}");
}

/// A run with no planned end (no `-l`, no `-D`) waits for a sender that does not answer, as
/// asked, until Ctrl-C, but not silently: a lost message (threads) is said on stderr while it
/// waits and the result says why the method broke; a forked sender stopped for a while and
/// continued is said too, and the run goes on (processes).
#[test]
fn a_stall_in_a_run_with_no_end_is_said_while_it_waits() {
    let Some(_x) = rt_test() else { return };
    let dir = Dir::new();
    let json = dir.join("no-end.json");
    let (child, id, n) = start_with_set(
        "ipc-no-end",
        "ipc --method sysv-sem --tasks threads -p 60 -i 10ms",
        &json,
    );
    // One one-shot thief per semaphore: the first post each sees is taken (the other thief
    // gives up after 5 s), which is past the 2 s the watch waits.
    let thieves: Vec<_> = (0..n)
        .map(|num| std::thread::spawn(move || semop_on(id, num, -1)))
        .collect();
    let stolen = thieves
        .into_iter()
        .map(|t| t.join().unwrap())
        .filter(|&s| s)
        .count();
    std::thread::sleep(Duration::from_millis(500));
    child.signal(libc::SIGINT);
    let out = child.end_within(Duration::from_secs(30));
    assert!(stolen > 0, "nothing was taken: {out}");
    let said = out
        .stderr
        .find("the sender thread has not answered for 2 s and it is asleep")
        .unwrap_or_else(|| panic!("not said while waiting: {out}"));
    let interrupted = out.stderr.find("interrupted").unwrap_or(usize::MAX);
    assert!(said < interrupted, "said only after the Ctrl-C: {out}");
    let run = read_json(&json);
    assert_eq!(run["interrupted"], true, "{out}");
    let warnings = run["warnings"].to_string();
    assert!(warnings.contains("the run had no planned end"), "{out}");
    assert!(run["series"][0]["count"].as_u64() >= Some(1), "{out}");

    let mut child = latlab()
        .env("LATLAB_TEST_TAG", "ipc-no-end-stopped")
        .words("ipc --method eventfd --tasks processes -a 1 -p 60 -i 10ms --no-store --json")
        .arg(&json)
        .spawn();
    let sender = ready_sender(&mut child);
    std::thread::sleep(Duration::from_millis(300));
    // SAFETY: signalling latlab's child, which this test started.
    unsafe { libc::kill(sender as i32, libc::SIGSTOP) };
    std::thread::sleep(Duration::from_secs(4));
    // SAFETY: as above.
    unsafe { libc::kill(sender as i32, libc::SIGCONT) };
    std::thread::sleep(Duration::from_millis(500));
    child.signal(libc::SIGINT);
    let out = child.end_within(Duration::from_secs(30));
    none_left("ipc-no-end-stopped");
    assert!(
        out.stderr
            .contains("the sender process has not answered for 2 s and it is stopped (SIGSTOP)"),
        "{out}"
    );
    let run = read_json(&json);
    let warnings = run["warnings"].to_string();
    assert!(warnings.contains("it answered again"), "{out}");
    assert!(!warnings.contains("failed"), "{out}");
}

/// A post latlab did not make (another process's `semop +1` on each of its semaphores) wakes
/// a side without a message: the receiver sees an answer stamped before its "ready", does
/// not time it, waits for the real one and says so. Every message is still timed.
#[test]
fn a_foreign_post_is_not_timed_and_is_said() {
    let Some(_x) = rt_test() else { return };
    let dir = Dir::new();
    let json = dir.join("foreign.json");
    let (child, id, n) = start_with_set(
        "ipc-foreign",
        "ipc --method sysv-sem --tasks threads -p 60 -l 100 -i 10ms",
        &json,
    );
    for num in 0..n {
        assert!(semop_on(id, num, 1));
    }
    let out = child.end_within(Duration::from_secs(30));
    out.assert_ok();
    let run = read_json(&json);
    assert_eq!(run["series"][0]["count"], 100, "{out}");
    assert!(
        run["warnings"]
            .to_string()
            .contains("came without a message from its sender"),
        "{out}"
    );
    assert!(
        run["series"][0]["extra"]["foreign"].as_u64() >= Some(1),
        "{out}"
    );
}

/// A receiver kept from its CPU while it waits for an answer, past the planned end plus the
/// 2 s grace, holds that answer (runnable) while the sender, answered, sleeps: nothing is
/// lost, so nothing is given up, thread or process. Every message is timed.
#[test]
fn a_receiver_kept_from_its_cpu_is_waited_for() {
    let Some(_x) = rt_test() else { return };
    let dir = Dir::new();
    let json = dir.join("recv-starved.json");
    for tasks in ["threads", "processes"] {
        // 100 messages 10 ms apart: 1 s planned.
        let child = latlab()
            .env("LATLAB_TEST_TAG", "ipc-recv-starved")
            .args(["ipc", "--method", "eventfd", "--tasks", tasks])
            .words("--sender-cpu 1 --receiver-cpu 0 -p 60 -l 100 -i 10ms --no-store --json")
            .arg(&json)
            .spawn();
        let starved = starve_while_waiting(child.id(), 0, Duration::from_secs(4));
        let out = child.end_within(Duration::from_secs(30));
        assert!(
            starved,
            "{tasks}: the receiver was never seen waiting: {out}"
        );
        out.assert_ok();
        let run = read_json(&json);
        assert_eq!(run["series"][0]["count"], 100, "{tasks}: {out}");
        assert!(
            !run["warnings"].to_string().contains("did not answer"),
            "{tasks}: {out}"
        );
    }
}

/// Starves latlab `pid`'s ipc receiver on `cpu` for `busy` from the moment it is seen asleep
/// on the eventfd (its `wchan`: waiting for an answer, not for its next period): a poller at SCHED_OTHER on
/// that CPU, which runs only while the receiver sleeps, turns SCHED_FIFO 90 and spins. False
/// when latlab ended first.
fn starve_while_waiting(pid: u32, cpu: usize, busy: Duration) -> bool {
    let t = std::thread::spawn(move || {
        // SAFETY: a zeroed cpu_set_t is valid; CPU_SET and sched_setaffinity get valid pointers.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(cpu, &mut set);
            libc::sched_setaffinity(0, std::mem::size_of_val(&set), &set);
        }
        let t0 = std::time::Instant::now();
        let mut task = None;
        while t0.elapsed() < Duration::from_secs(20) {
            let dir = match &task {
                Some(d) => d,
                None => {
                    task = std::fs::read_dir(format!("/proc/{pid}/task"))
                        .into_iter()
                        .flatten()
                        .flatten()
                        .map(|e| e.path())
                        .find(|p| {
                            std::fs::read_to_string(p.join("comm"))
                                .is_ok_and(|c| c.trim() == "latlab-ipc-rece")
                        });
                    continue;
                }
            };
            let Ok(wchan) = std::fs::read_to_string(dir.join("wchan")) else {
                return false;
            };
            // Asleep in the eventfd's read (`do_wait_intr_irq` on 6.x), not in its timer
            // sleep, nor on the start barrier (a futex).
            let w = wchan.trim();
            if !(w.is_empty() || w == "0" || w.contains("nanosleep") || w.contains("futex")) {
                let p = libc::sched_param { sched_priority: 90 };
                // SAFETY: plain libc call on the calling thread with a valid parameter.
                assert_eq!(
                    unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &p) },
                    0
                );
                let spin = std::time::Instant::now();
                while spin.elapsed() < busy {}
                let p = libc::sched_param { sched_priority: 0 };
                // SAFETY: as above.
                unsafe { libc::sched_setscheduler(0, libc::SCHED_OTHER, &p) };
                return true;
            }
        }
        false
    });
    t.join().unwrap()
}

/// A cgroup2 group the test freezes; thawed and removed when dropped (a failed assertion
/// too), once what was in it has ended.
struct Freezer(std::path::PathBuf);

impl Drop for Freezer {
    fn drop(&mut self) {
        let _ = std::fs::write(self.0.join("cgroup.freeze"), "0");
        let t0 = std::time::Instant::now();
        while std::fs::read_to_string(self.0.join("cgroup.procs"))
            .is_ok_and(|p| !p.trim().is_empty())
            && t0.elapsed() < Duration::from_secs(10)
        {
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = std::fs::remove_dir(&self.0);
    }
}

/// Where the cgroup2 hierarchy is mounted (`/sys/fs/cgroup` or its `unified` part).
fn cgroup2_root() -> Option<std::path::PathBuf> {
    std::fs::read_to_string("/proc/self/mounts")
        .ok()?
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .find(|f| f.len() > 2 && f[2] == "cgroup2")
        .map(|f| f[1].into())
}

#[test]
fn a_ring_times_every_round_trip() {
    if skipped(rt_unavailable()) {
        return;
    }
    // signaltest's ring: 3 threads over 2 CPUs, rounds in bursts of 4.
    let run = latlab()
        .words("ipc --method sigwait --ring 3 --burst 4 -a 0,1 -i 1ms -l 101")
        .words("--no-store --json -")
        .assert_ok()
        .json();
    let s = &run["series"][0];
    assert_eq!(s["name"], "sigwait-ring");
    assert_eq!(s["count"], 101);
    assert_eq!(s["extra"]["sent"], 101);
    assert_eq!(s["extra"]["ring"], 3);
    assert_eq!(s["extra"]["burst"], 4);
    assert!(s["min_ns"].as_u64().unwrap() > 0);
}

/// Task ids of `pid`'s threads named `comm`.
fn threads_named(pid: u32, comm: &str) -> Vec<i32> {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|d| {
            d.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
                .filter(|t| {
                    std::fs::read_to_string(format!("/proc/{pid}/task/{t}/comm"))
                        .is_ok_and(|c| c.trim() == comm)
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Signals another process sends latlab's signal methods: to a ring thread, the ring's own
/// signal is taken and dropped (not a second token that would make every later round trip
/// short), counted and said; to the process as a whole, a method's signal does not kill latlab
/// (it would by default), and every message is still timed.
#[test]
fn a_foreign_signal_is_not_passed_on_and_does_not_kill() {
    if skipped(rt_unavailable()) {
        return;
    }
    let rt = |n: i32| libc::SIGRTMIN() + n;
    let mut child = latlab()
        .env("LATLAB_TEST_TAG", "ipc-foreign-ring")
        .words("ipc --method sigwait --ring 3 --burst 1 -a 0,1 -i 1ms -l 2000 --no-store --json -")
        .spawn();
    child.wait_until("its ring under way", |pid| {
        threads_named(pid, "latlab-ipc-ring").len() == 3
    });
    std::thread::sleep(Duration::from_millis(200));
    let pid = child.id() as i32;
    for tid in threads_named(child.id(), "latlab-ipc-ring") {
        // SAFETY: tgkill of a thread of the child this test started.
        unsafe { libc::syscall(libc::SYS_tgkill, pid, tid, rt(2)) };
    }
    let out = child.end_within(Duration::from_secs(30));
    out.assert_ok();
    let run = out.json();
    let s = &run["series"][0];
    assert_eq!(s["count"], 2000, "{out}");
    assert!(s["extra"]["foreign"].as_u64() >= Some(1), "{out}");
    assert!(
        run["warnings"]
            .to_string()
            .contains("came without a message from its sender"),
        "{out}"
    );

    for (method, sig) in [("sigwait", rt(2)), ("sigwait", rt(3)), ("signal", rt(2))] {
        let child = latlab()
            .env("LATLAB_TEST_TAG", "ipc-foreign-kill")
            .args(["ipc", "--method", method])
            .words("-i 5ms -l 200 --no-store --json -")
            .spawn();
        std::thread::sleep(Duration::from_millis(400));
        child.signal(sig);
        let out = child.end_within(Duration::from_secs(30));
        out.assert_ok();
        assert_eq!(out.json()["series"][0]["count"], 200, "{method}: {out}");
    }
}

#[test]
fn ctrl_c_ends_a_long_interval_at_once() {
    if skipped(rt_unavailable()) {
        return;
    }
    // A minute between messages: the signal lands on another thread, and the receiver's sleep
    // must be interrupted, not waited out.
    for (tasks, method) in [
        ("threads", "pipe,futex"),
        ("processes", "pipe,futex"),
        ("threads", "sigwait --ring 3"),
    ] {
        let child = latlab()
            .env("LATLAB_TEST_TAG", format!("ipc-long-{tasks}"))
            .args(["ipc", "--tasks", tasks, "--method"])
            .args(method.split(' '))
            .words("-i 60s -l 3 --no-store --json -")
            .spawn();
        std::thread::sleep(Duration::from_millis(700));
        child.signal(libc::SIGINT);
        let out = child.end_within(Duration::from_secs(20));
        out.assert_ok();
        assert_eq!(out.json()["interrupted"], true);
        none_left(&format!("ipc-long-{tasks}"));
    }
}

#[test]
fn bad_flags_exit_2_naming_them() {
    for (args, flag) in [
        (&["--method", "carrier-pigeon"][..], "--method"),
        (&["-a", "0,1,0-1:1,7777"], "-a/--affinity"),
        (&["-i", "-5us"], "-i/--interval"),
        (&["-l", "many"], "-l/--loops"),
        (&["-D", "0"], "--duration"),
        (&["-p", "0"], "-p/--priority"),
        (&["--tasks", "fibers"], "--tasks"),
        (&["-a", "1,0,0"], "-a/--affinity"),
        (&["-i", "999ns"], "-i/--interval"),
    ] {
        expect_exit(&["ipc", "--no-store"], args, 2, flag);
    }
}

/// Like the rt-tests pair it borrows its flags from (pmqtest: one CPU for the pair), a first
/// `ipc` with nothing placed runs sender and receiver on one CPU, and its header says where.
#[test]
fn a_pair_placed_nowhere_shares_one_cpu_and_the_header_says_so() {
    let Some(_x) = rt_test() else { return };
    let dir = Dir::new();
    let json = dir.join("ipc.json");
    let out = latlab()
        .words("ipc --method pmq -l 50 -i 100us --no-store --json")
        .arg(&json)
        .assert_ok();
    let last = std::thread::available_parallelism().map_or(1, |n| n.get()) - 1;
    assert!(
        out.stdout
            .contains(&format!("sender and receiver on CPU {last}")),
        "{}",
        out.stdout
    );
    let run = read_json(&json);
    assert_eq!(
        run["parameters"]["cpus"],
        serde_json::json!([last, last]),
        "{run}"
    );
}
