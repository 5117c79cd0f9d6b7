#!/usr/bin/env python3
"""`latlab tail`: speed on 10^8 samples, interval coverage on synthetic tails, and held-out
calibration on real runs. Results go to docs/benchmarks.md.

  bench/tail.py speed    [--rounds 5] [--latlab target/release/latlab]
      10^8 samples twice: as a run's HDR histograms (a real 2-thread cyclic run, its bucket
      counts scaled up) and as a raw sample log (800 MB, written with numpy, exponential tail
      above 20 us, in the page cache after the first read). Median wall time of
      `latlab tail X --at 1e-9` over the rounds (goal: under 2 s each). No other Linux tool
      extrapolates a tail, so there is no peer to run side by side.
  bench/tail.py coverage [--seeds 200]
      The synthetic coverage table: `cargo test --release` of stats::evt::coverage::full.
  bench/tail.py holdout LOG...
      Fit on the first 10 % of each series of each sample log, predicted vs observed
      exceedance counts on the other 90 % (crates/analysis/src/tail/holdout.rs).

Run cargo and measurements under the machine's lock (flock /tmp/latlab-heavy.lock ...).
"""
import argparse, json, os, shutil, statistics, subprocess, sys, tempfile
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import measure, machine, scratch

N = 100_000_000

def histogram_run(latlab, d):
    seed = os.path.join(d, "seed.json")
    subprocess.run([latlab, "cyclic", "-t", "2", "-i", "100us", "-l", "20000", "-q",
                    "--no-store", "--json", seed], check=True, stdout=subprocess.DEVNULL)
    r = json.load(open(seed))
    total = sum(s["count"] for s in r["series"])
    k = N // total + 1
    n = 0
    for s in r["series"]:
        c = 0
        for b in s["histogram"]["buckets"]:
            b[1] *= k
            c += b[1]
        s["count"] = c
        n += c
    r["id"], r["duration_s"] = "tail-speed-hist", n / 10_000.0
    p = os.path.join(d, "hist.json")
    json.dump(r, open(p, "w"))
    return p, n

def sample_log(d):
    import numpy as np
    p = os.path.join(d, "big.samples")
    rng = np.random.default_rng(1)
    block = 4096
    nblocks = N // block
    rec = np.dtype([("idx", "<u4"), ("n", "<u4"), ("v", "<u8", block)])
    with open(p, "wb") as f:
        f.write(b"LATLABSM" + (1).to_bytes(4, "little") + (1).to_bytes(4, "little"))
        f.write((2).to_bytes(2, "little") + b"T0" + (-1).to_bytes(4, "little", signed=True))
        step = 2048
        for start in range(0, nblocks, step):
            m = min(step, nblocks - start)
            a = np.zeros(m, dtype=rec)
            a["n"] = block
            a["v"] = (20_000 + rng.exponential(1500.0, size=(m, block))).astype("<u8")
            a.tofile(f)
        f.write((0xFFFFFFFF).to_bytes(4, "little") + (1).to_bytes(4, "little") + bytes(8))
    return p, nblocks * block

def speed(a):
    d = scratch(dir="/var/tmp")
    hist, nh = histogram_run(a.latlab, d)
    log, nl = sample_log(d)
    cases = {f"histograms ({nh:.2e} samples)": hist, f"sample log ({nl:.2e} samples, 800 MB)": log}
    times = {k: [] for k in cases}
    for _ in range(a.rounds):
        for k, p in cases.items():
            wall, cpu, rss, code = measure([a.latlab, "tail", p, "--at", "1e-9"])
            if code not in (0, 4):
                sys.exit(f"{k}: exit {code}")
            times[k].append((wall, cpu, rss, code))
    print(f"machine: {machine()}")
    print("| input | median wall | median CPU | max RSS | exit (0 answered, 4 refused) |")
    print("|---|---|---|---|---|")
    for k, t in times.items():
        print(f"| {k} | {statistics.median(x[0] for x in t):.3f} s | "
              f"{statistics.median(x[1] for x in t):.3f} s | {max(x[2] for x in t) // 1024} MiB | "
              f"{sorted(set(x[3] for x in t))} |")
    shutil.rmtree(d)

def cargo_test(name, env):
    e = dict(os.environ, CARGO_BUILD_JOBS="2", **env)
    subprocess.run(["cargo", "test", "--release", "--lib", name, "--", "--ignored",
                    "--nocapture", "--test-threads=1"], check=True, env=e)

def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("speed")
    s.add_argument("--rounds", type=int, default=5)
    s.add_argument("--latlab", default="target/release/latlab")
    c = sub.add_parser("coverage")
    c.add_argument("--seeds", type=int, default=200)
    h = sub.add_parser("holdout")
    h.add_argument("logs", nargs="+")
    a = ap.parse_args()
    if a.cmd == "speed":
        speed(a)
    elif a.cmd == "coverage":
        print(f"machine: {machine()}")
        cargo_test("stats::evt::coverage::full", {"LATLAB_COVERAGE_SEEDS": str(a.seeds)})
    else:
        cargo_test("tail::holdout::holdout",
                   {"LATLAB_HOLDOUT_LOGS": ":".join(os.path.abspath(p) for p in a.logs)})

if __name__ == "__main__":
    main()
