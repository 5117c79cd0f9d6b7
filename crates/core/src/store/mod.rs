//! Keeping every result: a `Store` of runs with tags, SQLite by default
//! (`$XDG_DATA_HOME/latlab/results.db`, or `--store sqlite:PATH`, or `$LATLAB_STORE`), or a
//! shared PostgreSQL server (`--store postgres://user@host/db`). The whole
//! result model is stored losslessly (its JSON), with the fields runs are found by indexed
//! beside it; bundles move runs between machines.

pub mod busy;
pub(crate) mod pg_deadline;
pub(crate) mod postgres;
mod rescue;
mod secrets;
mod spec;
pub mod sqlite;

use crate::error::{Error, Result};
use crate::result::Run;
use std::collections::BTreeMap;
use std::path::PathBuf;

pub use rescue::rescue_value;
pub use secrets::{redact as redact_spec, redact_argv, redact_env};
pub use spec::{open, open_for_reading, open_send};

/// Version of the store schema this latlab writes and reads.
pub(crate) const SCHEMA_VERSION: i64 = 1;
/// Format name of an export bundle.
pub const BUNDLE_FORMAT: &str = "latlab.bundle/1";

/// A stored run as listed.
#[derive(Debug, Clone, serde::Serialize)]
pub struct RunRow {
    /// Run id.
    pub id: String,
    /// Measurement kind.
    pub kind: String,
    /// Start time.
    pub started: String,
    /// Host name.
    pub host: String,
    /// Interrupted flag.
    pub interrupted: bool,
    /// Tags.
    pub tags: BTreeMap<String, String>,
}

/// What `runs list` filters on.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    /// Only this kind.
    pub kind: Option<String>,
    /// Only runs with all these tags.
    pub tags: Vec<(String, String)>,
    /// Only this host.
    pub host: Option<String>,
    /// Only runs whose stored start time sorts at or after this text (RFC 3339 UTC times sort
    /// as they are ordered; see [`since_bound`]): a coarse bound the store applies itself, so
    /// a long history is not listed whole. Callers filter the exact time themselves.
    pub started_from: Option<String>,
}

/// A safe `Filter::started_from` for runs started at or after `t`: the UTC date a day
/// earlier (`2026-11-16`), so a start time written with any precision or UTC offset still
/// sorts after it.
/// A bound that would fall before the epoch is the epoch (no run starts earlier).
pub fn since_bound(t: std::time::SystemTime) -> String {
    let day_before = t
        .checked_sub(std::time::Duration::from_secs(86_400))
        .unwrap_or(std::time::UNIX_EPOCH)
        .max(std::time::UNIX_EPOCH);
    humantime::format_rfc3339_seconds(day_before).to_string()[..10].to_string()
}

/// Runs listed from rows of (run, one of its tags) in run order, a run without tags having one
/// row with no tag: each run once with all its tags, those matching `f.tags` kept.
pub(crate) fn group_listed(
    rows: impl IntoIterator<Item = (RunRow, Option<(String, String)>)>,
    f: &Filter,
) -> Vec<RunRow> {
    let mut out: Vec<RunRow> = Vec::new();
    let keep = |r: RunRow, out: &mut Vec<RunRow>| {
        if f.tags.iter().all(|(k, v)| r.tags.get(k) == Some(v)) {
            out.push(r);
        }
    };
    let mut cur: Option<RunRow> = None;
    for (run, tag) in rows {
        let same = cur.as_ref().is_some_and(|c| c.id == run.id);
        if !same {
            if let Some(c) = cur.take() {
                keep(c, &mut out);
            }
            cur = Some(run);
        }
        if let (Some((k, v)), Some(c)) = (tag, cur.as_mut()) {
            c.tags.insert(k, v);
        }
    }
    if let Some(c) = cur {
        keep(c, &mut out);
    }
    out
}

/// One run in a bundle: the run and its tags.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct BundleEntry {
    /// The run.
    pub run: serde_json::Value,
    /// Its tags.
    pub tags: BTreeMap<String, String>,
}

/// Runs exported from a store.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Bundle {
    /// Always [`BUNDLE_FORMAT`].
    pub format: String,
    /// The runs.
    pub runs: Vec<BundleEntry>,
}

/// A place results are kept.
pub trait Store {
    /// Saves a run with its tags (a run already present is left as it is).
    fn save(&mut self, run: &Run, tags: &BTreeMap<String, String>) -> Result<bool>;
    /// Saves a run given as JSON (import); returns false when it was already present.
    fn save_json(
        &mut self,
        run: &serde_json::Value,
        tags: &BTreeMap<String, String>,
    ) -> Result<bool>;
    /// Runs matching `f`, newest first.
    fn list(&self, f: &Filter) -> Result<Vec<RunRow>>;
    /// A run's JSON and tags; exit 2 naming the id when unknown.
    fn get(&self, id: &str) -> Result<BundleEntry>;
    /// Deletes a run; exit 2 naming the id when unknown.
    fn delete(&mut self, id: &str) -> Result<()>;
    /// Where the store is, for messages.
    fn location(&self) -> String;
    /// Where a run this store refused is kept instead ([`rescue`]); None: beside the default
    /// store, else in a private temporary directory.
    fn rescue_dir(&self) -> Option<PathBuf> {
        None
    }
}

/// The indexed columns of a stored run, taken from its JSON (which is kept whole beside them).
#[derive(Debug, Clone)]
pub(crate) struct RunKeys {
    /// Run id.
    pub(crate) id: String,
    /// Measurement kind.
    pub(crate) kind: String,
    /// Start time.
    pub(crate) started: String,
    /// End time.
    pub(crate) ended: String,
    /// Host name.
    pub(crate) host: String,
    /// Interrupted flag.
    pub(crate) interrupted: bool,
    /// Raw sample log, if any.
    pub(crate) samples_path: Option<String>,
    /// The JSON text stored.
    pub(crate) body: String,
}

impl RunKeys {
    /// Extracts the keys; exit 2 when the JSON is not a latlab run.
    pub(crate) fn of(body: &serde_json::Value) -> Result<RunKeys> {
        let s = |k: &str| {
            body.get(k)
                .and_then(|v| v.as_str())
                .unwrap_or("")
                .to_string()
        };
        let id = s("id");
        if id.is_empty()
            || body.get("schema").and_then(|v| v.as_str()) != Some(crate::result::SCHEMA)
        {
            return Err(Error::Usage(format!(
                "not a {} run (id '{id}')",
                crate::result::SCHEMA
            )));
        }
        Ok(RunKeys {
            kind: s("kind"),
            started: s("started"),
            ended: s("ended"),
            host: body
                .pointer("/environment/hostname")
                .and_then(|v| v.as_str())
                .unwrap_or("")
                .to_string(),
            interrupted: body
                .get("interrupted")
                .and_then(|v| v.as_bool())
                .unwrap_or(false),
            samples_path: body
                .get("samples_path")
                .and_then(|v| v.as_str())
                .map(String::from),
            body: {
                let text = serde_json::to_string(&secrets::redacted(body))
                    .map_err(|e| Error::Env(e.to_string()))?;
                // A run is kept only if it reads back: a store never holds one it cannot show.
                crate::result::Run::from_stored(&text).map_err(|e| {
                    Error::Usage(format!(
                        "run {id}: not stored: it would not read back as a latlab run ({e})"
                    ))
                })?;
                text
            },
            id,
        })
    }
}

/// Why `k` cannot be a tag key (a selector could not name it), if it cannot.
pub(crate) fn bad_tag_key(k: &str) -> Option<&'static str> {
    let ok = !k.is_empty()
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c));
    (!ok).then_some("keys use letters, digits, '_', '-' and '.'")
}

/// Why `v` cannot be a tag value, if it cannot: empty (no selector can name it), or holding a
/// control character (it would break the line of every table and message that shows it).
pub(crate) fn bad_tag_value(v: &str) -> Option<&'static str> {
    if v.is_empty() {
        Some("values are not empty")
    } else if v.chars().any(char::is_control) {
        Some("values are one line of text (no control characters)")
    } else {
        None
    }
}

/// Parses `--tag key=value`.
pub fn parse_tags(v: &[String]) -> Result<BTreeMap<String, String>> {
    let mut m = BTreeMap::new();
    for t in v {
        let (k, val) = t
            .split_once('=')
            .ok_or_else(|| Error::flag("--tag", t, "expected key=value"))?;
        let k = k.trim();
        if let Some(why) = bad_tag_key(k).or_else(|| bad_tag_value(val.trim())) {
            return Err(Error::flag("--tag", t, why));
        }
        m.insert(k.to_string(), val.trim().to_string());
    }
    Ok(m)
}

/// Checks an imported run: a latlab result whose numbers are in range (histogram counts that
/// would overflow are refused, not wrapped). `what` names it in messages.
pub fn check_imported(run: &serde_json::Value, what: &str) -> Result<()> {
    let r: Run = serde_json::from_value(run.clone())
        .map_err(|e| Error::Usage(format!("{what}: not a latlab run: {e}")))?;
    r.check_figures()
        .map_err(|e| Error::Usage(format!("{what}: {e}")))
}

/// Exports runs as a bundle.
pub fn export(store: &dyn Store, ids: &[String]) -> Result<Bundle> {
    let runs = ids
        .iter()
        .map(|id| store.get(id))
        .collect::<Result<Vec<_>>>()?;
    Ok(Bundle {
        format: BUNDLE_FORMAT.into(),
        runs,
    })
}

/// Imports a bundle; returns (new, already present). Every run is checked before the first
/// is saved, so a bad bundle changes nothing.
pub fn import(
    store: &mut dyn Store,
    b: &Bundle,
    stop: &dyn Fn() -> bool,
) -> Result<(usize, usize)> {
    for (i, e) in b.runs.iter().enumerate() {
        let what = match e.run.get("id").and_then(|v| v.as_str()) {
            Some(id) => format!(
                "run {} ({}) of the bundle",
                i + 1,
                crate::output::one_line(id)
            ),
            None => format!("run {} of the bundle", i + 1),
        };
        check_imported(&e.run, &what)?;
        // Keys as stored, not as `--tag` would trim them: one a selector cannot name (`a=b`,
        // ` x`) is refused, never stored or dropped unsaid.
        for (k, v) in &e.tags {
            if let Some(why) = bad_tag_key(k) {
                return Err(Error::Usage(format!("{what}: tag key {k:?}: {why}")));
            }
            if let Some(why) = bad_tag_value(v) {
                return Err(Error::Usage(format!("{what}: tag {k}={v:?}: {why}")));
            }
        }
    }
    let (mut new, mut old) = (0, 0);
    for e in &b.runs {
        // Each run is saved whole; stopping between two leaves a store that a second import
        // of the same bundle completes (present runs are skipped).
        if stop() {
            break;
        }
        match store.save_json(&e.run, &e.tags) {
            Ok(true) => new += 1,
            Ok(false) => old += 1,
            // How far it got: the same import again finishes it (present runs are skipped).
            Err(e) => {
                return Err(Error::Env(format!(
                    "{e}; {new} new run(s) imported, {old} already present, {} not reached: \
                     run the same import again to finish",
                    b.runs.len() - new - old
                )))
            }
        }
    }
    Ok((new, old))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_since_bound_is_a_day_early_and_sorts_below_any_later_start() {
        let t = humantime::parse_rfc3339("2026-11-17T00:30:00Z").unwrap();
        let b = since_bound(t);
        assert_eq!(b, "2026-11-16");
        for later in [
            "2026-11-17T00:30:00.000001Z",
            "2026-11-17T00:30:00Z",
            "2026-11-16T13:30:00-11:00",
        ] {
            assert!(later >= b.as_str(), "{later}");
        }
        assert!("2026-11-15T23:59:59.999999Z" < b.as_str());
    }

    fn row(id: &str) -> RunRow {
        RunRow {
            id: id.into(),
            kind: "cyclic".into(),
            started: "2026-11-25T00:00:00Z".into(),
            host: "h".into(),
            interrupted: false,
            tags: BTreeMap::new(),
        }
    }

    #[test]
    fn listed_rows_are_grouped_into_runs_with_all_their_tags_in_order_then_filtered() {
        let t = |k: &str, v: &str| Some((k.to_string(), v.to_string()));
        let rows = vec![
            (row("b"), t("kernel", "6.1")),
            (row("b"), t("patch", "x")),
            (row("a"), None),
            (row("c"), t("kernel", "6.2")),
        ];
        let all = group_listed(rows.clone(), &Filter::default());
        let ids: Vec<&str> = all.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(ids, ["b", "a", "c"]);
        assert_eq!(all[0].tags.len(), 2);
        assert!(all[1].tags.is_empty());
        let f = Filter {
            tags: [("kernel".to_string(), "6.1".to_string())].into(),
            ..Filter::default()
        };
        let kept = group_listed(rows.clone(), &f);
        assert_eq!(kept.len(), 1);
        assert_eq!(kept[0].tags["patch"], "x");
        // A tag filter on a run's second tag keeps it too.
        let f = Filter {
            tags: [("patch".to_string(), "x".to_string())].into(),
            ..Filter::default()
        };
        assert_eq!(group_listed(rows, &f)[0].id, "b");
        assert!(group_listed(Vec::new(), &Filter::default()).is_empty());
    }

    #[test]
    fn tags_and_redaction() {
        let t = parse_tags(&["kernel=6.1-rc2".into(), "patch=vec-lock".into()]).unwrap();
        assert_eq!(t["kernel"], "6.1-rc2");
        assert!(parse_tags(&["novalue".into()]).is_err());
        assert!(parse_tags(&["bad key=1".into()]).is_err());
        assert!(parse_tags(&["k=".into()]).is_err());
        assert!(parse_tags(&["k=a\nb".into()]).is_err());
        assert!(parse_tags(&["k=a b, c".into()]).is_ok());
        assert_eq!(
            secrets::redact("postgres://me:secret@db/x"),
            "postgres://me:***@db/x"
        );
    }
}
