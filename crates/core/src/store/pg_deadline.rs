//! A time limit on every PostgreSQL round trip: the driver has none past the TCP connect, so
//! a server that stops answering (stopped, wedged, a port that accepts and says nothing) held
//! latlab forever, a finished run unsaved. Past the limit the connection is shut down under
//! the waiting call, which then fails like any lost connection (and the run is kept in a file).

use crate::error::{Error, Result};
use std::os::fd::RawFd;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// The limit when `$LATLAB_STORE_TIMEOUT` does not set one.
pub(crate) const DEFAULT: Duration = Duration::from_secs(60);

/// The limit: `$LATLAB_STORE_TIMEOUT` (a time, `90`, `90s`, `2m`; a bare number is seconds)
/// when set, else [`DEFAULT`]; between 0.1 s and a day.
pub(crate) fn limit() -> Result<Duration> {
    let bad = |v: &str, why: &str| {
        Error::Usage(format!(
            "LATLAB_STORE_TIMEOUT {v:?}: {why} (a time from 0.1 s to 1 day: 90, 90s, 2m)"
        ))
    };
    match std::env::var("LATLAB_STORE_TIMEOUT") {
        Err(std::env::VarError::NotPresent) => Ok(DEFAULT),
        Ok(v) if v.trim().is_empty() => Ok(DEFAULT),
        Ok(v) => {
            let ns =
                crate::config::units::parse_time_ns(&v, crate::config::units::BareUnit::Seconds)
                    .map_err(|why| bad(&v, &why))?;
            let d = Duration::from_nanos(ns);
            if d < Duration::from_millis(100) || d > Duration::from_secs(86_400) {
                return Err(bad(&v, "out of range"));
            }
            Ok(d)
        }
        Err(_) => Err(Error::Usage(
            "LATLAB_STORE_TIMEOUT: not valid UTF-8 (a time: 90, 90s, 2m)".into(),
        )),
    }
}

/// Connects on a helper thread and waits at most `limit` for the server to take the
/// connection (it may accept it and never answer). Returns the client and its socket, when
/// it can be told from the process's other sockets (then its round trips can be bounded).
pub(crate) fn connect(
    cfg: &postgres::Config,
    limit: Duration,
) -> std::result::Result<(postgres::Client, Option<RawFd>), String> {
    let before = connected_sockets();
    let (tx, rx) = std::sync::mpsc::channel();
    let cfg = cfg.clone();
    std::thread::Builder::new()
        .name("latlab-pg-connect".into())
        .stack_size(crate::sys::mem::HELPER_STACK)
        .spawn(move || {
            let _ = tx.send(cfg.connect(postgres::NoTls));
        })
        .map_err(|e| format!("cannot start a thread to connect: {e}"))?;
    match rx.recv_timeout(limit) {
        Ok(Ok(client)) => {
            let new: Vec<RawFd> = connected_sockets()
                .into_iter()
                .filter(|fd| !before.contains(fd))
                .collect();
            Ok((client, (new.len() == 1).then(|| new[0])))
        }
        Ok(Err(e)) => Err(described(&e)),
        // The thread stays blocked until the process ends; nothing else waits on it.
        Err(_) => Err(format!(
            "no answer in {} (LATLAB_STORE_TIMEOUT sets the limit)",
            shown(limit)
        )),
    }
}

/// A driver error with the server's own words: the driver says only "db error" for what the
/// server refused (a database that does not exist, a role refused) and "error connecting to
/// server" for what the socket said.
pub(crate) fn described(e: &postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        return format!("{} ({})", db.message(), db.code().code());
    }
    match std::error::Error::source(e) {
        Some(cause) if !e.to_string().contains(&cause.to_string()) => format!("{e}: {cause}"),
        _ => e.to_string(),
    }
}

/// "60 s", "2.5 s".
pub(crate) fn shown(d: Duration) -> String {
    format!("{} s", (d.as_secs_f64() * 10.0).round() / 10.0)
}

/// The process's connected sockets (those with a peer), by descriptor.
fn connected_sockets() -> Vec<RawFd> {
    let Ok(dir) = std::fs::read_dir("/proc/self/fd") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<RawFd>().ok())
        .filter(|&fd| crate::sys::net::is_connected_socket(fd))
        .collect()
}

#[derive(Default)]
struct State {
    /// When the round trip under way must have ended.
    due: Option<Instant>,
    /// The limit passed once: the connection was shut down.
    fired: bool,
    /// The store is gone: the watching thread ends.
    closed: bool,
}

type Shared = Arc<(Mutex<State>, Condvar)>;

/// Watches one connection's round trips (see [`Watch::guard`]).
pub(crate) struct Watch {
    shared: Shared,
    limit: Duration,
}

impl Watch {
    /// Watches the socket `fd` (None: nothing can be bounded; guards then only mark time).
    /// The thread sleeps until a round trip starts and wakes only for its end or its limit.
    pub(crate) fn start(fd: Option<RawFd>, limit: Duration) -> Watch {
        let shared: Shared = Arc::default();
        if let Some(fd) = fd {
            let s = shared.clone();
            let _ = std::thread::Builder::new()
                .name("latlab-pg-watch".into())
                .stack_size(crate::sys::mem::HELPER_STACK)
                .spawn(move || watch(&s, fd));
        }
        Watch { shared, limit }
    }

    /// Marks a round trip: until the guard is dropped, the connection is shut down if the
    /// limit passes.
    pub(crate) fn guard(&self) -> Guard {
        if let Ok(mut st) = self.shared.0.lock() {
            st.due = Some(Instant::now() + self.limit);
        }
        self.shared.1.notify_all();
        Guard(self.shared.clone())
    }

    /// Whether a round trip outlived the limit (the connection is then closed).
    pub(crate) fn fired(&self) -> bool {
        self.shared.0.lock().map(|s| s.fired).unwrap_or(false)
    }

    /// What an error of a connection the limit closed says instead of the driver's words.
    pub(crate) fn why(&self) -> String {
        format!(
            "PostgreSQL did not answer in {} (LATLAB_STORE_TIMEOUT sets the limit); the connection was closed",
            shown(self.limit)
        )
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        if let Ok(mut st) = self.shared.0.lock() {
            st.closed = true;
        }
        self.shared.1.notify_all();
    }
}

/// A round trip under way (see [`Watch::guard`]).
pub(crate) struct Guard(Shared);

impl Drop for Guard {
    fn drop(&mut self) {
        if let Ok(mut st) = self.0 .0.lock() {
            st.due = None;
        }
        self.0 .1.notify_all();
    }
}

fn watch(s: &Shared, fd: RawFd) {
    let (lock, cv) = (&s.0, &s.1);
    let Ok(mut st) = lock.lock() else { return };
    loop {
        if st.closed {
            return;
        }
        match st.due {
            None => st = cv.wait(st).unwrap_or_else(|e| e.into_inner()),
            Some(due) => {
                let now = Instant::now();
                if now >= due {
                    st.fired = true;
                    st.due = None;
                    // `fd` is the connection's socket, open while the store is (the store ends
                    // this thread before its client closes it).
                    crate::sys::net::shutdown(fd);
                    continue;
                }
                st = cv
                    .wait_timeout(st, due - now)
                    .map(|(g, _)| g)
                    .unwrap_or_else(|e| e.into_inner().0);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_round_trip_past_its_limit_shuts_the_socket_down() {
        let (a, mut b) = std::os::unix::net::UnixStream::pair().unwrap();
        use std::os::fd::AsRawFd;
        let w = Watch::start(Some(a.as_raw_fd()), Duration::from_millis(50));
        {
            let _g = w.guard();
            // The read returns (end of file) once the watch shuts the socket down.
            let mut buf = [0u8; 1];
            assert_eq!(std::io::Read::read(&mut b, &mut buf).unwrap(), 0);
        }
        assert!(w.fired());
        assert!(w.why().contains("did not answer in 0.1 s"), "{}", w.why());
    }

    #[test]
    fn a_round_trip_within_its_limit_leaves_the_socket_alone() {
        let (a, mut b) = std::os::unix::net::UnixStream::pair().unwrap();
        use std::os::fd::AsRawFd;
        let w = Watch::start(Some(a.as_raw_fd()), Duration::from_millis(200));
        drop(w.guard());
        std::thread::sleep(Duration::from_millis(400));
        assert!(!w.fired());
        std::io::Write::write_all(&mut &a, b"x").unwrap();
        let mut buf = [0u8; 1];
        assert_eq!(std::io::Read::read(&mut b, &mut buf).unwrap(), 1);
    }
}
