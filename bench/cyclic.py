#!/usr/bin/env python3
"""latlab cyclic vs cyclictest (Debian rt-tests), side by side, interleaved A B A B.

Same threads, priority, interval and duration for both. Per round it records each tool's CPU
time per wake-up (user+sys of the whole process, from getrusage of the child) and its average
latency (mean over threads). Prints per-round figures and the ratio of medians latlab/cyclictest.

usage: bench/cyclic.py [--rounds 5] [--duration 10] [--interval 1000] [--latlab PATH]
"""
import argparse, json, os, resource, statistics, subprocess, sys, tempfile, time

USER_SYS = {}

def run_child(cmd):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    USER_SYS[cmd[0]] = (after.ru_utime - before.ru_utime, after.ru_stime - before.ru_stime)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)

def latlab_round(exe, a, out):
    cmd = [exe, "cyclic", "-t", "-p", "80", "-i", f"{a.interval}us", "-d", "0",
           "-D", f"{a.duration}s", "-q", "--json", out]
    cpu = run_child(cmd)
    r = json.load(open(out))
    wakeups = sum(s["count"] for s in r["series"])
    u, s_ = USER_SYS[cmd[0]]
    print(f"  latlab user {u/wakeups*1e9:.0f} ns + sys {s_/wakeups*1e9:.0f} ns per wake-up")
    avg_us = statistics.mean(s["mean_ns"] for s in r["series"]) / 1000
    return cpu / wakeups * 1e9, avg_us

def cyclictest_round(a, out):
    cmd = ["cyclictest", "-t", str(os.cpu_count()), "-a", "-p", "80", "-i", str(a.interval),
           "-d", "0", "-D", str(a.duration), "-q", "-m", f"--json={out}"]
    cpu = run_child(cmd)
    r = json.load(open(out))
    th = list(r["thread"].values())
    wakeups = sum(t["cycles"] for t in th)
    u, s_ = USER_SYS[cmd[0]]
    print(f"  cyclictest user {u/wakeups*1e9:.0f} ns + sys {s_/wakeups*1e9:.0f} ns per wake-up")
    avg_us = statistics.mean(t["avg"] for t in th)
    return cpu / wakeups * 1e9, avg_us

def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--duration", type=int, default=10)
    p.add_argument("--interval", type=int, default=1000)
    p.add_argument("--latlab", default="target/release/latlab")
    a = p.parse_args()
    d = tempfile.mkdtemp()
    L, C = [], []
    for i in range(a.rounds):
        L.append(latlab_round(a.latlab, a, f"{d}/l.json"))
        C.append(cyclictest_round(a, f"{d}/c.json"))
        print(f"round {i+1}: latlab cpu/wakeup {L[-1][0]:.0f} ns avg {L[-1][1]:.2f} us | "
              f"cyclictest cpu/wakeup {C[-1][0]:.0f} ns avg {C[-1][1]:.2f} us", flush=True)
    mlc, mcc = statistics.median(x[0] for x in L), statistics.median(x[0] for x in C)
    mla, mca = statistics.median(x[1] for x in L), statistics.median(x[1] for x in C)
    print(f"median cpu/wakeup: latlab {mlc:.0f} ns, cyclictest {mcc:.0f} ns, ratio {mlc/mcc:.2f}")
    print(f"median avg latency: latlab {mla:.2f} us, cyclictest {mca:.2f} us, ratio {mla/mca:.2f}")
    print(f"machine: {os.uname().release}, {os.cpu_count()} CPUs; "
          f"{a.rounds} rounds x {a.duration} s, interval {a.interval} us, {time.strftime('%Y-%m-%d')}")

if __name__ == "__main__":
    sys.exit(main())
