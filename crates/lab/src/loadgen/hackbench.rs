//! hackbench (rt-tests/perf's scheduler stress): groups of `fds` senders and `fds` receivers;
//! every sender writes `loops` messages of `datasize` bytes to every receiver of its group over
//! a socketpair or pipe. Tasks are forked processes or threads; all wait on one start gate.

use latlab_core::sys::taskpair::{self, Pipe};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

/// Largest message size (task buffers live on the stack).
pub(crate) const MAX_DATASIZE: usize = 16 * 1024;
/// Largest number of senders per group.
pub(crate) const MAX_FDS: usize = 256;

/// One hackbench configuration.
#[derive(Debug, Clone)]
pub(crate) struct Hackbench {
    /// Groups.
    pub(crate) groups: usize,
    /// Senders (and receivers) per group.
    pub(crate) fds: usize,
    /// Messages each sender sends to each receiver.
    pub(crate) loops: usize,
    /// Bytes per message.
    pub(crate) datasize: usize,
    /// Threads instead of processes.
    pub(crate) threads: bool,
    /// Pipes instead of socketpairs.
    pub(crate) pipes: bool,
}

fn channel(pipes: bool) -> std::io::Result<Pipe> {
    if pipes {
        Pipe::new()
    } else {
        taskpair::socketpair()
    }
}

fn write_all(fd: i32, buf: &[u8]) -> bool {
    taskpair::write_all(fd, buf)
}

fn read_exact(fd: i32, total: usize, buf: &mut [u8]) -> bool {
    taskpair::read_exactly(fd, total, buf)
}

/// Blocks until the parent closes the gate's write end (EOF).
fn wait_gate(gate: i32) {
    taskpair::get(gate);
}

enum Task {
    Thread(std::thread::JoinHandle<()>),
    Process(libc::pid_t),
}

impl Hackbench {
    /// Messages one run moves.
    pub(crate) fn messages(&self) -> u64 {
        (self.groups * self.fds * self.fds * self.loops) as u64
    }

    /// One run: creates every task, opens the gate, waits for all; returns the time from the
    /// gate opening to the last task finishing.
    pub(crate) fn run_once(&self) -> std::io::Result<Duration> {
        let Pipe {
            r: gate_rd,
            w: gate_wr,
        } = Pipe::new()?;
        let gate = (gate_rd.as_raw_fd(), gate_wr.as_raw_fd());
        let mut gate_wr = Some(gate_wr);
        let mut chans: Vec<Pipe> = Vec::new();
        let mut tasks = Vec::new();
        let result = (|| -> std::io::Result<()> {
            for _ in 0..self.groups {
                let group: Vec<Pipe> = (0..self.fds)
                    .map(|_| channel(self.pipes))
                    .collect::<Result<_, _>>()?;
                // Task bodies capture only plain values and use stack buffers: a forked child of
                // a multi-threaded process must not touch the allocator.
                // A forked child holds its own copy of the gate's write end: it must close it, or
                // the gate never reads EOF. Threads share the parent's, which the parent closes.
                let own_gate_w = (!self.threads).then_some(gate.1);
                for c in &group {
                    let (rd, total, gate_r) =
                        (c.rfd(), self.fds * self.loops * self.datasize, gate.0);
                    tasks.push(self.spawn(move || {
                        let mut buf = [0u8; MAX_DATASIZE];
                        if let Some(w) = own_gate_w {
                            taskpair::close(w);
                        }
                        wait_gate(gate_r);
                        read_exact(rd, total, &mut buf);
                    })?);
                }
                let mut writers = [0i32; MAX_FDS];
                for (slot, c) in writers.iter_mut().zip(&group) {
                    *slot = c.wfd();
                }
                let nw = group.len();
                for _ in 0..self.fds {
                    let (loops, gate_r, size) = (self.loops, gate.0, self.datasize);
                    tasks.push(self.spawn(move || {
                        let msg = [0x5au8; MAX_DATASIZE];
                        if let Some(w) = own_gate_w {
                            taskpair::close(w);
                        }
                        wait_gate(gate_r);
                        for _ in 0..loops {
                            for &fd in &writers[..nw] {
                                if !write_all(fd, &msg[..size]) {
                                    return;
                                }
                            }
                        }
                    })?);
                }
                chans.extend(group);
            }
            Ok(())
        })();
        let t0 = Instant::now();
        // Opening the gate: its last write end closes, every task reads EOF and starts.
        drop(gate_wr.take());
        if result.is_err() {
            for t in &tasks {
                if let Task::Process(pid) = t {
                    latlab_core::sys::process::signal(*pid, libc::SIGKILL);
                }
            }
            // Unblock threads stuck in read/write.
            chans.clear();
        }
        for t in tasks {
            match t {
                Task::Thread(h) => {
                    let _ = h.join();
                }
                Task::Process(pid) => taskpair::wait_task(pid),
            }
        }
        let elapsed = t0.elapsed();
        drop(gate_rd);
        drop(chans);
        result.map(|_| elapsed)
    }

    /// One run on a helper thread, abandoned when `stop` is set first: `Ok(None)` then. The
    /// abandoned run's forked tasks die with the process (parent-death signal); its threads
    /// with the process too, so the caller must be about to exit or keep running anyway.
    pub(crate) fn run_once_unless(
        &self,
        stop: &std::sync::atomic::AtomicBool,
    ) -> std::io::Result<Option<Duration>> {
        let (tx, rx) = std::sync::mpsc::channel();
        let me = self.clone();
        // Unnamed: the thread (and the tasks it forks) carry the load's name.
        std::thread::Builder::new().spawn(move || {
            let _ = tx.send(me.run_once());
        })?;
        loop {
            match rx.recv_timeout(Duration::from_millis(10)) {
                Ok(r) => return r.map(Some),
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                    if stop.load(std::sync::atomic::Ordering::Relaxed) {
                        return Ok(None);
                    }
                }
                Err(_) => return Err(std::io::Error::other("the hackbench thread died")),
            }
        }
    }

    fn spawn(&self, body: impl FnOnce() + Send + 'static) -> std::io::Result<Task> {
        if self.threads {
            std::thread::Builder::new()
                .stack_size(64 * 1024)
                .spawn(body)
                .map(Task::Thread)
        } else {
            // Children inherit the policy of the caller; loads run at SCHED_OTHER.
            taskpair::fork_task(None, libc::SCHED_OTHER, 0, body).map(Task::Process)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_runs_complete_in_every_mode() {
        for (threads, pipes) in [(true, true), (true, false), (false, true), (false, false)] {
            let h = Hackbench {
                groups: 2,
                fds: 3,
                loops: 20,
                datasize: 100,
                threads,
                pipes,
            };
            let d = h.run_once().unwrap();
            assert!(d > Duration::ZERO);
            assert_eq!(h.messages(), 360);
        }
    }
}
