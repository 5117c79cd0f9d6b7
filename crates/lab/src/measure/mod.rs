//! The measurements, one folder each, and the table of measurements: one row per measurement
//! (its folder's module, its argument type, one line of help, whether a plan may run it). The
//! row declares the module too, so adding a measurement is its folder plus one row here;
//! everything else about it (kind, facts, lowering, tracing, rendering) lives in its folder.

/// Declares each measurement's module and the table's row for it, in `latlab help`'s order.
macro_rules! measurements {
    ($( $module:ident => $args:ty, $about:expr, plannable: $plannable:expr; )*) => {
        $( pub mod $module; )*

        /// Every measurement, in the order `latlab help` lists them.
        pub static TABLE: &[crate::driver::entry::Entry] = &[
            $( crate::driver::entry::entry::<$args>(stringify!($module), $about, $plannable), )*
        ];
    };
}

measurements! {
    cyclic => cyclic::args::CyclicArgs,
        "Timer wake-up latency of periodic threads (cyclictest's measurement)",
        plannable: true;
    noise => noise::args::NoiseArgs,
        "Per-CPU noise: what steals each CPU from a spinning thread (oslat's measurement, seed 003)",
        plannable: true;
    ctxsw => ctxsw::args::CtxswArgs,
        "Context-switch cost by yield, pipe ring or futex, threads or processes (seed 000)",
        plannable: true;
    clocks => clocks::args::ClocksArgs,
        "The cost of time: every clock's cost per call, resolution, granularity and path (vDSO or kernel), under chosen clocksources; cross-CPU monotonicity",
        plannable: true;
    tcp => tcp::args::TcpArgs,
        "Loopback TCP throughput (netperf TCP_STREAM) or request/response (TCP_RR) (seed 001)",
        plannable: true;
    contend => contend::args::ContendArgs,
        "Per-CPU timing of a contended per-priority structure under mutex, spin, atomic or per-CPU synchronisation, in the seed's table (seed 002)",
        plannable: true;
    migrate => migrate::args::MigrateArgs,
        "RT push/pull stress and priority-order check (rt-migrate-test; seed 002)",
        plannable: true;
    ipc => ipc::args::IpcArgs,
        "Wake-up latency from one task sending to the other running, by POSIX message queue, POSIX or SysV semaphore, sigwait, signal, futex, eventfd or pipe (pmqtest, ptsematest, svsematest, sigwaittest, signaltest)",
        plannable: true;
    pi => pi::args::PiArgs,
        "Priority inversion, repeated: low holds a pthread mutex, high waits, medium spins on the same CPU; --protocol inherit|none|protect; exit 1 when inversion happened (pi_stress, pip_stress)",
        plannable: true;
    timerlat => timerlat::args::TimerlatArgs,
        "Timer latency as the kernel measures it (its timerlat tracer, rtla timerlat's source): per CPU the timer IRQ's and the thread's latency, every sample read and counted, late ones explained with the kernel's split",
        plannable: true;
    sched => sched::args::SchedArgs,
        "Scheduling latency of any task, from tracepoints: per thread, wake-up latency, preemption delay, wakers, and who ran instead of the worst (--pid, --tid, --comm, --cgroup, --all, or -- CMD; perf sched latency, runqlat)",
        plannable: true;
    load => load::args::LoadArgs,
        "Run a load that provokes latency, in the foreground: `latlab load hackbench` (one run, prints Time: like hackbench), `latlab load cpu:threads=2 -D 10s`; kept as a run of kind load with its achieved rate",
        plannable: true;
    monitor => monitor::args::MonitorArgs,
        "Monitor latency continuously: cyclic threads on chosen CPUs, a Prometheus/OpenMetrics endpoint, a snapshot run stored every few minutes (docs/monitoring.md)",
        plannable: false;
    qualify => qualify::args::QualifyArgs,
        "Qualify a machine for real-time work, for hours or days (rteval's job): cyclic threads on the measured CPUs, loads on the housekeeping CPUs, a checkpoint stored every 10 minutes so a kill loses at most one (--resume continues), system facts, and each --require judged on the intervals (exit 0/1/4), --junit and an HTML --report",
        plannable: false;
}
