#!/usr/bin/env python3
"""Overhead of `--trace` on `latlab cyclic`, interleaved A B A B: without and with tracing,
same threads (one per CPU, SCHED_FIFO 80, 1 kHz), same duration. Prints per-round average and
p99 latency (mean and max over threads), CPU time (user + system of the latlab process) and,
for the traced runs, events read and lost, then the ratio of medians traced/untraced with the
spread of the per-pair ratios. `--stacks` traces with `--trace-stacks` too.

`--engines` traces with each flight recorder in turn (A B C A B C): B with the in-kernel one
(LATLAB_TRACER=bpf), C with tracefs (LATLAB_TRACER=tracefs), each against the same plain runs.

`--plus-event SYS/NAME` adds a third arm instead: traced (tracefs) with that event also enabled
in latlab's instance (written into its `enable` as soon as the instance appears), so the cost of
one more event per wake-up is measured with the same binary (the event latlab's tracing used to
enable, say); B is then tracefs too.

usage: bench/trace.py [--rounds 8] [--duration 10] [--stacks] [--engines | --plus-event SYS/NAME]
                      [--latlab PATH]
"""
import argparse, json, os, statistics, subprocess, sys, tempfile, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import scratch

TRACEFS = "/sys/kernel/tracing"

def plus_event(pid, event):
    """Enables `event` in latlab's instance of process `pid` once it exists (within 3 s)."""
    path = f"{TRACEFS}/instances/latlab-{pid}/events/{event}/enable"
    end = time.monotonic() + 3
    while time.monotonic() < end:
        try:
            with open(path, "w") as f:
                f.write("1")
            return
        except OSError:
            time.sleep(0.002)
    raise SystemExit(f"{path}: did not appear within 3 s")

def one(exe, a, out, trace, plus=None, engine=None):
    cmd = [exe, "cyclic", "-t", "-a", "-p", "80", "-i", "1000us", "-D", f"{a.duration}s",
           "-q", "--no-store", "--json", out]
    if trace:
        cmd += ["--trace", "--trace-threshold", "100us"]
        if a.stacks:
            cmd += ["--trace-stacks"]
    env = dict(os.environ)
    if engine:
        env["LATLAB_TRACER"] = engine
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    if plus:
        plus_event(p.pid, plus)
    _, status, ru = os.wait4(p.pid, 0)
    if status != 0:
        raise SystemExit(f"{' '.join(cmd)}: exit status {status}")
    r = json.load(open(out))
    avg = statistics.mean(s["mean_ns"] for s in r["series"]) / 1000
    p99 = max(s["percentiles"]["p99"] for s in r["series"]) / 1000
    t = r.get("trace") or {}
    cpu = ru.ru_utime + ru.ru_stime
    return (avg, p99, t.get("events", 0), t.get("lost_events", 0), len(t.get("spikes", [])),
            cpu, t.get("engine", "tracefs"))

def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=8)
    p.add_argument("--stacks", action="store_true")
    p.add_argument("--duration", type=int, default=10)
    p.add_argument("--latlab", default="target/release/latlab")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--plus-event")
    g.add_argument("--engines", action="store_true")
    a = p.parse_args()
    eb = "bpf" if a.engines else "tracefs" if a.plus_event else None
    d = scratch()
    A, B, C = [], [], []
    for i in range(a.rounds):
        A.append(one(a.latlab, a, f"{d}/a.json", False))
        B.append(one(a.latlab, a, f"{d}/b.json", True, engine=eb))
        print(f"round {i+1}: plain avg {A[-1][0]:.2f} us p99 {A[-1][1]:.1f} us | traced avg "
              f"{B[-1][0]:.2f} us p99 {B[-1][1]:.1f} us, {B[-1][2]} events "
              f"({B[-1][2]/a.duration:.0f}/s), {B[-1][3]} lost, {B[-1][4]} spikes | CPU {A[-1][5]:.2f} s / {B[-1][5]:.2f} s", flush=True)
        if a.engines:
            C.append(one(a.latlab, a, f"{d}/c.json", True, engine="tracefs"))
            print(f"         tracefs: avg {C[-1][0]:.2f} us p99 {C[-1][1]:.1f} us, {C[-1][2]} events, "
                  f"{C[-1][3]} lost | CPU {C[-1][5]:.2f} s", flush=True)
        if a.plus_event:
            C.append(one(a.latlab, a, f"{d}/c.json", True, a.plus_event, engine="tracefs"))
            print(f"         + {a.plus_event}: avg {C[-1][0]:.2f} us p99 {C[-1][1]:.1f} us, "
                  f"{C[-1][2]} events ({C[-1][2]/a.duration:.0f}/s), {C[-1][3]} lost | "
                  f"CPU {C[-1][5]:.2f} s", flush=True)
    ma, mb = statistics.median(x[0] for x in A), statistics.median(x[0] for x in B)
    pa, pb = statistics.median(x[1] for x in A), statistics.median(x[1] for x in B)
    print(f"traced with: {sorted(set(x[6] for x in B))}")
    print(f"median avg: plain {ma:.2f} us, traced {mb:.2f} us, ratio {mb/ma:.2f}")
    print(f"median p99: plain {pa:.1f} us, traced {pb:.1f} us, ratio {pb/pa:.2f}")
    ca, cb = statistics.median(x[5] for x in A), statistics.median(x[5] for x in B)
    print(f"median CPU time: plain {ca:.2f} s, traced {cb:.2f} s, ratio {cb/max(ca, 1e-9):.2f}")
    r = sorted(b[0] / a_[0] for a_, b in zip(A, B))
    print(f"per-pair avg ratios: min {r[0]:.2f}, median {statistics.median(r):.2f}, "
          f"max {r[-1]:.2f}")
    if C and a.engines:
        mc = statistics.median(x[0] for x in C)
        rc = sorted(c[0] / a_[0] for a_, c in zip(A, C))
        print(f"tracefs ({sorted(set(x[6] for x in C))}): median avg {mc:.2f} us, ratio to plain "
              f"{mc/ma:.2f} (per-pair {rc[0]:.2f}-{rc[-1]:.2f}); median p99 ratio "
              f"{statistics.median(x[1] for x in C)/pa:.2f}; median CPU time "
              f"{statistics.median(x[5] for x in C):.2f} s")
    if C and a.plus_event:
        mc = statistics.median(x[0] for x in C)
        rc = sorted(c[0] / a_[0] for a_, c in zip(A, C))
        print(f"+ {a.plus_event}: median avg {mc:.2f} us, ratio to plain {mc/ma:.2f} (per-round "
              f"{rc[0]:.2f}-{rc[-1]:.2f}), median p99 ratio "
              f"{statistics.median(x[1] for x in C)/pa:.2f}, events/s "
              f"{statistics.median(x[2] for x in C)/a.duration:.0f} against "
              f"{statistics.median(x[2] for x in B)/a.duration:.0f}")
    print(f"lost events over all traced runs: {sum(x[3] for x in B + C)}")
    print(f"machine: {os.uname().release}, {os.cpu_count()} CPUs; "
          f"{a.rounds} rounds x {a.duration} s, {time.strftime('%Y-%m-%d')}")

if __name__ == "__main__":
    sys.exit(main())
