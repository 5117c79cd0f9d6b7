//! A small, bounded HTTP/1.1 server for the monitor's endpoint. Requests are parsed by
//! `httparse`; every connection is bounded in size (8 KiB of request head), time (2 s per read,
//! 5 s per request, 5 s per write) and number (32 at once; more are answered 503 and closed), and
//! each is answered once and closed, so a slow or hostile client holds at most one of a few
//! housekeeping threads for a few seconds and never touches the measuring threads.

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::webconfig::WebConfig;

/// Largest request head accepted (bytes); larger requests get 431.
pub const MAX_REQUEST: usize = 8 * 1024;
/// Connections served at once; more are answered 503 and closed.
pub const MAX_CONNECTIONS: usize = 32;
/// Longest wait for one read.
pub const READ_TIMEOUT: Duration = Duration::from_secs(2);
/// Longest time a client may take to send its whole request head.
pub const REQUEST_DEADLINE: Duration = Duration::from_secs(5);
/// Longest wait for one write.
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(5);

/// An answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    /// Status code.
    pub status: u16,
    /// Content type.
    pub content_type: &'static str,
    /// Body.
    pub body: String,
}

impl Response {
    /// A plain-text answer.
    pub fn text(status: u16, body: impl Into<String>) -> Response {
        Response {
            status,
            content_type: "text/plain; charset=utf-8",
            body: body.into(),
        }
    }
}

/// Answers a GET of a path (the query string removed), given the request's `Accept` header.
pub type Handler = dyn Fn(&str, &str) -> Response + Send + Sync;

/// A running server; stopped (and its accept thread joined) by [`Server::stop`].
pub struct Server {
    /// The bound address (the port is real even when 0 was asked).
    pub addr: SocketAddr,
    stop: Arc<AtomicBool>,
    accept: Option<std::thread::JoinHandle<()>>,
}

impl Server {
    /// Binds `addr` and serves `handler` from a housekeeping thread.
    pub fn start(
        addr: SocketAddr,
        handler: Arc<Handler>,
        web: Option<Arc<WebConfig>>,
    ) -> std::io::Result<Server> {
        let listener = TcpListener::bind(addr)?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let accept = std::thread::Builder::new()
            .name("latlab-http".into())
            .spawn(move || accept_loop(listener, handler, web, s))?;
        Ok(Server {
            addr,
            stop,
            accept: Some(accept),
        })
    }

    /// Stops accepting; connections in flight end by their own time limits.
    pub fn stop(mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.accept.take() {
            let _ = h.join();
        }
    }
}

fn accept_loop(
    listener: TcpListener,
    handler: Arc<Handler>,
    web: Option<Arc<WebConfig>>,
    stop: Arc<AtomicBool>,
) {
    let active = Arc::new(AtomicUsize::new(0));
    while !stop.load(Ordering::Relaxed) {
        match listener.accept() {
            Ok((sock, _)) => {
                let _ = sock.set_nonblocking(false);
                let _ = sock.set_write_timeout(Some(WRITE_TIMEOUT));
                if active.fetch_add(1, Ordering::AcqRel) >= MAX_CONNECTIONS {
                    active.fetch_sub(1, Ordering::AcqRel);
                    if web.as_ref().is_none_or(|w| w.tls.is_none()) {
                        let _ = sock.set_write_timeout(Some(Duration::from_millis(200)));
                        let mut s = &sock;
                        respond(
                            &mut s,
                            &Response::text(503, "too many connections\n"),
                            false,
                        );
                    }
                    let _ = sock.shutdown(std::net::Shutdown::Both);
                    continue;
                }
                let (h, a, w) = (handler.clone(), active.clone(), web.clone());
                let spawned = std::thread::Builder::new()
                    .name("latlab-http-conn".into())
                    .stack_size(128 * 1024)
                    .spawn(move || {
                        serve(sock, &*h, w.as_deref());
                        a.fetch_sub(1, Ordering::AcqRel);
                    });
                if spawned.is_err() {
                    active.fetch_sub(1, Ordering::AcqRel);
                }
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock || e.kind() == ErrorKind::Interrupted => {
                std::thread::sleep(Duration::from_millis(50));
            }
            Err(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    }
}

/// What reading a request head gave.
#[derive(Debug, PartialEq)]
enum Head {
    /// Method, path (without the query), `Accept` and `Authorization` headers.
    Request(String, String, String, Option<String>),
    /// Answer this and close.
    Refuse(Response),
    /// The client went away.
    Gone,
}

fn read_head(sock: &mut impl Read, deadline: Instant) -> Head {
    let mut buf = vec![0u8; MAX_REQUEST];
    let mut len = 0;
    loop {
        if len == buf.len() {
            return Head::Refuse(Response::text(431, "request head too large\n"));
        }
        if Instant::now() >= deadline {
            return Head::Refuse(Response::text(408, "request too slow\n"));
        }
        match sock.read(&mut buf[len..]) {
            Ok(0) => return Head::Gone,
            Ok(n) => len += n,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                return Head::Refuse(Response::text(408, "request too slow\n"))
            }
            Err(_) => return Head::Gone,
        }
        let mut headers = [httparse::EMPTY_HEADER; 32];
        let mut req = httparse::Request::new(&mut headers);
        match req.parse(&buf[..len]) {
            Ok(httparse::Status::Partial) => continue,
            Ok(httparse::Status::Complete(_)) => {
                let method = req.method.unwrap_or("").to_string();
                let path = req.path.unwrap_or("/");
                let path = path.split('?').next().unwrap_or("/").to_string();
                let accept = req
                    .headers
                    .iter()
                    .find(|h| h.name.eq_ignore_ascii_case("accept"))
                    .map(|h| String::from_utf8_lossy(h.value).into_owned())
                    .unwrap_or_default();
                let auth = req
                    .headers
                    .iter()
                    .find(|h| h.name.eq_ignore_ascii_case("authorization"))
                    .map(|h| String::from_utf8_lossy(h.value).into_owned());
                return Head::Request(method, path, accept, auth);
            }
            Err(httparse::Error::TooManyHeaders) => {
                return Head::Refuse(Response::text(431, "too many headers\n"))
            }
            Err(_) => return Head::Refuse(Response::text(400, "bad request\n")),
        }
    }
}

fn serve(sock: TcpStream, handler: &Handler, web: Option<&WebConfig>) {
    let _ = sock.set_read_timeout(Some(READ_TIMEOUT));
    let deadline = Instant::now() + REQUEST_DEADLINE;
    match web.and_then(|w| w.tls.clone()) {
        None => {
            let mut s = &sock;
            answer(&mut s, handler, web, deadline);
        }
        Some(cfg) => {
            let Ok(conn) = rustls::ServerConnection::new(cfg) else {
                return;
            };
            let mut tls = rustls::StreamOwned::new(conn, &sock);
            // The handshake is bounded like a request head: each read by READ_TIMEOUT, the
            // whole by the request's deadline. A client that speaks plain HTTP fails here.
            while tls.conn.is_handshaking() {
                if Instant::now() >= deadline || tls.conn.complete_io(&mut tls.sock).is_err() {
                    let _ = sock.shutdown(std::net::Shutdown::Both);
                    return;
                }
            }
            answer(&mut tls, handler, web, deadline);
            tls.conn.send_close_notify();
            let _ = tls.flush();
        }
    }
    let _ = sock.shutdown(std::net::Shutdown::Write);
}

/// Reads one request from `s` and answers it (401 without valid credentials when the web
/// configuration asks for them).
fn answer(
    s: &mut (impl Read + Write),
    handler: &Handler,
    web: Option<&WebConfig>,
    deadline: Instant,
) {
    match read_head(s, deadline) {
        Head::Gone => {}
        Head::Refuse(r) => respond(s, &r, true),
        Head::Request(m, path, accept, auth) => {
            let with_body = m != "HEAD";
            let r = if web.is_some_and(|w| !w.authorized(auth.as_deref())) {
                Response::text(401, "authentication required\n")
            } else if m == "GET" || m == "HEAD" {
                handler(&path, &accept)
            } else {
                Response::text(405, "only GET and HEAD\n")
            };
            respond(s, &r, with_body);
        }
    }
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

/// Writes the response (the caller closes the connection).
fn respond(sock: &mut impl Write, r: &Response, with_body: bool) {
    let allow = match r.status {
        405 => "Allow: GET, HEAD\r\n",
        401 => "WWW-Authenticate: Basic realm=\"latlab\"\r\n",
        _ => "",
    };
    let head = format!(
        "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\n{allow}Connection: close\r\n\r\n",
        r.status,
        reason(r.status),
        r.content_type,
        r.body.len()
    );
    let _ = sock.write_all(head.as_bytes());
    if with_body {
        let _ = sock.write_all(r.body.as_bytes());
    }
    let _ = sock.flush();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(bytes: &[u8]) -> Head {
        read_head(&mut &bytes[..], Instant::now() + Duration::from_secs(5))
    }

    #[test]
    fn parses_method_and_path_without_query() {
        assert_eq!(
            head(b"GET /metrics?x=1 HTTP/1.1\r\nHost: a\r\nACCEPT: text/plain\r\n\r\n"),
            Head::Request("GET".into(), "/metrics".into(), "text/plain".into(), None)
        );
    }

    #[test]
    fn refuses_garbage_oversize_and_truncation() {
        assert!(matches!(head(b"\x01\x02 nonsense\r\n\r\n"), Head::Refuse(r) if r.status == 400));
        let mut big = b"GET /".to_vec();
        big.extend(std::iter::repeat_n(b'a', MAX_REQUEST));
        assert!(matches!(head(&big), Head::Refuse(r) if r.status == 431));
        assert_eq!(head(b"GET /metrics HTTP/1.1\r\n"), Head::Gone);
    }
}
