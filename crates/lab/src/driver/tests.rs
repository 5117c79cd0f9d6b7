//! The driver's lifecycle in-process, with a fake measurement (as hyperfine tests its scheduler
//! with a mock executor): no real-time threads, no signals, no binary.

use super::*;
use latlab_core::error::Error;
use latlab_core::rt::Control;
use latlab_core::store::{BundleEntry, Filter, RunRow, Store};
use std::cell::Cell;
use std::collections::BTreeMap;
use std::io::Write;
use std::rc::Rc;
use std::sync::atomic::Ordering;

/// A measurement that records whether it ran and can play a Ctrl-C in the middle.
struct Fake {
    measured: Rc<Cell<bool>>,
    signal_midway: bool,
}

impl Fake {
    fn new() -> (Fake, Rc<Cell<bool>>) {
        let measured = Rc::new(Cell::new(false));
        (
            Fake {
                measured: measured.clone(),
                signal_midway: false,
            },
            measured,
        )
    }
}

impl Measurement for Fake {
    const KIND: &'static str = "fake";
    type Outcome = Run;

    fn planned(&self) -> Option<Duration> {
        Some(Duration::from_millis(10))
    }

    fn footprint(&self) -> Footprint {
        Footprint::default()
    }

    fn measure(&mut self, ctx: &mut Ctx<'_>) -> Result<Run> {
        self.measured.set(true);
        if self.signal_midway {
            // What the SIGINT handler does: both flags, in the handler.
            ctx.control().interrupted.store(true, Ordering::Relaxed);
            ctx.control().stop.store(true, Ordering::Relaxed);
        }
        ctx.warn("a warning through the sink");
        let started = std::time::SystemTime::now();
        Ok(ctx.run_at(started, serde_json::json!({ "fake": true })))
    }

    fn result(o: &mut Run) -> &mut Run {
        o
    }

    fn render(&self, o: &Run) -> Text {
        format!("fake run {}\n", o.id).into()
    }
}

/// A writer whose reader went away.
struct ClosedPipe;

impl std::io::Write for ClosedPipe {
    fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
        Err(std::io::ErrorKind::BrokenPipe.into())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Err(std::io::ErrorKind::BrokenPipe.into())
    }
}

/// A store that fails every save (a run it refuses is kept in its directory).
struct BrokenStore(std::path::PathBuf);

impl Store for BrokenStore {
    fn save(&mut self, _: &Run, _: &BTreeMap<String, String>) -> Result<bool> {
        Err(Error::Env("the store went away".into()))
    }
    fn save_json(&mut self, _: &serde_json::Value, _: &BTreeMap<String, String>) -> Result<bool> {
        Err(Error::Env("the store went away".into()))
    }
    fn list(&self, _: &Filter) -> Result<Vec<RunRow>> {
        Ok(Vec::new())
    }
    fn get(&self, id: &str) -> Result<BundleEntry> {
        Err(Error::Usage(format!("no run {id}")))
    }
    fn delete(&mut self, _: &str) -> Result<()> {
        Ok(())
    }
    fn location(&self) -> String {
        "nowhere".into()
    }
    fn rescue_dir(&self) -> Option<std::path::PathBuf> {
        Some(self.0.clone())
    }
}

fn io(out: &mut dyn Write, control: Control) -> Io<'_> {
    Io {
        control,
        stdout: out,
        store: None,
        exiting: false,
    }
}

fn read_json(p: &std::path::Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

#[test]
fn a_signal_mid_measure_gives_an_interrupted_result_written_and_stored() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("run.json");
    let db = dir.path().join("store.db");
    let common = Common {
        json: Some(json.clone()),
        store: Some(db.display().to_string()),
        tags: vec!["who=test".into()],
        ..Common::default()
    };
    let (mut fake, measured) = Fake::new();
    fake.signal_midway = true;
    let mut out = Vec::new();
    let argv = vec!["latlab".to_string(), "fake".to_string()];
    execute_with(
        fake,
        &common,
        argv.clone(),
        io(&mut out, Control::default()),
    )
    .unwrap();
    assert!(measured.get());

    let run = read_json(&json);
    assert_eq!(run["interrupted"], true, "{run}");
    assert_eq!(run["kind"], "fake");
    assert_eq!(run["command_line"], serde_json::json!(argv));
    assert_eq!(run["parameters"]["fake"], true);
    assert!(run["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|w| w == "a warning through the sink"));

    let st = latlab_core::store::open(Some(&db.display().to_string())).unwrap();
    let kept = st.get(run["id"].as_str().unwrap()).unwrap();
    assert_eq!(kept.run["interrupted"], true);
    assert_eq!(kept.tags.get("who").map(String::as_str), Some("test"));

    let text = String::from_utf8(out).unwrap();
    assert!(
        text.contains("fake run ") && text.contains("interrupted"),
        "{text}"
    );
}

#[test]
fn a_closed_stdout_is_not_an_error() {
    let common = Common {
        no_store: true,
        ..Common::default()
    };
    let (fake, measured) = Fake::new();
    let mut out = ClosedPipe;
    execute_with(fake, &common, Vec::new(), io(&mut out, Control::default())).unwrap();
    assert!(measured.get());

    // JSON to a closed stdout too.
    let common = Common {
        json: Some("-".into()),
        no_store: true,
        ..Common::default()
    };
    let (fake, _) = Fake::new();
    execute_with(fake, &common, Vec::new(), io(&mut out, Control::default())).unwrap();
}

#[test]
fn a_store_that_fails_after_the_json_was_written_keeps_the_json() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("run.json");
    let common = Common {
        json: Some(json.clone()),
        tags: vec!["who=test".into()],
        ..Common::default()
    };
    let (fake, _) = Fake::new();
    let mut out = Vec::new();
    let r = execute_with(
        fake,
        &common,
        Vec::new(),
        Io {
            control: Control::default(),
            stdout: &mut out,
            store: Some(Box::new(BrokenStore(dir.path().join("unstored")))),
            exiting: false,
        },
    );
    let e = r.unwrap_err();
    assert!(e.to_string().contains("the store went away"), "{e}");
    let run = read_json(&json);
    assert_eq!(run["kind"], "fake");
    // The run the store refused is kept as a bundle the error names, with its tags.
    let kept = dir
        .path()
        .join("unstored")
        .join(format!("{}.json", run["id"].as_str().unwrap()));
    assert!(e.to_string().contains(&kept.display().to_string()), "{e}");
    let b: latlab_core::store::Bundle = serde_json::from_value(read_json(&kept)).unwrap();
    assert_eq!(b.runs.len(), 1);
    assert_eq!(b.runs[0].run["id"], run["id"]);
    assert_eq!(b.runs[0].tags.get("who").map(String::as_str), Some("test"));
    // The text was still shown.
    assert!(String::from_utf8(out).unwrap().contains("fake run "));
}

#[test]
fn a_json_path_in_a_missing_directory_fails_before_measuring() {
    let dir = tempfile::tempdir().unwrap();
    let common = Common {
        json: Some(dir.path().join("no/such/dir/run.json")),
        no_store: true,
        ..Common::default()
    };
    let (fake, measured) = Fake::new();
    let mut out = Vec::new();
    let r = execute_with(fake, &common, Vec::new(), io(&mut out, Control::default()));
    assert!(
        matches!(r, Err(Error::Usage(_)) | Err(Error::Io { .. })),
        "{r:?}"
    );
    assert!(
        !measured.get(),
        "measured although the JSON could not be written"
    );
    assert!(out.is_empty());
}

/// A process group that ignores nothing but would run for a minute: `sleep 60` in its own group.
fn stubborn_group() -> std::process::Child {
    use std::os::unix::process::CommandExt;
    std::process::Command::new("sleep")
        .arg("60")
        .process_group(0)
        .spawn()
        .unwrap()
}

/// Waits (bounded) for `c` to end; true when it did.
fn ended(c: &mut std::process::Child) -> bool {
    let t0 = std::time::Instant::now();
    while t0.elapsed() < Duration::from_secs(20) {
        if c.try_wait().unwrap().is_some() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let _ = c.kill();
    let _ = c.wait();
    false
}

#[test]
fn the_deadline_stops_a_load_that_would_not_stop() {
    let mut load = stubborn_group();
    let dog = watchdog::Watchdog::start(
        vec![load.id() as i32],
        Some(Duration::from_millis(10)),
        Control::default(),
    );
    assert!(ended(&mut load), "the watchdog left the load running");
    dog.finish();
}

#[test]
fn an_interrupt_stops_a_load_without_a_deadline() {
    let mut load = stubborn_group();
    let control = Control::default();
    let dog = watchdog::Watchdog::start(vec![load.id() as i32], None, control.clone());
    control.interrupted.store(true, Ordering::Relaxed);
    assert!(ended(&mut load), "the watchdog ignored the interrupt");
    dog.finish();
}
