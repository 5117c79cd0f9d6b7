//! What the driver hands a measurement: the control flags (signals routed once, by the driver),
//! the environment captured before the run, the real-time preparation its footprint asked for,
//! a place for warnings, a Run builder, pinned-worker spawning and the store for results kept
//! mid-run. A measurement never installs signals, captures the environment, prepares real-time
//! scheduling or builds a Run itself.

use latlab_core::error::Result;
use latlab_core::result::{Environment, Run};
use latlab_core::rt::{self, Control};
use std::time::SystemTime;

/// Keeps runs in the store the driver opened before measuring.
pub(crate) trait Keep {
    fn keep(&mut self, run: &Run) -> Result<()>;
    /// Keeps `run` with these tags beside the run's own (`--tag`, the measurement's).
    fn keep_tagged(&mut self, run: &Run, extra: &[(&str, &str)]) -> Result<()>;
    /// Adds a tag to the result the measurement returns (stored by the driver).
    fn tag_result(&mut self, key: &str, value: &str);
    /// A thread that keeps results with a store connection of its own (None: no store, or
    /// one handed in opened; results are then kept in place).
    fn background(
        &mut self,
        report: super::background::Report,
    ) -> Option<super::background::Background>;
}

/// The measurement's view of its run; see the module doc.
pub struct Ctx<'a> {
    control: Control,
    environment: Environment,
    kind: &'static str,
    command_line: Vec<String>,
    started: SystemTime,
    strict: bool,
    prepared: rt::Prepared,
    warnings: Vec<String>,
    keeper: &'a mut dyn Keep,
    placement: rt::PlacementLog,
    tracer: Option<latlab_trace::session::Tracer>,
    /// The ground polled so far, and the second up to which results stored mid-run have
    /// carried its changes.
    ground: Option<super::ground::GroundLog>,
    ground_kept_to: f64,
    /// The result returned covers only what followed the last result stored mid-run.
    last_interval: bool,
    settings: Option<crate::settings::Knobs>,
    /// The files of settings the run held and already put back (a `clocks` run switches the
    /// clocksource and restores it before it ends): its own changes, not the ground's.
    released: Vec<std::path::PathBuf>,
    loads: crate::loadgen::LoadProgress,
}

/// What the driver has made ready when a measurement starts, handed to [`Ctx::new`] by name.
pub(crate) struct Start<'a> {
    /// The stop and interrupt flags.
    pub(crate) control: Control,
    /// The machine as captured before measuring.
    pub(crate) environment: Environment,
    /// The measurement's kind (`Measurement::KIND`).
    pub(crate) kind: &'static str,
    /// The command line, as recorded in the result (passwords redacted).
    pub(crate) command_line: Vec<String>,
    /// `--strict`: refuse instead of degrading.
    pub(crate) strict: bool,
    /// What the real-time preparation arranged.
    pub(crate) prepared: rt::Prepared,
    /// The preparation's warnings.
    pub(crate) warnings: Vec<String>,
    /// Where results go (the store, opened before measuring).
    pub(crate) keeper: &'a mut dyn Keep,
    /// The run's placement log.
    pub(crate) placement: rt::PlacementLog,
    /// The tracer its trace request started, if any.
    pub(crate) tracer: Option<latlab_trace::session::Tracer>,
}

impl<'a> Ctx<'a> {
    /// The context of a measurement about to start.
    pub(crate) fn new(s: Start<'a>) -> Ctx<'a> {
        let Start {
            control,
            environment,
            kind,
            command_line,
            strict,
            prepared,
            warnings,
            keeper,
            placement,
            tracer,
        } = s;
        Ctx {
            control,
            environment,
            kind,
            command_line,
            started: SystemTime::now(),
            strict,
            prepared,
            warnings,
            keeper,
            placement,
            tracer,
            ground: None,
            ground_kept_to: 0.0,
            last_interval: false,
            settings: None,
            released: Vec::new(),
            loads: crate::loadgen::LoadProgress::default(),
        }
    }

    /// The running loads' progress, read by [`Ctx::load_progress`].
    pub(crate) fn with_loads(mut self, loads: crate::loadgen::LoadProgress) -> Ctx<'a> {
        self.loads = loads;
        self
    }

    /// What each `--load` has achieved so far, as it last reported (about once a second), in
    /// `--load` order: a measurement that stores results mid-run (a qualification's
    /// checkpoints) records its loads' statistics with them.
    pub(crate) fn load_progress(&self) -> Vec<Option<latlab_core::result::LoadReport>> {
        self.loads.now()
    }

    /// The system settings this run changes (`--hrtick`, `clocks --clocksource`): taken on
    /// first use under the machine-wide settings lock (exit 3 naming the holder when another
    /// latlab has it), journaled before each change, and put back by the driver when the
    /// measurement returns, whatever the way (a second Ctrl-C replays the journal; after
    /// SIGKILL, `latlab restore`).
    pub(crate) fn settings(&mut self) -> Result<&mut crate::settings::Knobs> {
        let held = match self.settings.take() {
            Some(k) => k,
            None => {
                let k = crate::settings::Knobs::new()?;
                latlab_core::rt::at_exit(crate::settings::restore_own_on_exit);
                k
            }
        };
        Ok(self.settings.insert(held))
    }

    /// The files of the settings the run holds now or held and put back (real paths).
    pub(crate) fn held_files(&self) -> Vec<std::path::PathBuf> {
        let mut v = self
            .settings
            .as_ref()
            .map(crate::settings::Knobs::files)
            .unwrap_or_default();
        v.extend(self.released.iter().cloned());
        v
    }

    /// Puts every setting the run changed back now and gives the lock up; returns what could
    /// not be put back (the journal is then kept for `latlab restore`).
    pub(crate) fn restore_settings(&mut self) -> Vec<String> {
        let Some(k) = self.settings.take() else {
            return Vec::new();
        };
        self.released.extend(k.files());
        k.restore()
    }

    /// The tracing session the driver started for the measurement's `trace_request` (taken
    /// once; None without `--trace`).
    pub fn take_tracer(&mut self) -> Option<latlab_trace::session::Tracer> {
        self.tracer.take()
    }

    /// The run's placement log: every pin, policy or CPU move a thread of the run could not
    /// get goes here (the driver records them, or exits 3 under `--strict`). Threads placed by
    /// [`Ctx::spawn_workers`] report by themselves; code that places a thread itself clones
    /// this into it.
    pub fn placement(&self) -> &rt::PlacementLog {
        &self.placement
    }

    /// The stop and interrupt flags: a measurement ends within a second of either and returns
    /// what it collected.
    pub(crate) fn control(&self) -> &Control {
        &self.control
    }

    /// The environment captured before the run.
    pub(crate) fn environment(&self) -> &Environment {
        &self.environment
    }

    /// `--strict`: refuse (exit 3) instead of degrading with a warning.
    pub(crate) fn strict(&self) -> bool {
        self.strict
    }

    /// Whether the real-time scheduling the footprint asked for was granted (false: threads
    /// must run SCHED_OTHER; the warning is already recorded).
    pub(crate) fn rt_granted(&self) -> bool {
        self.prepared.rt_granted
    }

    /// Records a warning for the result.
    pub(crate) fn warn(&mut self, w: impl Into<String>) {
        self.warnings.push(w.into());
    }

    /// The warnings recorded so far, for code that collects into a list.
    pub(crate) fn warnings(&mut self) -> &mut Vec<String> {
        &mut self.warnings
    }

    /// The run's result, with its id, kind, start, command line, parameters, environment and
    /// the warnings recorded so far (taken: later ones go to the next run built).
    pub(crate) fn run(&mut self, parameters: serde_json::Value) -> Run {
        self.run_at(self.started, parameters)
    }

    /// `run`, for a measurement that knows when it really started (after its barrier).
    pub(crate) fn run_at(&mut self, started: SystemTime, parameters: serde_json::Value) -> Run {
        Run {
            warnings: std::mem::take(&mut self.warnings),
            ..Run::new(
                self.kind,
                started,
                self.command_line.clone(),
                parameters,
                self.environment.clone(),
            )
        }
    }

    /// Another result of the same run (a monitor's periodic snapshot): its own start and
    /// warnings, the run's kind, command line and environment.
    pub(crate) fn run_with(
        &self,
        started: SystemTime,
        parameters: serde_json::Value,
        warnings: Vec<String>,
    ) -> Run {
        Run {
            warnings,
            ..Run::new(
                self.kind,
                started,
                self.command_line.clone(),
                parameters,
                self.environment.clone(),
            )
        }
    }

    /// The ground the driver watches, polled as the run goes on.
    pub(crate) fn with_ground(mut self, g: super::ground::GroundLog) -> Ctx<'a> {
        self.ground = Some(g);
        self
    }

    /// Says that the result the measurement returns covers only what followed the last run
    /// it stored (a monitor's last interval), not the whole run: it then carries only the
    /// ground's changes of that stretch.
    pub(crate) fn result_is_last_interval(&mut self) {
        self.last_interval = true;
    }

    /// An interval ended without a result stored for it (a monitor under `--no-store`): the
    /// next one stored, or the returned one, carries only the ground's later changes.
    pub(crate) fn interval_ended(&mut self) {
        if let Some(g) = &self.ground {
            self.ground_kept_to = g.seconds();
        }
    }

    /// From which second of the run the returned result's ground counts (None: all of it).
    pub(crate) fn result_ground_from(&self) -> Option<f64> {
        self.last_interval.then_some(self.ground_kept_to)
    }

    /// `run` with the ground's changes since the last run stored mid-run (each stored run
    /// carries those of its own interval, as a warning too).
    fn with_interval_ground<'r>(&mut self, run: &'r Run) -> std::borrow::Cow<'r, Run> {
        let Some(g) = &self.ground else {
            return std::borrow::Cow::Borrowed(run);
        };
        let (from, now) = (self.ground_kept_to, g.seconds());
        let moved = g.between(from, now, &self.held_files());
        self.ground_kept_to = now;
        if moved.is_empty() {
            return std::borrow::Cow::Borrowed(run);
        }
        // Times into this stored run, which began where the last one ended.
        let moved: Vec<_> = moved
            .into_iter()
            .map(|mut c| {
                c.at_s = c.at_s.map(|t| (t - from).max(0.0));
                c
            })
            .collect();
        let mut r = run.clone();
        r.warnings.extend(moved.iter().map(super::ground::warning));
        r.ground.extend(moved);
        std::borrow::Cow::Owned(r)
    }

    /// Keeps a run in the driver's store now (a monitor's periodic snapshot), with the
    /// ground's changes since the last one; does nothing under `--no-store`. The run the
    /// measurement returns is stored by the driver.
    pub(crate) fn keep(&mut self, run: &Run) -> Result<()> {
        let run = self.with_interval_ground(run);
        self.keeper.keep(&run)
    }

    /// Starts keeping results from a thread of their own (see [`super::background`]): a
    /// monitor's snapshots, whose store must not stall its loop. `report` hears what became
    /// of each. None where results must be kept in place ([`Ctx::keep`]).
    pub(crate) fn keep_in_background(
        &mut self,
        report: super::background::Report,
    ) -> Option<super::background::Background> {
        self.keeper.background(report)
    }

    /// [`Ctx::keep`] through `bg`, without waiting for the store: the run carries the ground's
    /// changes since the last one kept, as there.
    pub(crate) fn hand_over(&mut self, bg: &super::background::Background, run: &Run) {
        let run = self.with_interval_ground(run);
        bg.keep(&run);
    }

    /// [`Ctx::keep`] with tags of this run's own beside the common ones (a qualification's
    /// checkpoint interval carries its experiment id; its final result does not), without a
    /// word on stderr: the measurement says what it keeps.
    pub(crate) fn keep_tagged(&mut self, run: &Run, extra: &[(&str, &str)]) -> Result<()> {
        let run = self.with_interval_ground(run);
        self.keeper.keep_tagged(&run, extra)
    }

    /// Tags the result this measurement returns, when the driver stores it (a qualification's
    /// final result says whether it finished).
    pub(crate) fn tag_result(&mut self, key: &str, value: &str) {
        self.keeper.tag_result(key, value);
    }

    /// Spawns one pinned worker per placement behind a common barrier (see
    /// `rt::spawn_workers`).
    pub(crate) fn spawn_workers<S, T, R>(
        &self,
        placements: &[rt::Placement],
        barrier: std::sync::Arc<std::sync::Barrier>,
        make: impl FnMut(usize) -> S,
    ) -> std::io::Result<Vec<std::thread::JoinHandle<(rt::Applied, R)>>>
    where
        S: FnOnce() -> T + Send + 'static,
        T: FnOnce() -> R,
        R: Send + 'static,
    {
        rt::spawn_workers(placements, barrier, &self.placement, make)
    }
}
