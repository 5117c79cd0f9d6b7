#!/usr/bin/env python3
"""Summarises bench/qualify-hour.sh's output directory (argument; default /tmp/qualify-hour)
as the tables of docs/benchmarks.md: latency with and without checkpoints (per interleaved pair),
RSS and store size over time, and each checkpoint's cost."""
import glob, json, os, sqlite3, statistics, sys

out = sys.argv[1] if len(sys.argv) > 1 else "/tmp/qualify-hour"


def fig(path):
    r = json.load(open(path))
    s = r["series"][0]
    p = s["percentiles"]
    return s["count"], p.get("p99"), p.get("p99_9"), s["max_ns"]


print("| pair | checkpoints | samples | p99 (µs) | p99.9 (µs) | max (µs) |")
print("|---|---|---|---|---|---|")
ratios = []
for f in sorted(glob.glob(f"{out}/pair-*-with.json")):
    i = f.split("-")[-2]
    for mode in ("with", "without"):
        p = f"{out}/pair-{i}-{mode}.json"
        if os.path.exists(p):
            n, p99, p999, mx = fig(p)
            us = lambda v: "-" if v is None else f"{v / 1000:.1f}"
            print(f"| {i} | {mode} | {n} | {us(p99)} | {us(p999)} | {us(mx)} |")
print()
samples = [l.split() for l in open(f"{out}/samples")] if os.path.exists(f"{out}/samples") else []
if samples:
    print("| elapsed (s) | RSS (MiB) |")
    print("|---|---|")
    step = max(1, len(samples) // 8)
    for t, rss, _ in samples[::step] + ([samples[-1]] if len(samples) % step != 1 else []):
        print(f"| {t} | {int(rss) / 1024:.1f} |")
    print()
db = f"{out}/hour.db"
if os.path.exists(db):
    c = sqlite3.connect(db)
    rows = c.execute(
        "select r.body from runs r join tags t on t.run_id = r.id "
        "where t.key = 'qualify' and t.value = 'interval' order by r.started"
    ).fetchall()
    costs = [json.loads(b)["qualification"].get("checkpoint_ms") for (b,) in rows]
    costs = [x for x in costs if x is not None]
    if os.path.exists(f"{out}/hour.json"):
        # Finished: fold the write-ahead log into the file before measuring it.
        c.execute("pragma wal_checkpoint(truncate)")
    c.close()
    size = os.path.getsize(db)
    if costs:
        print(f"checkpoints: {len(rows)}; cost (ms) median {statistics.median(costs):.0f}, "
              f"max {max(costs):.0f}, min {min(costs):.0f}")
    if not os.path.exists(f"{out}/hour.json"):
        sys.exit(0)
    h = json.load(open(f"{out}/hour.json"))
    measured_h = h["qualification"]["measured_s"] / 3600
    print(f"store: {size / 1e6:.2f} MB after {measured_h * 60:.0f} min measured "
          f"({size / 1e6 / measured_h:.1f} MB per hour, {size / max(1, len(rows)) / 1e3:.0f} kB per checkpoint)")
    print("verdicts:", [(v["requirement"], v["verdict"]) for v in h["qualification"]["verdicts"]])
