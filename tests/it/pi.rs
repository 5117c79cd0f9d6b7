//! `latlab pi`: without a protocol the medium task runs while the high one waits (exit 1,
//! every time); with inheritance or a ceiling it never does (exit 0, every time). The verdict
//! is the scheduling order seen, not a threshold on time.

use crate::util::{expect_exit, latlab, rt_unavailable, skipped};

fn pi(protocol: &str) -> (Option<i32>, serde_json::Value, String) {
    let out = latlab()
        .args(["pi", "--protocol", protocol])
        .words("-l 15 -i 8ms --spin 1ms --cs 50us --no-store --json -")
        .output();
    let run = serde_json::from_str(&out.stdout).unwrap_or_default();
    (out.code(), run, out.stderr)
}

#[test]
fn none_inverts_and_inherit_does_not_repeatably() {
    if skipped(rt_unavailable()) {
        return;
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
        expect_exit(&["pi", "--no-store"], args, 2, flag);
    }
}
