#!/usr/bin/env python3
"""latlab load hackbench vs rt-tests hackbench: same groups, fds and loops, interleaved A B A B.

Both print "Time: X"; prints the ratio of medians latlab / hackbench (goal 0.8-1.25).

usage: bench/hackbench.py [--rounds 7] [--groups 10] [--loops 100] [--threads]
"""
import argparse, os, re, statistics, subprocess, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import machine

def t(cmd):
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return float(re.search(r"Time: ([\d.]+)", out).group(1))

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--groups", type=int, default=10)
    ap.add_argument("--loops", type=int, default=100)
    ap.add_argument("--threads", action="store_true")
    ap.add_argument("--latlab", default="target/release/latlab")
    a = ap.parse_args()
    mode = "thread" if a.threads else "process"
    L, H = [], []
    for i in range(a.rounds):
        L.append(t([a.latlab, "load", f"hackbench:groups={a.groups},loops={a.loops},mode={mode}"]))
        H.append(t(["hackbench", "-g", str(a.groups), "-l", str(a.loops)] + (["-T"] if a.threads else ["-P"])))
        print(f"round {i+1}: latlab {L[-1]:.3f} s | hackbench {H[-1]:.3f} s", flush=True)
    ml, mh = statistics.median(L), statistics.median(H)
    print(f"median time: latlab {ml:.3f} s, hackbench {mh:.3f} s, ratio {ml/mh:.2f}")
    print(f"machine: {machine()}; {a.rounds} rounds, {a.groups} groups x {a.loops} loops, {mode}es")

if __name__ == "__main__":
    sys.exit(main())
