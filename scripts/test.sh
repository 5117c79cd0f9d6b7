#!/usr/bin/env bash
# The whole test suite, from a fresh machine: installs what the tests need, then checks
# formatting and lints and runs every test. README's second command and .ci/run call this.
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian packages the tests compare against or drive: ministat (byte-for-byte comparisons),
# PostgreSQL (the shared store), chromium (reports loaded in a real headless browser;
# screenshots land in target/tmp/report-screenshots/), rt-tests and iperf3 (real output to
# import; rtla beside `latlab timerlat` in the guest), prometheus (promtool checks `latlab monitor`'s page, and a private Prometheus
# started by tests/it/monitor.rs scrapes it), linux-perf (`perf sched` beside `latlab sched`),
# libxml2-utils (xmllint checks `gate --junit` against tests/fixtures/junit/junit.xsd), make
# and gcc (the build load, which qualify uses by default), qemu-system-x86, busybox-static, kmod
# and cpio (scripts/guest.sh boots the guest group's PREEMPT_RT kernel; it fetches the kernel),
# kexec-tools (a kexec plan resumed inside a guest; told not to handle this machine's reboots),
# clang and libbpf-dev (the committed BPF object of `latlab sched` rebuilt and compared).
# Installed only when missing.
PKGS=(ministat postgresql chromium rt-tests rtla iperf3 prometheus trace-cmd lintian linux-perf libxml2-utils make gcc
  qemu-system-x86 busybox-static kmod cpio kexec-tools clang libbpf-dev)
missing=()
for p in "${PKGS[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  echo "kexec-tools kexec-tools/load_kexec boolean false" | debconf-set-selections
  apt-get update -qq
  apt-get install -y -qq "${missing[@]}"
fi

# A private PostgreSQL server for the store tests, stopped whatever happens.
eval "$(bash scripts/pg-test-server.sh start)"
trap 'bash scripts/pg-test-server.sh stop "$LATLAB_TEST_PG_DIR"' EXIT

cargo fmt --all --check
cargo clippy --all-targets --locked -- -D warnings
# The fuzz tests of every input reader, bounded to well under a minute.
export LATLAB_FUZZ_CASES=${LATLAB_FUZZ_CASES:-3000}
# Everything the tests need is installed and started above, so no test may skip here.
export LATLAB_NO_SKIP=1
cargo test --locked -- --test-threads=2
# The guest group alone afterwards: one boot of Debian's PREEMPT_RT kernel with 8 vCPUs
# (tests/it/guest.rs), which would load both CPUs under the tests above.
cargo test --locked --test it -- --ignored guest:: --test-threads=2
