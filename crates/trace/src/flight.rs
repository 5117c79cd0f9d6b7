//! The flight recorder: one housekeeping thread reads every traced CPU's `trace_pipe_raw`
//! (non-blocking, whole pages), decodes the records and keeps the last `keep_ns` of events per
//! CPU in memory. Lost events are counted, never fatal. Attribution reads a window where it
//! is kept. Where the in-kernel recorder runs (bpf/flight.bpf.c), the thread reads its rings
//! instead of the pipes (`kernel`), into the same logs.

use super::event::{Decoder, Event};
use super::format::PageHeader;
use super::page;
use super::procs::{Identity, ProcTable};
use super::tracefs::Instance;
use latlab_core::error::{Error, Result};
use std::collections::VecDeque;
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

mod kernel;

/// What the measured CPUs' events come from.
pub(crate) enum Main {
    /// A tracefs instance's per-CPU pipes.
    Instance(Instance),
    /// The in-kernel recorder's rings, one per CPU in `cpus` order.
    Kernel(crate::bpf::flight::Rings),
}

/// The reader's side of [`Main`].
enum Source {
    Pipes(Vec<std::fs::File>),
    Rings(Box<crate::bpf::flight::Rings>),
}

/// One CPU's recent events.
#[derive(Debug, Default)]
pub(crate) struct CpuLog {
    /// Events, oldest first.
    pub(crate) events: VecDeque<Event>,
    /// Everything recorded before this trace-clock time has been read (the pipe was empty).
    pub(crate) complete_to: u64,
    /// Events the kernel lost (ring full before the reader came).
    pub(crate) lost: u64,
    /// Events decoded.
    pub(crate) read: u64,
    /// Pages that could not be walked to the end.
    pub(crate) bad_pages: u64,
    /// Where the kernel lost events: (time stamp of the page that reported it, count), the
    /// first [`MAX_LOSSES`] kept.
    pub(crate) losses: Vec<(u64, u64)>,
}

/// How far back (in units of the kept history) a hold keeps events at most: a session that
/// never explains its spikes cannot keep every event.
pub(crate) const HOLD_FACTOR: u64 = 4;

/// Losses kept with their time per CPU (beyond, only counted).
pub(crate) const MAX_LOSSES: usize = 4096;

impl CpuLog {
    /// Adds an event and drops those older than `keep_ns` before it, but none after `hold`
    /// (the oldest time spikes still to be explained need; `u64::MAX`: none) while that is
    /// less than [`HOLD_FACTOR`] times `keep_ns` back.
    pub(crate) fn push(&mut self, e: Event, keep_ns: u64, hold: u64) {
        let mut horizon = e.ts.saturating_sub(keep_ns);
        if hold < horizon && e.ts.saturating_sub(hold) <= keep_ns.saturating_mul(HOLD_FACTOR) {
            horizon = hold;
        }
        self.events.push_back(e);
        self.read += 1;
        while self.events.front().is_some_and(|f| f.ts < horizon) {
            self.events.pop_front();
        }
    }

    /// The events after `after` up to `upto`, in order.
    pub(crate) fn between(&self, after: u64, upto: u64) -> Vec<Event> {
        let from = self.events.partition_point(|e| e.ts <= after);
        let to = self.events.partition_point(|e| e.ts <= upto);
        self.events.range(from..to.max(from)).cloned().collect()
    }

    /// The events up to `to`, starting at the last context switch at or before `from` (so a
    /// replay knows which task ran at `from`), or at the oldest kept event.
    #[cfg(test)]
    pub(crate) fn window(&self, from: u64, to: u64) -> Vec<Event> {
        self.window_in_place(from, to).iter().cloned().collect()
    }

    /// [`CpuLog::window`] where the events are kept (the two halves of the ring).
    pub(crate) fn window_in_place(&self, from: u64, to: u64) -> super::attribute::Window<'_> {
        let end = self.events.partition_point(|e| e.ts <= to);
        let at = self.events.partition_point(|e| e.ts <= from);
        let start = (0..at)
            .rev()
            .find(|&i| matches!(self.events[i].kind, super::event::Kind::Switch { .. }))
            .unwrap_or(0);
        let end = end.max(start);
        let (a, b) = self.events.as_slices();
        let cut = |s: &'_ [Event], lo: usize, hi: usize| (lo.min(s.len()), hi.min(s.len()));
        let (a0, a1) = cut(a, start, end);
        let (b0, b1) = cut(
            b,
            start.saturating_sub(a.len()),
            end.saturating_sub(a.len()),
        );
        super::attribute::Window(&a[a0..a1], &b[b0..b1])
    }
}

struct Shared {
    cpus: Vec<usize>,
    logs: Vec<Mutex<CpuLog>>,
    procs: Mutex<ProcTable>,
    stop: Arc<AtomicBool>,
    /// Raw pages kept per CPU (for a trace.dat), newest last.
    pages: Vec<Mutex<VecDeque<Box<[u8]>>>>,
    /// Bytes of raw pages kept per CPU, oldest dropped beyond (0: none kept).
    pages_cap: AtomicUsize,
    /// Where a page header keeps its time stamp.
    ts_offset: usize,
    /// Events at or after this trace-clock time are kept whatever `keep_ns` says (spikes to be
    /// explained need them); `u64::MAX`: no hold.
    hold: std::sync::atomic::AtomicU64,
}

/// A running trace: the instances, the reader thread, the per-CPU logs and the task table.
pub struct FlightRecorder {
    shared: Arc<Shared>,
    reader: Option<JoinHandle<()>>,
    instance: Option<Instance>,
    /// The process-events instance (every CPU), if the kernel has those events.
    procs: Option<Instance>,
}

/// Reads every page available on a process-events pipe into the task table.
fn drain_procs(
    f: &mut std::fs::File,
    buf: &mut [u8],
    h: &PageHeader,
    dec: &Decoder,
    t: &Mutex<ProcTable>,
) {
    loop {
        match f.read(buf) {
            Ok(0) => return,
            Ok(n) => {
                let mut t = t.lock().unwrap_or_else(|p| p.into_inner());
                let _ = page::walk(&buf[..n], h, |ts, b| {
                    if let Some(e) = dec.decode(ts, b) {
                        t.event(&e);
                    }
                });
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return,
        }
    }
}

fn now_mono() -> u64 {
    latlab_core::sys::clock::now_ns(libc::CLOCK_MONOTONIC)
}

/// Pages read from one CPU's pipe before the reader turns to the next: a CPU whose events
/// come as fast as a slow reader decodes them cannot keep the others unread.
const PAGES_PER_PASS: usize = 64;

/// Reads the pages available on one pipe into `log` (at most [`PAGES_PER_PASS`]); true when
/// it stopped with more left to read.
fn drain(
    f: &mut std::fs::File,
    buf: &mut [u8],
    h: &PageHeader,
    dec: &Decoder,
    log: &Mutex<CpuLog>,
    (keep_ns, hold): (u64, u64),
    raw: (&Mutex<VecDeque<Box<[u8]>>>, usize),
) -> bool {
    for _ in 0..PAGES_PER_PASS {
        let before = now_mono();
        match f.read(buf) {
            // Empty. A pipe whose file description a child closed (at its exec, the fd being
            // close-on-exec) answers 0 instead of EAGAIN from then on (the kernel's flush marks
            // the shared reader closed): both mean "nothing more now".
            Ok(0) => {
                let mut l = log.lock().unwrap_or_else(|p| p.into_inner());
                l.complete_to = l.complete_to.max(before);
                return false;
            }
            Ok(n) => {
                if raw.1 > 0 {
                    let mut q = raw.0.lock().unwrap_or_else(|p| p.into_inner());
                    q.push_back(buf[..n].into());
                    while q.len() * h.page_size > raw.1 {
                        q.pop_front();
                    }
                }
                let mut l = log.lock().unwrap_or_else(|p| p.into_inner());
                let mut decoded = Vec::new();
                let r = page::walk(&buf[..n], h, |ts, b| {
                    if let Some(e) = dec.decode(ts, b) {
                        decoded.push(e);
                    }
                });
                match r {
                    Ok(info) => {
                        l.lost += info.missed;
                        if info.missed > 0 && l.losses.len() < MAX_LOSSES {
                            let at = buf
                                .get(h.ts_offset..h.ts_offset + 8)
                                .and_then(|b| b.try_into().ok())
                                .map_or(0, u64::from_le_bytes);
                            l.losses.push((at, info.missed));
                        }
                    }
                    Err(_) => l.bad_pages += 1,
                }
                for e in decoded {
                    l.push(e, keep_ns, hold);
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                let mut l = log.lock().unwrap_or_else(|p| p.into_inner());
                l.complete_to = l.complete_to.max(before);
                return false;
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return false,
        }
    }
    true
}

impl FlightRecorder {
    /// Starts reading `cpus` of `instance` (and every CPU of `procs`), keeping `keep_ns` per
    /// CPU.
    pub(crate) fn start(
        main: Main,
        procs: Option<Instance>,
        cpus: &[usize],
        header: PageHeader,
        dec: Decoder,
        keep_ns: u64,
        reader_cpus: Option<Vec<usize>>,
    ) -> Result<FlightRecorder> {
        let open = |p: &std::path::Path| {
            std::fs::OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(p)
                .map_err(|e| Error::Env(format!("{}: {}: {e}", crate::who(), p.display())))
        };
        let (instance, mut source) = match main {
            Main::Instance(instance) => {
                let mut files = Vec::new();
                for &c in cpus {
                    files.push(open(&instance.pipe(c))?);
                }
                (Some(instance), Source::Pipes(files))
            }
            Main::Kernel(rings) => (None, Source::Rings(Box::new(rings))),
        };
        let mut proc_files = Vec::new();
        for p in procs.iter().flat_map(Instance::all_pipes) {
            proc_files.push(open(&p)?);
        }
        let shared = Arc::new(Shared {
            cpus: cpus.to_vec(),
            logs: cpus.iter().map(|_| Mutex::new(CpuLog::default())).collect(),
            procs: Mutex::new(ProcTable::default()),
            stop: Arc::new(AtomicBool::new(false)),
            pages: cpus.iter().map(|_| Mutex::new(VecDeque::new())).collect(),
            pages_cap: AtomicUsize::new(0),
            ts_offset: header.ts_offset,
            hold: std::sync::atomic::AtomicU64::new(u64::MAX),
        });
        let sh = shared.clone();
        let closed = Arc::new(AtomicBool::new(false));
        let cl = closed.clone();
        let reader = std::thread::Builder::new()
            .name("latlab-trace".into())
            .spawn(move || {
                // Off the measured CPUs where there are others (a refusal leaves it where the
                // driver's thread may run: the events are still read, only closer by).
                if let Some(c) = reader_cpus.filter(|c| !c.is_empty()) {
                    let _ = latlab_core::sys::sched::pin_to_cpus(c);
                }
                let mut buf = vec![0u8; header.page_size];
                loop {
                    let last = sh.stop.load(Ordering::Acquire);
                    // Process events first: a spike's culprit is born before it runs.
                    for f in proc_files.iter_mut() {
                        drain_procs(f, &mut buf, &header, &dec, &sh.procs);
                    }
                    let cap = sh.pages_cap.load(Ordering::Relaxed);
                    let mut more = false;
                    match &mut source {
                        Source::Pipes(files) => {
                            for ((f, log), raw) in files.iter_mut().zip(&sh.logs).zip(&sh.pages) {
                                let hold = sh.hold.load(Ordering::Acquire);
                                let keep = (keep_ns, hold);
                                more |= drain(f, &mut buf, &header, &dec, log, keep, (raw, cap));
                            }
                        }
                        Source::Rings(rings) => {
                            for (i, log) in sh.logs.iter().enumerate() {
                                let hold = sh.hold.load(Ordering::Acquire);
                                more |= kernel::drain(rings, i, &dec, log, (keep_ns, hold));
                            }
                        }
                    }
                    // The last pass reads every pipe to its end.
                    if more {
                        continue;
                    }
                    if last {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(10));
                }
                // The instance can be removed once its pipes are closed; the in-kernel
                // programs are detached with their rings.
                drop(source);
                drop(proc_files);
                cl.store(true, Ordering::Release);
            })
            .map_err(|e| {
                Error::Env(format!(
                    "{}: cannot start the reader thread: {e}",
                    crate::who()
                ))
            })?;
        for i in instance.iter().chain(procs.as_ref()) {
            super::lifecycle::attach_reader(i.id, shared.stop.clone(), closed.clone());
        }
        Ok(FlightRecorder {
            shared,
            reader: Some(reader),
            instance,
            procs,
        })
    }

    /// `f` of the events on `cpu` from the last switch before `from` up to `to`, where they
    /// are kept (under the CPU's lock: the reader waits until `f` returns), once the reader
    /// has read past `to` (waiting at most `patience`). None for a CPU not traced.
    pub(crate) fn with_window<R>(
        &self,
        cpu: usize,
        from: u64,
        to: u64,
        patience: Duration,
        f: impl FnOnce(super::attribute::Window<'_>) -> R,
    ) -> Option<R> {
        let i = self.shared.cpus.iter().position(|&c| c == cpu)?;
        let t0 = std::time::Instant::now();
        loop {
            let l = self.shared.logs[i]
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            if l.complete_to > to || t0.elapsed() >= patience || self.reader.is_none() {
                return Some(f(l.window_in_place(from, to)));
            }
            drop(l);
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Every event on `cpu` after `after` up to `upto` still kept (None: a CPU not traced).
    pub fn between(&self, cpu: usize, after: u64, upto: u64) -> Option<Vec<Event>> {
        let i = self.shared.cpus.iter().position(|&c| c == cpu)?;
        let l = self.shared.logs[i]
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        Some(l.between(after, upto))
    }

    /// The time up to which every traced CPU has been read (the oldest read horizon).
    pub fn watermark(&self) -> u64 {
        self.shared
            .logs
            .iter()
            .map(|l| l.lock().unwrap_or_else(|p| p.into_inner()).complete_to)
            .min()
            .unwrap_or(0)
    }

    /// The traced CPUs.
    pub fn cpus(&self) -> &[usize] {
        &self.shared.cpus
    }

    /// Per traced CPU: where the kernel lost events, (page time stamp, count).
    pub fn losses(&self) -> Vec<(usize, Vec<(u64, u64)>)> {
        self.shared
            .cpus
            .iter()
            .zip(&self.shared.logs)
            .map(|(&c, l)| {
                let l = l.lock().unwrap_or_else(|p| p.into_inner());
                (c, l.losses.clone())
            })
            .collect()
    }

    /// True when the reader has read everything on `cpu` up to `to` (or has stopped).
    pub(crate) fn has_read(&self, cpu: usize, to: u64) -> bool {
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
    pub(crate) fn stop(&mut self) {
        for i in self.instance.iter().chain(self.procs.iter()) {
            i.stop();
        }
        self.shared.stop.store(true, Ordering::Release);
        if let Some(r) = self.reader.take() {
            let _ = r.join();
        }
    }

    /// The command `pid` belongs to, when the trace saw it born or exec.
    pub(crate) fn identity(&self, pid: i32) -> Option<Identity> {
        self.shared
            .procs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .identity(pid)
    }

    /// Times the trace saw `pid` born (a pid reused is born again).
    pub(crate) fn births(&self, pid: i32) -> u32 {
        self.shared
            .procs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .births(pid)
    }

    /// The creators of `pid` the trace saw born, back to the first older than the trace.
    pub(crate) fn lineage(&self, pid: i32) -> super::procs::Lineage {
        self.shared
            .procs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .lineage(pid)
    }

    /// Keeps every event from `ts` (trace clock: CLOCK_MONOTONIC ns) on, however long it takes
    /// to explain the spikes after it (within [`HOLD_FACTOR`] times the kept history);
    /// `u64::MAX` lets go.
    pub(crate) fn hold_from(&self, ts: u64) {
        self.shared.hold.store(ts, Ordering::Release);
    }

    /// Keeps up to `bytes` of raw pages per CPU from now on (for a trace.dat).
    pub(crate) fn keep_pages(&self, bytes: usize) {
        self.shared.pages_cap.store(bytes, Ordering::Relaxed);
    }

    /// The raw pages kept, per traced CPU, oldest first.
    pub(crate) fn take_pages(&self) -> Vec<(usize, Vec<Box<[u8]>>)> {
        self.shared
            .cpus
            .iter()
            .zip(&self.shared.pages)
            .map(|(&c, q)| {
                let mut q = q.lock().unwrap_or_else(|p| p.into_inner());
                (c, std::mem::take(&mut *q).into())
            })
            .collect()
    }

    /// Copies of the raw pages kept, per traced CPU, from the last page starting at or before
    /// `from` to the last starting at or before `to`.
    pub(crate) fn pages_between(&self, from: u64, to: u64) -> Vec<(usize, Vec<Vec<u8>>)> {
        let o = self.shared.ts_offset;
        let ts = |p: &[u8]| {
            p.get(o..o + 8)
                .map_or(0, |b| u64::from_le_bytes(b.try_into().unwrap_or([0; 8])))
        };
        self.shared
            .cpus
            .iter()
            .zip(&self.shared.pages)
            .map(|(&c, q)| {
                let q = q.lock().unwrap_or_else(|p| p.into_inner());
                let start = q.partition_point(|p| ts(p) <= from).saturating_sub(1);
                let end = q.partition_point(|p| ts(p) <= to);
                let v = q.range(start..end.max(start)).map(|p| p.to_vec()).collect();
                (c, v)
            })
            .collect()
    }

    /// True when process events are traced.
    pub(crate) fn names_commands(&self) -> bool {
        self.procs.is_some()
    }

    /// Per traced CPU: (cpu, events read, events lost, unreadable pages).
    pub(crate) fn counts(&self) -> Vec<(usize, u64, u64, u64)> {
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

impl Drop for FlightRecorder {
    fn drop(&mut self) {
        self.stop();
        // The instances' own drops remove them (pipes were closed with the reader); the
        // process-events one first, since the main one may hold the mount.
        drop(self.procs.take());
        drop(self.instance.take());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::Kind;

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
                u64::MAX,
            );
        }
        let ts: Vec<u64> = l.events.iter().map(|e| e.ts).collect();
        assert_eq!(ts, vec![1000]);
        assert_eq!(l.read, 4);
        assert_eq!(l.window(0, 999).len(), 0);
        assert_eq!(l.window(0, 1000).len(), 1);
    }

    #[test]
    fn a_window_in_place_spans_the_rings_two_halves() {
        let mut l = CpuLog::default();
        let ev = |ts: u64| Event {
            ts,
            pid: 1,
            kind: if ts.is_multiple_of(10) {
                Kind::Switch {
                    prev_comm: Default::default(),
                    prev_pid: 1,
                    prev_prio: 120,
                    prev_state: 0,
                    next_comm: Default::default(),
                    next_pid: 2,
                    next_prio: 120,
                }
            } else {
                Kind::IrqExit
            },
        };
        for ts in 0..200 {
            l.push(ev(ts), 40, u64::MAX);
        }
        assert!(!l.events.as_slices().1.is_empty(), "the ring wrapped");
        for (from, to) in [(170, 190), (159, 199), (0, 165), (185, 185)] {
            let w = l.window_in_place(from, to);
            let got: Vec<u64> = w.iter().map(|e| e.ts).collect();
            // From the last switch at or before `from` (or the oldest kept) up to `to`.
            let start = (from / 10 * 10).max(l.events[0].ts);
            let want: Vec<u64> = (start..=to).collect();
            assert_eq!(got, want, "{from}..{to}");
            assert_eq!(l.window(from, to).len(), want.len());
        }
    }

    #[test]
    fn a_hold_keeps_the_events_spikes_still_need_within_its_bound() {
        let ev = |ts| Event {
            ts,
            pid: 0,
            kind: Kind::IrqExit,
        };
        let mut l = CpuLog::default();
        // Held from 100: kept past the 40 of history, up to 4 x 40 back.
        for ts in 100..250 {
            l.push(ev(ts), 40, 100);
        }
        assert_eq!(l.events.front().map(|e| e.ts), Some(100));
        for ts in 250..300 {
            l.push(ev(ts), 40, 100);
        }
        // 299 - 160 = 139: the hold no longer counts, the usual 40 do.
        assert_eq!(l.events.front().map(|e| e.ts), Some(259));
        // Let go: back to the history alone.
        let mut m = CpuLog::default();
        for ts in 0..100 {
            m.push(ev(ts), 40, u64::MAX);
        }
        assert_eq!(m.events.front().map(|e| e.ts), Some(59));
    }
}
