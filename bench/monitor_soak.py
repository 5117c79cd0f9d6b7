"""Soak of `latlab monitor`: every CPU at 1 kHz, a snapshot every 5 minutes, /metrics scraped
every 5 s by this script and by two private Prometheus servers (when `prometheus` is installed;
their `up` series count answered and failed scrapes); records RSS (first/last/max), the
monitor's own CPU use (measuring threads apart from housekeeping), lost samples and snapshots;
then interleaves plain `latlab cyclic` and `latlab monitor` runs (A B A B) and compares their
average latency. Results go to docs/benchmarks.md by hand.

    python3 bench/monitor_soak.py --latlab target/release/latlab --soak 300 --rounds 2 --each 45
"""
import argparse, json, os, re, signal, subprocess, tempfile, time, urllib.parse, urllib.request
from common import machine, scratch

TICK = os.sysconf("SC_CLK_TCK")

def cpu_s(path):
    """utime + stime of /proc/.../stat in seconds."""
    f = open(path).read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / TICK

def rss_kib(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0

def threads(pid):
    """CPU seconds of the measuring threads (latlab-cpuN) and of all others."""
    meas = other = 0.0
    for t in os.listdir(f"/proc/{pid}/task"):
        try:
            comm = open(f"/proc/{pid}/task/{t}/comm").read().strip()
            s = cpu_s(f"/proc/{pid}/task/{t}/stat")
        except OSError:
            continue
        if re.fullmatch(r"latlab-cpu\d+", comm):
            meas += s
        else:
            other += s
    return meas, other

def start_monitor(latlab, args):
    p = subprocess.Popen([latlab, "monitor", "--listen", "127.0.0.1:0", *args],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    for line in p.stderr:
        m = re.search(r"serving http://(\S+)/metrics", line)
        if m:
            return p, m.group(1)
    raise SystemExit("monitor did not start: " + p.stderr.read())

def scrape(addr):
    return urllib.request.urlopen(f"http://{addr}/metrics", timeout=5).read().decode()

def total(page, name):
    return sum(float(l.rsplit(" ", 1)[1]) for l in page.splitlines()
               if l.startswith(name + "{"))

def prometheus(d, name, target):
    """A private Prometheus scraping `target` every 5 s; (process, API address)."""
    import shutil, socket
    if not shutil.which("prometheus"):
        return None
    s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
    cfg = f"{d}/{name}.yml"
    open(cfg, "w").write("global:\n  scrape_interval: 5s\nscrape_configs:\n  - job_name: latlab\n"
                         f"    static_configs:\n      - targets: ['{target}']\n")
    p = subprocess.Popen(["prometheus", f"--config.file={cfg}", f"--storage.tsdb.path={d}/{name}",
                          f"--web.listen-address=127.0.0.1:{port}"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return p, f"127.0.0.1:{port}"

def up_counts(api, seconds):
    """(scrapes answered, failed) by one Prometheus over the last `seconds`."""
    def q(expr):
        u = f"http://{api}/api/v1/query?query=" + urllib.parse.quote(expr)
        r = json.load(urllib.request.urlopen(u, timeout=10))["data"]["result"]
        return float(r[0]["value"][1]) if r else 0.0
    n = q(f"count_over_time(up[{seconds}s])")
    ok = q(f"sum_over_time(up[{seconds}s])")
    return int(ok), int(n - ok)

def soak(a):
    d = scratch()
    p, addr = start_monitor(a.latlab, ["-i", "1ms", "-p", str(a.prio), "--snapshot-every",
                                       f"{a.snapshot_every}s",
                                       "--store", f"sqlite:{d}/soak.db",
                                       "-D", f"{a.soak + 120}s"])
    proms = [x for x in (prometheus(d, "prom-a", addr), prometheus(d, "prom-b", addr)) if x]
    t0 = time.time()
    rss, page, scrapes, fails = [], "", 0, 0
    while p.poll() is None and time.time() - t0 < a.soak - 5:
        time.sleep(5)
        try:
            page = scrape(addr)
            scrapes += 1
        except OSError:
            fails += 1
        rss.append(rss_kib(p.pid))
    meas, other = threads(p.pid)
    wall = time.time() - t0
    ups = []
    for pr, api in proms:
        try:
            ups.append(up_counts(api, int(wall)))
        except OSError:
            ups.append(None)
        pr.terminate(); pr.wait()
    p.send_signal(signal.SIGTERM)  # ends it as an operator would: last snapshot stored
    out, _ = p.communicate()
    snaps = subprocess.run([a.latlab, "runs", "list", "--kind", "monitor", "--store",
                            f"sqlite:{d}/soak.db"], capture_output=True, text=True).stdout
    print(f"## soak: {machine()}")
    print(f"| duration | {wall:.0f} s |")
    print(f"| scrapes answered / failed (this script) | {scrapes} / {fails} |")
    for k, u in enumerate(ups):
        print(f"| scrapes answered / failed (Prometheus {k + 1}, every 5 s) | "
              + (f"{u[0]} / {u[1]}" if u else "API unreachable") + " |")
    print(f"| RSS first / last / max (KiB) | {rss[0]} / {rss[-1]} / {max(rss)} |")
    q = [rss[min(len(rss) - 1, i * len(rss) // 4)] for i in range(4)] + [rss[-1]]
    print(f"| RSS at 0, 25, 50, 75, 100 % of the run (KiB) | {' / '.join(map(str, q))} |")
    print(f"| samples | {total(page, 'latlab_samples_total'):.0f} |")
    print(f"| lost samples | {total(page, 'latlab_lost_samples_total'):.0f} |")
    print(f"| overruns | {total(page, 'latlab_overruns_total'):.0f} |")
    print(f"| max latency (s, any CPU) | {max(float(l.rsplit(' ',1)[1]) for l in page.splitlines() if l.startswith('latlab_latency_max_seconds{')):.6f} |")
    print(f"| CPU use: measuring threads, all CPUs (s/s) | {meas / wall:.4f} |")
    print(f"| CPU use: housekeeping (HTTP, snapshots) (s/s) | {other / wall:.4f} |")
    print(f"| snapshot runs stored | {len(snaps.splitlines()) - 1} |")
    print(f"| exit code | {p.returncode} |")

def mean_of(path):
    r = json.load(open(path))
    n = sum(s["count"] for s in r["series"])
    return sum(s["mean_ns"] * s["count"] for s in r["series"]) / n, n

def interleave(a):
    d = scratch()
    res = {"cyclic": [], "monitor": []}
    for k in range(a.rounds):
        j = f"{d}/c{k}.json"
        subprocess.run([a.latlab, "cyclic", "-t", "-d", "0", "-i", "1ms", "-p", str(a.prio), "-q",
                        "--no-dma-latency", "-D", f"{a.each}s", "--no-store", "--json", j],
                       check=True, stdout=subprocess.DEVNULL)
        res["cyclic"].append(mean_of(j))
        j = f"{d}/m{k}.json"
        p, addr = start_monitor(a.latlab, ["-i", "1ms", "-p", str(a.prio), "--snapshot-every", "1h",
                                           "--no-store", "--json", j, "-D", f"{a.each}s"])
        while p.poll() is None:
            time.sleep(5)
            try:
                scrape(addr)
            except OSError:
                pass
        p.communicate()
        res["monitor"].append(mean_of(j))
    for k, v in res.items():
        print(f"| {k} | " + " | ".join(f"{m / 1e3:.2f} µs ({n} samples)" for m, n in v) + " |")
    mc = sorted(m for m, _ in res["cyclic"])[len(res["cyclic"]) // 2]
    mm = sorted(m for m, _ in res["monitor"])[len(res["monitor"]) // 2]
    print(f"| monitor / cyclic average latency (median of rounds) | {mm / mc:.3f} |")

if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--latlab", default="target/release/latlab")
    ap.add_argument("--soak", type=int, default=3600)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--snapshot-every", type=int, default=300, help="seconds between snapshots")
    ap.add_argument("--prio", type=int, default=80, help="SCHED_FIFO priority of both tools")
    ap.add_argument("--each", type=int, default=60)
    ap.add_argument("--skip-soak", action="store_true")
    ap.add_argument("--skip-interleave", action="store_true")
    a = ap.parse_args()
    if not a.skip_soak:
        soak(a)
    if not a.skip_interleave:
        interleave(a)
