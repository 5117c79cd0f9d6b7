//! The trace part of a run (`Run::trace`): what `--trace` found, as data. The tracing session
//! (`latlab_trace`) fills it; reports and renderers read it; the result model needs nothing
//! else of tracing.

use serde::{Deserialize, Serialize};

/// The trace part of a run.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct TraceReport {
    /// Spikes at or above this were attributed (ns).
    pub threshold_ns: u64,
    /// CPUs traced.
    pub cpus: Vec<usize>,
    /// Which flight recorder ran: `bpf` (the in-kernel one) or `tracefs` (absent in runs
    /// made before there was a choice: tracefs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine: Option<String>,
    /// Events decoded.
    pub events: u64,
    /// Events the kernel lost (reader too slow); attribution near them may be incomplete.
    pub lost_events: u64,
    /// What an idle CPU's delay means here.
    pub idle_note: String,
    /// Spikes not in `spikes`: the threads could not hand them over (their ring was full), or
    /// they were not among the worst 10 000 (only those are kept and attributed).
    pub spikes_dropped: u64,
    /// Every attributed spike (a monitor snapshot: the interval's worst).
    pub spikes: Vec<SpikeRecord>,
    /// Spikes attributed before the reader had read their CPU's events that far (it was still
    /// behind when the wait for it ended): their windows may lack events.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub spikes_unread: u64,
    /// Attributed spikes counted in `per_cpu` but not kept in `spikes` (a monitor snapshot
    /// keeps only its interval's worst).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub spikes_not_kept: u64,
    /// Every `--on-threshold` firing (and `-b`'s saved window), in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub actions: Vec<Firing>,
    /// Firings not done because their rule had reached `--on-threshold-max`.
    #[serde(default)]
    pub actions_suppressed: u64,
    /// `shell:` firings not done because `trace::actions::MAX_SHELLS` were still running.
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
    pub counted: Vec<CpuCounts>,
    /// Whether NMIs were traced (then each spike has `nmis`).
    #[serde(default)]
    pub nmi_traced: bool,
    /// What time nothing visible explains was checked against, and what could not be.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// Per traced CPU: its spikes' causes, thread time grouped by command.
    #[serde(default)]
    pub per_cpu: Vec<CpuCauses>,
    /// False when the kernel has no process events: groups are then process names from
    /// /proc (or the name at switch-in for a task gone by then), without exec chains.
    #[serde(default)]
    pub exec_chains: bool,
    /// The hypervisor this guest runs under (`KVM`, ...; `VM` when unnamed); absent on bare
    /// metal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hypervisor: Option<String>,
    /// Steal's resolution (ns): /proc/stat counts USER_HZ ticks (10 ms). Absent where steal
    /// was not read (bare metal).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steal_tick_ns: Option<u64>,
    /// Seconds into the trace after which its events are missing: another process turned
    /// tracing off in latlab's instance (`trace-cmd reset`); absent when none did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub untraced_after_s: Option<f64>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// A late timer interrupt (`timer`): the hrtimer had not fired while a task ran, so
/// interrupts were off or the virtual CPU was not running; never the running task's doing.
pub const IRQS_OFF_OR_HOST: &str = "interrupts off or host";
/// A late timer interrupt the steal counted around it covers (`host`): the hypervisor ran
/// something else on this virtual CPU.
pub const HOST_STEAL: &str = "host (steal)";

/// Every cause kind (a component's or a cause's `kind`, the monitor's `cause` label) with the
/// name the text, the report and the metrics' help give it.
pub(crate) const CAUSE_NAMES: &[(&str, &str)] = &[
    ("thread", "another thread"),
    ("irq", "IRQ"),
    ("softirq", "softirq"),
    ("timer", IRQS_OFF_OR_HOST),
    ("host", HOST_STEAL),
    ("idle", "nothing visible ran"),
    ("unattributed", "unattributed"),
    ("self", "the measured thread"),
    ("unknown", "not covered by the trace"),
];

/// The name of cause kind `kind` (the kind itself when unknown).
pub fn cause_name(kind: &str) -> &str {
    CAUSE_NAMES
        .iter()
        .find(|k| k.0 == kind)
        .map_or(kind, |k| k.1)
}

/// Steal at its real resolution: `0 ticks (under 10 ms)`, `1 tick (10 ms)`, `6 ticks
/// (60 ms)`, for ticks of `tick_ns`.
pub fn steal_text(ticks: u64, tick_ns: u64) -> String {
    let ms = tick_ns / 1_000_000;
    match ticks {
        0 => format!("0 ticks (under {ms} ms)"),
        1 => format!("1 tick ({ms} ms)"),
        n => format!("{n} ticks ({} ms)", n * ms),
    }
}

/// Steal counted on a CPU around a spike.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct StealAround {
    /// Steal ticks (`TraceReport::steal_tick_ns` each) between the readings around it.
    pub ticks: u64,
    /// From the last reading before the spike to the first after it (ns).
    pub span_ns: u64,
}

/// One attributed spike in the run's JSON.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SpikeRecord {
    /// Series name.
    pub series: String,
    /// CPU.
    pub cpu: usize,
    /// Loop (cyclic) or interruption (noise) number.
    pub seq: u64,
    /// Expected wake-up, CLOCK_MONOTONIC ns.
    pub expected_ns: u64,
    /// Latency as the measurement saw it, ns.
    pub latency_ns: u64,
    /// Why.
    #[serde(flatten)]
    pub why: Attribution,
}

/// One share of a spike's latency.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Component {
    /// `irq`, `softirq`, `thread`, `self` (the measured thread), `idle`, `timer` (the timer
    /// IRQ had not come yet while a task ran: "interrupts off or host"), `host` (the same,
    /// covered by the steal counted around it: "host (steal)"), `unattributed` (a spinner
    /// interrupted by nothing visible) or `unknown` (not covered by the trace).
    pub kind: String,
    /// What: `local_timer`, `virtio0 (irq 25)`, `NET_RX`, `inject:4242 RT 99`, ...
    pub name: String,
    /// Nanoseconds of the latency it held the CPU.
    pub ns: u64,
    /// Share of the latency, 0..1.
    pub share: f64,
    /// For `thread`: the task, with the kernel priority it ran at here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<TaskRef>,
    /// For `thread`: the command it belongs to (see `procs`), once known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<std::sync::Arc<str>>,
    /// For `thread`: the group's exec chain, newest first (shared by the components of one
    /// task: a run names the same tasks in thousands of spikes).
    #[serde(default, skip_serializing_if = "no_chain")]
    pub chain: std::sync::Arc<[String]>,
    /// For `thread`: how many threads of one command name this component sums (those beyond
    /// a spike's 16 largest threads); `task` is the largest of them. 0: one thread.
    #[serde(default, skip_serializing_if = "is_zero_u32")]
    pub folded: u32,
}

fn no_chain(c: &std::sync::Arc<[String]>) -> bool {
    c.is_empty()
}

fn is_zero_u32(n: &u32) -> bool {
    *n == 0
}

/// A task that held the CPU.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskRef {
    /// Thread id.
    pub pid: i32,
    /// Its name then.
    pub comm: String,
    /// Kernel priority in force (0..99: real-time priority 99 - prio; 100..139: normal;
    /// negative: deadline).
    pub prio: i32,
}

/// The policy a kernel priority means: `RT 99`, `DL`, or `normal`.
pub fn policy_label(prio: i32) -> String {
    match prio {
        p if p < 0 => "DL".into(),
        p if p < 100 => format!("RT {}", 99 - p),
        _ => "normal".into(),
    }
}

/// The attribution of one spike.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Attribution {
    /// Components, largest first; their `ns` add up to the latency.
    pub components: Vec<Component>,
    /// What ran on the CPU when the wake-up was due (`idle` when nothing did).
    pub blocking: Option<String>,
    /// Expected wake-up to the timer that woke the thread: its interrupt's entry where the
    /// interrupt vectors are traced (x86), else the start of its hrtimer callback.
    pub timer_delay_ns: Option<u64>,
    /// Expected wake-up to the thread's switch-in.
    pub switch_in_ns: Option<u64>,
    /// `--trace-stacks`: the kernel stack of what the CPU ran when the thread was woken
    /// (innermost first), symbolised.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stack: Vec<String>,
    /// The same stack's return addresses (symbolised into `stack`).
    #[serde(skip)]
    pub stack_addrs: Vec<u64>,
    /// NMIs handled on the CPU during the spike (None: the kernel has no `nmi_handler`
    /// event, so they were not counted per spike).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nmis: Option<u32>,
    /// Time in those NMI handlers (ns).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nmi_ns: Option<u64>,
    /// Caveats about this spike's attribution.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// For time nothing visible explains (`idle`, `unattributed`): what it was checked
    /// against (NMIs, steal, SMIs) and what could not be measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub residual: Option<Residual>,
    /// On a VM, for a spike with a late timer: the steal counted around it (what decided
    /// between `timer` and `host`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steal: Option<StealAround>,
    /// `latlab timerlat`: the kernel's own split of the sample (its timerlat tracer and
    /// osnoise accounting), as rtla's auto-analysis gives it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_split: Option<KernelSplit>,
}

/// The kernel's split of one timerlat sample: the timer interrupt's latency, then the time
/// until the timerlat thread ran, and what the kernel accounted in between.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct KernelSplit {
    /// The timer's expiry to its IRQ handler (the IRQ sample), ns; None when that sample
    /// was not read.
    pub irq_latency_ns: Option<u64>,
    /// The timer's expiry to the thread running (the thread sample), ns.
    pub thread_latency_ns: u64,
    /// The IRQ handler to the thread running, ns (thread latency less IRQ latency).
    pub thread_delay_ns: Option<u64>,
    /// What ran when the timer expired (rtla's blocking thread): `comm:pid RT 95`, `idle`.
    pub blocking: Option<String>,
    /// Time the kernel accounted to hardware interrupts in the window, ns.
    pub irq_ns: u64,
    /// To softirqs, ns.
    pub softirq_ns: u64,
    /// To NMIs, ns.
    pub nmi_ns: u64,
    /// To other threads (blocking and preempting ones), ns.
    pub thread_ns: u64,
}

impl KernelSplit {
    /// The split in one line: `kernel: IRQ latency 12.0 us, thread delay 30000.1 us after it;
    /// blocking thread python3:1234 RT 95`.
    pub fn phrase(&self) -> String {
        let us = |ns: u64| format!("{:.1} us", ns as f64 / 1000.0);
        let mut t = match (self.irq_latency_ns, self.thread_delay_ns) {
            (Some(i), Some(d)) => {
                format!(
                    "kernel: IRQ latency {}, thread delay {} after it",
                    us(i),
                    us(d)
                )
            }
            _ => format!("kernel: thread latency {}", us(self.thread_latency_ns)),
        };
        if let Some(b) = &self.blocking {
            t.push_str(&format!("; blocking thread {b}"));
        }
        t
    }
}

/// What was counted on one traced CPU during the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CpuCounts {
    /// CPU.
    pub cpu: usize,
    /// NMIs during the run (/proc/interrupts), if readable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nmis: Option<u64>,
    /// SMIs during the run (MSR 0x34), if readable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub smis: Option<u64>,
    /// Time the hypervisor ran something else on this vCPU (/proc/stat steal), ns: a whole
    /// number of `steal_ticks`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steal_ns: Option<u64>,
    /// The same in /proc/stat's ticks (`TraceReport::steal_tick_ns` each).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steal_ticks: Option<u64>,
}

/// What a spike's time that nothing visible explains was checked against: the counters read
/// around it, and what could not be read (said, not left out).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Residual {
    /// Time nothing visible explains (ns): the spike's `idle` and `unattributed` components.
    pub ns: u64,
    /// What was measured, a phrase each (`NMIs: 0 in the spike (nmi_handler events)`).
    pub measured: Vec<String>,
    /// What could not be measured, and why (`SMIs: /dev/cpu/1/msr: No such file or
    /// directory`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unmeasured: Vec<String>,
    /// Steal time on the CPU (ns) over `around_ns`, when readable: `steal_ticks` ticks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steal_ns: Option<u64>,
    /// The same in /proc/stat's ticks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steal_ticks: Option<u64>,
    /// NMIs on the CPU over `around_ns` (/proc/interrupts), where the kernel has no
    /// `nmi_handler` event (else the spike's `nmis` counts them exactly).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nmis_around: Option<u64>,
    /// The stretch NMIs were counted over (ns): from the last counter reading before the spike
    /// to the first after it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub around_ns: Option<u64>,
    /// The stretch steal was counted over (ns), the same way.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steal_around_ns: Option<u64>,
    /// SMIs on the CPU over `smi_around_ns` (MSR 0x34), when readable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub smis: Option<u64>,
    /// The stretch SMIs were counted over (ns): from the previous reading of the MSR to the
    /// one taken when the spike was attributed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub smi_around_ns: Option<u64>,
}

impl Residual {
    /// One line: what was measured around it (what could not be is said once per run, among
    /// the run's warnings, not per spike).
    pub fn phrase(&self) -> String {
        format!(
            "{:.1} us nothing visible explains; measured: {}",
            self.ns as f64 / 1e3,
            if self.measured.is_empty() {
                "nothing".to_string()
            } else {
                self.measured.join(", ")
            }
        )
    }
}

/// One task of a culprit group.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Member {
    /// Thread id.
    pub pid: i32,
    /// Its name at switch-in (the last seen).
    pub comm: String,
    /// The policy it held the CPU at longest (`RT 99`, `normal`, `DL`).
    pub policy: String,
    /// Late time it held (ns).
    pub ns: u64,
}

/// One cause of late time on a CPU.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cause {
    /// `thread`, `irq`, `softirq`, `timer`, `idle`, `self`, `unattributed`, `unknown`.
    pub kind: String,
    /// The command group for `thread`, else the component's name.
    pub name: String,
    /// For `thread`: the exec chain that held the most time, newest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub chain: Vec<String>,
    /// For `thread`: the policy in force for most of the group's time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<String>,
    /// Late time (ns) summed over the CPU's spikes.
    pub ns: u64,
    /// Share of the CPU's late time, 0..1.
    pub share: f64,
    /// For `thread`: its tasks, most time first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub members: Vec<Member>,
}

/// The causes of one CPU's spikes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CpuCauses {
    /// CPU.
    pub cpu: usize,
    /// Spikes on it.
    pub spikes: u64,
    /// Their summed latency (ns).
    pub late_ns: u64,
    /// The largest (ns).
    pub max_ns: u64,
    /// Causes, most time first.
    pub causes: Vec<Cause>,
}

/// One firing, as recorded in the result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Firing {
    /// The rule's `--on-threshold` text.
    pub rule: String,
    /// Series (thread) of the spike.
    pub series: String,
    /// CPU.
    pub cpu: usize,
    /// Loop or interruption number.
    pub seq: u64,
    /// The spike's latency (ns).
    pub latency_ns: u64,
    /// What happened: `started pid N`, `sent signal S to N`, `stopped the run`, `saved FILE`,
    /// or the error.
    pub outcome: String,
}
