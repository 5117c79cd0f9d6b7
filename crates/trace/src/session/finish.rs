//! The end of a session: tracing stopped, the spikes left attributed and named, and the
//! report completed with the run's counts and the warnings of every part (counters,
//! tampering, saved files, `--on-threshold` actions).

use super::*;
use latlab_core::result::trace::CpuCounts;

impl Tracer {
    /// Stops tracing (after the measuring threads ended), attributes what is left, removes
    /// the instance and returns the report.
    pub fn finish(mut self) -> TraceReport {
        delay_for_tests();
        // Read before latlab turns tracing off itself.
        self.tamper.check(mono_now());
        self.rec.stop();
        // The last steal reading is taken when the last spikes are checked.
        drop(self.sampler.take());
        for s in std::mem::take(&mut self.pending) {
            self.attribute(s, Duration::ZERO);
        }
        // The worst MAX_RECORDS (they may have been up to twice as many).
        self.cut();
        self.end_actions();
        for (_, read, lost, _) in self.rec.counts() {
            self.report.events += read;
            self.report.lost_events += lost;
        }
        self.name_all_spikes();
        let (counted, warn) = self.counter_warnings();
        self.report.untraced_after_s = self.tamper.untraced_after_s();
        self.report.counted = counted;
        self.report.warnings.extend(warn);
        self.report.per_cpu =
            latlab_core::result::culprits::summarise(&self.report.spikes, &self.report.cpus);
        self.write_files();
        self.saving_warnings();
        self.report
    }

    /// Ends the `--on-threshold` actions and counts what they could not do.
    fn end_actions(&mut self) {
        if let Some(a) = self.actions.as_mut() {
            a.finish();
            self.report.actions_suppressed = a.suppressed;
            self.report.actions_busy = a.busy;
            self.report.shells_killed = a.killed;
        }
    }

    /// The records in time order, their groups named, once every fork and exec has been
    /// read; the exec chains with them.
    fn name_all_spikes(&mut self) {
        self.report.spikes.sort_by_key(|s| (s.expected_ns, s.cpu));
        let mut spikes = std::mem::take(&mut self.report.spikes);
        self.name_groups(&mut spikes);
        self.report.spikes = spikes;
        self.report.exec_chains = self.rec.names_commands();
    }

    /// The NMI, SMI and steal counters over the run, and the warnings about what the trace
    /// could not see: counters, unexplained time, tampering, spikes explained too early.
    fn counter_warnings(&mut self) -> (Vec<CpuCounts>, Vec<String>) {
        let now = crate::hw::Counters::read(
            &crate::hw::Roots::default(),
            &self.report.cpus,
            !self.host.vm,
        );
        let (counted, mut warn) = self.counters.delta(&now, self.tick_ns, &self.host);
        if !self.report.nmi_traced {
            warn.push(format!(
                "{}: the kernel has no nmi:nmi_handler event: NMIs are counted over the run \
                 (/proc/interrupts), not per spike",
                crate::who()
            ));
        }
        let unexplained = crate::hw::residual_warnings(&self.report.spikes, &warn, self.tick_ns);
        warn.extend(unexplained);
        warn.extend(self.tamper.warning());
        if self.report.spikes_unread > 0 {
            warn.push(format!(
                "{}: {} spikes were explained before the trace reader had read that far on their \
                 CPU (it was still behind after the wait for it): their explanations may lack events",
                crate::who(),
                self.report.spikes_unread
            ));
        }
        (counted, warn)
    }

    /// `--trace-save`: the raw pages as a trace.dat, or the spikes' timeline.
    fn write_files(&mut self) {
        if let Some(path) = self.dat.take() {
            let pages = self.rec.take_pages();
            self.saver.dat(&path, pages);
        }
        if let Some((path, parts)) = self.save.take() {
            self.saver.timeline(&path, &spikes::Part::joined(&parts));
        }
    }

    /// What the run's trace files and shell actions could not do, counted and said: the
    /// saver's warnings, then these.
    fn saving_warnings(&mut self) {
        self.report.actions_over_budget = self.saver.over_budget;
        self.report.actions_after_end = self.saver.after_end;
        self.report.bytes_saved = self.saver.spent();
        if self.saver.over_budget > 0 {
            self.saver.warnings.push(format!(
                "--trace-budget: {} trace windows not saved (the run's trace files would have passed the budget)",
                self.saver.over_budget
            ));
        }
        if self.saver.after_end > 0 {
            self.saver.warnings.push(format!(
                "{} trace windows not saved or cut: the run had ended",
                self.saver.after_end
            ));
        }
        if self.report.actions_busy > 0 {
            self.saver.warnings.push(format!(
                "--on-threshold: {} shell: firings not started ({} were still running)",
                self.report.actions_busy,
                crate::actions::MAX_SHELLS
            ));
        }
        if self.report.shells_killed > 0 {
            self.saver.warnings.push(format!(
                "--on-threshold: {} shell: commands still running at the end were killed",
                self.report.shells_killed
            ));
        }
        let w = std::mem::take(&mut self.saver.warnings);
        self.report.warnings.extend(w);
    }
}

/// Tests widen the window in which a second Ctrl-C finds the instance alive.
fn delay_for_tests() {
    if let Some(ms) = std::env::var("LATLAB_TEST_TRACE_FINISH_DELAY_MS")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
    {
        std::thread::sleep(Duration::from_millis(ms));
    }
}
