#!/usr/bin/env python3
"""latlab cyclic vs cyclictest (Debian rt-tests), side by side, interleaved A B A B.

Same threads (one per CPU, pinned), SCHED_FIFO 80, interval, distance 0, quiet, JSON output,
memory locked, /dev/cpu_dma_latency 0 for both. The CPU figure is the process CPU time (user +
sys of every thread, from wait4, exact to the microsecond: the scheduler's runtime, as perf's
task-clock) divided by the wake-ups the tool itself reports; the latency figure is the mean
over threads of each tool's average. latlab's runs go to a scratch store (storing costs the
same as in your own store, without filling it).

Two modes:
- `--duration S` (default 10): each run lasts S seconds; per round, each tool's CPU per wake-up
  and average latency.
- `--loops N1,N2`: each tool runs N1 and then N2 loops per thread in every round (both
  interleaved), and the round's two CPU times give a line cpu = fixed + wake-ups * per
  (start-up and exit in `fixed`, the cost of one wake-up in `per`).

Several `--latlab PATH` (e.g. a build before and after a change) run in turn inside each round;
`--latlab "PATH ARGS"` gives one of them its own arguments (the same build with and without an
option).
`--latlab-args "--no-store"` adds arguments to every latlab run. Prints medians over rounds
with [min-max] and the ratios of medians latlab / cyclictest.

usage: bench/cyclic.py [--rounds 5] [--duration 10 | --loops 1000,10000] [--interval 1000]
                       [--latlab PATH ...] [--latlab-args ARGS]
"""
import argparse, json, os, shlex, statistics, subprocess, sys, tempfile
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import machine, scratch


def run_child(cmd):
    """Runs cmd; returns (cpu seconds user+sys, user, sys) of the whole process."""
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        sys.exit(f"{' '.join(cmd)}: exit {code}")
    return ru.ru_utime + ru.ru_stime, ru.ru_utime, ru.ru_stime


def span(a, d):
    return ["-l", str(a)] if d == "loops" else ["-D", f"{a}s"]


def latlab_run(exe, a, length, mode, d):
    out = f"{d}/l.json"
    exe, *own = shlex.split(exe)
    cmd = [exe, "cyclic", "-t", "-p", "80", "-i", f"{a.interval}us", "-d", "0", *span(length, mode),
           "-q", "--json", out, "--store", f"sqlite:{d}/runs.db", *shlex.split(a.latlab_args), *own]
    cpu, u, s = run_child(cmd)
    r = json.load(open(out))
    wakeups = sum(x["count"] for x in r["series"])
    avg_us = statistics.mean(x["mean_ns"] for x in r["series"]) / 1000
    return {"cpu": cpu, "user": u, "sys": s, "wakeups": wakeups, "avg_us": avg_us}


def cyclictest_run(a, length, mode, d):
    out = f"{d}/c.json"
    cmd = ["cyclictest", "-t", str(os.cpu_count()), "-a", "-p", "80", "-i", str(a.interval), "-d", "0",
           *(["-l", str(length)] if mode == "loops" else ["-D", str(length)]), "-q", "-m", f"--json={out}"]
    cpu, u, s = run_child(cmd)
    r = json.load(open(out))
    th = list(r["thread"].values())
    wakeups = sum(t["cycles"] for t in th)
    return {"cpu": cpu, "user": u, "sys": s, "wakeups": wakeups, "avg_us": statistics.mean(t["avg"] for t in th)}


def med(xs, digits=0):
    return f"{statistics.median(xs):.{digits}f} [{min(xs):.{digits}f}-{max(xs):.{digits}f}]"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--duration", type=int, default=10)
    p.add_argument("--loops", help="N1,N2: fit fixed + per-wake-up cost from two run lengths")
    p.add_argument("--interval", type=int, default=1000)
    p.add_argument("--latlab", action="append",
                   help="a latlab binary, optionally with its own arguments: \"PATH --no-mlock\" (repeatable)")
    p.add_argument("--latlab-args", default="", help="extra arguments for every latlab run")
    a = p.parse_args()
    exes = a.latlab or ["target/release/latlab"]
    tools = [f"latlab{i if len(exes) > 1 else ''}" for i in range(len(exes))] + ["cyclictest"]
    if a.loops:
        mode, lengths = "loops", [int(x) for x in a.loops.split(",")]
        if len(lengths) != 2 or lengths[0] >= lengths[1] or lengths[0] < 1:
            sys.exit("--loops: give N1,N2 with 1 <= N1 < N2")
    else:
        mode, lengths = "duration", [a.duration]
    d = scratch()
    res = {t: {n: [] for n in lengths} for t in tools}

    def one(tool, n):
        if tool == "cyclictest":
            return cyclictest_run(a, n, mode, d)
        return latlab_run(exes[tools.index(tool)], a, n, mode, d)

    for i in range(a.rounds):
        for n in lengths:
            line = []
            for t in tools:
                x = one(t, n)
                res[t][n].append(x)
                line.append(f"{t} {x['cpu'] * 1e3:.1f} ms / {x['wakeups']} = {x['cpu'] / x['wakeups'] * 1e9:.0f} ns "
                            f"(user {x['user'] * 1e3:.1f} sys {x['sys'] * 1e3:.1f}) avg {x['avg_us']:.2f} us")
            print(f"round {i + 1} {mode} {n}: " + " | ".join(line), flush=True)

    print(f"\n{mode}: medians over {a.rounds} rounds [min-max]")
    for t in tools:
        for n in lengths:
            xs = res[t][n]
            print(f"{t:11s} {n:>6}: cpu {med([x['cpu'] * 1e3 for x in xs], 1)} ms, "
                  f"per wake-up {med([x['cpu'] / x['wakeups'] * 1e9 for x in xs])} ns, "
                  f"avg latency {statistics.median(x['avg_us'] for x in xs):.2f} us")
    base = "cyclictest"
    for n in lengths:
        c = statistics.median(x["cpu"] / x["wakeups"] for x in res[base][n])
        ca = statistics.median(x["avg_us"] for x in res[base][n])
        for t in tools[:-1]:
            l = statistics.median(x["cpu"] / x["wakeups"] for x in res[t][n])
            la = statistics.median(x["avg_us"] for x in res[t][n])
            print(f"{n} {mode}: {t}/cyclictest CPU per wake-up {l / c:.2f}, average latency {la / ca:.2f}")
    if mode == "loops":
        n1, n2 = lengths
        print("\nfit per round: cpu = fixed + wake-ups * per")
        fits = {}
        for t in tools:
            fx, pw = [], []
            for a1, a2 in zip(res[t][n1], res[t][n2]):
                per = (a2["cpu"] - a1["cpu"]) / (a2["wakeups"] - a1["wakeups"])
                pw.append(per * 1e9)
                fx.append((a1["cpu"] - a1["wakeups"] * per) * 1e3)
            fits[t] = (fx, pw)
            print(f"{t:11s} fixed {statistics.median(fx):.2f} ms [{min(fx):.2f}-{max(fx):.2f}], "
                  f"per wake-up {med(pw)} ns")
        for t in tools[:-1]:
            print(f"{t}/cyclictest: fixed {statistics.median(fits[t][0]) / statistics.median(fits[base][0]):.2f}, "
                  f"per wake-up {statistics.median(fits[t][1]) / statistics.median(fits[base][1]):.2f}")
    print(f"machine: {machine()}; {a.rounds} rounds, interval {a.interval} us, "
          f"{mode} {','.join(map(str, lengths))}; latlab: {' '.join(exes)} {a.latlab_args}")


if __name__ == "__main__":
    sys.exit(main())
