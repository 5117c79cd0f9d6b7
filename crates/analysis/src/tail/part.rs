//! One input's contribution to a tail (its largest samples and what they were taken from) and
//! how contributions combine without inventing samples a truncated list never held.

use latlab_core::stats::evt::Exceedance;

/// Largest samples kept per input: the lowest candidate threshold needs at most 5000 above it.
pub(crate) const KEEP: usize = 5001;

/// How inputs are read.
#[derive(Debug, Clone, Default)]
pub struct ReadOpts {
    /// What every analysis command reads alike (columns, series, store).
    pub read: crate::dataset::ReadOpts,
    /// Treat the samples as independent even when their order is known (no declustering).
    pub no_decluster: bool,
}

/// One input's contribution.
pub(super) struct Part {
    pub(super) top: Vec<Exceedance>,
    pub(super) n: u64,
    pub(super) ordered: bool,
    pub(super) series: u32,
    pub(super) ns: bool,
    pub(super) seconds: Option<f64>,
}

/// The union of lists of largest samples, each `(list, samples it was taken from)`: only the
/// values above the highest floor of a list that is not complete (every list holds all its
/// samples above that), the `KEEP` largest, descending.
pub(super) fn complete_union(lists: Vec<(Vec<Exceedance>, u64)>) -> Vec<Exceedance> {
    let floor = lists
        .iter()
        .filter(|(l, n)| (l.len() as u64) < *n)
        .filter_map(|(l, _)| l.iter().map(|e| e.value).reduce(f64::min))
        .fold(f64::NEG_INFINITY, f64::max);
    let all = lists
        .into_iter()
        .flat_map(|(l, _)| l.into_iter().filter(|e| e.value > floor))
        .collect();
    let mut top = sorted_desc(all);
    top.truncate(KEEP);
    top
}

/// Largest first.
pub(super) fn sorted_desc(mut v: Vec<Exceedance>) -> Vec<Exceedance> {
    v.sort_by(|a, b| b.value.total_cmp(&a.value));
    v
}
