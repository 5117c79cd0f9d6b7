//! A PostgreSQL store that stops answering: latlab gives up after `LATLAB_STORE_TIMEOUT`
//! seconds instead of waiting forever, and a finished run is kept in a file.

use crate::util::{latlab, pg_store, Dir};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// A port that accepts connections and never says a word: a listing gives up on it.
#[test]
fn a_server_that_never_answers_is_given_up_on() {
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    let out = latlab()
        .args(["runs", "list", "--store"])
        .arg(format!("postgres://me@127.0.0.1:{port}/db"))
        .env("LATLAB_STORE_TIMEOUT", "2s")
        .limit(Duration::from_secs(60))
        .output();
    out.assert_exit(3);
    assert!(
        out.stderr.contains("no answer in 2 s") && out.stderr.contains("LATLAB_STORE_TIMEOUT"),
        "{out}"
    );
    let bad = latlab()
        .args(["runs", "list", "--store"])
        .arg(format!("postgres://me@127.0.0.1:{port}/db"))
        .env("LATLAB_STORE_TIMEOUT", "soon")
        .output();
    bad.assert_exit(2);
    assert!(
        bad.stderr.contains("LATLAB_STORE_TIMEOUT \"soon\""),
        "{bad}"
    );
    // A limit too short to let any server answer is refused too.
    let short = latlab()
        .args(["runs", "list", "--store"])
        .arg(format!("postgres://me@127.0.0.1:{port}/db"))
        .env("LATLAB_STORE_TIMEOUT", "50ms")
        .output();
    short.assert_exit(2);
    assert!(short.stderr.contains("out of range"), "{short}");
}

/// A server that stops answering while a finished run is being saved (its INSERT never
/// reaches it): the save gives up, the run is kept in a file, exit 3.
#[test]
fn a_server_that_stops_answering_mid_save_loses_no_run() {
    let Some((_, proxy, url)) = proxied() else {
        return;
    };
    let dir = Dir::new();
    let xdg = dir.join("xdg");
    let out = latlab()
        .args(["cyclic", "-t", "1", "-D", "1s", "-q", "--store"])
        .arg(&url)
        .env("LATLAB_STORE_TIMEOUT", "3")
        .env("XDG_DATA_HOME", &xdg)
        .limit(Duration::from_secs(90))
        .output();
    assert!(proxy.froze.load(Ordering::SeqCst), "{out}");
    out.assert_exit(3);
    assert!(out.stderr.contains("did not answer in 3 s"), "{out}");
    let kept: Vec<_> = std::fs::read_dir(xdg.join("latlab/unstored"))
        .unwrap_or_else(|e| panic!("no unstored directory ({e}): {out}"))
        .flatten()
        .map(|e| e.path())
        .collect();
    assert_eq!(kept.len(), 1, "{kept:?} {out}");
    assert!(out.stderr.contains(&kept[0].display().to_string()), "{out}");
    let run: serde_json::Value = serde_json::from_slice(&std::fs::read(&kept[0]).unwrap()).unwrap();
    assert!(run.to_string().contains("\"cyclic\""), "{run}");
}

/// What the server refuses is said in its words, not the driver's "db error".
#[test]
fn a_server_refusal_is_said_in_its_own_words() {
    let Some(pg) = pg_store() else { return };
    let (base, _) = pg.rsplit_once('/').unwrap();
    let out = latlab()
        .args(["runs", "list", "--store"])
        .arg(format!("{base}/no_such_db_{}", std::process::id()))
        .output();
    out.assert_exit(3);
    assert!(out.stderr.contains("does not exist"), "{out}");
}

/// A monitor whose store stops answering for one snapshot connects again for the next: one
/// snapshot is kept in a file, the later ones are stored.
#[test]
fn a_monitor_connects_again_after_its_store_stopped_answering() {
    let Some((pg, proxy, url)) = proxied() else {
        return;
    };
    let dir = Dir::new();
    let tag = format!("monitor=reconnect-{}", std::process::id());
    let out = latlab()
        .words("monitor -a 0 -i 1ms --snapshot-every 1s -D 6s --listen 127.0.0.1:0 -q")
        .args(["--monitor-id", tag.strip_prefix("monitor=").unwrap()])
        .args(["--store", &url])
        .env("LATLAB_STORE_TIMEOUT", "1")
        .env("XDG_DATA_HOME", dir.join("xdg"))
        .limit(Duration::from_secs(90))
        .output();
    assert!(proxy.froze.load(Ordering::SeqCst), "{out}");
    assert_eq!(
        out.stderr.matches("did not answer in 1 s").count(),
        1,
        "{out}"
    );
    let listed = latlab()
        .args([
            "runs", "list", "--kind", "monitor", "--tag", &tag, "--store", &pg,
        ])
        .output();
    listed.assert_ok();
    let stored = listed.stdout.lines().skip(1).count();
    assert!(
        stored >= 2,
        "{stored} snapshots stored after the freeze: {listed} {out}"
    );
}

/// A monitor whose store stalls goes on measuring and ends on time: its snapshots are kept
/// from a thread of their own, which waits out the stall (up to the time limit) at the end.
#[test]
fn a_stalled_store_does_not_stall_the_monitor() {
    let Some((_, proxy, url)) = proxied() else {
        return;
    };
    let dir = Dir::new();
    let json = dir.join("last.json");
    let out = latlab()
        .words("monitor -a 0 -i 1ms --snapshot-every 1s -D 3s --listen 127.0.0.1:0 -q --json")
        .arg(&json)
        .arg("--store")
        .arg(&url)
        .env("LATLAB_STORE_TIMEOUT", "12s")
        .env("XDG_DATA_HOME", dir.join("xdg"))
        .limit(Duration::from_secs(90))
        .output();
    assert!(proxy.froze.load(Ordering::SeqCst), "{out}");
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert!(out.stderr.contains("did not answer in 12 s"), "{out}");
    // An order, not a duration: the measuring ended before the stalled save gave up (when
    // the snapshot's file was written); a loop that waited on the store ends after it.
    let ended = humantime::parse_rfc3339_weak(v["ended"].as_str().unwrap()).unwrap();
    let kept = std::fs::read_dir(dir.join("xdg/latlab/unstored"))
        .unwrap()
        .flatten()
        .map(|e| e.metadata().unwrap().modified().unwrap())
        .min()
        .unwrap_or_else(|| panic!("no snapshot kept in a file: {out}"));
    assert!(ended < kept, "ended {ended:?}, kept {kept:?}: {out}");
}

/// The test server's URL, a [`Proxy`] in front of it, and the URL through the proxy.
fn proxied() -> Option<(String, Proxy, String)> {
    let pg = pg_store()?;
    let rest = pg.strip_prefix("postgres://").unwrap();
    let (user, rest) = rest.split_once('@').unwrap();
    let (server, db) = rest.split_once('/').unwrap();
    let proxy = Proxy::start(server);
    let url = format!("postgres://{user}@127.0.0.1:{}/{db}", proxy.port);
    Some((pg, proxy, url))
}

/// Forwards connections to `server`; the first connection to send a run's INSERT is frozen
/// there: from then on it holds everything that client sends, as a server that stopped would.
/// Later connections are forwarded.
struct Proxy {
    port: u16,
    froze: Arc<AtomicBool>,
    done: Arc<AtomicBool>,
}

impl Proxy {
    fn start(server: &str) -> Proxy {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let (froze, done) = (
            Arc::new(AtomicBool::new(false)),
            Arc::new(AtomicBool::new(false)),
        );
        let (f, d, server) = (froze.clone(), done.clone(), server.to_string());
        std::thread::spawn(move || {
            for c in l.incoming().flatten() {
                let Ok(s) = TcpStream::connect(&server) else {
                    return;
                };
                let (c2, s2) = (c.try_clone().unwrap(), s.try_clone().unwrap());
                let (f1, d1) = (f.clone(), d.clone());
                std::thread::spawn(move || pump(c, s, Some(&f1), &d1));
                let d2 = d.clone();
                std::thread::spawn(move || pump(s2, c2, None, &d2));
            }
        });
        Proxy { port, froze, done }
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.done.store(true, Ordering::SeqCst);
    }
}

fn pump(mut from: TcpStream, mut to: TcpStream, freeze: Option<&AtomicBool>, done: &AtomicBool) {
    let mut buf = [0u8; 65536];
    while let Ok(n @ 1..) = from.read(&mut buf) {
        if let Some(f) = freeze {
            let insert = buf[..n]
                .windows(23)
                .any(|w| w == b"INSERT INTO latlab_runs");
            if insert && !f.swap(true, Ordering::SeqCst) {
                // Held, never forwarded, until the test ends.
                while !done.load(Ordering::SeqCst) {
                    std::thread::sleep(Duration::from_millis(50));
                }
                return;
            }
        }
        if to.write_all(&buf[..n]).is_err() {
            return;
        }
    }
    let _ = to.shutdown(std::net::Shutdown::Write);
}
