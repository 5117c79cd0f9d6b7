//! `latlab tcp`: the bytes and transactions it reports are the ones that moved; `--repeat`
//! feeds ministat; only loopback is ever used.

use crate::util::{expect_exit, latlab, read_json, Dir};

fn runs(json: &std::path::Path) -> Vec<serde_json::Value> {
    read_json(json)["series"][0]["extra"]["runs"]
        .as_array()
        .unwrap()
        .clone()
}

#[test]
fn stream_receiver_count_equals_bytes_sent() {
    let dir = Dir::new();
    for tasks in ["threads", "processes"] {
        let json = dir.join(format!("{tasks}.json"));
        latlab()
            .words("tcp -D 300ms -m 10000 --tasks")
            .args([tasks, "--json"])
            .arg(&json)
            .assert_ok();
        for r in runs(&json) {
            let sent = r["sent"].as_u64().unwrap();
            assert!(sent > 0);
            assert_eq!(sent % 10_000, 0, "sends are whole messages");
            assert_eq!(
                r["received"].as_u64().unwrap(),
                sent,
                "{tasks}: receiver count differs from bytes sent"
            );
        }
    }
}

#[test]
fn rr_counts_equal_transactions() {
    let dir = Dir::new();
    let json = dir.join("rr.json");
    latlab()
        .words("tcp --mode rr -D 300ms -r 64 --response-size 512 --json")
        .arg(&json)
        .assert_ok();
    let r = &runs(&json)[0];
    assert_eq!(r["sent"], r["received"]);
    let run = read_json(&json);
    assert_eq!(run["series"][1]["name"], "rtt");
    assert_eq!(run["series"][1]["count"], r["sent"]);
}

#[test]
fn repeat_prints_one_figure_per_line_for_ministat() {
    let out = latlab().words("tcp -D 200ms --repeat 3").assert_ok();
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines.len(), 3, "{out}");
    assert!(
        lines
            .iter()
            .all(|l| l.parse::<f64>().is_ok_and(|v| v > 0.0)),
        "{out}"
    );
}

#[test]
fn tcp_bad_input() {
    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = busy.local_addr().unwrap().port().to_string();
    for (args, want) in [
        (vec!["--address", "192.168.1.1"], "loopback"),
        (vec!["--address", "nonsense"], "--address"),
        (vec!["--port", port.as_str()], "is in use"),
        (vec!["-m", "0"], "--send-size"),
        (vec!["-D", "-1"], "--duration"),
        (vec!["--sender-cpu", "999"], "--sender-cpu"),
    ] {
        expect_exit(&["tcp"], &args, 2, want);
    }
}

/// A run that moved nothing says so (in the result and on screen) instead of presenting zeros
/// as a measurement.
#[test]
fn a_run_that_moved_no_data_is_flagged() {
    let out = latlab().words("tcp -D 1ns --no-store --json -").assert_ok();
    let text = &out.stdout;
    let json = &text[..text.rfind('}').unwrap() + 1];
    let v: serde_json::Value = serde_json::from_str(json).unwrap();
    let received = v["series"][0]["extra"]["runs"][0]["received"]
        .as_u64()
        .unwrap();
    let flagged = v["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|w| w.as_str().unwrap().contains("moved no data"));
    // On a fast machine a send can still land within a nanosecond's deadline check.
    assert_eq!(flagged, received == 0, "{text}");
}
