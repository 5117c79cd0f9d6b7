#!/usr/bin/env python3
"""`latlab runs list` on a store of N runs (default 100 000), each with two tags: wall and CPU
time of the whole command (output to /dev/null), median of --rounds, for each --latlab given,
interleaved. The store is made by latlab itself (one short `cyclic` run) and then filled with
copies of that run's row under new ids and start times (listing never reads a run's body).

With --pg URL (a PostgreSQL server the script may create databases on, e.g. the private one
from `eval "$(bash scripts/pg-test-server.sh start)"`, URL=$LATLAB_TEST_PG), the same is done on
PostgreSQL: one database per binary (a copy of a template filled once with INSERT ... SELECT
over generate_series), dropped at the end. --backend sqlite,postgres picks what is measured.

usage: bench/store_list.py [--runs 100000] [--rounds 7] [--latlab PATH ...] [--pg URL]
                           [--backend sqlite,postgres]
"""
import argparse, os, shutil, sqlite3, statistics, subprocess, sys, tempfile, urllib.parse
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import machine, measure, scratch

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
    # latlab leaves its WAL beside the store: fold it in, so copying the .db file copies it all.
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()

def psql(url, sql):
    """Runs SQL through psql on the database of url (no password on its command line)."""
    subprocess.run(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", url, "-c", sql],
                   check=True, stdout=subprocess.DEVNULL)

def with_db(url, db):
    u = urllib.parse.urlsplit(url)
    return urllib.parse.urlunsplit(u._replace(path="/" + db))

def make_pg(latlab, url, n):
    """A template database made by latlab (one short run), filled to n runs in the server."""
    base = with_db(url, "latlab_bench_base")
    psql(url, "DROP DATABASE IF EXISTS latlab_bench_base")
    psql(url, "CREATE DATABASE latlab_bench_base")
    subprocess.run([latlab, "cyclic", "-l", "5", "-i", "1000us", "-q", "--store", base],
                   check=True, stdout=subprocess.DEVNULL)
    started = ("format('2026-%s-%sT%s:00:%s.%sZ', lpad((1 + i % 12)::text, 2, '0'), "
               "lpad((1 + i % 28)::text, 2, '0'), lpad((i % 24)::text, 2, '0'), "
               "lpad((i % 60)::text, 2, '0'), lpad(i::text, 7, '0'))")
    psql(base, "INSERT INTO latlab_runs (id, kind, started, ended, host, interrupted, "
               "samples_path, body) SELECT 'bench-' || lpad(i::text, 7, '0'), r.kind, "
               f"{started}, r.ended, r.host, r.interrupted, r.samples_path, r.body "
               f"FROM latlab_runs r, generate_series(0, {n - 1}) i")
    psql(base, "INSERT INTO latlab_tags (run_id, key, value) SELECT 'bench-' || "
               "lpad(i::text, 7, '0'), k, CASE k WHEN 'kernel' THEN '6.' || (i % 7) "
               "ELSE (i % 100)::text END FROM generate_series(0, "
               f"{n - 1}) i, (VALUES ('kernel'), ('batch')) t(k)")
    psql(base, "VACUUM ANALYZE")
    return base

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=100_000)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--latlab", action="append")
    ap.add_argument("--pg", help="PostgreSQL URL the script may create databases on")
    ap.add_argument("--backend", default=None,
                    help="comma-separated: sqlite, postgres (default: sqlite, and postgres "
                         "when --pg is given)")
    a = ap.parse_args()
    exes = a.latlab or ["target/release/latlab"]
    backends = (a.backend or ("sqlite,postgres" if a.pg else "sqlite")).split(",")
    if "postgres" in backends and not a.pg:
        raise SystemExit("--backend postgres needs --pg URL")
    tmp = scratch(prefix="latlab-bench-list-")
    # (label, binary, store) in the order they run in each round.
    cases = []
    if "sqlite" in backends:
        base = os.path.join(tmp, "base.db")
        make(exes[0], base, a.runs)
        for i, e in enumerate(exes):
            # One copy per binary: a newer latlab adds its indexes to the store it opens.
            s = os.path.join(tmp, f"s{i}.db")
            shutil.copy(base, s)
            cases.append((f"sqlite {e}", e, s))
    pg_dbs = []
    if "postgres" in backends:
        make_pg(exes[0], a.pg, a.runs)
        for i, e in enumerate(exes):
            db = f"latlab_bench_s{i}"
            psql(a.pg, f"DROP DATABASE IF EXISTS {db}")
            psql(a.pg, f"CREATE DATABASE {db} TEMPLATE latlab_bench_base")
            pg_dbs.append(db)
            cases.append((f"postgres {e}", e, with_db(a.pg, db)))
    res = {c[0]: [] for c in cases}
    for r in range(a.rounds):
        for label, e, s in cases:
            wall, cpu, rss, code = measure([e, "runs", "list", "--store", s])
            if code != 0:
                raise SystemExit(f"{label} runs list: exit {code}")
            res[label].append((wall, cpu))
        print(f"round {r + 1}: " + " | ".join(f"{c[0]}: {res[c[0]][-1][0]:.3f} s wall, "
                                              f"{res[c[0]][-1][1]:.3f} s CPU" for c in cases),
              flush=True)
    for label, _, _ in cases:
        w = [x[0] for x in res[label]]
        c = [x[1] for x in res[label]]
        print(f"{label}: median wall {statistics.median(w):.3f} s [{min(w):.3f}-{max(w):.3f}], "
              f"CPU of latlab {statistics.median(c):.3f} s")
    print(f"machine: {machine()}; {a.runs} runs, {a.rounds} rounds")
    for db in pg_dbs + (["latlab_bench_base"] if pg_dbs else []):
        psql(a.pg, f"DROP DATABASE IF EXISTS {db}")
    shutil.rmtree(tmp)

if __name__ == "__main__":
    sys.exit(main())
