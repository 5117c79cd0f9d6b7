#!/bin/sh
# Builds the in-kernel half of `latlab sched` (bpf/sched.bpf.c) into the object the loader
# embeds (crates/trace/src/bpf/sched.bpf.o), which is committed: `cargo build` needs no C
# toolchain. Needs Debian's clang and libbpf-dev. `--check` builds into a temporary file and
# fails when it differs from the committed object (the test suite runs it).
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
out="$root/crates/trace/src/bpf/sched.bpf.o"
[ "${1:-}" = --check ] && out=$(mktemp) && trap 'rm -f "$out"' EXIT
command -v clang >/dev/null || { echo "build-bpf.sh: clang not found (apt-get install clang libbpf-dev)" >&2; exit 3; }
[ -e /usr/include/bpf/bpf_helpers.h ] || { echo "build-bpf.sh: bpf/bpf_helpers.h not found (apt-get install libbpf-dev)" >&2; exit 3; }
# From the source's folder with a relative name, so the object holds no path of this machine;
# DWARF stripped (the BTF the maps need stays).
cd "$root/bpf"
clang -O2 -g -target bpf -D__TARGET_ARCH_x86 -I/usr/include/x86_64-linux-gnu \
    -c sched.bpf.c -o "$out.tmp"
llvm-strip -g "$out.tmp"
mv "$out.tmp" "$out"
if [ "${1:-}" = --check ]; then
    cmp -s "$out" "$root/crates/trace/src/bpf/sched.bpf.o" || {
        echo "build-bpf.sh: crates/trace/src/bpf/sched.bpf.o is not what bpf/sched.bpf.c builds: run scripts/build-bpf.sh and commit it" >&2
        exit 1
    }
fi
