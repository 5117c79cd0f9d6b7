//! Reading a request head off a connection without ever waiting: plain bytes or TLS
//! records (the handshake moved on as far as it goes), at most [`MAX_REQUEST`] bytes, parsed
//! by `httparse` once complete. Only the accept thread calls it.

use super::{Conn, Head, Response, Step, MAX_REQUEST};
use std::io::{ErrorKind, Read};
use std::net::TcpStream;
use std::time::Instant;

/// How a connection's input stands after reading what it had.
#[derive(Debug, PartialEq)]
enum Input {
    /// Still open: more may come.
    Open,
    /// The client closed its side (what it sent before still counts).
    Ended,
    /// Broken (a reset, a TLS error): nothing more to do.
    Broken,
}

/// Reads what the connection has for us (never waiting) and says whether its head is
/// complete.
pub(super) fn progress(c: &mut Conn) -> Step {
    let input = match c.tls.as_mut() {
        None => read_plain(&mut c.sock, &mut c.head, &mut c.last),
        Some(t) => pump_tls(t, &mut c.sock, &mut c.head, &mut c.last),
    };
    if input == Input::Broken {
        return Step::Close;
    }
    match parse_head(&c.head) {
        Some(h) => Step::Ready(h),
        None if input == Input::Ended => Step::Close,
        None => Step::Wait,
    }
}

/// Reads plain bytes until the socket would block.
fn read_plain(sock: &mut TcpStream, head: &mut Vec<u8>, last: &mut Instant) -> Input {
    let mut buf = [0u8; 2048];
    while head.len() < MAX_REQUEST {
        let room = (MAX_REQUEST - head.len()).min(buf.len());
        match sock.read(&mut buf[..room]) {
            Ok(0) => return Input::Ended,
            Ok(n) => {
                head.extend_from_slice(&buf[..n]);
                *last = Instant::now();
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => return Input::Open,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => return Input::Broken,
        }
    }
    Input::Open
}

/// Moves a TLS connection on as far as it goes without waiting: records in, handshake
/// messages out, plaintext into `head`.
fn pump_tls(
    t: &mut rustls::ServerConnection,
    sock: &mut TcpStream,
    head: &mut Vec<u8>,
    last: &mut Instant,
) -> Input {
    let mut ended = false;
    loop {
        let mut more = false;
        if t.wants_read() && !ended {
            match t.read_tls(sock) {
                Ok(0) => ended = true,
                Ok(_) => {
                    more = true;
                    *last = Instant::now();
                    if t.process_new_packets().is_err() {
                        let _ = t.write_tls(sock);
                        return Input::Broken;
                    }
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => {}
                Err(e) if e.kind() == ErrorKind::Interrupted => more = true,
                Err(_) => return Input::Broken,
            }
        }
        let mut buf = [0u8; 2048];
        while head.len() < MAX_REQUEST {
            let room = (MAX_REQUEST - head.len()).min(buf.len());
            match t.reader().read(&mut buf[..room]) {
                Ok(0) => break,
                Ok(n) => head.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                // The peer closed without close_notify: what came before still counts.
                Err(_) => {
                    ended = true;
                    break;
                }
            }
        }
        while t.wants_write() {
            match t.write_tls(sock) {
                Ok(_) => {}
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => return Input::Broken,
            }
        }
        if !more {
            return if ended { Input::Ended } else { Input::Open };
        }
    }
}

/// A request head from the bytes received so far: None while incomplete.
fn parse_head(buf: &[u8]) -> Option<Head> {
    if buf.is_empty() {
        return None;
    }
    let mut headers = [httparse::EMPTY_HEADER; 32];
    let mut req = httparse::Request::new(&mut headers);
    match req.parse(buf) {
        Ok(httparse::Status::Partial) if buf.len() >= MAX_REQUEST => Some(Head::Refuse(
            Response::text(431, "request head too large\n"),
        )),
        Ok(httparse::Status::Partial) => None,
        Ok(httparse::Status::Complete(_)) => {
            let method = req.method.unwrap_or("").to_string();
            let path = req.path.unwrap_or("/");
            let path = path.split('?').next().unwrap_or("/").to_string();
            let header = |name: &str| {
                req.headers
                    .iter()
                    .find(|h| h.name.eq_ignore_ascii_case(name))
                    .map(|h| String::from_utf8_lossy(h.value).into_owned())
            };
            // Several Accept lines are one list (RFC 9110, 5.3).
            let accept = req
                .headers
                .iter()
                .filter(|h| h.name.eq_ignore_ascii_case("accept"))
                .map(|h| String::from_utf8_lossy(h.value).into_owned())
                .collect::<Vec<_>>()
                .join(",");
            let auth = header("authorization");
            Some(Head::Request(method, path, accept, auth))
        }
        Err(httparse::Error::TooManyHeaders) => {
            Some(Head::Refuse(Response::text(431, "too many headers\n")))
        }
        Err(_) => Some(Head::Refuse(Response::text(400, "bad request\n"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_method_and_path_without_query() {
        assert_eq!(
            parse_head(b"GET /metrics?x=1 HTTP/1.1\r\nHost: a\r\nACCEPT: text/plain\r\n\r\n"),
            Some(Head::Request(
                "GET".into(),
                "/metrics".into(),
                "text/plain".into(),
                None
            ))
        );
    }

    #[test]
    fn refuses_garbage_oversize_and_waits_for_the_rest() {
        assert!(
            matches!(parse_head(b"\x01\x02 nonsense\r\n\r\n"), Some(Head::Refuse(r)) if r.status == 400)
        );
        let mut big = b"GET /".to_vec();
        big.extend(std::iter::repeat_n(b'a', MAX_REQUEST));
        assert!(matches!(parse_head(&big), Some(Head::Refuse(r)) if r.status == 431));
        assert_eq!(parse_head(b"GET /metrics HTTP/1.1\r\n"), None);
        assert_eq!(parse_head(b""), None);
    }
}
