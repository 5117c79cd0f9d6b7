//! The monitor under hostile peers and signals (issues 34 and 27): TLS handshakes that never
//! finish cannot keep a real scrape out; a signal ends every step of a measurement's start-up
//! (a store locked by another process included); `--no-store` prints no run id; a host tag
//! with a bidirectional override is shown escaped on the fleet page.

use crate::monitor::Monitor;
use crate::monitor_tls::{curl, make_certs};
use crate::util::{have, latlab, read_json, skip, Dir, Running};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::Duration;

/// The first bytes of a TLS ClientHello (a record header announcing 512 bytes, and a few of
/// them): a server waits for the rest.
const HALF_HELLO: &[u8] = &[
    0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03,
];

/// Far above the time it takes: only a hang (a signal not honoured) reaches it.
const HANG: Duration = Duration::from_secs(5);

fn tls_monitor(dir: &Dir) -> Option<Monitor> {
    for tool in ["openssl", "curl"] {
        if !have(tool) {
            skip(
                "stalled TLS handshakes",
                &format!("{tool} is not installed"),
            );
            return None;
        }
    }
    make_certs(dir.path());
    let web = dir.write(
        "web.yml",
        "tls_server_config:\n  cert_file: server.pem\n  key_file: server.key\n",
    );
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

/// Opens connections to `addr` that send half a ClientHello and stop, re-opening each as
/// soon as the server closes it, until `stop` is set.
fn reopener(
    addr: std::net::SocketAddr,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> std::thread::JoinHandle<()> {
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
}

#[test]
fn two_hundred_stalled_tls_handshakes_do_not_keep_a_scrape_out() {
    let dir = Dir::new();
    let Some(mon) = tls_monitor(&dir) else {
        return;
    };
    let url = format!("https://{}/metrics", mon.addr);
    let ca = dir.join("ca.pem");
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
    // The very next scrape, at once: the oldest unfinished handshake makes room for it.
    assert_eq!(
        curl(&url, &["--cacert", &ca]),
        "200",
        "the scrape right after the flood was kept out"
    );
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
    let openers: Vec<_> = (0..4).map(|_| reopener(mon.addr, stop.clone())).collect();
    let ok = (0..10)
        .filter(|_| curl(&url, &["--cacert", &ca]) == "200")
        .count();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for o in openers {
        o.join().unwrap();
    }
    assert!(
        ok >= 9,
        "{ok} of 10 scrapes answered while peers re-opened stalled handshakes"
    );
    // A stalled handshake is closed by its deadline (or at once), never held forever: the
    // read ends by the server's close, not by this timeout.
    let mut s = stalled.into_iter().next_back().unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut buf = [0u8; 64];
    let r = s.read(&mut buf);
    assert!(
        !matches!(&r, Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
        "a stalled handshake was never closed: {r:?}"
    );
}

#[test]
fn sigterm_ends_the_monitor_at_every_step_of_its_start_up() {
    let dir = Dir::new();
    let hash = bcrypt::hash("pw", 12).unwrap();
    let web = dir.write("web.yml", format!("basic_auth_users:\n  prom: '{hash}'\n"));
    for after_ms in [0u64, 5, 20, 50, 100, 200, 400, 800] {
        let json = dir.join("m.json");
        let run = latlab()
            .journal(dir.join("restore.json"))
            .words("monitor -a 0 -p 0 -D 60s --listen 127.0.0.1:0 --no-store --web-config")
            .arg(&web)
            .arg("--json")
            .arg(&json)
            .spawn();
        std::thread::sleep(Duration::from_millis(after_ms));
        run.signal(libc::SIGTERM);
        let out = run.end_within(HANG);
        assert!(!out.stderr.contains("panicked"), "{out}");
        assert!(
            matches!(out.code(), Some(0) | Some(143) | None),
            "{after_ms} ms: {out}"
        );
    }
}

#[test]
fn a_store_locked_by_another_process_does_not_hold_a_signal() {
    if !have("python3") {
        return skip("a locked store", "no python3 to hold the lock");
    }
    let dir = Dir::new();
    let db = dir.join("locked.db");
    let store = format!("sqlite:{}", db.display());
    let json = dir.join("r.json");
    // An existing store, then another process holding it locked exclusively.
    latlab()
        .words("cyclic -t 1 -l 10 --store")
        .arg(&store)
        .assert_ok();
    let script = format!(
        "import sqlite3,sys,time\nc=sqlite3.connect({:?},isolation_level=None)\nc.execute('PRAGMA journal_mode=DELETE')\nc.execute('PRAGMA locking_mode=EXCLUSIVE')\nc.execute('BEGIN EXCLUSIVE')\nc.execute('INSERT INTO meta VALUES (\"x\",\"y\")')\nprint('locked',flush=True)\ntime.sleep(60)\n",
        db.display().to_string()
    );
    let mut holder = Running::new(
        Command::new("python3")
            .args(["-c", &script])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap(),
        "python3 holding the store locked",
    );
    let mut line = [0u8; 7];
    holder
        .child()
        .stdout
        .as_mut()
        .unwrap()
        .read_exact(&mut line)
        .unwrap();
    let run = latlab()
        .words("cyclic -t 1 -D 60s --store")
        .arg(&store)
        .arg("--json")
        .arg(&json)
        .spawn();
    std::thread::sleep(Duration::from_millis(1500));
    run.signal(libc::SIGTERM);
    let out = run.end_within(HANG);
    holder.kill();
    out.assert_ok().assert_refused_naming("not stored");
    assert_eq!(read_json(&json)["interrupted"], true);
}

#[test]
fn monitor_no_store_prints_no_run_id_and_the_fleet_page_escapes_bidi_overrides() {
    let dir = Dir::new();
    let json = dir.join("m.json");
    let out = latlab()
        .words("monitor -a 0 -p 0 -i 1ms -D 2s --listen 127.0.0.1:0 --no-store --json")
        .arg(&json)
        .assert_ok();
    let id = read_json(&json)["id"].as_str().unwrap().to_string();
    assert!(
        !out.both().contains(&id),
        "--no-store printed the id {id}: {out}"
    );
    // A host tag that reverses the text after it.
    let store = format!("sqlite:{}", dir.join("s.db").display());
    latlab()
        .words("monitor -a 0 -p 0 -i 1ms -D 2s --listen 127.0.0.1:0 --tag")
        .arg("host=evil\u{202e}lmth.exe")
        .arg("--store")
        .arg(&store)
        .assert_ok();
    let html = dir.join("fleet.html");
    latlab()
        .words("report --fleet --store")
        .arg(&store)
        .arg("-o")
        .arg(&html)
        .assert_ok();
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
