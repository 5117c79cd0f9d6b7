//! What `latlab tail` reads, turned into the upper part of one data set (`evt::Sample`):
//! run selectors and files as `latlab compare` takes them (`crate::dataset::select`), value
//! files in their line order (`latlab_core::stats::ministat`'s reader), and raw sample logs.
//!
//! A run's samples come in order when its raw sample log (`--samples`) is still where the run
//! says and holds every sample its histograms count; then the largest samples keep their
//! positions and bursts can be declustered. Otherwise the run's HDR histograms give the
//! largest samples at their resolution (0.1 %), spread evenly within each bucket, and without
//! an order (see `latlab_core::stats::evt` for what that costs).

use super::from_run;
use super::part::{complete_union, Part};
pub use super::part::ReadOpts;
use super::values;
use crate::dataset::input::{self, Input, Reader};
use crate::dataset::select;
use latlab_core::error::{Error, Result};
use latlab_core::result::Run;
use latlab_core::stats::evt::{Exceedance, Sample};
use std::ffi::OsString;

/// One data set made of all inputs.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// Its upper part.
    pub(crate) sample: Sample,
    /// True when the values are latencies in ns (runs, sample logs); false for value files,
    /// which keep their own unit.
    pub(crate) ns: bool,
    /// Measured time in seconds, when every input is a run.
    pub(crate) seconds: Option<f64>,
    /// The inputs' names.
    pub(crate) names: Vec<String>,
    /// How each input was read (sample order or histograms) and anything worth knowing.
    pub(crate) notes: Vec<String>,
}

/// Loads every input named in `specs` (selectors, result files, value files, sample logs, `-`).
pub fn load(specs: &[OsString], o: &ReadOpts) -> Result<Loaded> {
    let items = select::parse(specs)?;
    if items.is_empty() {
        return Err(Error::Usage(
            "tail needs data: a run, a file or a selector".into(),
        ));
    }
    let mut reader = Reader::new(&o.read);
    let mut parts = Vec::new();
    let mut names = Vec::new();
    let mut notes = Vec::new();
    for item in &items {
        for input in reader.inputs(item)? {
            let (part, name) = match input {
                Input::Stdin => {
                    let v = input::read_stdin(&o.read)?;
                    (values::part(v, o, "<stdin>", &mut notes), "<stdin>".to_string())
                }
                Input::Values { name, reader, size } => {
                    let v = input::read_values(reader, size, &name, &o.read)?;
                    (values::part(v, o, &name, &mut notes), name)
                }
                Input::Log { name, reader } => {
                    let mut r = std::io::BufReader::with_capacity(1 << 20, reader);
                    (from_run::log_part(&mut r, &name, o, &mut notes)?, name)
                }
                Input::Run { run, name, dir } => {
                    let p = from_run::run_part(&run, &name, dir.as_deref(), o, &mut notes)?;
                    (p, name)
                }
            };
            parts.push(part);
            names.push(name);
        }
    }
    merge(parts, names, notes)
}

/// Loads runs already in memory (each with the name messages use), e.g. a report's or a
/// qualification's; their sample logs are looked for where the runs say.
pub fn from_runs(runs: &[(&Run, &str)], o: &ReadOpts) -> Result<Loaded> {
    let mut parts = Vec::new();
    let mut notes = Vec::new();
    for (run, name) in runs {
        parts.push(from_run::run_part(run, name, None, o, &mut notes)?);
    }
    let names = runs.iter().map(|(_, n)| n.to_string()).collect();
    merge(parts, names, notes)
}

/// All parts as one sample: series numbered across parts; values kept where every part is
/// complete (above the highest floor of a truncated part), the `KEEP` largest.
fn merge(parts: Vec<Part>, names: Vec<String>, mut notes: Vec<String>) -> Result<Loaded> {
    if parts.iter().any(|p| p.ns) && parts.iter().any(|p| !p.ns) {
        return Err(Error::Usage(
            "tail: latlab runs (ns) and value files cannot be pooled: give one kind".into(),
        ));
    }
    let ordered = parts.iter().all(|p| p.ordered);
    if !ordered && parts.iter().any(|p| p.ordered) {
        notes.push(
            "some inputs have no sample order: all are taken as independent samples".to_string(),
        );
    }
    let mut lists = Vec::new();
    let mut base = 0u32;
    let mut n = 0u64;
    for p in &parts {
        n = n
            .checked_add(p.n)
            .ok_or_else(|| Error::Usage("tail: sample counts overflow".into()))?;
        let renumbered = p.top.iter().map(|e| Exceedance {
            series: base + e.series,
            ..*e
        });
        lists.push((renumbered.collect(), p.n));
        base = base.saturating_add(p.series);
    }
    let top = complete_union(lists);
    let seconds = parts
        .iter()
        .map(|p| p.seconds)
        .sum::<Option<f64>>()
        .filter(|s| *s > 0.0);
    Ok(Loaded {
        sample: Sample { n, top, ordered },
        ns: parts.first().is_some_and(|p| p.ns),
        seconds,
        names,
        notes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(value: f64, pos: u64) -> Exceedance {
        Exceedance {
            value,
            series: 0,
            pos,
        }
    }

    #[test]
    fn merging_keeps_only_what_every_part_has() {
        let a = Part {
            top: vec![e(10.0, 0), e(8.0, 1)],
            n: 100,
            ordered: true,
            series: 1,
            ns: false,
            seconds: None,
        };
        let b = Part {
            top: vec![e(9.0, 0), e(7.0, 1), e(1.0, 2)],
            n: 3,
            ordered: true,
            series: 1,
            ns: false,
            seconds: None,
        };
        let m = merge(vec![a, b], vec![], vec![]).unwrap();
        let v: Vec<(f64, u32)> = m.sample.top.iter().map(|x| (x.value, x.series)).collect();
        // a is truncated at 8: only values above 8 are complete.
        assert_eq!(v, vec![(10.0, 0), (9.0, 1)]);
        assert_eq!(m.sample.n, 103);
    }
}
