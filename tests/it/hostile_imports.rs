//! Imports validated like measurements (issue 34): out-of-range, disordered, missing and
//! wrapping figures are exit 2 naming file, line and field with the store untouched; a run a
//! store holds always reads back, and one that does not (written by an older latlab) is listed
//! by `runs check` and left out of selectors with a warning.

use crate::util::{have, latlab, read_json, run_tool, skip, Dir};
use std::process::Command;

fn pmq(receiver: &str, samples: &str) -> String {
    format!(
        "{{\"sysinfo\": {{\"release\": \"6.1\", \"nodename\": \"h\"}},\n \"thread\": {{\n  \"0\": {{\n   \"sender\": {{\"cpu\": 0, \"priority\": 79, \"samples\": {samples}, \"interval\": 1000}},\n   \"receiver\": {{{receiver}}}\n  }}\n }}\n}}\n"
    )
}

#[test]
fn imported_figures_out_of_range_or_order_are_refused_naming_file_line_and_field() {
    let d = Dir::new();
    let db = d.join("s.db");
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
        let f = d.write("pmq.json", text);
        let out = latlab()
            .words("runs import --from pmqtest --store")
            .arg(&store)
            .arg(&f)
            .assert_refused(2, field);
        assert!(
            out.stderr.contains("pmq.json") && out.stderr.contains("line "),
            "{field}: {out}"
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
        let f = d.write("ct.json", format!("{{\"thread\": {{\"0\": {thread}}}}}\n"));
        let out = latlab()
            .words("runs import --from cyclictest --store")
            .arg(&store)
            .arg(&f)
            .assert_refused(2, field);
        assert!(out.stderr.contains("ct.json"), "{out}");
        assert!(!db.exists());
    }
}

#[test]
fn a_run_that_does_not_read_back_is_listed_by_runs_check_and_left_out_by_selectors() {
    if !have("python3") {
        return skip("runs check", "no python3 to damage a stored run");
    }
    let d = Dir::new();
    let db = d.join("s.db");
    let store = format!("sqlite:{}", db.display());
    let mut ids = Vec::new();
    for _ in 0..3 {
        let j = d.join("r.json");
        latlab()
            .words("cyclic -t 1 -l 200 -i 200us --tag set=a --store")
            .arg(&store)
            .arg("--json")
            .arg(&j)
            .assert_ok();
        ids.push(read_json(&j)["id"].as_str().unwrap().to_string());
    }
    latlab().words("runs check --store").arg(&store).assert_ok();
    // An older latlab stored a mean JSON could not hold (written as null).
    let script = format!(
        "import sqlite3,json\nc=sqlite3.connect({db:?})\nb=json.loads(c.execute('select body from runs where id=?',({id:?},)).fetchone()[0])\nb['series'][0]['mean_ns']=None\nc.execute('update runs set body=? where id=?',(json.dumps(b),{id:?}))\nc.commit()\n",
        db = db.display().to_string(),
        id = ids[0]
    );
    run_tool(Command::new("python3").args(["-c", &script]));
    let out = latlab()
        .words("runs check --store")
        .arg(&store)
        .assert_exit(1);
    assert!(
        out.stdout.contains(&ids[0]) && !out.stdout.contains(&ids[1]),
        "{out}"
    );
    // A selector leaves it out, with a warning naming it, and judges the others.
    let out = latlab()
        .words("gate p99<1s tag:set=a --store")
        .arg(&store)
        .output();
    assert!(
        matches!(out.code(), Some(0) | Some(4)),
        "gate failed on the damaged run: {out}"
    );
    assert!(
        out.stderr.contains(&ids[0]) && out.stderr.contains("left out"),
        "{out}"
    );
    // Asked for by id, it is exit 2 naming `runs check`.
    latlab()
        .words("gate p99<1s")
        .arg(format!("run:{}", ids[0]))
        .arg("--store")
        .arg(&store)
        .assert_refused(2, "runs check");
    // A row listed as another kind than its body: not the run the listing shows.
    rusqlite::Connection::open(&db)
        .unwrap()
        .execute("update runs set kind = 'noise' where id = ?1", [&ids[1]])
        .unwrap();
    let out = latlab()
        .words("runs check --store")
        .arg(&store)
        .assert_exit(1);
    assert!(
        out.stdout.contains(&ids[1]) && out.stdout.contains("listed as"),
        "{out}"
    );
    // `--all` with a run list is one or the other, not the list ignored.
    latlab()
        .words("runs export --all tag:set=a --store")
        .arg(&store)
        .assert_refused(2, "--all");
    // `runs export --all` keeps what reads back, names what does not, and ends with exit 1.
    let out = latlab()
        .words("runs export --all --store")
        .arg(&store)
        .output();
    out.assert_exit(1);
    let b: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let exported: Vec<&str> = b["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["run"]["id"].as_str().unwrap())
        .collect();
    assert_eq!(exported, vec![ids[2].as_str()], "{out}");
    assert!(
        out.stderr.contains(&ids[0]) && out.stderr.contains(&ids[1]),
        "{out}"
    );
    // Onto a full disk: the write's failure is the exit (3), and what was left out is still
    // named.
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let out = std::process::Command::new(crate::util::LATLAB)
        .args(["runs", "export", "--all", "--store"])
        .arg(&store)
        .stdout(full)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("No space left"), "{err}");
    assert!(
        err.contains(&ids[0]) && err.contains(&ids[1]) && err.contains("left out"),
        "{err}"
    );
    // A listing column damaged by hand (a tag value that is a blob, not text): the other runs
    // still list, and `runs check` names the damaged one instead of failing as a whole.
    rusqlite::Connection::open(&db)
        .unwrap()
        .execute("update tags set value = x'ff' where run_id = ?1", [&ids[2]])
        .unwrap();
    let list = latlab().words("runs list --store").arg(&store).assert_ok();
    assert!(
        ids.iter().all(|id| list.stdout.contains(id.as_str())),
        "{list}"
    );
    let out = latlab()
        .words("runs check --store")
        .arg(&store)
        .assert_exit(1);
    assert!(out.stdout.contains(&ids[2]), "{out}");
}
