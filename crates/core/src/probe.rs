//! Per-CPU timing of named code sections — the instrument of seed 002 — as a library API any
//! Rust program can use: time sections with two TSC reads, one table at the end.
//!
//! ```
//! use latlab_core::probe::Probe;
//! let probe = Probe::new(&["loop", "vec"]);
//! std::thread::scope(|s| {
//!     for cpu in 0..2 {
//!         let probe = &probe;
//!         s.spawn(move || {
//!             let mut rec = probe.recorder(cpu); // allocates here, never while timing
//!             for _ in 0..1000 {
//!                 let t = rec.start();
//!                 std::hint::black_box((0..100).sum::<u64>()); // the section
//!                 rec.stop(0, t);
//!             }
//!         }); // the recorder hands its figures to the probe when dropped
//!     }
//! });
//! println!("{}", probe.table());
//! assert_eq!(probe.count(0, 0), 1000);
//! ```

use crate::stats::Recorder;
use crate::sys::tsc::Ticks;
use std::collections::BTreeMap;
use std::sync::Mutex;

/// Named sections, timed per CPU (or per any small integer key).
pub struct Probe {
    names: Vec<String>,
    ticks: Ticks,
    ticks_per_ns: f64,
    merged: Mutex<BTreeMap<usize, Vec<Recorder>>>,
}

/// One thread's timer: owns its statistics, so timing takes no lock. Hands them to the probe
/// when dropped.
pub struct SectionTimer<'p> {
    probe: &'p Probe,
    cpu: usize,
    stats: Vec<Recorder>,
}

impl Probe {
    /// A probe for these section names (calibrates the TSC once, ~50 ms).
    pub fn new(names: &[&str]) -> Probe {
        let ticks = Ticks::best();
        Probe {
            names: names.iter().map(|s| s.to_string()).collect(),
            ticks,
            ticks_per_ns: ticks.per_ns(50),
            merged: Mutex::new(BTreeMap::new()),
        }
    }

    /// A timer for the calling thread, reporting under `cpu`.
    pub fn recorder(&self, cpu: usize) -> SectionTimer<'_> {
        SectionTimer {
            probe: self,
            cpu,
            stats: (0..self.names.len()).map(|_| Recorder::new()).collect(),
        }
    }

    /// Section names.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// Times recorded for (cpu, section).
    pub fn count(&self, cpu: usize, section: usize) -> u64 {
        self.merged
            .lock()
            .map(|m| m.get(&cpu).map_or(0, |v| v[section].count))
            .unwrap_or(0)
    }

    /// Statistics per CPU and section (ns).
    pub fn stats(&self) -> BTreeMap<usize, Vec<Recorder>> {
        self.merged.lock().map(|m| m.clone()).unwrap_or_default()
    }

    /// The seed's table: `CPU: Name Count Max Min Average Total`, times in µs.
    pub fn table(&self) -> String {
        let mut s = String::from("CPU:\tName\tCount\tMax\tMin\tAverage\tTotal\n----\t----\t-----\t---\t---\t-------\t-----\n");
        let us = |ns: f64| format!("{:.3}", ns / 1000.0);
        for (cpu, secs) in self.stats() {
            for (i, r) in secs.iter().enumerate() {
                let lead = if i == 0 {
                    format!("cpu {cpu}:")
                } else {
                    String::new()
                };
                let (min, max) = if r.count == 0 {
                    (0.0, 0.0)
                } else {
                    (r.min as f64, r.max as f64)
                };
                s.push_str(&format!(
                    "{lead}\t{}\t{}\t{}\t{}\t{}\t{}\n",
                    self.names[i],
                    r.count,
                    us(max),
                    us(min),
                    us(r.mean()),
                    us(r.sum as f64)
                ));
            }
        }
        s
    }
}

impl SectionTimer<'_> {
    /// Marks the start of a section.
    #[inline(always)]
    pub fn start(&self) -> u64 {
        self.probe.ticks.read()
    }

    /// Ends section `section` begun at `start`.
    #[inline(always)]
    pub fn stop(&mut self, section: usize, start: u64) {
        let d = self.probe.ticks.read().wrapping_sub(start);
        self.stats[section].record((d as f64 / self.probe.ticks_per_ns) as u64);
    }
}

impl Drop for SectionTimer<'_> {
    fn drop(&mut self) {
        if let Ok(mut m) = self.probe.merged.lock() {
            let slot = m
                .entry(self.cpu)
                .or_insert_with(|| (0..self.stats.len()).map(|_| Recorder::new()).collect());
            for (acc, r) in slot.iter_mut().zip(&self.stats) {
                acc.merge(r);
            }
        }
    }
}
