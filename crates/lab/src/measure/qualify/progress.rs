//! What a qualification says while it runs, on stderr: on a terminal a progress bar
//! (indicatif) with the elapsed time, the ETA, the maximum so far per CPU and the spikes so far,
//! redrawn by the control thread about once a second; in a pipe or a journal, one plain line per
//! checkpoint. Either way off the measured CPUs (the control thread is pinned there).

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;

/// The progress of one segment.
pub(crate) struct Progress {
    bar: Option<ProgressBar>,
    planned_s: f64,
    quiet: bool,
}

/// The figures shown.
pub(crate) struct Now<'a> {
    /// Seconds measured in all (earlier segments included).
    pub(crate) measured_s: f64,
    /// The maximum so far per CPU (ns).
    pub(crate) max: &'a [(usize, u64)],
    /// Spikes over the trace threshold so far (None without `--trace`).
    pub(crate) spikes: Option<u64>,
    /// Checkpoints stored.
    pub(crate) checkpoints: u64,
}

fn us(ns: u64) -> String {
    format!("{:.1}us", ns as f64 / 1e3)
}

fn maxima(max: &[(usize, u64)]) -> String {
    max.iter()
        .map(|(c, m)| format!("cpu{c} {}", us(*m)))
        .collect::<Vec<_>>()
        .join(" ")
}

fn hms(s: f64) -> String {
    let s = s.max(0.0) as u64;
    format!("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
}

impl Progress {
    /// A bar when stderr is a terminal (and `LATLAB_NO_PROGRESS` is unset), plain lines
    /// otherwise; nothing at all when `quiet`.
    pub(crate) fn new(planned_s: f64, done_s: f64, quiet: bool) -> Progress {
        let terminal = !quiet
            && std::io::stderr().is_terminal()
            && std::env::var_os("LATLAB_NO_PROGRESS").is_none();
        let bar = terminal.then(|| {
            let b = ProgressBar::with_draw_target(
                Some(planned_s.ceil() as u64),
                ProgressDrawTarget::stderr_with_hz(2),
            );
            b.set_style(
                ProgressStyle::with_template(
                    "{elapsed_precise} [{bar:30}] {percent:>3}% ETA {eta_precise}  {msg}",
                )
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> "),
            );
            b.set_position(done_s as u64);
            b
        });
        Progress {
            bar,
            planned_s,
            quiet,
        }
    }

    /// Redraws the bar (nothing in a pipe).
    pub(crate) fn tick(&self, now: &Now) {
        if let Some(b) = &self.bar {
            b.set_position(now.measured_s.min(self.planned_s) as u64);
            let spikes = now
                .spikes
                .map(|n| format!("  spikes {n}"))
                .unwrap_or_default();
            b.set_message(format!(
                "max {}{spikes}  checkpoints {}",
                maxima(now.max),
                now.checkpoints
            ));
        }
    }

    /// One line for a stored checkpoint: printed above the bar, or alone in a pipe.
    pub(crate) fn checkpoint(&self, line: &str, now: &Now) {
        let left = (self.planned_s - now.measured_s).max(0.0);
        let text = format!(
            "latlab qualify: {line}; {} of {} measured, {} left; max so far {}{}",
            hms(now.measured_s),
            hms(self.planned_s),
            hms(left),
            maxima(now.max),
            now.spikes
                .map(|n| format!("; {n} spikes"))
                .unwrap_or_default()
        );
        match &self.bar {
            Some(b) => b.println(text),
            None if self.quiet => {}
            None => latlab_core::note!("{text}"),
        }
    }

    /// Takes the bar off the screen.
    pub(crate) fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_figures() {
        assert_eq!(hms(3725.9), "1:02:05");
        assert_eq!(maxima(&[(1, 12_345), (3, 100_000)]), "cpu1 12.3us cpu3 100.0us");
    }
}
