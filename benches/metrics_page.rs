//! Cost of one `/metrics` page of a monitor of 256 CPUs, in each format it answers (protobuf
//! with native histograms, OpenMetrics text with exemplars, classic text): the median and p90
//! of 200 renders and the allocations one render makes, with every CPU's tallies filled from a
//! long-tailed distribution (each native histogram then spans about 60 buckets) and a spike on
//! each CPU. `cargo bench --bench metrics_page`.

// A counting allocator implements `GlobalAlloc`, an unsafe trait: the one unsafe outside
// crates/core/src/sys, in a benchmark binary that ships in nothing.
#![allow(unsafe_code)]

use latlab_lab::measure::monitor::metrics::{self, Format, Shared};
use latlab_lab::measure::monitor::tally::Tally;
use latlab_lab::measure::monitor::window::Windows;
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Instant;

/// Counts allocations (the global allocator, so renders on this thread are counted).
struct Counting;
static ALLOCS: AtomicU64 = AtomicU64::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Relaxed);
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        unsafe { System.dealloc(p, l) }
    }
}

#[global_allocator]
static A: Counting = Counting;

const CPUS: usize = 256;

fn main() {
    let tallies: Vec<Arc<Tally>> = (0..CPUS).map(|_| Arc::new(Tally::new(50_000))).collect();
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for t in &tallies {
        for seq in 1..=20_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // 2 us to about 2 ms, most near the bottom.
            let u = (x >> 11) as f64 / (1u64 << 53) as f64;
            t.observe((2_000.0 * (1000f64).powf(u * u * u)) as u64, seq);
        }
    }
    let s = Arc::new(Shared {
        cpus: (0..CPUS)
            .map(|c| c.to_string())
            .zip(tallies.iter().cloned())
            .collect(),
        info: vec![("kernel".into(), "6.1.0-rt".into())],
        interval_ns: 1_000_000,
        threshold_ns: Some(50_000),
        started_unix_s: 1.0,
        snapshots: AtomicU64::new(0),
        snapshot_failures: AtomicU64::new(0),
        scrapes: AtomicU64::new(0),
        windows: Windows::new(10_000_000_000, &tallies, 5),
        exposure: None,
        causes: None,
        runs: Default::default(),
        explained: Default::default(),
    });
    s.runs
        .lock()
        .unwrap()
        .open("20261202T170214Z-5ef9cb57", vec![0; CPUS]);
    let r = metrics::registry(s.clone());
    println!("format       bytes  median_ms  p90_ms  allocs_per_page  ({CPUS} CPUs)");
    for (name, f) in [
        ("protobuf", Format::Protobuf),
        ("openmetrics", Format::OpenMetrics),
        ("classic", Format::Classic),
    ] {
        let mut ms = Vec::new();
        let mut bytes = 0;
        let a0 = ALLOCS.load(Relaxed);
        for _ in 0..200 {
            let t0 = Instant::now();
            let (_, body) = metrics::page(&r, &s, f);
            ms.push(t0.elapsed().as_secs_f64() * 1e3);
            bytes = body.len();
        }
        let allocs = (ALLOCS.load(Relaxed) - a0) / 200;
        ms.sort_by(f64::total_cmp);
        println!(
            "{name:<11} {bytes:>7}  {:>9.2}  {:>6.2}  {allocs:>15}",
            ms[100], ms[180]
        );
    }
}
