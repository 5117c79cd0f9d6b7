//! Validated values built from raw command-line arguments: CPU sets, policies, times, run plans.

pub mod bounds;
pub(crate) mod cpuset;
pub mod units;
pub mod values;

/// Scheduling policies live with the scheduler calls in `sys`; re-exported for configs.
pub use crate::sys::policy::{self, Policy};
pub use cpuset::CpuSet;
pub use units::{parse_bytes, parse_offset_ns, parse_time_ns, seconds, BareUnit, DisplayUnit};

/// A list given with repeats (`--method pipe,pipe`, `--clocks all,monotonic`) as each item
/// once, in the order first given: one series each, never two of one name.
pub fn distinct<T: PartialEq>(items: Vec<T>) -> Vec<T> {
    let mut out: Vec<T> = Vec::with_capacity(items.len());
    for x in items {
        if !out.contains(&x) {
            out.push(x);
        }
    }
    out
}

/// Whether a measurement's tasks are threads or processes (`--tasks`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TaskKind {
    /// Threads of latlab (shared address space: no TLB flush on a switch).
    Threads,
    /// Forked processes (separate address spaces).
    Processes,
}

#[cfg(test)]
mod tests {
    #[test]
    fn distinct_keeps_each_item_once_in_first_order() {
        assert_eq!(super::distinct(vec![3, 1, 3, 2, 1]), vec![3, 1, 2]);
        assert_eq!(super::distinct(Vec::<u8>::new()), Vec::<u8>::new());
    }
}
