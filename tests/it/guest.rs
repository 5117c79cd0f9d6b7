//! The guest group: latlab on the kernel its users run. One boot of Debian's PREEMPT_RT kernel
//! with 8 vCPUs (scripts/guest.sh) runs tests/guest/rt-group.sh, which runs every measurement
//! and the RT scenarios and keeps each step's outputs; the tests here judge those outputs. The
//! guest is emulated (TCG), so only mechanisms are judged: counts, names, CPUs, exit codes,
//! never a latency or a duration.
//!
//! The tests are ignored in a plain `cargo test` (a boot takes minutes and loads both CPUs,
//! which would disturb the other tests): scripts/test.sh runs them alone afterwards with
//! `--ignored guest::`.

mod kernels;

use crate::util::{latlab, skip, LATLAB};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// vCPUs of the guest.
const CPUS: usize = 8;
/// The measurements, each run once in the guest.
const KINDS: &[&str] = &[
    "cyclic", "noise", "ctxsw", "clocks", "tcp", "contend", "migrate", "ipc", "pi", "sched",
    "timerlat", "load", "qualify", "monitor",
];

/// The boot's outputs, or why there are none.
fn group() -> Option<&'static Path> {
    static OUT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let r = OUT.get_or_init(|| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        // Kept after the run (target/tmp/guest-rt), for a look at a failure.
        let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("guest-rt");
        let _ = std::fs::remove_dir_all(&out);
        let o = std::process::Command::new("bash")
            .current_dir(root)
            .arg("scripts/guest.sh")
            .args([
                "--kernel",
                "rt",
                "--cpus",
                &CPUS.to_string(),
                "--memory",
                "4G",
            ])
            .args([
                "--timeout",
                "900",
                "--",
                "sh",
                "tests/guest/rt-group.sh",
                LATLAB,
            ])
            .arg(&out)
            .output()
            .map_err(|e| format!("cannot run scripts/guest.sh: {e}"))?;
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        match o.status.code() {
            Some(0) if out.join("done").exists() => Ok(out),
            Some(3) => Err(format!("the guest cannot be had here: {err}")),
            c => panic!("the guest group's boot failed (exit {c:?}):\n{err}"),
        }
    });
    match r {
        Ok(p) => Some(p.as_path()),
        Err(why) => {
            skip(&crate::util::test_name(), why);
            None
        }
    }
}

fn read(out: &Path, name: &str) -> String {
    std::fs::read_to_string(out.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn json(out: &Path, name: &str) -> Value {
    serde_json::from_str(&read(out, name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// The exit code of step `name`, with its stderr for the message.
fn rc(out: &Path, name: &str) -> (i32, String) {
    let rc = read(out, &format!("{name}.rc"))
        .trim()
        .parse()
        .unwrap_or(-1);
    (rc, read(out, &format!("{name}.err")))
}

/// Every cause on `cpu` of a traced run: (kind, name, share).
fn causes(run: &Value, cpu: u64) -> Vec<(String, String, f64)> {
    run["trace"]["per_cpu"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|c| c["cpu"] == cpu)
        .flat_map(|c| c["causes"].as_array().cloned().unwrap_or_default())
        .map(|c| {
            (
                c["kind"].as_str().unwrap_or("").to_string(),
                c["name"].as_str().unwrap_or("").to_string(),
                c["share"].as_f64().unwrap_or(0.0),
            )
        })
        .collect()
}

#[test]
#[ignore = "boots a PREEMPT_RT guest: scripts/test.sh runs the guest group alone"]
fn guest_every_measurement_runs_on_rt_and_is_stored_as_rt() {
    let Some(out) = group() else { return };
    let facts = read(out, "facts.txt");
    assert!(facts.contains(&format!("nproc {CPUS}\n")), "{facts}");
    assert!(
        facts.contains("realtime 1\n"),
        "not a PREEMPT_RT kernel:\n{facts}"
    );
    let store = format!("sqlite:{}", out.join("store.db").display());
    for kind in KINDS {
        let (code, err) = rc(out, kind);
        // migrate and pi judge what they measured: exit 1 is a verdict, not a failure.
        let ok = code == 0 || (code == 1 && ["migrate", "pi"].contains(kind));
        assert!(ok, "{kind} exited {code} in the guest:\n{err}");
        let run = json(out, &format!("{kind}.json"));
        assert_eq!(run["kind"], *kind, "{kind}.json");
        if *kind == "sched" {
            // The in-kernel engine's programs pass 6.1's verifier and count there.
            let p = &run["parameters"];
            assert_eq!(p["engine"], "bpf", "{p}");
            assert!(p["events"].as_u64().unwrap_or(0) > 0, "{p}");
            assert!(!run["series"].as_array().unwrap().is_empty(), "{run}");
        }
        assert_eq!(
            run["environment"]["preemption"], "rt",
            "{kind}: {}",
            run["environment"]
        );
        // And stored so, read back from the store the guest wrote.
        let id = run["id"].as_str().unwrap();
        let shown = latlab()
            .args(["runs", "export", id, "--store", &store])
            .assert_ok();
        let back: Value = serde_json::from_str(&shown.stdout)
            .unwrap_or_else(|e| panic!("{kind}: runs export: {e}\n{}", shown.stdout));
        assert_eq!(
            back["runs"][0]["run"]["environment"]["preemption"], "rt",
            "{kind} as stored"
        );
    }
}

#[test]
#[ignore = "boots a PREEMPT_RT guest: scripts/test.sh runs the guest group alone"]
fn guest_cyclic_has_a_series_per_vcpu_and_its_sample_log_holds_every_sample() {
    let Some(out) = group() else { return };
    let run = json(out, "cyclic.json");
    let series = run["series"].as_array().unwrap();
    let mut cpus: Vec<u64> = series.iter().map(|s| s["cpu"].as_u64().unwrap()).collect();
    cpus.sort_unstable();
    assert_eq!(cpus, (0..CPUS as u64).collect::<Vec<_>>());
    // `latlab samples LOG` counts what the log holds, per series.
    let (code, err) = rc(out, "samples");
    assert_eq!(code, 0, "{err}");
    let summary = read(out, "samples.out");
    for s in series {
        let (name, count) = (s["name"].as_str().unwrap(), s["count"].as_u64().unwrap());
        assert!(count > 0, "{name} counted nothing");
        let line = summary
            .lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .unwrap_or_else(|| panic!("series {name} not in the log's summary:\n{summary}"));
        assert!(
            line.split_whitespace().any(|w| w == count.to_string()),
            "series {name}: {count} in the result, the log says: {line}"
        );
    }
}

#[test]
#[ignore = "boots a PREEMPT_RT guest: scripts/test.sh runs the guest group alone"]
fn guest_noise_covers_every_cpu_and_the_monitor_exports_every_cpu() {
    let Some(out) = group() else { return };
    let run = json(out, "noise.json");
    let mut cpus: Vec<u64> = run["series"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["cpu"].as_u64().unwrap())
        .collect();
    cpus.sort_unstable();
    assert_eq!(cpus, (0..CPUS as u64).collect::<Vec<_>>());
    let metrics = read(out, "metrics.txt");
    for c in 0..CPUS {
        assert!(
            metrics.contains(&format!("cpu=\"{c}\"")),
            "CPU {c} missing from /metrics:\n{metrics}"
        );
    }
}

#[test]
#[ignore = "boots a PREEMPT_RT guest: scripts/test.sh runs the guest group alone"]
fn guest_trace_names_a_hidden_fifo_hog_on_its_cpu_and_no_other() {
    let Some(out) = group() else { return };
    // On both flight recorders: tracefs, and the in-kernel one (6.1's verifier takes it, and
    // it reads PREEMPT_RT's records).
    for (step, engine) in [("hog", "tracefs"), ("hog_bpf", "bpf")] {
        let (code, err) = rc(out, step);
        assert_eq!(code, 0, "{step}: {err}");
        let run = json(out, &format!("{step}.json"));
        assert_eq!(
            run["trace"]["engine"], engine,
            "{}",
            run["trace"]["warnings"]
        );
        assert!(run["trace"]["events"].as_u64().unwrap() > 0, "{step}");
        let on = |cpu| {
            causes(&run, cpu)
                .into_iter()
                .filter(|(k, n, _)| k == "thread" && n.contains("fifohog"))
                .count()
        };
        assert!(
            on(5) > 0,
            "{step}: the hog is not among CPU 5's causes: {:?}",
            causes(&run, 5)
        );
        for cpu in (0..CPUS as u64).filter(|&c| c != 5) {
            assert_eq!(
                on(cpu),
                0,
                "{step}: the hog named on CPU {cpu}: {:?}",
                causes(&run, cpu)
            );
        }
    }
}

#[test]
#[ignore = "boots a PREEMPT_RT guest: scripts/test.sh runs the guest group alone"]
fn guest_a_threaded_interrupt_is_named_by_its_irq_and_kernel_threads_by_their_work() {
    let Some(out) = group() else { return };
    let irq = read(out, "irq.txt");
    let irq = irq.lines().next().unwrap_or("").trim();
    assert!(
        !irq.is_empty(),
        "no virtio1 interrupt in the guest's /proc/interrupts"
    );
    let (code, err) = rc(out, "irqthread");
    assert_eq!(code, 0, "{err}");
    let run = json(out, "irqthread.json");
    let want = format!("irq {irq} virtio1-requests (thread)");
    let six = causes(&run, 6);
    assert!(
        six.iter().any(|(k, n, _)| k == "thread" && *n == want),
        "no '{want}' among CPU 6's causes: {six:?}"
    );
    // Nowhere is a threaded interrupt or a per-CPU kernel thread named by its bare task name.
    for name in ["hog.json", "irqthread.json", "hotplug.json", "sched.json"] {
        let run = json(out, name);
        for cpu in 0..CPUS as u64 {
            for (kind, n, _) in causes(&run, cpu) {
                let bare = [
                    "irq/",
                    "ktimers/",
                    "ksoftirqd/",
                    "rcuc/",
                    "migration/",
                    "cpuhp/",
                ]
                .iter()
                .any(|p| n.starts_with(p));
                assert!(
                    !(kind == "thread" && bare),
                    "{name}: CPU {cpu}: '{n}' is not grouped"
                );
            }
        }
    }
}

#[test]
#[ignore = "boots a PREEMPT_RT guest: scripts/test.sh runs the guest group alone"]
fn guest_seed_003_cpu_hotplug_stalls_the_cpus_it_stops_and_names_stop_machine() {
    let Some(out) = group() else { return };
    let (code, err) = rc(out, "hotplug");
    assert_eq!(code, 0, "{err}");
    let run = json(out, "hotplug.json");
    assert_eq!(run["parameters"]["repeats_done"], 3);
    let mut named = false;
    for s in run["series"].as_array().unwrap() {
        let cpu = s["cpu"].as_u64().unwrap();
        let d = &s["extra"]["disturbance"];
        // Every CPU stopped for the hotplug: each has interruptions during the command.
        assert!(
            d["during"]["interruptions"].as_u64().unwrap_or(0) > 0,
            "CPU {cpu}: no interruption during the hotplug: {d}"
        );
        named |= causes(&run, cpu)
            .iter()
            .any(|(k, n, _)| k == "thread" && n.starts_with("stop_machine, migration (kernel"));
    }
    assert!(
        named,
        "stop_machine's threads named on no CPU: {}",
        run["trace"]["per_cpu"]
    );
    // The measured CPU that went offline is said, whatever the polling saw.
    let warnings = run["warnings"].to_string();
    assert!(
        warnings.contains("online CPUs changed from 0-7 to 0-2,4-7"),
        "CPU 3 going offline is not said: {warnings}"
    );
    assert!(
        run["trace"].get("spikes_unread").is_none(),
        "spikes explained before their events were read: {}",
        run["trace"]["spikes_unread"]
    );
}

#[test]
#[ignore = "boots a PREEMPT_RT guest: scripts/test.sh runs the guest group alone"]
fn guest_a_plan_killed_with_sigkill_is_restored() {
    let Some(out) = group() else { return };
    let r = read(out, "restore.txt");
    let value = |k: &str| {
        r.lines()
            .find_map(|l| l.strip_prefix(&format!("{k} ")))
            .unwrap_or_else(|| panic!("no '{k}' in:\n{r}"))
            .to_string()
    };
    assert_ne!(
        value("during"),
        value("before"),
        "the plan never changed the setting:\n{r}"
    );
    let (code, err) = rc(out, "restore");
    assert_eq!(code, 0, "{err}");
    assert_eq!(value("after"), value("before"), "not restored:\n{r}");
}

/// Time nothing visible explains names what was measured against it and what could not be:
/// on an idle CPU, which the guest has (on a shared host another tenant may keep CPU 1 busy
/// for a whole run, and every spike then rightly names that tenant).
#[test]
#[ignore = "boots a PREEMPT_RT guest: scripts/test.sh runs the guest group alone"]
fn guest_unexplained_time_names_what_was_measured_and_what_could_not_be() {
    let Some(out) = group() else { return };
    let (code, err) = rc(out, "unexplained");
    assert_eq!(code, 0, "{err}");
    let run = json(out, "unexplained.json");
    let spikes = run["trace"]["spikes"].as_array().unwrap();
    let with: Vec<&Value> = spikes
        .iter()
        .filter(|s| s.get("residual").is_some())
        .collect();
    assert!(
        !with.is_empty(),
        "no spike with unexplained time on an idle CPU; {} spikes",
        spikes.len()
    );
    for s in &with {
        let r = &s["residual"];
        let unexplained: u64 = s["components"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["kind"] == "idle" || c["kind"] == "unattributed")
            .map(|c| c["ns"].as_u64().unwrap())
            .sum();
        assert_eq!(r["ns"].as_u64().unwrap(), unexplained, "{s:#}");
        let said = |prefix: &str| {
            r["measured"]
                .as_array()
                .into_iter()
                .chain(r["unmeasured"].as_array())
                .flatten()
                .any(|m| m.as_str().unwrap().starts_with(prefix))
        };
        // Each source is measured or said to be unmeasurable, never left out (steal on a
        // guest only).
        let mut sources = vec!["NMIs: ", "SMIs: "];
        if run["trace"].get("hypervisor").is_some() {
            sources.push("steal: ");
        }
        for src in sources {
            assert!(said(src), "{src} neither measured nor said: {r:#}");
        }
        let smi_read = r.get("smis").is_some();
        let smi_said = r["unmeasured"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|m| m.as_str().unwrap().starts_with("SMIs: "));
        assert!(smi_read != smi_said, "{r:#}");
    }
    // And the run says so once, as one warning.
    let warnings = run["warnings"].as_array().unwrap();
    let said: Vec<&str> = warnings
        .iter()
        .map(|w| w.as_str().unwrap())
        .filter(|w| w.contains("nothing visible explains"))
        .collect();
    assert_eq!(said.len(), 1, "{warnings:#?}");
    assert!(said[0].contains("(CPU 1: "), "{said:?}");
    assert!(
        !(said[0].contains("not measured") && said[0].contains(" 0 SMIs")),
        "{said:?}"
    );
}

#[test]
#[ignore = "boots a PREEMPT_RT guest: scripts/test.sh runs the guest group alone"]
fn guest_timerlat_reads_every_sample_the_kernel_produced_on_every_cpu() {
    let Some(out) = group() else { return };
    let run = json(out, "timerlat.json");
    let series = run["series"].as_array().unwrap();
    // An IRQ and a thread series per vCPU, named by context and CPU.
    let mut names: Vec<String> = series
        .iter()
        .map(|s| s["name"].as_str().unwrap().to_string())
        .collect();
    names.sort();
    let mut want: Vec<String> = (0..CPUS)
        .flat_map(|c| [format!("irq-{c}"), format!("thread-{c}")])
        .collect();
    want.sort();
    assert_eq!(names, want);
    for s in series {
        let name = s["name"].as_str().unwrap();
        let (produced, read) = (
            s["extra"]["produced"].as_u64().unwrap(),
            s["extra"]["read"].as_u64().unwrap(),
        );
        assert!(read > 0, "{name}: nothing read");
        assert_eq!(read, s["count"].as_u64().unwrap(), "{name}");
        assert_eq!(
            produced, read,
            "{name}: the kernel produced {produced}, latlab read {read}"
        );
        assert_eq!(s["lost_samples"], 0, "{name}");
        assert_eq!(s["interval_ns"], 1_000_000, "{name}");
    }
    // Each period is sampled at the IRQ and in the thread: per CPU the counts differ by at
    // most the period in flight when the tracer started or stopped.
    for c in 0..CPUS {
        let count = |ctx: &str| {
            series
                .iter()
                .find(|s| s["name"] == format!("{ctx}-{c}"))
                .unwrap()["count"]
                .as_u64()
                .unwrap()
        };
        assert!(count("irq").abs_diff(count("thread")) <= 1, "CPU {c}");
    }
}

#[test]
#[ignore = "boots a PREEMPT_RT guest: scripts/test.sh runs the guest group alone"]
fn guest_timerlat_names_the_hidden_hog_as_the_blocking_thread_with_the_kernels_split() {
    let Some(out) = group() else { return };
    let (code, err) = rc(out, "timerlat_hog");
    assert_eq!(code, 0, "{err}");
    let run = json(out, "timerlat_hog.json");
    let spikes = run["trace"]["spikes"].as_array().unwrap();
    let on5: Vec<&Value> = spikes.iter().filter(|s| s["cpu"] == 5).collect();
    assert!(!on5.is_empty(), "no spike explained on the hog's CPU 5");
    // The hog busy-waits 30 ms at FIFO 95, the timerlat thread's own priority: the IRQ comes
    // in time, the thread waits for the hog. Every such spike says so.
    let hogged: Vec<&&Value> = on5
        .iter()
        .filter(|s| {
            s["kernel_split"]["blocking"]
                .as_str()
                .is_some_and(|b| b.starts_with("fifohog:") && b.ends_with("RT 95"))
        })
        .collect();
    assert!(
        !hogged.is_empty(),
        "no spike on CPU 5 blocked by fifohog: {on5:?}"
    );
    for s in &hogged {
        let k = &s["kernel_split"];
        let (irq, thread) = (
            k["irq_latency_ns"]
                .as_u64()
                .expect("the IRQ sample was read"),
            k["thread_latency_ns"].as_u64().unwrap(),
        );
        assert!(irq < thread, "{s}");
        assert_eq!(k["thread_delay_ns"].as_u64().unwrap(), thread - irq, "{s}");
        assert!(k["thread_ns"].as_u64().unwrap() > 0, "{s}");
    }
    // The hog is CPU 5's first cause, and no other CPU's.
    let top = |cpu| causes(&run, cpu).into_iter().next();
    let first = top(5).expect("CPU 5 has causes");
    assert_eq!(
        (first.0.as_str(), first.1.as_str()),
        ("thread", "fifohog"),
        "{first:?}"
    );
    for cpu in [4, 6] {
        assert!(
            causes(&run, cpu).iter().all(|c| c.1 != "fifohog"),
            "fifohog named on CPU {cpu}: {:?}",
            causes(&run, cpu)
        );
    }
}

#[test]
#[ignore = "boots a PREEMPT_RT guest: scripts/test.sh runs the guest group alone"]
fn guest_timerlat_refuses_rtlas_tracer_and_restore_undoes_a_killed_run() {
    let Some(out) = group() else { return };
    let (code, err) = rc(out, "timerlat_busy");
    assert_eq!(code, 3, "{err}");
    assert!(
        err.contains("timerlat_top") && err.contains("rtla"),
        "{err}"
    );
    // rtla's run went on to its end, untouched.
    assert_eq!(read(out, "rtla-top.rc").trim(), "0");
    assert!(read(out, "rtla-top.txt").contains("Timer Latency"));
    // Killed mid-run: latlab's settings and instance were in force, and restore undid them.
    let (before, during, after) = (
        read(out, "timerlat_kill.before"),
        read(out, "timerlat_kill.during"),
        read(out, "timerlat_kill.after"),
    );
    assert!(during.starts_with("2-3\n500\n"), "{during}");
    assert!(during.contains("-timerlat"), "{during}");
    let (code, err) = rc(out, "timerlat_restore");
    assert_eq!(code, 0, "{err}");
    assert_eq!(after, before);
    let left = read(out, "timerlat_kill.left");
    assert!(!left.contains("latlab-"), "{left}");
    assert!(!left.contains("timerlat/"), "{left}");
}

#[test]
#[ignore = "boots a PREEMPT_RT guest: scripts/test.sh runs the guest group alone"]
fn guest_qualify_and_monitor_run_on_the_timerlat_engine() {
    let Some(out) = group() else { return };
    for step in ["qualify_timerlat", "monitor_timerlat"] {
        let (code, err) = rc(out, step);
        assert_eq!(code, 0, "{step}: {err}");
        let run = json(out, &format!("{step}.json"));
        assert_eq!(run["parameters"]["engine"], "timerlat", "{step}");
        let series = run["series"].as_array().unwrap();
        let mut cpus: Vec<u64> = series.iter().filter_map(|s| s["cpu"].as_u64()).collect();
        cpus.sort_unstable();
        assert_eq!(cpus, [1, 2, 3], "{step}");
        for s in series {
            assert!(s["count"].as_u64().unwrap() > 0, "{step}: {s}");
            assert_eq!(s["lost_samples"], 0, "{step}: {s}");
        }
    }
    // Nothing of either is left: the timerlat step after them ran (its instance was free).
    let (code, err) = rc(out, "timerlat_hog");
    assert_eq!(code, 0, "{err}");
}

#[test]
#[ignore = "boots a PREEMPT_RT guest: scripts/test.sh runs the guest group alone"]
fn guest_noise_on_the_osnoise_tracer_counts_the_kernels_classes_and_names_the_hog() {
    let Some(out) = group() else { return };
    let (code, err) = rc(out, "noise_osnoise");
    assert_eq!(code, 0, "{err}");
    let run = json(out, "noise_osnoise.json");
    assert_eq!(run["parameters"]["engine"], "osnoise");
    let series = run["series"].as_array().unwrap();
    let names: Vec<&str> = series.iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["cpu4", "cpu5", "cpu6"]);
    for s in series {
        let e = &s["extra"];
        assert!(e["periods"].as_u64().unwrap() > 0, "{s}");
        assert!(e["runtime_ns"].as_u64().unwrap() > 0, "{s}");
        // The tick, at least, interrupts every CPU's osnoise thread.
        assert!(e["kernel_counts"]["irq"].as_u64().unwrap() > 0, "{s}");
    }
    // On the hog's CPU the thread class that took most time is the hog.
    let cpu5 = &series[1]["extra"]["classes"];
    let top_thread = cpu5
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["kind"] == "thread")
        .unwrap_or_else(|| panic!("no thread noise on CPU 5: {cpu5}"));
    assert_eq!(top_thread["name"], "fifohog", "{cpu5}");
    assert_eq!(read(out, "osnoise.after"), read(out, "osnoise.before"));
    // hwnoise needs the tracer's options file (Linux 6.2, or a kernel with it backported).
    let (code, err) = rc(out, "noise_hwnoise");
    match code {
        0 => {
            let h = json(out, "noise_hwnoise.json");
            assert_eq!(h["parameters"]["engine"], "hwnoise");
            assert!(
                h["series"][0]["extra"]["periods"].as_u64().unwrap() > 0,
                "{h}"
            );
        }
        3 => assert!(err.contains("options"), "{err}"),
        c => panic!("hwnoise exited {c}: {err}"),
    }
}
