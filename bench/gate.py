#!/usr/bin/env python3
"""`latlab compare` and `latlab gate` on hour-long runs: 1 h at 10 kHz on 2 threads (72 M samples).

The runs are built from a real 2-thread `cyclic` run: its histogram bucket counts are scaled
up to 36 M samples per thread, and a second set is 5 % slower. Two runs per side go into a
scratch SQLite store, so every command reads the runs through the store (run:ID) as CI would.
Prints the median wall time of each command (goal: under 1 s each).

usage: bench/gate.py [--rounds 7] [--latlab target/release/latlab]
"""
import argparse, json, os, statistics, subprocess, sys, tempfile
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import measure, machine, scratch

def scaled(run, rid, k, slower):
    r = json.loads(json.dumps(run))
    r["id"], r["duration_s"] = rid, 3600.0
    for s in r["series"]:
        n = 0
        for b in s["histogram"]["buckets"]:
            b[0] = int(b[0] * slower)
            b[1] *= k
            n += b[1]
        s["count"] = n
        s["min_ns"], s["max_ns"] = int(s["min_ns"] * slower), int(s["max_ns"] * slower)
    return r

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--latlab", default="target/release/latlab")
    a = ap.parse_args()
    d = scratch()
    seed = os.path.join(d, "seed.json")
    subprocess.run([a.latlab, "cyclic", "-t", "2", "-i", "100us", "-l", "20000", "-q",
                    "--no-store", "--json", seed], check=True, stdout=subprocess.DEVNULL)
    run = json.load(open(seed))
    k = 36_000_000 // run["series"][0]["count"]
    runs = [scaled(run, rid, k, slower) for rid, slower in
            (("a1", 1.0), ("a2", 1.0), ("b1", 1.05), ("b2", 1.05))]
    bundle = os.path.join(d, "bundle.json")
    fmt = json.loads(subprocess.run([a.latlab, "runs", "export", "--all", "--store",
                                     "sqlite:" + os.path.join(d, "empty.db")],
                                    capture_output=True, text=True, check=True).stdout)["format"]
    json.dump({"format": fmt, "runs": [{"run": r, "tags": {}} for r in runs]}, open(bundle, "w"))
    store = "sqlite:" + os.path.join(d, "runs.db")
    subprocess.run([a.latlab, "runs", "import", "--store", store, bundle], check=True,
                   stdout=subprocess.DEVNULL)
    n = sum(s["count"] for s in runs[0]["series"])
    cmds = {
        "compare (2 runs a side)": ["compare", "run:a1,a2", "run:b1,b2"],
        "compare --assume-independent-samples": ["compare", "run:a1", "run:b1",
                                                 "--assume-independent-samples"],
        "gate p99.99<1ms (2 runs)": ["gate", "p99.99<1ms", "run:a1", "run:a2"],
    }
    times = {name: [] for name in cmds}
    for _ in range(a.rounds):
        for name, args in cmds.items():
            wall, _, _, code = measure([a.latlab, *args, "--store", store])
            if code not in (0, 1, 4):
                print(f"{name}: exit {code}", file=sys.stderr)
                return 1
            times[name].append(wall)
    for name, t in times.items():
        print(f"{name}: median {statistics.median(t)*1000:.0f} ms (max {max(t)*1000:.0f} ms)")
    print(f"machine: {machine()}; {a.rounds} rounds; {n} samples per run "
          f"({len(run['series'][0]['histogram']['buckets'])} histogram buckets in thread 0)")

if __name__ == "__main__":
    sys.exit(main())
