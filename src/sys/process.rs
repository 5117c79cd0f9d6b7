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
pub unsafe fn die_with_parent(parent: libc::pid_t) {
    libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
    if libc::getppid() != parent {
        libc::_exit(0);
    }
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
    // SAFETY: libc call with no arguments.
    let parent = unsafe { libc::getpid() };
    // SAFETY: only async-signal-safe calls (sched_setaffinity, sched_setscheduler, prctl)
    // between fork and exec.
    unsafe {
        c.pre_exec(move || {
            if let Some(cpu) = cpu {
                let mut set: libc::cpu_set_t = std::mem::zeroed();
                libc::CPU_SET(cpu, &mut set);
                libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
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
/// has no shell syntax, else through `sh -c`. Same process group as the caller, SCHED_OTHER,
/// SIGKILL on parent death.
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
    // SAFETY: libc call with no arguments.
    let parent = unsafe { libc::getpid() };
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
