#!/bin/sh
# Builds the in-kernel half of `latlab sched` (bpf/sched.bpf.c) into the objects the loader
# embeds (crates/trace/src/bpf/sched.bpf.o, and sched-rt.bpf.o for PREEMPT_RT's 12-byte
# tracepoint header), and `--trace`'s in-kernel flight recorder (bpf/flight.bpf.c: one
# object for every header, flight.bpf.o), which are committed: `cargo build` needs no C
# toolchain. Needs Debian's clang and libbpf-dev. `--check` builds into a temporary folder and fails when either differs
# from the committed object (the test suite runs it).
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
dest="$root/crates/trace/src/bpf"
out="$dest"
[ "${1:-}" = --check ] && out=$(mktemp -d) && trap 'rm -rf "$out"' EXIT
command -v clang >/dev/null || { echo "build-bpf.sh: clang not found (apt-get install clang libbpf-dev)" >&2; exit 3; }
[ -e /usr/include/bpf/bpf_helpers.h ] || { echo "build-bpf.sh: bpf/bpf_helpers.h not found (apt-get install libbpf-dev)" >&2; exit 3; }
# From the source's folder with a relative name and the folder mapped to `.` (the BTF's line
# information names the source by its full path otherwise), so the object holds no path of
# this machine; DWARF stripped (the BTF the maps need stays).
cd "$root/bpf"
mode=${1:-}
for v in "sched 8 sched" "sched-rt 12 sched" "flight 8 flight"; do
    set -- $v "$mode"
    clang -O2 -g -target bpf -D__TARGET_ARCH_x86 -DHDR="$2" -I/usr/include/x86_64-linux-gnu \
        -fdebug-prefix-map="$root/bpf=." \
        -c "$3.bpf.c" -o "$out/$1.bpf.o.tmp"
    llvm-strip -g "$out/$1.bpf.o.tmp"
    mv "$out/$1.bpf.o.tmp" "$out/$1.bpf.o"
    if [ "${4:-}" = --check ]; then
        cmp -s "$out/$1.bpf.o" "$dest/$1.bpf.o" || {
            echo "build-bpf.sh: crates/trace/src/bpf/$1.bpf.o is not what bpf/$3.bpf.c builds: run scripts/build-bpf.sh and commit it" >&2
            exit 1
        }
    fi
done
