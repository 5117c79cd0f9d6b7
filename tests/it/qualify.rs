//! `latlab qualify`: a qualification SIGKILLed in the middle and resumed loses at most one
//! checkpoint interval, records the gap, leaves no load running and no setting held; the same
//! when every latlab process is killed at once; the JUnit file validates and the report renders
//! in a real browser; `--resume` of a finished, foreign or unknown run is refused (exit 2), also
//! when it was finished while the resume waited for its lock; two
//! qualifications are compared on their intervals. Each measures for seconds.

use crate::util::{latlab, rt_test, scratch, skip, test_name, Running, TestCommand};
use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime};

/// A scratch directory and store of one test.
fn place(name: &str) -> (PathBuf, String) {
    let d = scratch().join(name);
    std::fs::create_dir_all(&d).unwrap();
    let store = format!("sqlite:{}", d.join("store.db").display());
    (d, store)
}

fn qualify(dir: &Path, store: &str, args: &[&str]) -> TestCommand {
    let mut c = latlab();
    c.current_dir(dir)
        .env("LATLAB_NO_PROGRESS", "1")
        .args(["qualify", "--store", store])
        .args(args);
    c
}

/// Starts a qualification (in a process group of its own; killed if the test fails first)
/// and returns it with a channel of its stderr lines.
fn spawn(mut c: TestCommand) -> (Running, mpsc::Receiver<String>) {
    c.command().process_group(0);
    let mut child = c.spawn_with(Stdio::null(), Stdio::piped());
    let err = child.child().stderr.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for l in BufReader::new(err).lines().map_while(|l| l.ok()) {
            let _ = tx.send(l);
        }
    });
    (child, rx)
}

/// Waits for `n` checkpoints to be said (at most 60 s).
fn await_checkpoints(rx: &mpsc::Receiver<String>, n: usize) -> Vec<String> {
    let t0 = Instant::now();
    let mut lines = Vec::new();
    while lines
        .iter()
        .filter(|l: &&String| l.contains("stored (run"))
        .count()
        < n
    {
        match rx.recv_timeout(Duration::from_secs(1)) {
            Ok(l) => lines.push(l),
            Err(_) if t0.elapsed() < Duration::from_secs(60) => {}
            Err(_) => panic!("no {n} checkpoints in 60 s: {lines:?}"),
        }
    }
    lines
}

/// Processes whose command line holds `load-worker` and whose environment names `parent` as
/// the process they die with.
fn load_workers_of(parent: u32) -> Vec<u32> {
    let want = format!("LATLAB_LOAD_PARENT={parent}");
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|p| {
            let cmd = std::fs::read(format!("/proc/{p}/cmdline")).unwrap_or_default();
            let env = std::fs::read(format!("/proc/{p}/environ")).unwrap_or_default();
            String::from_utf8_lossy(&cmd).contains("load-worker")
                && env.split(|b| *b == 0).any(|kv| kv == want.as_bytes())
        })
        .collect()
}

fn gone(pids: &[u32]) -> bool {
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(5) {
        if pids
            .iter()
            .all(|p| !Path::new(&format!("/proc/{p}")).exists())
        {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

fn dma_latency() -> Option<u32> {
    let b = std::fs::read("/dev/cpu_dma_latency").ok()?;
    Some(u32::from_ne_bytes(b.get(..4)?.try_into().ok()?))
}

fn json(p: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

fn validate_junit(test: &str, xml: &Path) {
    let xsd = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/junit/junit.xsd");
    match Command::new("xmllint")
        .args(["--noout", "--schema"])
        .arg(&xsd)
        .arg(xml)
        .output()
    {
        Ok(v) => assert!(
            v.status.success(),
            "{} does not validate: {}",
            xml.display(),
            String::from_utf8_lossy(&v.stderr)
        ),
        Err(e) => skip(test, &format!("xmllint (libxml2-utils) not installed: {e}")),
    }
}

/// Kills the qualification (as `how` says), checks what it leaves behind, resumes it and checks
/// the final result: returns (its JSON, the directory).
fn killed_and_resumed(name: &str, every_process: bool) -> (serde_json::Value, PathBuf, String) {
    let (d, store) = place(name);
    let before = dma_latency();
    let (mut child, rx) = spawn(qualify(
        &d,
        &store,
        &[
            "-D",
            "8s",
            "--checkpoint-every",
            "2s",
            "-a",
            "1",
            "--housekeeping",
            "0",
            "--load",
            "cpu",
            "-i",
            "500us",
            "--require",
            "p99<1h",
            "--require",
            "max<1h",
            "--report",
            "q.html",
            "--junit",
            "q.xml",
            "--json",
            "q.json",
        ],
    ));
    let pid = child.id();
    let lines = await_checkpoints(&rx, 2);
    let workers = load_workers_of(pid);
    assert_eq!(workers.len(), 1, "one cpu load worker: {lines:?}");
    let killed_at = SystemTime::now();
    if every_process {
        // kill -9 of every latlab process of this qualification, at once.
        for p in workers.iter().chain([&pid]) {
            // SAFETY: signalling processes this test started.
            unsafe { libc::kill(*p as i32, libc::SIGKILL) };
        }
    } else {
        // SAFETY: signalling the process this test started.
        unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    }
    let _ = child.child().wait();
    assert!(gone(&workers), "load workers outlived latlab: {workers:?}");
    if let Some(b) = before {
        assert_eq!(dma_latency(), Some(b), "/dev/cpu_dma_latency not released");
    }
    assert!(!d.join("q.json").exists() && !d.join("q.xml").exists());
    // Nothing final, the checkpoints stored and marked in progress.
    let list = latlab()
        .args(["runs", "list", "--kind", "qualify", "--store", &store])
        .assert_ok()
        .stdout
        .clone();
    assert!(
        list.contains("qualify=interval") && !list.contains("qualify=finished"),
        "{list}"
    );
    // Resumed: the newest unfinished qualification, with its own settings; outputs are not
    // settings, so a JUnit file first asked for now is written (and the JSON asked for at the
    // start still is).
    qualify(&d, &store, &["--resume", "--junit", "resumed.xml"]).assert_ok();
    assert!(
        d.join("resumed.xml").exists(),
        "--junit given with --resume was not written"
    );
    assert!(
        !d.join("q.xml").exists(),
        "the JUnit path given at the start was not replaced"
    );
    let r = json(&d.join("q.json"));
    let q = &r["qualification"];
    assert_eq!(q["state"], "finished", "{q}");
    assert_eq!(q["segment"], 2);
    let gaps = q["gaps"].as_array().unwrap();
    assert_eq!(gaps.len(), 1, "{q}");
    assert_eq!(gaps[0]["after_segment"], 1);
    assert_eq!(gaps[0]["reboot"], false);
    // At most one interval lost: segment 1's last checkpoint is within one interval (2 s, and
    // a second for the store and the kill) of the kill.
    let last = humantime::parse_rfc3339(gaps[0]["from"].as_str().unwrap()).unwrap();
    let lost = killed_at.duration_since(last).unwrap_or_default();
    assert!(
        lost <= Duration::from_secs(3),
        "lost {lost:?} > one interval"
    );
    // Intervals numbered without a hole or a repeat, both segments, every one stored.
    let ivs = q["intervals"].as_array().unwrap();
    let seqs: Vec<u64> = ivs.iter().map(|i| i["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>());
    assert!(ivs.iter().any(|i| i["segment"] == 1) && ivs.iter().any(|i| i["segment"] == 2));
    // The final series are the intervals' samples, all of them.
    let per_interval: u64 = ivs
        .iter()
        .flat_map(|i| i["cpus"].as_array().unwrap().iter())
        .map(|c| c["count"].as_u64().unwrap())
        .sum();
    let total: u64 = r["series"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["count"].as_u64().unwrap())
        .sum();
    assert_eq!(total, per_interval);
    // The whole duration measured (segments added up), not twice and not the lost part.
    let measured = q["measured_s"].as_f64().unwrap();
    assert!((7.0..9.5).contains(&measured), "measured {measured}");
    assert_eq!(r["series"][0]["cpu"], 1);
    // The cpu load: its total over both segments from their checkpoints, and this segment's
    // final report.
    let loads = r["loads"].as_array().unwrap();
    assert_eq!(loads.len(), 2, "{loads:?}");
    assert!(
        loads[0]["note"]
            .as_str()
            .is_some_and(|n| n.contains("all 2 segment(s)"))
            && loads[0]["count"].as_u64() > loads[1]["count"].as_u64(),
        "{loads:?}"
    );
    assert!(q["system"]["kernel_release"]
        .as_str()
        .is_some_and(|k| !k.is_empty()));
    let verdicts = q["verdicts"].as_array().unwrap();
    assert_eq!(verdicts.len(), 2);
    assert!(
        verdicts.iter().all(|v| v["verdict"] == "met"),
        "{verdicts:?}"
    );
    (r, d, store)
}

#[test]
fn a_sigkill_mid_run_loses_at_most_one_interval_and_resume_finishes_it() {
    let Some(_x) = rt_test() else { return };
    let test = &test_name();
    let (r, d, store) = killed_and_resumed("sigkill", false);
    // The JUnit file is the one asked for on resume.
    validate_junit(test, &d.join("resumed.xml"));
    let xml = std::fs::read_to_string(d.join("resumed.xml")).unwrap();
    assert_eq!(xml.matches("<testcase ").count(), 2, "{xml}");
    // The report renders in a real browser: the verdict first, the facts, the tail's hook.
    let html = std::fs::read_to_string(d.join("q.html")).unwrap();
    assert!(html.contains("HOOK(tail, issue 31)"));
    match crate::report::chromium() {
        Some(b) => {
            let png = Path::new(env!("CARGO_TARGET_TMPDIR")).join("qualify-report.png");
            let (dom, _) = crate::report::browse(&b, &d.join("q.html"), &png);
            let v = dom.find("id=\"verdict\"").expect("verdict section");
            assert!(
                v < dom.find("id=\"latency\"").unwrap(),
                "the verdict comes first"
            );
            for want in [
                "MET",
                "id=\"system\"",
                "id=\"loads\"",
                "<svg",
                "Maximum of each checkpoint interval",
            ] {
                assert!(dom.contains(want), "{want} missing from the rendered page");
            }
            assert!(std::fs::metadata(&png).unwrap().len() > 10_000);
        }
        None => skip(
            test,
            "no chromium (scripts/test.sh installs Debian's chromium)",
        ),
    }
    // `latlab report` of the final result draws the same page.
    let id = r["id"].as_str().unwrap();
    latlab()
        .current_dir(&d)
        .args(["report", id, "-o", "again.html", "--store", &store])
        .assert_ok();
    assert!(std::fs::read_to_string(d.join("again.html"))
        .unwrap()
        .contains("id=\"verdict\""));
}

#[test]
fn kill_9_of_every_latlab_process_loses_at_most_one_interval() {
    let Some(_x) = rt_test() else { return };
    killed_and_resumed("killall", true);
}

#[test]
fn resume_refuses_finished_foreign_and_unknown_runs() {
    let Some(_x) = rt_test() else { return };
    let (d, store) = place("refuse");
    let run = |args: &[&str]| {
        let out = qualify(&d, &store, args).output();
        (out.code(), out.stderr.clone())
    };
    // Nothing to resume yet.
    let (code, err) = run(&["--resume"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("no unfinished qualification"), "{err}");
    // Two short qualifications, finished (no requirement: exit 0).
    let mut finals = Vec::new();
    for i in 0..2 {
        let j = format!("q{i}.json");
        let (code, err) = run(&[
            "-D",
            "3s",
            "--checkpoint-every",
            "1s",
            "--no-loads",
            "-a",
            "1",
            "--json",
            &j,
        ]);
        assert_eq!(code, Some(0), "{err}");
        finals.push(json(&d.join(&j)));
    }
    let qid = finals[0]["qualification"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let fid = finals[0]["id"].as_str().unwrap().to_string();
    for id in [&qid, &fid] {
        let (code, err) = run(&["--resume", id]);
        assert_eq!(code, Some(2), "{err}");
        assert!(err.contains("is finished"), "{err}");
    }
    // A run of another kind is foreign.
    let cyc = latlab()
        .args(["cyclic", "-D", "1s", "-q", "--store", &store, "--json", "-"])
        .assert_ok()
        .json();
    let (code, err) = run(&["--resume", cyc["id"].as_str().unwrap()]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("not part of a qualification"), "{err}");
    let (code, err) = run(&["--resume", "20200101T000000Z-00000000"]);
    assert_eq!(code, Some(2), "{err}");
    // Settings of its own cannot come with --resume; a qualification needs the store.
    let (code, err) = run(&["--resume", &qid, "-D", "1h"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("-D/--duration"), "{err}");
    let (code, err) = run(&["-D", "1h", "--no-store"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--no-store"), "{err}");
    // Two qualifications compared: each one's checkpoint intervals are its runs.
    let sel = |f: &serde_json::Value| format!("run:{}", f["id"].as_str().unwrap());
    let out = latlab()
        .args([
            "compare",
            "--store",
            &store,
            &sel(&finals[0]),
            &sel(&finals[1]),
        ])
        .output();
    let (err, text) = (out.stderr.clone(), out.stdout.clone());
    assert!(err.contains("checkpoint intervals are its runs"), "{err}");
    let n = finals[0]["qualification"]["intervals"]
        .as_array()
        .unwrap()
        .len();
    assert!(n >= 2, "{n} intervals");
    assert!(text.contains("the run"), "{text}\n{err}");
}

/// A resume chooses its qualification, then locks it: the process that held the lock may have
/// finished it in between. Chosen again under the lock, a finished one is refused (`--resume`,
/// exit 2) or a new one starts (`--resume-or-start`): no segment is added after a final result.
#[test]
fn a_qualification_finished_while_a_resume_waits_for_its_lock_is_not_resumed() {
    let Some(_x) = rt_test() else { return };
    let (d, store) = place("finished-meanwhile");
    for (flag, j) in [("--resume", ""), ("--resume-or-start", "s.json")] {
        let (first, rx) = spawn(qualify(
            &d,
            &store,
            &[
                "-D",
                "4s",
                "--checkpoint-every",
                "1s",
                "--no-loads",
                "-a",
                "1",
                "--json",
                "q.json",
            ],
        ));
        await_checkpoints(&rx, 1);
        // Chooses the unfinished qualification now and locks it after the first has ended.
        let mut second = qualify(&d, &store, &[flag]);
        if flag == "--resume-or-start" {
            second.args(["-D", "2s", "--no-loads", "-a", "1", "--json", j]);
        }
        let second = second.env("LATLAB_TEST_RESUME_PAUSE_MS", "8000").spawn();
        let out = first.end_within(Duration::from_secs(60));
        out.assert_ok();
        let q = json(&d.join("q.json"))["qualification"].clone();
        assert_eq!(q["state"], "finished", "{q}");
        let out = second.end_within(Duration::from_secs(60));
        if flag == "--resume" {
            assert_eq!(out.code(), Some(2), "{out}");
            assert!(out.stderr.contains("is finished"), "{out}");
        } else {
            out.assert_ok();
            let r = json(&d.join(j))["qualification"].clone();
            assert_ne!(r["id"], q["id"], "{out}");
            assert_eq!(r["segment"], 1, "{out}");
        }
    }
}

/// A checkpoint the store refuses (its file made immutable mid-run) is kept in a file, like a
/// final result the store refuses: the line that says it was not stored names that file.
#[test]
fn a_checkpoint_the_store_refuses_is_kept_in_a_file() {
    let Some(_x) = rt_test() else { return };
    if !crate::util::is_root() || !crate::util::have("chattr") {
        return skip(&test_name(), "needs root and chattr (e2fsprogs)");
    }
    let (d, store) = place("refused-checkpoint");
    let xdg = d.join("xdg");
    let mut c = qualify(
        &d,
        &store,
        &[
            "-D",
            "5s",
            "--checkpoint-every",
            "1s",
            "-a",
            "1",
            "-i",
            "1ms",
        ],
    );
    c.env("XDG_DATA_HOME", &xdg);
    let (child, rx) = spawn(c);
    let mut lines = await_checkpoints(&rx, 1);
    let files = [d.join("store.db"), d.join("store.db-wal")];
    let chattr = |flag: &str| {
        Command::new("chattr")
            .arg(flag)
            .args(&files)
            .status()
            .is_ok_and(|s| s.success())
    };
    if !chattr("+i") {
        child.kill();
        return skip(&test_name(), "chattr +i is not supported here");
    }
    let out = child.finish();
    chattr("-i");
    lines.extend(rx.try_iter());
    let refused: Vec<&String> = lines.iter().filter(|l| l.contains("NOT stored")).collect();
    assert!(!refused.is_empty(), "{lines:?} {out}");
    let kept: Vec<PathBuf> = std::fs::read_dir(xdg.join("latlab/unstored"))
        .unwrap_or_else(|e| panic!("no unstored directory ({e}): {lines:?}"))
        .flatten()
        .map(|e| e.path())
        .collect();
    // Each refused checkpoint's file is named where it is said; the final result has its own.
    for l in &refused {
        assert!(
            kept.iter().any(|k| l.contains(&k.display().to_string())),
            "{l} {kept:?}"
        );
    }
    assert!(kept.len() > refused.len(), "{kept:?} {lines:?}");
}
