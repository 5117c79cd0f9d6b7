//! The `latlab tail` command: flags checked, inputs read and estimated by [`super::estimate`],
//! printed; a refusal is exit 4 after its reason is printed.

use super::args::TailArgs;
use super::{Per, ReadOpts, Request};
use latlab_core::error::{Error, Result};

impl crate::command::Command for TailArgs {
    fn run(self, _: &crate::command::Lab) -> Result<()> {
        run(&self)
    }
}

/// Runs `latlab tail`; the answer (or the refusal) goes to stdout first.
fn run(a: &TailArgs) -> Result<()> {
    super::check_probabilities("--at", &a.at)?;
    if !(a.confidence > 0.5 && a.confidence < 1.0) {
        return Err(Error::flag(
            "--confidence",
            a.confidence,
            "must be between 0.5 and 1 (exclusive), e.g. 0.95",
        ));
    }
    if let Some(r) = a.rate {
        if !(r.is_finite() && r > 0.0) {
            return Err(Error::flag("--rate", r, "samples per second, above zero"));
        }
    }
    if a.column == 0 {
        return Err(Error::flag("-C/--column", a.column, "columns count from 1"));
    }
    if a.delimiter.is_empty() {
        return Err(Error::flag(
            "-d/--delimiter",
            "''",
            "the delimiter set cannot be empty",
        ));
    }
    let per = a.per.as_deref().map(Per::parse).transpose()?;
    let opts = ReadOpts {
        read: crate::dataset::ReadOpts {
            column: a.column,
            delim: a.delimiter.as_bytes().to_vec(),
            series: a.series.clone(),
            store: a.store.clone(),
            include_disturbed: a.include_disturbed,
        },
        no_decluster: a.no_decluster,
    };
    let data = super::inputs::load(&a.inputs, &opts)?;
    let req = Request {
        at: a.at.clone(),
        per,
        rate: a.rate,
        config: latlab_core::stats::evt::Config {
            confidence: a.confidence,
            ..Default::default()
        },
    };
    let r = super::estimate(&data, &req)?;
    let out = if a.json {
        super::render::json(&r)
    } else {
        super::render::text(&r, a.unit)
    };
    latlab_core::output::stdout(&out).map_err(|e| Error::io("stdout", e))?;
    match &r.refusal {
        Some(f) => Err(Error::Undecided(format!("tail: no estimate: {}", f.reason))),
        None => Ok(()),
    }
}
