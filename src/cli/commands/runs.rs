//! `latlab runs ...`: list, show, export, import and delete stored runs.

use crate::cli::RunsCmd;
use latlab_analysis::export::columns;
use latlab_analysis::since::parse_since;
use latlab_core::error::{Error, Result};
use latlab_core::store::{
    export, import, open, open_for_reading, parse_tags, Bundle, Filter, BUNDLE_FORMAT,
};

/// Largest bundle `runs import` reads.
pub const MAX_BUNDLE_BYTES: u64 = 256 << 20;

/// Runs one `latlab runs` subcommand.
pub fn run(c: RunsCmd) -> Result<()> {
    match c {
        RunsCmd::List {
            kind,
            tag,
            host,
            since,
            store,
            experiments,
        } => list(
            kind,
            &tag,
            host,
            since.as_deref(),
            store.as_deref(),
            experiments,
        ),
        RunsCmd::Show {
            id,
            spike: Some(seq),
            cpu,
            unit,
            store,
            ..
        } => {
            let st = open_for_reading(store.as_deref())?;
            out(&super::spike::show(st.as_ref(), &id, seq, cpu, unit)?)
        }
        RunsCmd::Show {
            id,
            json,
            unit,
            store,
            ..
        } => show(&id, json, unit, store.as_deref()),
        RunsCmd::Export { ids, all, store } => export_runs(&ids, all, store.as_deref()),
        RunsCmd::Import {
            file,
            store,
            from: Some(tool),
            tag,
            more,
            max_runs,
        } => {
            let files: Vec<&std::path::Path> = std::iter::once(file.as_path())
                .chain(more.iter().map(|p| p.as_path()))
                .collect();
            latlab_analysis::import::run(tool, &files, &tag, store.as_deref(), max_runs, &mut |t| {
                out(t)
            })
        }
        RunsCmd::Import {
            file,
            store,
            from: None,
            ..
        } => import_bundle(&file, store.as_deref()),
        RunsCmd::Check { store } => check(store.as_deref()),
        RunsCmd::Delete { id, store } => {
            let mut st = open_for_reading(store.as_deref())?;
            st.delete(&id)?;
            out(&format!("deleted run {id} from {}\n", st.location()))
        }
    }
}

/// `runs list`: the stored runs a filter selects, or (`--experiments`) their experiments.
fn list(
    kind: Option<String>,
    tag: &[String],
    host: Option<String>,
    since: Option<&str>,
    store: Option<&str>,
    experiments: bool,
) -> Result<()> {
    let cutoff = since.map(parse_since).transpose()?;
    let st = open_for_reading(store)?;
    let f = Filter {
        kind,
        tags: parse_tags(tag)?.into_iter().collect(),
        host,
        started_from: cutoff.map(latlab_core::store::since_bound),
    };
    let listed: Vec<latlab_core::store::RunRow> = st
        .list(&f)?
        .into_iter()
        .filter(|r| {
            cutoff.is_none_or(|c| humantime::parse_rfc3339_weak(&r.started).is_ok_and(|t| t >= c))
        })
        .collect();
    if experiments {
        return out(&experiment_table(listed));
    }
    let rows: Vec<Vec<String>> = listed
        .into_iter()
        .map(|r| {
            let tags: Vec<String> = r.tags.iter().map(|(k, v)| format!("{k}={v}")).collect();
            vec![
                r.id,
                r.kind,
                r.started,
                r.host,
                if r.interrupted {
                    "yes".into()
                } else {
                    "".into()
                },
                tags.join(","),
            ]
        })
        .collect();
    out(&latlab_core::output::printable(&columns::render_left(
        &["id", "kind", "started", "host", "interrupted", "tags"],
        &rows,
    )))
}

/// `runs show`: one stored run as latlab's table, or as stored (`--json`).
fn show(
    id: &str,
    json: bool,
    unit: latlab_core::config::DisplayUnit,
    store: Option<&str>,
) -> Result<()> {
    let e = open_for_reading(store)?.get(id)?;
    let raw = || serde_json::to_string_pretty(&e).map_err(|e| Error::Env(e.to_string()));
    if json {
        return out(&(raw()? + "\n"));
    }
    match serde_json::from_value::<latlab_core::result::Run>(e.run.clone()) {
        Ok(run) => match run.check_figures() {
            Ok(()) => out(&super::show::render(&run, &e.tags, unit)),
            Err(why) => Err(Error::Usage(format!(
                "run {id}: its figures contradict each other ({why}); `latlab runs show --json \
                 {id}` prints it as stored"
            ))),
        },
        Err(why) => Err(Error::Usage(format!(
            "run {id}: its stored result does not read as a latlab run ({why}); \
             `latlab runs show --json {id}` prints it as stored"
        ))),
    }
}

/// `runs export`: a bundle of the runs a run list names (or `--all`), on stdout.
fn export_runs(ids: &[String], all: bool, store: Option<&str>) -> Result<()> {
    let st = open_for_reading(store)?;
    if all {
        return export_all(st.as_ref());
    }
    let ids: Vec<String> = {
        // Any run list: run:ID, exp:ID, exp:ID/K=V, tag:K=V (or bare ids).
        let items = latlab_analysis::dataset::select::parse(ids)?;
        let mut res = latlab_analysis::dataset::select::Resolver::new(store);
        let mut all = Vec::new();
        for item in &items {
            for id in res.ids(item)? {
                if !all.contains(&id) {
                    all.push(id);
                }
            }
        }
        all
    };
    let b = export(st.as_ref(), &ids)?;
    out(&(serde_json::to_string_pretty(&b).map_err(|e| Error::Env(e.to_string()))? + "\n"))
}

/// `runs export --all`: every run that reads back, on stdout; one that does not is left out
/// and named (stderr), and the export then ends with exit 1 — a backup never stops at the
/// first bad row, nor misses one unsaid.
fn export_all(st: &dyn latlab_core::store::Store) -> Result<()> {
    let mut runs = Vec::new();
    let mut bad = Vec::new();
    for r in st.list(&Filter::default())? {
        match read_back(st, &r) {
            Ok(e) => runs.push(e),
            Err(why) => bad.push(format!("{}: {why}", latlab_core::output::one_line(&r.id))),
        }
    }
    let b = Bundle {
        format: BUNDLE_FORMAT.into(),
        runs,
    };
    let left_out = (!bad.is_empty()).then(|| {
        format!(
            "left out {} run(s) of {} that do not read back ({}); `latlab runs check` lists them",
            bad.len(),
            st.location(),
            bad.join("; ")
        )
    });
    if let Err(e) =
        out(&(serde_json::to_string_pretty(&b).map_err(|e| Error::Env(e.to_string()))? + "\n"))
    {
        // The write's failure decides the exit; what was left out is still said.
        if let Some(l) = &left_out {
            latlab_core::note!("latlab: {l}");
        }
        return Err(e);
    }
    left_out.map_or(Ok(()), |l| Err(Error::CheckFailed(l)))
}

/// `runs import FILE` (no `--from`): a latlab bundle, every run checked before any is stored.
fn import_bundle(file: &std::path::Path, store: Option<&str>) -> Result<()> {
    let name = file.display().to_string();
    let text = latlab_core::io::read_text_limited(file, MAX_BUNDLE_BYTES, "latlab bundle")?;
    let b: Bundle = match serde_json::from_str(&text) {
        Ok(b) => b,
        // A latlab result (`--json FILE`) imports as a bundle of that one run.
        Err(e) => match latlab_core::result::Run::parse(&text, &name) {
            Ok(run) => Bundle {
                format: BUNDLE_FORMAT.into(),
                runs: vec![latlab_core::store::BundleEntry {
                    run: serde_json::to_value(&run).map_err(|e| Error::Env(e.to_string()))?,
                    tags: Default::default(),
                }],
            },
            // The error of what the file looks like: a result (it has a schema or series and
            // no bundle format) is told why it is not one, not that a bundle's field is missing.
            Err(as_result) => {
                let top = serde_json::from_str::<serde_json::Value>(&text).ok();
                let looks_like_result = top.as_ref().and_then(|v| v.as_object()).is_some_and(|o| {
                    !o.contains_key("format")
                        && (o.contains_key("schema") || o.contains_key("series"))
                });
                // rt-tests' --json files name their program in `cmdline:`.
                let tool = top
                    .as_ref()
                    .and_then(latlab_analysis::import::Tool::named_in);
                return Err(if looks_like_result {
                    as_result
                } else if let Some(tool) = tool {
                    Error::Usage(format!(
                        "{name}: this is {0}'s --json output, not a latlab file: import it with `latlab runs import --from {0} {name}`",
                        tool.name()
                    ))
                } else {
                    Error::Usage(format!(
                        "{name}: neither a latlab bundle (`runs export`) nor a latlab result (`--json`): {e}"
                    ))
                });
            }
        },
    };
    if b.format != BUNDLE_FORMAT {
        return Err(Error::Usage(format!(
            "{name}: format '{}' is not {BUNDLE_FORMAT}",
            b.format
        )));
    }
    // Every run reads back before any is imported: a bad one leaves the store as it was.
    for (i, e) in b.runs.iter().enumerate() {
        latlab_core::result::Run::from_stored(&e.run.to_string()).map_err(|why| {
            Error::Usage(format!(
                "{name}: run {} ({}): not a readable latlab run ({why}); nothing imported",
                i + 1,
                e.run.get("id").and_then(|v| v.as_str()).unwrap_or("?")
            ))
        })?;
    }
    let mut st = open(store)?;
    // From here on a signal stops the import between two runs, with a count.
    let control = latlab_lab::driver::signals::control();
    latlab_lab::driver::signals::exit_on_first_signal_off();
    let (new, old) = import(st.as_mut(), &b, &|| control.was_interrupted())?;
    // (A signal that came once every run was in changes nothing: the import is complete.)
    if control.was_interrupted() && new + old < b.runs.len() {
        latlab_core::note!(
            "latlab: interrupted: {new} new run(s) imported, {old} already present, {} \
             not reached, into {}; run the same import again to finish (runs already \
             present are skipped)",
            b.runs.len() - new - old,
            st.location()
        );
        std::process::exit(control.signal_exit_code());
    }
    if old > 0 {
        for id in differing(st.as_ref(), &b) {
            latlab_core::note!(
                "latlab: warning: run {} is already stored with other contents: the stored one \
                 is kept (`latlab runs delete {0}` first to replace it)",
                latlab_core::output::printable(&id)
            );
        }
    }
    out(&format!(
        "imported {new} new run(s), {old} already present, into {}\n",
        st.location()
    ))
}

/// The ids of the bundle's runs that the store holds with other contents (an id is one run:
/// a second file under the same id is not that run, and is not imported over it).
fn differing(st: &dyn latlab_core::store::Store, b: &Bundle) -> Vec<String> {
    let norm = |v: &serde_json::Value| {
        latlab_core::result::Run::from_stored(&v.to_string())
            .ok()
            .and_then(|r| serde_json::to_value(r).ok())
    };
    b.runs
        .iter()
        .filter_map(|e| {
            let id = e.run.get("id")?.as_str()?;
            let stored = st.get(id).ok()?;
            (norm(&stored.run) != norm(&e.run)).then(|| id.to_string())
        })
        .collect()
}

/// A stored run read back as its listing row says it is: its body a run whose figures hold,
/// under the row's id and of the row's kind (a body edited or swapped in the store is not
/// the run the listing shows). Why not, if it is not.
fn read_back(
    st: &dyn latlab_core::store::Store,
    row: &latlab_core::store::RunRow,
) -> std::result::Result<latlab_core::store::BundleEntry, String> {
    let e = st.get(&row.id).map_err(|e| e.to_string())?;
    let run = latlab_core::result::Run::from_stored(&e.run.to_string())?;
    if run.id != row.id {
        return Err(format!("its body is run {:?}", run.id));
    }
    if run.kind != row.kind {
        return Err(format!(
            "its body is a {:?} run, listed as {:?}",
            run.kind, row.kind
        ));
    }
    Ok(e)
}

/// `runs check`: every stored run read back; the ones that do not are listed, exit 1.
fn check(store: Option<&str>) -> Result<()> {
    let st = open_for_reading(store)?;
    let rows = st.list(&Filter::default())?;
    let mut bad = Vec::new();
    for r in &rows {
        let why = read_back(st.as_ref(), r).err();
        if let Some(why) = why {
            bad.push(vec![r.id.clone(), r.kind.clone(), r.started.clone(), why]);
        }
    }
    if bad.is_empty() {
        return out(&format!(
            "all {} run(s) in {} read back\n",
            rows.len(),
            st.location()
        ));
    }
    out(&columns::render_left(
        &["id", "kind", "started", "why"],
        &bad,
    ))?;
    Err(Error::CheckFailed(format!(
        "{} of {} run(s) in {} do not read back (`latlab runs delete ID` removes one)",
        bad.len(),
        rows.len(),
        st.location()
    )))
}

/// `runs list --experiments`: one row per experiment (runs tagged `experiment=`), newest
/// first: its first start, the plan file it ran (tag `plan`, from `latlab run`), its kind, how
/// many runs, and each level with its run count, the baseline first.
fn experiment_table(rows: Vec<latlab_core::store::RunRow>) -> String {
    use std::collections::BTreeMap;
    let mut by: BTreeMap<String, Vec<latlab_core::store::RunRow>> = BTreeMap::new();
    for r in rows {
        if let Some(e) = r.tags.get("experiment").cloned() {
            by.entry(e).or_default().push(r);
        }
    }
    let mut exps: Vec<(String, Vec<latlab_core::store::RunRow>)> = by.into_iter().collect();
    for (_, runs) in &mut exps {
        runs.sort_by(|a, b| a.started.cmp(&b.started));
    }
    exps.sort_by(|a, b| b.1[0].started.cmp(&a.1[0].started));
    let table: Vec<Vec<String>> = exps
        .iter()
        .map(|(e, runs)| {
            let tags: Vec<_> = runs.iter().map(|r| &r.tags).collect();
            let levels: Vec<String> = latlab_analysis::compare::levels::group(&tags)
                .iter()
                .map(|l| format!("{} ({})", l.label, l.runs.len()))
                .collect();
            let mut kinds: Vec<&str> = runs.iter().map(|r| r.kind.as_str()).collect();
            kinds.sort_unstable();
            kinds.dedup();
            let plan = runs
                .iter()
                .find_map(|r| r.tags.get("plan"))
                .map_or("-".to_string(), String::clone);
            vec![
                e.clone(),
                runs[0].started.clone(),
                plan,
                kinds.join(","),
                runs.len().to_string(),
                levels.join(", "),
            ]
        })
        .collect();
    columns::render_left(
        &[
            "experiment",
            "started",
            "plan",
            "kind",
            "runs",
            "levels (runs)",
        ],
        &table,
    )
}

/// Prints to stdout; a reader that went away is not an error.
fn out(text: &str) -> Result<()> {
    latlab_core::output::stdout(text).map_err(|e| Error::io("stdout", e))
}
