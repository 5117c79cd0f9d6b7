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

mod answer;
mod read;

use std::io::{ErrorKind, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::webconfig::WebConfig;
use answer::{refuse_now, work};
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
                    read::progress(&mut self.conns[i])
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
