//! `latlab plot`: one chart of a run (histogram, maximum over time, cumulative distribution) as
//! SVG or PNG.

use crate::report::command::{write, write_bytes};
use crate::report::{charts, load_one, png, PlotKind};
use clap::Args;
use latlab_core::error::{Error, Result};
use std::path::PathBuf;

/// Arguments of `latlab plot`.
#[derive(Debug, Args)]
pub struct PlotArgs {
    /// The run: a stored id, run:ID, or a result file (FILE.json).
    #[arg(value_name = "RUN")]
    pub input: String,
    /// The chart.
    #[arg(long, value_enum, default_value = "hist")]
    pub kind: crate::report::PlotKind,
    /// The SVG file to write.
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
    /// A PNG file to write (the same chart at twice its size).
    #[arg(long, value_name = "FILE")]
    pub png: Option<PathBuf>,
    /// The results store a stored run is read from.
    #[arg(long)]
    pub store: Option<String>,
}

impl crate::command::Command for PlotArgs {
    fn run(self, _: &crate::command::Lab) -> Result<()> {
        run(&self)
    }
}

/// Runs `latlab plot`.
fn run(a: &PlotArgs) -> Result<()> {
    let l = load_one(&a.input, a.store.as_deref())?;
    let none = |what: &str| Error::Usage(format!("{}: {what}", a.input));
    let svg = match a.kind {
        PlotKind::Hist => {
            charts::histogram(&l.run)
                .ok_or_else(|| none("no histogram to draw"))?
                .0
        }
        PlotKind::Timeline => crate::report::timecharts::timeline(&l.run)
            .ok_or_else(|| {
                none("no timeline (a result without one, or a measurement that does not keep one)")
            })?
            .0,
        PlotKind::HistLinear => {
            charts::histogram_linear_of_run(&l.run).ok_or_else(|| none("no histogram to draw"))?
        }
        PlotKind::Exceedance => charts::exceedance_of_run(&l.run)
            .ok_or_else(|| none("no latency distribution (ns) to draw"))?,
        PlotKind::Cdf => {
            let unit = l
                .run
                .series
                .first()
                .ok_or_else(|| none("no series"))?
                .unit
                .clone();
            let dists: Vec<(String, charts::Buckets)> = l
                .run
                .series
                .iter()
                .filter(|s| s.unit == unit)
                .take(charts::MAX_LINES)
                .map(|s| (s.name.clone(), charts::merge([s])))
                .collect();
            charts::cdf("Cumulative distribution per series", &dists, &unit)
        }
    };
    if a.svg.is_none() && a.png.is_none() {
        return Err(Error::Usage("plot needs --svg FILE or --png FILE".into()));
    }
    if let Some(p) = &a.svg {
        write(p, &svg, "--svg")?;
    }
    if let Some(p) = &a.png {
        let (png, note) = png::render(&svg, 2.0)?;
        if let Some(n) = note {
            latlab_core::note!("warning: {n}");
        }
        if p.as_os_str() == "-" {
            return Err(Error::Usage(
                "--png -: a PNG is binary; give a file name".into(),
            ));
        }
        write_bytes(p, &png, "--png")?;
    }
    Ok(())
}
