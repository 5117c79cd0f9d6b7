//! What the layers below the table of measurements need to know about a kind of run without
//! naming it: whether higher is better, the metric a plan compares by default, how a run's
//! page draws it. Each measurement declares its facts (`driver::Measurement::FACTS`); the
//! table of measurements answers for a kind (`crate::table::facts`), and the commands hand
//! that answer down (a report's loaded runs, a plan's runner), so no module below the table
//! compares a kind's name.

/// How a run's page draws its series.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Chart {
    /// Bars of each series' percentiles (the default).
    Bars,
    /// The latency histogram (log x).
    Histogram,
    /// Per-CPU noise charts, then the histogram of gaps between loop iterations.
    Gaps,
}

/// The facts of one kind of run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Facts {
    /// Higher values are better (throughput); else lower (latency, cost).
    pub higher_is_better: bool,
    /// The metric a plan compares when its `[analysis]` names none: `p99`, or `latency` (the
    /// runs' whole distributions, for measurements with one figure per repeat).
    pub default_metric: &'static str,
    /// How a run's page draws it.
    pub chart: Chart,
    /// Its series are latency distributions worth overlaying when runs are compared.
    pub distributions: bool,
    /// Caption of the maximum-over-time chart, when the kind's timeline is special.
    pub timeline_caption: Option<&'static str>,
    /// Caption of the histogram, when the kind's samples are not wake-up latencies.
    pub histogram_caption: Option<&'static str>,
    /// Every run of the kind is traced (`sched`): its trace summary is the run's own causes
    /// per CPU, not the optional `--trace` block.
    pub always_traced: bool,
    /// Its runs are the snapshots of one long session (`monitor`): a spike whose trace was
    /// read after its snapshot closed is stored in a later one, and a snapshot keeps only its
    /// worst spikes.
    pub snapshots: bool,
}

impl Facts {
    /// A latency measurement drawn as bars: the facts of any kind that declares nothing else
    /// (and of imported runs of other tools).
    pub const LATENCY: Facts = Facts {
        higher_is_better: false,
        default_metric: "p99",
        chart: Chart::Bars,
        distributions: true,
        timeline_caption: None,
        histogram_caption: None,
        always_traced: false,
        snapshots: false,
    };
}

impl Default for Facts {
    fn default() -> Facts {
        Facts::LATENCY
    }
}

/// Answers the facts of a kind (the table of measurements' `facts`, handed down).
pub type Kinds = fn(&str) -> Facts;
