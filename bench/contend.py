#!/usr/bin/env python3
"""latlab contend: the seed 002 claim, side by side — the shared per-priority structure under a
mutex (before the patch) and with atomics (after), interleaved, one thread per CPU at FIFO 50.

Prints the median over rounds of the mean and max `vec` and `loop` section times (µs).

usage: bench/contend.py [--rounds 5] [--duration 2] [--latlab target/release/latlab]
"""
import argparse, json, os, statistics, subprocess, sys, tempfile
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import machine, scratch

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--duration", type=int, default=2)
    ap.add_argument("--latlab", default="target/release/latlab")
    a = ap.parse_args()
    d = scratch()
    res = {m: {"vec": [], "loop": [], "vecmax": [], "n": []} for m in ("mutex", "atomic")}
    for i in range(a.rounds):
        for m in ("mutex", "atomic"):
            j = os.path.join(d, f"{m}.json")
            subprocess.run([a.latlab, "contend", "--sync", m, "-D", f"{a.duration}s", "--json", j],
                           check=True, stdout=subprocess.DEVNULL)
            s = json.load(open(j))["series"]
            vec = [x for x in s if x["name"].endswith("/vec")]
            loop = [x for x in s if x["name"].endswith("/loop")]
            n = sum(x["count"] for x in vec)
            res[m]["vec"].append(sum(x["mean_ns"] * x["count"] for x in vec) / n / 1000)
            res[m]["vecmax"].append(max(x["max_ns"] for x in vec) / 1000)
            res[m]["loop"].append(sum(x["mean_ns"] * x["count"] for x in loop) / sum(x["count"] for x in loop) / 1000)
            res[m]["n"].append(n)
        print(f"round {i+1}: vec mean mutex {res['mutex']['vec'][-1]:.3f} us, atomic {res['atomic']['vec'][-1]:.3f} us", flush=True)
    for m in ("mutex", "atomic"):
        r = res[m]
        print(f"{m:6}: vec mean {statistics.median(r['vec']):.3f} us, vec max {statistics.median(r['vecmax']):.1f} us, "
              f"loop mean {statistics.median(r['loop']):.3f} us, vec updates/run {statistics.median(r['n']):.0f}")
    print(f"ratio of vec means mutex/atomic: {statistics.median(res['mutex']['vec'])/statistics.median(res['atomic']['vec']):.1f}")
    print(f"machine: {machine()}; {a.rounds} rounds x {a.duration} s, all CPUs, FIFO 50")

if __name__ == "__main__":
    sys.exit(main())
