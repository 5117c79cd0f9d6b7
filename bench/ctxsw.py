#!/usr/bin/env python3
"""latlab ctxsw --method pipe vs `perf bench sched pipe`, both pinned to one CPU, interleaved.

Two processes pass a token through a pair of pipes. perf reports usecs/op, one op being a
round trip; latlab's comparable figure is the mean raw round trip (before its overhead
subtraction) from its JSON. Prints the ratio of medians latlab / perf (goal: within ±15%).

usage: bench/ctxsw.py [--rounds 5] [--loops 200000] [--cpu 0] [--latlab target/release/latlab]
"""
import argparse, json, os, re, statistics, subprocess, sys, tempfile
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import machine, scratch

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--loops", type=int, default=200000)
    ap.add_argument("--cpu", type=int, default=0)
    ap.add_argument("--latlab", default="target/release/latlab")
    a = ap.parse_args()
    d = scratch()
    L, P = [], []
    for i in range(a.rounds):
        lj = os.path.join(d, "l.json")
        subprocess.run([a.latlab, "ctxsw", "--method", "pipe", "--tasks", "processes", "--cpus", str(a.cpu),
                        "--policy", "other", "-n", str(a.loops), "--json", lj],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        s = json.load(open(lj))["series"][0]["extra"]
        L.append(s["sample_ticks"]["mean"] / s["ticks_per_ns"] / 1000)
        out = subprocess.run(["taskset", "-c", str(a.cpu), "perf", "bench", "sched", "pipe", "-l", str(a.loops)],
                             check=True, capture_output=True, text=True).stdout
        P.append(float(re.search(r"([\d.]+) usecs/op", out).group(1)))
        print(f"round {i+1}: latlab {L[-1]:.3f} us/round trip | perf {P[-1]:.3f} usecs/op", flush=True)
    ml, mp = statistics.median(L), statistics.median(P)
    print(f"median: latlab {ml:.3f} us, perf {mp:.3f} us, ratio {ml/mp:.2f}")
    print(f"machine: {machine()}; {a.rounds} rounds x {a.loops} round trips on CPU {a.cpu}, SCHED_OTHER")

if __name__ == "__main__":
    sys.exit(main())
