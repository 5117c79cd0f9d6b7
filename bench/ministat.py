#!/usr/bin/env python3
"""latlab ministat vs Debian's ministat on two files of 1,000,000 values each.

Interleaved A B A B (and `cat` of the same files, the floor); checks the outputs are byte-identical every round; prints the median wall
time and peak memory of each and the ratios (ministat / latlab for speed, latlab / ministat for
memory).

With --compare, latlab runs as `latlab compare --ministat` (issue 32's figure) instead of
`latlab ministat`; both end in the same code.

With --latlab given more than once (a before and an after binary), every round runs each of
them against the same round's ministat and cat, and each gets its own figures.

usage: bench/ministat.py [--rounds 7] [--n 1000000] [--latlab target/release/latlab]... [--compare]
"""
import argparse, filecmp, os, random, statistics, sys, tempfile
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import measure, machine, scratch

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--latlab", action="append",
                    help="latlab binary (repeat to compare builds; default target/release/latlab)")
    ap.add_argument("--compare", action="store_true",
                    help="run latlab as `latlab compare --ministat`")
    a = ap.parse_args()
    form = ["compare", "--ministat"] if a.compare else ["ministat"]
    d = scratch()
    rnd = random.Random(1)
    files = []
    for name, mu in (("before", 3.0), ("after", 3.05)):
        path = os.path.join(d, name)
        with open(path, "w") as f:
            f.writelines("%.6f\n" % rnd.lognormvariate(mu, 0.5) for _ in range(a.n))
        files.append(path)
    bins = a.latlab or ["target/release/latlab"]
    M, C = [], []
    L = {b: [] for b in bins}
    for i in range(a.rounds):
        with open(os.path.join(d, "c.out"), "w") as o:
            C.append(measure(["cat", *files], stdout=o))
        with open(os.path.join(d, "m.out"), "w") as o:
            M.append(measure(["ministat", *files], stdout=o))
        line = f"round {i+1}: ministat {M[-1][0]*1000:.0f} ms {M[-1][2]} KiB"
        for b in bins:
            with open(os.path.join(d, "l.out"), "w") as o:
                L[b].append(measure([b, *form, *files], stdout=o))
            same = filecmp.cmp(os.path.join(d, "m.out"), os.path.join(d, "l.out"), shallow=False)
            line += f" | {b} {L[b][-1][0]*1000:.0f} ms {L[b][-1][2]} KiB identical: {same}"
            if not same:
                print(line, flush=True)
                print("OUTPUTS DIFFER", file=sys.stderr)
                return 1
        print(line, flush=True)
    mw = statistics.median(x[0] for x in M)
    mm = statistics.median(x[2] for x in M)
    cw = statistics.median(x[0] for x in C)
    spread = lambda xs: f"{min(xs)*1000:.0f}-{max(xs)*1000:.0f} ms"
    print(f"median wall: ministat {mw*1000:.0f} ms ({spread([x[0] for x in M])})")
    for b in bins:
        lw = statistics.median(x[0] for x in L[b])
        lm = statistics.median(x[2] for x in L[b])
        print(f"median wall: latlab {b} {lw*1000:.1f} ms ({spread([x[0] for x in L[b]])}), "
              f"speed-up {mw/lw:.1f}x; {lw/cw:.1f}x the floor; peak RSS {lm} KiB, "
              f"ratio {lm/mm:.2f}")
    print(f"median wall of cat on the same files (the floor): {cw*1000:.1f} ms")
    print(f"median peak RSS: ministat {mm} KiB")
    print(f"machine: {machine()}; {a.rounds} rounds, 2 files x {a.n} values")

if __name__ == "__main__":
    sys.exit(main())
