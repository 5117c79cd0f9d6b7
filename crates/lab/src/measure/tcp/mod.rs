//! `latlab tcp`: loopback TCP throughput (netperf TCP_STREAM; seed 001) and request/response
//! (TCP_RR) between a sender and a receiver, threads or processes, pinnable; `--repeat` prints
//! one figure per line for `latlab compare` / ministat. Listens on loopback addresses only.

pub(crate) mod args;
mod lower;

use latlab_core::config::DisplayUnit;
use crate::driver::Ctx;
use latlab_core::error::{Error, Result};
use latlab_analysis::export::columns;
use latlab_core::result::{Run, Series};
use latlab_core::rt::Control;
use latlab_core::stats::Recorder;
use latlab_core::sys;
use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant, SystemTime};

/// Stream or request/response.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Mode {
    /// Bulk transfer; throughput in 10^6 bit/s.
    Stream,
    /// Transactions of a request and a response; transactions/s and round trips.
    Rr,
}

/// Validated `tcp` settings.
#[derive(Debug, Clone, serde::Serialize)]
pub(crate) struct TcpConfig {
    /// Mode.
    pub(crate) mode: Mode,
    /// Loopback address.
    pub(crate) address: IpAddr,
    /// Port (0: ephemeral).
    pub(crate) port: u16,
    /// Length of each run.
    pub(crate) duration_ns: u64,
    /// Bytes per send (stream).
    pub(crate) send_size: usize,
    /// Request and response sizes (rr).
    pub(crate) request_size: usize,
    /// Response size.
    pub(crate) response_size: usize,
    /// SO_SNDBUF of the sender (None: kernel default).
    pub(crate) send_buffer: Option<usize>,
    /// SO_RCVBUF of the receiver.
    pub(crate) recv_buffer: Option<usize>,
    /// TCP_NODELAY.
    pub(crate) nodelay: bool,
    /// CPU of the sender (client).
    pub(crate) sender_cpu: Option<usize>,
    /// CPU of the receiver (server).
    pub(crate) receiver_cpu: Option<usize>,
    /// The receiver runs in a forked process.
    pub(crate) processes: bool,
    /// Runs.
    pub(crate) repeat: u32,
    /// Unit of round-trip times on screen.
    pub(crate) unit: DisplayUnit,
}

/// One run's figures.
#[derive(Debug, Clone, serde::Serialize)]
pub(crate) struct RunFigures {
    /// Bytes the sender wrote (stream) or transactions completed (rr).
    pub(crate) sent: u64,
    /// Bytes the receiver read (stream) or transactions the server answered (rr).
    pub(crate) received: u64,
    /// Seconds from the first send to the receiver's end of stream (stream) or of the run.
    pub(crate) seconds: f64,
    /// Mbit/s (stream) or transactions/s (rr).
    pub(crate) figure: f64,
}

fn bind(cfg: &TcpConfig) -> Result<TcpListener> {
    let l = TcpListener::bind(SocketAddr::new(cfg.address, cfg.port)).map_err(|e| {
        if e.kind() == std::io::ErrorKind::AddrInUse {
            Error::flag("--port", cfg.port, "is in use")
        } else {
            Error::Env(format!(
                "cannot listen on {}:{}: {e}",
                cfg.address, cfg.port
            ))
        }
    })?;
    if let Some(b) = cfg.recv_buffer {
        let _ = sys::net::set_int(l.as_raw_fd(), libc::SOL_SOCKET, libc::SO_RCVBUF, b as i32);
    }
    Ok(l)
}

/// How long the server waits for the client to connect before giving up.
const ACCEPT_WAIT: Duration = Duration::from_secs(10);

/// Accepts one connection, polling so that `give_up` (the client failed) or a long silence
/// ends the wait instead of blocking for ever.
fn accept_one(l: &TcpListener, give_up: &std::sync::atomic::AtomicBool) -> Option<TcpStream> {
    l.set_nonblocking(true).ok()?;
    let t0 = Instant::now();
    loop {
        match l.accept() {
            Ok((s, _)) => {
                s.set_nonblocking(false).ok()?;
                return Some(s);
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                if give_up.load(std::sync::atomic::Ordering::Relaxed) || t0.elapsed() > ACCEPT_WAIT
                {
                    return None;
                }
                std::thread::sleep(Duration::from_millis(2));
            }
            Err(_) => return None,
        }
    }
}

/// The server side: stream sink or rr responder. Returns (units received, end time ns).
fn serve(
    l: &TcpListener,
    cfg: &TcpConfig,
    give_up: &std::sync::atomic::AtomicBool,
    log: &latlab_core::rt::PlacementLog,
) -> (u64, u64) {
    if let Some(c) = cfg.receiver_cpu {
        log.check(sys::sched::pin_to_cpu(c), || {
            format!("tcp: pin to CPU {c} refused")
        });
    }
    let Some(mut s) = accept_one(l, give_up) else {
        return (0, 0);
    };
    let mut n = 0u64;
    match cfg.mode {
        Mode::Stream => {
            // Reads of the send size, as iperf3's receiver does (-l is both sides' length), up
            // to 4 MiB: a 1 GiB send must not make the receiver zero a 1 GiB buffer first.
            let mut buf = vec![0u8; cfg.send_size.min(4 << 20)];
            while let Ok(k) = s.read(&mut buf) {
                if k == 0 {
                    break;
                }
                n += k as u64;
            }
        }
        Mode::Rr => {
            let mut req = vec![0u8; cfg.request_size];
            let resp = vec![0x52u8; cfg.response_size];
            while s.read_exact(&mut req).is_ok() {
                if s.write_all(&resp).is_err() {
                    break;
                }
                n += 1;
            }
        }
    }
    (n, sys::clock::now_ns(libc::CLOCK_MONOTONIC))
}

fn client(
    addr: SocketAddr,
    cfg: &TcpConfig,
    rtt: &mut Recorder,
    control: &Control,
    log: &latlab_core::rt::PlacementLog,
) -> Result<(u64, u64, u64)> {
    if let Some(c) = cfg.sender_cpu {
        log.check(sys::sched::pin_to_cpu(c), || {
            format!("tcp: pin to CPU {c} refused")
        });
    }
    let mut s =
        TcpStream::connect(addr).map_err(|e| Error::Env(format!("connect to {addr}: {e}")))?;
    let fd = s.as_raw_fd();
    if let Some(b) = cfg.send_buffer {
        let _ = sys::net::set_int(fd, libc::SOL_SOCKET, libc::SO_SNDBUF, b as i32);
    }
    if cfg.nodelay {
        let _ = sys::net::set_int(fd, libc::IPPROTO_TCP, libc::TCP_NODELAY, 1);
    }
    let dur = Duration::from_nanos(cfg.duration_ns);
    // Blocking calls wake every 100 ms, so a receiver that stops reading (or dies) can never
    // hold the run: past the deadline plus STALL_LIMIT the run fails, on Ctrl-C it ends.
    let _ = s.set_write_timeout(Some(Duration::from_millis(100)));
    let _ = s.set_read_timeout(Some(Duration::from_millis(100)));
    let start_ns = sys::clock::now_ns(libc::CLOCK_MONOTONIC);
    let t0 = Instant::now();
    let over = || control.was_interrupted() || t0.elapsed() >= dur;
    let stalled = || t0.elapsed() >= dur + STALL_LIMIT;
    let mut n = 0u64;
    match cfg.mode {
        Mode::Stream => {
            let buf = vec![0x53u8; cfg.send_size];
            'send: while !over() {
                for _ in 0..16 {
                    match write_some(&mut s, &buf, &over, &stalled) {
                        Ok(k) => n += k as u64,
                        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => break 'send,
                        Err(e) => return Err(Error::Env(format!("send: {e}"))),
                    }
                }
            }
        }
        Mode::Rr => {
            let req = vec![0x51u8; cfg.request_size];
            let mut resp = vec![0u8; cfg.response_size];
            while !over() {
                let a = sys::clock::now_ns(libc::CLOCK_MONOTONIC);
                let mut off = 0;
                while off < req.len() {
                    off += write_some(&mut s, &req[off..], &|| false, &stalled)
                        .map_err(|e| Error::Env(format!("request: {e}")))?;
                }
                read_all(&mut s, &mut resp, &stalled)
                    .map_err(|e| Error::Env(format!("response: {e}")))?;
                rtt.record(sys::clock::now_ns(libc::CLOCK_MONOTONIC) - a);
                n += 1;
            }
        }
    }
    let end_ns = sys::clock::now_ns(libc::CLOCK_MONOTONIC);
    let _ = s.shutdown(std::net::Shutdown::Write);
    // Drain until the server closes, so its count is final (bounded like the rest).
    let mut sink = [0u8; 4096];
    let drain = Instant::now();
    loop {
        match s.read(&mut sink) {
            Ok(k) if k > 0 => {}
            Err(e) if is_timeout(&e) && drain.elapsed() < STALL_LIMIT => {}
            _ => break,
        }
    }
    Ok((n, start_ns, end_ns))
}

/// How long past its deadline a stalled peer may hold the run before it fails.
const STALL_LIMIT: Duration = Duration::from_secs(5);

fn is_timeout(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
    )
}

/// Writes some of `buf`, retrying on the socket timeout until something is written; gives up
/// with `Interrupted` when `stop()` says the run is over, with `TimedOut` when `stalled()`.
fn write_some(
    s: &mut TcpStream,
    buf: &[u8],
    stop: &dyn Fn() -> bool,
    stalled: &dyn Fn() -> bool,
) -> std::io::Result<usize> {
    loop {
        match s.write(buf) {
            Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
            Ok(k) => return Ok(k),
            Err(e) if is_timeout(&e) || e.kind() == std::io::ErrorKind::Interrupted => {
                if stop() {
                    return Err(std::io::ErrorKind::Interrupted.into());
                }
                if stalled() {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::TimedOut,
                        "the receiver stopped reading",
                    ));
                }
            }
            Err(e) => return Err(e),
        }
    }
}

/// Fills `buf`, retrying on the socket timeout until `stalled()`.
fn read_all(s: &mut TcpStream, buf: &mut [u8], stalled: &dyn Fn() -> bool) -> std::io::Result<()> {
    let mut off = 0;
    while off < buf.len() {
        match s.read(&mut buf[off..]) {
            Ok(0) => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            Ok(k) => off += k,
            Err(e) if is_timeout(&e) || e.kind() == std::io::ErrorKind::Interrupted => {
                if stalled() {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::TimedOut,
                        "the receiver stopped answering",
                    ));
                }
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// One run with the receiver in a thread or a forked process.
fn one_run(
    cfg: &TcpConfig,
    rtt: &mut Recorder,
    control: &Control,
    log: &latlab_core::rt::PlacementLog,
) -> Result<RunFigures> {
    let l = bind(cfg)?;
    let addr = l.local_addr().map_err(|e| Error::Env(e.to_string()))?;
    let (sent, start, end_c, received, end_s) = if cfg.processes {
        let p = sys::taskpair::Pipe::new().map_err(|e| Error::Env(e.to_string()))?;
        let c = cfg.clone();
        let never = std::sync::atomic::AtomicBool::new(false);
        // A forked receiver's placement failures stay in its own copy of the log.
        let child_log = log.clone();
        let w = p.wfd();
        let pid = sys::taskpair::fork_task(cfg.receiver_cpu, libc::SCHED_OTHER, 0, move || {
            let (n, t) = serve(&l, &c, &never, &child_log);
            let mut msg = [0u8; 16];
            msg[..8].copy_from_slice(&n.to_le_bytes());
            msg[8..].copy_from_slice(&t.to_le_bytes());
            sys::taskpair::write_all(w, &msg);
        })
        .map_err(|e| Error::Env(format!("fork: {e}")))?;
        // Only the receiver may hold the write end: if it dies, the read below sees EOF
        // instead of waiting for ever.
        let sys::taskpair::Pipe { r, w } = p;
        drop(w);
        let res = client(addr, cfg, rtt, control, log);
        if res.is_err() {
            // A client that failed leaves the receiver waiting: end it.
            sys::taskpair::kill_task(pid);
        }
        let mut msg = [0u8; 16];
        let got = sys::taskpair::read_full(std::os::fd::AsRawFd::as_raw_fd(&r), &mut msg);
        drop(r);
        if res.is_ok() {
            sys::taskpair::wait_task(pid);
        }
        let (sent, start, end_c) = res?;
        if got != 16 {
            return Err(Error::Env(
                "the receiver process died without reporting".into(),
            ));
        }
        let n = u64::from_le_bytes(msg[..8].try_into().unwrap_or_default());
        let t = u64::from_le_bytes(msg[8..].try_into().unwrap_or_default());
        (sent, start, end_c, n, t)
    } else {
        let c = cfg.clone();
        let give_up = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let g = give_up.clone();
        let server_log = log.clone();
        let server = std::thread::spawn(move || serve(&l, &c, &g, &server_log));
        let r = client(addr, cfg, rtt, control, log);
        if r.is_err() {
            give_up.store(true, std::sync::atomic::Ordering::Relaxed);
        }
        let (n, t) = server
            .join()
            .map_err(|_| Error::Env("receiver thread panicked".into()))?;
        let (sent, start, end_c) = r?;
        (sent, start, end_c, n, t)
    };
    let (seconds, figure) = match cfg.mode {
        Mode::Stream => {
            let s = (end_s.max(start) - start) as f64 / 1e9;
            (s, received as f64 * 8.0 / s.max(1e-9) / 1e6)
        }
        Mode::Rr => {
            let s = (end_c - start) as f64 / 1e9;
            (s, sent as f64 / s.max(1e-9))
        }
    };
    Ok(RunFigures {
        sent,
        received,
        seconds,
        figure,
    })
}

/// A finished `tcp` run.
pub(crate) struct TcpOutcome {
    /// The result model.
    pub(crate) run: Run,
    /// Per run.
    pub(crate) runs: Vec<RunFigures>,
}

/// Runs the measurement.
pub(crate) fn run(cfg: TcpConfig, ctx: &mut Ctx<'_>) -> Result<TcpOutcome> {
    let control = ctx.control().clone();
    let started = SystemTime::now();
    let t0 = Instant::now();
    let mut rtt = Recorder::new();
    let mut runs = Vec::new();
    for _ in 0..cfg.repeat {
        if control.was_interrupted() {
            break;
        }
        runs.push(one_run(&cfg, &mut rtt, &control, ctx.placement())?);
    }
    let mut figures = Recorder::new();
    for r in &runs {
        figures.record((r.figure * 1000.0).round() as u64);
    }
    let (name, unit) = match cfg.mode {
        Mode::Stream => ("throughput", "kbit/s"),
        Mode::Rr => ("transactions", "milli-transactions/s"),
    };
    let mut fig = Series::from_recorder(name.into(), &figures);
    fig.unit = unit.into();
    fig.extra = Some(serde_json::json!({ "runs": runs }));
    let mut series = vec![fig];
    if cfg.mode == Mode::Rr {
        series.push(Series::from_recorder("rtt".into(), &rtt));
    }
    // Zeros are not a measurement: say so in the result (a run too short for one send, or a
    // send size the socket could not move in the time).
    let mut warnings = Vec::new();
    let empty = runs.iter().filter(|r| r.received == 0).count();
    if empty > 0 {
        warnings.push(format!(
            "{empty} of {} run(s) moved no data ({} of {} bytes each in {:.3} s): their figure \
             is 0; run longer or with a smaller send size",
            runs.len(),
            if cfg.mode == Mode::Stream {
                "sends"
            } else {
                "requests"
            },
            if cfg.mode == Mode::Stream {
                cfg.send_size
            } else {
                cfg.request_size
            },
            cfg.duration_ns as f64 / 1e9
        ));
    }
    ctx.warnings().extend(warnings);
    let run = Run {
        interrupted: control.was_interrupted(),
        series,
        duration_s: t0.elapsed().as_secs_f64(),
        ..ctx.run_at(started, serde_json::to_value(&cfg).unwrap_or_default())
    };
    Ok(TcpOutcome { run, runs })
}

/// One figure per line (for `latlab compare` / ministat).
pub(crate) fn figures(o: &TcpOutcome) -> String {
    o.runs
        .iter()
        .map(|r| format!("{:.2}\n", r.figure))
        .collect()
}

/// The human report.
pub(crate) fn render(o: &TcpOutcome, cfg: &TcpConfig, unit: DisplayUnit) -> String {
    let what = match cfg.mode {
        Mode::Stream => "10^6 bit/s",
        Mode::Rr => "transactions/s",
    };
    let mut s = format!(
        "latlab tcp {}  {}  {} run(s) x {:.1} s  {}  run {}{}\n",
        match cfg.mode {
            Mode::Stream => "stream",
            Mode::Rr => "rr",
        },
        cfg.address,
        o.runs.len(),
        cfg.duration_ns as f64 / 1e9,
        if cfg.processes {
            "processes"
        } else {
            "threads"
        },
        o.run.id,
        if o.run.interrupted {
            "  (interrupted)"
        } else {
            ""
        }
    );
    let rows: Vec<Vec<String>> = o
        .runs
        .iter()
        .enumerate()
        .map(|(i, r)| {
            vec![
                (i + 1).to_string(),
                format!("{:.2}", r.figure),
                r.sent.to_string(),
                r.received.to_string(),
                format!("{:.3}", r.seconds),
            ]
        })
        .collect();
    let (sent, recv) = match cfg.mode {
        Mode::Stream => ("bytes sent", "bytes received"),
        Mode::Rr => ("transactions", "answered"),
    };
    s.push_str(&columns::render(
        &["run", what, sent, recv, "seconds"],
        &rows,
    ));
    if cfg.mode == Mode::Rr {
        if let Some(r) = o.run.series.get(1) {
            let m = &r.summary;
            let [p50, _, p99, p999, _] = m
                .percentiles
                .supported(m.count)
                .map(|v| v.map_or("-".to_string(), |v| unit.fmt_ns(v as f64)));
            s.push_str(&format!(
                "round trip ({unit}): min {} p50 {p50} p99 {p99} p99.9 {p999} max {}\n",
                unit.fmt_ns(m.min_ns as f64),
                unit.fmt_ns(m.max_ns as f64)
            ));
        }
    }
    for w in &o.run.warnings {
        s.push_str(&format!("warning: {w}\n"));
    }
    s
}

impl crate::driver::Measurement for TcpConfig {
    type Outcome = TcpOutcome;
    const KIND: &'static str = "tcp";
    /// One figure per repeat (throughput or transaction rate), higher is better: a plan
    /// compares the repeats' figures, and pages draw no latency distributions.
    const FACTS: latlab_core::result::kind::Facts = latlab_core::result::kind::Facts {
        higher_is_better: true,
        default_metric: "latency",
        distributions: false,
        ..latlab_core::result::kind::Facts::LATENCY
    };

    fn planned(&self) -> Option<std::time::Duration> {
        Some(std::time::Duration::from_nanos(
            self.duration_ns.saturating_mul(self.repeat as u64),
        ))
    }

    fn measured_cpus(&self) -> Option<latlab_core::config::CpuSet> {
        let cpus: Vec<usize> = self
            .sender_cpu
            .into_iter()
            .chain(self.receiver_cpu)
            .collect();
        (!cpus.is_empty()).then(|| latlab_core::config::CpuSet::from_cpus(cpus))
    }

    fn footprint(&self) -> crate::driver::Footprint {
        crate::driver::Footprint::default()
    }

    fn measure(&mut self, ctx: &mut Ctx<'_>) -> Result<TcpOutcome> {
        run(self.clone(), ctx)
    }

    fn result(o: &mut TcpOutcome) -> &mut Run {
        &mut o.run
    }

    fn render(&self, o: &TcpOutcome) -> crate::driver::Text {
        let report = render(o, self, self.unit);
        crate::driver::Text {
            report,
            figures: (self.repeat > 1).then(|| figures(o)),
            loads_shown: false,
        }
    }
}
