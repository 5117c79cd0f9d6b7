//! `latlab ipc`: every method times every message it sends (lossless), `-l` is exact on one
//! CPU and across two, `-D` bounds the run, and bad flags exit 2 naming themselves.

use crate::util::{latlab, read_json, rt_unavailable, skip};

const ALL: [&str; 8] = [
    "pmq",
    "posix-sem",
    "sysv-sem",
    "sigwait",
    "signal",
    "futex",
    "eventfd",
    "pipe",
];

#[test]
fn every_method_times_every_message() {
    if let Some(why) = rt_unavailable() {
        return skip("every_method_times_every_message", &why);
    }
    let dir = tempfile::tempdir().unwrap();
    for cpus in ["0", "0,1"] {
        let json = dir.path().join(format!("ipc{cpus}.json"));
        let out = latlab()
            .args([
                "ipc",
                "--method",
                "all",
                "-a",
                cpus,
                "-l",
                "257",
                "-i",
                "100us",
                "--no-store",
                "--json",
            ])
            .arg(&json)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{cpus}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let run = read_json(&json);
        assert_eq!(run["kind"], "ipc");
        let series = run["series"].as_array().unwrap();
        let names: Vec<&str> = series.iter().map(|s| s["name"].as_str().unwrap()).collect();
        assert_eq!(names, ALL);
        for s in series {
            assert_eq!(s["count"], 257, "{cpus} {}", s["name"]);
            assert_eq!(s["extra"]["sent"], 257, "{cpus} {}", s["name"]);
            assert!(s["max_ns"].as_u64().unwrap() >= s["min_ns"].as_u64().unwrap());
            assert_eq!(s["interval_ns"], 100_000);
        }
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("overruns"), "{text}");
    }
}

#[test]
fn duration_bounds_the_run_and_counts_match() {
    if let Some(why) = rt_unavailable() {
        return skip("duration_bounds_the_run_and_counts_match", &why);
    }
    let out = latlab()
        .args([
            "ipc",
            "--method",
            "futex,sigwait",
            "-D",
            "200ms",
            "-i",
            "1ms",
            "--no-store",
            "--json",
            "-",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for s in run["series"].as_array().unwrap() {
        let n = s["count"].as_u64().unwrap();
        assert!(n > 0 && n <= 200, "{n}");
        assert_eq!(s["extra"]["sent"].as_u64().unwrap(), n);
    }
}

#[test]
fn bad_flags_exit_2_naming_them() {
    for (args, flag) in [
        (&["--method", "carrier-pigeon"][..], "--method"),
        (&["-a", "0,1,0-1:1,7777"], "-a/--affinity"),
        (&["-i", "-5us"], "-i/--interval"),
        (&["-l", "many"], "-l/--loops"),
        (&["-D", "0"], "--duration"),
        (&["-p", "0"], "-p/--priority"),
    ] {
        let out = latlab()
            .arg("ipc")
            .args(args)
            .arg("--no-store")
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(flag), "{args:?}: {err}");
    }
}
