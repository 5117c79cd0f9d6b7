#!/usr/bin/env bash
# The one-hour qualification of docs/benchmarks.md, on this machine:
#  1. latency with and without checkpoints, interleaved: PAIRS pairs of PAIR_S-second
#     qualifications on CPU 1 (loads on CPU 0), one storing a checkpoint every 2 s, the other
#     only at its end; per run the p99, p99.9 and max of the final result.
#  2. a one-hour qualification (checkpoints every minute, hackbench and build loads on CPU 0,
#     CPU 1 measured): RSS and store size sampled every 30 s, each checkpoint's cost (the
#     time to store it, recorded in the next interval's qualification.checkpoint_ms).
# Run as root WITHOUT the machine-wide lock (an hour is too long to hold it): other work on the
# machine disturbs it, and the doc says so. Output: $OUT (default /tmp/qualify-hour);
# `python3 bench/qualify-hour.py $OUT` prints the tables of docs/benchmarks.md.
set -u
LATLAB=${LATLAB:-./target/release/latlab}
OUT=${OUT:-/tmp/qualify-hour}
PAIRS=${PAIRS:-3}
PAIR_S=${PAIR_S:-60}
HOUR=${HOUR:-1h}
mkdir -p "$OUT"
export LATLAB_NO_PROGRESS=1
common=(-a 1 --housekeeping 0 --load hackbench:groups=2 --load build:units=8 --require 'p99.99<1ms')
for i in $(seq 1 "$PAIRS"); do
  for mode in with without; do
    every=2s; [ "$mode" = without ] && every=1d
    "$LATLAB" qualify -D "${PAIR_S}s" --checkpoint-every "$every" "${common[@]}" \
      --store "sqlite:$OUT/pairs.db" --json "$OUT/pair-$i-$mode.json" > /dev/null 2>&1
    echo "pair $i $mode rc=$?" >> "$OUT/log"
  done
done
rm -f "$OUT/hour.db"
"$LATLAB" qualify -D "$HOUR" --checkpoint-every 1m "${common[@]}" \
  --store "sqlite:$OUT/hour.db" --json "$OUT/hour.json" --report "$OUT/hour.html" \
  --junit "$OUT/hour.xml" > "$OUT/hour.out" 2> "$OUT/hour.err" &
pid=$!
t0=$(date +%s)
while kill -0 "$pid" 2> /dev/null; do
  rss=$(awk '/VmRSS/ {print $2}' /proc/$pid/status 2> /dev/null)
  size=$(cat "$OUT/hour.db" "$OUT/hour.db-wal" 2> /dev/null | wc -c)
  echo "$(( $(date +%s) - t0 )) ${rss:-0} $size" >> "$OUT/samples"
  sleep 30
done
wait "$pid"; echo "hour rc=$?" >> "$OUT/log"
