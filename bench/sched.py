#!/usr/bin/env python3
"""`latlab sched --all` vs `perf sched record -a` on the same hackbench load, interleaved
(bare, latlab, perf, bare, ...): the tracer's CPU time (user+sys, from wait4), the slowdown of
hackbench itself, and the events each side read; perf's side is also counted with the
`perf sched timehist` that turns its capture into per-thread figures (latlab computes those
live, so its peer is record + timehist); then the highest event rate latlab's reader sustains
before the kernel loses an event (hackbench groups raised until a loss; --no-sustained skips).

usage: bench/sched.py [--rounds 5] [--groups 10] [--loops 200] [--no-sustained]
                     [--latlab BIN [--latlab BIN2] | --engines]
Two --latlab binaries (before and after a change) run interleaved in every round, each against
the same round's perf; the sustained rate is measured with the last one. --engines runs one
binary twice per round instead, LATLAB_TRACER=tracefs then =bpf (the in-kernel engine).
The in-kernel engine's programs run in the traced tasks, not in latlab: its tracer CPU alone
flatters it, so hackbench's own slowdown is printed beside it (perf's ring writes are charged
the same way).
"""
import argparse, json, os, re, signal, statistics, subprocess, sys, tempfile, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import machine, scratch

def hackbench(groups, loops):
    out = subprocess.run(["hackbench", "-g", str(groups), "-l", str(loops), "-P"],
                         check=True, capture_output=True, text=True).stdout
    return float(re.search(r"Time: ([\d.]+)", out).group(1))

def traced(cmd, groups, loops, env=None):
    """Starts cmd, runs hackbench under it, stops cmd with SIGINT; returns (hackbench s, cmd cpu s)."""
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         env=None if env is None else {**os.environ, **env})
    time.sleep(1.5)  # tracing on
    h = hackbench(groups, loops)
    p.send_signal(signal.SIGINT)
    _, status, ru = os.wait4(p.pid, 0)
    return h, ru.ru_utime + ru.ru_stime

def cpu_of(cmd):
    """Runs cmd to its end (output discarded); returns its CPU seconds (user+sys, from wait4)."""
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    if status != 0:
        raise SystemExit(f"{' '.join(cmd)}: exit status {status}")
    return ru.ru_utime + ru.ru_stime

def sustained(latlab, loops, tmp, env=None):
    """Raises hackbench's groups until latlab's reader loses events; returns [(groups, ev/s, lost)]."""
    rows = []
    for groups in (2, 5, 10, 20, 40):
        j = os.path.join(tmp, f"s{groups}.json")
        p = subprocess.Popen([latlab, "sched", "--all", "--no-store", "--json", j],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             env=None if env is None else {**os.environ, **env})
        time.sleep(1.5)
        hackbench(groups, loops)
        p.send_signal(signal.SIGINT)
        p.wait()
        par = json.load(open(j))["parameters"]
        rows.append((groups, par["events_per_s"], par["lost_events"]))
        print(f"groups {groups}: {par['events_per_s']:.0f} events/s, {par['lost_events']} lost", flush=True)
        if par["lost_events"] > 0:
            break
    return rows

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--groups", type=int, default=10)
    ap.add_argument("--loops", type=int, default=200)
    ap.add_argument("--latlab", action="append", default=None,
                    help="latlab binary (twice: before and after, interleaved)")
    ap.add_argument("--no-sustained", action="store_true")
    ap.add_argument("--runqlat", action="store_true",
                    help="also bcc's runqlat (bpfcc-tools) in every round")
    ap.add_argument("--engines", action="store_true",
                    help="one binary, LATLAB_TRACER=tracefs and =bpf interleaved")
    a = ap.parse_args()
    bins = a.latlab or ["target/release/latlab"]
    envs = [None] * len(bins)
    if a.engines:
        bins = [bins[0], bins[0]]
        envs = [{"LATLAB_TRACER": "tracefs"}, {"LATLAB_TRACER": "bpf"}]
    label = lambda k: bins[k] + (f" ({envs[k]['LATLAB_TRACER']})" if envs[k] else "")
    tmp = scratch(prefix="latlab-bench-sched-")
    data = os.path.join(tmp, "perf.data")
    bare, ph, pc, tc, rh, rc = [], [], [], [], [], []
    lhs, lcs = [[] for _ in bins], [[] for _ in bins]
    for i in range(a.rounds):
        bare.append(hackbench(a.groups, a.loops))
        # Each binary first in every other round.
        for k in (range(len(bins)) if i % 2 == 0 else reversed(range(len(bins)))):
            b = bins[k]
            h, c = traced([b, "sched", "--all", "--no-store"], a.groups, a.loops, envs[k])
            lhs[k].append(h); lcs[k].append(c)
        h, c = traced(["perf", "sched", "record", "-a", "-o", data], a.groups, a.loops)
        ph.append(h); pc.append(c)
        tc.append(cpu_of(["perf", "sched", "timehist", "-i", data]))
        if a.runqlat:
            # bcc compiles its program at start (clang in process): its CPU includes that.
            h, c = traced(["runqlat-bpfcc"], a.groups, a.loops)
            rh.append(h); rc.append(c)
        under = " | ".join(f"under {label(k)} {lhs[k][-1]:.3f} s (cpu {lcs[k][-1]:.3f} s)"
                           for k in range(len(bins)))
        print(f"round {i+1}: hackbench bare {bare[-1]:.3f} s | {under} | under perf "
              f"{ph[-1]:.3f} s (perf record cpu {pc[-1]:.3f} s, timehist cpu {tc[-1]:.3f} s)",
              flush=True)
    m = statistics.median
    for k, b in enumerate(bins):
        if len(bins) > 1:
            print(f"--- {label(k)}")
        report(lhs[k], lcs[k], bare, ph, pc, tc)
    if len(bins) > 1:
        per = sorted(y / x for x, y in zip(lcs[0], lcs[-1]))
        print(f"{label(len(bins)-1)} / {label(0)} tracer CPU: ratio of medians "
              f"{m(lcs[-1])/m(lcs[0]):.2f}, per-round {per[0]:.2f}-{per[-1]:.2f}")
        hb = sorted(y / x for x, y in zip(lhs[0], lhs[-1]))
        print(f"{label(len(bins)-1)} / {label(0)} hackbench time: ratio of medians "
              f"{m(lhs[-1])/m(lhs[0]):.2f}, per-round {hb[0]:.2f}-{hb[-1]:.2f}")
    if rc:
        for k in range(len(bins)):
            per = sorted(l / r for l, r in zip(lcs[k], rc))
            print(f"{label(k)} / runqlat tracer CPU: ratio of medians {m(lcs[k])/m(rc):.2f} "
                  f"(runqlat {m(rc):.3f} s [{min(rc):.3f}-{max(rc):.3f}]), per-round "
                  f"{per[0]:.2f}-{per[-1]:.2f}; hackbench under runqlat {m(rh):.3f} s "
                  f"({m(rh)/m(bare):.2f}x bare)")
    rows = [] if a.no_sustained else sustained(bins[-1], a.loops, tmp, envs[-1])
    ok = [r for r in rows if r[2] == 0]
    if ok:
        print(f"highest rate read with 0 lost events: {max(r[1] for r in ok):.0f} events/s")
    print(f"machine: {machine()}; {a.rounds} rounds, hackbench -g {a.groups} -l {a.loops} -P")

def report(lh, lc, bare, ph, pc, tc):
    """Prints one latlab's medians against perf's (same rounds)."""
    m = statistics.median
    print(f"median tracer CPU: latlab {m(lc):.3f} s, perf {m(pc):.3f} s, ratio {m(lc)/m(pc):.2f} "
          f"(spread latlab {min(lc):.3f}-{max(lc):.3f}, perf {min(pc):.3f}-{max(pc):.3f})")
    both = [p + t for p, t in zip(pc, tc)]
    ratios = sorted(l / b for l, b in zip(lc, both))
    print(f"median perf record + timehist CPU {m(both):.3f} s (spread {min(both):.3f}-"
          f"{max(both):.3f}); latlab / (record + timehist): ratio of medians "
          f"{m(lc)/m(both):.2f}, per-round ratios {ratios[0]:.2f}-{ratios[-1]:.2f}")
    print(f"median hackbench: bare {m(bare):.3f} s, under latlab {m(lh):.3f} s "
          f"({m(lh)/m(bare):.2f}x), under perf {m(ph):.3f} s ({m(ph)/m(bare):.2f}x)")

if __name__ == "__main__":
    sys.exit(main())
