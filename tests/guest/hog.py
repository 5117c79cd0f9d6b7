"""A hidden real-time hog for the guest group: pinned to one CPU at SCHED_FIFO, it busy-waits
BUSY ms every PERIOD ms, under the name `fifohog`.   python3 hog.py CPU PRIO BUSY PERIOD"""
import os
import sys
import time

cpu, prio, busy, period = (int(a) for a in sys.argv[1:5])
with open("/proc/self/comm", "w") as f:
    f.write("fifohog")
os.sched_setaffinity(0, {cpu})
os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(prio))
while True:
    end = time.monotonic() + busy / 1000
    while time.monotonic() < end:
        pass
    time.sleep((period - busy) / 1000)
