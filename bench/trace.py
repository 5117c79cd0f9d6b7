#!/usr/bin/env python3
"""Overhead of `--trace` on `latlab cyclic`, interleaved A B A B: without and with tracing,
same threads (one per CPU, SCHED_FIFO 80, 1 kHz), same duration. Prints per-round average and
p99 latency (mean and max over threads) and, for the traced runs, events read and lost, then
the ratio of medians traced/untraced.

usage: bench/trace.py [--rounds 5] [--duration 10] [--latlab PATH]
"""
import argparse, json, os, statistics, subprocess, sys, tempfile, time

def one(exe, a, out, trace):
    cmd = [exe, "cyclic", "-t", "-a", "-p", "80", "-i", "1000us", "-D", f"{a.duration}s",
           "-q", "--no-store", "--json", out]
    if trace:
        cmd += ["--trace", "--trace-threshold", "100us"]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    r = json.load(open(out))
    avg = statistics.mean(s["mean_ns"] for s in r["series"]) / 1000
    p99 = max(s["percentiles"]["p99"] for s in r["series"]) / 1000
    t = r.get("trace") or {}
    return avg, p99, t.get("events", 0), t.get("lost_events", 0), len(t.get("spikes", []))

def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--duration", type=int, default=10)
    p.add_argument("--latlab", default="target/release/latlab")
    a = p.parse_args()
    d = tempfile.mkdtemp()
    A, B = [], []
    for i in range(a.rounds):
        A.append(one(a.latlab, a, f"{d}/a.json", False))
        B.append(one(a.latlab, a, f"{d}/b.json", True))
        print(f"round {i+1}: plain avg {A[-1][0]:.2f} us p99 {A[-1][1]:.1f} us | traced avg "
              f"{B[-1][0]:.2f} us p99 {B[-1][1]:.1f} us, {B[-1][2]} events "
              f"({B[-1][2]/a.duration:.0f}/s), {B[-1][3]} lost, {B[-1][4]} spikes", flush=True)
    ma, mb = statistics.median(x[0] for x in A), statistics.median(x[0] for x in B)
    pa, pb = statistics.median(x[1] for x in A), statistics.median(x[1] for x in B)
    print(f"median avg: plain {ma:.2f} us, traced {mb:.2f} us, ratio {mb/ma:.2f}")
    print(f"median p99: plain {pa:.1f} us, traced {pb:.1f} us, ratio {pb/pa:.2f}")
    print(f"lost events over all traced runs: {sum(x[3] for x in B)}")
    print(f"machine: {os.uname().release}, {os.cpu_count()} CPUs; "
          f"{a.rounds} rounds x {a.duration} s, {time.strftime('%Y-%m-%d')}")

if __name__ == "__main__":
    sys.exit(main())
