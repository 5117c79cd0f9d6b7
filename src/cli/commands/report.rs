//! `latlab report` (also `--fleet`) and `latlab plot` from their arguments: inputs loaded, the
//! page or chart built by `latlab_analysis::report`, written atomically.

use super::since::parse_since;
use crate::cli::{PlotArgs, ReportArgs};
use latlab_analysis::compare::select;
use latlab_analysis::report::{charts, compare, fleet, html, load_groups, load_one, png, PlotKind};
use latlab_core::error::{Error, Result};
use std::path::Path;

/// Writes `bytes` to `path` (`-`: stdout): a path that cannot take a file is bad usage (exit 2,
/// naming the flag); a write that fails on a good path is the machine's (exit 3).
fn write_bytes(path: &Path, bytes: &[u8], flag: &str) -> Result<()> {
    if path.as_os_str() == "-" {
        let text = String::from_utf8_lossy(bytes);
        return latlab_core::output::stdout(&text).map_err(|e| Error::io("stdout", e));
    }
    latlab_core::output::check_writable(path)
        .map_err(|e| Error::Usage(format!("{flag} {}: {e}", path.display())))?;
    latlab_core::output::write_atomic(path, bytes)
        .map_err(|e| Error::io(format!("{flag} {}", path.display()), e))
}

fn write(path: &Path, text: &str, flag: &str) -> Result<()> {
    write_bytes(path, text.as_bytes(), flag)
}

/// Runs `latlab report`.
pub fn report_cmd(a: &ReportArgs) -> Result<()> {
    if a.fleet {
        return fleet_cmd(a);
    }
    if a.inputs.is_empty() && a.experiment.is_none() {
        return Err(Error::Usage(
            "report needs runs (ID, run:ID or FILE.json) or --experiment ID".into(),
        ));
    }
    let (mut loaded, gs, experiment) = load_groups(
        a.experiment.as_deref(),
        &a.inputs,
        a.store.as_deref(),
        a.include_disturbed,
    )?;
    latlab_analysis::report::know_kinds(&mut loaded, crate::table::facts);
    // One qualification's final result: its own page (verdict first, OSADL's histograms).
    if let [one] = loaded.as_slice() {
        if one
            .run
            .qualification
            .as_ref()
            .is_some_and(|q| q.interval.is_none())
        {
            let page = latlab_analysis::report::qualify::page(&one.run);
            write(&a.output, &page, "-o")?;
            latlab_core::note!("qualification report written to {}", a.output.display());
            return Ok(());
        }
    }
    let (analysis, notes) = compare(&loaded, &gs);
    let page = html::page(
        &loaded,
        &gs,
        experiment.as_deref(),
        analysis.as_ref(),
        &notes,
        a.hist == latlab_analysis::report::HistMode::Linear,
    );
    write(&a.output, &page, "-o")?;
    latlab_core::note!(
        "report of {} run(s) written to {} ({} KiB)",
        loaded.len(),
        a.output.display(),
        page.len().div_ceil(1024)
    );
    Ok(())
}

/// The tag filters of `report --fleet` (`tag:K=V[,K=V]`, commas or spaces); anything else is
/// exit 2 naming --fleet.
fn fleet_tags(inputs: &[std::ffi::OsString]) -> Result<Vec<(String, String)>> {
    let items = select::parse(inputs)
        .map_err(|e| Error::Usage(format!("--fleet takes tag filters (tag:KEY=VALUE): {e}")))?;
    let mut tags = Vec::new();
    for item in items {
        match item.sel {
            select::Selector::Tags(t) => tags.extend(t),
            _ => {
                return Err(Error::Usage(format!(
                    "--fleet reads every monitor's snapshots and takes only tag filters \
                     (tag:KEY=VALUE), not '{}'; to show chosen runs, leave --fleet out",
                    item.text
                )))
            }
        }
    }
    Ok(tags)
}

/// Runs `latlab report --fleet`.
fn fleet_cmd(a: &ReportArgs) -> Result<()> {
    let tags = fleet_tags(&a.inputs)?;
    let since = match &a.since {
        Some(v) => parse_since(v)?,
        None => std::time::SystemTime::now()
            .checked_sub(fleet::DEFAULT_SINCE)
            .unwrap_or(std::time::UNIX_EPOCH),
    };
    // A bad -o is refused before the store is read.
    if a.output.as_os_str() != "-" {
        latlab_core::output::check_writable(&a.output)
            .map_err(|e| Error::Usage(format!("-o {}: {e}", a.output.display())))?;
    }
    let f = fleet::load(&fleet::Query {
        kind:
            <latlab_lab::measure::monitor::MonitorConfig as latlab_lab::driver::Measurement>::KIND,
        since,
        tags,
        store: a.store.clone(),
    })?;
    let page = fleet::page::page(&f);
    write(&a.output, &page, "-o")?;
    let differ = f
        .members
        .iter()
        .filter(|m| m.decision.outcome.differs())
        .count();
    latlab_core::note!(
        "fleet report of {} host(s) ({} differ in their last day) written to {} ({} KiB)",
        f.members.len(),
        differ,
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
        PlotKind::Timeline => latlab_analysis::report::timecharts::timeline(&l.run)
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
