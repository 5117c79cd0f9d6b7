#!/bin/sh
# The guest group's one boot (tests/it/guest.rs): run inside an 8-vCPU PREEMPT_RT guest by
# scripts/guest.sh, it runs every measurement and the guest scenarios, and leaves each step's
# stdout, stderr and exit code in OUT (NAME.out, NAME.err, NAME.rc) for the host's tests to
# judge. It asserts nothing itself: under emulation only mechanisms are judged, on the host.
#   sh tests/guest/rt-group.sh LATLAB OUT
set -u
L=$1 OUT=$2
mkdir -p "$OUT"
S="sqlite:$OUT/store.db"
export LATLAB_NO_PROGRESS=1 LATLAB_STORE="$S"
here=$(cd "$(dirname "$0")" && pwd)

# step NAME LIMIT CMD...: one step, bounded, its outputs kept.
step() {
  name=$1 limit=$2; shift 2
  t0=$(cut -d' ' -f1 /proc/uptime)
  timeout -k 5 "$limit" "$@" >"$OUT/$name.out" 2>"$OUT/$name.err"
  rc=$?
  echo $rc >"$OUT/$name.rc"
  echo "$name: rc $rc, from $t0 to $(cut -d' ' -f1 /proc/uptime) s" >>"$OUT/steps.log"
}

{
  echo "nproc $(nproc)"
  echo "release $(uname -r)"
  echo "realtime $(cat /sys/kernel/realtime 2>/dev/null || echo 0)"
  echo "clocksource $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)"
  echo "swappiness $(cat /proc/sys/vm/swappiness)"
} >"$OUT/facts.txt"

# Every measurement once, stored.
step cyclic 120 "$L" cyclic -t -D 3s --samples "$OUT/cyclic.samples" --json "$OUT/cyclic.json"
step samples 60 "$L" samples "$OUT/cyclic.samples"
step noise 120 "$L" noise -a -D 2s --json "$OUT/noise.json"
step ctxsw 60 "$L" ctxsw -n 300 --json "$OUT/ctxsw.json"
step clocks 60 "$L" clocks --batches 20 --json "$OUT/clocks.json"
step tcp 60 "$L" tcp -D 300ms --json "$OUT/tcp.json"
step contend 60 "$L" contend -n 2000 --json "$OUT/contend.json"
step migrate 60 "$L" migrate -l 8 -p 80 --max-err 1s --json "$OUT/migrate.json"
step ipc 60 "$L" ipc --method pmq -l 50 -i 1ms --json "$OUT/ipc.json"
step pi 60 "$L" pi -a 0 -l 3 --load cpu:cpus=0 --json "$OUT/pi.json"
step sched 60 "$L" sched --all -D 2s --json "$OUT/sched.json"
step timerlat 60 "$L" timerlat -D 2s --json "$OUT/timerlat.json"
step load 60 "$L" load hackbench:groups=2,fds=4,loops=10 --json "$OUT/load.json"
step qualify 120 "$L" qualify -D 5s --no-loads --json "$OUT/qualify.json"
# The monitor: its /metrics read while it runs (then it is stopped as Ctrl-C would).
"$L" monitor -a -D 120s --listen 127.0.0.1:0 --json "$OUT/monitor.json" \
  >"$OUT/monitor.out" 2>"$OUT/monitor.err" &
mon=$!
i=0
while [ $i -lt 300 ] && kill -0 $mon 2>/dev/null; do
  addr=$(sed -n 's/.*serving \(http:\/\/[0-9.:]*\)\/metrics.*/\1/p' "$OUT/monitor.err" | head -n 1)
  if [ -n "$addr" ] && curl -fsS --max-time 20 "$addr/metrics" >/tmp/metrics.txt 2>>"$OUT/metrics.err" &&
    grep -q 'cpu="' /tmp/metrics.txt; then
    break
  fi
  i=$((i + 1)); sleep 0.2
done
cp /tmp/metrics.txt "$OUT/metrics.txt" 2>/dev/null
kill -INT $mon 2>/dev/null
wait $mon; echo $? >"$OUT/monitor.rc"

# qualify and monitor on the kernel's timerlat tracer (rteval 3.10's default engine).
step qualify_timerlat 120 "$L" qualify --engine timerlat -a 1-3 -D 4s --no-loads --json "$OUT/qualify_timerlat.json"
step monitor_timerlat 120 "$L" monitor --engine timerlat -a 1-3 -D 4s --listen 127.0.0.1:0 --json "$OUT/monitor_timerlat.json"

# Time nothing visible explains, on an idle CPU (the guest has no other tenant to keep CPU 1
# busy, as a shared host may).
step unexplained 120 "$L" cyclic -t 1 -a 1 -i 1ms -l 300 --trace --trace-threshold 1us -q \
  --no-store --json "$OUT/unexplained.json"

# A hidden FIFO hog pinned to CPU 5 (30 ms of every 300), seen by cyclic --trace on every CPU.
# The threshold stands above most of the emulator's own delays, so the spikes stay few.
python3 "$here/hog.py" 5 95 30 300 &
hog=$!
sleep 1
step hog 180 "$L" cyclic -t -D 3s --trace --trace-threshold 10ms --json "$OUT/hog.json"
# The same with the in-kernel flight recorder (6.1's verifier, PREEMPT_RT's records).
step hog_bpf 180 env LATLAB_TRACER=bpf "$L" cyclic -t -D 3s --trace --trace-threshold 10ms \
  --json "$OUT/hog_bpf.json"
# The same hog seen by the kernel's own tracer, with its IRQ/thread split.
step timerlat_hog 120 "$L" timerlat -a 4-6 -D 3s --threshold 10ms --json "$OUT/timerlat_hog.json"
# And by the kernel's osnoise tracer, which names the thread that held its CPU; the settings it
# changes (tracing_thresh among them) are put back.
cat /sys/kernel/tracing/tracing_thresh /sys/kernel/tracing/osnoise/period_us >"$OUT/osnoise.before"
step noise_osnoise 120 "$L" noise --engine osnoise -a 4-6 -D 3s --json "$OUT/noise_osnoise.json"
cat /sys/kernel/tracing/tracing_thresh /sys/kernel/tracing/osnoise/period_us >"$OUT/osnoise.after"
step noise_hwnoise 120 "$L" noise --engine hwnoise -a 2 -D 2s --json "$OUT/noise_hwnoise.json"
kill $hog; wait $hog 2>/dev/null

# The tracer is machine-wide: while rtla holds it, latlab timerlat is refused and rtla's run is
# left alone (its summary is kept: a real `rtla timerlat top -q` for the import tests).
rtla timerlat top -q -c 0-1 -d 6 >"$OUT/rtla-top.txt" 2>&1 &
rtla=$!
i=0
while [ $i -lt 100 ] && ! grep -qs timerlat /sys/kernel/tracing/instances/*/current_tracer; do
  i=$((i + 1)); sleep 0.1
done
step timerlat_busy 60 "$L" timerlat -D 1s --no-store
wait $rtla; echo $? >"$OUT/rtla-top.rc"

# SIGKILL while the tracer runs with settings of latlab's (2 CPUs, a 500 us period), then
# restore: the instance goes, the osnoise/ settings come back byte for byte.
T=/sys/kernel/tracing
cat $T/osnoise/cpus $T/osnoise/timerlat_period_us >"$OUT/timerlat_kill.before"
"$L" timerlat -a 2-3 -i 500 -D 60s --no-store >/dev/null 2>&1 &
tl=$!
i=0
while [ $i -lt 200 ] && ! ls -d $T/instances/latlab-*-timerlat >/dev/null 2>&1; do i=$((i + 1)); sleep 0.1; done
sleep 1
{ cat $T/osnoise/cpus $T/osnoise/timerlat_period_us; ls $T/instances; } >"$OUT/timerlat_kill.during"
kill -KILL $tl; wait $tl 2>/dev/null
step timerlat_restore 60 "$L" restore
{ cat $T/osnoise/cpus $T/osnoise/timerlat_period_us; } >"$OUT/timerlat_kill.after"
{ ls $T/instances; pgrep -l '^timerlat/' ; } >"$OUT/timerlat_kill.left"

# A threaded interrupt as the culprit: the IRQ of the writable share (virtio1) moved to CPU 6,
# its thread raised above the measuring thread, and the share kept busy from CPU 7 while CPU 6
# is measured.
irq=$(awk '/virtio1-requests/ {sub(":", "", $1); print $1; exit}' /proc/interrupts)
echo "$irq" >"$OUT/irq.txt"
if [ -n "$irq" ]; then
  echo 6 >"/proc/irq/$irq/smp_affinity_list" 2>>"$OUT/irq.txt"
  for p in $(pgrep "^irq/$irq-"); do chrt -f -p 90 "$p"; done
  taskset -c 7 sh -c "while :; do dd if=/dev/zero of='$OUT/busy' bs=64k count=8 conv=fsync 2>/dev/null; done" &
  busy=$!
  sleep 0.5
  step irqthread 180 "$L" cyclic -a 6 -p 40 -D 3s --trace --trace-threshold 1ms --json "$OUT/irqthread.json"
  kill $busy; wait $busy 2>/dev/null
  rm -f "$OUT/busy"
fi

# Seed 003 on PREEMPT_RT: CPU 3 offlined and onlined (stop_machine) while every CPU is measured.
step hotplug 300 "$L" noise -a -D 2s --repeat 3 --trace \
  --disturb 'echo 0 > /sys/devices/system/cpu/cpu3/online; echo 1 > /sys/devices/system/cpu/cpu3/online' \
  --json "$OUT/hotplug.json"

# SIGKILL in the middle of a plan that changes a setting, then restore.
cat >"$OUT/plan.toml" <<PLAN
description = "guest: a plan killed mid-way"
[measure]
command = "cyclic"
args = ["-D", "2s", "-q"]
[design]
repeats = 2
[[factor]]
name = "swappiness"
sysctl = "vm.swappiness"
levels = ["10", "20"]
PLAN
before=$(cat /proc/sys/vm/swappiness)
setsid "$L" run "$OUT/plan.toml" >"$OUT/plan.out" 2>"$OUT/plan.err" &
plan=$!
i=0
while [ $i -lt 300 ] && [ "$(cat /proc/sys/vm/swappiness)" = "$before" ]; do i=$((i + 1)); sleep 0.1; done
echo "during $(cat /proc/sys/vm/swappiness)" >"$OUT/restore.txt"
kill -KILL -- -$plan 2>/dev/null
wait $plan 2>/dev/null
echo "killed $(cat /proc/sys/vm/swappiness)" >>"$OUT/restore.txt"
step restore 60 "$L" restore
echo "before $before" >>"$OUT/restore.txt"
echo "after $(cat /proc/sys/vm/swappiness)" >>"$OUT/restore.txt"
echo done >"$OUT/done"
