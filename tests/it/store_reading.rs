//! Commands that only read a SQLite store: they do not wait for another process's writing (in
//! WAL mode it does not stop a reader), never make an empty file a store, and never read a
//! refusal (a directory they may not enter) as "no store yet".

use crate::util::{latlab, latlab_as_nobody, Dir};
use std::time::Duration;

fn measure_into(db: &std::path::Path) {
    latlab()
        .words("cyclic -l 5 -i 200us -q --store")
        .arg(format!("sqlite:{}", db.display()))
        .output()
        .assert_ok();
}

/// A writer holding its transaction open: a listing reads the store without waiting for it.
#[test]
fn a_listing_does_not_wait_for_a_writer() {
    let dir = Dir::new();
    let db = dir.join("busy.db");
    measure_into(&db);
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute_batch("BEGIN IMMEDIATE; UPDATE meta SET value = value WHERE 0;")
        .unwrap();
    let out = latlab()
        .args(["runs", "list", "--store"])
        .arg(&db)
        .limit(Duration::from_secs(60))
        .output();
    conn.execute_batch("COMMIT").unwrap();
    out.assert_ok();
    assert!(out.stdout.contains("cyclic"), "{out}");
    // It never entered SQLite's wait for the lock (which would have ended in a failure).
    assert!(!out.stderr.contains("waiting for the store"), "{out}");
}

/// An empty file (named, or reached through a link) is read as an empty store and left empty.
#[test]
fn an_empty_file_is_read_as_empty_and_left_as_it_is() {
    let dir = Dir::new();
    let empty = dir.join("empty");
    std::fs::write(&empty, b"").unwrap();
    let link = dir.join("link.db");
    std::os::unix::fs::symlink(&empty, &link).unwrap();
    for store in [&empty, &link] {
        for args in [&["runs", "list"][..], &["runs", "export", "--all"][..]] {
            let out = latlab().args(args).arg("--store").arg(store).output();
            out.assert_ok();
            assert!(out.stderr.contains("is an empty file"), "{out}");
        }
    }
    assert_eq!(std::fs::metadata(&empty).unwrap().len(), 0);
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        !names
            .iter()
            .any(|n| n.ends_with("-wal") || n.ends_with("-shm")),
        "{names:?}"
    );
}

/// A store behind a directory the user may not enter is a refusal (exit 3), not "no store".
#[test]
fn a_store_the_user_may_not_reach_is_refused_not_read_as_empty() {
    let dir = Dir::new();
    let Some(mut c) = latlab_as_nobody(&dir, &[]) else {
        return;
    };
    let closed = dir.join("closed");
    std::fs::create_dir(&closed).unwrap();
    measure_into(&closed.join("s.db"));
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&closed, std::fs::Permissions::from_mode(0o700)).unwrap();
    let out = c
        .args(["runs", "list", "--store"])
        .arg(closed.join("s.db"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(
        err.contains("ermission denied") && !err.contains("read as empty"),
        "{err}"
    );
}

/// Another user's store is read without taking part in its locking: no `-wal`/`-shm` files of
/// the reader's are left for the owner to trip over (a world-writable directory), and one in a
/// directory the reader may not write is read all the same.
#[test]
fn another_users_store_is_read_as_it_is_and_left_writable_to_its_owner() {
    use std::os::unix::fs::PermissionsExt;
    let dir = Dir::new();
    for mode in [0o1777, 0o755] {
        let d = dir.join(format!("d{mode:o}"));
        std::fs::create_dir(&d).unwrap();
        let db = d.join("s.db");
        measure_into(&db);
        std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o644)).unwrap();
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(mode)).unwrap();
        let Some(mut c) = latlab_as_nobody(&dir, &[]) else {
            return;
        };
        let out = c
            .args(["runs", "list", "--store"])
            .arg(&db)
            .output()
            .unwrap();
        let (stdout, stderr) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        assert_eq!(out.status.code(), Some(0), "{stderr}");
        assert!(
            stdout.contains("cyclic") && stderr.contains("read as it is on disk"),
            "{stderr}"
        );
        let left: Vec<_> = std::fs::read_dir(&d)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(left, ["s.db"], "mode {mode:o}");
        // The owner still stores there.
        measure_into(&db);
    }
}

/// Another user's FIFO named as the store is refused without being opened (a reader would
/// wait for a writer forever).
#[test]
fn another_users_fifo_is_refused_not_read() {
    let dir = Dir::new();
    let fifo = dir.join("f.db");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    if !made.is_ok_and(|s| s.success()) {
        return crate::util::skip("fifo", "mkfifo failed");
    }
    let Some(mut c) = latlab_as_nobody(&dir, &[]) else {
        return;
    };
    c.args(["runs", "list", "--store"]).arg(&fifo);
    let out = crate::util::TestCommand::wrapping(c)
        .limit(Duration::from_secs(60))
        .output();
    out.assert_exit(3);
    assert!(out.stderr.contains("not a regular file"), "{out}");
}
