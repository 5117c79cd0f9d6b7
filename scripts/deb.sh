#!/bin/sh
# Builds a Debian package of latlab with dpkg-deb: the binary, its man pages and shell
# completions (made by the binary itself), the monitor's systemd unit (loopback by default, a
# web-config path), an example web config, scrape config and alert rules.
#
#   scripts/deb.sh [OUTDIR]          # default OUTDIR: target/debian
#   LATLAB_BIN=path/to/latlab scripts/deb.sh   # package this binary instead of building one
#
# dpkg-deb rather than cargo-deb: it is in every Debian system, so building the package needs
# nothing installed beyond the toolchain, and the package's layout is this one readable file.
set -eu
cd "$(dirname "$0")/.."
OUT=${1:-target/debian}
BIN=${LATLAB_BIN:-}
if [ -z "$BIN" ]; then
    cargo build --release
    BIN=target/release/latlab
fi
VERSION=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)
ARCH=$(dpkg --print-architecture)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
R="$WORK/latlab_${VERSION}_$ARCH"
mkdir -p "$R/DEBIAN" "$OUT"
install -D -m 0755 "$BIN" "$R/usr/bin/latlab"
strip --strip-unneeded --remove-section=.comment --remove-section=.note "$R/usr/bin/latlab" 2>/dev/null || true
mkdir -p "$R/usr/share/man/man1"
"$R/usr/bin/latlab" man "$R/usr/share/man/man1" >/dev/null
gzip -9n "$R"/usr/share/man/man1/*.1
mkdir -p "$R/usr/share/bash-completion/completions" "$R/usr/share/zsh/vendor-completions" \
    "$R/usr/share/fish/vendor_completions.d"
"$R/usr/bin/latlab" completions bash >"$R/usr/share/bash-completion/completions/latlab"
"$R/usr/bin/latlab" completions zsh >"$R/usr/share/zsh/vendor-completions/_latlab"
"$R/usr/bin/latlab" completions fish >"$R/usr/share/fish/vendor_completions.d/latlab.fish"
mkdir -p "$R/lib/systemd/system"
sed 's|/usr/local/bin/latlab|/usr/bin/latlab|' contrib/latlab-monitor.service \
    >"$R/lib/systemd/system/latlab-monitor.service"
chmod 0644 "$R/lib/systemd/system/latlab-monitor.service"
D="$R/usr/share/doc/latlab"
mkdir -p "$D/examples"
install -m 0644 contrib/web-config.yml contrib/prometheus.yml contrib/latlab-alerts.yml \
    contrib/latlab-alerts.test.yml "$D/examples/"
install -m 0644 docs/monitoring.md "$D/monitoring.md"
cat >"$D/copyright" <<COPY
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: latlab

Files: *
Copyright: 2026 the latlab authors
License: MIT or Apache-2.0
 latlab is distributed under the terms of the MIT license or the Apache License
 (Version 2.0), at your option. On Debian systems the Apache License is in
 /usr/share/common-licenses/Apache-2.0.
COPY
printf 'latlab (%s) unstable; urgency=medium\n\n  * Package built by scripts/deb.sh.\n\n -- latlab maintainers <latlab@example.org>  %s\n' \
    "$VERSION" "$(date -R -u -d @"${SOURCE_DATE_EPOCH:-$(date +%s)}")" | gzip -9n >"$D/changelog.gz"
SIZE=$(du -sk --exclude=DEBIAN "$R" | cut -f1)
cat >"$R/DEBIAN/control" <<CTRL
Package: latlab
Version: $VERSION
Architecture: $ARCH
Maintainer: latlab maintainers <latlab@example.org>
Installed-Size: $SIZE
Depends: libc6, libgcc-s1
Section: utils
Priority: optional
Homepage: https://example.invalid/latlab
Description: latency lab for Linux (timer latency, noise, fleet monitor)
 latlab measures timer wake-up latency, per-CPU noise and context-switch cost,
 compares runs soundly, and runs as a monitor with a Prometheus endpoint (TLS
 and basic authentication) storing snapshots for a fleet.
CTRL
# The YAML parser of --web-config (serde_norway) is a Rust translation of libyaml, linked
# statically as every Rust crate is: not a copy of the system library that could be shared.
mkdir -p "$R/usr/share/lintian/overrides"
echo "latlab: embedded-library libyaml [usr/bin/latlab]" >"$R/usr/share/lintian/overrides/latlab"
chmod 0644 "$R/usr/share/lintian/overrides/latlab"
find "$R" -type d -exec chmod 0755 {} +
dpkg-deb --root-owner-group -Zxz --build "$R" "$OUT/latlab_${VERSION}_$ARCH.deb" >/dev/null
echo "$OUT/latlab_${VERSION}_$ARCH.deb"
