//! Cost of recording one latency sample on the hot path (exact stats + HDR histogram).

use criterion::{criterion_group, criterion_main, Criterion};
use latlab_core::stats::Recorder;
use std::hint::black_box;

fn record(c: &mut Criterion) {
    let mut r = Recorder::new();
    let mut x = 0x9E37_79B9u64;
    c.bench_function("recorder_record", |b| {
        b.iter(|| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            r.record(black_box(x % 200_000));
        })
    });
}

criterion_group!(benches, record);
criterion_main!(benches);
