//! Keeping every result: a `Store` of runs with tags, SQLite by default
//! (`$XDG_DATA_HOME/latlab/results.db`, or `--store sqlite:PATH`, or `$LATLAB_STORE`), or a
//! shared PostgreSQL server (`--store postgres://user@host/db`). The whole
//! result model is stored losslessly (its JSON), with the fields runs are found by indexed
//! beside it; bundles move runs between machines.

pub mod busy;
pub(crate) mod pg_deadline;
pub(crate) mod postgres;
pub mod sqlite;

use crate::error::{Error, Result};
use crate::result::Run;
use std::collections::BTreeMap;
use std::path::PathBuf;

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
                let text = serde_json::to_string(&redacted(body))
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

/// The run with any store password in its command line hidden (a store is shared: what is
/// saved there is read by others).
fn redacted(body: &serde_json::Value) -> std::borrow::Cow<'_, serde_json::Value> {
    let Some(cl) = body.get("command_line").and_then(|v| v.as_array()) else {
        return std::borrow::Cow::Borrowed(body);
    };
    let argv: Vec<String> = cl
        .iter()
        .map(|v| v.as_str().unwrap_or_default().to_string())
        .collect();
    let clean = redact_argv(&argv);
    if clean == argv {
        return std::borrow::Cow::Borrowed(body);
    }
    let mut b = body.clone();
    b["command_line"] = serde_json::Value::from(clean);
    std::borrow::Cow::Owned(b)
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

/// The default store location: `$XDG_DATA_HOME/latlab/results.db` (or `~/.local/share/...`).
pub(crate) fn default_path() -> PathBuf {
    let base = std::env::var_os("XDG_DATA_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/share")))
        .unwrap_or_else(|| PathBuf::from("."));
    base.join("latlab/results.db")
}

/// [`rescue`] of a run already made JSON (`run`, whose id is `id`).
pub fn rescue_value(
    id: &str,
    run: &serde_json::Value,
    tags: &BTreeMap<String, String>,
    first: Option<PathBuf>,
) -> std::result::Result<PathBuf, String> {
    let b = Bundle {
        format: BUNDLE_FORMAT.into(),
        runs: vec![BundleEntry {
            run: run.clone(),
            tags: tags.clone(),
        }],
    };
    let text = serde_json::to_string_pretty(&b).map_err(|e| e.to_string())? + "\n";
    let name: String = id
        .chars()
        .map(|c| match c {
            'a'..='z' | 'A'..='Z' | '0'..='9' | '-' | '_' | '.' => c,
            _ => '_',
        })
        .collect();
    let name = format!("{}.json", name.trim_start_matches('.'));
    let uid = crate::sys::sched::euid();
    let own = |base: PathBuf| base.join(format!("latlab-unstored-{uid}"));
    // The store's own place, beside the default store, then a directory of this user's own
    // under the temporary directory, and under /tmp whatever TMPDIR says.
    let mut places: Vec<(PathBuf, bool)> = first.map(|d| (d, false)).into_iter().collect();
    places.push((default_path().with_file_name("unstored"), false));
    places.push((own(std::env::temp_dir()), true));
    places.push((own(PathBuf::from("/tmp")), true));
    places.dedup();
    let mut tried = Vec::new();
    for (dir, private) in places {
        // Only an absolute place: a relative one would be the current directory's.
        if !dir.is_absolute() {
            tried.push(format!("{}: not an absolute path", dir.display()));
            continue;
        }
        let made = if private {
            private_dir(&dir, uid)
        } else {
            std::fs::create_dir_all(&dir)
        };
        let path = dir.join(&name);
        match made.and_then(|()| crate::output::write_atomic(&path, text.as_bytes())) {
            Ok(()) => return Ok(path),
            Err(e) => tried.push(format!("{}: {e}", dir.display())),
        }
    }
    Err(tried.join("; "))
}

/// A directory only `uid` can write (created 0700; one already there must be a directory of
/// its own, not a link another user planted in a shared directory).
fn private_dir(dir: &std::path::Path, uid: u32) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt};
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => return Err(e),
        _ => {}
    }
    let m = std::fs::symlink_metadata(dir)?;
    if !m.is_dir() || m.uid() != uid || m.mode() & 0o022 != 0 {
        return Err(std::io::Error::other(
            "not a directory of this user's own that only it can write",
        ));
    }
    Ok(())
}

/// A store named on the command line or in `$LATLAB_STORE`, by form.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Spec {
    /// A SQLite file (`sqlite:PATH` or a plain path).
    Sqlite(PathBuf),
    /// A PostgreSQL URL (`postgres://`, `postgresql://`) or libpq `key=value` string.
    Postgres(String),
}

/// libpq connection keywords: a store given as `host=... dbname=...` is a PostgreSQL one.
const LIBPQ_KEYS: &[&str] = &[
    "host",
    "hostaddr",
    "port",
    "dbname",
    "user",
    "password",
    "passfile",
    "service",
    "sslmode",
    "connect_timeout",
    "application_name",
    "options",
    "target_session_attrs",
];

fn is_libpq(s: &str) -> bool {
    let t = s.trim_start();
    LIBPQ_KEYS.iter().any(|k| {
        t.strip_prefix(k)
            .is_some_and(|r| r.trim_start().starts_with('='))
    })
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

const HIDDEN: &str = "***";

/// Hides `password=VALUE` in a libpq string (VALUE bare or single-quoted with `\` escapes).
fn redact_libpq(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    while i < b.len() {
        // At a keyword start (beginning or after white space)?
        let at_word = i == 0 || b[i - 1].is_ascii_whitespace();
        let rest = &s[i..];
        let key_len = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        let key = &rest[..key_len];
        let after = rest[key_len..].trim_start();
        if at_word && key.to_ascii_lowercase().contains("password") && after.starts_with('=') {
            out.push_str(key);
            out.push('=');
            out.push_str(HIDDEN);
            // Skip the value.
            let mut j = i + key_len + (rest[key_len..].len() - after.len()) + 1;
            while j < b.len() && b[j].is_ascii_whitespace() {
                j += 1;
            }
            if j < b.len() && b[j] == b'\'' {
                j += 1;
                while j < b.len() && b[j] != b'\'' {
                    j += if b[j] == b'\\' { 2 } else { 1 };
                }
                j += 1;
            } else {
                while j < b.len() && !b[j].is_ascii_whitespace() {
                    j += if b[j] == b'\\' { 2 } else { 1 };
                }
            }
            i = j.min(b.len());
            continue;
        }
        let ch = rest.chars().next().unwrap_or(' ');
        out.push(ch);
        i += ch.len_utf8();
    }
    out
}

/// A store spec with any password hidden: URL userinfo (also one holding `@` or `/`), query
/// parameters named like `password`, and libpq `password=` values. Never shows more than it
/// must, but errs on hiding.
pub(crate) fn redact(spec: &str) -> String {
    let Some(i) = spec.find("://") else {
        return if is_libpq(spec) || spec.contains("password") {
            redact_libpq(spec)
        } else {
            spec.to_string()
        };
    };
    let (scheme, rest) = (&spec[..i + 3], &spec[i + 3..]);
    // Userinfo ends at the last '@': a password may hold '@', '/', '?' or ':' unencoded.
    let rest = match rest.rfind('@') {
        Some(at) => {
            let (user, host) = (&rest[..at], &rest[at..]);
            match user.split_once(':') {
                Some((u, _)) => format!("{u}:{HIDDEN}{host}"),
                None if user.contains(['/', '?', '&', '=']) => format!("{HIDDEN}{host}"),
                None => rest.to_string(),
            }
        }
        None => rest.to_string(),
    };
    // Query parameters.
    let rest = match rest.split_once('?') {
        Some((base, q)) => {
            let q: Vec<String> = q
                .split('&')
                .map(|kv| match kv.split_once('=') {
                    Some((k, _)) if k.to_ascii_lowercase().contains("password") => {
                        format!("{k}={HIDDEN}")
                    }
                    _ => kv.to_string(),
                })
                .collect();
            format!("{base}?{}", q.join("&"))
        }
        None => rest,
    };
    format!("{scheme}{rest}")
}

/// A command line with the secrets in it redacted, for results and messages: the password of
/// every `--store` (and `--store=`), and the value of every `--on-threshold-env NAME=VALUE`
/// (kept as `NAME=<redacted>`: the value is for the action, not for the record).
pub fn redact_argv(argv: &[String]) -> Vec<String> {
    let mut out = Vec::with_capacity(argv.len());
    let mut next: Option<fn(&str) -> String> = None;
    for a in argv {
        if let Some(f) = next.take() {
            out.push(f(a));
        } else if a == "--store" {
            out.push(a.clone());
            next = Some(redact);
        } else if a == ENV_FLAG {
            out.push(a.clone());
            next = Some(redact_env);
        } else if let Some(v) = a.strip_prefix("--store=") {
            out.push(format!("--store={}", redact(v)));
        } else if let Some(v) = a.strip_prefix(ENV_FLAG).and_then(|v| v.strip_prefix('=')) {
            out.push(format!("{ENV_FLAG}={}", redact_env(v)));
        } else {
            out.push(a.clone());
        }
    }
    out
}

/// The flag whose value may carry a secret for a threshold action.
const ENV_FLAG: &str = "--on-threshold-env";

/// `NAME=VALUE` as `NAME=<redacted>`; a bare `NAME` (the value taken from latlab's own
/// environment) as it is.
pub fn redact_env(spec: &str) -> String {
    match spec.split_once('=') {
        Some((name, _)) => format!("{name}=<redacted>"),
        None => spec.to_string(),
    }
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
            redact("postgres://me:secret@db/x"),
            "postgres://me:***@db/x"
        );
    }

    #[test]
    fn passwords_never_survive_redaction() {
        for (spec, secret) in [
            ("postgres://me:secret@db/x", "secret"),
            ("postgresql://me:p@ss@w0rd@db:5432/x", "p@ss"),
            ("postgres://me:pa/ss@db/x", "pa/ss"),
            ("postgres://me:pa?ss@db/x", "pa?ss"),
            (
                "postgres://db/x?user=me&password=hunter2&sslmode=disable",
                "hunter2",
            ),
            ("postgres://db/x?PassWord=hunter2", "hunter2"),
            ("host=db user=me password=hunter2 dbname=x", "hunter2"),
            ("host=db password = 'hun ter2' dbname=x", "hun ter2"),
            ("host=db password='it\\'s' dbname=x", "it\\'s"),
        ] {
            let r = redact(spec);
            assert!(!r.contains(secret), "{spec} -> {r}");
            let argv: Vec<String> = ["latlab", "cyclic", "--store", spec]
                .iter()
                .map(|s| s.to_string())
                .collect();
            assert!(!redact_argv(&argv).join(" ").contains(secret));
            let eq = format!("--store={spec}");
            assert!(!redact_argv(&[eq]).join(" ").contains(secret));
            let env = ["--on-threshold-env".to_string(), format!("TOKEN={secret}")];
            assert_eq!(redact_argv(&env)[1], "TOKEN=<redacted>");
            let env = [format!("--on-threshold-env=TOKEN={secret}")];
            assert_eq!(redact_argv(&env)[0], "--on-threshold-env=TOKEN=<redacted>");
        }
        assert_eq!(
            redact("host=db user=me password=x dbname=y"),
            "host=db user=me password=*** dbname=y"
        );
        assert_eq!(redact("/tmp/plain.db"), "/tmp/plain.db");
    }

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
