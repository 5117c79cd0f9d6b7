//! The one place latlab routes SIGINT and SIGTERM: the first sets the run's stop and interrupt
//! flags (so every measurement ends within a second and saves what it collected), a second one
//! a moment later ends latlab at once. `main` installs the handlers before anything else, so a
//! signal in the first millisecond is never lost; everything else asks for the flags here.

use latlab_core::config::Policy;
use latlab_core::rt::Control;
use latlab_core::sys;
use std::sync::atomic::{AtomicBool, Ordering};

/// A second SIGINT/SIGTERM sooner than this after the first is the same request delivered
/// twice (to the process and to its group), not a second Ctrl-C.
const SECOND_SIGNAL_AFTER: std::time::Duration = std::time::Duration::from_millis(500);

/// Whether a second signal ends the process at once.
static EXIT_ON_SECOND_SIGNAL: AtomicBool = AtomicBool::new(true);

/// Whether the first signal ends the process (set by `exit_on_first_signal`).
static EXIT_ON_FIRST_SIGNAL: AtomicBool = AtomicBool::new(false);

/// The signal thread's id once it runs (0 before), and whether it must stay SCHED_OTHER (a
/// command that measures nothing: a FIFO 99 thread of `latlab compare` would be real-time
/// company to a measurement running beside it).
static SIGNAL_TID: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);
static SIGNAL_THREAD_NORMAL: AtomicBool = AtomicBool::new(false);

/// The process's one set of flags, with SIGINT and SIGTERM routed to them. The first call
/// installs the handlers (main does it before anything else); a second SIGINT/SIGTERM ends the
/// process at once (exit 128 + the signal: 130 for SIGINT), after the registered exit hooks (`rt::at_exit`).
pub fn control() -> Control {
    static GLOBAL: std::sync::OnceLock<Control> = std::sync::OnceLock::new();
    GLOBAL
        .get_or_init(|| {
            let c = Control::default();
            // Blocked while the handlers go in: a signal in between waits for all of them.
            sys::process::blocking_signals(&[libc::SIGINT, libc::SIGTERM], || register(&c));
            c
        })
        .clone()
}

/// The signal thread's iterator, for [`stop_on_hangup`] to add SIGHUP to it.
static SIGNALS: std::sync::OnceLock<signal_hook::iterator::Handle> = std::sync::OnceLock::new();

/// Makes SIGHUP set the stop and interrupt flags as SIGTERM does (idempotent), for
/// measurements: without it a hang-up ends latlab before it saves or restores anything.
pub fn stop_on_hangup() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // Under `nohup`, a hang-up stays ignored.
        if sys::process::hangup_ignored() {
            return;
        }
        let c = control();
        let _ = signal_hook::flag::register(libc::SIGHUP, c.interrupted.clone());
        let _ = signal_hook::flag::register(libc::SIGHUP, c.stop.clone());
        let _ = signal_hook::flag::register_usize(
            libc::SIGHUP,
            c.signal.clone(),
            libc::SIGHUP as usize,
        );
        // It counts as a first signal (a second Ctrl-C or SIGTERM after it ends latlab at
        // once, as after SIGINT), and a second hang-up as a second.
        if let Some(h) = SIGNALS.get() {
            let _ = h.add_signal(libc::SIGHUP);
        }
    });
    // Held since start (sys::process): a hang-up that came meanwhile is delivered now.
    sys::process::release_hangup();
}

/// Installs the handlers (idempotent), then lets through a SIGINT or SIGTERM held since the
/// process started (see `sys::process::release_stop_signals`): `main` calls it first thing.
pub fn install() {
    let _ = control();
    sys::process::release_stop_signals();
}

fn register(c: &Control) {
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // The flags are set in the handler itself, so a measuring thread sees them even when
        // no other thread can run on its CPU.
        let _ = signal_hook::flag::register(sig, c.interrupted.clone());
        let _ = signal_hook::flag::register(sig, c.stop.clone());
        let _ = signal_hook::flag::register_usize(sig, c.signal.clone(), sig as usize);
    }
    // A second signal ends latlab at once (exit 128 + the signal), but only one that comes a moment after
    // the first: `timeout -s INT` and a terminal both send a signal to the process and its
    // group, so one request can arrive twice within milliseconds, and it must not throw away
    // the result of the first.
    if let Ok(mut signals) = signal_hook::iterator::Signals::new([libc::SIGINT, libc::SIGTERM]) {
        let _ = SIGNALS.set(signals.handle());
        let _ = std::thread::Builder::new()
            .name("latlab-signals".into())
            .stack_size(latlab_core::sys::mem::HELPER_STACK)
            .spawn(move || {
                // Best effort: above the measuring threads, so a second Ctrl-C is seen even
                // when they hold every CPU (refused without privilege; the first signal still
                // works through the flags).
                SIGNAL_TID.store(sys::sched::gettid(), Ordering::SeqCst);
                if !SIGNAL_THREAD_NORMAL.load(Ordering::SeqCst) {
                    let _ = sys::sched::set_policy(Policy::Fifo, 99);
                }
                let mut first: Option<std::time::Instant> = None;
                for sig in signals.forever() {
                    // The handler has set the flags: control threads waiting on a bell see them now.
                    latlab_core::rt::ring_signal_bells();
                    if EXIT_ON_FIRST_SIGNAL.load(Ordering::SeqCst) {
                        std::process::exit(128 + sig);
                    }
                    match first {
                        None => {
                            first = Some(std::time::Instant::now());
                            if EXIT_ON_SECOND_SIGNAL.load(Ordering::Relaxed) {
                                say_while_saving();
                            }
                        }
                        Some(t) if t.elapsed() >= SECOND_SIGNAL_AFTER => {
                            if EXIT_ON_SECOND_SIGNAL.load(Ordering::Relaxed) {
                                latlab_core::note!("latlab: second interrupt: ending at once");
                                latlab_core::rt::run_exit_hooks();
                                std::process::exit(128 + sig);
                            }
                            // A plan puts its settings back first; what it waits for is cut.
                            latlab_core::rt::note_second_signal();
                        }
                        Some(_) => {}
                    }
                }
            });
    }
}

/// How long the end of an interrupted run may take before latlab says what it is doing.
const SAVING_PATIENCE: std::time::Duration = std::time::Duration::from_millis(500);

/// After a first interrupt: if latlab is still finishing [`SAVING_PATIENCE`] later (a traced
/// run attributing what it collected under load), says so, and that a second Ctrl-C quits
/// without saving: a user who sees nothing happen presses it again and loses the run.
fn say_while_saving() {
    note_unless_done(SAVING_PATIENCE, || {
        if super::run_pending() {
            // The run is made and waits for the store: a second signal keeps it in a file.
            "latlab: interrupted: the run waits for the store (a second Ctrl-C or SIGTERM quits at \
             once and keeps it in a file)"
        } else {
            "latlab: interrupted: saving what was collected (a second Ctrl-C or SIGTERM quits at \
             once and saves nothing)"
        }
    });
}

/// Says `text()` (worded when it is said) on stderr `after` from now unless the flag returned is set first (a wait that
/// ended), from a helper thread at SCHED_OTHER (it only sleeps).
pub(super) fn note_unless_done(
    after: std::time::Duration,
    text: fn() -> &'static str,
) -> std::sync::Arc<AtomicBool> {
    let done = std::sync::Arc::new(AtomicBool::new(false));
    let d = done.clone();
    let _ = std::thread::Builder::new()
        .name("latlab-saving".into())
        .stack_size(latlab_core::sys::mem::HELPER_STACK)
        .spawn(move || {
            let _ = sys::sched::set_policy(Policy::Other, 0);
            std::thread::sleep(after);
            if !d.load(Ordering::Acquire) {
                latlab_core::note!("{}", text());
            }
        });
    done
}

/// Makes the first SIGINT/SIGTERM end the process (exit 128 + the signal), for commands that
/// measure nothing, change nothing and have nothing to save (compare, ministat, gate, runs,
/// report ...): Ctrl-C must stop them at once, even while they wait on a pipe.
pub fn exit_on_first_signal() {
    EXIT_ON_FIRST_SIGNAL.store(true, Ordering::SeqCst);
    // Nothing to save: a hang-up ends it by default (held since start until now).
    sys::process::release_hangup();
    // Nothing of its own to outrank: the signal thread goes back to (or stays) SCHED_OTHER.
    SIGNAL_THREAD_NORMAL.store(true, Ordering::SeqCst);
    let tid = SIGNAL_TID.load(Ordering::SeqCst);
    if tid != 0 {
        let _ = sys::sched::set_thread_policy(tid, libc::SCHED_OTHER, 0);
    }
    // A signal that came before this call was only recorded: honour it now.
    let c = control();
    if c.was_interrupted() {
        std::process::exit(c.signal_exit_code());
    }
}

/// Undoes `exit_on_first_signal` for the rest of a command that now has work to finish in
/// order (a bundle import stops between two runs and says how far it got).
pub fn exit_on_first_signal_off() {
    EXIT_ON_FIRST_SIGNAL.store(false, Ordering::SeqCst);
}

/// Keeps the process alive on a second signal (for `latlab run`, which must put its settings
/// back whatever happens; its measurement child still ends at once).
pub fn survive_second_signal() {
    EXIT_ON_SECOND_SIGNAL.store(false, Ordering::Relaxed);
}
