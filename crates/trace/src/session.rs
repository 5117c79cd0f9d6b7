//! The tracing session a measurement holds: starts the instance and the flight recorder on
//! the measured CPUs, takes the spikes the measuring threads report (over the threshold),
//! attributes each once the recorder has read past it, and ends with a report for the run's
//! JSON (`trace`) and the "why" summary printed after the table.

use super::attribute::{attribute_window, Note, Window};
use super::flight::{FlightRecorder, Main};
use super::groups::{Namer, Root};
use super::procs::Identity;
pub use super::raw::RawSpike;
use super::tracefs::{journal_file, TraceFs, PROCS_SUFFIX};
use latlab_core::error::Result;
use latlab_core::result::trace::{SpikeRecord, TraceReport};
use std::time::Duration;

mod finish;
pub mod recorder;
mod spikes;

/// Default `--trace-threshold`: 100 µs (well above this VM's typical wake-up, well below its
/// multi-millisecond spikes).
pub const DEFAULT_THRESHOLD_NS: u64 = 100_000;
/// How much history each CPU keeps: enough for the control thread to come by.
const KEEP_NS: u64 = 2_000_000_000;
/// Per-CPU trace buffer.
const BUFFER_KB: u64 = 4096;
/// Per-CPU buffer of the process-events instance (forks and execs are rare).
const PROCS_BUFFER_KB: u64 = 256;
/// Raw pages kept per CPU for `--trace-save FILE.dat` (the run's last 64 MiB per CPU).
const DAT_BYTES_PER_CPU: usize = 64 << 20;
/// How far before a spike's expected wake-up its saved window starts.
const WINDOW_LEAD_NS: u64 = 100_000_000;
/// The longest [`Tracer::settle`] waits for a reader that is behind but still reading.
const SETTLE_MAX: Duration = Duration::from_secs(60);
/// Spikes kept as records (the worst; the rest only counted).
const MAX_RECORDS: usize = 10_000;

/// A tracing session.
pub struct Tracer {
    rec: FlightRecorder,
    names: Vec<String>,
    pending: Vec<RawSpike>,
    /// Which spikes stay records: the worst [`MAX_RECORDS`] (see `spikes::Worst`).
    worst: spikes::Worst,
    /// The events of the spike being attributed (kept to be reused by the next).
    scratch: Vec<super::event::Event>,
    report: TraceReport,
    spinner: bool,
    save: Option<(std::path::PathBuf, Vec<spikes::Part>)>,
    /// The spikes whose windows rules saved (series, seq): kept as records whatever their
    /// latency.
    pinned: Vec<(String, u64)>,
    /// Names culprit groups (latlab's loads and itself, kernel workers, commands) from what
    /// /proc said of each task while it lived.
    namer: Namer,
    /// `--trace-save FILE.dat`: where to write the raw pages as a trace.dat.
    dat: Option<std::path::PathBuf>,
    /// Writes trace files within the run's budget and end.
    saver: super::saving::Saver,
    /// `--on-threshold` rules.
    actions: Option<super::actions::Actions>,
    /// Windows to save once attributed: (series, seq, rule text).
    windows: Vec<(u32, u64, String)>,
    /// `--trace-stacks`: the kernel's symbols.
    kallsyms: Option<super::stacks::Kallsyms>,
    /// NMI, SMI and steal counters at the start.
    counters: super::hw::Counters,
    /// Counter readings during the run, to check each spike's unexplained time against.
    watch: super::hw::Watch,
    /// Whether another process turned tracing off in the instance.
    tamper: super::tamper::Guard,
    /// Bare metal or a guest, under which hypervisor.
    host: super::host::Host,
    /// On a guest: each traced CPU's steal, read every 10 ms by `sampler`.
    steal: Option<std::sync::Arc<super::host::StealLog>>,
    sampler: Option<super::host::Sampler>,
    /// Steal's unit in /proc/stat (ns).
    tick_ns: u64,
}

/// CLOCK_MONOTONIC now (ns).
fn mono_now() -> u64 {
    latlab_core::sys::clock::now_ns(libc::CLOCK_MONOTONIC)
}

/// What a measurement asks the driver to trace (`driver::Measurement::trace`): the driver
/// starts the session before the measurement and hands it over through its `Ctx`.
#[derive(Debug, Clone, Default)]
pub struct Request {
    /// CPUs traced.
    pub cpus: Vec<usize>,
    /// Spikes at or above this are attributed (ns).
    pub threshold_ns: u64,
    /// The measuring threads' series names (thread `latlab-<name>`), in series order.
    pub names: Vec<String>,
    /// History kept per CPU (ns); None: two seconds, enough for the control thread to come by.
    pub keep_ns: Option<u64>,
    /// The measuring threads spin (noise): their own time inside a gap is unattributed.
    pub spinner: bool,
    /// `--trace-stacks`: the kernel stack at each wake-up of the measuring threads.
    pub stacks: bool,
    /// More `sched` events besides what attribution reads (`latlab sched`).
    pub extra: &'static [&'static str],
    /// `--trace-save FILE`.
    pub save: Option<std::path::PathBuf>,
    /// `--on-threshold` rules.
    pub actions: Vec<super::actions::Rule>,
    /// Their bounds: firings per rule, the disk budget, what `shell:` commands get.
    pub limits: super::actions::Limits,
    /// `-b`: save the window of the first spike at or above this (ns).
    pub break_on: Option<u64>,
    /// CPUs the reader thread runs on (housekeeping: off the measured CPUs); None: wherever
    /// the driver's thread may run.
    pub reader_cpus: Option<Vec<usize>>,
    /// How a refusal for want of root is explained (`--trace needs root`).
    pub needs_root: &'static str,
    /// Processes latlab started whose trees are groups of their own (`--load` workers); the
    /// driver fills it in.
    pub roots: Vec<Root>,
}

/// The end of an hrtimer callback, which attribution does not read (the callback runs inside
/// the timer interrupt, whose entry and exit it does read).
const UNREAD: &str = "timer/hrtimer_expire_exit";

/// The start of an hrtimer callback: attribution dates the timer's expiry from it, or from the
/// timer interrupt's entry where the interrupt vectors are traced (x86's `local_timer`), a
/// microsecond earlier, so it is left off then.
const TIMER_START: &str = "timer/hrtimer_expire_entry";

/// The timer interrupt's entry among the interrupt vectors (x86).
const TIMER_VECTOR: &str = "irq_vectors/local_timer_entry";

/// The events of [`TraceFs::layouts`] that are enabled: all of them for `latlab sched`
/// (`extra` events asked for: it tells hrtimer time apart), and for attribution alone without
/// [`UNREAD`] and, where the timer vector is traced, without [`TIMER_START`]: the measured CPU
/// writes two events fewer on each timer wake-up, one of them between the timer's expiry and
/// the thread's switch-in.
fn enabled_events(events: Vec<String>, extra: &[&str]) -> Vec<String> {
    if !extra.is_empty() {
        return events;
    }
    let vector = events.iter().any(|e| e == TIMER_VECTOR);
    events
        .into_iter()
        .filter(|e| e != UNREAD && !(vector && e == TIMER_START))
        .collect()
}

impl Tracer {
    /// Starts the session `r` asks for on the system's tracefs (mounting it if needed);
    /// `stop` ends the run when an `--on-threshold ...:stop` rule fires.
    pub fn begin(
        r: &Request,
        stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    ) -> Result<Tracer> {
        let kernel = recorder::in_kernel(r, recorder::wanted()?)?;
        let j = journal_file("");
        let started = TraceFs::system(j.parent().unwrap_or(std::path::Path::new(".")))
            .and_then(|fs| Tracer::open(&fs, Some(j), r, kernel));
        let t = match started {
            Err(e) if latlab_core::sys::sched::euid() != 0 && !r.needs_root.is_empty() => {
                return Err(latlab_core::error::Error::Env(format!(
                    "{}: run it as root, e.g. with sudo ({e})",
                    r.needs_root
                )))
            }
            t => t?,
        };
        let mut t = t
            .saving(r.save.clone())
            .acting(r.actions.clone(), r.limits.clone(), stop)
            .breaking(r.break_on);
        t.spinner = r.spinner;
        if r.stacks {
            // Unreadable or hidden symbols: addresses in hex.
            t.kallsyms = Some(
                super::stacks::Kallsyms::load(std::path::Path::new("/proc/kallsyms"))
                    .unwrap_or_default(),
            );
        }
        Ok(t)
    }

    /// The flight recorder of [`Tracer::begin`] on a chosen tracefs, in kernel where `kernel`
    /// says so; no saving, actions or stacks' symbols.
    fn open(
        fs: &TraceFs,
        journal: Option<std::path::PathBuf>,
        r: &Request,
        kernel: bool,
    ) -> Result<Tracer> {
        let (header, mut dec, events) = fs.layouts()?;
        let mut events = enabled_events(events, r.extra);
        let proc_events = fs.proc_events(&mut dec)?;
        events.extend(fs.optional_events(&mut dec, "sched", r.extra)?);
        let procs_journal = journal
            .as_ref()
            .map(|j| j.with_file_name(format!("trace-{}{PROCS_SUFFIX}.json", std::process::id())));
        let (main, tamper, engine) =
            Tracer::main_recorder(fs, r, &events, &mut dec, journal, kernel)?;
        let procs = if proc_events.is_empty() {
            None
        } else {
            Some(fs.create_instance(
                PROCS_SUFFIX,
                &[],
                &proc_events,
                PROCS_BUFFER_KB,
                procs_journal,
            )?)
        };
        let page_size = header.page_size;
        let nmi_traced = events.iter().any(|e| e == "nmi/nmi_handler");
        let host = super::host::Host::here();
        let rec = FlightRecorder::start(
            main,
            procs,
            &r.cpus,
            header,
            dec,
            r.keep_ns.unwrap_or(KEEP_NS),
            r.reader_cpus.clone(),
        )?;
        // On a guest, steal is read every 10 ms, from now on.
        let steal = host.vm.then(|| {
            std::sync::Arc::new(super::host::StealLog::new(
                latlab_core::sys::roots::Roots::host(),
                &r.cpus,
            ))
        });
        let sampler = steal
            .clone()
            .and_then(|log| super::host::Sampler::start(log, r.reader_cpus.clone()));
        let mut namer = Namer::system(r.roots.clone());
        namer.scan_roots();
        let roots = super::hw::Roots::default();
        let counters = super::hw::Counters::read(&roots, &r.cpus, !host.vm);
        let watch = super::hw::Watch::new(roots, &r.cpus, &counters, mono_now(), !nmi_traced);
        Ok(Tracer {
            rec,
            names: r.names.clone(),
            pending: Vec::new(),
            worst: spikes::Worst::new(MAX_RECORDS),
            scratch: Vec::new(),
            spinner: false,
            save: None,
            pinned: Vec::new(),
            namer,
            dat: None,
            saver: super::saving::Saver::new(fs.root.clone(), events, page_size),
            actions: None,
            windows: Vec::new(),
            kallsyms: None,
            counters,
            watch,
            tamper,
            steal,
            sampler,
            tick_ns: super::host::steal_tick_ns(),
            report: TraceReport {
                threshold_ns: r.threshold_ns,
                cpus: r.cpus.clone(),
                idle_note: host.idle_note(),
                nmi_traced,
                hypervisor: host
                    .vm
                    .then(|| host.hypervisor.clone().unwrap_or_else(|| "VM".into())),
                steal_tick_ns: host.vm.then(super::host::steal_tick_ns),
                engine: Some(engine.into()),
                ..TraceReport::default()
            },
            host,
        })
    }

    /// The measured CPUs' recorder: the in-kernel one where `kernel` asks for it (exit 3
    /// where it cannot start), else a tracefs instance; with the guard of its switches and
    /// the engine's name.
    fn main_recorder(
        fs: &TraceFs,
        r: &Request,
        events: &[String],
        dec: &mut super::event::Decoder,
        journal: Option<std::path::PathBuf>,
        kernel: bool,
    ) -> Result<(Main, super::tamper::Guard, &'static str)> {
        if kernel {
            let rings = crate::bpf::flight::Rings::start(
                &fs.root,
                events,
                &r.cpus,
                crate::bpf::flight::RING,
            )
            .map_err(|why| recorder::refused(&why))?;
            return Ok((
                Main::Kernel(rings),
                super::tamper::Guard::idle(mono_now()),
                "bpf",
            ));
        }
        if r.stacks {
            fs.stack_event(dec)?;
        }
        let inst = fs.create_instance("", &r.cpus, events, BUFFER_KB, journal)?;
        let tamper = super::tamper::Guard::new(&inst.reach, events, mono_now());
        if r.stacks {
            let comms: Vec<String> = r
                .names
                .iter()
                .map(|n| format!("latlab-{n}").chars().take(15).collect())
                .collect();
            fs.stack_trigger(&inst, &comms)?;
        }
        Ok((Main::Instance(inst), tamper, "tracefs"))
    }

    /// One more process whose whole tree is one culprit group (`latlab sched -- CMD`).
    pub fn add_root(&mut self, r: Root) {
        self.namer.add_root(r);
    }

    /// Names one more series (a task that appeared); its index for [`RawSpike::series`].
    pub fn add_series(&mut self, name: String) -> u32 {
        self.names.push(name);
        (self.names.len() - 1) as u32
    }

    /// The flight recorder (its events, read horizon and losses).
    pub fn recorder(&self) -> &FlightRecorder {
        &self.rec
    }

    /// `--trace-save`: keep each spike's events as a timeline, written to `path` at the end;
    /// a `.dat` path gets the raw pages instead, as a trace-cmd `trace.dat`.
    fn saving(mut self, path: Option<std::path::PathBuf>) -> Tracer {
        match path {
            Some(p) if super::dat::wanted(&p) => {
                self.rec.keep_pages(DAT_BYTES_PER_CPU);
                self.dat = Some(p);
            }
            p => self.save = p.map(|p| (p, Vec::new())),
        }
        self
    }

    /// `--on-threshold`: `rules` within `limits` (firings per rule, disk budget, the
    /// environment of `shell:` commands); `stop` ends the run.
    pub(crate) fn acting(
        mut self,
        rules: Vec<super::actions::Rule>,
        limits: super::actions::Limits,
        stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    ) -> Tracer {
        self.saver.budget(limits.budget);
        if rules.is_empty() {
            return self;
        }
        let a = super::actions::Actions::new(rules, limits, stop);
        if a.saves_windows() {
            self.rec.keep_pages(DAT_BYTES_PER_CPU);
        }
        self.actions = Some(a);
        self
    }

    /// Tells the session when the run ends (a signal sets `interrupted`; `deadline` is the
    /// planned end): trace windows due after it are not written, one being written is cut.
    pub fn ends(
        &mut self,
        interrupted: std::sync::Arc<std::sync::atomic::AtomicBool>,
        deadline: Option<std::time::Instant>,
    ) {
        self.saver.ends(interrupted, deadline);
    }

    /// `-b`: the raw pages are kept, to save the trace window of the spike that stops the run
    /// (handed over by [`Tracer::broke_on`]).
    fn breaking(self, ns: Option<u64>) -> Tracer {
        if ns.is_some() {
            self.rec.keep_pages(DAT_BYTES_PER_CPU);
        }
        self
    }

    /// Takes a spike to attribute (and fires the `--on-threshold` rules it reaches).
    pub fn offer(&mut self, s: RawSpike) {
        let latency_ns = s.actual.saturating_sub(s.expected);
        if let Some(a) = self.actions.as_mut() {
            let series = self.names.get(s.series as usize).map_or("", String::as_str);
            let sp = super::actions::Spike {
                series,
                cpu: s.cpu as usize,
                seq: s.seq,
                latency_ns,
            };
            for rule in a.fire(&sp, &mut self.report.actions) {
                self.windows.push((s.series, s.seq, rule));
            }
        }
        if self.keep(&s, latency_ns) {
            self.pending.push(s);
        } else {
            self.report.spikes_dropped += 1;
        }
    }

    /// Counts spikes a thread could not hand over (its ring was full): said in a warning, as
    /// they were never ranked and may have been among the worst.
    pub fn dropped(&mut self, n: u64) {
        self.report.spikes_dropped += n;
        if n > 0 {
            self.report.warnings.push(format!(
                "{}: {n} spikes were lost before they could be ranked (a measuring thread's \
                 hand-over ring was full while the tracer was busy): the worst may be missing from \
                 the spikes explained; a higher --trace-threshold keeps them all",
                crate::who()
            ));
        }
    }

    /// Attributes the pending spikes the recorder has read past.
    pub fn poll(&mut self) {
        self.watch.tick(mono_now());
        self.tamper.tick(mono_now());
        let mut keep = Vec::new();
        for s in std::mem::take(&mut self.pending) {
            if self.rec.has_read(s.cpu as usize, s.actual) {
                self.attribute(s, Duration::ZERO);
            } else {
                keep.push(s);
            }
        }
        self.pending = keep;
    }

    /// Takes the attributed spikes that ended before `settled_ns` (CLOCK_MONOTONIC), their
    /// groups named, for a session that never ends (`monitor`): by then the reader has read
    /// every fork and exec before them. Tasks named from /proc that no remaining spike needs are
    /// forgotten, so the session's memory stays flat.
    pub fn take_settled(&mut self, settled_ns: u64) -> Vec<SpikeRecord> {
        let (mut done, rest): (Vec<_>, Vec<_>) = std::mem::take(&mut self.report.spikes)
            .into_iter()
            .partition(|s| s.expected_ns.saturating_add(s.latency_ns) < settled_ns);
        self.report.spikes = rest;
        // The records have room again: the next interval's worst are kept whatever this one's.
        self.records_taken();
        done.sort_by_key(|s| (s.expected_ns, s.cpu));
        self.name_groups(&mut done);
        let mut needed: std::collections::HashSet<i32> = Default::default();
        for pid in self
            .report
            .spikes
            .iter()
            .flat_map(|s| &s.why.components)
            .filter_map(|c| c.task.as_ref().map(|t| t.pid))
        {
            needed.insert(pid);
            needed.extend(self.rec.lineage(pid).older);
        }
        self.namer.retain(&needed);
        done
    }

    /// The report's fixed part (threshold, CPUs, what idle means, whether NMIs and execs are
    /// traced) and the spikes dropped so far, without spikes or other counts: what each
    /// monitor snapshot's `trace` starts from.
    pub fn header(&self) -> TraceReport {
        TraceReport {
            threshold_ns: self.report.threshold_ns,
            cpus: self.report.cpus.clone(),
            idle_note: self.report.idle_note.clone(),
            nmi_traced: self.report.nmi_traced,
            exec_chains: self.rec.names_commands(),
            engine: self.report.engine.clone(),
            hypervisor: self.report.hypervisor.clone(),
            steal_tick_ns: self.report.steal_tick_ns,
            untraced_after_s: self.tamper.untraced_after_s(),
            // The session's so far: a snapshot takes its interval's share.
            spikes_dropped: self.report.spikes_dropped,
            ..TraceReport::default()
        }
    }

    /// Takes the `--on-threshold` firings recorded so far (a monitor stores them with the
    /// snapshot of their interval).
    pub fn take_actions(&mut self) -> Vec<latlab_core::result::trace::Firing> {
        std::mem::take(&mut self.report.actions)
    }

    /// The warning that another process turned tracing off in the instance, once, when first
    /// seen (a monitor says it in the snapshot of that interval).
    pub fn untraced_news(&mut self) -> Option<String> {
        self.tamper.news()
    }

    /// Per traced CPU: (cpu, events read, events lost, unreadable pages) so far.
    pub fn counts(&self) -> Vec<(usize, u64, u64, u64)> {
        self.rec.counts()
    }

    /// Attributes every pending spike once the reader has read past each of them on its CPU,
    /// waiting for that once for all of them: up to `patience`, or longer while the reader
    /// still makes progress (at most [`SETTLE_MAX`]). A reader that is behind (starved by
    /// spinners, or slow on a slow machine) would otherwise give spikes windows without their
    /// events. Spikes attributed while it was still behind are counted (`spikes_unread`).
    pub fn settle(&mut self, patience: Duration) {
        let mut upto: Vec<(usize, u64)> = Vec::new();
        for s in &self.pending {
            match upto.iter_mut().find(|(c, _)| *c == s.cpu as usize) {
                Some(u) => u.1 = u.1.max(s.actual),
                None => upto.push((s.cpu as usize, s.actual)),
            }
        }
        let t0 = std::time::Instant::now();
        let mut progress = (t0, self.rec.watermark());
        while !upto.iter().all(|&(c, t)| self.rec.has_read(c, t)) {
            let now = std::time::Instant::now();
            let mark = self.rec.watermark();
            if mark != progress.1 {
                progress = (now, mark);
            }
            // Past the patience asked for, wait only while the reader moves on.
            let stalled = now.duration_since(progress.0) >= patience;
            if (now.duration_since(t0) >= patience && stalled)
                || now.duration_since(t0) >= SETTLE_MAX
            {
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        for s in std::mem::take(&mut self.pending) {
            if !self.rec.has_read(s.cpu as usize, s.actual) {
                self.report.spikes_unread += 1;
            }
            self.attribute(s, Duration::ZERO);
        }
        self.rec.hold_from(u64::MAX);
    }

    /// Keeps every event from CLOCK_MONOTONIC `ns` on until the next [`Tracer::settle`] has
    /// explained the spikes offered meanwhile (a measurement that offers its spikes only once
    /// it ends: `noise`, whose spinners starve the reader while they run).
    pub fn hold_from(&self, ns: u64) {
        self.rec.hold_from(ns);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attribution_alone_leaves_the_hrtimer_events_off_where_it_can_and_sched_keeps_them() {
        let all: Vec<String> = super::super::tracefs::REQUIRED
            .iter()
            .map(|(s, n)| format!("{s}/{n}"))
            .collect();
        let attribution = enabled_events(all.clone(), &[]);
        assert!(!attribution.iter().any(|e| e == UNREAD), "{attribution:?}");
        // Without the interrupt vectors the hrtimer's start dates the timer.
        assert!(attribution.iter().any(|e| e == TIMER_START));
        assert_eq!(attribution.len(), all.len() - 1);
        assert_eq!(enabled_events(all.clone(), &["sched_wakeup"]), all);
        // With them, the timer interrupt's entry does, and the hrtimer's start is left off.
        let mut x86 = all.clone();
        x86.extend([
            TIMER_VECTOR.to_string(),
            "irq_vectors/local_timer_exit".into(),
        ]);
        let attribution = enabled_events(x86.clone(), &[]);
        assert!(!attribution.iter().any(|e| e == TIMER_START || e == UNREAD));
        assert_eq!(attribution.len(), x86.len() - 2);
        assert_eq!(enabled_events(x86.clone(), &["sched_wakeup"]), x86);
    }
}
