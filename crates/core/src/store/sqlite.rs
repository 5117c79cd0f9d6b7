//! The SQLite store: one file, WAL mode so several latlab processes can write at once, versioned
//! migrations, and a refusal (never a re-creation) when the file is corrupt or newer.

use super::{BundleEntry, Filter, RunRow, Store, SCHEMA_VERSION};
use crate::error::{Error, Result};
use crate::result::Run;
use rusqlite::{params, Connection, OptionalExtension};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Migrations: index i brings the schema from version i to i + 1.
const MIGRATIONS: &[&str] = &["
    CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    CREATE TABLE runs (
        id TEXT PRIMARY KEY,
        kind TEXT NOT NULL,
        started TEXT NOT NULL,
        ended TEXT NOT NULL,
        host TEXT NOT NULL,
        interrupted INTEGER NOT NULL,
        samples_path TEXT,
        body TEXT NOT NULL
    );
    CREATE TABLE tags (
        run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        key TEXT NOT NULL,
        value TEXT NOT NULL,
        PRIMARY KEY (run_id, key)
    );
    CREATE INDEX runs_kind ON runs(kind);
    CREATE INDEX runs_host ON runs(host);
    CREATE INDEX tags_kv ON tags(key, value);
"];

/// Indexes added on open, whatever the schema version (an index changes no stored data, so an
/// older latlab still reads the store): runs are listed newest first. Both cover what a
/// listing reads, so `runs list` never reads the runs' rows, whose bodies fill a page each.
const INDEXES: &str = "
    CREATE INDEX IF NOT EXISTS runs_listed ON runs(started DESC, id, kind, host, interrupted);
    CREATE INDEX IF NOT EXISTS tags_listed ON tags(run_id, key, value);
";

/// `runs list`'s query (kind, host, start-time bound): each run with its tags (a row per
/// tag), newest first, from the two covering indexes alone.
const LIST: &str = "SELECT r.id, r.kind, r.started, r.host, r.interrupted, t.key, t.value \
    FROM runs r LEFT JOIN tags t ON t.run_id = r.id \
    WHERE (?1 IS NULL OR r.kind = ?1) AND (?2 IS NULL OR r.host = ?2) \
    AND (?3 IS NULL OR r.started >= ?3) \
    ORDER BY r.started DESC, r.id";

/// The names of [`INDEXES`].
const INDEX_NAMES: &str = "'runs_listed', 'tags_listed'";

/// The tables a latlab store holds.
const TABLES: &[&str] = &["meta", "runs", "tags"];

/// An error in a few words: SQLite's message without the statement it came from (a migration's
/// SQL is no business of the person reading the message).
fn brief(e: &rusqlite::Error) -> String {
    match e {
        rusqlite::Error::SqlInputError { msg, .. } => msg.clone(),
        rusqlite::Error::SqliteFailure(f, Some(m)) => format!("{m} ({:?})", f.code),
        rusqlite::Error::SqliteFailure(f, None) => format!("{:?}", f.code),
        other => other.to_string(),
    }
}

/// `path` as a `file:` URI's path: every byte outside the unreserved set percent-encoded.
fn uri_path(path: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let mut out = String::new();
    for &b in path.as_os_str().as_bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' | b'/' => {
                out.push(b as char)
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// The store's schema version (0: none yet) and how many of the listing indexes it has.
fn schema_state(conn: &Connection) -> rusqlite::Result<(i64, i64)> {
    let has_meta: i64 = conn.query_row(
        "SELECT count(*) FROM sqlite_master WHERE type='table' AND name='meta'",
        [],
        |r| r.get(0),
    )?;
    let v = if has_meta == 0 {
        0
    } else {
        conn.query_row(
            "SELECT value FROM meta WHERE key = 'schema_version'",
            [],
            |r| r.get::<_, String>(0),
        )
        .optional()?
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
    };
    let indexed = conn.query_row(
        &format!(
            "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name IN ({INDEX_NAMES})"
        ),
        [],
        |r| r.get(0),
    )?;
    Ok((v, indexed))
}

/// A non-empty existing file must start like a SQLite database.
fn check_header(path: &Path) -> std::result::Result<(), String> {
    use std::io::Read;
    let mut head = Vec::with_capacity(16);
    crate::io::open_typed(path, None, false)
        .and_then(|f| f.take(16).read_to_end(&mut head))
        .map_err(|e| format!("cannot read it ({e})"))?;
    if head.is_empty() || head == b"SQLite format 3\0" {
        return Ok(());
    }
    Err("not a readable SQLite database (it does not start with the SQLite header); latlab never takes over other files".into())
}

/// Reads (only) an existing database: a latlab store of a schema this latlab knows, or empty.
fn inspect(conn: &Connection) -> std::result::Result<(), String> {
    let tables: Vec<String> = conn
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table'")
        .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect())
        .map_err(|e| match brief(&e) {
            b if b.contains("database is locked") => LOCKED.to_string(),
            // Readable, not writable (another user's store, a WAL store's -shm it may not
            // create): said so, not called unreadable.
            b if b.contains("readonly") => format!(
                "this user may not write it ({b}): run latlab as the store's owner, or give --store a store of your own"
            ),
            b => format!("not a readable SQLite database ({b})"),
        })?;
    if tables.is_empty() {
        return Ok(());
    }
    if !tables.iter().any(|t| t == "meta") {
        return Err("a SQLite database, but not a latlab store (no meta table)".into());
    }
    let v: Option<String> = conn
        .query_row(
            "SELECT value FROM meta WHERE key = 'schema_version'",
            [],
            |r| r.get(0),
        )
        .optional()
        .map_err(|e| {
            format!(
                "a SQLite database, but not a latlab store (its meta table: {})",
                brief(&e)
            )
        })?;
    let v: i64 = match v.as_deref().map(str::parse) {
        Some(Ok(v)) if v >= 1 => v,
        _ => return Err("a SQLite database, but not a latlab store (no schema version)".into()),
    };
    if v > SCHEMA_VERSION {
        return Err(format!(
            "schema version {v} was written by a newer latlab (this one reads up to {SCHEMA_VERSION})"
        ));
    }
    if let Some(t) = TABLES.iter().find(|t| !tables.iter().any(|x| x == *t)) {
        return Err(format!("a damaged latlab store (no {t} table)"));
    }
    Ok(())
}

/// A SQLite file of runs.
pub struct SqliteStore {
    conn: Connection,
    path: PathBuf,
}

/// What one stored run costs, and why nothing reported as stored can be lost.
///
/// A run is reported as stored only after its transaction commits; in WAL mode with
/// `synchronous = FULL` (set here, whatever SQLite's compiled-in default) a commit returns only
/// after the WAL is fsynced, so that commit survives a crash or a power cut. (`NORMAL` would
/// defer that fsync to the next checkpoint and could lose the last runs on a power cut, after
/// they were reported as stored.)
///
/// The checkpoint SQLite makes when the last connection closes is kept, though it costs fsyncs
/// (five per stored run in all: the WAL's header and directory, the commit, the checkpoint's
/// WAL and database): measured, they are not what a stored run costs on this kind of machine
/// (docs/benchmarks.md: dropping three of them moved nothing beyond the spread), and with it
/// the database file alone holds every run once latlab has exited — a store copied as one
/// file (to another machine, into `runs import`) misses nothing. Keeping the WAL between
/// processes was tried and not kept for that reason.
fn durable_commits(conn: &Connection) -> rusqlite::Result<()> {
    conn.pragma_update(None, "synchronous", "FULL")
}

/// What a store another process kept locked past the busy wait says (SQLite's own words,
/// "database is locked", read as if the file were at fault).
const LOCKED: &str = "still locked by another process after 30 s (try again once it is released)";

fn env_err(path: &Path, e: impl std::fmt::Display) -> Error {
    let e = e.to_string();
    let e = if e.contains("database is locked") {
        LOCKED
    } else {
        &e
    };
    Error::Env(format!("store {}: {e}", path.display()))
}

impl SqliteStore {
    /// Opens (creating if absent) the store at `path` and brings its schema up to date.
    /// A file that is not a latlab store, is corrupt, or has a newer schema is refused and left
    /// byte-identical: it is inspected before anything (journal mode, migration) is written.
    pub fn open(path: &Path) -> Result<SqliteStore> {
        let refuse = |why: String| {
            Error::Env(format!(
                "store {}: {why}; the file was left untouched",
                path.display()
            ))
        };
        let existed = match std::fs::symlink_metadata(path) {
            Ok(m) if m.file_type().is_symlink() => {
                // Follow it, but only to a regular file.
                match std::fs::metadata(path) {
                    Ok(t) if t.is_file() => true,
                    Ok(_) => return Err(refuse("not a regular file".into())),
                    Err(_) => return Err(refuse("a dangling symbolic link".into())),
                }
            }
            Ok(m) if m.is_file() => true,
            Ok(_) => return Err(refuse("not a regular file".into())),
            Err(_) => false,
        };
        if existed {
            check_header(path).map_err(refuse)?;
        }
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| {
                Error::Env(format!(
                    "store {}: cannot create {}: {e}",
                    path.display(),
                    dir.display()
                ))
            })?;
        }
        let mut conn = Connection::open(path).map_err(|e| env_err(path, brief(&e)))?;
        super::busy::install(
            &mut conn,
            &crate::output::printable(&path.display().to_string()),
        )
        .map_err(|e| env_err(path, brief(&e)))?;
        if existed {
            inspect(&conn).map_err(refuse)?;
        }
        // Switching to WAL needs a moment alone with the file (only once: the mode is kept in the
        // file); other latlab processes may be opening it too, so retry while it is busy.
        let t0 = std::time::Instant::now();
        loop {
            let mode: std::result::Result<String, _> =
                conn.query_row("PRAGMA journal_mode", [], |r| r.get(0));
            if mode.as_deref().is_ok_and(|m| m.eq_ignore_ascii_case("wal")) {
                break;
            }
            match conn.pragma_update(None, "journal_mode", "WAL") {
                Ok(()) => break,
                Err(e)
                    if t0.elapsed() < std::time::Duration::from_secs(30)
                        && e.to_string().contains("locked") =>
                {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                Err(e) => return Err(env_err(path, format!("cannot enable WAL ({})", brief(&e)))),
            }
        }
        conn.pragma_update(None, "foreign_keys", "ON")
            .map_err(|e| env_err(path, brief(&e)))?;
        durable_commits(&conn).map_err(|e| env_err(path, brief(&e)))?;
        let mut store = SqliteStore {
            conn,
            path: path.to_path_buf(),
        };
        store.migrate()?;
        Ok(store)
    }

    /// Opens an existing store for a command that only reads it. Another user's store whose
    /// write-ahead log is not open (no `-shm` beside it), or one in a directory latlab may not
    /// write, is read as it is on disk (`immutable`): taking part in its locking would leave
    /// `-wal`/`-shm` files owned by this user that its owner could then not write, or fail.
    pub(crate) fn open_reading(path: &Path) -> Result<SqliteStore> {
        use std::os::unix::fs::MetadataExt;
        let shm = PathBuf::from(format!("{}-shm", path.display()));
        // (Only a regular file: `open` refuses the rest without reading them.)
        let foreign = std::fs::metadata(path)
            .is_ok_and(|m| m.is_file() && m.uid() != crate::sys::sched::euid() && !shm.exists());
        if !foreign {
            match SqliteStore::open(path) {
                Err(e)
                    if e.to_string().contains("readonly database")
                        && std::fs::metadata(path).is_ok_and(|m| m.is_file()) => {}
                other => return other,
            }
        }
        let refuse = |why: String| {
            Error::Env(format!(
                "store {}: {why}; the file was left untouched",
                crate::output::printable(&path.display().to_string())
            ))
        };
        check_header(path).map_err(refuse)?;
        let uri = format!("file:{}?immutable=1", uri_path(path));
        let conn = Connection::open_with_flags(
            &uri,
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_URI,
        )
        .map_err(|e| env_err(path, brief(&e)))?;
        inspect(&conn).map_err(refuse)?;
        crate::note!(
            "latlab: store {} read as it is on disk (another user's, or in a directory latlab \
             may not write): a run being stored meanwhile may not show",
            crate::output::printable(&path.display().to_string())
        );
        Ok(SqliteStore {
            conn,
            path: path.to_path_buf(),
        })
    }

    /// An empty store in memory standing for `path`, which does not exist: what a reading
    /// command sees there, without creating the file.
    pub(crate) fn open_empty(path: &Path) -> Result<SqliteStore> {
        let conn = Connection::open_in_memory().map_err(|e| env_err(path, brief(&e)))?;
        let mut store = SqliteStore {
            conn,
            path: path.to_path_buf(),
        };
        store.migrate()?;
        Ok(store)
    }

    fn migrate(&mut self) -> Result<()> {
        // A store already up to date is only read: a command that lists or shows runs must not
        // need the write lock (in WAL mode, another process's writing does not stop a reader).
        let (v, indexed) = schema_state(&self.conn).map_err(|e| env_err(&self.path, e))?;
        if v == SCHEMA_VERSION && indexed == 2 {
            return Ok(());
        }
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(|e| env_err(&self.path, e))?;
        // Again, under the lock: another process may have migrated it meanwhile.
        let (v, indexed) = schema_state(&tx).map_err(|e| env_err(&self.path, e))?;
        if v > SCHEMA_VERSION {
            return Err(Error::Env(format!(
                "store {}: schema version {v} was written by a newer latlab (this one reads up to {SCHEMA_VERSION}); the file was left untouched",
                self.path.display()
            )));
        }
        for (i, sql) in MIGRATIONS.iter().enumerate().skip(v as usize) {
            tx.execute_batch(sql).map_err(|e| {
                env_err(
                    &self.path,
                    format!("migration to version {} failed: {}", i + 1, brief(&e)),
                )
            })?;
            tx.execute(
                "INSERT OR REPLACE INTO meta (key, value) VALUES ('schema_version', ?1)",
                params![(i + 1).to_string()],
            )
            .map_err(|e| env_err(&self.path, e))?;
        }
        if indexed < 2 {
            tx.execute_batch(INDEXES)
                .map_err(|e| env_err(&self.path, format!("cannot add an index: {}", brief(&e))))?;
        }
        tx.commit().map_err(|e| env_err(&self.path, e))?;
        Ok(())
    }

    fn insert(
        &mut self,
        body: &serde_json::Value,
        tags: &BTreeMap<String, String>,
    ) -> Result<bool> {
        let k = super::RunKeys::of(body)?;
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(|e| env_err(&self.path, e))?;
        let n = tx
            .execute(
                "INSERT OR IGNORE INTO runs (id, kind, started, ended, host, interrupted, samples_path, body) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                params![k.id, k.kind, k.started, k.ended, k.host, k.interrupted as i64, k.samples_path, k.body],
            )
            .map_err(|e| env_err(&self.path, e))?;
        if n > 0 {
            for (tk, tv) in tags {
                tx.execute(
                    "INSERT OR REPLACE INTO tags (run_id, key, value) VALUES (?1, ?2, ?3)",
                    params![k.id, tk, tv],
                )
                .map_err(|e| env_err(&self.path, e))?;
            }
        }
        tx.commit().map_err(|e| env_err(&self.path, e))?;
        Ok(n > 0)
    }

    fn tags_of(&self, id: &str) -> Result<BTreeMap<String, String>> {
        let mut st = self
            .conn
            .prepare("SELECT key, value FROM tags WHERE run_id = ?1 ORDER BY key")
            .map_err(|e| env_err(&self.path, e))?;
        let rows = st
            .query_map(params![id], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
            })
            .map_err(|e| env_err(&self.path, e))?;
        rows.collect::<std::result::Result<BTreeMap<_, _>, _>>()
            .map_err(|e| env_err(&self.path, e))
    }

    /// `PRAGMA integrity_check`: "ok" when the file is sound.
    #[cfg(test)]
    pub(crate) fn integrity(&self) -> Result<String> {
        self.conn
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .map_err(|e| env_err(&self.path, e))
    }
}

impl Store for SqliteStore {
    fn save(&mut self, run: &Run, tags: &BTreeMap<String, String>) -> Result<bool> {
        let v = serde_json::to_value(run).map_err(|e| env_err(&self.path, e))?;
        self.insert(&v, tags)
    }

    fn save_json(
        &mut self,
        run: &serde_json::Value,
        tags: &BTreeMap<String, String>,
    ) -> Result<bool> {
        self.insert(run, tags)
    }

    fn list(&self, f: &Filter) -> Result<Vec<RunRow>> {
        let mut st = self
            .conn
            .prepare(LIST)
            .map_err(|e| env_err(&self.path, e))?;
        let rows = st
            .query_map(params![f.kind, f.host, f.started_from], |r| {
                // Read leniently: one row damaged by hand (a blob, bytes that are not text)
                // must not hide every other run. Such a row lists with U+FFFD where its bytes
                // were, and reading it back (`get`, which is strict) names it.
                let tag = match (listed(r, 5)?, listed(r, 6)?) {
                    (Some(k), Some(v)) => Some((k, v)),
                    _ => None,
                };
                Ok((
                    RunRow {
                        id: listed(r, 0)?.unwrap_or_default(),
                        kind: listed(r, 1)?.unwrap_or_default(),
                        started: listed(r, 2)?.unwrap_or_default(),
                        host: listed(r, 3)?.unwrap_or_default(),
                        interrupted: listed(r, 4)?.is_some_and(|v| v != "0"),
                        tags: BTreeMap::new(),
                    },
                    tag,
                ))
            })
            .map_err(|e| env_err(&self.path, e))?
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(|e| env_err(&self.path, e))?;
        Ok(super::group_listed(rows, f))
    }

    fn get(&self, id: &str) -> Result<BundleEntry> {
        let body: Option<String> = self
            .conn
            .query_row("SELECT body FROM runs WHERE id = ?1", params![id], |r| {
                r.get(0)
            })
            .optional()
            .map_err(|e| env_err(&self.path, e))?;
        let body = body.ok_or_else(|| {
            Error::Usage(format!("no run '{id}' in store {}", self.path.display()))
        })?;
        let run = serde_json::from_str(&body)
            .map_err(|e| env_err(&self.path, format!("run {id}: {e}")))?;
        Ok(BundleEntry {
            run,
            tags: self.tags_of(id)?,
        })
    }

    fn delete(&mut self, id: &str) -> Result<()> {
        let n = self
            .conn
            .execute("DELETE FROM runs WHERE id = ?1", params![id])
            .map_err(|e| env_err(&self.path, e))?;
        if n == 0 {
            return Err(Error::Usage(format!(
                "no run '{id}' in store {}",
                self.path.display()
            )));
        }
        Ok(())
    }

    fn location(&self) -> String {
        crate::output::printable(&self.path.display().to_string()).into_owned()
    }
}

/// Column `i` of a listed row as text whatever SQLite holds there (None: NULL); bytes that are
/// not UTF-8 become U+FFFD.
fn listed(r: &rusqlite::Row<'_>, i: usize) -> rusqlite::Result<Option<String>> {
    use rusqlite::types::ValueRef;
    Ok(match r.get_ref(i)? {
        ValueRef::Null => None,
        ValueRef::Integer(n) => Some(n.to_string()),
        ValueRef::Real(x) => Some(x.to_string()),
        ValueRef::Text(b) | ValueRef::Blob(b) => Some(String::from_utf8_lossy(b).into_owned()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn index_exists(s: &SqliteStore) -> bool {
        s.conn
            .query_row(
                &format!(
                    "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name IN ({INDEX_NAMES})"
                ),
                [],
                |r| r.get::<_, i64>(0),
            )
            .unwrap()
            == 2
    }

    fn plan(s: &SqliteStore) -> String {
        let mut st = s
            .conn
            .prepare(&format!("EXPLAIN QUERY PLAN {LIST}"))
            .unwrap();
        let rows = st
            .query_map(
                params![None::<String>, None::<String>, None::<String>],
                |r| r.get::<_, String>(3),
            )
            .unwrap();
        rows.map(|r| r.unwrap()).collect::<Vec<_>>().join("; ")
    }

    #[test]
    fn the_listing_indexes_are_made_and_added_to_a_store_that_lacks_them() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("runs.db");
        let s = SqliteStore::open(&p).unwrap();
        assert!(index_exists(&s));
        // A listing reads the two covering indexes, never the runs' rows (their bodies).
        let plan = plan(&s);
        assert!(
            plan.contains("COVERING INDEX runs_listed")
                && plan.contains("COVERING INDEX tags_listed"),
            "{plan}"
        );
        s.conn.execute_batch("DROP INDEX runs_listed").unwrap();
        drop(s);
        let s = SqliteStore::open(&p).unwrap();
        assert!(index_exists(&s), "an older store gets the index on open");
    }

    #[test]
    fn runs_are_listed_newest_first_with_all_their_tags_in_one_query() {
        let d = tempfile::tempdir().unwrap();
        let s = SqliteStore::open(&d.path().join("runs.db")).unwrap();
        for (id, started) in [
            ("a", "2026-11-01"),
            ("b", "2026-11-03"),
            ("c", "2026-11-02"),
        ] {
            s.conn
                .execute(
                    "INSERT INTO runs VALUES (?1, 'cyclic', ?2, ?2, 'h', 0, NULL, '{}')",
                    params![id, started],
                )
                .unwrap();
        }
        for (id, k, v) in [
            ("b", "kernel", "6.1"),
            ("b", "patch", "x"),
            ("a", "kernel", "6.2"),
        ] {
            s.conn
                .execute("INSERT INTO tags VALUES (?1, ?2, ?3)", params![id, k, v])
                .unwrap();
        }
        let all = s.list(&Filter::default()).unwrap();
        let ids: Vec<&str> = all.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(ids, ["b", "c", "a"]);
        assert_eq!(all[0].tags.len(), 2);
        assert!(all[1].tags.is_empty());
        assert_eq!(all[2].tags["kernel"], "6.2");
        let f = Filter {
            tags: vec![("patch".into(), "x".into())],
            started_from: Some("2026-11-02".into()),
            ..Filter::default()
        };
        let kept = s.list(&f).unwrap();
        assert_eq!(kept.len(), 1);
        assert_eq!(kept[0].tags["kernel"], "6.1");
    }

    #[test]
    fn commits_are_synced_and_the_database_file_alone_holds_them_after_close() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("runs.db");
        let mut s = SqliteStore::open(&p).unwrap();
        let sync: i64 = s
            .conn
            .query_row("PRAGMA synchronous", [], |r| r.get(0))
            .unwrap();
        assert_eq!(sync, 2, "synchronous = FULL: each commit fsyncs the WAL");
        let run = crate::result::Run::new(
            "cyclic",
            std::time::SystemTime::now(),
            vec!["latlab cyclic".into()],
            serde_json::json!({}),
            crate::result::Environment::capture(),
        );
        assert!(s.save(&run, &BTreeMap::new()).unwrap());
        drop(s);
        // Checkpointed on close: the file copied alone has the run.
        let copy = d.path().join("copy.db");
        std::fs::copy(&p, &copy).unwrap();
        let s = SqliteStore::open(&copy).unwrap();
        assert_eq!(s.list(&Filter::default()).unwrap()[0].id, run.id);
        assert_eq!(s.integrity().unwrap(), "ok");
    }

    #[test]
    fn an_import_the_store_stops_says_how_far_it_got() {
        let d = tempfile::tempdir().unwrap();
        let mut s = SqliteStore::open(&d.path().join("runs.db")).unwrap();
        // The store takes one run, then refuses (as a full disk would).
        s.conn
            .execute_batch(
                "CREATE TRIGGER full BEFORE INSERT ON runs WHEN (SELECT count(*) FROM runs) >= 1 \
                 BEGIN SELECT RAISE(ABORT, 'disk full'); END;",
            )
            .unwrap();
        let runs = (0..3)
            .map(|i| {
                let mut r = crate::result::Run::new(
                    "cyclic",
                    std::time::SystemTime::now(),
                    vec!["latlab cyclic".into()],
                    serde_json::json!({}),
                    crate::result::Environment::capture(),
                );
                r.id = format!("{}-{i}", r.id);
                super::super::BundleEntry {
                    run: serde_json::to_value(&r).unwrap(),
                    tags: BTreeMap::new(),
                }
            })
            .collect();
        let b = super::super::Bundle {
            format: super::super::BUNDLE_FORMAT.into(),
            runs,
        };
        let e = super::super::import(&mut s, &b, &|| false)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("disk full")
                && e.contains("1 new run(s) imported, 0 already present, 2 not reached"),
            "{e}"
        );
    }

    #[test]
    fn a_lock_held_past_the_wait_is_said_as_a_lock() {
        let e = env_err(Path::new("/s.db"), "database is locked").to_string();
        assert!(
            e.contains("still locked by another process after 30 s"),
            "{e}"
        );
        assert!(!env_err(Path::new("/s.db"), "disk I/O error")
            .to_string()
            .contains("locked"));
    }
}
