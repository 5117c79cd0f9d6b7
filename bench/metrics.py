#!/usr/bin/env python3
"""How long a scrape of `latlab monitor`'s /metrics takes, side by side with Prometheus'
node_exporter on the same machine: GETs interleaved in blocks (A B A B ...), each on a new
connection as a scraper without keep-alive makes it, while the monitor measures. Prints per
server the median, p90, p99 and max in ms over --gets GETs, and the ratio of medians.

node_exporter is Debian's prometheus-node-exporter (installed here when missing; run as root).
Several latlab builds may be given (--latlab A --latlab B: before and after a change).

usage: bench/metrics.py [--gets 1000] [--block 50] [--latlab target/release/latlab ...]
                        [--cpus 1] [--interval 1ms]
"""
import argparse, http.client, os, shutil, socket, statistics, subprocess, sys, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import machine


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def wait_listening(port, proc, what):
    t0 = time.time()
    while time.time() - t0 < 30:
        if proc.poll() is not None:
            sys.exit(f"{what} exited ({proc.returncode}) before listening")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    sys.exit(f"{what} never listened on {port}")


def get(port):
    """One GET /metrics on a new connection; seconds from connect to the last body byte."""
    t0 = time.perf_counter()
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    c.request("GET", "/metrics", headers={"Connection": "close"})
    r = c.getresponse()
    body = r.read()
    c.close()
    dt = time.perf_counter() - t0
    if r.status != 200 or not body:
        sys.exit(f"port {port}: HTTP {r.status}")
    return dt


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gets", type=int, default=1000)
    ap.add_argument("--block", type=int, default=50)
    ap.add_argument("--latlab", action="append")
    ap.add_argument("--cpus", default="1")
    ap.add_argument("--interval", default="1ms")
    a = ap.parse_args()
    builds = a.latlab or ["target/release/latlab"]
    exporter = shutil.which("prometheus-node-exporter")
    if exporter is None:
        subprocess.run(["apt-get", "install", "-y", "prometheus-node-exporter"], check=True,
                       stdout=subprocess.DEVNULL)
        exporter = shutil.which("prometheus-node-exporter")
    servers, procs = [], []
    try:
        port = free_port()
        p = subprocess.Popen([exporter, f"--web.listen-address=127.0.0.1:{port}"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs.append(p)
        wait_listening(port, p, "node_exporter")
        servers.append(("node_exporter", port))
        for b in builds:
            port = free_port()
            p = subprocess.Popen([b, "monitor", "-a", a.cpus, "-i", a.interval, "--no-store",
                                  "--listen", f"127.0.0.1:{port}"],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            procs.append(p)
            wait_listening(port, p, b)
            servers.append((b, port))
        for _, port in servers:  # warm up
            for _ in range(5):
                get(port)
        times = {name: [] for name, _ in servers}
        for _ in range(a.gets // a.block):
            for name, port in servers:
                for _ in range(a.block):
                    times[name].append(get(port) * 1e3)
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
    print(f"# {machine()}; {a.gets} GETs per server in blocks of {a.block}, new connection each")
    print(f"{'server':40} {'median':>8} {'p90':>8} {'p99':>8} {'max':>8}  (ms)  ratio of medians")
    base = statistics.median(times["node_exporter"])
    for name, _ in servers:
        v = sorted(times[name])
        q = lambda f: v[min(len(v) - 1, int(f * len(v)))]
        med = statistics.median(v)
        print(f"{name:40} {med:8.2f} {q(0.90):8.2f} {q(0.99):8.2f} {v[-1]:8.2f}        {med / base:5.2f}")


if __name__ == "__main__":
    main()
