//! The files and stored runs a data set is made of, read one way for every analysis command:
//! a selector list becomes inputs (runs, value files, raw sample logs, standard input), each
//! file told by its first bytes, each run counted once; `compare` and `tail` then turn the same
//! inputs into their own data (a distribution, the largest samples).

use super::file::{self, File};
use super::select::{Item, Resolver, Selector};
use latlab_core::error::{Error, Result};
use latlab_core::result::{Run, Series};
use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

/// How inputs are read, the same for every analysis command.
#[derive(Debug, Clone, Default)]
pub struct ReadOpts {
    /// Column of value files (1-based).
    pub column: usize,
    /// Delimiter bytes of value files.
    pub delim: Vec<u8>,
    /// Use only this series of runs and sample logs (None: all, merged).
    pub series: Option<String>,
    /// Store `run:ID` and the other selectors read from.
    pub store: Option<String>,
    /// Keep runs whose ground moved while they measured, and interrupted ones, that a selector
    /// naming several runs would leave out (`--include-disturbed`).
    pub include_disturbed: bool,
}

/// One input, opened.
pub(crate) enum Input {
    /// Standard input: values, one per line.
    Stdin,
    /// A value file: a reader from its start and its size.
    Values {
        name: String,
        reader: Box<dyn Read>,
        size: Option<u64>,
    },
    /// A raw sample log (`--samples`), a reader from its start.
    Log { name: String, reader: Box<dyn Read> },
    /// A latlab run; `dir` is where a file's sample log is looked for besides its own path.
    Run {
        run: Box<Run>,
        name: String,
        dir: Option<PathBuf>,
    },
}

/// Reads selectors into inputs against one store, each run at most once.
pub(crate) struct Reader {
    resolver: Resolver,
    seen: BTreeMap<String, String>,
}

impl Reader {
    /// A reader of the store (and the disturbed-run rule) `o` names.
    pub(crate) fn new(o: &ReadOpts) -> Self {
        Reader {
            resolver: Resolver::new(o.store.as_deref()).include_disturbed(o.include_disturbed),
            seen: BTreeMap::new(),
        }
    }

    /// The inputs `item` names. A file is read as it is (a qualification's final result is one
    /// run here); a bare word that is no file is a missing file, as an analysis command's list
    /// is mostly files.
    pub(crate) fn inputs(&mut self, item: &Item) -> Result<Vec<Input>> {
        match &item.sel {
            Selector::Stdin => Ok(vec![Input::Stdin]),
            Selector::Run(_) if item.bare => {
                Err(Error::Usage(format!("{}: no such file", item.text)))
            }
            Selector::File(p) => {
                let name = p.display().to_string();
                Ok(vec![match file::open(p)? {
                    File::Run(run) => {
                        self.once(&run, &name)?;
                        Input::Run {
                            run,
                            name,
                            dir: p.parent().map(Path::to_path_buf),
                        }
                    }
                    File::Log(reader) => Input::Log { name, reader },
                    File::Values(reader, size) => Input::Values { name, reader, size },
                }])
            }
            _ => {
                let mut out = Vec::new();
                for r in self.resolver.runs(item)? {
                    self.once(&r.run, &r.name)?;
                    out.push(Input::Run {
                        run: Box::new(r.run),
                        name: r.name,
                        dir: None,
                    });
                }
                Ok(out)
            }
        }
    }

    /// Refuses a run seen before: each run is one replicate, and the same run twice (as
    /// `run:ID`, its file or a copy) would count twice.
    pub(crate) fn once(&mut self, run: &Run, name: &str) -> Result<()> {
        match self.seen.insert(run.id.clone(), name.to_string()) {
            Some(first) => Err(Error::Usage(format!(
                "{name} and {first} are the same run ({}): a run counts once",
                run.id
            ))),
            None => Ok(()),
        }
    }
}

/// The values of a value file or standard input in line order (ministat's reading rules),
/// every one finite. A file over `MAX_VALUES_BYTES` (1 GiB) is refused; bytes past it (a file
/// that grows while read) are not read.
pub(crate) fn read_values(
    r: impl Read,
    size: Option<u64>,
    name: &str,
    o: &ReadOpts,
) -> Result<Vec<f64>> {
    use latlab_core::stats::ministat::read::MAX_VALUES_BYTES;
    if let Some(n) = size.filter(|&n| n > MAX_VALUES_BYTES) {
        return Err(Error::Usage(format!(
            "{name}: {n} bytes: a value file is read up to {} MiB",
            MAX_VALUES_BYTES >> 20
        )));
    }
    let r = r.take(MAX_VALUES_BYTES + 1);
    let v = latlab_core::stats::ministat::read::read_in_order(r, size, name, o.column, &o.delim)
        .map_err(|e| {
            Error::Usage(
                e.message()
                    .trim_start_matches("ministat: ")
                    .trim_start_matches("latlab: ")
                    .to_string(),
            )
        })?;
    if let Some(bad) = v.iter().find(|x| !x.is_finite()) {
        return Err(Error::Usage(format!(
            "{name}: value {bad} is not a finite number"
        )));
    }
    Ok(v)
}

/// Standard input's values.
pub(crate) fn read_stdin(o: &ReadOpts) -> Result<Vec<f64>> {
    read_values(std::io::stdin().lock(), None, "<stdin>", o)
}

/// The series of `run` that `want` names (all when None); exit 2 naming the run and the
/// series it has when none is.
pub(crate) fn chosen_series<'r>(
    run: &'r Run,
    want: Option<&str>,
    name: &str,
) -> Result<Vec<&'r Series>> {
    let chosen: Vec<&Series> = run
        .series
        .iter()
        .filter(|s| want.is_none_or(|n| n == s.name))
        .collect();
    if chosen.is_empty() {
        let names: Vec<&str> = run.series.iter().map(|s| s.name.as_str()).collect();
        return Err(no_series(name, want, &names));
    }
    Ok(chosen)
}

/// The error of an input without the series asked for.
pub(crate) fn no_series(name: &str, want: Option<&str>, names: &[impl AsRef<str>]) -> Error {
    let names: Vec<&str> = names.iter().map(AsRef::as_ref).collect();
    Error::Usage(format!(
        "{name}: no series {} (it has: {})",
        want.unwrap_or("at all"),
        names.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_finite_and_kept_in_line_order() {
        let o = ReadOpts {
            column: 1,
            delim: b" \t".to_vec(),
            ..Default::default()
        };
        assert_eq!(
            read_values(&b"3\n1\n2\n"[..], None, "x", &o).unwrap(),
            [3.0, 1.0, 2.0]
        );
        let e = read_values(&b"1\ninf\n"[..], None, "x", &o).err().unwrap();
        assert!(
            e.to_string().contains("line 2 in x: 'inf' is not a finite"),
            "{e}"
        );
    }
}
