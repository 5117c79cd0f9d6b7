//! The `latlab` binary: parse, dispatch, map errors to exit codes (0 ok, 1 check failed,
//! 2 bad usage, 3 environment can't do it, 4 a gate undecided).

fn main() {
    // Before any thread starts (see sys::mem).
    latlab_core::sys::mem::one_malloc_arena();
    // Before any thread starts: a command that may mount tracefs or debugfs does it in a mount
    // namespace of its own, so nothing outside sees the mount come or go (trace::lifecycle).
    latlab_trace::lifecycle::isolate_mounts(std::env::args_os().skip(1));
    // Tests hold latlab here to send a signal before the handlers are in.
    if let Some(ms) = std::env::var("LATLAB_TEST_SIGNALS_DELAY_MS")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
    {
        std::thread::sleep(std::time::Duration::from_millis(ms));
    }
    // Signals first: a Ctrl-C in the first millisecond must end the run cleanly, not kill it.
    // A load worker keeps its own plain flags (see load::worker_main); an action worker
    // keeps the default dispositions (it is killed with its group).
    if std::env::args_os()
        .nth(1)
        .is_none_or(|a| a != "load-worker" && a != "action-worker")
    {
        latlab_lab::driver::signals::install();
    } else {
        // Held since start (sys::process): a worker keeps the default dispositions.
        latlab_core::sys::process::release_stop_signals();
        latlab_core::sys::process::release_hangup();
    }
    // File names need not be UTF-8: clap and ministat get the arguments as given; the text
    // form (recorded in results) has any store password redacted.
    let argv_os: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let argv: Vec<String> = latlab_core::store::redact_argv(
        &argv_os
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect::<Vec<_>>(),
    );
    // Run under the name `ministat` (a symlink), latlab is ministat.
    let invoked_as = std::path::Path::new(argv.first().map(String::as_str).unwrap_or(""))
        .file_name()
        .map(|n| n.to_string_lossy().into_owned());
    if invoked_as.as_deref() == Some("ministat") {
        latlab_lab::driver::signals::exit_on_first_signal();
        std::process::exit(latlab_analysis::ministat::main(&argv_os[1..]));
    }
    // `latlab compare --ministat ARGS` is `latlab ministat ARGS`.
    if argv.get(1).map(String::as_str) == Some("compare")
        && argv[2..].iter().any(|a| a == "--ministat")
    {
        let rest: Vec<std::ffi::OsString> = argv_os[2..]
            .iter()
            .filter(|a| *a != "--ministat")
            .cloned()
            .collect();
        latlab_lab::driver::signals::exit_on_first_signal();
        std::process::exit(latlab_analysis::ministat::main(&rest));
    }
    let parsed = match latlab::cli::parse(&argv_os) {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            // Help or version that could not be written (a full disk) is a failure as any
            // other output's; a reader that went away is not.
            let printed = e
                .print()
                .and_then(|()| std::io::Write::flush(&mut std::io::stdout()));
            if let Err(w) = printed {
                if code == 0 && w.kind() != std::io::ErrorKind::BrokenPipe {
                    latlab_core::note!("latlab: stdout: {w}");
                    std::process::exit(3);
                }
            }
            std::process::exit(code);
        }
    };
    match latlab::cli::commands::run(parsed, argv) {
        Ok(()) => {}
        // A reader that went away is not a failure: everything was saved before printing.
        Err(latlab_core::Error::Io { source, .. })
            if source.kind() == std::io::ErrorKind::BrokenPipe => {}
        // The measured command's own status: already visible, not latlab's failure.
        Err(latlab_core::Error::Passed(code)) => std::process::exit(code),
        Err(e) => {
            // Shown, not acted on: a level, path or name with control characters in it (a
            // NUL, an ANSI escape) is printed escaped.
            latlab_core::note!(
                "latlab: {}",
                latlab_core::output::printable(&latlab_core::output::bounded(&e.to_string()))
            );
            std::process::exit(e.exit_code());
        }
    }
}
