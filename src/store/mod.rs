//! Keeping every result: a `Store` of runs with tags, SQLite by default
//! (`$XDG_DATA_HOME/latlab/results.db`, or `--store sqlite:PATH`, or `$LATLAB_STORE`), or a
//! shared PostgreSQL server (`--store postgres://user@host/db`). The whole
//! result model is stored losslessly (its JSON), with the fields runs are found by indexed
//! beside it; bundles move runs between machines.

pub mod cmd;
pub mod postgres;
pub mod sqlite;

use crate::error::{Error, Result};
use crate::result::Run;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Version of the store schema this latlab writes and reads.
pub const SCHEMA_VERSION: i64 = 1;
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
}

/// The indexed columns of a stored run, taken from its JSON (which is kept whole beside them).
#[derive(Debug, Clone)]
pub struct RunKeys {
    /// Run id.
    pub id: String,
    /// Measurement kind.
    pub kind: String,
    /// Start time.
    pub started: String,
    /// End time.
    pub ended: String,
    /// Host name.
    pub host: String,
    /// Interrupted flag.
    pub interrupted: bool,
    /// Raw sample log, if any.
    pub samples_path: Option<String>,
    /// The JSON text stored.
    pub body: String,
}

impl RunKeys {
    /// Extracts the keys; exit 2 when the JSON is not a latlab run.
    pub fn of(body: &serde_json::Value) -> Result<RunKeys> {
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
            body: serde_json::to_string(body).map_err(|e| Error::Env(e.to_string()))?,
            id,
        })
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
        if k.is_empty()
            || !k
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c))
        {
            return Err(Error::flag(
                "--tag",
                t,
                "keys use letters, digits, '_', '-' and '.'",
            ));
        }
        m.insert(k.to_string(), val.trim().to_string());
    }
    Ok(m)
}

/// The default store location: `$XDG_DATA_HOME/latlab/results.db` (or `~/.local/share/...`).
pub fn default_path() -> PathBuf {
    let base = std::env::var_os("XDG_DATA_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/share")))
        .unwrap_or_else(|| PathBuf::from("."));
    base.join("latlab/results.db")
}

/// Opens the store named by `spec` (`sqlite:PATH`, a plain path, or `postgres://...`), else
/// `$LATLAB_STORE`, else the default SQLite file.
pub fn open(spec: Option<&str>) -> Result<Box<dyn Store>> {
    let env = std::env::var("LATLAB_STORE").ok().filter(|v| !v.is_empty());
    let spec = spec.map(String::from).or(env);
    match spec.as_deref() {
        None => Ok(Box::new(sqlite::SqliteStore::open(&default_path())?)),
        Some(s) if s.starts_with("postgres://") || s.starts_with("postgresql://") => {
            let pg = postgres::PostgresStore::connect(s, &redact(s))?;
            Ok(Box::new(postgres::SharedPostgres(std::cell::RefCell::new(
                pg,
            ))))
        }
        Some(s) => {
            let path = s.strip_prefix("sqlite:").unwrap_or(s);
            if path.is_empty() {
                return Err(Error::flag("--store", s, "no path after sqlite:"));
            }
            Ok(Box::new(sqlite::SqliteStore::open(std::path::Path::new(
                path,
            ))?))
        }
    }
}

/// A URL with any password hidden.
fn redact(url: &str) -> String {
    match (url.find("://"), url.find('@')) {
        (Some(a), Some(b)) if b > a => {
            let creds = &url[a + 3..b];
            match creds.split_once(':') {
                Some((u, _)) => format!("{}{u}:***{}", &url[..a + 3], &url[b..]),
                None => url.to_string(),
            }
        }
        _ => url.to_string(),
    }
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

/// Imports a bundle; returns (new, already present).
pub fn import(store: &mut dyn Store, b: &Bundle) -> Result<(usize, usize)> {
    let (mut new, mut old) = (0, 0);
    for e in &b.runs {
        if store.save_json(&e.run, &e.tags)? {
            new += 1;
        } else {
            old += 1;
        }
    }
    Ok((new, old))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_and_redaction() {
        let t = parse_tags(&["kernel=6.1-rc2".into(), "patch=vec-lock".into()]).unwrap();
        assert_eq!(t["kernel"], "6.1-rc2");
        assert!(parse_tags(&["novalue".into()]).is_err());
        assert!(parse_tags(&["bad key=1".into()]).is_err());
        assert_eq!(
            redact("postgres://me:secret@db/x"),
            "postgres://me:***@db/x"
        );
    }
}
