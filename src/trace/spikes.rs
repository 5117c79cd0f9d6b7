//! The tracing session a measurement holds: starts the instance and the flight recorder on
//! the measured CPUs, takes the spikes the measuring threads report (over the threshold),
//! attributes each once the recorder has read past it, and ends with a report for the run's
//! JSON (`trace`) and the "why" summary printed after the table.

use super::attribute::{attribute, Note};
use super::procs::{from_proc, Identity};
pub use super::raw::{RawSpike, SpikeRecord};
use super::recorder::Recorder;
use super::tracefs::{journal_file, TraceFs, PROCS_SUFFIX};
use crate::config::DisplayUnit;
use crate::error::Result;
use serde::{Deserialize, Serialize};
use std::time::Duration;

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
/// Spikes kept as records; beyond, only counted.
const MAX_RECORDS: usize = 10_000;

/// The trace part of a run.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct TraceReport {
    /// Spikes at or above this were attributed (ns).
    pub threshold_ns: u64,
    /// CPUs traced.
    pub cpus: Vec<usize>,
    /// Events decoded.
    pub events: u64,
    /// Events the kernel lost (reader too slow); attribution near them may be incomplete.
    pub lost_events: u64,
    /// What an idle CPU's delay means here.
    pub idle_note: String,
    /// Spikes the threads could not hand over (their ring was full) or beyond the record cap.
    pub spikes_dropped: u64,
    /// Every attributed spike (a monitor snapshot: the interval's worst).
    pub spikes: Vec<SpikeRecord>,
    /// Attributed spikes counted in `per_cpu` but not kept in `spikes` (a monitor snapshot
    /// keeps only its interval's worst).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub spikes_not_kept: u64,
    /// Every `--on-threshold` firing (and `-b`'s saved window), in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub actions: Vec<super::actions::Firing>,
    /// Firings not done because their rule had reached `--on-threshold-max`.
    #[serde(default)]
    pub actions_suppressed: u64,
    /// `shell:` firings not done because `actions::MAX_SHELLS` were still running.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub actions_busy: u64,
    /// Trace windows not saved because `--trace-budget` would have been passed.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub actions_over_budget: u64,
    /// Trace windows not saved, or cut, because the run had ended (signal or `-D`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub actions_after_end: u64,
    /// `shell:` commands still running at the end of the run, killed with their group.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub shells_killed: u64,
    /// Bytes of trace files (`--trace-save`, windows) written in the run.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub bytes_saved: u64,
    /// Per traced CPU: NMIs, SMIs and steal time counted over the run, where readable.
    #[serde(default)]
    pub counted: Vec<super::hw::CpuCounts>,
    /// Whether NMIs were traced (then each spike has `nmis`).
    #[serde(default)]
    pub nmi_traced: bool,
    /// What time nothing visible explains was checked against, and what could not be.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// Per traced CPU: its spikes' causes, thread time grouped by command.
    #[serde(default)]
    pub per_cpu: Vec<super::culprits::CpuCauses>,
    /// False when the kernel has no process events: groups are then process names from
    /// /proc (or the name at switch-in for a task gone by then), without exec chains.
    #[serde(default)]
    pub exec_chains: bool,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// What an idle CPU's unexplained delay means on this machine.
pub fn idle_note() -> String {
    let hv = std::fs::read_to_string("/sys/hypervisor/type")
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty());
    let flag = std::fs::read_to_string("/proc/cpuinfo")
        .map(|c| {
            c.lines()
                .any(|l| l.starts_with("flags") && l.split_whitespace().any(|f| f == "hypervisor"))
        })
        .unwrap_or(false);
    match (hv, flag) {
        (Some(t), _) => format!("nothing visible ran: hypervisor/SMI/NMI (this is a VM: {t})"),
        (None, true) => "nothing visible ran: hypervisor/SMI/NMI (this is a VM)".into(),
        _ => "nothing visible ran: SMI/NMI or idle exit".into(),
    }
}

/// A tracing session.
pub struct Tracer {
    rec: Recorder,
    names: Vec<String>,
    pending: Vec<RawSpike>,
    report: TraceReport,
    spinner: bool,
    save: Option<(std::path::PathBuf, String)>,
    /// Identities of tasks older than the trace, read from /proc while they lived.
    older: std::collections::HashMap<i32, Identity>,
    /// `--trace-save FILE.dat`: where to write the raw pages as a trace.dat.
    dat: Option<std::path::PathBuf>,
    /// Writes trace files within the run's budget and end.
    saver: super::saving::Saver,
    /// `--on-threshold` rules.
    actions: Option<super::actions::Actions>,
    /// `-b`: save the window of the first spike at or above this.
    break_on: Option<u64>,
    /// Windows to save once attributed: (series, seq, rule text).
    windows: Vec<(u32, u64, String)>,
    /// `--trace-stacks`: the kernel's symbols.
    kallsyms: Option<super::stacks::Kallsyms>,
    /// NMI, SMI and steal counters at the start.
    counters: super::hw::Counters,
    /// Counter readings during the run, to check each spike's unexplained time against.
    watch: super::hw::Watch,
}

/// CLOCK_MONOTONIC now (ns).
fn mono_now() -> u64 {
    crate::sys::clock::now_ns(libc::CLOCK_MONOTONIC)
}

/// Steal time's unit in /proc/stat: USER_HZ ticks, 100 per second on Linux.
const STEAL_TICK_NS: u64 = 10_000_000;

impl Tracer {
    /// Traces `cpus` on the system's tracefs (mounting it if needed), for a run whose series
    /// are `names`.
    pub fn start(cpus: &[usize], threshold_ns: u64, names: Vec<String>) -> Result<Tracer> {
        Tracer::start_keeping(cpus, threshold_ns, names, KEEP_NS)
    }

    /// As [`Tracer::start`]; with `stacks` (`--trace-stacks`), the kernel stack at each
    /// wake-up of the measuring threads (`latlab-<name>`) is recorded and attached to spikes.
    pub fn start_stacks(
        cpus: &[usize],
        threshold_ns: u64,
        names: Vec<String>,
        stacks: bool,
    ) -> Result<Tracer> {
        let j = journal_file("");
        let (fs, lease) = TraceFs::system(j.parent().unwrap_or(std::path::Path::new(".")))?;
        let mut t = Tracer::start_in(
            &fs,
            lease,
            Some(j),
            cpus,
            threshold_ns,
            names,
            KEEP_NS,
            stacks,
            &[],
        )?;
        if stacks {
            // Unreadable or hidden symbols: addresses in hex.
            t.kallsyms = Some(
                super::stacks::Kallsyms::load(std::path::Path::new("/proc/kallsyms"))
                    .unwrap_or_default(),
            );
        }
        Ok(t)
    }

    /// As [`Tracer::start`], keeping `keep_ns` of history per CPU (noise attributes after
    /// each measurement, so it keeps a whole one).
    pub fn start_keeping(
        cpus: &[usize],
        threshold_ns: u64,
        names: Vec<String>,
        keep_ns: u64,
    ) -> Result<Tracer> {
        let j = journal_file("");
        let (fs, lease) = TraceFs::system(j.parent().unwrap_or(std::path::Path::new(".")))?;
        Tracer::start_in(
            &fs,
            lease,
            Some(j),
            cpus,
            threshold_ns,
            names,
            keep_ns,
            false,
            &[],
        )
    }

    /// A session for watching any task's scheduling (`latlab sched`): traces every CPU (a
    /// wake-up is recorded on the waker's CPU) with, besides what attribution reads, the
    /// `sched` events `extra` (migrations, exits, forks, execs, new tasks' first wake-ups)
    /// where the kernel has them. Series are named as tasks appear ([`Tracer::add_series`]).
    pub fn start_tasks(cpus: &[usize], threshold_ns: u64, extra: &[&str]) -> Result<Tracer> {
        let j = journal_file("");
        let (fs, lease) = TraceFs::system(j.parent().unwrap_or(std::path::Path::new(".")))?;
        Tracer::start_in(
            &fs,
            lease,
            Some(j),
            cpus,
            threshold_ns,
            Vec::new(),
            KEEP_NS,
            false,
            extra,
        )
    }

    /// As [`Tracer::start`] on a chosen tracefs.
    #[allow(clippy::too_many_arguments)]
    pub fn start_in(
        fs: &TraceFs,
        lease: Option<super::lifecycle::MountLease>,
        journal: Option<std::path::PathBuf>,
        cpus: &[usize],
        threshold_ns: u64,
        names: Vec<String>,
        keep_ns: u64,
        stacks: bool,
        extra: &[&str],
    ) -> Result<Tracer> {
        // On an error the lease drops, and the last user of a mount latlab made unmounts.
        let (header, mut dec, mut events) = fs.layouts()?;
        let proc_events = fs.proc_events(&mut dec)?;
        events.extend(fs.optional_events(&mut dec, "sched", extra)?);
        let procs_journal = journal
            .as_ref()
            .map(|j| j.with_file_name(format!("trace-{}{PROCS_SUFFIX}.json", std::process::id())));
        if stacks {
            fs.stack_event(&mut dec)?;
        }
        let inst = fs.create_instance("", cpus, &events, BUFFER_KB, journal, lease)?;
        if stacks {
            let comms: Vec<String> = names
                .iter()
                .map(|n| format!("latlab-{n}").chars().take(15).collect())
                .collect();
            fs.stack_trigger(&inst, &comms)?;
        }
        let procs = if proc_events.is_empty() {
            None
        } else {
            Some(fs.create_instance(
                PROCS_SUFFIX,
                &[],
                &proc_events,
                PROCS_BUFFER_KB,
                procs_journal,
                None,
            )?)
        };
        let page_size = header.page_size;
        let nmi_traced = events.iter().any(|e| e == "nmi/nmi_handler");
        let rec = Recorder::start(inst, procs, cpus, header, dec, keep_ns)?;
        let roots = super::hw::Roots::default();
        let counters = super::hw::Counters::read(&roots, cpus);
        let watch = super::hw::Watch::new(roots, cpus, &counters, mono_now(), !nmi_traced);
        Ok(Tracer {
            rec,
            names,
            pending: Vec::new(),
            spinner: false,
            save: None,
            older: Default::default(),
            dat: None,
            saver: super::saving::Saver::new(fs.root.clone(), events, page_size),
            actions: None,
            break_on: None,
            windows: Vec::new(),
            kallsyms: None,
            counters,
            watch,
            report: TraceReport {
                threshold_ns,
                cpus: cpus.to_vec(),
                idle_note: idle_note(),
                nmi_traced,
                ..TraceReport::default()
            },
        })
    }

    /// Names one more series (a task that appeared); its index for [`RawSpike::series`].
    pub fn add_series(&mut self, name: String) -> u32 {
        self.names.push(name);
        (self.names.len() - 1) as u32
    }

    /// The flight recorder (its events, read horizon and losses).
    pub fn recorder(&self) -> &Recorder {
        &self.rec
    }

    /// The measuring threads spin (noise): time of theirs inside a gap is unattributed.
    pub fn spinning(mut self) -> Tracer {
        self.spinner = true;
        self
    }

    /// `--trace-save`: keep each spike's events as a timeline, written to `path` at the end;
    /// a `.dat` path gets the raw pages instead, as a trace-cmd `trace.dat`.
    pub fn saving(mut self, path: Option<std::path::PathBuf>) -> Tracer {
        match path {
            Some(p) if super::dat::wanted(&p) => {
                self.rec.keep_pages(DAT_BYTES_PER_CPU);
                self.dat = Some(p);
            }
            p => self.save = p.map(|p| (p, String::new())),
        }
        self
    }

    /// `--on-threshold`: `rules` within `limits` (firings per rule, disk budget, the
    /// environment of `shell:` commands); `stop` ends the run.
    pub fn acting(
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

    /// `-b`: save the trace window of the spike that stops the run (the first at or above
    /// `ns`).
    pub fn breaking(mut self, ns: Option<u64>) -> Tracer {
        if ns.is_some() {
            self.rec.keep_pages(DAT_BYTES_PER_CPU);
        }
        self.break_on = ns;
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
        if self.break_on.is_some_and(|b| latency_ns >= b) {
            self.break_on = None;
            self.windows.push((s.series, s.seq, "-b".into()));
        }
        if self.report.spikes.len() + self.pending.len() >= MAX_RECORDS {
            self.report.spikes_dropped += 1;
        } else {
            self.pending.push(s);
        }
    }

    /// Counts spikes a thread could not hand over.
    pub fn dropped(&mut self, n: u64) {
        self.report.spikes_dropped += n;
    }

    /// Attributes the pending spikes the recorder has read past.
    pub fn poll(&mut self) {
        self.watch.tick(mono_now());
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

    fn attribute(&mut self, s: RawSpike, patience: Duration) {
        let cpu = s.cpu as usize;
        let events = self
            .rec
            .window(cpu, s.expected, s.actual, patience)
            .unwrap_or_default();
        let tid = (s.tid > 0).then_some(s.tid);
        let note = Note {
            text: self.report.idle_note.clone(),
            spinner: self.spinner,
        };
        let mut why = attribute(&events, s.expected, s.actual, tid, &note);
        if self.report.nmi_traced {
            let (n, ns) = events
                .iter()
                .filter(|e| e.ts >= s.expected && e.ts <= s.actual)
                .filter_map(|e| match e.kind {
                    super::event::Kind::Nmi { delta_ns } => Some(delta_ns),
                    _ => None,
                })
                .fold((0u32, 0u64), |(n, t), d| (n + 1, t + d));
            why.nmis = Some(n);
            why.nmi_ns = Some(ns);
        }
        if let Some(k) = &self.kallsyms {
            why.stack = why.stack_addrs.iter().map(|&a| k.name(a)).collect();
        }
        // Time nothing visible explains: checked against the counters read around it.
        let residual: u64 = why
            .components
            .iter()
            .filter(|c| c.kind == "idle" || c.kind == "unattributed")
            .map(|c| c.ns)
            .sum();
        if residual > 0 {
            why.residual = Some(self.watch.residual(
                cpu,
                (s.expected, s.actual),
                residual,
                why.nmis.zip(why.nmi_ns),
                STEAL_TICK_NS,
                mono_now(),
            ));
        }
        // A task older than the trace is named from /proc now, while it may still exist.
        for t in why.components.iter().filter_map(|c| c.task.as_ref()) {
            if self.rec.identity(t.pid).is_none() && !self.older.contains_key(&t.pid) {
                if let Some(id) = from_proc(std::path::Path::new("/proc"), t.pid) {
                    self.older.insert(t.pid, id);
                }
            }
        }
        let series = self
            .names
            .get(s.series as usize)
            .cloned()
            .unwrap_or_default();
        if let Some((_, text)) = self.save.as_mut() {
            text.push_str(&super::timeline::render(&series, cpu, &s, &why, &events));
        }
        let due: Vec<String> = self
            .windows
            .iter()
            .filter(|w| w.0 == s.series && w.1 == s.seq)
            .map(|w| w.2.clone())
            .collect();
        if !due.is_empty() {
            self.windows.retain(|w| !(w.0 == s.series && w.1 == s.seq));
            let outcome = self.save_window(&s);
            for rule in due {
                self.report.actions.push(super::actions::Firing {
                    rule,
                    series: series.clone(),
                    cpu,
                    seq: s.seq,
                    latency_ns: s.actual.saturating_sub(s.expected),
                    outcome: outcome.clone(),
                });
            }
        }
        self.report.spikes.push(SpikeRecord {
            series,
            cpu,
            seq: s.seq,
            expected_ns: s.expected,
            latency_ns: s.actual.saturating_sub(s.expected),
            why,
        });
    }

    /// Writes the window of spike `s` (every traced CPU, from [`WINDOW_LEAD_NS`] before the
    /// expected wake-up to the actual one) as a trace.dat beside `--trace-save` (or in the
    /// current directory): `<name>-spike-<n>.dat`, within the run's budget and end. Returns
    /// the outcome to record.
    fn save_window(&mut self, s: &RawSpike) -> String {
        let base = match (&self.dat, &self.save) {
            (Some(p), _) | (None, Some((p, _))) => p.with_extension(""),
            _ => std::path::PathBuf::from(format!("latlab-{}", std::process::id())),
        };
        if self.saver.past_end() {
            return self.saver.window(&base, Vec::new());
        }
        let pages = self
            .rec
            .pages_between(s.expected.saturating_sub(WINDOW_LEAD_NS), s.actual);
        self.saver.window(&base, pages)
    }

    /// Names the command group and exec chain of every thread component of `spikes`.
    fn name_groups(&self, spikes: &mut [SpikeRecord]) {
        for c in spikes.iter_mut().flat_map(|s| s.why.components.iter_mut()) {
            let Some(t) = &c.task else { continue };
            let id = self
                .rec
                .identity(t.pid)
                .or_else(|| self.older.get(&t.pid).cloned())
                .unwrap_or_else(|| Identity {
                    group: t.comm.clone(),
                    chain: vec![t.comm.clone()],
                });
            c.group = Some(id.group);
            c.chain = id.chain;
        }
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
        done.sort_by_key(|s| (s.expected_ns, s.cpu));
        self.name_groups(&mut done);
        let needed: std::collections::HashSet<i32> = self
            .report
            .spikes
            .iter()
            .flat_map(|s| &s.why.components)
            .filter_map(|c| c.task.as_ref().map(|t| t.pid))
            .collect();
        self.older.retain(|pid, _| needed.contains(pid));
        done
    }

    /// The report's fixed part (threshold, CPUs, what idle means, whether NMIs and execs are
    /// traced), without spikes or counts: what each monitor snapshot's `trace` starts from.
    pub fn header(&self) -> TraceReport {
        TraceReport {
            threshold_ns: self.report.threshold_ns,
            cpus: self.report.cpus.clone(),
            idle_note: self.report.idle_note.clone(),
            nmi_traced: self.report.nmi_traced,
            exec_chains: self.rec.names_commands(),
            ..TraceReport::default()
        }
    }

    /// Takes the `--on-threshold` firings recorded so far (a monitor stores them with the
    /// snapshot of their interval).
    pub fn take_actions(&mut self) -> Vec<super::actions::Firing> {
        std::mem::take(&mut self.report.actions)
    }

    /// Per traced CPU: (cpu, events read, events lost, unreadable pages) so far.
    pub fn counts(&self) -> Vec<(usize, u64, u64, u64)> {
        self.rec.counts()
    }

    /// Attributes every pending spike, waiting up to `patience` each for the reader.
    pub fn settle(&mut self, patience: Duration) {
        for s in std::mem::take(&mut self.pending) {
            self.attribute(s, patience);
        }
    }

    /// Stops tracing (after the measuring threads ended), attributes what is left, removes
    /// the instance and returns the report.
    pub fn finish(mut self) -> TraceReport {
        // Tests widen the window in which a second Ctrl-C finds the instance alive.
        if let Some(ms) = std::env::var("LATLAB_TEST_TRACE_FINISH_DELAY_MS")
            .ok()
            .and_then(|v| v.parse::<u64>().ok())
        {
            std::thread::sleep(Duration::from_millis(ms));
        }
        self.rec.stop();
        for s in std::mem::take(&mut self.pending) {
            self.attribute(s, Duration::ZERO);
        }
        if let Some(a) = self.actions.as_mut() {
            a.finish();
            self.report.actions_suppressed = a.suppressed;
            self.report.actions_busy = a.busy;
            self.report.shells_killed = a.killed;
        }
        for (_, read, lost, _) in self.rec.counts() {
            self.report.events += read;
            self.report.lost_events += lost;
        }
        self.report.spikes.sort_by_key(|s| (s.expected_ns, s.cpu));
        // Groups once every fork and exec has been read.
        let mut spikes = std::mem::take(&mut self.report.spikes);
        self.name_groups(&mut spikes);
        self.report.spikes = spikes;
        self.report.exec_chains = self.rec.names_commands();
        let now = super::hw::Counters::read(&super::hw::Roots::default(), &self.report.cpus);
        let (counted, mut warn) = self.counters.delta(&now, STEAL_TICK_NS);
        warn.extend(residual_warnings(&self.report.spikes, &self.report.cpus));
        self.report.counted = counted;
        if !self.report.nmi_traced {
            warn.push(
                "--trace: the kernel has no nmi:nmi_handler event: NMIs are counted over the run \
                 (/proc/interrupts), not per spike"
                    .into(),
            );
        }
        self.report.warnings.extend(warn);
        self.report.per_cpu = super::culprits::summarise(&self.report.spikes, &self.report.cpus);
        if let Some(path) = self.dat.take() {
            let pages = self.rec.take_pages();
            self.saver.dat(&path, pages);
        }
        if let Some((path, text)) = self.save.take() {
            self.saver.timeline(&path, &text);
        }
        self.report.actions_over_budget = self.saver.over_budget;
        self.report.actions_after_end = self.saver.after_end;
        self.report.bytes_saved = self.saver.spent();
        if self.saver.over_budget > 0 {
            self.saver.warnings.push(format!(
                "--trace-budget: {} trace windows not saved (the run's trace files would have passed the budget)",
                self.saver.over_budget
            ));
        }
        if self.saver.after_end > 0 {
            self.saver.warnings.push(format!(
                "{} trace windows not saved or cut: the run had ended",
                self.saver.after_end
            ));
        }
        if self.report.actions_busy > 0 {
            self.saver.warnings.push(format!(
                "--on-threshold: {} shell: firings not started ({} were still running)",
                self.report.actions_busy,
                super::actions::MAX_SHELLS
            ));
        }
        if self.report.shells_killed > 0 {
            self.saver.warnings.push(format!(
                "--on-threshold: {} shell: commands still running at the end were killed",
                self.report.shells_killed
            ));
        }
        let w = std::mem::take(&mut self.saver.warnings);
        self.report.warnings.extend(w);
        self.report
    }
}

/// Per CPU whose spikes have time nothing visible explains: how much, what it was checked
/// against and what could not be measured (a warning, so it is never silent).
pub fn residual_warnings(spikes: &[SpikeRecord], cpus: &[usize]) -> Vec<String> {
    let mut out = Vec::new();
    for &cpu in cpus {
        let rs: Vec<&super::hw::Residual> = spikes
            .iter()
            .filter(|s| s.cpu == cpu)
            .filter_map(|s| s.why.residual.as_ref())
            .collect();
        if rs.is_empty() {
            continue;
        }
        let ns: u64 = rs.iter().map(|r| r.ns).sum();
        let sources = |f: fn(&super::hw::Residual) -> &Vec<String>| {
            let mut v: Vec<String> = rs
                .iter()
                .flat_map(|r| f(r).iter())
                .map(|m| m.split(':').next().unwrap_or("").to_string())
                .collect();
            v.sort();
            v.dedup();
            v
        };
        let measured = sources(|r| &r.measured);
        let mut unmeasured: Vec<String> = rs
            .iter()
            .flat_map(|r| r.unmeasured.iter().cloned())
            .collect();
        unmeasured.sort();
        unmeasured.dedup();
        let mut w = format!(
            "--trace: {} spikes on CPU {cpu} hold {:.1} us nothing visible explains; checked against {} around each",
            rs.len(),
            ns as f64 / 1e3,
            if measured.is_empty() {
                "nothing".to_string()
            } else {
                measured.join(", ")
            }
        );
        if !unmeasured.is_empty() {
            w.push_str(&format!("; not measured: {}", unmeasured.join("; ")));
        }
        let smis: u64 = rs.iter().filter_map(|r| r.smis).sum();
        let nmis: u64 = rs.iter().filter_map(|r| r.nmis_around).sum();
        let steal: u64 = rs.iter().filter_map(|r| r.steal_ns).sum();
        if smis + nmis + steal > 0 {
            w.push_str(&format!(
                " (around them: {smis} SMIs, {nmis} NMIs, {:.1} us steal)",
                steal as f64 / 1e3
            ));
        }
        out.push(w);
    }
    out
}

/// The "why" summary: per CPU, the spikes and what held most of their late time.
pub fn why(r: &TraceReport, unit: DisplayUnit) -> String {
    let mut s = format!(
        "why (--trace, spikes >= {} {unit}; {} events read, {} lost):\n",
        unit.fmt_ns(r.threshold_ns as f64),
        r.events,
        r.lost_events
    );
    // A run stored before per-CPU causes were recorded: summed now.
    let per = if r.per_cpu.is_empty() {
        super::culprits::summarise(&r.spikes, &r.cpus)
    } else {
        r.per_cpu.clone()
    };
    for c in &per {
        if c.spikes == 0 {
            s.push_str(&format!("  CPU {}: no spikes\n", c.cpu));
            continue;
        }
        let causes: Vec<String> = c
            .causes
            .iter()
            .take(3)
            .map(|k| format!("{:.0} % {}", 100.0 * k.share, super::culprits::phrase(k)))
            .collect();
        s.push_str(&format!(
            "  CPU {}: {} spikes, max {} {unit}; of late time: {}\n",
            c.cpu,
            c.spikes,
            unit.fmt_ns(c.max_ns as f64),
            causes.join(", ")
        ));
    }
    if let Some(w) = r
        .spikes
        .iter()
        .filter(|x| !x.why.stack.is_empty())
        .max_by_key(|x| x.latency_ns)
    {
        s.push_str(&format!(
            "  worst spike's kernel stack (CPU {}, {} {unit}, at the wake-up):\n",
            w.cpu,
            unit.fmt_ns(w.latency_ns as f64)
        ));
        for f in &w.why.stack {
            s.push_str(&format!("      {f}\n"));
        }
    }
    if let Some(w) = r
        .spikes
        .iter()
        .filter(|x| x.why.residual.is_some())
        .max_by_key(|x| x.latency_ns)
    {
        if let Some(res) = &w.why.residual {
            s.push_str(&format!(
                "  worst spike with unexplained time (CPU {}, {} {unit}): {}\n",
                w.cpu,
                unit.fmt_ns(w.latency_ns as f64),
                res.phrase()
            ));
        }
    }
    let hidden: Vec<String> = r
        .counted
        .iter()
        .map(|c| {
            let nmi_spikes: u32 = r
                .spikes
                .iter()
                .filter(|s| s.cpu == c.cpu)
                .filter_map(|s| s.why.nmis)
                .sum();
            let mut parts = Vec::new();
            if r.nmi_traced {
                parts.push(format!("{nmi_spikes} NMIs in spikes"));
            } else if let Some(n) = c.nmis {
                parts.push(format!("{n} NMIs in the run"));
            }
            if let Some(n) = c.smis {
                parts.push(format!("{n} SMIs"));
            }
            if let Some(n) = c.steal_ns {
                parts.push(format!("steal {} {unit}", unit.fmt_ns(n as f64)));
            }
            format!("CPU {}: {}", c.cpu, parts.join(", "))
        })
        .collect();
    if !hidden.is_empty() {
        s.push_str(&format!("  counted: {}\n", hidden.join("; ")));
    }
    for w in &r.warnings {
        s.push_str(&format!("  {w}\n"));
    }
    if r.spikes_dropped > 0 {
        s.push_str(&format!(
            "  {} spikes not attributed (too many to keep)\n",
            r.spikes_dropped
        ));
    }
    if r.lost_events > 0 {
        s.push_str("  the kernel lost trace events: spikes near them may be misattributed\n");
    }
    s
}
