//! Writing answers: the workers that answer complete requests (credentials checked there,
//! off the accept path), each answer encoded as one buffer and written in one write within
//! [`WRITE_TIMEOUT`], and the answer given at once to a connection refused on the accept path.

use super::{Conn, Handler, Head, Job, Response, WRITE_TIMEOUT};
use crate::webconfig::WebConfig;
use std::io::{ErrorKind, Write};
use std::net::TcpStream;
use std::sync::mpsc::Receiver;
use std::sync::Mutex;
use std::time::Instant;

/// Answers a pending connection at once, without waiting (best effort), and closes it.
pub(super) fn refuse_now(mut c: Conn, r: &Response) {
    let bytes = encode(r, true);
    match c.tls.as_mut() {
        None => {
            let _ = c.sock.write(&bytes);
        }
        Some(t) if !t.is_handshaking() => {
            let _ = t.writer().write_all(&bytes);
            t.send_close_notify();
            let _ = t.write_tls(&mut c.sock);
        }
        Some(_) => {}
    }
    let _ = c.sock.shutdown(std::net::Shutdown::Both);
}

/// A worker: answers complete requests until the server stops.
pub(super) fn work(rx: &Mutex<Receiver<Job>>, handler: &Handler, web: Option<&WebConfig>) {
    loop {
        let job = match rx.lock() {
            Ok(r) => match r.recv() {
                Ok(j) => j,
                Err(_) => return,
            },
            Err(_) => return,
        };
        answer(job, handler, web);
    }
}

/// Answers one request (401 without valid credentials when the web configuration asks for
/// them) in one write, then closes.
fn answer(mut j: Job, handler: &Handler, web: Option<&WebConfig>) {
    let (r, with_body) = match &j.head {
        Head::Refuse(r) => (r.clone(), true),
        Head::Request(m, path, accept, auth) => {
            let r = if web.is_some_and(|w| !w.authorized(auth.as_deref())) {
                Response::text(401, "authentication required\n")
            } else if m == "GET" || m == "HEAD" {
                handler(path, accept)
            } else {
                Response::text(405, "only GET and HEAD\n")
            };
            (r, m != "HEAD")
        }
    };
    let bytes = encode(&r, with_body);
    let deadline = Instant::now() + WRITE_TIMEOUT;
    if j.sock.set_nonblocking(false).is_err() {
        return;
    }
    match j.tls.as_mut() {
        None => {
            let _ = write_until(&mut j.sock, &bytes, deadline);
        }
        Some(t) => {
            let _ = t.writer().write_all(&bytes);
            t.send_close_notify();
            let mut out = Vec::with_capacity(bytes.len() + 1024);
            while t.wants_write() {
                if t.write_tls(&mut out).is_err() {
                    break;
                }
            }
            let _ = write_until(&mut j.sock, &out, deadline);
        }
    }
    let _ = j.sock.shutdown(std::net::Shutdown::Write);
}

/// Writes all of `bytes` (one write when the socket takes it), giving up at `deadline`.
fn write_until(sock: &mut TcpStream, mut bytes: &[u8], deadline: Instant) -> std::io::Result<()> {
    while !bytes.is_empty() {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(ErrorKind::TimedOut.into());
        }
        sock.set_write_timeout(Some(left))?;
        match sock.write(bytes) {
            Ok(0) => return Err(ErrorKind::WriteZero.into()),
            Ok(n) => bytes = &bytes[n..],
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        431 => "Request Header Fields Too Large",
        503 => "Service Unavailable",
        _ => "Error",
    }
}

/// The whole response, head and body, as one buffer (written in one write).
fn encode(r: &Response, with_body: bool) -> Vec<u8> {
    let allow = match r.status {
        405 => "Allow: GET, HEAD\r\n",
        401 => "WWW-Authenticate: Basic realm=\"latlab\"\r\n",
        _ => "",
    };
    let mut out = format!(
        "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\n{allow}Connection: close\r\n\r\n",
        r.status,
        reason(r.status),
        r.content_type,
        r.body.len()
    )
    .into_bytes();
    if with_body {
        out.extend_from_slice(&r.body);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_response_is_one_buffer() {
        let b = encode(&Response::text(200, "hi\n"), true);
        let t = String::from_utf8(b).unwrap();
        assert!(
            t.starts_with("HTTP/1.1 200 OK\r\n") && t.ends_with("\r\n\r\nhi\n"),
            "{t}"
        );
        let h = String::from_utf8(encode(&Response::text(200, "hi\n"), false)).unwrap();
        assert!(
            h.ends_with("\r\n\r\n") && h.contains("Content-Length: 3"),
            "{h}"
        );
    }
}
