#!/bin/sh
# `latlab sched --all` on both engines (LATLAB_TRACER=tracefs, =bpf) in a PREEMPT_RT guest of
# CPUS vCPUs (scripts/guest.sh, TCG) under Debian's hackbench at each GROUPS: events, events
# per second, lost events, tasks measured and explanations not kept, per engine. Under TCG the
# latencies are the emulator's; what compares is whether each engine keeps up.
#
# usage: bench/sched_guest.sh [CPUS [GROUPS...]]        (default: 16 vCPUs, groups 4 16)
#        bench/sched_guest.sh --inner OUT GROUPS...      (what runs inside the guest)
set -eu
if [ "${1:-}" = --inner ]; then
    out=$2; shift 2
    for g in "$@"; do
        for e in tracefs bpf; do
            hackbench -g "$g" -l 100000 -P >/dev/null 2>&1 &
            h=$!
            sleep 1
            LATLAB_TRACER=$e target/release/latlab sched --all -D 4 --no-store -q \
                --json "$out/$e-$g.json" >/dev/null 2>"$out/$e-$g.err" || true
            kill "$h" 2>/dev/null || true
            pkill hackbench || true
            wait "$h" 2>/dev/null || true
        done
    done
    exit 0
fi
cd "$(dirname "$0")/.."
cpus=${1:-16}
[ $# -gt 0 ] && shift
groups=${*:-4 16}
out=target/bench-sched-guest
rm -rf "$out" && mkdir -p "$out"
# shellcheck disable=SC2086
scripts/guest.sh --cpus "$cpus" --memory 8G --timeout 850 -- sh bench/sched_guest.sh --inner "$out" $groups
for f in "$out"/*.json; do
    python3 - "$f" <<'PY'
import json, os, sys
r = json.load(open(sys.argv[1])); p = r["parameters"]; t = r.get("trace") or {}
late = [w for w in r.get("warnings", []) if "did not catch up" in w]
print(f"{os.path.basename(sys.argv[1])[:-5]:12} engine {p['engine']:7} events {p['events']:8} "
      f"({p['events_per_s'] or 0:.0f}/s) lost {p['lost_events']} tasks {len(r['series'])} "
      f"explanations not kept {t.get('spikes_dropped', 0)}" + (f"; {late[0]}" if late else ""))
PY
done
