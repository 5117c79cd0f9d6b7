//! `latlab monitor`'s endpoint under hostile HTTP clients: it keeps measuring and answering.

use crate::monitor::{get, histogram_count, parse, request, scrape, Monitor};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

#[test]
fn hostile_clients_do_not_stop_measuring_or_answering() {
    let mon = Monitor::start_words("-a 0 -i 1ms --no-store -D 120s");
    let a = mon.addr;
    assert_eq!(get(a, "/nope").unwrap().0, 404);
    assert_eq!(get(a, "/../../etc/passwd").unwrap().0, 404);
    let (code, status) = get(a, "/status").unwrap();
    assert_eq!(code, 200);
    assert!(status.contains("cpu 0:"), "{status}");
    assert_eq!(
        request(a, b"POST /metrics HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc")
            .unwrap()
            .0,
        405
    );
    assert_eq!(request(a, b"\x16\x03\x01garbage\r\n\r\n").unwrap().0, 400);
    // An oversized head is refused without being read to its end.
    let mut big = b"GET /metrics HTTP/1.1\r\nX-Big: ".to_vec();
    big.extend(std::iter::repeat_n(b'a', 64 * 1024));
    if let Some((code, _)) = request(a, &big) {
        assert_eq!(code, 431);
    }
    let before = histogram_count(&parse(&scrape(a, Duration::from_secs(10))), 0);

    // Many connections that never finish their request, and one that trickles bytes.
    let idle: Vec<TcpStream> = (0..48).filter_map(|_| TcpStream::connect(a).ok()).collect();
    assert!(
        idle.len() >= 40,
        "could only open {} connections",
        idle.len()
    );
    let trickle = std::thread::spawn(move || {
        let mut s = TcpStream::connect(a).unwrap();
        let t0 = Instant::now();
        for b in b"GET /metrics HTTP/1.1\r\nX: "
            .iter()
            .chain([b'a'; 100].iter())
        {
            if s.write_all(&[*b]).is_err() {
                break;
            }
            std::thread::sleep(Duration::from_millis(500));
            if t0.elapsed() > Duration::from_secs(20) {
                break;
            }
        }
        t0.elapsed()
    });
    // The monitor answers again once the idle ones time out (a few seconds), and kept measuring.
    let after = histogram_count(&parse(&scrape(a, Duration::from_secs(15))), 0);
    assert!(after > before, "samples stopped: {before} -> {after}");
    // The idle connections were closed by the server, not left to hold it.
    for mut s in idle {
        s.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
        let mut buf = Vec::new();
        let _ = s.read_to_end(&mut buf);
        let text = String::from_utf8_lossy(&buf);
        assert!(
            text.is_empty() || text.starts_with("HTTP/1.1 408") || text.starts_with("HTTP/1.1 503"),
            "{text}"
        );
    }
    let held = trickle.join().unwrap();
    assert!(
        held < Duration::from_secs(15),
        "a trickling client held a connection for {held:?}"
    );
    assert_eq!(get(a, "/metrics").unwrap().0, 200);
    mon.terminate().assert_ok();
}
