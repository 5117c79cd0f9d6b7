#!/usr/bin/env python3
"""latlab noise vs oslat (Debian rt-tests): loop rate on the same CPU, interleaved A B A B.

Both spin on CPU 1 (main thread on CPU 0) at SCHED_FIFO 50 for the same duration. oslat's rate
is its histogram total over its duration; latlab's is loops_per_sec from its JSON. Prints the
ratio of medians latlab / oslat.

usage: bench/noise.py [--rounds 5] [--duration 5] [--cpu 1] [--latlab target/release/latlab]
"""
import argparse, json, os, statistics, subprocess, sys, tempfile
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import machine, scratch

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--duration", type=int, default=5)
    ap.add_argument("--cpu", type=int, default=1)
    ap.add_argument("--latlab", default="target/release/latlab")
    a = ap.parse_args()
    d = scratch()
    L, O = [], []
    for i in range(a.rounds):
        lj, oj = os.path.join(d, "l.json"), os.path.join(d, "o.json")
        subprocess.run([a.latlab, "noise", "--cpus", str(a.cpu), "--main-cpu", "0", "-D", f"{a.duration}s",
                        "-q", "--json", lj], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        L.append(json.load(open(lj))["series"][0]["extra"]["loops_per_sec"])
        subprocess.run(["oslat", "-c", str(a.cpu), "-C", "0", "-D", str(a.duration), "-f", "50", "-q",
                        f"--json={oj}"], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        t = json.load(open(oj))["thread"]["0"]
        O.append(sum(int(v) for v in t["histogram"].values()) / t["duration"])
        print(f"round {i+1}: latlab {L[-1]/1e6:.1f} M loops/s | oslat {O[-1]/1e6:.1f} M loops/s", flush=True)
    ml, mo = statistics.median(L), statistics.median(O)
    print(f"median loops/s: latlab {ml/1e6:.1f} M, oslat {mo/1e6:.1f} M, ratio {ml/mo:.2f}")
    print(f"machine: {machine()}; {a.rounds} rounds x {a.duration} s on CPU {a.cpu}")

if __name__ == "__main__":
    sys.exit(main())
