//! `latlab samples`: a raw sample log written by `--samples` read back, as a summary per
//! series or as CSV.

use clap::Args;
use latlab_core::config::DisplayUnit;
use latlab_core::error::{Error, Result};
use latlab_core::samples::SampleLog;
use latlab_core::stats::Recorder;
use std::io::Write;
use std::path::PathBuf;
use crate::export::columns;

/// Arguments of `latlab samples`.
#[derive(Debug, Args)]
pub struct SamplesArgs {
    /// The sample log written by `--samples`.
    pub file: PathBuf,
    /// Print every sample as CSV (series,cpu,loop,latency_ns) instead of a summary.
    #[arg(long)]
    pub csv: bool,
    /// Unit for the summary.
    #[arg(long, value_enum, default_value_t = DisplayUnit::Us)]
    pub unit: DisplayUnit,
}

impl crate::command::Command for SamplesArgs {
    fn run(self, _: &crate::command::Lab) -> Result<()> {
        run(&self)
    }
}

/// Runs `latlab samples`: the summary (or CSV) goes to stdout, warnings about a cut log after it.
fn run(a: &SamplesArgs) -> Result<()> {
    let log = SampleLog::read(&a.file)?;
    let out = std::io::stdout();
    let mut o = std::io::BufWriter::new(out.lock());
    let io = |e| Error::io("stdout", e);
    if a.csv {
        if let Some(at) = log.cut_at {
            latlab_core::note!(
                "latlab: warning: {}: cut at byte {at}, inside a block: the complete blocks before it were read",
                a.file.display()
            );
        }
        writeln!(o, "series,cpu,loop,latency_ns").map_err(io)?;
        for (s, v) in log.series.iter().zip(&log.samples) {
            let cpu = s.cpu.map_or(String::new(), |c| c.to_string());
            for (i, x) in v.iter().enumerate() {
                writeln!(o, "{},{cpu},{},{x}", s.name, i + 1).map_err(io)?;
            }
        }
    } else {
        let f = |v: f64| a.unit.fmt_ns(v);
        let rows: Vec<Vec<String>> = log
            .series
            .iter()
            .zip(&log.samples)
            .enumerate()
            .map(|(i, (s, v))| {
                let mut r = Recorder::new();
                v.iter().for_each(|&x| r.record(x));
                let m = r.summary();
                let lost = log.lost.as_ref().map_or("?".into(), |l| l[i].to_string());
                vec![
                    s.name.clone(),
                    s.cpu.map_or("-".into(), |c| c.to_string()),
                    m.count.to_string(),
                    f(m.min_ns as f64),
                    f(m.max_ns as f64),
                    f(m.mean_ns),
                    f(m.stddev_ns),
                    m.percentiles.supported(m.count)[2].map_or("-".to_string(), |p| f(p as f64)),
                    lost,
                ]
            })
            .collect();
        writeln!(o, "latencies in {}", a.unit).map_err(io)?;
        write!(
            o,
            "{}",
            columns::render(
                &["series", "cpu", "count", "min", "max", "average", "sigma", "p99", "lost"],
                &rows
            )
        )
        .map_err(io)?;
        if let Some(at) = log.cut_at {
            writeln!(
                o,
                "warning: {}: cut at byte {at}, inside a block: the complete blocks before it were read, that block's samples were not",
                a.file.display()
            )
            .map_err(io)?;
        } else if log.lost.is_none() {
            writeln!(
                o,
                "warning: {}: no trailer; the log was cut short (all complete blocks were read)",
                a.file.display()
            )
            .map_err(io)?;
        }
    }
    o.flush().map_err(io)
}
