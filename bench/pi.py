#!/usr/bin/env python3
"""latlab pi vs pi_stress (Debian rt-tests), side by side, interleaved A B A B.

Both run one inversion group (a low, a medium and a high SCHED_FIFO task on one CPU sharing a
priority-inheritance mutex) for the same duration, memory locked. Per run: pass or fail (exit
status), the scenarios run (latlab: cycles; pi_stress: "inversion", the inversions it
performed), latlab's count of observed inversions (medium ran while high waited) and the
distribution of high's wait for the mutex, and the process CPU time (user + sys, wait4).
pi_stress reports no times: its verdict is pass (exit 0) or fail (a deadlock it detects, the
symptom of inheritance not working).

latlab runs in two settings: its default (one cycle every 20 ms: critical section 100 us,
medium spin 2 ms) and a fast one (--cs 10us --spin 20us -i 100us), nearer pi_stress, which
runs its scenarios back to back. `--none` adds a latlab run with --protocol none, which must
fail (exit 1) with every cycle inverted: the mechanism pi_stress can only show as a deadlock.

usage: bench/pi.py [--rounds 3] [--duration 5] [--none] [--latlab target/release/latlab]
"""
import argparse, json, os, statistics, subprocess, sys, tempfile
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import machine, scratch

LATLAB_SETTINGS = {
    "latlab default": ["--protocol", "inherit"],
    "latlab fast": ["--protocol", "inherit", "--cs", "10us", "--spin", "20us", "-i", "100us"],
}


def run(cmd):
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    return os.waitstatus_to_exitcode(status), ru.ru_utime + ru.ru_stime


def latlab(exe, args, a, d):
    out = f"{d}/l.json"
    if os.path.exists(out):
        os.unlink(out)
    code, cpu = run([exe, "pi", "-D", f"{a.duration}s", *args, "--json", out,
                     "--store", f"sqlite:{d}/runs.db"])
    s = json.load(open(out))["series"][0]
    x = s["extra"]
    return {"code": code, "cpu_ms": cpu * 1e3, "scenarios": x["cycles"], "inversions": x["inversions"],
            "p50_us": s["percentiles"]["p50"] / 1e3, "p99_us": s["percentiles"]["p99"] / 1e3,
            "max_us": s["max_ns"] / 1e3}


def pi_stress(a, d):
    out = f"{d}/p.json"
    if os.path.exists(out):
        os.unlink(out)
    code, cpu = run(["pi_stress", "-D", str(a.duration), "-g", "1", "-m", "-q", f"--json={out}"])
    r = json.load(open(out)) if os.path.exists(out) else {}
    return {"code": code, "cpu_ms": cpu * 1e3, "scenarios": r.get("inversion", 0)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration", type=int, default=5)
    ap.add_argument("--none", action="store_true", help="also run latlab --protocol none")
    ap.add_argument("--latlab", default="target/release/latlab")
    a = ap.parse_args()
    d = scratch()
    settings = dict(LATLAB_SETTINGS)
    if a.none:
        settings["latlab none"] = ["--protocol", "none"]
    res = {k: [] for k in [*settings, "pi_stress"]}
    for i in range(a.rounds):
        for name, args in settings.items():
            res[name].append(latlab(a.latlab, args, a, d))
        res["pi_stress"].append(pi_stress(a, d))
        print(f"round {i + 1}: " + " | ".join(
            f"{k} exit {v[-1]['code']} scenarios {v[-1]['scenarios']}"
            + (f" inversions {v[-1]['inversions']} wait p50 {v[-1]['p50_us']:.1f} max {v[-1]['max_us']:.1f} us"
               if "inversions" in v[-1] else "")
            + f" cpu {v[-1]['cpu_ms']:.0f} ms" for k, v in res.items()), flush=True)
    print(f"\nmedians over {a.rounds} rounds of {a.duration} s [min-max]")
    for k, v in res.items():
        verdict = "pass" if all(x["code"] == 0 for x in v) else \
            "fail" if all(x["code"] != 0 for x in v) else "mixed"
        exits = ",".join(str(x["code"]) for x in v)
        sc = [x["scenarios"] for x in v]
        cpu = [x["cpu_ms"] for x in v]
        line = (f"{k:15s} {verdict} (exits {exits}), scenarios {statistics.median(sc):.0f} "
                f"[{min(sc)}-{max(sc)}], cpu {statistics.median(cpu):.0f} ms [{min(cpu):.0f}-{max(cpu):.0f}], "
                f"cpu per scenario {statistics.median(c / max(s, 1) * 1e3 for c, s in zip(cpu, sc)):.1f} us")
        if "inversions" in v[0]:
            inv = [x["inversions"] for x in v]
            line += (f", inversions {statistics.median(inv):.0f} [{min(inv)}-{max(inv)}], wait p50 "
                     f"{statistics.median(x['p50_us'] for x in v):.1f} us, p99 "
                     f"{statistics.median(x['p99_us'] for x in v):.1f} us, max "
                     f"{statistics.median(x['max_us'] for x in v):.1f} us [{min(x['max_us'] for x in v):.1f}-"
                     f"{max(x['max_us'] for x in v):.1f}]")
        print(line)
    print(f"machine: {machine()}; latlab {a.latlab}")


if __name__ == "__main__":
    sys.exit(main())
