//! The results store: every run is kept and found again; bundles round-trip; concurrent
//! writers lose nothing; a corrupt or newer store is refused, never re-created.

use crate::util::{have, latlab, pg_store, skip, test_name, Dir, Output, TestCommand, LATLAB};
use std::io::BufRead;
use std::path::Path;
use std::time::Duration;

fn store_arg(p: &Path) -> String {
    format!("sqlite:{}", p.display())
}

fn measure(store: &str, tags: &[&str]) -> String {
    let mut c = latlab();
    c.args(["cyclic", "-l", "20", "-i", "200us", "-q", "--store", store]);
    for t in tags {
        c.args(["--tag", t]);
    }
    c.assert_ok().stored_id()
}

fn runs(store: &str, args: &[&str]) -> Output {
    latlab()
        .arg("runs")
        .args(args)
        .args(["--store", store])
        .output()
}

/// A short run storing into the file `p` is refused (exit 3, naming `want`) and `p` is left
/// byte for byte as it was; returns what was said.
fn refused_untouched(p: &Path, want: &str) -> String {
    let before = std::fs::read(p).unwrap();
    let out = latlab()
        .words("cyclic -l 5 -q --store")
        .arg(store_arg(p))
        .assert_refused(3, want);
    assert_eq!(
        std::fs::read(p).unwrap(),
        before,
        "{} was modified",
        p.display()
    );
    out.stderr
}

#[test]
fn stored_runs_are_listed_shown_exported_and_imported_losslessly() {
    let dir = Dir::new();
    let a = store_arg(&dir.join("a.db"));
    let id1 = measure(&a, &["kernel=base"]);
    let id2 = measure(&a, &["kernel=patched", "host-group=lab"]);
    let list = runs(&a, &["list"]).stdout;
    assert!(list.contains(&id1) && list.contains(&id2), "{list}");
    let only = runs(&a, &["list", "--tag", "kernel=patched"]).stdout;
    assert!(only.contains(&id2) && !only.contains(&id1), "{only}");
    let show = runs(&a, &["show", "--json", &id1]);
    let v: serde_json::Value = serde_json::from_str(&show.stdout).unwrap();
    assert_eq!(v["run"]["id"], id1.as_str());
    assert_eq!(v["tags"]["kernel"], "base");
    assert_eq!(v["run"]["series"][0]["count"], 20);
    // Without --json: the table `cyclic` printed, the tags and the command line.
    let summary = runs(&a, &["show", &id1]);
    summary.assert_ok();
    let text = &summary.stdout;
    let table: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("task "))
        .collect();
    assert!(table.len() >= 2, "{text}");
    for col in ["loops", "min", "max", "average", "p99.9", "overruns"] {
        assert!(
            table[0].split_whitespace().any(|c| c == col),
            "{col}: {text}"
        );
    }
    assert_eq!(table[1].split_whitespace().nth(1), Some("20"), "{text}");
    assert!(text.contains(&format!("run {id1}")), "{text}");
    assert!(text.contains("tags kernel=base"), "{text}");
    assert!(text.contains("command: "), "{text}");
    let ns = runs(&a, &["show", &id1, "--unit", "ns"]);
    assert!(ns.stdout.contains("latencies in ns"));

    let bundle = dir.join("bundle.json");
    let exported = runs(&a, &["export", &id1, &id2]);
    exported.assert_ok();
    std::fs::write(&bundle, &exported.stdout).unwrap();
    let b = store_arg(&dir.join("b.db"));
    let imp = runs(&b, &["import", bundle.to_str().unwrap()]);
    assert!(imp
        .stdout
        .contains("imported 2 new run(s), 0 already present"));
    let again = runs(&b, &["import", bundle.to_str().unwrap()]);
    assert!(
        again
            .stdout
            .contains("imported 0 new run(s), 2 already present"),
        "import is not idempotent"
    );
    let re = runs(&b, &["export", &id1, &id2]);
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&re.stdout).unwrap(),
        serde_json::from_str::<serde_json::Value>(&exported.stdout).unwrap(),
        "export → import → export changed the data"
    );
    // A tag value holding a double quote, a comma and a space is selected through quotes and
    // backslashes.
    let id3 = measure(&a, &[r#"note=say "hi", ok"#]);
    let sel = runs(&a, &["export", r#"tag:note="say \"hi\", ok""#]);
    sel.assert_ok();
    let got: serde_json::Value = serde_json::from_str(&sel.stdout).unwrap();
    let ids: Vec<&str> = got["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["run"]["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [id3.as_str()], "{}", sel.stdout);
    // Compare two stored runs by id.
    let cmp = latlab()
        .args([
            "compare",
            &format!("base=run:{id1}"),
            &format!("new=run:{id2}"),
            "--store",
            &a,
        ])
        .output();
    cmp.assert_ok();
    assert!(cmp.stdout.contains("values in us"));
    // Delete.
    runs(&a, &["delete", &id1]).assert_ok();
    let gone = runs(&a, &["show", &id1]);
    assert_eq!(gone.status.code(), Some(2));
    assert!(gone.stderr.contains(&id1));
}

#[test]
fn four_concurrent_writers_lose_nothing() {
    let dir = Dir::new();
    let path = dir.join("c.db");
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
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap().assert_ok();
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
    let dir = Dir::new();
    let junk = dir.join("junk.db");
    std::fs::write(
        &junk,
        b"this is not a database, it is a shopping list\n".repeat(200),
    )
    .unwrap();
    let foreign = dir.join("foreign.db");
    rusqlite::Connection::open(&foreign)
        .unwrap()
        .execute_batch("CREATE TABLE recipes (name TEXT);")
        .unwrap();
    let newer = dir.join("newer.db");
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
        let err = refused_untouched(p, want);
        assert!(err.contains("left untouched"), "{}: {err}", p.display());
    }
}

#[test]
fn no_store_stores_nothing_and_bad_tags_are_refused() {
    let dir = Dir::new();
    let s = store_arg(&dir.join("n.db"));
    let out = latlab()
        .args(["cyclic", "-l", "5", "-q", "--no-store", "--store", &s])
        .output();
    out.assert_ok();
    assert!(!dir.join("n.db").exists());
    let out = latlab().words("cyclic -l 5 -q --tag oops").output();
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stderr.contains("--tag oops"));
    let out = latlab()
        .words("runs import /nonexistent/bundle.json")
        .output();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn postgres_stores_lists_and_round_trips_through_sqlite() {
    let Some(pg) = pg_store() else { return };
    let tag = format!("pgtest={}", std::process::id());
    let id1 = measure(&pg, &[&tag, "kernel=base"]);
    let id2 = measure(&pg, &[&tag, "kernel=patched"]);
    let list = runs(&pg, &["list", "--tag", &tag]).stdout;
    assert_eq!(list.lines().count(), 3, "{list}");
    let only = runs(&pg, &["list", "--tag", &tag, "--tag", "kernel=patched"]).stdout;
    assert!(only.contains(&id2) && !only.contains(&id1), "{only}");
    // PostgreSQL -> bundle -> SQLite -> bundle: nothing changes.
    let dir = Dir::new();
    let bundle = dir.join("b.json");
    let exported = runs(&pg, &["export", &id1, &id2]);
    exported.assert_ok();
    std::fs::write(&bundle, &exported.stdout).unwrap();
    let lite = store_arg(&dir.join("l.db"));
    assert!(runs(&lite, &["import", bundle.to_str().unwrap()])
        .status
        .success());
    let re = runs(&lite, &["export", &id1, &id2]);
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&re.stdout).unwrap(),
        serde_json::from_str::<serde_json::Value>(&exported.stdout).unwrap()
    );
    // Import into PostgreSQL again: idempotent.
    let again = runs(&pg, &["import", bundle.to_str().unwrap()]);
    assert!(again.stdout.contains("0 new run(s), 2 already present"));
    // Compare by id from PostgreSQL; delete.
    let cmp = latlab()
        .args([
            "compare",
            &format!("a=run:{id1}"),
            &format!("b=run:{id2}"),
            "--store",
            &pg,
        ])
        .output();
    cmp.assert_ok();
    runs(&pg, &["delete", &id1]).assert_ok();
    assert_eq!(runs(&pg, &["show", &id1]).status.code(), Some(2));
}

#[test]
fn postgres_four_concurrent_writers_lose_nothing() {
    let Some(pg) = pg_store() else { return };
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
            })
        })
        .collect();
    for h in handles {
        let o = h.join().unwrap();
        o.assert_ok();
    }
    let list = runs(&pg, &["list", "--tag", &tag]).stdout;
    assert_eq!(list.lines().count(), 1 + 4, "{list}");
}

#[test]
fn unreachable_postgres_is_a_clear_error_and_nothing_is_written() {
    let out = latlab()
        .words("cyclic -l 5 -q --store postgres://nobody:secret@127.0.0.1:1/none")
        .output();
    let err = &out.stderr;
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

#[test]
fn unknown_store_forms_exit_2_naming_the_value_and_create_nothing() {
    let dir = Dir::new();
    for spec in [
        "mysql://me:hunter2@db/x",
        "postgress://me@db/x",
        "file:///tmp/latlab-file-store.db",
        "http://example.com/store",
        "sqlite:",
    ] {
        for via_env in [false, true] {
            let mut c = latlab();
            c.args(["cyclic", "-l", "5", "-q"]).current_dir(dir.path());
            if via_env {
                c.env("LATLAB_STORE", spec);
            } else {
                c.args(["--store", spec]);
            }
            let out = c.output();
            let err = &out.stderr;
            assert_eq!(out.status.code(), Some(2), "{spec}: {err}");
            let flag = if via_env { "LATLAB_STORE" } else { "--store" };
            assert!(err.contains(flag), "{spec}: {err}");
            assert!(
                !err.contains("hunter2"),
                "{spec}: the password leaked: {err}"
            );
            assert!(out.stdout.is_empty(), "{spec}: it measured first");
        }
    }
    assert!(dir.entries().is_empty(), "a store file was created");
    assert!(!Path::new("/tmp/latlab-file-store.db").exists());
    // Not UTF-8: refused naming the variable, not replaced by the default store.
    use std::os::unix::ffi::OsStrExt;
    let odd = std::ffi::OsStr::from_bytes(b"sqlite:/tmp/\xff\xfe.db");
    for args in [&["cyclic", "-l", "5", "-q"][..], &["runs", "list"][..]] {
        latlab()
            .args(args)
            .current_dir(dir.path())
            .env("LATLAB_STORE", odd)
            .assert_refused(2, "LATLAB_STORE");
    }
    assert!(dir.entries().is_empty(), "a store file was created");
}

#[test]
fn existing_files_that_are_not_sqlite_are_never_taken_over() {
    let dir = Dir::new();
    let notes = dir.join("notes.txt");
    std::fs::write(&notes, "my notes\n").unwrap();
    let out = latlab()
        .words("cyclic -l 5 -q --store")
        .arg(&notes)
        .output();
    let err = &out.stderr;
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(
        err.contains("notes.txt") && err.contains("left untouched"),
        "{err}"
    );
    assert_eq!(std::fs::read(&notes).unwrap(), b"my notes\n");
    let out = latlab().words("runs list --store").arg(dir.path()).output();
    assert_eq!(out.status.code(), Some(3));
}

#[test]
fn a_newer_or_foreign_store_in_rollback_mode_stays_byte_identical() {
    let dir = Dir::new();
    // A newer latlab's store that never switched to WAL.
    let newer = dir.join("newer.db");
    {
        let c = rusqlite::Connection::open(&newer).unwrap();
        c.execute_batch(
            "PRAGMA journal_mode = DELETE;
             CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
             INSERT INTO meta VALUES ('schema_version', '7');
             CREATE TABLE runs (id TEXT PRIMARY KEY, shape TEXT);
             CREATE TABLE tags (x TEXT);",
        )
        .unwrap();
    }
    // Someone else's database with a table called meta, but no latlab schema.
    let foreign = dir.join("foreign.db");
    {
        let c = rusqlite::Connection::open(&foreign).unwrap();
        c.execute_batch(
            "PRAGMA journal_mode = DELETE;
             CREATE TABLE meta (key TEXT, value TEXT);
             CREATE TABLE runs (whatever INTEGER);",
        )
        .unwrap();
    }
    for (p, want) in [(&newer, "newer latlab"), (&foreign, "not a latlab store")] {
        let err = refused_untouched(p, want);
        assert!(
            !err.contains("CREATE") && !err.contains("INSERT"),
            "SQL in the message: {err}"
        );
        assert!(!dir
            .path()
            .join(format!("{}-wal", p.file_name().unwrap().to_string_lossy()))
            .exists());
    }
}

#[test]
fn imported_histogram_counts_that_overflow_are_refused() {
    let dir = Dir::new();
    let src = store_arg(&dir.join("src.db"));
    let id = measure(&src, &[]);
    let out = runs(&src, &["export", &id]);
    let mut bundle: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let buckets = bundle["runs"][0]["run"]["series"][0]["histogram"]["buckets"]
        .as_array_mut()
        .unwrap();
    buckets.push(serde_json::json!([999_999, u64::MAX]));
    buckets.push(serde_json::json!([1_000_999, u64::MAX]));
    let f = dir.join("b.json");
    std::fs::write(&f, serde_json::to_vec(&bundle).unwrap()).unwrap();
    let dst = store_arg(&dir.join("dst.db"));
    let out = runs(&dst, &["import", f.to_str().unwrap()]);
    let err = &out.stderr;
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("overflow"), "{err}");
    let list = runs(&dst, &["list"]);
    assert_eq!(list.stdout.lines().count(), 1);
    // And compare refuses the same numbers in a result file.
    let run = serde_json::to_vec(&bundle["runs"][0]["run"]).unwrap();
    std::fs::write(dir.join("r.json"), run).unwrap();
    let out = latlab()
        .arg("compare")
        .arg(dir.join("r.json"))
        .arg(dir.join("r.json"))
        .output();
    let err = &out.stderr;
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("overflow"), "{err}");
}

#[test]
fn postgres_passwords_are_never_printed_or_stored() {
    let Some(pg) = pg_store() else { return };
    // The test server trusts its clients, so any password connects: the point is where the
    // password goes. One with a raw '@', one percent-encoded, one as a query parameter.
    let rest = pg.strip_prefix("postgres://postgres@").unwrap();
    let (hostport, db) = rest.split_once('/').unwrap();
    let dir = Dir::new();
    for url in [
        format!("postgres://postgres:hun@ter2@{hostport}/{db}"),
        format!("postgres://postgres:hun%40ter%2F2@{hostport}/{db}"),
        format!("postgresql://postgres@{hostport}/{db}?password=hunter2"),
    ] {
        let json = dir.join("r.json");
        let out = latlab()
            .args(["cyclic", "-l", "5", "-q", "--store", &url, "--json"])
            .arg(&json)
            .output();
        let err = &out.stderr;
        assert!(out.status.success(), "{err}");
        let secrets = ["hun@ter2", "hun%40ter%2F2", "hunter2", "ter2"];
        for secret in secrets {
            assert!(!err.contains(secret), "printed: {err}");
            let text = std::fs::read_to_string(&json).unwrap();
            assert!(!text.contains(secret), "in the JSON result: {text}");
        }
        let id = err
            .lines()
            .find(|l| l.contains(" stored in "))
            .and_then(|l| l.split_whitespace().nth(2))
            .unwrap()
            .to_string();
        for how in [&["show", "--json", &id][..], &["show", &id][..]] {
            let shown = runs(&pg, how);
            let text = &shown.stdout;
            assert!(text.contains("***"), "{how:?}: {text}");
            for secret in secrets {
                assert!(!text.contains(secret), "stored: {text}");
            }
        }
    }
}

#[test]
fn a_run_reported_as_stored_survives_a_kill_right_after() {
    let dir = Dir::new();
    let path = dir.join("k.db");
    let s = store_arg(&path);
    measure(&s, &[]);
    let mut r = latlab()
        .args(["cyclic", "-l", "20", "-i", "200us", "-q", "--store", &s])
        .spawn();
    let mut err = std::io::BufReader::new(r.child().stderr.take().unwrap());
    let mut line = String::new();
    while !line.contains(" stored in ") {
        line.clear();
        assert!(
            err.read_line(&mut line).unwrap() > 0,
            "ended without saying it stored the run"
        );
    }
    // SIGKILL the moment it says so: nothing of the store's closing runs.
    r.signal(libc::SIGKILL);
    drop(r.end_within(Duration::from_secs(10)));
    let id = line.split_whitespace().nth(2).unwrap();
    let show = runs(&s, &["show", "--json", id]);
    show.assert_ok();
    assert_eq!(show.json()["run"]["id"], id);
    assert!(runs(&s, &["list"]).stdout.contains(id));
    let conn = rusqlite::Connection::open(&path).unwrap();
    let ok: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(ok, "ok");
}

#[test]
fn a_stored_run_is_synced_before_it_is_reported_and_the_file_alone_holds_it() {
    if !have("strace") {
        skip(&test_name(), "strace is not installed");
        return;
    }
    let dir = Dir::new();
    let path = dir.join("f.db");
    let s = store_arg(&path);
    measure(&s, &[]);
    let log = dir.join("strace.txt");
    let mut c = std::process::Command::new("strace");
    c.args([
        "-f",
        "-y",
        "-s",
        "200",
        "-e",
        "trace=fsync,fdatasync,write",
        "-o",
    ])
    .arg(&log)
    .arg(LATLAB)
    .args(["cyclic", "-l", "5", "-i", "200us", "-q", "--store", &s]);
    TestCommand::wrapping(c).assert_ok();
    let trace = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<&str> = trace.lines().collect();
    let syncs: Vec<usize> = (0..lines.len())
        .filter(|&i| {
            (lines[i].contains("fsync(") || lines[i].contains("fdatasync("))
                && lines[i].contains("f.db")
        })
        .collect();
    let said = lines
        .iter()
        .position(|l| l.contains("write(2") && l.contains(" stored in "))
        .unwrap_or_else(|| panic!("no 'stored in' written: {trace}"));
    // The commit's fsync of the WAL comes before the run is said to be stored (the
    // checkpoint's, at close, may come after: the run is already durable in the WAL).
    let commit = syncs
        .iter()
        .find(|&&i| lines[i].contains("f.db-wal"))
        .unwrap_or_else(|| panic!("no fsync of the WAL: {trace}"));
    assert!(*commit < said, "{trace}");
    // And once latlab has exited, the database file alone holds the run (checkpointed on
    // close): a store copied as one file misses nothing.
    let copy = dir.join("copy.db");
    std::fs::copy(&path, &copy).unwrap();
    let listed = runs(&store_arg(&copy), &["list", "--kind", "cyclic"]).stdout;
    assert_eq!(listed.matches("cyclic").count(), 2, "{listed}");
}

/// A store that refuses the result at the end of a run (here: its files made immutable after
/// it was opened) loses nothing: the run is kept as a one-run bundle beside the default store,
/// the error names that file (exit 3), and `runs import` stores it.
#[test]
fn a_run_its_store_refuses_is_kept_in_a_file_that_imports() {
    if !crate::util::is_root() || !have("chattr") {
        skip(&test_name(), "needs root and chattr (e2fsprogs)");
        return;
    }
    let dir = Dir::new();
    let db = dir.join("runs.db");
    let xdg = dir.join("xdg");
    let mut run = latlab();
    run.args(["cyclic", "-D", "3s", "-i", "1000us", "-q", "--store"])
        .arg(store_arg(&db))
        .env("XDG_DATA_HOME", &xdg);
    let mut running = run.spawn();
    let wal = dir.join("runs.db-wal");
    // The store is open (schema checked) before the measuring threads start.
    running.wait_for_thread("latlab-T0");
    running.wait_until("the store's write-ahead log", |_| wal.exists());
    let frozen = Immutable(vec![db.clone(), wal.clone()]);
    if !frozen.set("+i") {
        running.kill();
        skip(
            &test_name(),
            "chattr +i is not supported on this file system",
        );
        return;
    }
    let out = running.finish();
    drop(frozen);
    out.assert_exit(3);
    let kept: Vec<_> = std::fs::read_dir(xdg.join("latlab/unstored"))
        .unwrap_or_else(|e| panic!("no unstored directory ({e}): {out}"))
        .flatten()
        .map(|e| e.path())
        .collect();
    assert_eq!(kept.len(), 1, "{kept:?}");
    let file = kept[0].display().to_string();
    assert!(
        out.stderr.contains(&file) && out.stderr.contains("runs import"),
        "{out}"
    );
    let other = store_arg(&dir.join("other.db"));
    latlab()
        .args(["runs", "import", "--store", &other, &file])
        .output()
        .assert_ok();
    let listed = runs(&other, &["list"]);
    let id = kept[0].file_stem().unwrap().to_string_lossy().into_owned();
    assert!(
        listed.stdout.contains(&id) && listed.stdout.contains("cyclic"),
        "{listed}"
    );
}

/// Files made immutable (`chattr +i`) until dropped, whatever the test does in between.
struct Immutable(Vec<std::path::PathBuf>);

impl Immutable {
    fn set(&self, flag: &str) -> bool {
        std::process::Command::new("chattr")
            .arg(flag)
            .args(&self.0)
            .status()
            .is_ok_and(|s| s.success())
    }
}

impl Drop for Immutable {
    fn drop(&mut self) {
        self.set("-i");
    }
}

/// A store another process holds locked: latlab says it is waiting (instead of a silent
/// wait of up to 30 s), then stores the run once the lock is released.
#[test]
fn a_locked_store_is_waited_for_out_loud() {
    let dir = Dir::new();
    let db = dir.join("locked.db");
    let s = store_arg(&db);
    measure(&s, &[]);
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute_batch("BEGIN EXCLUSIVE").unwrap();
    let running = latlab()
        .args(["cyclic", "-l", "5", "-i", "200us", "-q", "--store", &s])
        .spawn();
    std::thread::sleep(Duration::from_secs(4));
    conn.execute_batch("COMMIT").unwrap();
    drop(conn);
    let out = running.finish();
    out.assert_ok();
    // (Opening an up-to-date store only reads it: the wait is the save's.)
    assert!(
        out.stderr.contains("waiting for the store to take the run"),
        "{out}"
    );
    let n: i64 = rusqlite::Connection::open(&db)
        .unwrap()
        .query_row("SELECT count(*) FROM runs", [], |r| r.get(0))
        .unwrap();
    assert_eq!(n, 2);
}

/// A command that only reads the store waits for a lock another process holds, says so after
/// two seconds (it looked hung), and lists the runs once the lock is gone.
#[test]
fn a_listing_waits_for_a_locked_store_out_loud() {
    let dir = Dir::new();
    let db = dir.join("locked.db");
    let s = store_arg(&db);
    measure(&s, &[]);
    let conn = rusqlite::Connection::open(&db).unwrap();
    // Exclusive locking mode: in WAL mode a plain write transaction would not stop readers.
    conn.execute_batch(
        "PRAGMA locking_mode=EXCLUSIVE; BEGIN EXCLUSIVE; UPDATE meta SET value = value WHERE 0;",
    )
    .unwrap();
    let listing = latlab().args(["runs", "list", "--store", &s]).spawn();
    std::thread::sleep(Duration::from_secs(4));
    conn.execute_batch("COMMIT").unwrap();
    drop(conn);
    let out = listing.finish();
    out.assert_ok();
    assert!(out.stderr.contains("waiting for the store"), "{out}");
    assert!(out.stderr.contains("locked.db"), "{out}");
    assert!(out.stdout.contains("cyclic"), "{out}");
}

/// A monitor's snapshots queued for a store another process holds locked, and its last
/// interval's result, are not lost to a second Ctrl-C (which ends latlab without waiting for
/// the store): each goes to a file.
#[test]
fn a_second_ctrl_c_keeps_a_monitors_queued_snapshots_in_files() {
    let dir = Dir::new();
    let db = dir.join("locked.db");
    let s = store_arg(&db);
    measure(&s, &[]);
    let xdg = dir.join("xdg");
    let mut running = latlab()
        .words("monitor -a 0 -i 1ms --snapshot-every 1s -D 60s --listen 127.0.0.1:0 -q --store")
        .arg(&s)
        .env("XDG_DATA_HOME", &xdg)
        .spawn();
    running.wait_for_thread("latlab-cpu0");
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute_batch("BEGIN EXCLUSIVE").unwrap();
    // Snapshots every second: one waits on the lock, the next ones queue behind it.
    std::thread::sleep(Duration::from_millis(3500));
    running.signal(libc::SIGINT);
    std::thread::sleep(Duration::from_millis(700));
    running.signal(libc::SIGINT);
    let out = running.finish();
    drop(conn);
    assert_eq!(out.code(), Some(130), "{out}");
    let kept = std::fs::read_dir(xdg.join("latlab/unstored"))
        .unwrap_or_else(|e| panic!("nothing kept ({e}): {out}"))
        .flatten()
        .count();
    let said = out
        .stderr
        .matches("was not stored yet: it is kept in")
        .count();
    // At least two snapshots (one waiting on the lock, one queued) and the last interval.
    assert!(kept >= 3 && said >= 3, "{kept} files, {said} said: {out}");
}

/// A run waiting for a store another process holds locked says so, and a second Ctrl-C then
/// (which ends latlab at once) keeps the run in a file instead of losing it.
#[test]
fn a_second_ctrl_c_while_the_store_waits_keeps_the_run_in_a_file() {
    // A hang-up as the first signal counts as one too.
    for first in [libc::SIGINT, libc::SIGHUP] {
        second_signal_keeps_the_waiting_run(first);
    }
}

fn second_signal_keeps_the_waiting_run(first: libc::c_int) {
    let dir = Dir::new();
    let db = dir.join("locked.db");
    let s = store_arg(&db);
    measure(&s, &[]);
    let xdg = dir.join("xdg");
    let mut running = latlab()
        .args(["cyclic", "-t", "1", "-D", "1s", "-q", "--store", &s])
        .env("XDG_DATA_HOME", &xdg)
        .spawn();
    running.wait_for_thread("latlab-T0");
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute_batch("BEGIN EXCLUSIVE").unwrap();
    // The run ends after a second; the store's wait is said two seconds later (margin for a
    // busy host).
    std::thread::sleep(Duration::from_millis(5000));
    running.signal(first);
    std::thread::sleep(Duration::from_millis(700));
    // A second SIGTERM this time: exit 128 + 15.
    running.signal(libc::SIGTERM);
    let out = running.finish();
    drop(conn);
    assert_eq!(out.code(), Some(143), "{out}");
    assert!(
        out.stderr.contains("waiting for the store to take the run"),
        "{out}"
    );
    // The run is made: nothing says a second signal would lose it.
    assert!(!out.stderr.contains("saves nothing"), "{out}");
    let kept: Vec<_> = std::fs::read_dir(xdg.join("latlab/unstored"))
        .unwrap_or_else(|e| panic!("nothing kept ({e}): {out}"))
        .flatten()
        .collect();
    assert_eq!(kept.len(), 1, "{out}");
    assert!(
        out.stderr.contains("was not stored yet: it is kept in"),
        "{out}"
    );
}
