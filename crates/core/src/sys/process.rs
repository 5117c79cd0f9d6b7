//! Child processes latlab starts (disturbing commands, later loads): pinned, at SCHED_OTHER
//! whatever the parent runs at, in their own process group, and killed if latlab dies.

use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};

/// In a freshly forked child: die with the parent. Closes the race where the parent dies
/// between fork and prctl (the child would then never get the signal) by checking that the
/// parent is still the one that forked it. Async-signal-safe.
///
/// # Safety
/// Call only in a child between fork and exec (or in a forked child's body).
pub(crate) unsafe fn die_with_parent(parent: libc::pid_t) {
    libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
    if libc::getppid() != parent {
        libc::_exit(0);
    }
}

/// Names the calling thread `name` (its `comm`, cut to 15 bytes at a character boundary);
/// threads and processes it starts afterwards inherit the name.
pub fn set_comm(name: &str) {
    let mut end = name.len().min(15);
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    let mut buf = [0u8; 16];
    buf[..end].copy_from_slice(&name.as_bytes()[..end]);
    // SAFETY: PR_SET_NAME reads a NUL-terminated string of at most 16 bytes from `buf`.
    unsafe {
        libc::prctl(libc::PR_SET_NAME, buf.as_ptr());
    }
}

/// Makes `c` start at SCHED_OTHER (whatever the parent runs at) and die with this process
/// (SIGKILL on parent death, race-free).
pub fn die_with_us(c: &mut Command) {
    let parent = getpid();
    // SAFETY: only async-signal-safe calls (sched_setscheduler, prctl, getppid, _exit)
    // between fork and exec; no allocation, no unwinding.
    unsafe {
        c.pre_exec(move || {
            let p = libc::sched_param { sched_priority: 0 };
            libc::sched_setscheduler(0, libc::SCHED_OTHER, &p);
            die_with_parent(parent);
            Ok(())
        });
    }
}

/// Makes `c` start with its affinity set to `cpus` (inherited by its threads and children).
pub fn confine_command(
    c: &mut Command,
    cpus: impl IntoIterator<Item = usize>,
) -> std::io::Result<()> {
    let set = super::sched::cpu_set(cpus).ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "a CPU is beyond what cpu_set_t holds",
        )
    })?;
    // SAFETY: only sched_setaffinity (async-signal-safe) between fork and exec; the set was
    // built before the fork.
    unsafe {
        c.pre_exec(move || {
            if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    Ok(())
}

/// Starts `sh -c script`, pinned to `cpu` if given, at SCHED_OTHER, in a new process group,
/// with SIGKILL as its parent-death signal. Output goes to /dev/null.
pub fn spawn_shell(script: &str, cpu: Option<usize>) -> std::io::Result<Child> {
    let mut c = Command::new("/bin/sh");
    c.arg("-c")
        .arg(script)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    c.process_group(0);
    let parent = getpid();
    let set = match cpu {
        Some(cpu) => Some(super::sched::cpu_set([cpu]).ok_or_else(|| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("CPU {cpu} is beyond what cpu_set_t holds"),
            )
        })?),
        None => None,
    };
    // SAFETY: only async-signal-safe calls (sched_setaffinity, sched_setscheduler, prctl)
    // between fork and exec; the CPU set was built before the fork.
    unsafe {
        c.pre_exec(move || {
            if let Some(set) = &set {
                libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), set);
            }
            let p = libc::sched_param { sched_priority: 0 };
            libc::sched_setscheduler(0, libc::SCHED_OTHER, &p);
            die_with_parent(parent);
            Ok(())
        });
    }
    c.spawn()
}

/// Starts a command for a load: run directly (execvp, keeping the parent-death signal) when it
/// has no shell syntax, else through `sh -c`. In a process group of its own (so a stop kills
/// the command's children too), SCHED_OTHER, SIGKILL on parent death.
pub fn spawn_command(cmd: &str) -> std::io::Result<Child> {
    let shell = cmd.contains([
        '|', ';', '&', '$', '`', '(', ')', '<', '>', '*', '?', '"', '\'', '=',
    ]);
    let mut c = if shell {
        let mut c = Command::new("/bin/sh");
        c.arg("-c").arg(cmd);
        c
    } else {
        let mut words = cmd.split_whitespace();
        let mut c = Command::new(words.next().unwrap_or("true"));
        c.args(words);
        c
    };
    c.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    c.process_group(0);
    let parent = getpid();
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        c.pre_exec(move || {
            let p = libc::sched_param { sched_priority: 0 };
            libc::sched_setscheduler(0, libc::SCHED_OTHER, &p);
            die_with_parent(parent);
            Ok(())
        });
    }
    c.spawn()
}

/// Stops a child that leads its own process group, and everything in that group: SIGTERM to
/// the group, SIGKILL after `grace` to what is left, the child and the group's members this
/// process adopted (a subreaper's) reaped.
pub fn stop_group(child: &mut Child, grace: std::time::Duration) {
    let group = child.id() as i32;
    signal_group(group, libc::SIGTERM);
    let t0 = std::time::Instant::now();
    loop {
        // The leader reaped (it may have ended already), so an empty group reads as empty.
        let _ = child.try_wait();
        reap_group(group, std::time::Duration::ZERO);
        if !group_alive(group) || t0.elapsed() >= grace {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    kill_group(child);
    reap_group(group, grace);
}

/// Kills a child's whole process group and reaps the child.
pub fn kill_group(child: &mut Child) {
    // SAFETY: signalling a process group we created; harmless if it is already gone.
    unsafe {
        libc::kill(-(child.id() as libc::pid_t), libc::SIGKILL);
    }
    let _ = child.wait();
}

/// Finds `name` on PATH (or checks it directly when it contains a '/'); true if executable.
pub fn command_exists(name: &str) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let ok = |p: &std::path::Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if name.contains('/') {
        return ok(std::path::Path::new(name));
    }
    let builtins = [
        "true", "false", "echo", "sleep", ":", "exec", "cd", "test", "[",
    ];
    builtins.contains(&name)
        || std::env::var_os("PATH")
            .is_some_and(|path| std::env::split_paths(&path).any(|d| ok(&d.join(name))))
}

/// Asks each process group led by one of `pids` to stop (SIGTERM): loads print their report
/// and exit. Groups already gone are ignored.
pub fn terminate_groups(pids: &[i32]) {
    for &pid in pids {
        if pid > 0 {
            // SAFETY: signalling process groups we created; harmless if they are gone.
            unsafe {
                libc::kill(-pid, libc::SIGTERM);
            }
        }
    }
}

/// Makes this process the reaper of its orphaned descendants (`PR_SET_CHILD_SUBREAPER`): a
/// load's tasks whose parent died before them become latlab's children, for
/// [`reap_group`], instead of zombies left to init. Idempotent; refused only by old kernels.
pub fn become_subreaper() {
    // SAFETY: prctl with integer arguments; affects only this process's reaping.
    unsafe {
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    }
}

/// Reaps this process's children in process group `pgid` (a stopped load's tasks, already
/// killed) until none is left or `limit` passes; never waits on any other child.
pub fn reap_group(pgid: i32, limit: std::time::Duration) {
    if pgid <= 0 {
        return;
    }
    let t0 = std::time::Instant::now();
    loop {
        let mut status = 0;
        // SAFETY: waitpid on a negative pgid reaps only children of that group; status is a
        // valid int.
        let r = unsafe { libc::waitpid(-pgid, &mut status, libc::WNOHANG) };
        if r > 0 {
            continue;
        }
        if r < 0 || t0.elapsed() >= limit {
            return; // ECHILD: none left in the group
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// Whether any process is left in process group `pgid` (positive; its leader may be gone).
pub(crate) fn group_alive(pgid: i32) -> bool {
    // SAFETY: signal 0 to a (positive) group only checks that it has members.
    pgid > 0 && unsafe { libc::kill(-pgid, 0) } == 0
}

/// Sends `sig` to the process group led by `pid` (if positive).
pub fn signal_group(pid: i32, sig: libc::c_int) {
    if pid > 0 {
        // SAFETY: signalling a process group we created; harmless if it is gone.
        unsafe {
            libc::kill(-pid, sig);
        }
    }
}

/// Sends `sig` to process `pid` (if positive).
pub fn signal(pid: i32, sig: libc::c_int) {
    if pid > 0 {
        // SAFETY: signalling a process of ours; harmless if it is gone.
        unsafe {
            libc::kill(pid, sig);
        }
    }
}

/// Sends `sig` to process `pid` (0: only checks that it exists and may be signalled) and says
/// what kill(2) answered. `pid` must be positive (never a group, never every process).
pub fn signal_checked(pid: i32, sig: libc::c_int) -> std::io::Result<()> {
    if pid <= 0 {
        return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
    }
    // SAFETY: kill with a positive pid signals that one process; no memory is involved.
    if unsafe { libc::kill(pid, sig) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// True when this process leads its own process group (as a worker latlab started does).
pub fn leads_own_group() -> bool {
    // SAFETY: getpgrp and getpid take no arguments and cannot fail.
    unsafe { libc::getpgrp() == libc::getpid() }
}

/// This process's parent's id.
pub fn getppid() -> i32 {
    // SAFETY: getppid takes no arguments and cannot fail.
    unsafe { libc::getppid() }
}

/// This process's id.
pub fn getpid() -> i32 {
    std::process::id() as i32
}

/// The inode of the initial PID namespace (the kernel's `PROC_PID_INIT_INO`).
const INIT_PID_NS: u64 = 0xEFFF_FFFC;

/// This process's PID namespace when it is not the machine's initial one (a container's):
/// its inode, from `/proc/self/ns/pid` (`pid:[N]`). None in the initial namespace, or when
/// /proc cannot tell.
pub fn other_pid_namespace() -> Option<u64> {
    let link = std::fs::read_link("/proc/self/ns/pid").ok()?;
    let ino: u64 = link
        .to_str()?
        .strip_prefix("pid:[")?
        .strip_suffix(']')?
        .parse()
        .ok()?;
    (ino != INIT_PID_NS).then_some(ino)
}

/// The process group of the command a load worker runs now (0: none), for the parent-death
/// handler to kill.
static TRACKED_GROUP: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

/// Records the process group (its leader's pid, 0 for none) that must die with this process.
pub fn track_group(pid: i32) {
    TRACKED_GROUP.store(pid, std::sync::atomic::Ordering::SeqCst);
}

extern "C" fn kill_own_group(_: libc::c_int) {
    let g = TRACKED_GROUP.load(std::sync::atomic::Ordering::SeqCst);
    // SAFETY: kill is async-signal-safe (so is the atomic load above); -g is the tracked
    // command's group, 0 our own group (the load worker leads it), ourselves included.
    unsafe {
        if g > 0 {
            libc::kill(-g, libc::SIGKILL);
        }
        libc::kill(0, libc::SIGKILL);
    }
}

/// For a process that leads its own group (a load worker): when `parent` dies, kill the whole
/// group, grandchildren included (a parent-death signal alone reaches only direct children, so
/// `exec:sleep 30; true` would leave `sleep` behind). If `parent` is already gone, do it now.
pub fn kill_group_when_parent_dies(parent: i32) {
    // SAFETY: installs an async-signal-safe handler for SIGUSR1 (kill only), then asks the
    // kernel for SIGUSR1 on parent death; the getppid check closes the race with a parent
    // that died before the prctl.
    unsafe {
        libc::signal(
            libc::SIGUSR1,
            kill_own_group as extern "C" fn(libc::c_int) as libc::sighandler_t,
        );
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGUSR1);
        if libc::getppid() != parent {
            libc::kill(0, libc::SIGKILL);
        }
    }
}

/// Holds SIGINT, SIGTERM and SIGHUP back from the moment the `latlab` binary is loaded (an
/// `.init_array` entry: before Rust's runtime starts and `main` installs the handlers), so a
/// Ctrl-C in the first millisecond waits, pending, for the handlers instead of killing the
/// process with nothing saved; [`release_stop_signals`] lets it through. Only a process whose
/// `argv[0]` is named `latlab`: test harnesses link the same library and must stay killable.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
extern "C" fn hold_stop_signals_at_start(
    argc: libc::c_int,
    argv: *const *const libc::c_char,
    _envp: *const *const libc::c_char,
) {
    note_hangup_disposition();
    if argc < 1 || argv.is_null() {
        return;
    }
    // SAFETY: glibc passes the process's argc/argv to `.init_array` functions; argv[0] is a
    // NUL-terminated string when argc >= 1.
    let name = unsafe { std::ffi::CStr::from_ptr(*argv) }.to_bytes();
    if name.rsplit(|&b| b == b'/').next() != Some(b"latlab".as_slice()) {
        return;
    }
    stop_signals(libc::SIG_BLOCK);
    hangup(libc::SIG_BLOCK);
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[used]
#[link_section = ".init_array"]
static HOLD_STOP_SIGNALS: extern "C" fn(
    libc::c_int,
    *const *const libc::c_char,
    *const *const libc::c_char,
) = hold_stop_signals_at_start;

/// Whether SIGHUP was ignored when latlab started (`nohup latlab ...`, `trap '' HUP`): read
/// before anything installs a handler.
static HANGUP_IGNORED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

fn note_hangup_disposition() {
    // SAFETY: querying only (a null new action); `old` is plain data the kernel fills.
    let ignored = unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        libc::sigaction(libc::SIGHUP, std::ptr::null(), &mut old) == 0
            && old.sa_sigaction == libc::SIG_IGN
    };
    HANGUP_IGNORED.store(ignored, std::sync::atomic::Ordering::Relaxed);
}

/// Whether SIGHUP was ignored when latlab started: then it stays ignored (a hang-up ends
/// nothing, the monitor prints no status on it), as `nohup` asks of every program.
pub fn hangup_ignored() -> bool {
    HANGUP_IGNORED.load(std::sync::atomic::Ordering::Relaxed)
}

/// Lets SIGINT and SIGTERM through on the calling thread (one held since start is delivered
/// now): `main` calls it once the handlers are in, or at once where it installs none.
pub fn release_stop_signals() {
    stop_signals(libc::SIG_UNBLOCK);
}

/// Lets SIGHUP through on the calling thread. It is held from the start as SIGINT and SIGTERM
/// are, but released only once its disposition is decided: a measurement's handler (it ends
/// the run as SIGTERM does), the monitor's (its status), or the default (a command with
/// nothing to save); a hang-up in between waits, pending, instead of ending latlab with a
/// setting changed or a result unsaved.
pub fn release_hangup() {
    hangup(libc::SIG_UNBLOCK);
}

fn hangup(how: libc::c_int) {
    mask(how, &[libc::SIGHUP]);
}

fn stop_signals(how: libc::c_int) {
    mask(how, &[libc::SIGINT, libc::SIGTERM]);
}

/// Blocks or unblocks (`how`) `sigs` on the calling thread.
fn mask(how: libc::c_int, sigs: &[libc::c_int]) {
    // SAFETY: sigset_t is plain data initialised by sigemptyset; pthread_sigmask only changes
    // the calling thread's mask.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for &s in sigs {
            libc::sigaddset(&mut set, s);
        }
        libc::pthread_sigmask(how, &set, std::ptr::null_mut());
    }
}

/// Runs `f` with `sigs` blocked on the calling thread, then unblocks them: a signal arriving
/// meanwhile stays pending and is delivered after `f`, never to a half-installed handler.
pub fn blocking_signals<T>(sigs: &[libc::c_int], f: impl FnOnce() -> T) -> T {
    // SAFETY: sigset_t is plain data initialised by sigemptyset; pthread_sigmask only changes
    // the calling thread's mask, and the old mask is put back below.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for &s in sigs {
            libc::sigaddset(&mut set, s);
        }
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut old);
        let r = f();
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
        r
    }
}

/// Sends `sig` to the thread behind `handle` (to interrupt a sleep with EINTR).
pub(crate) fn interrupt_thread<T>(handle: &std::thread::JoinHandle<T>, sig: libc::c_int) {
    use std::os::unix::thread::JoinHandleExt;
    // SAFETY: the handle is not yet joined, so its pthread_t names a live or zombie thread
    // whose id is still valid.
    unsafe {
        libc::pthread_kill(handle.as_pthread_t(), sig);
    }
}

/// Waits for child `pid` to end; its exit code when it exited normally.
pub fn wait_exit_code(pid: i32) -> Option<i32> {
    let mut status = 0;
    // SAFETY: waiting for our own child with a valid status pointer.
    let r = unsafe { libc::waitpid(pid, &mut status, 0) };
    (r > 0 && libc::WIFEXITED(status)).then(|| libc::WEXITSTATUS(status))
}

/// Closes every descriptor of this process open on a file under `dir` (an instance's buffer
/// files, on the way out: an instance with an open reader cannot be removed). Only for the
/// exit path: a thread still reading one sees its descriptor gone.
pub fn close_fds_under(dir: &std::path::Path) {
    let Ok(rd) = std::fs::read_dir("/proc/self/fd") else {
        return;
    };
    let fds: Vec<i32> = rd
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let fd: i32 = e.file_name().to_str()?.parse().ok()?;
            let target = std::fs::read_link(e.path()).ok()?;
            target.starts_with(dir).then_some(fd)
        })
        .collect();
    for fd in fds {
        // SAFETY: closing a descriptor this process owns; the process is ending.
        unsafe {
            libc::close(fd);
        }
    }
}
