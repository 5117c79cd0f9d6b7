//! A small, bounded HTTP/1.1 server for the monitor's endpoint. Requests are parsed by
//! `httparse`; each connection is answered once and closed.
//!
//! One thread (`latlab-http`) accepts and reads: it waits in poll(2) on the listening socket
//! and on every connection still completing its TLS handshake or sending its request head,
//! all non-blocking, so a client that stalls costs a descriptor and a few KiB, never a thread,
//! and cannot hold back anyone else. Such connections are bounded in size (8 KiB of request
//! head), time (5 s from accept to a complete head, handshake included) and number
//! ([`MAX_PENDING`] at once, [`MAX_PENDING_PER_PEER`] from one address): when full, the
//! connection that has been silent longest makes room for the new one, however recently it
//! came, so stalled handshakes cannot keep a real scrape out (one that completes its handshake
//! within the next bound's worth of new connections gets through). A complete request goes to one of
//! [`WORKERS`] threads, which check its credentials (bcrypt, off this path) and write the
//! answer in one write on a TCP_NODELAY socket (no Nagle/delayed-ACK stall). Nothing here
//! touches the measuring threads.

use std::io::{ErrorKind, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::webconfig::WebConfig;
use latlab_core::sys::poll::{self as sp, POLLERR, POLLHUP, POLLIN, POLLNVAL, POLLOUT};

/// Largest request head accepted (bytes); larger requests get 431.
pub(crate) const MAX_REQUEST: usize = 8 * 1024;
/// Connections still handshaking or sending their request head, at once.
pub(crate) const MAX_PENDING: usize = 256;
/// Of those, from one peer address.
pub(crate) const MAX_PENDING_PER_PEER: usize = 64;
/// Longest time from accept to a complete request head (the TLS handshake included).
pub(crate) const REQUEST_DEADLINE: Duration = Duration::from_secs(5);
/// Longest time to write one answer.
pub(crate) const WRITE_TIMEOUT: Duration = Duration::from_secs(5);
/// Threads answering complete requests (credentials checked there, not on the accept path).
pub(crate) const WORKERS: usize = 4;
/// Complete requests waiting for a worker; more are answered 503 at once.
pub(crate) const QUEUE: usize = 32;

/// An answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    /// Status code.
    pub status: u16,
    /// Content type.
    pub content_type: &'static str,
    /// Body (text, or the protobuf exposition's bytes).
    pub body: Vec<u8>,
}

impl Response {
    /// A plain-text answer.
    pub fn text(status: u16, body: impl Into<String>) -> Response {
        Response {
            status,
            content_type: "text/plain; charset=utf-8",
            body: body.into().into_bytes(),
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
    wake: UnixStream,
    accept: Option<std::thread::JoinHandle<()>>,
}

impl Server {
    /// Binds `addr` and serves `handler` from housekeeping threads.
    pub fn start(
        addr: SocketAddr,
        handler: Arc<Handler>,
        web: Option<Arc<WebConfig>>,
    ) -> std::io::Result<Server> {
        let listener = TcpListener::bind(addr)?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let stop = Arc::new(AtomicBool::new(false));
        let (wake, woken) = UnixStream::pair()?;
        woken.set_nonblocking(true)?;
        let (tx, rx) = std::sync::mpsc::sync_channel::<Job>(QUEUE);
        let rx = Arc::new(Mutex::new(rx));
        for _ in 0..WORKERS {
            let (rx, h, w) = (rx.clone(), handler.clone(), web.clone());
            std::thread::Builder::new()
                .name("latlab-http-work".into())
                .stack_size(256 * 1024)
                .spawn(move || work(&rx, &*h, w.as_deref()))?;
        }
        let s = stop.clone();
        let tls = web.as_ref().and_then(|w| w.tls.clone());
        let accept = std::thread::Builder::new()
            .name("latlab-http".into())
            .stack_size(256 * 1024)
            .spawn(move || {
                Acceptor {
                    listener,
                    woken,
                    tls,
                    tx,
                    conns: Vec::new(),
                }
                .run(&s)
            })?;
        Ok(Server {
            addr,
            stop,
            wake,
            accept: Some(accept),
        })
    }

    /// Stops accepting (at once: the accept thread is woken); answers being written end by
    /// their own time limit, and no request is verified on the way out.
    pub fn stop(mut self) {
        self.stop.store(true, Ordering::Relaxed);
        let _ = (&self.wake).write(&[1]);
        if let Some(h) = self.accept.take() {
            let _ = h.join();
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
}

/// A complete request, handed to a worker.
struct Job {
    sock: TcpStream,
    tls: Option<Box<rustls::ServerConnection>>,
    head: Head,
}

/// A connection still handshaking or sending its request head.
struct Conn {
    sock: TcpStream,
    peer: IpAddr,
    tls: Option<Box<rustls::ServerConnection>>,
    head: Vec<u8>,
    deadline: Instant,
    /// When it last sent something.
    last: Instant,
}

/// What a connection's progress gave.
enum Step {
    /// Nothing complete yet.
    Wait,
    /// The request head is complete (or refused).
    Ready(Head),
    /// The client went away or broke the protocol.
    Close,
}

struct Acceptor {
    listener: TcpListener,
    woken: UnixStream,
    tls: Option<Arc<rustls::ServerConfig>>,
    tx: SyncSender<Job>,
    conns: Vec<Conn>,
}

impl Acceptor {
    fn run(mut self, stop: &AtomicBool) {
        let mut fds = Vec::new();
        while !stop.load(Ordering::Relaxed) {
            fds.clear();
            fds.push(sp::watch(self.listener.as_raw_fd(), POLLIN));
            fds.push(sp::watch(self.woken.as_raw_fd(), POLLIN));
            for c in &self.conns {
                let out = c.tls.as_ref().is_some_and(|t| t.wants_write());
                fds.push(sp::watch(
                    c.sock.as_raw_fd(),
                    POLLIN | if out { POLLOUT } else { 0 },
                ));
            }
            let now = Instant::now();
            let wait = self
                .conns
                .iter()
                .map(|c| c.deadline.saturating_duration_since(now))
                .min()
                .unwrap_or(Duration::from_secs(1))
                .min(Duration::from_secs(1));
            if sp::poll(&mut fds, wait).is_err() {
                std::thread::sleep(Duration::from_millis(10));
                continue;
            }
            if fds[1].revents != 0 || stop.load(Ordering::Relaxed) {
                break;
            }
            // Connections first (their indices match `fds` until the list changes).
            let ready: Vec<bool> = fds[2..]
                .iter()
                .map(|f| f.revents & (POLLIN | POLLOUT | POLLERR | POLLHUP | POLLNVAL) != 0)
                .collect();
            let mut i = ready.len();
            while i > 0 {
                i -= 1;
                let step = if ready[i] {
                    progress(&mut self.conns[i])
                } else {
                    Step::Wait
                };
                match step {
                    Step::Wait if Instant::now() >= self.conns[i].deadline => {
                        let c = self.conns.swap_remove(i);
                        refuse_now(c, &Response::text(408, "request too slow\n"));
                    }
                    Step::Wait => {}
                    Step::Close => {
                        self.conns.swap_remove(i);
                    }
                    Step::Ready(head) => {
                        let c = self.conns.swap_remove(i);
                        self.dispatch(c, head);
                    }
                }
            }
            if fds[0].revents != 0 {
                self.accept_all();
            }
        }
    }

    /// Accepts every connection waiting (each made non-blocking, TCP_NODELAY).
    fn accept_all(&mut self) {
        for _ in 0..MAX_PENDING {
            match self.listener.accept() {
                Ok((sock, peer)) => {
                    if sock.set_nonblocking(true).is_err() {
                        continue;
                    }
                    let _ = sock.set_nodelay(true);
                    if !self.make_room(peer.ip()) {
                        continue;
                    }
                    let tls = match &self.tls {
                        None => None,
                        Some(cfg) => match rustls::ServerConnection::new(cfg.clone()) {
                            Ok(c) => Some(Box::new(c)),
                            Err(_) => continue,
                        },
                    };
                    let now = Instant::now();
                    self.conns.push(Conn {
                        sock,
                        peer: peer.ip(),
                        tls,
                        head: Vec::new(),
                        deadline: now + REQUEST_DEADLINE,
                        last: now,
                    });
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) if matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENFILE)) => {
                    // Out of descriptors: the silent-longest connection goes, else wait.
                    if !self.evict(None, Duration::ZERO) {
                        std::thread::sleep(Duration::from_millis(20));
                    }
                    return;
                }
                Err(_) => return,
            }
        }
    }

    /// Makes room for a connection from `peer` within the bounds: closes the connection (of
    /// that peer when it is at its bound) that has been silent longest, however briefly:
    /// a newcomer is never refused for stalled ones (a flood of 200 half-open handshakes reset
    /// the next real scrape when only those silent 0.25 s could go).
    fn make_room(&mut self, peer: IpAddr) -> bool {
        let from_peer = self.conns.iter().filter(|c| c.peer == peer).count();
        if from_peer >= MAX_PENDING_PER_PEER {
            return self.evict(Some(peer), Duration::ZERO);
        }
        if self.conns.len() >= MAX_PENDING {
            return self.evict(None, Duration::ZERO);
        }
        true
    }

    /// Closes the connection (from `peer`, if given) silent longest, if for at least `grace`.
    fn evict(&mut self, peer: Option<IpAddr>, grace: Duration) -> bool {
        let now = Instant::now();
        let stalest = self
            .conns
            .iter()
            .enumerate()
            .filter(|(_, c)| peer.is_none_or(|p| c.peer == p))
            .min_by_key(|(_, c)| c.last)
            .filter(|(_, c)| now.duration_since(c.last) >= grace)
            .map(|(i, _)| i);
        match stalest {
            Some(i) => {
                let c = self.conns.swap_remove(i);
                let _ = c.sock.shutdown(std::net::Shutdown::Both);
                true
            }
            None => false,
        }
    }

    /// Hands a complete request to a worker; 503 at once when they are all busy.
    fn dispatch(&mut self, c: Conn, head: Head) {
        let job = Job {
            sock: c.sock,
            tls: c.tls,
            head,
        };
        match self.tx.try_send(job) {
            Ok(()) => {}
            Err(TrySendError::Full(j) | TrySendError::Disconnected(j)) => {
                let c = Conn {
                    sock: j.sock,
                    peer: c.peer,
                    tls: j.tls,
                    head: Vec::new(),
                    deadline: c.deadline,
                    last: c.last,
                };
                refuse_now(c, &Response::text(503, "busy\n"));
            }
        }
    }
}

/// Answers a pending connection at once, without waiting (best effort), and closes it.
fn refuse_now(mut c: Conn, r: &Response) {
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
fn progress(c: &mut Conn) -> Step {
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

/// A worker: answers complete requests until the server stops.
fn work(rx: &Mutex<Receiver<Job>>, handler: &Handler, web: Option<&WebConfig>) {
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
