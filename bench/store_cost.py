#!/usr/bin/env python3
"""The cost of storing one run: `latlab cyclic -l 1` with the store against the same with
--no-store, interleaved, for each --latlab given (each on its own SQLite store, made by a first
unmeasured run, so no round pays for creating the file), and with --pg URL also on PostgreSQL.
Prints the median wall and CPU time of each and the difference stored - not stored, and counts
the fsync/fdatasync calls of one stored run with strace (when strace is installed).

usage: bench/store_cost.py [--rounds 15] [--latlab PATH ...] [--pg URL]
"""
import argparse, os, re, shutil, statistics, subprocess, sys, tempfile
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import machine, measure, scratch

RUN = ["cyclic", "-l", "1", "-i", "1000us", "-q"]

def syncs(cmd):
    """fsync-like calls of one run of cmd, as strace -c -f counts them."""
    if not shutil.which("strace"):
        return "strace not installed"
    out = subprocess.run(["strace", "-f", "-c", "-e", "trace=fsync,fdatasync,sync_file_range,sync",
                          *cmd], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    counts = {m.group(2): int(m.group(1)) for m in
              re.finditer(r"^\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?(\w+)\s*$",
                          out.stderr, re.M) if m.group(2) != "total"}
    return ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) or "none"

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--latlab", action="append")
    ap.add_argument("--pg", help="PostgreSQL URL to store into as well")
    a = ap.parse_args()
    exes = a.latlab or ["target/release/latlab"]
    tmp = scratch(prefix="latlab-bench-store-")
    cases = []
    for i, e in enumerate(exes):
        db = os.path.join(tmp, f"s{i}.db")
        subprocess.run([e, *RUN, "--store", db], check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        cases.append((f"{e} no-store", [e, *RUN, "--no-store"]))
        cases.append((f"{e} sqlite", [e, *RUN, "--store", db]))
        if a.pg:
            cases.append((f"{e} postgres", [e, *RUN, "--store", a.pg]))
    res = {c[0]: [] for c in cases}
    for r in range(a.rounds):
        for label, cmd in cases:
            wall, cpu, _, code = measure(cmd)
            if code != 0:
                raise SystemExit(f"{label}: exit {code}")
            res[label].append((wall, cpu))
        print(f"round {r + 1}: " + " | ".join(
            f"{c[0]} {res[c[0]][-1][0] * 1e3:.1f} ms" for c in cases), flush=True)
    med = {}
    for label, cmd in cases:
        w = [x[0] * 1e3 for x in res[label]]
        c = [x[1] * 1e3 for x in res[label]]
        med[label] = (statistics.median(w), statistics.median(c))
        print(f"{label}: wall {med[label][0]:.1f} ms [{min(w):.1f}-{max(w):.1f}], "
              f"CPU {med[label][1]:.1f} ms [{min(c):.1f}-{max(c):.1f}]; "
              f"syncs of one run: {syncs(cmd)}")
    for e in exes:
        base = med[f"{e} no-store"]
        for kind in ("sqlite", "postgres"):
            if f"{e} {kind}" in med:
                m = med[f"{e} {kind}"]
                print(f"{e}: storing one run in {kind} costs {m[0] - base[0]:+.1f} ms wall, "
                      f"{m[1] - base[1]:+.1f} ms CPU (difference of medians)")
    print(f"machine: {machine()}; {a.rounds} rounds")
    shutil.rmtree(tmp)

if __name__ == "__main__":
    sys.exit(main())
