//! Imports validated like measurements (issue 34): out-of-range, disordered, missing and
//! wrapping figures are exit 2 naming file, line and field with the store untouched; a run a
//! store holds always reads back, and one that does not (written by an older latlab) is listed
//! by `runs check` and left out of selectors with a warning.

use crate::util::latlab;
use std::process::Command;

fn pmq(receiver: &str, samples: &str) -> String {
    format!(
        "{{\"sysinfo\": {{\"release\": \"6.1\", \"nodename\": \"h\"}},\n \"thread\": {{\n  \"0\": {{\n   \"sender\": {{\"cpu\": 0, \"priority\": 79, \"samples\": {samples}, \"interval\": 1000}},\n   \"receiver\": {{{receiver}}}\n  }}\n }}\n}}\n"
    )
}

#[test]
fn imported_figures_out_of_range_or_order_are_refused_naming_file_line_and_field() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("s.db");
    let store = format!("sqlite:{}", db.display());
    let cases = [
        (
            pmq("\"cpu\": 1, \"min\": 3, \"avg\": 1e308, \"max\": 12", "50"),
            "receiver.avg",
        ),
        (
            pmq("\"cpu\": 1, \"min\": 30, \"avg\": 40, \"max\": 12", "50"),
            "receiver.min",
        ),
        (
            pmq("\"cpu\": 1, \"min\": 3, \"avg\": 40, \"max\": 12", "50"),
            "receiver.avg",
        ),
        (
            pmq("\"cpu\": 1, \"min\": 3, \"avg\": 4", "50"),
            "receiver.max",
        ),
        (
            pmq(
                "\"cpu\": 1, \"min\": 100000000000000000000000, \"avg\": 4, \"max\": 12",
                "50",
            ),
            "receiver.min",
        ),
        (
            pmq(
                "\"cpu\": 1, \"min\": 3, \"avg\": 4, \"max\": 12",
                "18446744073709551616",
            ),
            "sender.samples",
        ),
    ];
    for (text, field) in &cases {
        let f = d.path().join("pmq.json");
        std::fs::write(&f, text).unwrap();
        let out = latlab()
            .args(["runs", "import", "--from", "pmqtest", "--store", &store])
            .arg(&f)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{field}: {err}");
        assert!(
            err.contains("pmq.json") && err.contains("line ") && err.contains(field),
            "{field}: {err}"
        );
        assert!(!db.exists(), "{field}: a refused import touched the store");
    }
    // cyclictest: a max below the bucket holding samples, and histogram counts that wrap.
    for (thread, field) in [
        (
            "{\"histogram\": {\"10\": 5}, \"cycles\": 5, \"min\": 10, \"avg\": 10, \"max\": 2}",
            "max",
        ),
        (
            "{\"histogram\": {\"10\": 18446744073709551615, \"11\": 2}, \"cycles\": 5, \"min\": 10, \"avg\": 10, \"max\": 11}",
            "overflow",
        ),
        ("{\"histogram\": {\"10\": 5}, \"cycles\": 5, \"min\": 10, \"max\": 11}", "avg"),
    ] {
        let f = d.path().join("ct.json");
        std::fs::write(&f, format!("{{\"thread\": {{\"0\": {thread}}}}}\n")).unwrap();
        let out = latlab()
            .args(["runs", "import", "--from", "cyclictest", "--store", &store])
            .arg(&f)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{field}: {err}");
        assert!(err.contains("ct.json") && err.contains(field), "{err}");
        assert!(!db.exists());
    }
}

#[test]
fn a_run_that_does_not_read_back_is_listed_by_runs_check_and_left_out_by_selectors() {
    if !latlab::sys::process::command_exists("python3") {
        return crate::util::skip("runs check", "no python3 to damage a stored run");
    }
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("s.db");
    let store = format!("sqlite:{}", db.display());
    let mut ids = Vec::new();
    for _ in 0..3 {
        let j = d.path().join("r.json");
        let out = latlab()
            .args([
                "cyclic", "-t", "1", "-l", "200", "-i", "200us", "--tag", "set=a",
            ])
            .args(["--store", &store, "--json"])
            .arg(&j)
            .output()
            .unwrap();
        crate::util::assert_exit(&out, 0);
        ids.push(
            crate::util::read_json(&j)["id"]
                .as_str()
                .unwrap()
                .to_string(),
        );
    }
    let out = latlab()
        .args(["runs", "check", "--store", &store])
        .output()
        .unwrap();
    crate::util::assert_exit(&out, 0);
    // An older latlab stored a mean JSON could not hold (written as null).
    let script = format!(
        "import sqlite3,json\nc=sqlite3.connect({db:?})\nb=json.loads(c.execute('select body from runs where id=?',({id:?},)).fetchone()[0])\nb['series'][0]['mean_ns']=None\nc.execute('update runs set body=? where id=?',(json.dumps(b),{id:?}))\nc.commit()\n",
        db = db.display().to_string(),
        id = ids[0]
    );
    assert!(Command::new("python3")
        .args(["-c", &script])
        .status()
        .unwrap()
        .success());
    let out = latlab()
        .args(["runs", "check", "--store", &store])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains(&ids[0]) && !text.contains(&ids[1]), "{text}");
    // A selector leaves it out, with a warning naming it, and judges the others.
    let out = latlab()
        .args(["gate", "p99<1s", "tag:set=a", "--store", &store])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        matches!(out.status.code(), Some(0) | Some(4)),
        "gate failed on the damaged run: {err}"
    );
    assert!(err.contains(&ids[0]) && err.contains("left out"), "{err}");
    // Asked for by id, it is exit 2 naming `runs check`.
    let out = latlab()
        .args([
            "gate",
            "p99<1s",
            &format!("run:{}", ids[0]),
            "--store",
            &store,
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("runs check"), "{err}");
}
