//! The flight recorder: one housekeeping thread reads every traced CPU's `trace_pipe_raw`
//! (non-blocking, whole pages), decodes the records and keeps the last `keep_ns` of events per
//! CPU in memory. Lost events are counted, never fatal. Attribution copies a window out.

use super::event::{Decoder, Event};
use super::format::PageHeader;
use super::page;
use super::tracefs::Instance;
use crate::error::{Error, Result};
use std::collections::VecDeque;
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// One CPU's recent events.
#[derive(Debug, Default)]
pub struct CpuLog {
    /// Events, oldest first.
    pub events: VecDeque<Event>,
    /// Everything recorded before this trace-clock time has been read (the pipe was empty).
    pub complete_to: u64,
    /// Events the kernel lost (ring full before the reader came).
    pub lost: u64,
    /// Events decoded.
    pub read: u64,
    /// Pages that could not be walked to the end.
    pub bad_pages: u64,
}

impl CpuLog {
    /// Adds an event and drops those older than `keep_ns` before it.
    pub fn push(&mut self, e: Event, keep_ns: u64) {
        self.events.push_back(e);
        self.read += 1;
        let horizon = e.ts.saturating_sub(keep_ns);
        while self.events.front().is_some_and(|f| f.ts < horizon) {
            self.events.pop_front();
        }
    }

    /// The events up to `to`, starting at the last context switch at or before `from` (so a
    /// replay knows which task ran at `from`), or at the oldest kept event.
    pub fn window(&self, from: u64, to: u64) -> Vec<Event> {
        let end = self.events.partition_point(|e| e.ts <= to);
        let at = self.events.partition_point(|e| e.ts <= from);
        let start = (0..at)
            .rev()
            .find(|&i| matches!(self.events[i].kind, super::event::Kind::Switch { .. }))
            .unwrap_or(0);
        self.events.range(start..end.max(start)).copied().collect()
    }
}

struct Shared {
    cpus: Vec<usize>,
    logs: Vec<Mutex<CpuLog>>,
    stop: Arc<AtomicBool>,
}

/// A running trace: the instance, the reader thread and the per-CPU logs.
pub struct Recorder {
    shared: Arc<Shared>,
    reader: Option<JoinHandle<()>>,
    instance: Option<Instance>,
}

fn now_mono() -> u64 {
    crate::sys::clock::now_ns(libc::CLOCK_MONOTONIC)
}

/// Reads every page available on one pipe into `log`.
fn drain(
    f: &mut std::fs::File,
    buf: &mut [u8],
    h: &PageHeader,
    dec: &Decoder,
    log: &Mutex<CpuLog>,
    keep_ns: u64,
) {
    loop {
        let before = now_mono();
        match f.read(buf) {
            Ok(0) => return,
            Ok(n) => {
                let mut l = log.lock().unwrap_or_else(|p| p.into_inner());
                let mut decoded = Vec::new();
                let r = page::walk(&buf[..n], h, |ts, b| {
                    if let Some(e) = dec.decode(ts, b) {
                        decoded.push(e);
                    }
                });
                match r {
                    Ok(info) => l.lost += info.missed,
                    Err(_) => l.bad_pages += 1,
                }
                for e in decoded {
                    l.push(e, keep_ns);
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                let mut l = log.lock().unwrap_or_else(|p| p.into_inner());
                l.complete_to = l.complete_to.max(before);
                return;
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return,
        }
    }
}

impl Recorder {
    /// Starts reading `cpus` of `instance`, keeping `keep_ns` per CPU.
    pub fn start(
        instance: Instance,
        cpus: &[usize],
        header: PageHeader,
        dec: Decoder,
        keep_ns: u64,
    ) -> Result<Recorder> {
        let mut files = Vec::new();
        for &c in cpus {
            let p = instance.pipe(c);
            let f = std::fs::OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(&p)
                .map_err(|e| Error::Env(format!("--trace: {}: {e}", p.display())))?;
            files.push(f);
        }
        let shared = Arc::new(Shared {
            cpus: cpus.to_vec(),
            logs: cpus.iter().map(|_| Mutex::new(CpuLog::default())).collect(),
            stop: Arc::new(AtomicBool::new(false)),
        });
        let sh = shared.clone();
        let closed = Arc::new(AtomicBool::new(false));
        let cl = closed.clone();
        let reader = std::thread::Builder::new()
            .name("latlab-trace".into())
            .spawn(move || {
                let mut buf = vec![0u8; header.page_size];
                loop {
                    let last = sh.stop.load(Ordering::Acquire);
                    for (f, log) in files.iter_mut().zip(&sh.logs) {
                        drain(f, &mut buf, &header, &dec, log, keep_ns);
                    }
                    if last {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(10));
                }
                // The instance can be removed once its pipes are closed.
                drop(files);
                cl.store(true, Ordering::Release);
            })
            .map_err(|e| Error::Env(format!("--trace: cannot start the reader thread: {e}")))?;
        super::lifecycle::attach_reader(instance.id, shared.stop.clone(), closed);
        Ok(Recorder {
            shared,
            reader: Some(reader),
            instance: Some(instance),
        })
    }

    /// The events on `cpu` from the last switch before `from` up to `to`, once the reader has
    /// read past `to` (waiting at most `patience`); None for a CPU not traced.
    pub fn window(&self, cpu: usize, from: u64, to: u64, patience: Duration) -> Option<Vec<Event>> {
        let i = self.shared.cpus.iter().position(|&c| c == cpu)?;
        let t0 = std::time::Instant::now();
        loop {
            let l = self.shared.logs[i]
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            if l.complete_to > to || t0.elapsed() >= patience || self.reader.is_none() {
                return Some(l.window(from, to));
            }
            drop(l);
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// True when the reader has read everything on `cpu` up to `to` (or has stopped).
    pub fn has_read(&self, cpu: usize, to: u64) -> bool {
        let Some(i) = self.shared.cpus.iter().position(|&c| c == cpu) else {
            return true;
        };
        self.reader.is_none()
            || self.shared.logs[i]
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .complete_to
                > to
    }

    /// Stops tracing, reads what is left, and stops the reader (the instance stays until
    /// drop, so windows can still be taken).
    pub fn stop(&mut self) {
        if let Some(i) = &self.instance {
            i.stop();
        }
        self.shared.stop.store(true, Ordering::Release);
        if let Some(r) = self.reader.take() {
            let _ = r.join();
        }
    }

    /// Per traced CPU: (cpu, events read, events lost, unreadable pages).
    pub fn counts(&self) -> Vec<(usize, u64, u64, u64)> {
        self.shared
            .cpus
            .iter()
            .zip(&self.shared.logs)
            .map(|(&c, l)| {
                let l = l.lock().unwrap_or_else(|p| p.into_inner());
                (c, l.read, l.lost, l.bad_pages)
            })
            .collect()
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        self.stop();
        // The instance's own drop removes it (pipes were closed with the reader).
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::event::Kind;

    #[test]
    fn log_keeps_only_the_recent_past() {
        let mut l = CpuLog::default();
        for ts in [100, 200, 300, 1000] {
            l.push(
                Event {
                    ts,
                    pid: 0,
                    kind: Kind::IrqExit,
                },
                500,
            );
        }
        let ts: Vec<u64> = l.events.iter().map(|e| e.ts).collect();
        assert_eq!(ts, vec![1000]);
        assert_eq!(l.read, 4);
        assert_eq!(l.window(0, 999).len(), 0);
        assert_eq!(l.window(0, 1000).len(), 1);
    }
}
