#!/usr/bin/env python3
"""latlab ipc vs rt-tests' pmqtest, ptsematest, svsematest, sigwaittest: the wake-up latency
from send to the receiver running, interleaved A B A B, medians of the per-run average and
maximum (µs), and the process CPU time of each side.

Both sides pin the sender and the receiver to one CPU at SCHED_FIFO, send every --interval µs,
--loops messages, both tasks at the same priority as rt-tests runs them (latlab's
--sender-priority; its default is one below the receiver).

usage: bench/ipc.py [--rounds 5] [--loops 2000] [--interval 1000] [--cpu 1] [--prio 80]
                    [--latlab target/release/latlab] [--only pmqtest,signaltest]
"""
import argparse, json, os, statistics, subprocess, sys, tempfile
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import machine, measure, scratch

# (peer, its extra flags, latlab's method, latlab's extra flags)
ALL_PAIRS = [("pmqtest", [], "pmq", []), ("ptsematest", [], "posix-sem", []),
         ("svsematest", [], "sysv-sem", []), ("sigwaittest", [], "sigwait", []),
         ("svsematest", ["-f"], "sysv-sem", ["--tasks", "processes"]),
         ("sigwaittest", ["-f"], "sigwait", ["--tasks", "processes"]),
         # signaltest: a signal round a ring of 3 threads, round trips (thread 0's figures)
         ("signaltest", ["-t", "3", "-m"], "sigwait", ["--ring", "3"])]

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--loops", type=int, default=2000)
    ap.add_argument("--interval", type=int, default=1000)
    ap.add_argument("--cpu", type=int, default=1)
    ap.add_argument("--prio", type=int, default=80)
    ap.add_argument("--latlab", default="target/release/latlab")
    ap.add_argument("--only", help="comma-separated peers to run (default: all)")
    a = ap.parse_args()
    d = scratch()
    rows = []
    only = set(a.only.split(",")) if a.only else None
    PAIRS = [p for p in ALL_PAIRS if only is None or p[0] in only]
    for tool, targs, method, largs in PAIRS:
        # signaltest has no interval: it pauses 10 ms every 16 round trips, as --ring does.
        ring = "--ring" in largs
        pace_latlab = [] if ring else ["-i", f"{a.interval}us"]
        pace_peer = [] if ring else ["-i", str(a.interval)]
        L, R = {"avg": [], "max": [], "cpu": []}, {"avg": [], "max": [], "cpu": []}
        for _ in range(a.rounds):
            lj, rj = os.path.join(d, "l.json"), os.path.join(d, "r.json")
            _, cpu, _, rc = measure([a.latlab, "ipc", "--method", method, "-a", str(a.cpu),
                                     "-p", str(a.prio), "--sender-priority", str(a.prio),
                                     "-l", str(a.loops), "--no-store", "--json", lj]
                                    + pace_latlab + largs)
            assert rc == 0, f"latlab ipc --method {method} exited {rc}"
            s = json.load(open(lj))["series"][0]
            L["avg"].append(s["mean_ns"] / 1e3); L["max"].append(s["max_ns"] / 1e3); L["cpu"].append(cpu)
            _, cpu, _, rc = measure([tool] + targs + ["-a", str(a.cpu), "-p", str(a.prio), "-l", str(a.loops),
                                     "-q", f"--json={rj}"] + pace_peer)
            assert rc == 0, f"{tool} exited {rc}"
            t0 = json.load(open(rj))["thread"]["0"]
            r = t0.get("receiver", t0)
            R["avg"].append(r["avg"]); R["max"].append(r["max"]); R["cpu"].append(cpu)
        m = lambda v: statistics.median(v)
        spread = lambda v: f"{min(v):.1f}-{max(v):.1f}"
        rows.append((" ".join([tool] + targs), " ".join([method] + largs), m(L["avg"]), spread(L["avg"]), m(R["avg"]), spread(R["avg"]),
                     m(L["max"]), m(R["max"]), m(L["cpu"]) * 1e3, m(R["cpu"]) * 1e3))
        print(f"{tool} {targs}: done", file=sys.stderr, flush=True)
    print("| peer | latlab ipc --method | avg latlab (µs) [range] | avg peer (µs) [range] | "
          "avg ratio | max latlab | max peer | CPU ms latlab | CPU ms peer |")
    print("|---|---|---|---|---|---|---|---|---|")
    for t, meth, la, lr, ra, rr, lm, rm, lc, rc in rows:
        print(f"| {t} | {meth} | {la:.1f} [{lr}] | {ra:.1f} [{rr}] | {la/ra:.2f} | {lm:.0f} | {rm:.0f} "
              f"| {lc:.0f} | {rc:.0f} |")
    print(f"\nmachine: {machine()}; {a.rounds} interleaved rounds x {a.loops} messages every "
          f"{a.interval} µs on CPU {a.cpu}, FIFO {a.prio}")

if __name__ == "__main__":
    sys.exit(main())
