//! `latlab monitor` end to end: the /metrics page (parsed, and checked by promtool), the fixed
//! windows, a stall on one CPU, SIGTERM and bad usage; and the helpers the other monitor test
//! files share (a running monitor, raw requests, page parsing). HTTP hostility is in
//! monitor_http.rs, the store in monitor_store.rs, Prometheus in monitor_prometheus.rs,
//! monitor_ha.rs and monitor_tls.rs.

use crate::util::{expect_exit, latlab, rt_test, skip, stall, Dir, Output, Running};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A running monitor, killed when dropped.
pub(crate) struct Monitor {
    pub(crate) child: Running,
    pub(crate) addr: SocketAddr,
    stderr: Arc<Mutex<String>>,
}

impl Monitor {
    /// Starts `latlab monitor` with the whitespace-separated words of `line`.
    pub(crate) fn start_words(line: &str) -> Monitor {
        Monitor::start(&line.split_whitespace().collect::<Vec<_>>())
    }

    /// Starts `latlab monitor ARGS --listen 127.0.0.1:0` and waits for the address it prints.
    pub(crate) fn start(args: &[&str]) -> Monitor {
        Monitor::start_with(args, &[])
    }

    /// [`Monitor::start`] with more variables in its environment.
    pub(crate) fn start_with(args: &[&str], env: &[(&str, &str)]) -> Monitor {
        let mut child = latlab()
            .envs(env.iter().copied())
            .arg("monitor")
            .args(args)
            .words("--listen 127.0.0.1:0")
            .spawn();
        let stderr = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        let (err, sink) = (child.child().stderr.take().unwrap(), stderr.clone());
        std::thread::spawn(move || {
            for line in BufReader::new(err).lines().map_while(Result::ok) {
                if let Some(a) = line
                    .strip_prefix("latlab monitor: serving http://")
                    .or_else(|| line.strip_prefix("latlab monitor: serving https://"))
                    .and_then(|r| r.strip_suffix("/metrics"))
                {
                    let _ = tx.send(a.to_string());
                }
                sink.lock().unwrap().push_str(&format!("{line}\n"));
            }
        });
        let addr = match rx.recv_timeout(Duration::from_secs(30)) {
            Ok(a) => a.parse().unwrap(),
            Err(_) => {
                child.kill();
                panic!("monitor never listened: {}", stderr.lock().unwrap());
            }
        };
        Monitor {
            child,
            addr,
            stderr,
        }
    }

    /// Sends SIGTERM and returns what it wrote, once it ended.
    pub(crate) fn terminate(self) -> Output {
        self.child.signal(libc::SIGTERM);
        let mut out = self.child.finish();
        std::thread::sleep(Duration::from_millis(100));
        out.stderr = self.stderr.lock().unwrap().clone();
        out
    }
}

/// Sends raw bytes and returns (status code, body); None when the server closed without one.
pub(crate) fn request(addr: SocketAddr, raw: &[u8]) -> Option<(u16, String)> {
    let mut s = TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
    s.write_all(raw).ok()?;
    let mut buf = Vec::new();
    let _ = s.read_to_end(&mut buf);
    let text = String::from_utf8_lossy(&buf).into_owned();
    let status = text.split(' ').nth(1)?.parse().ok()?;
    let body = text.split_once("\r\n\r\n").map(|x| x.1.to_string())?;
    Some((status, body))
}

pub(crate) fn get(addr: SocketAddr, path: &str) -> Option<(u16, String)> {
    request(
        addr,
        format!("GET {path} HTTP/1.0\r\nHost: t\r\n\r\n").as_bytes(),
    )
}

/// GET /metrics, retried while the server is busy (503) for up to `patience`.
pub(crate) fn scrape(addr: SocketAddr, patience: Duration) -> String {
    let t0 = Instant::now();
    loop {
        match get(addr, "/metrics") {
            Some((200, body)) => return body,
            other => assert!(
                t0.elapsed() < patience,
                "no /metrics within {patience:?}: {other:?}"
            ),
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Samples of a classic text page: `name{labels}` -> value.
pub(crate) fn parse(page: &str) -> BTreeMap<String, f64> {
    page.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| {
            let (k, v) = l.rsplit_once(' ').unwrap_or_else(|| panic!("bad line {l}"));
            (
                k.to_string(),
                v.parse().unwrap_or_else(|_| panic!("bad value {l}")),
            )
        })
        .collect()
}

pub(crate) fn value(m: &BTreeMap<String, f64>, key: &str) -> f64 {
    *m.get(key)
        .unwrap_or_else(|| panic!("no {key} in {:?}", m.keys().collect::<Vec<_>>()))
}

const LES: [&str; 15] = [
    "0.000005", "0.00001", "0.00002", "0.00005", "0.0001", "0.0002", "0.0005", "0.001", "0.002",
    "0.005", "0.01", "0.02", "0.05", "0.1", "+Inf",
];

/// Checks the histogram of `cpu` is consistent; returns its count.
pub(crate) fn histogram_count(m: &BTreeMap<String, f64>, cpu: usize) -> f64 {
    let mut prev = 0.0;
    for le in LES {
        let b = value(
            m,
            &format!("latlab_latency_seconds_bucket{{le=\"{le}\",cpu=\"{cpu}\"}}"),
        );
        assert!(b >= prev, "cpu {cpu}: bucket le={le} {b} < {prev}");
        prev = b;
    }
    let count = value(m, &format!("latlab_latency_seconds_count{{cpu=\"{cpu}\"}}"));
    assert_eq!(prev, count, "cpu {cpu}: +Inf bucket != count");
    count
}

#[test]
fn metrics_page_parses_with_consistent_histograms_and_passes_promtool() {
    let mon = Monitor::start_words("-a 0 -i 1ms --no-store --threshold 1us -D 60s");
    // A hundred samples in (1.5 s at 1 ms on a quiet machine; waited for, not assumed).
    let t0 = Instant::now();
    let (page, m, count) = loop {
        let page = scrape(mon.addr, Duration::from_secs(10));
        let m = parse(&page);
        let count = histogram_count(&m, 0);
        if count >= 100.0 || t0.elapsed() > Duration::from_secs(60) {
            break (page, m, count);
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(count >= 100.0, "{count} samples after a minute");
    assert!(value(&m, "latlab_samples_total{cpu=\"0\"}") >= count);
    assert!(value(&m, "latlab_latency_max_seconds{cpu=\"0\"}") > 0.0);
    assert!(value(&m, "latlab_latency_seconds_sum{cpu=\"0\"}") > 0.0);
    // Every wake-up is later than 1 µs.
    assert!(value(&m, "latlab_threshold_exceeded_total{cpu=\"0\"}") >= count);
    assert_eq!(value(&m, "latlab_interval_seconds"), 0.001);
    assert!(page.contains("latlab_monitor_info{"), "{page}");
    assert!(page.contains("kernel=\""), "{page}");
    // The max since start bounds the last window's.
    // Still counting: a later scrape shows more (the page is refreshed as the monitor drains
    // its rings, so two scrapes a moment apart may show the same count: wait, bounded).
    let t1 = Instant::now();
    let again = loop {
        let again = parse(&scrape(mon.addr, Duration::from_secs(10)));
        if histogram_count(&again, 0) > count || t1.elapsed() > Duration::from_secs(30) {
            break again;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(histogram_count(&again, 0) > count, "samples stopped");
    assert!(
        value(&again, "latlab_latency_max_seconds{cpu=\"0\"}")
            >= value(&again, "latlab_latency_window_max_seconds{cpu=\"0\"}")
    );
    // OpenMetrics for those who ask for it.
    let (code, om) = request(
        mon.addr,
        b"GET /metrics HTTP/1.1\r\nAccept: application/openmetrics-text; version=1.0.0\r\n\r\n",
    )
    .unwrap();
    assert_eq!(code, 200);
    assert!(om.ends_with("# EOF\n"), "{om}");
    assert!(om.contains("# TYPE latlab_samples counter"), "{om}");

    promtool_check_metrics(&page);
    // SIGHUP prints the status and the monitor goes on.
    mon.child.signal(libc::SIGHUP);
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(get(mon.addr, "/metrics").unwrap().0, 200);
    let out = mon.terminate();
    out.assert_ok();
    assert!(
        out.stderr.contains("snapshots stored") && out.stderr.contains("cpu 0:"),
        "{out}"
    );
    assert!(
        out.stdout.contains("cpu") && out.stdout.contains("max"),
        "{out}"
    );
}

#[test]
fn every_scrape_of_a_window_reads_the_same_figures() {
    let mon = Monitor::start_words("-a 0 -i 1ms --no-store --threshold 1us --window 1s -D 60s");
    let key_max = "latlab_latency_window_max_seconds{cpu=\"0\"}";
    let key_n = "latlab_window_threshold_exceeded{cpu=\"0\"}";
    let key_end = "latlab_window_end_timestamp_seconds";
    // (window end, max, count over threshold) of every scrape, many scrapes per window, for
    // 4.5 s and until two windows have ended (a minute at most).
    let mut seen: Vec<(f64, f64, f64)> = Vec::new();
    let t0 = Instant::now();
    let ended = |seen: &[(f64, f64, f64)]| {
        let ends: std::collections::BTreeSet<u64> = seen.iter().map(|s| s.0 as u64).collect();
        ends.len()
    };
    while t0.elapsed() < Duration::from_millis(4500)
        || (ended(&seen) < 2 && t0.elapsed() < Duration::from_secs(60))
    {
        let m = parse(&scrape(mon.addr, Duration::from_secs(10)));
        assert_eq!(value(&m, "latlab_window_seconds"), 1.0);
        let end = value(&m, key_end);
        if end > 0.0 {
            assert_eq!(end.fract(), 0.0, "window end {end} is not on a second");
            assert!(value(&m, "latlab_latency_max_seconds{cpu=\"0\"}") >= value(&m, key_max));
            seen.push((end, value(&m, key_max), value(&m, key_n)));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let windows: std::collections::BTreeSet<u64> = seen.iter().map(|s| s.0 as u64).collect();
    assert!(windows.len() >= 2, "windows seen: {windows:?}");
    for w in &windows {
        let same: Vec<_> = seen.iter().filter(|s| s.0 as u64 == *w).collect();
        // A GET resets nothing: every read of one window is the same.
        assert!(
            same.iter().all(|s| s.1 == same[0].1 && s.2 == same[0].2),
            "window {w} read differently: {same:?}"
        );
    }
    // A whole 1 s window at 1 ms has hundreds of wake-ups, all later than 1 µs.
    let full = seen
        .iter()
        .filter(|s| s.0 as u64 != *windows.first().unwrap());
    assert!(full.clone().all(|s| s.2 >= 100.0 && s.1 > 0.0), "{seen:?}");
    drop(mon);
}

/// A stall injected on CPU 1 shows in CPU 1's own series: its max, its buckets above 50 ms,
/// its overruns. CPU 0's series is there and consistent, but how quiet it stays is the shared
/// host's business (another tenant can stall CPU 0 too), so nothing is asserted of its
/// latencies.
#[test]
fn a_stall_on_one_cpu_shows_in_its_own_max_and_buckets() {
    let Some(_x) = rt_test() else { return };
    let stall_for = Duration::from_millis(60);
    let mon = Monitor::start_words("-a 0,1 -p 50 -i 1ms --no-store -D 60s");
    stall(mon.child.id(), "latlab-cpu1", 1)
        .after(Duration::from_millis(300))
        .busy(stall_for)
        .repeat(2, Duration::from_secs(1))
        .run_now();
    let m = parse(&scrape(mon.addr, Duration::from_secs(10)));
    let max1 = value(&m, "latlab_latency_max_seconds{cpu=\"1\"}");
    assert!(
        max1 >= 0.059,
        "CPU 1 max {max1} s < injected stall {stall_for:?}"
    );
    let n1 = histogram_count(&m, 1);
    let le50ms = value(&m, "latlab_latency_seconds_bucket{le=\"0.05\",cpu=\"1\"}");
    assert!(n1 - le50ms >= 1.0, "no CPU 1 sample above 50 ms");
    assert!(value(&m, "latlab_overruns_total{cpu=\"1\"}") >= 1.0);
    assert!(histogram_count(&m, 0) > 0.0, "CPU 0 measured nothing");
    drop(mon);
}

#[test]
fn bad_monitor_usage_names_the_flag() {
    expect_exit(&["monitor"], &["--listen", "nowhere"], 2, "--listen");
    expect_exit(
        &["monitor"],
        &["--snapshot-every", "0"],
        2,
        "--snapshot-every",
    );
    expect_exit(&["monitor"], &["--monitor-id", "a b"], 2, "--monitor-id");
    expect_exit(&["monitor"], &["-i", "1ns"], 2, "--interval");
    expect_exit(&["monitor"], &["-a", "9999"], 2, "--affinity");
    expect_exit(&["monitor"], &["-p", "120"], 2, "--priority");
    expect_exit(&["monitor"], &["--window", "500ms"], 2, "--window");
}

/// `promtool check metrics` passes on `page` (a skip without promtool).
pub(crate) fn promtool_check_metrics(page: &str) {
    if !latlab_core::sys::process::command_exists("promtool") {
        return skip(
            "promtool check metrics",
            "promtool is not installed (Debian package prometheus)",
        );
    }
    let mut p = std::process::Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    p.stdin.take().unwrap().write_all(page.as_bytes()).unwrap();
    let out = p.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "promtool check metrics: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A free loopback port (bound, read back, released).
/// `s` percent-encoded for a query string (unreserved characters kept).
pub(crate) fn url_encoded(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

pub(crate) fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A private Prometheus server (its data in a scratch directory), killed when dropped.
pub(crate) struct Prometheus {
    _child: Running,
    /// Its HTTP API.
    pub(crate) api: SocketAddr,
    _dir: Dir,
}

impl Prometheus {
    /// Starts Prometheus scraping every `every` with one job named latlab, `job` being the rest
    /// of that job's YAML (indented four spaces: `static_configs:` and what else it needs).
    pub(crate) fn start(every: &str, job: &str) -> Prometheus {
        Prometheus::start_with(every, job, &[])
    }

    /// [`Prometheus::start`] with feature flags (`--enable-feature=...`).
    pub(crate) fn start_with(every: &str, job: &str, features: &[&str]) -> Prometheus {
        let dir = Dir::new();
        let cfg = dir.write(
            "prometheus.yml",
            format!(
                "global:\n  scrape_interval: {every}\nscrape_configs:\n  - job_name: latlab\n{job}"
            ),
        );
        let api: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
        let child = std::process::Command::new("prometheus")
            .arg(format!("--config.file={}", cfg.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("tsdb").display()
            ))
            .arg(format!("--web.listen-address={api}"))
            .args(
                (!features.is_empty()).then(|| format!("--enable-feature={}", features.join(","))),
            )
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        Prometheus {
            _child: Running::new(child, "prometheus"),
            api,
            _dir: dir,
        }
    }

    /// Starts Prometheus scraping the plain-HTTP monitor at `target` every `every`.
    pub(crate) fn scraping(target: SocketAddr, every: &str) -> Prometheus {
        Prometheus::start(
            every,
            &format!("    static_configs:\n      - targets: ['{target}']\n"),
        )
    }

    /// The body of the API's answer to the instant query `q` ("" when it did not answer).
    pub(crate) fn query(&self, q: &str) -> String {
        self.api_get(&format!("/api/v1/query?query={}", url_encoded(q)))
    }

    /// The body of the API's answer to a GET of `path_and_query` ("" when it did not answer).
    pub(crate) fn api_get(&self, path_and_query: &str) -> String {
        get(self.api, path_and_query)
            .map(|(_, b)| b)
            .unwrap_or_default()
    }

    /// Polls `query(q)` (every half second, a minute at most) until its body contains `want`;
    /// returns the last body.
    pub(crate) fn wait_for(&self, q: &str, want: &str) -> String {
        let t0 = Instant::now();
        loop {
            let body = self.query(q);
            if body.contains(want) || t0.elapsed() > Duration::from_secs(60) {
                return body;
            }
            std::thread::sleep(Duration::from_millis(500));
        }
    }
}
