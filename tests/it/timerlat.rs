//! `latlab timerlat` on a kernel without the timerlat tracer (this host, as CI's): exit 3
//! naming the kernel option and the user-space command instead, nothing changed or left
//! behind; bad input is exit 2. The tracer itself is judged in the PREEMPT_RT guest
//! (`guest.rs`: every sample read, the hog named, rtla refused, SIGKILL restored).

use crate::util::{is_root, latlab, latlab_as_nobody, Dir};

/// True when this kernel has the timerlat tracer (then the guest's tests judge it here too).
fn host_has_timerlat() -> bool {
    ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"]
        .iter()
        .any(|r| {
            std::fs::read_to_string(format!("{r}/available_tracers"))
                .is_ok_and(|t| t.split_whitespace().any(|x| x == "timerlat"))
        })
}

#[test]
fn without_the_tracer_it_exits_3_naming_the_kernel_option_and_cyclic() {
    if host_has_timerlat() {
        crate::util::skip(
            &crate::util::test_name(),
            "this kernel has the timerlat tracer",
        );
        return;
    }
    let dir = Dir::new();
    let json = dir.join("t.json");
    let want = if is_root() {
        "CONFIG_TIMERLAT_TRACER"
    } else {
        "needs root"
    };
    let out = latlab()
        .words("timerlat -D 1 --no-store --json")
        .arg(&json)
        .assert_refused(3, want);
    assert!(out.stderr.contains("latlab cyclic"), "{out}");
    assert!(!json.exists(), "a refused run wrote a result");
    // Nothing of latlab's is left in tracefs, and no setting is held.
    let left: Vec<String> = std::fs::read_dir("/sys/kernel/tracing/instances")
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("-timerlat"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn as_nobody_it_exits_3_saying_it_needs_root() {
    let dir = Dir::new();
    let Some(mut c) = latlab_as_nobody(&dir, &[]) else {
        return;
    };
    let out = c
        .args(["timerlat", "-D", "1", "--no-store"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(
        err.contains("root") && err.contains("latlab cyclic"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn bad_input_exits_2_naming_the_flag() {
    for (args, flag) in [
        ("timerlat -i 50", "-i/--interval"),
        ("timerlat -i 1500ns", "-i/--interval"),
        ("timerlat -i 2s", "-i/--interval"),
        ("timerlat -l 0", "-l/--loops"),
        ("timerlat --threshold 0", "--threshold"),
        ("timerlat -a 4096", "-a/--affinity"),
        ("timerlat -p 0", "--priority"),
        ("timerlat -p 100", "--priority"),
    ] {
        latlab()
            .words(args)
            .arg("--no-store")
            .assert_refused(2, flag);
    }
}

#[test]
fn qualify_and_monitor_on_the_timerlat_engine_exit_3_without_the_tracer_and_2_on_bad_input() {
    if host_has_timerlat() || !is_root() {
        crate::util::skip(
            &crate::util::test_name(),
            "needs root on a kernel without timerlat",
        );
        return;
    }
    let dir = Dir::new();
    let store = format!("sqlite:{}", dir.join("q.db").display());
    for cmd in [
        format!("qualify --engine timerlat -D 2s --no-loads --store {store}"),
        "monitor --engine timerlat -D 2s --listen 127.0.0.1:0 --no-store".to_string(),
    ] {
        let out = latlab()
            .words(&cmd)
            .assert_refused(3, "CONFIG_TIMERLAT_TRACER");
        assert!(out.stderr.contains("--engine cyclic"), "{cmd}: {out}");
    }
    for (cmd, flag) in [
        (
            "qualify --engine timerlat -D 2s -i 50us --no-loads",
            "-i/--interval",
        ),
        (
            "monitor --engine timerlat -D 2s -i 1500ns --no-store",
            "-i/--interval",
        ),
        (
            "monitor --engine timerlat -D 2s --trace --no-store",
            "--trace",
        ),
        ("qualify --engine perf -D 2s", "--engine"),
    ] {
        latlab().words(cmd).assert_refused(2, flag);
    }
}

#[test]
fn noise_on_the_osnoise_tracer_exits_3_without_it_and_refuses_spinner_options() {
    if host_has_timerlat() || !is_root() {
        crate::util::skip(
            &crate::util::test_name(),
            "needs root on a kernel without osnoise",
        );
        return;
    }
    for engine in ["osnoise", "hwnoise"] {
        let out = latlab()
            .args(["noise", "--engine", engine, "-D", "1", "--no-store"])
            .assert_refused(3, "CONFIG_OSNOISE_TRACER");
        assert!(out.stderr.contains("--engine spin"), "{out}");
    }
    for (args, flag) in [
        ("noise --engine osnoise --repeat 2", "--repeat"),
        ("noise --engine osnoise --disturb true", "--disturb"),
        ("noise --engine hwnoise --clock monotonic", "--clock"),
        ("noise --engine osnoise --trace", "--trace"),
    ] {
        latlab()
            .words(args)
            .arg("--no-store")
            .assert_refused(2, flag);
    }
}
