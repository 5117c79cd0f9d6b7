//! Reads every sample of the kernel's timerlat tracer from latlab's instance, per CPU, off
//! the measurement's path (the kernel measures; latlab only drains its buffers): exact
//! maxima, HDR histograms, the kernel's sequence numbers to say how many samples it produced
//! against how many latlab read, and — with a threshold — each late sample explained with the
//! kernel's split (`explain.rs`).

use super::explain::{self, Window};
use super::records::{Context, Layouts, Pipes, Rec};
use latlab_core::result::trace::SpikeRecord;
use latlab_core::stats::Recorder;
use latlab_trace::event::{Event, Kind};
use std::collections::VecDeque;
use std::path::PathBuf;

/// Explained spikes kept per CPU (the worst, when there are more).
pub(crate) const SPIKES_PER_CPU: usize = 256;
/// Events kept per CPU for explanations (the newest), and how far back in time.
const RING_EVENTS: usize = 16_384;
const RING_NS: u64 = 2_000_000_000;

/// The first and last sequence number seen.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Span {
    /// Smallest (0: none yet).
    pub(crate) first: u64,
    /// Largest.
    pub(crate) last: u64,
}

/// One CPU's samples and what explains them.
#[derive(Debug)]
pub(crate) struct CpuLog {
    /// The CPU.
    pub(crate) cpu: usize,
    /// Per context (irq, thread, user): the samples counted.
    pub(crate) rec: [Recorder; 3],
    /// Per context: the sequence numbers seen.
    pub(crate) seq: [Span; 3],
    /// Samples past `--loops`, read and not counted.
    pub(crate) beyond_loops: u64,
    /// Per context: the last sequence number counted.
    counted_last: [u64; 3],
    /// Per context: samples produced in the kernel's earlier numberings (its sequence
    /// restarted: another tool restarted the tracer, or the CPU went offline and back).
    produced_before: [u64; 3],
    /// Times the kernel's numbering restarted on this CPU.
    pub(crate) restarts: u64,
    /// Events the kernel said it lost before a page (its ring buffer overwrote them).
    pub(crate) missed: u64,
    /// Records read.
    pub(crate) records: u64,
    /// Pages that did not parse (their records up to the fault are kept).
    pub(crate) bad_pages: u64,
    /// Explained spikes, at most [`SPIKES_PER_CPU`] (the worst).
    pub(crate) spikes: Vec<SpikeRecord>,
    /// Spikes explained but not kept (over the cap).
    pub(crate) spikes_dropped: u64,
    last_irq: Option<(u64, u64, u64)>,
    ring: VecDeque<(u64, Rec)>,
    /// The task running when the ring's oldest event happened: (pid, comm, prio).
    before_ring: Option<explain::Task>,
    pending: Option<SpikeRecord>,
}

fn ctx_index(c: Context) -> usize {
    match c {
        Context::Irq => 0,
        Context::Thread => 1,
        Context::User => 2,
    }
}

impl CpuLog {
    fn new(cpu: usize) -> CpuLog {
        CpuLog {
            cpu,
            rec: [Recorder::new(), Recorder::new(), Recorder::new()],
            seq: [Span::default(); 3],
            beyond_loops: 0,
            counted_last: [0; 3],
            produced_before: [0; 3],
            restarts: 0,
            missed: 0,
            records: 0,
            bad_pages: 0,
            spikes: Vec::new(),
            spikes_dropped: 0,
            last_irq: None,
            ring: VecDeque::new(),
            before_ring: None,
            pending: None,
        }
    }

    /// Samples the kernel produced in context `i` from the first latlab read to the last it
    /// counted (its sequence numbers, over every numbering it restarted with).
    pub(crate) fn produced(&self, i: usize) -> u64 {
        let s = self.seq[i];
        let now = if self.counted_last[i] == 0 {
            0
        } else {
            self.counted_last[i].saturating_sub(s.first.max(1)) + 1
        };
        self.produced_before[i] + now
    }

    fn keep(&mut self, s: SpikeRecord) {
        if self.spikes.len() < SPIKES_PER_CPU {
            self.spikes.push(s);
            return;
        }
        self.spikes_dropped += 1;
        let (i, least) = self
            .spikes
            .iter()
            .enumerate()
            .min_by_key(|(_, x)| x.latency_ns)
            .map(|(i, x)| (i, x.latency_ns))
            .unwrap_or((0, 0));
        if s.latency_ns > least {
            self.spikes[i] = s;
        }
    }

    fn settle(&mut self) {
        if let Some(s) = self.pending.take() {
            self.keep(s);
        }
    }

    fn remember(&mut self, ts: u64, r: Rec) {
        self.ring.push_back((ts, r));
        while self.ring.len() > RING_EVENTS
            || self
                .ring
                .front()
                .is_some_and(|(t, _)| t.saturating_add(RING_NS) < ts)
        {
            if let Some((_, Rec::Other(Event { kind, .. }))) = self.ring.pop_front() {
                if let Some(t) = explain::next_task(&kind) {
                    self.before_ring = Some(t);
                }
            }
        }
    }

    /// Takes record `r` at time `ts` (CLOCK_MONOTONIC ns).
    /// Each sample counted goes to `sink` too: (context, sequence number, ns).
    fn take(
        &mut self,
        ts: u64,
        r: Rec,
        cfg: &Limits,
        syms: &mut Symbols,
        sink: &mut dyn FnMut(Context, u64, u64),
    ) {
        self.records += 1;
        match r {
            Rec::Sample { seq, ctx, ns } => {
                self.settle();
                let i = ctx_index(ctx);
                let span = &mut self.seq[i];
                if span.last > 0 && seq < span.last {
                    // The numbering restarted: what was produced so far is kept apart.
                    self.restarts += 1;
                    if self.counted_last[i] > 0 {
                        self.produced_before[i] +=
                            self.counted_last[i].saturating_sub(span.first.max(1)) + 1;
                    }
                    self.counted_last[i] = 0;
                    *span = Span::default();
                }
                if span.first == 0 {
                    span.first = seq;
                }
                span.last = span.last.max(seq);
                if cfg.loops.is_some_and(|l| self.rec[i].count >= l) {
                    self.beyond_loops += 1;
                    return;
                }
                self.counted_last[i] = seq;
                self.rec[i].record(ns);
                sink(ctx, seq, ns);
                match ctx {
                    Context::Irq => self.last_irq = Some((seq, ts, ns)),
                    Context::Thread | Context::User => {
                        let worth = |l: &CpuLog| {
                            l.spikes.len() < SPIKES_PER_CPU
                                || l.spikes.iter().any(|x| x.latency_ns < ns)
                        };
                        if cfg.threshold_ns.is_some_and(|th| ns >= th) && !worth(self) {
                            // Over the threshold but smaller than every spike kept: counted,
                            // not explained (that would be work thrown away).
                            self.spikes_dropped += 1;
                        } else if cfg.threshold_ns.is_some_and(|th| ns >= th) {
                            let irq = self.last_irq.filter(|x| x.0 == seq);
                            let w = Window {
                                cpu: self.cpu,
                                seq,
                                sample_ts: ts,
                                latency_ns: ns,
                                irq: irq.map(|x| (x.1, x.2)),
                                user: ctx == Context::User,
                            };
                            self.pending =
                                Some(explain::explain(&w, &self.ring, self.before_ring.as_ref()));
                        }
                    }
                }
            }
            Rec::Other(Event {
                kind: Kind::Stack { frames },
                ..
            }) => {
                if let Some(p) = self.pending.as_mut() {
                    p.why.stack_addrs = frames.to_vec();
                    p.why.stack = syms.names(&frames);
                }
                self.settle();
            }
            r => self.remember(ts, r),
        }
    }
}

/// What counting and explaining need of the config.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// `--loops`.
    pub(crate) loops: Option<u64>,
    /// `--threshold`.
    pub(crate) threshold_ns: Option<u64>,
}

/// The kernel's symbols, read once, when the first stack needs them.
#[derive(Default)]
pub struct Symbols(Option<Option<latlab_trace::stacks::Kallsyms>>);

impl Symbols {
    fn names(&mut self, frames: &[u64]) -> Vec<String> {
        let k = self.0.get_or_insert_with(|| {
            latlab_trace::stacks::Kallsyms::load(std::path::Path::new("/proc/kallsyms"))
        });
        frames
            .iter()
            .filter(|&&a| a != 0 && a != u64::MAX)
            .map(|&a| match k {
                Some(k) => k.name(a),
                None => format!("{a:#x}"),
            })
            .collect()
    }
}

/// The readers of every measured CPU's raw buffer.
pub(crate) struct Collector {
    pipes: Pipes,
    limits: Limits,
    syms: Symbols,
    /// Per measured CPU.
    pub(crate) logs: Vec<CpuLog>,
}

impl Collector {
    /// Opens `pipes` ((CPU, `trace_pipe_raw`) of latlab's instance), non-blocking.
    pub(crate) fn open(
        pipes: &[(usize, PathBuf)],
        layouts: Layouts,
        limits: Limits,
    ) -> latlab_core::error::Result<Collector> {
        let paths: Vec<PathBuf> = pipes.iter().map(|p| p.1.clone()).collect();
        Ok(Collector {
            logs: pipes.iter().map(|(c, _)| CpuLog::new(*c)).collect(),
            pipes: Pipes::open(&paths, layouts)?,
            limits,
            syms: Symbols::default(),
        })
    }

    /// Reads every page each buffer holds now; the number of pages read.
    pub(crate) fn drain(&mut self) -> u64 {
        self.drain_with(&mut |_, _, _, _| {})
    }

    /// As [`Collector::drain`], handing each sample counted to `sink`: (the CPU's index in
    /// the pipes given, context, sequence number, ns).
    pub(crate) fn drain_with(&mut self, sink: &mut dyn FnMut(usize, Context, u64, u64)) -> u64 {
        let (logs, limits, syms) = (&mut self.logs, &self.limits, &mut self.syms);
        let pages = self.pipes.drain(&mut |i, ts, r| {
            logs[i].take(ts, r, limits, syms, &mut |c, q, ns| sink(i, c, q, ns));
        });
        for (i, l) in logs.iter_mut().enumerate() {
            l.missed = self.pipes.missed[i];
            l.bad_pages = self.pipes.bad_pages[i];
        }
        pages
    }

    /// True once every CPU counted `--loops` IRQ and thread samples.
    pub(crate) fn done(&self) -> bool {
        self.limits.loops.is_some_and(|l| {
            self.logs
                .iter()
                .all(|c| c.rec[0].count >= l && c.rec[1].count >= l)
        })
    }

    /// Ends the reading: the last pending explanations are kept.
    pub(crate) fn finish(mut self) -> Vec<CpuLog> {
        for l in &mut self.logs {
            l.settle();
        }
        self.logs
    }
}
