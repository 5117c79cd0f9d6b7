//! The results store: every run is kept and found again; bundles round-trip; concurrent
//! writers lose nothing; a corrupt or newer store is refused, never re-created.

use crate::util::latlab;
use std::path::Path;

fn store_arg(p: &Path) -> String {
    format!("sqlite:{}", p.display())
}

fn measure(store: &str, tags: &[&str]) -> String {
    let mut c = latlab();
    c.args(["cyclic", "-l", "20", "-i", "200us", "-q", "--store", store]);
    for t in tags {
        c.args(["--tag", t]);
    }
    let out = c.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let err = String::from_utf8_lossy(&out.stderr);
    let line = err
        .lines()
        .find(|l| l.contains(" stored in "))
        .expect("no 'stored in' line");
    line.split_whitespace().nth(2).unwrap().to_string()
}

fn runs(store: &str, args: &[&str]) -> std::process::Output {
    latlab()
        .arg("runs")
        .args(args)
        .args(["--store", store])
        .output()
        .unwrap()
}

#[test]
fn stored_runs_are_listed_shown_exported_and_imported_losslessly() {
    let dir = tempfile::tempdir().unwrap();
    let a = store_arg(&dir.path().join("a.db"));
    let id1 = measure(&a, &["kernel=base"]);
    let id2 = measure(&a, &["kernel=patched", "host-group=lab"]);
    let list = String::from_utf8_lossy(&runs(&a, &["list"]).stdout).to_string();
    assert!(list.contains(&id1) && list.contains(&id2), "{list}");
    let only =
        String::from_utf8_lossy(&runs(&a, &["list", "--tag", "kernel=patched"]).stdout).to_string();
    assert!(only.contains(&id2) && !only.contains(&id1), "{only}");
    let show = runs(&a, &["show", &id1]);
    let v: serde_json::Value = serde_json::from_slice(&show.stdout).unwrap();
    assert_eq!(v["run"]["id"], id1.as_str());
    assert_eq!(v["tags"]["kernel"], "base");
    assert_eq!(v["run"]["series"][0]["count"], 20);

    let bundle = dir.path().join("bundle.json");
    let exported = runs(&a, &["export", &id1, &id2]);
    assert!(exported.status.success());
    std::fs::write(&bundle, &exported.stdout).unwrap();
    let b = store_arg(&dir.path().join("b.db"));
    let imp = runs(&b, &["import", bundle.to_str().unwrap()]);
    assert!(
        String::from_utf8_lossy(&imp.stdout).contains("imported 2 new run(s), 0 already present")
    );
    let again = runs(&b, &["import", bundle.to_str().unwrap()]);
    assert!(
        String::from_utf8_lossy(&again.stdout).contains("imported 0 new run(s), 2 already present"),
        "import is not idempotent"
    );
    let re = runs(&b, &["export", &id1, &id2]);
    assert_eq!(
        serde_json::from_slice::<serde_json::Value>(&re.stdout).unwrap(),
        serde_json::from_slice::<serde_json::Value>(&exported.stdout).unwrap(),
        "export → import → export changed the data"
    );
    // Compare two stored runs by id.
    let cmp = latlab()
        .args([
            "compare",
            &format!("base=run:{id1}"),
            &format!("new=run:{id2}"),
            "--store",
            &a,
        ])
        .output()
        .unwrap();
    assert!(
        cmp.status.success(),
        "{}",
        String::from_utf8_lossy(&cmp.stderr)
    );
    assert!(String::from_utf8_lossy(&cmp.stdout).contains("values in us"));
    // Delete.
    assert!(runs(&a, &["delete", &id1]).status.success());
    let gone = runs(&a, &["show", &id1]);
    assert_eq!(gone.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&gone.stderr).contains(&id1));
}

#[test]
fn four_concurrent_writers_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.db");
    let s = store_arg(&path);
    // Create the store first, then four writers at once.
    measure(&s, &[]);
    let handles: Vec<_> = (0..4)
        .map(|i| {
            let s = s.clone();
            std::thread::spawn(move || {
                latlab()
                    .args([
                        "cyclic", "-l", "30", "-i", "100us", "-q", "--store", &s, "--tag",
                    ])
                    .arg(format!("thread={i}"))
                    .output()
                    .unwrap()
            })
        })
        .collect();
    for h in handles {
        assert!(h.join().unwrap().status.success());
    }
    let conn = rusqlite::Connection::open(&path).unwrap();
    let n: i64 = conn
        .query_row("SELECT count(*) FROM runs", [], |r| r.get(0))
        .unwrap();
    assert_eq!(n, 5);
    let ok: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(ok, "ok");
}

#[test]
fn corrupt_foreign_or_newer_stores_are_refused_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let junk = dir.path().join("junk.db");
    std::fs::write(
        &junk,
        b"this is not a database, it is a shopping list\n".repeat(200),
    )
    .unwrap();
    let foreign = dir.path().join("foreign.db");
    rusqlite::Connection::open(&foreign)
        .unwrap()
        .execute_batch("CREATE TABLE recipes (name TEXT);")
        .unwrap();
    let newer = dir.path().join("newer.db");
    measure(&store_arg(&newer), &[]);
    rusqlite::Connection::open(&newer)
        .unwrap()
        .execute(
            "UPDATE meta SET value = '99' WHERE key = 'schema_version'",
            [],
        )
        .unwrap();
    for (p, want) in [
        (&junk, "not a readable SQLite database"),
        (&foreign, "not a latlab store"),
        (&newer, "newer latlab"),
    ] {
        let before = std::fs::read(p).unwrap();
        let out = latlab()
            .args(["cyclic", "-l", "5", "-q", "--store", &store_arg(p)])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "{}: {err}", p.display());
        assert!(
            err.contains(want) && err.contains("left untouched"),
            "{}: {err}",
            p.display()
        );
        assert_eq!(
            std::fs::read(p).unwrap(),
            before,
            "{} was modified",
            p.display()
        );
    }
}

#[test]
fn no_store_stores_nothing_and_bad_tags_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let s = store_arg(&dir.path().join("n.db"));
    let out = latlab()
        .args(["cyclic", "-l", "5", "-q", "--no-store", "--store", &s])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(!dir.path().join("n.db").exists());
    let out = latlab()
        .args(["cyclic", "-l", "5", "-q", "--tag", "oops"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--tag oops"));
    let out = latlab()
        .args(["runs", "import", "/nonexistent/bundle.json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

/// The PostgreSQL server the test command starts (scripts/pg-test-server.sh).
fn pg() -> Option<String> {
    std::env::var("LATLAB_TEST_PG")
        .ok()
        .filter(|v| !v.is_empty())
}

#[test]
fn postgres_stores_lists_and_round_trips_through_sqlite() {
    let Some(pg) = pg() else {
        return crate::util::skip(
            "postgres_stores_lists_and_round_trips_through_sqlite",
            "LATLAB_TEST_PG is not set (scripts/test.sh starts a server and sets it)",
        );
    };
    let tag = format!("pgtest={}", std::process::id());
    let id1 = measure(&pg, &[&tag, "kernel=base"]);
    let id2 = measure(&pg, &[&tag, "kernel=patched"]);
    let list = String::from_utf8_lossy(&runs(&pg, &["list", "--tag", &tag]).stdout).to_string();
    assert_eq!(list.lines().count(), 3, "{list}");
    let only = String::from_utf8_lossy(
        &runs(&pg, &["list", "--tag", &tag, "--tag", "kernel=patched"]).stdout,
    )
    .to_string();
    assert!(only.contains(&id2) && !only.contains(&id1), "{only}");
    // PostgreSQL -> bundle -> SQLite -> bundle: nothing changes.
    let dir = tempfile::tempdir().unwrap();
    let bundle = dir.path().join("b.json");
    let exported = runs(&pg, &["export", &id1, &id2]);
    assert!(
        exported.status.success(),
        "{}",
        String::from_utf8_lossy(&exported.stderr)
    );
    std::fs::write(&bundle, &exported.stdout).unwrap();
    let lite = store_arg(&dir.path().join("l.db"));
    assert!(runs(&lite, &["import", bundle.to_str().unwrap()])
        .status
        .success());
    let re = runs(&lite, &["export", &id1, &id2]);
    assert_eq!(
        serde_json::from_slice::<serde_json::Value>(&re.stdout).unwrap(),
        serde_json::from_slice::<serde_json::Value>(&exported.stdout).unwrap()
    );
    // Import into PostgreSQL again: idempotent.
    let again = runs(&pg, &["import", bundle.to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&again.stdout).contains("0 new run(s), 2 already present"));
    // Compare by id from PostgreSQL; delete.
    let cmp = latlab()
        .args([
            "compare",
            &format!("a=run:{id1}"),
            &format!("b=run:{id2}"),
            "--store",
            &pg,
        ])
        .output()
        .unwrap();
    assert!(
        cmp.status.success(),
        "{}",
        String::from_utf8_lossy(&cmp.stderr)
    );
    assert!(runs(&pg, &["delete", &id1]).status.success());
    assert_eq!(runs(&pg, &["show", &id1]).status.code(), Some(2));
}

#[test]
fn postgres_four_concurrent_writers_lose_nothing() {
    let Some(pg) = pg() else {
        return crate::util::skip(
            "postgres_four_concurrent_writers_lose_nothing",
            "LATLAB_TEST_PG is not set",
        );
    };
    let tag = format!("pgconc={}", std::process::id());
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let (pg, tag) = (pg.clone(), tag.clone());
            std::thread::spawn(move || {
                latlab()
                    .args([
                        "cyclic", "-l", "30", "-i", "100us", "-q", "--store", &pg, "--tag", &tag,
                    ])
                    .output()
                    .unwrap()
            })
        })
        .collect();
    for h in handles {
        let o = h.join().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    let list = String::from_utf8_lossy(&runs(&pg, &["list", "--tag", &tag]).stdout).to_string();
    assert_eq!(list.lines().count(), 1 + 4, "{list}");
}

#[test]
fn unreachable_postgres_is_a_clear_error_and_nothing_is_written() {
    let out = latlab()
        .args([
            "cyclic",
            "-l",
            "5",
            "-q",
            "--store",
            "postgres://nobody:secret@127.0.0.1:1/none",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(
        err.contains("cannot reach PostgreSQL") && err.contains("nothing was written"),
        "{err}"
    );
    assert!(!err.contains("secret"), "the password leaked: {err}");
    assert!(
        out.stdout.is_empty(),
        "it measured before finding the store unreachable"
    );
}
