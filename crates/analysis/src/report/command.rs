//! `latlab report` (also `--fleet`) from its arguments: inputs loaded, the page built by
//! [`crate::report`], written atomically.

use super::args::ReportArgs;
use super::{compare, fleet, html, load_groups};
use crate::command::Lab;
use crate::dataset::select;
use crate::since::parse_since;
use latlab_core::error::{Error, Result};
use std::path::Path;

/// Writes `bytes` to `path` (`-`: stdout): a path that cannot take a file is bad usage (exit 2,
/// naming the flag); a write that fails on a good path is the machine's (exit 3).
pub(crate) fn write_bytes(path: &Path, bytes: &[u8], flag: &str) -> Result<()> {
    if path.as_os_str() == "-" {
        let text = String::from_utf8_lossy(bytes);
        return latlab_core::output::stdout(&text).map_err(|e| Error::io("stdout", e));
    }
    latlab_core::output::check_writable(path)
        .map_err(|e| Error::Usage(format!("{flag} {}: {e}", path.display())))?;
    latlab_core::output::write_atomic(path, bytes)
        .map_err(|e| Error::io(format!("{flag} {}", path.display()), e))
}

/// [`write_bytes`] of a text.
pub(crate) fn write(path: &Path, text: &str, flag: &str) -> Result<()> {
    write_bytes(path, text.as_bytes(), flag)
}

impl crate::command::Command for ReportArgs {
    fn run(self, lab: &Lab) -> Result<()> {
        run(&self, lab)
    }
}

/// Runs `latlab report`.
fn run(a: &ReportArgs, lab: &Lab) -> Result<()> {
    if a.fleet {
        return fleet_cmd(a, lab);
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
    super::know_kinds(&mut loaded, lab.facts);
    // One qualification's final result: its own page (verdict first, OSADL's histograms).
    if let [one] = loaded.as_slice() {
        if one
            .run
            .qualification
            .as_ref()
            .is_some_and(|q| q.interval.is_none())
        {
            let page = crate::report::qualify::page(&one.run);
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
        a.hist == crate::report::HistMode::Linear,
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
fn fleet_cmd(a: &ReportArgs, lab: &Lab) -> Result<()> {
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
        kind: lab.snapshots(),
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
