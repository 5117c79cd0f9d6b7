#!/usr/bin/env python3
"""latlab at scale: its own CPU time and peak memory per measured CPU in PREEMPT_RT guests of
2, 4, 8 and 16 vCPUs (scripts/guest.sh), with the samples and trace events it lost.

One boot per size runs, in turn, `cyclic -t --samples`, `noise -a`, `cyclic -t --trace` and
`monitor -a` (each -D SECONDS, every CPU measured) under os.wait4, so the figures are latlab's
own process tree: user+system CPU seconds and peak RSS. Under TCG every latency is the
emulator's; what this measures is how latlab's cost grows with the CPU count (a ratio per CPU
between sizes, in the same emulator), not what it costs on hardware.

usage: bench/guest_scale.py [--sizes 2,4,8,16] [--duration 5] [--kernel rt]
                            [--latlab target/release/latlab]
       bench/guest_scale.py --inner OUT LATLAB DURATION     (what runs inside each guest)
"""
import argparse, json, os, subprocess, sys, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import machine, scratch

WORK = ["cyclic", "noise", "trace", "monitor"]


def inner(out, latlab, duration):
    """Inside the guest: each workload once, its rusage and what it lost, into OUT/scale.json."""
    res = {"cpus": os.cpu_count()}
    d = f"{duration}s"
    for w in WORK:
        j = os.path.join("/tmp", f"{w}.json")
        args = {
            "cyclic": ["cyclic", "-t", "-D", d, "--samples", "/tmp/s.log"],
            "noise": ["noise", "-a", "-D", d],
            "trace": ["cyclic", "-t", "-D", d, "--trace", "--trace-threshold", "10ms"],
            "monitor": ["monitor", "-a", "-D", d, "--listen", "127.0.0.1:0"],
        }[w]
        cmd = [latlab] + args + ["-q", "--no-store", "--json", j]
        if w == "monitor":
            cmd.remove("-q")
        t0 = time.monotonic()
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _, status, ru = os.wait4(p.pid, 0)
        r = {"wall_s": time.monotonic() - t0, "cpu_s": ru.ru_utime + ru.ru_stime,
             "rss_kib": ru.ru_maxrss, "rc": os.waitstatus_to_exitcode(status)}
        try:
            run = json.load(open(j))
            series = run.get("series", [])
            r["series"] = len(series)
            r["lost_samples"] = sum(s.get("lost_samples", 0) or 0 for s in series)
            if run.get("trace"):
                r["lost_events"] = run["trace"].get("lost_events", 0)
                r["events"] = run["trace"].get("events", 0)
                r["spikes_unread"] = run["trace"].get("spikes_unread", 0)
        except (OSError, ValueError) as e:
            r["error"] = str(e)
        res[w] = r
    json.dump(res, open(os.path.join(out, "scale.json"), "w"), indent=1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="2,4,8,16")
    ap.add_argument("--duration", type=int, default=5)
    ap.add_argument("--kernel", default="rt")
    ap.add_argument("--latlab", default="target/release/latlab")
    ap.add_argument("--inner", nargs=3)
    a = ap.parse_args()
    if a.inner:
        return inner(a.inner[0], a.inner[1], int(a.inner[2]))
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    latlab = os.path.abspath(a.latlab)
    d = scratch(dir=os.path.join(root, "target"))
    rows = {}
    for n in [int(x) for x in a.sizes.split(",")]:
        out = os.path.join(d, f"g{n}")
        os.makedirs(out)
        subprocess.run(["bash", os.path.join(root, "scripts/guest.sh"), "--kernel", a.kernel,
                        "--cpus", str(n), "--memory", "4G", "--timeout", "1800", "--",
                        "python3", os.path.abspath(__file__), "--inner", out, latlab,
                        str(a.duration)], check=True, cwd=root)
        rows[n] = json.load(open(os.path.join(out, "scale.json")))
    print(f"guest: {a.kernel} kernel under TCG (emulated), -D {a.duration}s; host {machine()}")
    print("| work | vCPUs | CPU s | CPU ms per CPU | peak RSS MiB | RSS MiB per CPU | lost samples | lost trace events |")
    print("|---|---|---|---|---|---|---|---|")
    for w in WORK:
        for n, r in rows.items():
            x = r[w]
            print(f"| {w} | {n} | {x['cpu_s']:.2f} | {1000 * x['cpu_s'] / n:.0f} | "
                  f"{x['rss_kib'] / 1024:.1f} | {x['rss_kib'] / 1024 / n:.2f} | "
                  f"{x.get('lost_samples', '-')} | {x.get('lost_events', '-')} |"
                  + ("" if x["rc"] == 0 else f" exit {x['rc']}"))


if __name__ == "__main__":
    main()
