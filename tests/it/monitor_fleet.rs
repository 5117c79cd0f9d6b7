//! `latlab report --fleet` end to end: three monitors, one after another (one measurement at a
//! time), each under its own host name (a private UTS namespace) and monitor id, store their
//! snapshots in one PostgreSQL store, one of them while a SCHED_FIFO thread stalls its CPU; the
//! fleet page names the three hosts, ranks the stalled one first and renders in headless
//! Chromium. Bad input is exit 2 naming the flag.

use crate::report::{browse, chromium};
use crate::util::{expect_exit, latlab, pg_store, rt_test, skip, stall, Dir};
use std::os::unix::process::CommandExt;
use std::process::Command;
use std::time::Duration;

/// Makes `cmd` run in a UTS namespace of its own named `host` (as if on another machine).
fn as_host(cmd: &mut Command, host: &'static str) {
    // SAFETY: between fork and exec the closure makes two plain system calls with valid
    // arguments and allocates nothing.
    unsafe {
        cmd.pre_exec(move || {
            if libc::unshare(libc::CLONE_NEWUTS) != 0
                || libc::sethostname(host.as_ptr().cast(), host.len()) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// Whether this process may give a child its own host name.
fn uts_namespaces() -> bool {
    let mut c = Command::new("true");
    as_host(&mut c, "latlab-probe");
    c.status().is_ok_and(|s| s.success())
}

/// The cells of the `n`th data row of the table with class `class`, as text.
fn table_row(html: &str, class: &str, n: usize) -> Vec<String> {
    let table = html
        .split(&format!("<table class=\"{class}\">"))
        .nth(1)
        .unwrap_or_else(|| panic!("no table {class}"));
    let table = table.split("</table>").next().unwrap();
    let row = table
        .split("<tr>")
        .filter(|r| r.contains("<td"))
        .nth(n)
        .unwrap_or_else(|| panic!("table {class} has no row {n}"));
    row.split("<td")
        .skip(1)
        .map(|c| {
            let c = c.split_once('>').map_or("", |x| x.1);
            c.split("</td>").next().unwrap_or("").to_string()
        })
        .collect()
}

#[test]
fn three_monitors_in_one_postgresql_make_one_fleet_page() {
    let name = "three_monitors_in_one_postgresql_make_one_fleet_page";
    let Some(pg) = pg_store() else { return };
    let Some(_x) = rt_test() else { return };
    // Each host's own name where namespaces allow it; else one host with three monitor ids
    // (the page then names each `host/monitor`).
    let uts = uts_namespaces();
    if !uts {
        eprintln!("{name}: no UTS namespaces here; three monitors on one host instead");
    }
    // Only this test's snapshots: the shared store holds other tests' monitors too.
    let run_tag = format!(
        "fleet-test={}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis()
    );
    let stalled = "fleet-b";
    let stall_for = Duration::from_millis(80);
    for host in ["fleet-a", "fleet-b", "fleet-c"] {
        let mut c = latlab();
        c.words("monitor -a 1 -p 50 -i 1ms --snapshot-every 1s -D 4s --listen 127.0.0.1:0")
            .args(["--monitor-id", host, "--store", &pg, "--tag", &run_tag]);
        if uts {
            as_host(c.command(), host);
        }
        let child = c.spawn();
        if host == stalled {
            stall(child.id(), "latlab-cpu1", 1)
                .busy(stall_for)
                .repeat(2, Duration::from_secs(1))
                .run_now();
        }
        child.finish().assert_ok();
    }
    let dir = Dir::new();
    let page = dir.join("fleet.html");
    let filter = format!("tag:{run_tag}");
    let out = latlab()
        .args([
            "report", "--fleet", "--since", "1h", &filter, "--store", &pg, "-o",
        ])
        .arg(&page)
        .assert_ok();
    assert!(out.stderr.contains("fleet report of 3 host(s)"), "{out}");
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        html.contains("latlab fleet report: 3 host(s)"),
        "{html:.400}"
    );
    // The ranking: three rows, the stalled host first with at least the stall as its worst.
    let label = |h: &str| {
        if uts {
            h.to_string()
        } else {
            format!("{}/{h}", latlab_core::result::Environment::hostname())
        }
    };
    let first = table_row(&html, "ranking", 0);
    assert_eq!(first[0], "1", "{first:?}");
    assert_eq!(first[1], label(stalled), "ranked first: {first:?}");
    assert_eq!(first[2], stalled, "{first:?}");
    let worst_us: f64 = first[8].parse().unwrap_or_else(|_| panic!("{first:?}"));
    assert!(
        worst_us >= 0.95 * stall_for.as_micros() as f64,
        "worst window {worst_us} µs < the injected stall {stall_for:?}: {first:?}"
    );
    let mut named = Vec::new();
    for n in 0..3 {
        let r = table_row(&html, "ranking", n);
        let snapshots: usize = r[4].parse().unwrap();
        assert!(snapshots >= 3, "{}: {snapshots} snapshot(s): {r:?}", r[1]);
        named.push(r[1].clone());
    }
    named.sort();
    assert_eq!(named, ["fleet-a", "fleet-b", "fleet-c"].map(label));
    assert_eq!(
        html.matches("<tr>").count(),
        3 * (1 + 3),
        "three tables (ranking, changes, causes) of three hosts each"
    );
    // Minutes of data: no host has a previous week, so none gets a verdict.
    assert!(
        html.contains("Cannot decide for any host"),
        "{}",
        html.split("id=\"changes\"")
            .nth(1)
            .unwrap_or("")
            .split("</p>")
            .next()
            .unwrap()
    );
    // One chart of every host's max, one per host.
    assert_eq!(html.matches("<svg").count(), 4);

    let Some(browser) = chromium() else {
        return skip(
            name,
            "no chromium (scripts/test.sh installs Debian's chromium)",
        );
    };
    let shots = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("report-screenshots");
    std::fs::create_dir_all(&shots).unwrap();
    let png = shots.join("fleet.png");
    let (dom, log) = browse(&browser, &page, &png);
    assert!(
        dom.contains("<h1>latlab fleet report"),
        "blank page? {dom:.300}"
    );
    assert_eq!(dom.matches("<svg").count(), 4, "charts in the DOM");
    for h in ["fleet-a", "fleet-b", "fleet-c"] {
        assert!(dom.contains(&label(h)), "{h} not on the rendered page");
    }
    assert!(
        !log.lines()
            .any(|l| l.contains(":CONSOLE(") || l.contains("Uncaught")),
        "console errors:\n{log}"
    );
    let size = std::fs::metadata(&png).map_or(0, |m| m.len());
    assert!(
        size > 20_000,
        "screenshot {} is {size} bytes",
        png.display()
    );
}

#[test]
fn report_fleet_refuses_bad_input_naming_the_flag() {
    let dir = Dir::new();
    let out = dir.join("f.html");
    let o = out.to_str().unwrap();
    expect_exit(
        &["report", "--fleet"],
        &["--since", "lately", "-o", o],
        2,
        "--since",
    );
    expect_exit(&["report", "--fleet"], &["run:abc", "-o", o], 2, "--fleet");
    expect_exit(
        &["report", "--fleet"],
        &["tag:novalue", "-o", o],
        2,
        "--fleet",
    );
    expect_exit(
        &["report"],
        &["--since", "1d", "run:abc", "-o", o],
        2,
        "--fleet",
    );
    expect_exit(
        &["report", "--fleet"],
        &["--experiment", "E", "-o", o],
        2,
        "--fleet",
    );
    // Nothing matches: a clear message, not an empty page.
    expect_exit(
        &["report", "--fleet"],
        &["tag:no-such=tag", "-o", o],
        2,
        "--fleet: no monitor snapshots",
    );
    assert!(!out.exists(), "no page for an empty fleet");
}
