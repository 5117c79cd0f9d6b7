//! `latlab report` and `latlab plot` from their arguments: inputs loaded, the page or chart
//! built by `crate::report`, written atomically.

use crate::cli::{PlotArgs, ReportArgs};
use crate::error::{Error, Result};
use crate::report::{charts, compare, groups, html, load_experiment, load_one, png, PlotKind};
use std::path::Path;

fn write(path: &Path, text: &str, flag: &str) -> Result<()> {
    crate::output::write_atomic(path, text.as_bytes())
        .map_err(|e| Error::Usage(format!("{flag} {}: {e}", path.display())))
}

/// Runs `latlab report`.
pub fn report_cmd(a: &ReportArgs) -> Result<()> {
    if a.inputs.is_empty() && a.experiment.is_none() {
        return Err(Error::Usage(
            "report needs runs (ID, run:ID or FILE.json) or --experiment ID".into(),
        ));
    }
    let mut loaded = Vec::new();
    if let Some(exp) = &a.experiment {
        loaded.extend(load_experiment(exp, a.store.as_deref())?);
    }
    for i in &a.inputs {
        loaded.push(load_one(i, a.store.as_deref())?);
    }
    let gs = groups(&loaded, a.experiment.is_some());
    let (analysis, notes) = compare(&loaded, &gs);
    let page = html::page(
        &loaded,
        &gs,
        a.experiment.as_deref(),
        analysis.as_ref(),
        &notes,
    );
    write(&a.output, &page, "-o")?;
    crate::note!(
        "report of {} run(s) written to {} ({} KiB)",
        loaded.len(),
        a.output.display(),
        page.len().div_ceil(1024)
    );
    Ok(())
}

/// Runs `latlab plot`.
pub fn plot_cmd(a: &PlotArgs) -> Result<()> {
    let l = load_one(&a.input, a.store.as_deref())?;
    let none = |what: &str| Error::Usage(format!("{}: {what}", a.input));
    let svg = match a.kind {
        PlotKind::Hist => {
            charts::histogram(&l.run)
                .ok_or_else(|| none("no histogram to draw"))?
                .0
        }
        PlotKind::Timeline => charts::timeline(&l.run)
            .ok_or_else(|| {
                none("no timeline (a result without one, or a measurement that does not keep one)")
            })?
            .0,
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
            crate::note!("warning: {n}");
        }
        crate::output::write_atomic(p, &png)
            .map_err(|e| Error::Usage(format!("--png {}: {e}", p.display())))?;
    }
    Ok(())
}
