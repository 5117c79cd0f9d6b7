//! Which store a command means: the forms a store is named in (`--store`, `$LATLAB_STORE`,
//! else the default SQLite file) and opening the one named, for writing or only for reading.

use super::secrets::{is_libpq, redact};
use super::{postgres, sqlite, Store};
use crate::error::{Error, Result};
use std::path::PathBuf;

/// The default store location: `$XDG_DATA_HOME/latlab/results.db` (or `~/.local/share/...`).
pub(crate) fn default_path() -> PathBuf {
    let base = std::env::var_os("XDG_DATA_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/share")))
        .unwrap_or_else(|| PathBuf::from("."));
    base.join("latlab/results.db")
}

/// A store named on the command line or in `$LATLAB_STORE`, by form.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Spec {
    /// A SQLite file (`sqlite:PATH` or a plain path).
    Sqlite(PathBuf),
    /// A PostgreSQL URL (`postgres://`, `postgresql://`) or libpq `key=value` string.
    Postgres(String),
}

/// Classifies a store spec; anything that is not one of the known forms is bad input naming
/// the value (with any password hidden). `from` names where it came from (`--store`).
pub(crate) fn parse_spec(spec: &str, from: &str) -> Result<Spec> {
    let shown = redact(spec);
    let bad = |why: &str| Error::flag(from, &shown, why);
    if spec.starts_with("postgres://") || spec.starts_with("postgresql://") || is_libpq(spec) {
        return Ok(Spec::Postgres(spec.to_string()));
    }
    let path = if let Some(p) = spec.strip_prefix("sqlite:") {
        p
    } else if let Some(i) = spec.find("://") {
        let scheme = &spec[..i];
        return Err(bad(&format!(
            "unknown store '{scheme}://' (use sqlite:PATH, a path, or postgres://...)"
        )));
    } else {
        spec
    };
    if path.is_empty() {
        return Err(bad("no path (use sqlite:PATH, a path, or postgres://...)"));
    }
    if path.contains("://") {
        return Err(bad("a sqlite: store names a file path, not a URL"));
    }
    Ok(Spec::Sqlite(PathBuf::from(path)))
}

/// `$LATLAB_STORE` when set and not empty; one that is not UTF-8 is refused naming it (it
/// is not silently replaced by the default store).
fn env_store() -> Result<Option<String>> {
    match std::env::var("LATLAB_STORE") {
        Ok(v) => Ok(Some(v).filter(|v| !v.is_empty())),
        Err(std::env::VarError::NotPresent) => Ok(None),
        Err(std::env::VarError::NotUnicode(v)) => Err(Error::Usage(format!(
            "LATLAB_STORE {}: not valid UTF-8 (a store is named in text: sqlite:PATH or postgres://...)",
            v.to_string_lossy()
        ))),
    }
}

/// Opens the store named by `spec` (`sqlite:PATH`, a plain path, or `postgres://...`), else
/// `$LATLAB_STORE`, else the default SQLite file.
pub fn open(spec: Option<&str>) -> Result<Box<dyn Store>> {
    open_send(spec).map(|s| s as Box<dyn Store>)
}

/// [`open`], as a store that may be opened on another thread (the driver opens it there, so
/// a signal is not kept waiting by a server that does not answer or a file someone locks).
pub fn open_send(spec: Option<&str>) -> Result<Box<dyn Store + Send>> {
    let (spec, from) = match spec {
        Some(s) => (Some(s.to_string()), "--store"),
        None => (env_store()?, "LATLAB_STORE"),
    };
    let Some(spec) = spec else {
        return Ok(Box::new(sqlite::SqliteStore::open(&default_path())?));
    };
    match parse_spec(&spec, from)? {
        Spec::Postgres(url) => {
            let pg = postgres::PostgresStore::connect(&url, &redact(&url))?;
            Ok(Box::new(postgres::SharedPostgres(std::cell::RefCell::new(
                pg,
            ))))
        }
        Spec::Sqlite(path) => Ok(Box::new(sqlite::SqliteStore::open(&path)?)),
    }
}

/// As [`open`], for commands that only read (list, show, export, compare, gate, report): a
/// SQLite store that does not exist yet is an empty one, and no file is created for it; one
/// named with `--store` is said to be missing (a mistyped path must not read as "no runs"
/// without a word).
pub fn open_for_reading(spec: Option<&str>) -> Result<Box<dyn Store>> {
    let (given, from) = match spec {
        Some(s) => (Some(s.to_string()), "--store"),
        None => (env_store()?, "LATLAB_STORE"),
    };
    let path = match given.as_deref().map(|s| parse_spec(s, from)).transpose()? {
        None => default_path(),
        Some(Spec::Sqlite(p)) => p,
        Some(Spec::Postgres(_)) => return open(spec),
    };
    let shown = crate::output::printable(&path.display().to_string()).into_owned();
    match std::fs::symlink_metadata(&path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if spec.is_some() {
                crate::note!(
                    "latlab: --store: no store at {shown} yet: read as empty (a measurement creates it; check the path)"
                );
            }
            return Ok(Box::new(sqlite::SqliteStore::open_empty(&path)?));
        }
        // Not "no store yet": a directory latlab may not enter, say.
        Err(e) => return Err(Error::Env(format!("store {shown}: {e}"))),
        Ok(_) => {}
    }
    // An empty file (or what a link leads to) is not a store yet, and a command that only
    // reads does not make it one.
    if std::fs::metadata(&path).is_ok_and(|m| m.is_file() && m.len() == 0) {
        crate::note!(
            "latlab: store {shown} is an empty file: read as an empty store, left as it is"
        );
        return Ok(Box::new(sqlite::SqliteStore::open_empty(&path)?));
    }
    Ok(Box::new(sqlite::SqliteStore::open_reading(&path)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_known_store_forms_are_accepted() {
        for bad in [
            "mysql://me@db/x",
            "postgress://me@db/x",
            "file:///tmp/x.db",
            "http://example.com/x",
            "sqlite:",
            "sqlite:http://x",
        ] {
            let e = parse_spec(bad, "--store").unwrap_err();
            assert_eq!(e.exit_code(), 2, "{bad}");
            assert!(e.to_string().contains("--store"), "{e}");
        }
        assert_eq!(
            parse_spec("sqlite:/tmp/a.db", "--store").unwrap(),
            Spec::Sqlite("/tmp/a.db".into())
        );
        assert_eq!(
            parse_spec("results.db", "--store").unwrap(),
            Spec::Sqlite("results.db".into())
        );
        assert!(matches!(
            parse_spec("host=db dbname=x", "--store").unwrap(),
            Spec::Postgres(_)
        ));
        let e = parse_spec("mysql://me:secret@db/x", "--store").unwrap_err();
        assert!(!e.to_string().contains("secret"), "{e}");
    }
}
