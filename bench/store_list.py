#!/usr/bin/env python3
"""`latlab runs list` on a store of N runs (default 100 000), each with two tags: wall and CPU
time of the whole command (output to /dev/null), median of --rounds, for each --latlab given,
interleaved. The store is made by latlab itself (one short `cyclic` run) and then filled with
copies of that run's row under new ids and start times (listing never reads a run's body).

usage: bench/store_list.py [--runs 100000] [--rounds 7] [--latlab PATH ...]
"""
import argparse, os, shutil, sqlite3, statistics, subprocess, sys, tempfile
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import machine, measure

def make(latlab, path, n):
    subprocess.run([latlab, "cyclic", "-l", "5", "-i", "1000us", "-q", "--store", path],
                   check=True, stdout=subprocess.DEVNULL)
    db = sqlite3.connect(path)
    row = db.execute("SELECT kind, ended, host, interrupted, samples_path, body FROM runs").fetchone()
    runs, tags = [], []
    for i in range(n):
        rid = f"bench-{i:07d}"
        started = f"2026-{1 + i % 12:02d}-{1 + i % 28:02d}T{i % 24:02d}:00:{i % 60:02d}.{i:07d}Z"
        runs.append((rid, row[0], started) + row[1:])
        tags += [(rid, "kernel", f"6.{i % 7}"), (rid, "batch", str(i % 100))]
    db.executemany("INSERT INTO runs (id, kind, started, ended, host, interrupted, samples_path,"
                   " body) VALUES (?, ?, ?, ?, ?, ?, ?, ?)", runs)
    db.executemany("INSERT INTO tags (run_id, key, value) VALUES (?, ?, ?)", tags)
    db.commit()
    db.close()

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=100_000)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--latlab", action="append")
    a = ap.parse_args()
    exes = a.latlab or ["target/release/latlab"]
    tmp = tempfile.mkdtemp(prefix="latlab-bench-list-")
    base = os.path.join(tmp, "base.db")
    make(exes[0], base, a.runs)
    stores = []
    for i, _ in enumerate(exes):
        # One copy per binary: a newer latlab adds its indexes to the store it opens.
        s = os.path.join(tmp, f"s{i}.db")
        shutil.copy(base, s)
        stores.append(s)
    res = {e: [] for e in exes}
    for r in range(a.rounds):
        for e, s in zip(exes, stores):
            wall, cpu, rss, code = measure([e, "runs", "list", "--store", s])
            if code != 0:
                raise SystemExit(f"{e} runs list: exit {code}")
            res[e].append((wall, cpu))
        print(f"round {r + 1}: " + " | ".join(f"{e}: {res[e][-1][0]:.3f} s wall, "
                                              f"{res[e][-1][1]:.3f} s CPU" for e in exes), flush=True)
    for e in exes:
        w = [x[0] for x in res[e]]
        c = [x[1] for x in res[e]]
        print(f"{e}: median wall {statistics.median(w):.3f} s [{min(w):.3f}-{max(w):.3f}], "
              f"CPU {statistics.median(c):.3f} s")
    print(f"machine: {machine()}; {a.runs} runs, {a.rounds} rounds")
    shutil.rmtree(tmp)

if __name__ == "__main__":
    sys.exit(main())
