//! `latlab pi`: without a protocol the medium task runs while the high one waits (exit 1,
//! every time); with inheritance or a ceiling it never does (exit 0, every time). The verdict
//! is the scheduling order seen, not a threshold on time.

use crate::util::{latlab, rt_unavailable, skip};

fn pi(protocol: &str) -> (Option<i32>, serde_json::Value, String) {
    let out = latlab()
        .args([
            "pi",
            "--protocol",
            protocol,
            "-l",
            "15",
            "-i",
            "8ms",
            "--spin",
            "1ms",
            "--cs",
            "50us",
            "--no-store",
            "--json",
            "-",
        ])
        .output()
        .unwrap();
    let run = serde_json::from_slice(&out.stdout).unwrap_or_default();
    (
        out.status.code(),
        run,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn none_inverts_and_inherit_does_not_repeatably() {
    if let Some(why) = rt_unavailable() {
        return skip("none_inverts_and_inherit_does_not_repeatably", &why);
    }
    for round in 0..3 {
        let (code, run, err) = pi("none");
        assert_eq!(code, Some(1), "round {round}: {err}");
        let x = &run["series"][0]["extra"];
        assert_eq!(x["cycles"], 15, "{err}");
        assert!(x["inversions"].as_u64().unwrap() > 0, "{x}");
        assert!(run["check_failure"].as_str().unwrap().contains("inversion"));
        assert!(err.contains("priority inversion"), "{err}");
        for protocol in ["inherit", "protect"] {
            let (code, run, err) = pi(protocol);
            assert_eq!(code, Some(0), "round {round} {protocol}: {err}");
            let x = &run["series"][0]["extra"];
            assert_eq!(x["inversions"], 0, "{protocol}: {x}");
            assert_eq!(x["cycles"], 15);
            assert_eq!(run["series"][0]["count"], 15, "every cycle's wait is timed");
            assert_eq!(x["medium_runs"], 15, "medium ran each cycle, after high");
        }
    }
}

#[test]
fn bad_flags_exit_2_naming_them() {
    for (args, flag) in [
        (&["--protocol", "hope"][..], "--protocol"),
        (&["-a", "0-1"], "-a/--affinity"),
        (&["--spin", "5s"], "--spin"),
        (&["-i", "100us"], "-i/--interval"),
    ] {
        let out = latlab()
            .arg("pi")
            .args(args)
            .arg("--no-store")
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(flag), "{args:?}: {err}");
    }
}
