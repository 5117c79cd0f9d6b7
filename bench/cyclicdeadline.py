#!/usr/bin/env python3
"""latlab cyclic --policy deadline vs rt-tests' cyclicdeadline, interleaved A B A B.

Same reservations on both sides: --threads deadline tasks, the first with period = deadline =
--interval µs and runtime 60 % of it (cyclicdeadline's rule, latlab's default), each further one
--step µs longer; all CPUs (cyclicdeadline --affinity=ALL makes no cpusets, latlab never pins a
deadline task). cyclicdeadline refuses runtimes under 2 ms without HRTICK (debugfs), so the
default interval is 5000 µs (runtime 3 ms). Per round: each side's average and maximum
wake-up latency (µs, mean of the threads' averages, max of their maxima) and process CPU time
per wake-up; then medians over the rounds with their ranges, and latlab's misses/throttled.
cyclicdeadline leaves /dev/cpu_dma_latency alone, so latlab runs with --no-dma-latency unless
--dma-latency keeps its default (holding it at 0, which on a VM turns idle HLT exits, tens of
µs per wake-up, into polling).

usage: bench/cyclicdeadline.py [--rounds 5] [--duration 10] [--interval 5000] [--threads 1]
                               [--step 500] [--dma-latency] [--latlab target/release/latlab]
"""
import argparse, json, os, statistics, sys, tempfile
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import machine, measure, scratch

def latlab_round(a, out):
    cmd = [a.latlab, "cyclic", "--policy", "deadline", "-t", str(a.threads),
           "--period", f"{a.interval}us", "-d", f"{a.step}us", "-D", f"{a.duration}s",
           "-q", "--no-store", "--json", out]
    if not a.dma_latency:
        cmd.append("--no-dma-latency")
    _, cpu, _, rc = measure(cmd)
    assert rc == 0, f"latlab exited {rc}: {' '.join(cmd)}"
    s = json.load(open(out))["series"]
    n = sum(x["count"] for x in s)
    return {"avg": statistics.mean(x["mean_ns"] for x in s) / 1e3,
            "max": max(x["max_ns"] for x in s) / 1e3,
            "cpu": cpu / n * 1e9, "n": n,
            "misses": sum(x["extra"]["deadline_misses"] for x in s),
            "throttled": sum(x["extra"]["runtime_overruns"] for x in s)}

def peer_round(a, out):
    cpus = f"0-{os.cpu_count() - 1}"
    cmd = ["cyclicdeadline", "-t", str(a.threads), f"--affinity={cpus}", "-i", str(a.interval),
           "-s", str(a.step), "-D", str(a.duration), "-q", f"--json={out}"]
    _, cpu, _, rc = measure(cmd)
    assert rc == 0, f"cyclicdeadline exited {rc}: {' '.join(cmd)}"
    th = list(json.load(open(out))["thread"].values())
    n = sum(t["cycles"] for t in th)
    return {"avg": statistics.mean(t["avg"] for t in th), "max": max(t["max"] for t in th),
            "cpu": cpu / n * 1e9, "n": n}

def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--duration", type=int, default=10)
    p.add_argument("--interval", type=int, default=5000)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--step", type=int, default=500)
    p.add_argument("--dma-latency", action="store_true")
    p.add_argument("--latlab", default="target/release/latlab")
    a = p.parse_args()
    d = scratch()
    L, C = [], []
    for i in range(a.rounds):
        L.append(latlab_round(a, f"{d}/l.json"))
        C.append(peer_round(a, f"{d}/c.json"))
        print(f"round {i+1}: latlab avg {L[-1]['avg']:.1f} max {L[-1]['max']:.0f} us "
              f"cpu/wake-up {L[-1]['cpu']:.0f} ns ({L[-1]['n']} wake-ups, misses "
              f"{L[-1]['misses']}, throttled {L[-1]['throttled']}) | cyclicdeadline avg "
              f"{C[-1]['avg']:.1f} max {C[-1]['max']:.0f} us cpu/wake-up {C[-1]['cpu']:.0f} ns "
              f"({C[-1]['n']} wake-ups)", file=sys.stderr, flush=True)
    m = lambda v, k: statistics.median(x[k] for x in v)
    rng = lambda v, k, f: f"{min(x[k] for x in v):{f}}-{max(x[k] for x in v):{f}}"
    print("| figure | latlab [range] | cyclicdeadline [range] | ratio |")
    print("|---|---|---|---|")
    for k, name, f in [("avg", "avg latency (µs)", ".1f"), ("max", "max latency (µs)", ".0f"),
                       ("cpu", "CPU per wake-up (ns)", ".0f")]:
        print(f"| {name} | {m(L, k):{f}} [{rng(L, k, f)}] | {m(C, k):{f}} [{rng(C, k, f)}] | "
              f"{m(L, k) / m(C, k):.2f} |")
    print(f"\nlatlab misses per round {[x['misses'] for x in L]}, throttled "
          f"{[x['throttled'] for x in L]}")
    print(f"machine: {machine()}; {a.rounds} interleaved rounds x {a.duration} s, {a.threads} "
          f"thread(s), period {a.interval} µs (+{a.step} µs each further), runtime 60 %, latlab "
          f"{'holding /dev/cpu_dma_latency at 0' if a.dma_latency else '--no-dma-latency'}")

if __name__ == "__main__":
    sys.exit(main())
