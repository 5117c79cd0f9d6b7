//! Comparing data sets: latlab's tail-aware comparison of latency distributions (`inputs` →
//! `analysis` → `render`); ministat's exact output is [`crate::ministat`].

pub mod analysis;
pub mod args;
pub(crate) mod boots;
mod command;
pub(crate) mod conditions;
pub mod decide;
pub mod inputs;
pub mod levels;
pub mod per_run;
pub mod render;
pub mod verdict;

use analysis::{Analysis, Settings};
use inputs::Source;

/// Compares every set with the first, choosing the unit of replication: the run when every set
/// has repeated runs (`per_run`), else the samples (`analysis`), which proves a difference only
/// when samples are assumed independent.
pub fn analyse(sources: &[Source], st: &Settings) -> Analysis {
    let repeated = sources.iter().all(|s| s.runs.len() >= 2);
    if repeated && !st.assume_independent {
        per_run::analyse(sources, st)
    } else {
        analysis::analyse_pooled(sources, st)
    }
}
