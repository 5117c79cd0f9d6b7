//! `latlab monitor --web-config`: TLS and basic authentication the Prometheus way, with test
//! certificates made at test time (openssl CLI), curl as a client and a private Prometheus that
//! scrapes over TLS with credentials; a bad web config is refused at start naming the key.

use crate::monitor::{free_port, get, Monitor, Prometheus};
use crate::util::{expect_exit, latlab, run_tool, skip, Dir};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A CA and a server certificate for 127.0.0.1 signed by it, in `dir`.
pub(crate) fn make_certs(dir: &Path) {
    let run = |line: &str, last: &[&str]| {
        run_tool(
            Command::new("openssl")
                .args(line.split_whitespace())
                .args(last)
                .current_dir(dir),
        );
    };
    let key = "-newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes";
    run(
        &format!("req -x509 {key} -keyout ca.key -out ca.pem -days 2 -subj"),
        &["/CN=latlab test CA"],
    );
    run(
        &format!("req {key} -keyout server.key -out server.csr -subj /CN=127.0.0.1"),
        &[],
    );
    std::fs::write(
        dir.join("ext.cnf"),
        "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n",
    )
    .unwrap();
    run(
        "x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.pem \
         -days 2 -extfile ext.cnf",
        &[],
    );
}

/// curl's HTTP status for `url` with these extra arguments ("000" when it failed to connect).
pub(crate) fn curl(url: &str, extra: &[&str]) -> String {
    let out = Command::new("curl")
        .args([
            "-s",
            "-o",
            "/dev/null",
            "-w",
            "%{http_code}",
            "--max-time",
            "10",
        ])
        .args(extra)
        .arg(url)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn tls_and_basic_auth_guard_the_endpoint_and_prometheus_scrapes_through_them() {
    for tool in ["openssl", "curl"] {
        if !latlab_core::sys::process::command_exists(tool) {
            return skip("monitor tls", &format!("{tool} is not installed"));
        }
    }
    let dir = Dir::new();
    make_certs(dir.path());
    let hash = bcrypt::hash("s3cret pass", 5).unwrap();
    let web = dir.write(
        "web.yml",
        format!(
            "tls_server_config:\n  cert_file: server.pem\n  key_file: server.key\nbasic_auth_users:\n  prom: '{hash}'\n"
        ),
    );
    let mon = Monitor::start(&[
        "-a",
        "0",
        "-i",
        "1ms",
        "--no-store",
        "-D",
        "120s",
        "--window",
        "1s",
        "--web-config",
        web.to_str().unwrap(),
    ]);
    let url = format!("https://{}/metrics", mon.addr);
    let ca = dir.join("ca.pem");
    let ca = ca.to_str().unwrap();
    assert_eq!(curl(&url, &["--cacert", ca]), "401");
    assert_eq!(curl(&url, &["--cacert", ca, "-u", "prom:wrong"]), "401");
    assert_eq!(
        curl(&url, &["--cacert", ca, "-u", "nobody:s3cret pass"]),
        "401"
    );
    assert_eq!(
        curl(&url, &["--cacert", ca, "-u", "prom:s3cret pass"]),
        "200"
    );
    // Plain HTTP to the TLS port fails cleanly (no answer), and the monitor goes on.
    assert!(get(mon.addr, "/metrics").is_none_or(|(code, _)| code != 200));
    assert_eq!(
        curl(&url, &["--cacert", ca, "-u", "prom:s3cret pass"]),
        "200"
    );

    if latlab_core::sys::process::command_exists("prometheus") {
        let pass = dir.write("pass", "s3cret pass");
        let prom = Prometheus::start(
            "1s",
            &format!(
                "    scheme: https\n    tls_config:\n      ca_file: {ca}\n    basic_auth:\n      username: prom\n      password_file: {}\n    static_configs:\n      - targets: ['{}']\n",
                pass.display(),
                mon.addr
            ),
        );
        let body = prom.wait_for("latlab_window_end_timestamp_seconds", "\"job\":\"latlab\"");
        let up = prom.query("up");
        drop(prom);
        assert!(body.contains("\"job\":\"latlab\""), "{body}");
        assert!(up.contains("\"1\"]"), "Prometheus's scrape is not up: {up}");
    } else {
        skip("monitor tls: prometheus", "prometheus is not installed");
    }
    // The monitor kept measuring throughout.
    let out = mon.terminate();
    out.assert_ok();
    assert!(out.stdout.contains("max"), "{out}");
}

#[test]
fn a_bad_web_config_is_refused_at_start_naming_the_key() {
    let dir = Dir::new();
    let web = dir.write("web.yml", "basic_auth_users:\n  prom: not-a-hash\n");
    expect_exit(
        &["monitor"],
        &["--web-config", web.to_str().unwrap(), "-D", "1s"],
        2,
        "basic_auth_users.prom",
    );
    std::fs::write(
        &web,
        "tls_server_config:\n  cert_file: missing.pem\n  key_file: k\n",
    )
    .unwrap();
    expect_exit(
        &["monitor"],
        &["--web-config", web.to_str().unwrap(), "-D", "1s"],
        2,
        "tls_server_config.cert_file",
    );
}

#[test]
fn a_wide_listen_without_tls_and_auth_is_warned_at_start_and_in_status() {
    let port = free_port();
    let child = latlab()
        .words("monitor -a 0 -p 0 --no-store -D 3s")
        .arg(format!("--listen=0.0.0.0:{port}"))
        .spawn_with(Stdio::null(), Stdio::piped());
    let addr: std::net::SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let t0 = Instant::now();
    let mut status = None;
    while status.is_none() && t0.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(200));
        status = get(addr, "/status");
    }
    let out = child.finish();
    let (_, status) = status.expect("no /status");
    assert!(status.contains("warning: --listen 0.0.0.0"), "{status}");
    assert!(out.stderr.contains("warning: --listen 0.0.0.0"), "{out}");
}
