//! `TestCommand`: the latlab binary under test, pointed at this process's scratch store and
//! journal, run with a bounded wait; `Output` with its exit-code assertions (which show the
//! command, stdout and stderr when they fail); `Running` for a spawned one (signals, threads,
//! a bounded end, killed if the test fails first).

use super::proc::has_thread;
use super::scratch;
use std::ffi::OsStr;
use std::io::{Read, Write};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long a command may run before the test fails (and the command is killed), unless
/// `TestCommand::limit` says otherwise: far above any test's run, so only a hang reaches it.
const DEFAULT_LIMIT: Duration = Duration::from_secs(300);

/// How long a spawned latlab may take to start a thread or install a handler.
const START_LIMIT: Duration = Duration::from_secs(60);

/// The latlab binary under test, storing into the scratch store and journaling into the
/// scratch journal of this test process (never the user's own).
pub fn latlab() -> TestCommand {
    TestCommand::wrapping(Command::new(LATLAB))
}

/// The binary under test.
pub const LATLAB: &str = env!("CARGO_BIN_EXE_latlab");

/// A command to run once, as a builder (the shape of `std::process::Command`'s).
pub struct TestCommand {
    cmd: Command,
    stdin: Option<Vec<u8>>,
    limit: Duration,
}

impl TestCommand {
    /// `cmd` run as the tests run latlab (scratch store and journal, bounded wait, exit-code
    /// assertions): `latlab()` itself, or a program that execs latlab after setting something
    /// up (a shell that moves itself into a cgroup first).
    pub fn wrapping(mut cmd: Command) -> TestCommand {
        cmd.env("LATLAB_STORE", super::test_store());
        cmd.env("LATLAB_JOURNAL", scratch().join("restore.json"));
        TestCommand {
            cmd,
            stdin: None,
            limit: DEFAULT_LIMIT,
        }
    }

    /// Adds one argument.
    pub fn arg(&mut self, a: impl AsRef<OsStr>) -> &mut Self {
        self.cmd.arg(a);
        self
    }

    /// Adds arguments.
    pub fn args<I, S>(&mut self, args: I) -> &mut Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.cmd.args(args);
        self
    }

    /// Adds the whitespace-separated words of `line` as arguments (none may hold a space).
    pub fn words(&mut self, line: &str) -> &mut Self {
        self.cmd.args(line.split_whitespace());
        self
    }

    /// Sets an environment variable.
    pub fn env(&mut self, k: impl AsRef<OsStr>, v: impl AsRef<OsStr>) -> &mut Self {
        self.cmd.env(k, v);
        self
    }

    /// Sets environment variables.
    pub fn envs<I, K, V>(&mut self, vars: I) -> &mut Self
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<OsStr>,
        V: AsRef<OsStr>,
    {
        self.cmd.envs(vars);
        self
    }

    /// Removes an environment variable.
    pub fn env_remove(&mut self, k: impl AsRef<OsStr>) -> &mut Self {
        self.cmd.env_remove(k);
        self
    }

    /// Journals into `path` (`LATLAB_JOURNAL`) instead of the process-wide scratch journal.
    pub fn journal(&mut self, path: impl AsRef<Path>) -> &mut Self {
        self.cmd.env("LATLAB_JOURNAL", path.as_ref());
        self
    }

    /// Runs in `dir`.
    pub fn current_dir(&mut self, dir: impl AsRef<Path>) -> &mut Self {
        self.cmd.current_dir(dir);
        self
    }

    /// Feeds `input` on stdin, then closes it (without it stdin is /dev/null).
    pub fn stdin(&mut self, input: impl Into<Vec<u8>>) -> &mut Self {
        self.stdin = Some(input.into());
        self
    }

    /// Fails the test (killing the command) if the command runs longer than `limit`.
    pub fn limit(&mut self, limit: Duration) -> &mut Self {
        self.limit = limit;
        self
    }

    /// The underlying command, for what this builder does not offer (credentials, rlimits).
    pub fn command(&mut self) -> &mut Command {
        &mut self.cmd
    }

    /// The command line, for messages.
    fn shown(&self) -> String {
        let program = Path::new(self.cmd.get_program())
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let args: Vec<_> = self.cmd.get_args().map(OsStr::to_string_lossy).collect();
        format!("{program} {}", args.join(" "))
    }

    /// Runs the command to its end (within the limit) and returns what it wrote.
    pub fn output(&mut self) -> Output {
        let limit = self.limit;
        self.spawn().end_within(limit)
    }

    /// Runs the command and asserts it exited 0.
    pub fn assert_ok(&mut self) -> Output {
        self.assert_exit(0)
    }

    /// Runs the command and asserts its exit code.
    pub fn assert_exit(&mut self, code: i32) -> Output {
        let out = self.output();
        out.assert_exit(code);
        out
    }

    /// Runs the command and asserts it exited `code` with a message that names `want` on
    /// stderr, and that nothing panicked.
    pub fn assert_refused(&mut self, code: i32, want: &str) -> Output {
        let out = self.assert_exit(code);
        out.assert_refused_naming(want);
        assert!(!out.stderr.contains("panicked"), "{out}");
        out
    }

    /// Starts the command with stdout and stderr piped and stdin closed (or fed, with
    /// `stdin`); the test then signals it, waits for its threads and ends it within a bound.
    pub fn spawn(&mut self) -> Running {
        self.spawn_with(Stdio::piped(), Stdio::piped())
    }

    /// Starts the command with the given stdout and stderr.
    pub fn spawn_with(&mut self, stdout: Stdio, stderr: Stdio) -> Running {
        let stdin = match self.stdin {
            Some(_) => Stdio::piped(),
            None => Stdio::null(),
        };
        let mut running = self.start(stdin, stdout, stderr);
        if let (Some(mut w), Some(input)) = (running.child().stdin.take(), self.stdin.clone()) {
            // A command that exits without reading all of it closes the pipe: not an error.
            std::thread::spawn(move || drop(w.write_all(&input)));
        }
        running
    }

    /// Starts the command with stdin as a pipe that stays open (input that never ends), stdout
    /// and stderr piped.
    pub fn spawn_with_open_stdin(&mut self) -> Running {
        self.start(Stdio::piped(), Stdio::piped(), Stdio::piped())
    }

    fn start(&mut self, stdin: Stdio, stdout: Stdio, stderr: Stdio) -> Running {
        let what = self.shown();
        self.cmd.stdin(stdin).stdout(stdout).stderr(stderr);
        let child = self
            .cmd
            .spawn()
            .unwrap_or_else(|e| panic!("{what}: cannot start: {e}"));
        Running::new(child, what)
    }
}

/// What a finished command wrote, and how it ended.
pub struct Output {
    /// How it ended.
    pub status: ExitStatus,
    /// Its stdout, as text (invalid UTF-8 replaced).
    pub stdout: String,
    /// Its stderr, as text.
    pub stderr: String,
    /// Its stdout as written.
    pub stdout_bytes: Vec<u8>,
    /// Its stderr as written.
    pub stderr_bytes: Vec<u8>,
    /// The command line.
    pub what: String,
}

impl Output {
    fn new(what: String, out: std::process::Output) -> Output {
        Output {
            status: out.status,
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            stdout_bytes: out.stdout,
            stderr_bytes: out.stderr,
            what,
        }
    }

    /// The exit code (None after a signal).
    pub fn code(&self) -> Option<i32> {
        self.status.code()
    }

    /// Asserts the exit code, showing the command, stdout and stderr when it differs.
    pub fn assert_exit(&self, code: i32) -> &Self {
        assert_eq!(self.code(), Some(code), "{self}");
        self
    }

    /// Asserts the command exited 0.
    pub fn assert_ok(&self) -> &Self {
        self.assert_exit(0)
    }

    /// Asserts stderr names `want` too.
    pub fn assert_refused_naming(&self, want: &str) -> &Self {
        assert!(
            self.stderr.contains(want),
            "{}: stderr does not name {want}: {}",
            self.what,
            self.stderr
        );
        self
    }

    /// stdout and stderr together, for searching what either said.
    pub fn both(&self) -> String {
        format!("{}{}", self.stdout, self.stderr)
    }

    /// The id of the run it stored (from its "... stored in ..." line on stderr).
    pub fn stored_id(&self) -> String {
        let line = self
            .stderr
            .lines()
            .find(|l| l.contains(" stored in "))
            .unwrap_or_else(|| panic!("no 'stored in' line: {self}"));
        line.split_whitespace().nth(2).unwrap().to_string()
    }

    /// stdout parsed as one JSON document.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("{}: stdout is not JSON ({e}): {}", self.what, self.stdout))
    }
}

impl std::fmt::Display for Output {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} ended with {}\n--- stdout\n{}\n--- stderr\n{}",
            self.what, self.status, self.stdout, self.stderr
        )
    }
}

/// A spawned command. Dropped while it still runs (a failed assertion), it is killed and
/// reaped, so a failing test leaves nothing behind.
pub struct Running {
    child: Option<Child>,
    what: String,
    /// What it wrote to stdout and stderr so far, once waiting began (readers drain the
    /// pipes, so a full pipe never blocks the command while the test waits).
    read: Option<Readers>,
}

/// What a reader has read so far.
type Sink = Arc<Mutex<Vec<u8>>>;

struct Readers {
    out: Sink,
    err: Sink,
    threads: Vec<std::thread::JoinHandle<()>>,
}

/// Reads `pipe` to its end into `sink`, on a thread of its own.
fn drain(mut pipe: impl Read + Send + 'static, sink: Sink) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let mut buf = [0u8; 8192];
        loop {
            match pipe.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => sink.lock().unwrap().extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
    })
}

impl Running {
    /// Wraps a child started elsewhere (with its pipes as the caller set them).
    pub fn new(child: Child, what: impl Into<String>) -> Running {
        Running {
            child: Some(child),
            what: what.into(),
            read: None,
        }
    }

    /// Its process id.
    pub fn id(&self) -> u32 {
        self.child.as_ref().unwrap().id()
    }

    /// The child itself (to take a pipe before waiting; `try_wait`).
    pub fn child(&mut self) -> &mut Child {
        self.child.as_mut().unwrap()
    }

    /// Sends `sig`.
    pub fn signal(&self, sig: i32) -> &Self {
        // SAFETY: signalling our own child, not yet reaped (so its pid is still ours).
        unsafe { libc::kill(self.id() as i32, sig) };
        self
    }

    /// Kills it (SIGKILL) and reaps it; what it wrote is dropped.
    pub fn kill(mut self) {
        let mut c = self.child.take().unwrap();
        let _ = c.kill();
        let _ = c.wait();
    }

    /// Waits (30 s at most) until `ready` holds, failing with `what` (and what the command
    /// wrote) if it does not or if the command ends first.
    pub fn wait_until(&mut self, what: &str, ready: impl Fn(u32) -> bool) -> &mut Self {
        self.wait_until_every(Duration::from_millis(2), what, ready)
    }

    /// As `wait_until`, looking every `every` (for a test that must act the moment it holds).
    pub fn wait_until_every(
        &mut self,
        every: Duration,
        what: &str,
        ready: impl Fn(u32) -> bool,
    ) -> &mut Self {
        self.start_reading();
        let t0 = Instant::now();
        let pid = self.id();
        while !ready(pid) {
            if let Ok(Some(_)) = self.child().try_wait() {
                let out = self.collect(true);
                panic!("ended before {what}: {out}");
            }
            if t0.elapsed() > START_LIMIT {
                let out = self.end_now();
                panic!("not {what} after {START_LIMIT:?}: {out}");
            }
            std::thread::sleep(every);
        }
        self
    }

    /// Waits until it runs its thread `name` (threads are named `latlab-<series>`).
    pub fn wait_for_thread(&mut self, name: &str) -> &mut Self {
        self.wait_until(&format!("running thread {name}"), |pid| {
            has_thread(pid, name)
        })
    }

    /// Waits for it to end (within the default limit) and returns what it wrote.
    pub fn finish(self) -> Output {
        self.end_within(DEFAULT_LIMIT)
    }

    /// Waits for it to end within `limit`; kills it and fails the test if it does not.
    pub fn end_within(mut self, limit: Duration) -> Output {
        self.start_reading();
        let t0 = Instant::now();
        let mut pause = Duration::from_millis(1);
        loop {
            if let Ok(Some(_)) = self.child().try_wait() {
                return self.collect(true);
            }
            if t0.elapsed() > limit {
                let out = self.end_now();
                panic!("still running {limit:?} after it was waited for: {out}");
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(20));
        }
    }

    /// Drains whichever of stdout and stderr are pipes, from now on.
    fn start_reading(&mut self) {
        if self.read.is_some() {
            return;
        }
        let (out, err): (Sink, Sink) = (Arc::default(), Arc::default());
        let child = self.child.as_mut().unwrap();
        let mut threads = Vec::new();
        if let Some(pipe) = child.stdout.take() {
            threads.push(drain(pipe, Arc::clone(&out)));
        }
        if let Some(pipe) = child.stderr.take() {
            threads.push(drain(pipe, Arc::clone(&err)));
        }
        self.read = Some(Readers { out, err, threads });
    }

    /// Kills it and returns what it wrote so far (for a message).
    fn end_now(&mut self) -> Output {
        let _ = self.child().kill();
        self.collect(false)
    }

    /// Reaps it and returns what it wrote. With `all`, waits for the end of both streams (as
    /// `wait_with_output` does: a descendant still holding them holds the test); without, gives
    /// the readers two seconds.
    fn collect(&mut self, all: bool) -> Output {
        self.start_reading();
        let status = self.child.take().unwrap().wait().unwrap();
        let r = self.read.take().unwrap();
        let t0 = Instant::now();
        for t in r.threads {
            while !all && !t.is_finished() && t0.elapsed() < Duration::from_secs(2) {
                std::thread::sleep(Duration::from_millis(10));
            }
            if all || t.is_finished() {
                t.join().unwrap();
            }
        }
        let take = |b: &Sink| std::mem::take(&mut *b.lock().unwrap());
        Output::new(
            std::mem::take(&mut self.what),
            std::process::Output {
                status,
                stdout: take(&r.out),
                stderr: take(&r.err),
            },
        )
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}
