#!/usr/bin/env python3
"""latlab tcp (stream) vs iperf3 on loopback, interleaved A B A B: throughput in 10^6 bit/s.

Both use one TCP connection on 127.0.0.1 for the same duration, default buffers and each
tool's default send size (both 128 KiB; --send-size gives both the same other size); iperf3's
figure is end.sum_received. Prints the ratio of medians latlab / iperf3 (goal >= 0.95).
latlab's runs go to a scratch store, not yours.
Needs Debian's iperf3 (apt-get install iperf3).

usage: bench/tcp.py [--rounds 5] [--duration 5] [--send-size 128k] [--latlab target/release/latlab]
"""
import argparse, json, os, statistics, subprocess, sys, tempfile, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import machine, scratch

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--duration", type=int, default=5)
    ap.add_argument("--latlab", default="target/release/latlab")
    ap.add_argument("--send-size", help="e.g. 64k; default: each tool's own default")
    a = ap.parse_args()
    d = scratch()
    L, I = [], []
    for i in range(a.rounds):
        lj = os.path.join(d, "l.json")
        size = ["-m", a.send_size] if a.send_size else []
        subprocess.run([a.latlab, "tcp", "-D", f"{a.duration}s", *size, "--json", lj,
                        "--store", "sqlite:" + os.path.join(d, "runs.db")],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        L.append(json.load(open(lj))["series"][0]["extra"]["runs"][0]["figure"])
        srv = subprocess.Popen(["iperf3", "-s", "-1", "-B", "127.0.0.1", "-p", "5299"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.3)
        size = ["-l", a.send_size.upper()] if a.send_size else []
        out = subprocess.run(["iperf3", "-c", "127.0.0.1", "-p", "5299", "-t", str(a.duration), "-J", *size],
                             check=True, capture_output=True, text=True).stdout
        srv.wait(timeout=10)
        I.append(json.loads(out)["end"]["sum_received"]["bits_per_second"] / 1e6)
        print(f"round {i+1}: latlab {L[-1]:.0f} | iperf3 {I[-1]:.0f} (10^6 bit/s)", flush=True)
    ml, mi = statistics.median(L), statistics.median(I)
    print(f"median throughput: latlab {ml:.0f}, iperf3 {mi:.0f} (10^6 bit/s), ratio {ml/mi:.2f}")
    print(f"machine: {machine()}; {a.rounds} rounds x {a.duration} s on 127.0.0.1, sends: {a.send_size or 'each default (128 KiB)'}")

if __name__ == "__main__":
    sys.exit(main())
