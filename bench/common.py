"""Shared helpers for the side-by-side benchmark scripts: run a command and measure it."""
import atexit, os, shutil, subprocess, tempfile, time

def measure(cmd, stdout=subprocess.DEVNULL, stdin=None):
    """Runs cmd; returns (wall seconds, cpu seconds user+sys, max RSS KiB, exit code)."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=stdout, stderr=subprocess.DEVNULL, stdin=stdin)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    return wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss, os.waitstatus_to_exitcode(status)

def machine():
    model = "unknown CPU"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{os.uname().release}, {os.cpu_count()} CPUs ({model}), {time.strftime('%Y-%m-%d')}"


def scratch(**kw):
    """A temporary directory (tempfile.mkdtemp's arguments) removed when the bench exits:
    benches write hundreds of megabytes, and /tmp is not cleaned for them."""
    d = tempfile.mkdtemp(**kw)
    atexit.register(shutil.rmtree, d, True)
    return d
