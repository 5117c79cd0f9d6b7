//! `--trace`: why a wake-up was late, from plain kernel tracepoints. A private tracefs instance
//! (`tracefs`), a binary reader of its per-CPU ring-buffer pages (`format`, `page`, `event`)
//! feeding a per-CPU flight recorder (`flight`), and the attribution of every spike over a
//! threshold to IRQs, softirqs, threads and an unattributed rest (`attribute`, `spikes`).
//! `lifecycle` makes sure no instance or mount outlives the process, whatever ends it.

pub mod actions;
pub mod args;
pub(crate) mod attribute;
pub mod bpf;
pub mod dat;
pub mod event;
pub(crate) mod event_log;
pub mod files;
pub(crate) mod flight;
pub mod format;
pub mod groups;
pub(crate) mod host;
pub(crate) mod hw;
pub mod lifecycle;
pub mod orphans;
pub mod page;
pub(crate) mod procs;
pub(crate) mod raw;
pub(crate) mod saving;
pub mod session;
pub mod stacks;
pub(crate) mod tamper;
pub mod tracefs;

/// What the tracing is asked by, for messages: `--trace`, or `latlab sched` (which traces
/// without that flag).
static WHO: std::sync::OnceLock<&'static str> = std::sync::OnceLock::new();

/// What the tracing's messages begin with (`--trace` unless [`set_who`] said otherwise).
pub(crate) fn who() -> &'static str {
    WHO.get().copied().unwrap_or("--trace")
}

/// Names what asks for the tracing, once, before any message (`latlab sched`).
pub fn set_who(who: &'static str) {
    let _ = WHO.set(who);
}

/// A hash map with a fast, fixed hasher, for the tables the replay and attribution look up
/// per event (keys are kernel pids and names, not chosen by an adversary).
pub type FastMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::FixedState>;
