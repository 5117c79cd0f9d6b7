#!/bin/bash
# How long latlab takes to build: clean `cargo build --release` and `cargo test --no-run`, then
# each again after touching one measurement's file (docs/benchmarks.md, "clean cargo build").
# Run it in a fresh clone (it removes that clone's target/), with nothing else building.
#
# usage: bench/build_times.sh [CLONE] [FILE-TO-TOUCH]
#   CLONE defaults to the current directory, FILE to crates/lab/src/measure/ctxsw/methods.rs
set -euo pipefail
cd "${1:-.}"
file=${2:-crates/lab/src/measure/ctxsw/methods.rs}
t() {
    local s e
    s=$(date +%s.%N)
    "$@" >/dev/null 2>&1
    e=$(date +%s.%N)
    printf '%s: %.1f s\n' "$*" "$(echo "$e - $s" | bc)"
}
rm -rf target
t cargo build --release
t cargo test --no-run
touch "$file"
t cargo build --release
touch "$file"
t cargo test --no-run
