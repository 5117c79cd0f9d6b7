#!/usr/bin/env python3
"""latlab timerlat beside rtla timerlat hist, on the same kernel, CPUs and period: one
PREEMPT_RT guest (scripts/guest.sh) runs PAIRS interleaved pairs (rtla first, then latlab,
then the next pair), each -d/-D SECONDS on every guest CPU at a 1000 us period, under os.wait4
so each tool's own CPU time is counted.

Per pair and CPU it compares what both read from the same tracer: the sample counts (IRQ and
thread), the mean and the maximum of the thread latency, and the CPU time each tool used. Under
TCG every latency is the emulator's: the ratios say whether both tools see the same samples,
not what the kernel achieves on hardware.

usage: bench/timerlat.py [--cpus 4] [--pairs 5] [--duration 5] [--kernel rt]
                         [--latlab target/release/latlab]
       bench/timerlat.py --inner OUT LATLAB PAIRS DURATION     (what runs inside the guest)
"""
import argparse, json, os, statistics, subprocess, sys, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import machine, scratch


def run(cmd, out):
    t0 = time.monotonic()
    with open(out, "w") as f:
        p = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT)
        _, status, ru = os.wait4(p.pid, 0)
    return {"wall_s": time.monotonic() - t0, "cpu_s": ru.ru_utime + ru.ru_stime,
            "rc": os.waitstatus_to_exitcode(status)}


def rtla_columns(text):
    """rtla timerlat hist's summary rows: {column: {count, avg_us, max_us}}."""
    cols, rows = [], {}
    for line in text.splitlines():
        t = line.split()
        if t and t[0] == "Index":
            cols = t[1:]
        elif t and t[0] in ("count:", "avg:", "max:") and cols:
            rows[t[0][:-1]] = t[1:]
    return {c: {"count": int(rows["count"][i]), "avg_us": float(rows["avg"][i]),
                "max_us": float(rows["max"][i])} for i, c in enumerate(cols)}


def latlab_columns(run):
    out = {}
    for s in run["series"]:
        ctx, cpu = s["name"].split("-")
        name = {"irq": "IRQ", "thread": "Thr", "user": "Usr"}[ctx] + f"-{int(cpu):03d}"
        out[name] = {"count": s["count"], "avg_us": s["mean_ns"] / 1000,
                     "max_us": s["max_ns"] / 1000, "lost": s.get("lost_samples", 0)}
    return out


def inner(out, latlab, pairs, duration):
    n = os.cpu_count()
    cpus = f"0-{n - 1}"
    res = {"cpus": n, "pairs": []}
    for i in range(pairs):
        r = run(["rtla", "timerlat", "hist", "-c", cpus, "-p", "1000", "-d", str(duration)],
                os.path.join(out, f"rtla{i}.txt"))
        r["cols"] = rtla_columns(open(os.path.join(out, f"rtla{i}.txt")).read())
        j = os.path.join(out, f"latlab{i}.json")
        l = run([latlab, "timerlat", "-a", cpus, "-i", "1000", "-D", f"{duration}s", "-q",
                 "--no-store", "--json", j], os.path.join(out, f"latlab{i}.txt"))
        l["cols"] = latlab_columns(json.load(open(j)))
        res["pairs"].append({"rtla": r, "latlab": l})
    json.dump(res, open(os.path.join(out, "timerlat.json"), "w"), indent=1)


def spread(xs):
    return f"{statistics.median(xs):.3f} ({min(xs):.3f}–{max(xs):.3f})"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cpus", type=int, default=4)
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--duration", type=int, default=5)
    ap.add_argument("--kernel", default="rt")
    ap.add_argument("--latlab", default="target/release/latlab")
    ap.add_argument("--inner", nargs=4)
    a = ap.parse_args()
    if a.inner:
        return inner(a.inner[0], a.inner[1], int(a.inner[2]), int(a.inner[3]))
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = scratch(dir=os.path.join(root, "target"))
    subprocess.run(["bash", os.path.join(root, "scripts/guest.sh"), "--kernel", a.kernel,
                    "--cpus", str(a.cpus), "--memory", "2G", "--timeout", "1800", "--",
                    "python3", os.path.abspath(__file__), "--inner", out,
                    os.path.abspath(a.latlab), str(a.pairs), str(a.duration)],
                   check=True, cwd=root)
    res = json.load(open(os.path.join(out, "timerlat.json")))
    count, mean, mx, cpu, lost = [], [], [], [], 0
    for p in res["pairs"]:
        r, l = p["rtla"], p["latlab"]
        assert r["rc"] == 0 and l["rc"] == 0, p
        for c, lv in l["cols"].items():
            rv = r["cols"][c]
            count.append(lv["count"] / max(rv["count"], 1))
            lost += lv["lost"]
            if c.startswith("Thr"):
                mean.append(lv["avg_us"] / max(rv["avg_us"], 1e-9))
                mx.append(lv["max_us"] / max(rv["max_us"], 1e-9))
        cpu.append(l["cpu_s"] / max(r["cpu_s"], 1e-9))
    print(f"guest: {a.kernel} kernel, {res['cpus']} vCPUs under TCG (emulated), "
          f"{a.pairs} interleaved pairs of -d {a.duration}s at 1000 us; host {machine()}")
    print("| latlab timerlat / rtla timerlat hist | median (min–max) |")
    print("|---|---|")
    print(f"| samples per CPU and context | {spread(count)} |")
    print(f"| mean thread latency per CPU | {spread(mean)} |")
    print(f"| max thread latency per CPU | {spread(mx)} |")
    print(f"| CPU time of the tool | {spread(cpu)} |")
    print(f"| samples latlab lost | {lost} |")


if __name__ == "__main__":
    main()
