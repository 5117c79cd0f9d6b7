#!/usr/bin/env python3
"""Lossless sample log under load: 2 threads at 10 kHz for 60 s with --samples.

Samples latlab's resident memory once a second while it runs, then checks the JSON result
(lost_samples per thread) and the sample log (every sample present). Prints lost samples, the
log size and the RSS range (flat memory: the last reading is no higher than the first steady
one).

usage: bench/samples.py [--duration 60] [--rate 10000] [--latlab target/release/latlab]
"""
import argparse, json, os, struct, subprocess, sys, tempfile, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import machine, scratch

def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0

def count_log(path, nseries):
    counts = [0] * nseries
    with open(path, "rb") as f:
        magic, ver, n = struct.unpack("<8sII", f.read(16))
        assert magic == b"LATLABSM" and n == nseries, (magic, n)
        for _ in range(n):
            (l,) = struct.unpack("<H", f.read(2))
            f.read(l + 4)
        while True:
            hdr = f.read(8)
            if len(hdr) < 8:
                return counts, None
            idx, cnt = struct.unpack("<II", hdr)
            if idx == 0xFFFFFFFF:
                return counts, list(struct.unpack(f"<{cnt}Q", f.read(8 * cnt)))
            counts[idx] += cnt
            f.seek(8 * cnt, 1)

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--duration", type=int, default=60)
    ap.add_argument("--rate", type=int, default=10000)
    ap.add_argument("--latlab", default="target/release/latlab")
    a = ap.parse_args()
    d = scratch()
    log, js = os.path.join(d, "s.bin"), os.path.join(d, "r.json")
    interval_us = 1_000_000 / a.rate
    p = subprocess.Popen([a.latlab, "cyclic", "-t", "2", "-a", "-p", "80", "-i", f"{interval_us}us",
                          "-d", "0", "-D", f"{a.duration}s", "-q", "--samples", log, "--json", js],
                         stdout=subprocess.DEVNULL)
    rss = []
    while p.poll() is None:
        try:
            rss.append(rss_kib(p.pid))
        except OSError:
            break
        time.sleep(1)
    r = json.load(open(js))
    counts, lost_trailer = count_log(log, len(r["series"]))
    lost = [s["lost_samples"] for s in r["series"]]
    ok = all(c == s["count"] for c, s in zip(counts, r["series"]))
    steady = rss[2:] or rss
    print(f"samples per thread: {[s['count'] for s in r['series']]}; in the log: {counts}; match: {ok}")
    print(f"lost (JSON): {lost}; lost (log trailer): {lost_trailer}")
    print(f"log size: {os.path.getsize(log)/1e6:.1f} MB; RSS KiB first/min/max/last (steady): "
          f"{steady[0]}/{min(steady)}/{max(steady)}/{steady[-1]}")
    print(f"machine: {machine()}; 2 threads x {a.rate} Hz x {a.duration} s")
    return 0 if ok and sum(lost) == 0 else 1

if __name__ == "__main__":
    sys.exit(main())
