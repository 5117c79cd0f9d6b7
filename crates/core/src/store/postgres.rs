//! The PostgreSQL store, for teams and fleets: the same tables, versioned migrations and
//! behaviour as the SQLite store, in a shared server (`--store postgres://user@host/db`).

use super::pg_deadline::Watch;
use super::{BundleEntry, Filter, RunRow, Store, SCHEMA_VERSION};
use crate::error::{Error, Result};
use crate::result::Run;
use postgres::Client;
use std::collections::BTreeMap;
use std::time::Duration;

/// Migrations: index i brings the schema from version i to i + 1.
const MIGRATIONS: &[&str] = &["
    CREATE TABLE IF NOT EXISTS latlab_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    CREATE TABLE latlab_runs (
        id TEXT PRIMARY KEY,
        kind TEXT NOT NULL,
        started TEXT NOT NULL,
        ended TEXT NOT NULL,
        host TEXT NOT NULL,
        interrupted BOOLEAN NOT NULL,
        samples_path TEXT,
        body TEXT NOT NULL
    );
    CREATE TABLE latlab_tags (
        run_id TEXT NOT NULL REFERENCES latlab_runs(id) ON DELETE CASCADE,
        key TEXT NOT NULL,
        value TEXT NOT NULL,
        PRIMARY KEY (run_id, key)
    );
    CREATE INDEX latlab_runs_kind ON latlab_runs(kind);
    CREATE INDEX latlab_runs_host ON latlab_runs(host);
    CREATE INDEX latlab_tags_kv ON latlab_tags(key, value);
"];

/// A PostgreSQL database of runs.
pub(crate) struct PostgresStore {
    /// Declared before the client: the watch (and its thread) ends before the socket closes.
    watch: Watch,
    client: Client,
    shown: String,
    /// To connect again after the time limit (or the server) closed the connection.
    cfg: postgres::Config,
    limit: Duration,
}

impl PostgresStore {
    /// Connects (5 s timeout) and brings the schema up to date; a newer schema is refused.
    pub(crate) fn connect(url: &str, shown: &str) -> Result<PostgresStore> {
        let mut cfg: postgres::Config = encode_userinfo_at(url)
            .parse()
            .map_err(|e| Error::flag("--store", shown, format!("not a PostgreSQL URL: {e}")))?;
        // The URL's own connect_timeout, when it has one, is kept.
        if cfg.get_connect_timeout().is_none() {
            cfg.connect_timeout(Duration::from_secs(5));
        }
        if cfg.get_password().is_none() {
            if let Some(pw) = standard_password(&cfg) {
                cfg.password(pw);
            }
        }
        let limit = super::pg_deadline::limit()?;
        let (client, fd) = super::pg_deadline::connect(&cfg, limit).map_err(|e| {
            Error::Env(format!(
                "store {shown}: cannot reach PostgreSQL: {e}; nothing was written"
            ))
        })?;
        let mut s = PostgresStore {
            watch: Watch::start(fd, limit),
            client,
            shown: shown.to_string(),
            cfg,
            limit,
        };
        let _g = s.watch.guard();
        s.migrate()?;
        Ok(s)
    }

    /// Connects again when the connection is gone (closed by the time limit or by the
    /// server): a monitor that saves for days outlives a server's bad minute.
    fn ready(&mut self) -> Result<()> {
        if !self.client.is_closed() && !self.watch.fired() {
            return Ok(());
        }
        let (client, fd) = super::pg_deadline::connect(&self.cfg, self.limit).map_err(|e| {
            Error::Env(format!(
                "store {}: cannot reach PostgreSQL again: {e}",
                self.shown
            ))
        })?;
        // The old watch ends before its connection closes (see the field order).
        self.watch = Watch::start(fd, self.limit);
        self.client = client;
        Ok(())
    }

    fn err(&self, e: impl std::fmt::Display) -> Error {
        failed(&self.shown, &self.watch, e)
    }

    fn migrate(&mut self) -> Result<()> {
        // The usual case, a store already up to date, costs one round trip instead of a locked
        // transaction of six (a stored run pays for every one). Any doubt (no latlab_meta yet,
        // an older or newer version, no index) takes the locked path below, which decides.
        let current = self
            .client
            .query_one(
                "SELECT (SELECT value FROM latlab_meta WHERE key = 'schema_version'), \
                 to_regclass('latlab_runs_started') IS NOT NULL",
                &[],
            )
            .ok()
            .is_some_and(|r| {
                r.get::<_, Option<String>>(0) == Some(SCHEMA_VERSION.to_string())
                    && r.get::<_, bool>(1)
            });
        if current {
            return Ok(());
        }
        let shown = self.shown.clone();
        let watch = &self.watch;
        let err = |e: postgres::Error| failed(&shown, watch, described(e));
        let mut tx = self.client.transaction().map_err(err)?;
        // One migrator at a time, across processes.
        tx.batch_execute("SELECT pg_advisory_xact_lock(7231001)")
            .map_err(err)?;
        tx.batch_execute(
            "CREATE TABLE IF NOT EXISTS latlab_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
        )
        .map_err(err)?;
        let v: i64 = tx
            .query_opt(
                "SELECT value FROM latlab_meta WHERE key = 'schema_version'",
                &[],
            )
            .map_err(err)?
            .and_then(|r| r.get::<_, String>(0).parse().ok())
            .unwrap_or(0);
        if v > SCHEMA_VERSION {
            return Err(Error::Env(format!(
                "store {shown}: schema version {v} was written by a newer latlab (this one reads up to {SCHEMA_VERSION}); nothing was changed"
            )));
        }
        for (i, sql) in MIGRATIONS.iter().enumerate().skip(v as usize) {
            tx.batch_execute(sql).map_err(err)?;
            tx.execute(
                "INSERT INTO latlab_meta (key, value) VALUES ('schema_version', $1) ON CONFLICT (key) DO UPDATE SET value = $1",
                &[&(i + 1).to_string()],
            )
            .map_err(err)?;
        }
        // Indexes added whatever the schema version (they change no stored data; an older
        // latlab reads the store as before): runs are listed newest first.
        let indexed = tx
            .query_one("SELECT to_regclass('latlab_runs_started') IS NOT NULL", &[])
            .map_err(err)?
            .get::<_, bool>(0);
        if !indexed {
            tx.batch_execute(
                "CREATE INDEX IF NOT EXISTS latlab_runs_started ON latlab_runs(started DESC, id)",
            )
            .map_err(err)?;
        }
        tx.commit().map_err(err)
    }

    fn insert(
        &mut self,
        body: &serde_json::Value,
        tags: &BTreeMap<String, String>,
    ) -> Result<bool> {
        let k = super::RunKeys::of(body)?;
        self.ready()?;
        let _g = self.watch.guard();
        let (shown, watch) = (&self.shown, &self.watch);
        let err = |e: postgres::Error| failed(shown, watch, described(e));
        let mut tx = self.client.transaction().map_err(err)?;
        let n = tx
            .execute(
                "INSERT INTO latlab_runs (id, kind, started, ended, host, interrupted, samples_path, body) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (id) DO NOTHING",
                &[&k.id, &k.kind, &k.started, &k.ended, &k.host, &k.interrupted, &k.samples_path, &k.body],
            )
            .map_err(err)?;
        if n > 0 {
            for (tk, tv) in tags {
                tx.execute(
                    "INSERT INTO latlab_tags (run_id, key, value) VALUES ($1, $2, $3) ON CONFLICT (run_id, key) DO UPDATE SET value = $3",
                    &[&k.id, tk, tv],
                )
                .map_err(err)?;
            }
        }
        tx.commit().map_err(err)?;
        Ok(n > 0)
    }

    fn tags_of(&mut self, id: &str) -> Result<BTreeMap<String, String>> {
        let rows = self
            .client
            .query(
                "SELECT key, value FROM latlab_tags WHERE run_id = $1 ORDER BY key",
                &[&id],
            )
            .map_err(|e| self.err(described(e)))?;
        Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
    }
}

/// A store error: the driver's words, or the time limit's when it closed the connection.
fn failed(shown: &str, watch: &Watch, e: impl std::fmt::Display) -> Error {
    if watch.fired() {
        Error::Env(format!("store {shown}: {}", watch.why()))
    } else {
        Error::Env(format!("store {shown}: {e}"))
    }
}

/// A driver error with the server's own words ("db error" alone names nothing).
fn described(e: postgres::Error) -> String {
    super::pg_deadline::described(&e)
}

/// A URL whose password holds a raw `@` (`postgres://me:p@ss@host/db`), with those `@`
/// percent-encoded as the driver needs them; anything else is returned as it is.
fn encode_userinfo_at(url: &str) -> std::borrow::Cow<'_, str> {
    let Some(i) = url.find("://") else {
        return url.into();
    };
    let rest = &url[i + 3..];
    let host_start = rest.rfind('@').map(|a| a + 1);
    match host_start {
        Some(h) if rest[..h - 1].contains('@') && !rest[..h - 1].contains(['/', '?']) => {
            let user = rest[..h - 1].replace('@', "%40");
            format!("{}{user}@{}", &url[..i + 3], &rest[h..]).into()
        }
        _ => url.into(),
    }
}

/// A password from the standard places when the URL has none: `$PGPASSWORD`, else the first
/// matching line of `$PGPASSFILE` or `~/.pgpass` (`host:port:database:user:password`, `*`
/// matching anything; ignored, as libpq does, unless only its owner can read it).
fn standard_password(cfg: &postgres::Config) -> Option<Vec<u8>> {
    if let Some(pw) = std::env::var_os("PGPASSWORD").filter(|v| !v.is_empty()) {
        use std::os::unix::ffi::OsStrExt;
        return Some(pw.as_bytes().to_vec());
    }
    let file = std::env::var_os("PGPASSFILE")
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| std::path::Path::new(&h).join(".pgpass")))?;
    let host = match cfg.get_hosts().first() {
        Some(postgres::config::Host::Tcp(h)) => h.clone(),
        Some(postgres::config::Host::Unix(p)) => p.display().to_string(),
        None => "localhost".into(),
    };
    let port = cfg.get_ports().first().copied().unwrap_or(5432).to_string();
    let user = cfg
        .get_user()
        .map(String::from)
        .or_else(|| std::env::var("USER").ok())?;
    let db = cfg
        .get_dbname()
        .map(String::from)
        .unwrap_or_else(|| user.clone());
    pgpass_lookup(&file, &[&host, &port, &db, &user])
}

/// The password of the first line of a pgpass file matching `want` (host, port, db, user).
pub(crate) fn pgpass_lookup(file: &std::path::Path, want: &[&str; 4]) -> Option<Vec<u8>> {
    use std::io::Read;
    use std::os::unix::fs::PermissionsExt;
    let f = std::fs::File::open(file).ok()?;
    let meta = f.metadata().ok()?;
    if !meta.is_file() || meta.permissions().mode() & 0o077 != 0 {
        return None;
    }
    let mut text = String::new();
    f.take(1 << 20).read_to_string(&mut text).ok()?;
    for line in text.lines() {
        if line.starts_with('#') {
            continue;
        }
        // Fields split on unescaped ':'; '\\' escapes ':' and '\\'.
        let mut fields = vec![String::new()];
        let mut chars = line.chars();
        while let Some(c) = chars.next() {
            match c {
                '\\' => {
                    if let Some(n) = chars.next() {
                        fields.last_mut()?.push(n);
                    }
                }
                ':' if fields.len() < 5 => fields.push(String::new()),
                c => fields.last_mut()?.push(c),
            }
        }
        if fields.len() != 5 {
            continue;
        }
        if fields[..4]
            .iter()
            .zip(want)
            .all(|(f, w)| f == "*" || f == w)
        {
            return Some(fields[4].clone().into_bytes());
        }
    }
    None
}

/// `Store` takes `&self` for reads; the client needs `&mut`, so reads go through a cell.
pub(crate) struct SharedPostgres(pub(crate) std::cell::RefCell<PostgresStore>);

impl Store for SharedPostgres {
    fn save(&mut self, run: &Run, tags: &BTreeMap<String, String>) -> Result<bool> {
        let v = serde_json::to_value(run).map_err(|e| Error::Env(e.to_string()))?;
        self.0.get_mut().insert(&v, tags)
    }

    fn save_json(
        &mut self,
        run: &serde_json::Value,
        tags: &BTreeMap<String, String>,
    ) -> Result<bool> {
        self.0.get_mut().insert(run, tags)
    }

    fn list(&self, f: &Filter) -> Result<Vec<RunRow>> {
        let mut s = self.0.borrow_mut();
        s.ready()?;
        let _g = s.watch.guard();
        // One query: each run with its tags (a row per tag, in key order), newest first.
        let rows = s
            .client
            .query(
                "SELECT r.id, r.kind, r.started, r.host, r.interrupted, t.key, t.value \
                 FROM latlab_runs r LEFT JOIN latlab_tags t ON t.run_id = r.id \
                 WHERE ($1::TEXT IS NULL OR r.kind = $1) AND ($2::TEXT IS NULL OR r.host = $2) \
                 AND ($3::TEXT IS NULL OR r.started >= $3) \
                 ORDER BY r.started DESC, r.id, t.key",
                &[&f.kind, &f.host, &f.started_from],
            )
            .map_err(|e| s.err(described(e)))?;
        let rows = rows.iter().map(|r| {
            let tag = match (r.get::<_, Option<String>>(5), r.get::<_, Option<String>>(6)) {
                (Some(k), Some(v)) => Some((k, v)),
                _ => None,
            };
            (
                RunRow {
                    id: r.get(0),
                    kind: r.get(1),
                    started: r.get(2),
                    host: r.get(3),
                    interrupted: r.get(4),
                    tags: BTreeMap::new(),
                },
                tag,
            )
        });
        Ok(super::group_listed(rows, f))
    }

    fn get(&self, id: &str) -> Result<BundleEntry> {
        let mut s = self.0.borrow_mut();
        s.ready()?;
        let _g = s.watch.guard();
        let row = s
            .client
            .query_opt("SELECT body FROM latlab_runs WHERE id = $1", &[&id])
            .map_err(|e| s.err(described(e)))?;
        let row = row.ok_or_else(|| Error::Usage(format!("no run '{id}' in store {}", s.shown)))?;
        let body: String = row.get(0);
        let run = serde_json::from_str(&body).map_err(|e| s.err(format!("run {id}: {e}")))?;
        Ok(BundleEntry {
            run,
            tags: s.tags_of(id)?,
        })
    }

    fn delete(&mut self, id: &str) -> Result<()> {
        let s = self.0.get_mut();
        s.ready()?;
        let _g = s.watch.guard();
        let n = s
            .client
            .execute("DELETE FROM latlab_runs WHERE id = $1", &[&id])
            .map_err(|e| s.err(described(e)))?;
        if n == 0 {
            return Err(Error::Usage(format!("no run '{id}' in store {}", s.shown)));
        }
        Ok(())
    }

    fn location(&self) -> String {
        self.0.borrow().shown.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_at_signs_in_passwords_are_encoded() {
        assert_eq!(
            encode_userinfo_at("postgres://me:p@ss@db:5432/x"),
            "postgres://me:p%40ss@db:5432/x"
        );
        assert_eq!(
            encode_userinfo_at("postgres://me:pw@db/x?application_name=a@b"),
            "postgres://me:pw@db/x?application_name=a@b"
        );
        assert_eq!(encode_userinfo_at("postgres://db/x"), "postgres://db/x");
    }

    #[test]
    fn pgpass_lines_match_like_libpq() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("pgpass");
        std::fs::write(
            &f,
            "# comment\nother:5432:*:me:wrong\ndb:*:x:me:p\\:w\\\\d\n*:*:*:*:fallback\n",
        )
        .unwrap();
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(
            pgpass_lookup(&f, &["db", "5432", "x", "me"]).unwrap(),
            b"p:w\\d"
        );
        assert_eq!(
            pgpass_lookup(&f, &["h", "1", "y", "you"]).unwrap(),
            b"fallback"
        );
        // Readable by others: ignored, as libpq does.
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(pgpass_lookup(&f, &["db", "5432", "x", "me"]).is_none());
    }
}
