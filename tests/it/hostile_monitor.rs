//! The monitor under hostile peers and signals (issues 34 and 27): TLS handshakes that never
//! finish cannot keep a real scrape out; a signal ends every step of a measurement's start-up
//! (a store locked by another process included); `--no-store` prints no run id; a host tag
//! with a bidirectional override is shown escaped on the fleet page.

use crate::lifecycle::{ends_within, signal};
use crate::monitor::Monitor;
use crate::monitor_tls::{curl, make_certs};
use crate::util::{latlab, read_json, skip};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The first bytes of a TLS ClientHello (a record header announcing 512 bytes, and a few of
/// them): a server waits for the rest.
const HALF_HELLO: &[u8] = &[
    0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03,
];

fn tls_monitor(dir: &std::path::Path) -> Option<Monitor> {
    for tool in ["openssl", "curl"] {
        if !latlab::sys::process::command_exists(tool) {
            skip(
                "stalled TLS handshakes",
                &format!("{tool} is not installed"),
            );
            return None;
        }
    }
    make_certs(dir);
    let web = dir.join("web.yml");
    std::fs::write(
        &web,
        "tls_server_config:\n  cert_file: server.pem\n  key_file: server.key\n",
    )
    .unwrap();
    Some(Monitor::start(&[
        "-a",
        "0",
        "-i",
        "1ms",
        "--no-store",
        "-D",
        "120s",
        "--web-config",
        web.to_str().unwrap(),
    ]))
}

#[test]
fn two_hundred_stalled_tls_handshakes_do_not_keep_a_scrape_out() {
    let dir = tempfile::tempdir().unwrap();
    let Some(mon) = tls_monitor(dir.path()) else {
        return;
    };
    let url = format!("https://{}/metrics", mon.addr);
    let ca = dir.path().join("ca.pem");
    let ca = ca.to_str().unwrap().to_string();
    assert_eq!(curl(&url, &["--cacert", &ca]), "200");
    let stalled: Vec<TcpStream> = (0..200)
        .filter_map(|_| {
            let mut s = TcpStream::connect(mon.addr).ok()?;
            s.write_all(HALF_HELLO).ok()?;
            Some(s)
        })
        .collect();
    assert!(stalled.len() >= 190, "only {} connections", stalled.len());
    std::thread::sleep(Duration::from_millis(500));
    for _ in 0..3 {
        assert_eq!(
            curl(&url, &["--cacert", &ca]),
            "200",
            "a scrape was kept out"
        );
    }
    // Peers that re-open as soon as they are closed: scrapes still get through.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let addr = mon.addr;
    let openers: Vec<_> = (0..4)
        .map(|_| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut held: Vec<TcpStream> = Vec::new();
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    held.retain_mut(|s| {
                        let mut b = [0u8; 64];
                        s.set_nonblocking(true).unwrap();
                        !matches!(s.read(&mut b), Ok(0))
                    });
                    while held.len() < 10 {
                        let Ok(mut s) = TcpStream::connect(addr) else {
                            break;
                        };
                        let _ = s.write_all(HALF_HELLO);
                        held.push(s);
                    }
                    std::thread::sleep(Duration::from_millis(5));
                }
            })
        })
        .collect();
    let mut ok = 0;
    for _ in 0..10 {
        if curl(&url, &["--cacert", &ca]) == "200" {
            ok += 1;
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for o in openers {
        o.join().unwrap();
    }
    assert!(
        ok >= 9,
        "{ok} of 10 scrapes answered while peers re-opened stalled handshakes"
    );
    // A stalled handshake is closed by its deadline, not held forever.
    let mut s = stalled.into_iter().next_back().unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut buf = Vec::new();
    let t0 = Instant::now();
    let _ = s.read_to_end(&mut buf);
    assert!(
        t0.elapsed() < Duration::from_secs(20),
        "a stalled handshake was never closed"
    );
}

#[test]
fn sigterm_ends_the_monitor_at_every_step_of_its_start_up() {
    let dir = tempfile::tempdir().unwrap();
    let hash = bcrypt::hash("pw", 10).unwrap();
    let web = dir.path().join("web.yml");
    std::fs::write(&web, format!("basic_auth_users:\n  prom: '{hash}'\n")).unwrap();
    for after_ms in [0u64, 5, 20, 50, 100, 200, 400, 800] {
        let json = dir.path().join("m.json");
        let _ = std::fs::remove_file(&json);
        let child = latlab()
            .env("LATLAB_JOURNAL", dir.path().join("restore.json"))
            .args([
                "monitor",
                "-a",
                "0",
                "-p",
                "0",
                "-D",
                "60s",
                "--listen",
                "127.0.0.1:0",
            ])
            .args(["--no-store", "--web-config"])
            .arg(&web)
            .arg("--json")
            .arg(&json)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(after_ms));
        signal(&child, libc::SIGTERM);
        let out = ends_within(
            child,
            Duration::from_secs(5),
            &format!("monitor SIGTERMed {after_ms} ms after its start"),
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("panicked"), "{err}");
        assert!(
            matches!(out.status.code(), Some(0) | Some(143)) || out.status.code().is_none(),
            "{after_ms} ms: {:?}: {err}",
            out.status
        );
    }
}

#[test]
fn a_store_locked_by_another_process_does_not_hold_a_signal() {
    if !latlab::sys::process::command_exists("python3") {
        return skip("a locked store", "no python3 to hold the lock");
    }
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("locked.db");
    let json = dir.path().join("r.json");
    // An existing store, then another process holding it locked exclusively.
    let out = latlab()
        .args(["cyclic", "-t", "1", "-l", "10", "--store"])
        .arg(format!("sqlite:{}", db.display()))
        .output()
        .unwrap();
    crate::util::assert_exit(&out, 0);
    let script = format!(
        "import sqlite3,sys,time\nc=sqlite3.connect({:?},isolation_level=None)\nc.execute('PRAGMA journal_mode=DELETE')\nc.execute('PRAGMA locking_mode=EXCLUSIVE')\nc.execute('BEGIN EXCLUSIVE')\nc.execute('INSERT INTO meta VALUES (\"x\",\"y\")')\nprint('locked',flush=True)\ntime.sleep(60)\n",
        db.display().to_string()
    );
    let mut holder = Command::new("python3")
        .args(["-c", &script])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = [0u8; 7];
    holder
        .stdout
        .as_mut()
        .unwrap()
        .read_exact(&mut line)
        .unwrap();
    let child = latlab()
        .args(["cyclic", "-t", "1", "-D", "60s", "--store"])
        .arg(format!("sqlite:{}", db.display()))
        .arg("--json")
        .arg(&json)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    signal(&child, libc::SIGTERM);
    let out = ends_within(
        child,
        Duration::from_secs(5),
        "cyclic waiting on a locked store",
    );
    let _ = holder.kill();
    let _ = holder.wait();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("not stored"), "{err}");
    assert_eq!(read_json(&json)["interrupted"], true);
}

#[test]
fn monitor_no_store_prints_no_run_id_and_the_fleet_page_escapes_bidi_overrides() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("m.json");
    let out = latlab()
        .args([
            "monitor", "-a", "0", "-p", "0", "-i", "1ms", "-D", "2s", "--listen",
        ])
        .args(["127.0.0.1:0", "--no-store", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    crate::util::assert_exit(&out, 0);
    let id = read_json(&json)["id"].as_str().unwrap().to_string();
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!all.contains(&id), "--no-store printed the id {id}: {all}");
    // A host tag that reverses the text after it.
    let store = format!("sqlite:{}", dir.path().join("s.db").display());
    let out = latlab()
        .args([
            "monitor", "-a", "0", "-p", "0", "-i", "1ms", "-D", "2s", "--listen",
        ])
        .args([
            "127.0.0.1:0",
            "--tag",
            "host=evil\u{202e}lmth.exe",
            "--store",
            &store,
        ])
        .output()
        .unwrap();
    crate::util::assert_exit(&out, 0);
    let html = dir.path().join("fleet.html");
    let out = latlab()
        .args(["report", "--fleet", "--store", &store, "-o"])
        .arg(&html)
        .output()
        .unwrap();
    crate::util::assert_exit(&out, 0);
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("evil"), "the host is missing");
    assert!(!page.contains('\u{202e}'), "U+202E reached the page");
}

#[test]
fn a_request_sent_with_a_half_close_is_answered() {
    let mon = Monitor::start(&["-a", "0", "-i", "1ms", "--no-store", "-D", "60s"]);
    let mut s = TcpStream::connect(mon.addr).unwrap();
    s.write_all(b"GET /metrics HTTP/1.0\r\nHost: t\r\n\r\n")
        .unwrap();
    s.shutdown(std::net::Shutdown::Write).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
    let mut buf = Vec::new();
    let _ = s.read_to_end(&mut buf);
    let text = String::from_utf8_lossy(&buf);
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
}
