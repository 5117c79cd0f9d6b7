#!/usr/bin/env bash
# Runs a command inside a fresh QEMU guest of a chosen Linux kernel (Debian's PREEMPT_RT kernel by
# default), the host's root file system shared read-only and the current directory writable, and
# exits with the command's exit code. Tests, benchmarks and the kernel A/B runner share it.
#
#   scripts/guest.sh [--kernel rt|generic|linux-image-PKG|PATH] [--modules DIR] [--cpus N]
#                    [--memory SIZE] [--cmdline ARGS] [--timeout S] [--accel auto|kvm|tcg]
#                    [--env NAME=VALUE]... [--share DIR]... [--console] -- CMD [ARGS...]
#
# Why its own initramfs (busybox-static, the kernel's 9p and virtio modules, and a 60-line init)
# rather than virtme-ng: nothing from PyPI at test time, one readable file, the command's stdout,
# stderr and exit code on their own channels (virtio serial ports) instead of parsed out of a
# console, and the script owns the timeout and the cleanup.
#
# What it installs on first use (as root, when missing): qemu-system-x86, busybox-static, kmod,
# cpio. Kernels are Debian packages fetched with `apt-get download` and unpacked (dpkg-deb -x)
# into the cache, never installed on the host. The cache is $LATLAB_GUEST_CACHE, else
# ${XDG_CACHE_HOME:-$HOME/.cache}/latlab/guest.
#
# Exit codes: CMD's own; 2 bad usage; 3 something it needs cannot be had (a package, a kernel);
# 124 the timeout ended the guest; 125 the guest ended without running CMD to its end (boot
# failure, kernel panic: the console's last lines are printed); 130/143 interrupted.
set -uo pipefail

die() { echo "guest.sh: $1" >&2; exit "${2:-2}"; }
usage() { sed -n '6,9p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }

kernel=rt cpus=2 memory=2G cmdline="" timeout=600 accel=auto modules_dir="" console=0
envs=() shares=()
while [ $# -gt 0 ]; do
  case "$1" in
    --kernel) kernel=${2:?--kernel needs a value}; shift 2 ;;
    --modules) modules_dir=${2:?--modules needs a directory}; shift 2 ;;
    --cpus) cpus=${2:?--cpus needs a number}; shift 2 ;;
    --memory) memory=${2:?--memory needs a size}; shift 2 ;;
    --cmdline) cmdline=${2?--cmdline needs a value}; shift 2 ;;
    --timeout) timeout=${2:?--timeout needs seconds}; shift 2 ;;
    --accel) accel=${2:?--accel needs auto, kvm or tcg}; shift 2 ;;
    --env) envs+=("${2:?--env needs NAME=VALUE}"); shift 2 ;;
    --share) shares+=("${2:?--share needs a directory}"); shift 2 ;;
    --console) console=1; shift ;;
    --help|-h) usage ;;
    --) shift; break ;;
    *) die "unknown option '$1' (the command comes after --)" ;;
  esac
done
[ $# -gt 0 ] || die "no command: give it after --"
[[ "$cpus" =~ ^[1-9][0-9]{0,2}$ ]] && [ "$cpus" -le 256 ] || die "--cpus '$cpus': a number from 1 to 256"
[[ "$memory" =~ ^[1-9][0-9]*[MG]$ ]] || die "--memory '$memory': a size such as 512M or 4G"
[[ "$timeout" =~ ^[1-9][0-9]*$ ]] || die "--timeout '$timeout': whole seconds, at least 1"
case "$accel" in auto|kvm|tcg) ;; *) die "--accel '$accel': auto, kvm or tcg" ;; esac
for e in ${envs[@]+"${envs[@]}"}; do
  [[ "$e" =~ ^[A-Za-z_][A-Za-z0-9_]*= ]] || die "--env '$e': NAME=VALUE"
done
case "$cmdline" in *$'\n'*) die "--cmdline: one line" ;; esac
# --share DIR: a host directory the guest would not see where it is (under /tmp, which the
# guest mounts afresh), shared read-only at its own path.
for sd in ${shares[@]+"${shares[@]}"}; do
  [ -d "$sd" ] || die "--share '$sd': not a directory"
  case "$sd" in /*) ;; *) die "--share '$sd': an absolute path" ;; esac
  case "$sd" in *$'\n'*|*,*) die "--share '$sd': no newline or comma in the path" ;; esac
done

cache=${LATLAB_GUEST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/latlab/guest}
mkdir -p "$cache" || die "cannot create the cache $cache" 3
exec 9>"$cache/.lock"

# ---- what the host needs --------------------------------------------------------------------
need_pkgs() {
  local missing=() p
  for p in qemu-system-x86 busybox-static kmod cpio; do
    dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  [ "$(id -u)" -eq 0 ] || die "needs the Debian packages ${missing[*]} (apt-get install them as root)" 3
  echo "guest.sh: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -qq "${missing[@]}" >/dev/null 2>&1 ||
    { apt-get update -qq >/dev/null 2>&1; apt-get install -y -qq "${missing[@]}" >/dev/null; } ||
    die "could not install ${missing[*]}" 3
}
flock 9
need_pkgs

# ---- the kernel -----------------------------------------------------------------------------
# Resolves --kernel to a directory of the cache holding vmlinuz, config and lib/modules/VERSION.
fetch_pkg() { # PKG -> unpacked directory
  local pkg=$1 dir="$cache/kernels/$1"
  if [ ! -f "$dir/.complete" ]; then
    local dl="$cache/debs"
    mkdir -p "$dl"
    echo "guest.sh: fetching $pkg" >&2
    (cd "$dl" && apt-get download "$pkg" >/dev/null 2>&1) ||
      { apt-get update -qq >/dev/null 2>&1 || true; (cd "$dl" && apt-get download "$pkg" >/dev/null 2>&1); } ||
      die "cannot download the Debian package $pkg (apt-get download)" 3
    rm -rf "$dir.tmp" && mkdir -p "$dir.tmp"
    dpkg-deb -x "$dl/${pkg}"_*.deb "$dir.tmp" || die "cannot unpack $pkg" 3
    rm -f "$dl/${pkg}"_*.deb
    rm -rf "$dir" && mv "$dir.tmp" "$dir" && touch "$dir/.complete"
  fi
  echo "$dir"
}
resolve_meta() { # rt|generic -> the versioned package the meta package depends on
  local meta=$1 cached
  local dep
  dep=$(apt-cache depends "$meta" 2>/dev/null | sed -n 's/^ *Depends: \(linux-image-[0-9].*\)$/\1/p' | head -n 1)
  if [ -z "$dep" ]; then # no package lists: the newest of that flavour already unpacked
    cached=$(ls -d "$cache"/kernels/linux-image-[0-9]*-"${meta#linux-image-}" 2>/dev/null | sort -V | tail -n 1)
    [ -n "$cached" ] || die "cannot resolve $meta (no package lists; run apt-get update)" 3
    dep=$(basename "$cached")
  fi
  echo "$dep"
}
custom=""
case "$kernel" in
  rt) kdir=$(fetch_pkg "$(resolve_meta linux-image-rt-amd64)") || exit 3 ;;
  generic) kdir=$(fetch_pkg "$(resolve_meta linux-image-amd64)") || exit 3 ;;
  linux-image-*)
    [[ "$kernel" =~ ^linux-image-[a-z0-9.+-]+$ ]] || die "--kernel '$kernel': not a package name"
    case "$kernel" in linux-image-rt-amd64|linux-image-amd64|linux-image-cloud-amd64)
      kernel=$(resolve_meta "$kernel") ;; esac
    kdir=$(fetch_pkg "$kernel") || exit 3 ;;
  *)
    [ -f "$kernel" ] && [ -r "$kernel" ] || die "--kernel '$kernel': rt, generic, a linux-image-* package or a readable kernel image"
    custom=$(readlink -f "$kernel") ;;
esac
if [ -z "$custom" ]; then
  vmlinuz=$(ls "$kdir"/boot/vmlinuz-* | head -n 1)
  release=${vmlinuz##*/vmlinuz-}
  modroot=$kdir
else
  vmlinuz=$custom
  # The release string a bzImage carries (its header points at it), for its modules.
  off=$(od -An -tu2 -j526 -N2 "$vmlinuz" 2>/dev/null | tr -d ' ')
  release=""
  [ -n "$off" ] && release=$(dd if="$vmlinuz" bs=1 skip=$((off + 512)) count=128 2>/dev/null | tr '\0' '\n' | head -n 1 | cut -d' ' -f1)
  [ -n "$release" ] || die "--kernel '$kernel': not a bzImage (no version string in its header)"
  if [ -n "$modules_dir" ]; then
    [ -d "$modules_dir/lib/modules/$release" ] || die "--modules '$modules_dir': has no lib/modules/$release"
    modroot=$(readlink -f "$modules_dir")
  elif [ -d "/lib/modules/$release" ]; then
    modroot=/
  else
    modroot="" # its 9p and virtio drivers must be built in
  fi
fi
moddir=${modroot:+$modroot/lib/modules/$release}
if [ -n "$moddir" ] && [ ! -f "$moddir/modules.dep" ] && [ -w "$moddir" ]; then
  depmod -b "$modroot" "$release" || die "depmod failed for $moddir" 3
fi

# ---- the initramfs: busybox, the drivers, init ----------------------------------------------
# Cached per kernel; the per-run part (the command) is a second archive appended to it.
key=$(printf '%s\n' "$vmlinuz" "$release" "$(stat -c %Y "$vmlinuz")" "$(sha1sum <"$0")" | sha1sum | cut -c1-16)
base="$cache/initrd/$key.cpio.gz"
if [ ! -f "$base" ]; then
  mkdir -p "$cache/initrd"
  t=$(mktemp -d "$cache/initrd/build.XXXXXX")
  mkdir -p "$t/bin" "$t/dev" "$t/proc" "$t/sys" "$t/newroot" "$t/mods"
  cp /bin/busybox "$t/bin/busybox"
  : >"$t/modules.list"
  if [ -n "$moddir" ]; then
    for m in virtio_pci 9pnet_virtio 9p virtio_console; do
      modprobe -d "$modroot" -S "$release" --show-depends "$m" 2>/dev/null | awk '$1 == "insmod" {print $2}'
    done | awk '!seen[$0]++' | while read -r ko; do
      cp "$ko" "$t/mods/" && basename "$ko" >>"$t/modules.list"
    done
  fi
  sed -n '/^#--init--$/,/^#--end--$/p' "$0" | sed '1d;$d' >"$t/init"
  chmod 0755 "$t/init"
  (cd "$t" && find . | cpio -o -H newc --quiet | gzip -1) >"$t.gz" && mv "$t.gz" "$base"
  rm -rf "$t"
fi

# ---- the image QEMU loads -------------------------------------------------------------------
# An emulated CPU takes seconds to decompress a bzImage. Its payload, decompressed once into the
# cache, boots through QEMU's PVH entry (an ELF with Xen's PHYS32_ENTRY note, which Debian's
# kernels have) in about half the time; a kernel without the note, or not xz-compressed, boots
# as it is. The guest's /boot keeps the bzImage (a kexec inside the guest loads that).
image=$vmlinuz
unpacked="$cache/vmlinux/$(printf '%s\n' "$vmlinuz" "$(stat -c %Y:%s "$vmlinuz")" | sha1sum | cut -c1-16)"
if [ ! -f "$unpacked" ] && command -v xz >/dev/null && command -v readelf >/dev/null; then
  mkdir -p "$cache/vmlinux"
  at=$(LC_ALL=C grep -obUaP '\xfd7zXZ\x00' "$vmlinuz" 2>/dev/null | head -n 1 | cut -d: -f1)
  if [ -n "$at" ] && xz -dc --single-stream < <(tail -c +$((at + 1)) "$vmlinuz") >"$unpacked.$$" 2>/dev/null &&
    [[ "$(readelf -n "$unpacked.$$" 2>/dev/null)" == *"note type: (0x00000012)"* ]]; then
    mv "$unpacked.$$" "$unpacked"
  else
    rm -f "$unpacked.$$"
  fi
fi
[ -f "$unpacked" ] && image=$unpacked

# ---- KVM or TCG ----------------------------------------------------------------------------
# /dev/kvm opening is not enough (a nested guest may hang in real mode): boot once under KVM with a
# short limit and keep the answer for this host's boot.
flock -u 9
# Each run's files under the cache, named by its pid: a run killed with SIGKILL (its qemu dies
# with it) leaves them, and the next run removes those whose process is gone.
mkdir -p "$cache/runs"
for old in "$cache"/runs/*.*; do
  [ -d "$old" ] || continue
  p=${old##*/}; p=${p%%.*}
  [[ "$p" =~ ^[0-9]+$ ]] && ! kill -0 "$p" 2>/dev/null && rm -rf "$old"
done
run_tmp=$(mktemp -d "$cache/runs/$$.XXXXXX") || die "no temporary directory under $cache" 3
qpid="" followers=""
cleanup() {
  [ -n "$qpid" ] && kill -KILL "$qpid" 2>/dev/null && wait "$qpid" 2>/dev/null
  # The output followers of an interrupted boot (they would wait for its end forever).
  [ -n "$followers" ] && kill $followers 2>/dev/null
  # qemu itself (its parent's death kills it too): gone before the script is.
  local f q i
  for f in "$run_tmp"/*/qemu.pid; do
    [ -f "$f" ] || continue
    q=$(cat "$f" 2>/dev/null)
    [[ "$q" =~ ^[0-9]+$ ]] || continue
    kill -KILL "$q" 2>/dev/null
    for i in $(seq 100); do kill -0 "$q" 2>/dev/null || break; sleep 0.05; done
  done
  rm -rf "$run_tmp"
}
trap cleanup EXIT
trap 'echo "guest.sh: interrupted" >&2; exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

# quote ARG: one word for a POSIX shell.
quote() { printf "'%s'" "$(printf '%s' "$1" | sed "s/'/'\\\\''/g")"; }

# boot ACCEL CPUS MEMORY LIMIT CMD...: one guest; leaves out/err/rc/console in $run_tmp/ACCEL.
boot() {
  local acc=$1 n=$2 mem=$3 limit=$4; shift 4
  local d="$run_tmp/$acc"
  mkdir -p "$d/extra"
  {
    echo "GUEST_DIR=$(quote "$PWD")"
    printf 'GUEST_CMD='
    local a words=""
    for a in "$@"; do words="$words $(quote "$a")"; done
    quote "$words"; echo
    printf 'GUEST_ENV='
    local e envline=""
    while IFS= read -r e; do envline="$envline $(quote "$e")"; done < <(
      env | grep -E '^(LATLAB_[A-Za-z0-9_]*|RUST_[A-Z_]*|CARGO_[A-Z_]*|TZ|LANG|LC_[A-Z]*)=' | grep -v $'\n' || true
      for e in ${envs[@]+"${envs[@]}"}; do printf '%s\n' "$e"; done)
    quote "$envline"; echo
    echo "GUEST_MODULES=$( [ -n "$moddir" ] && echo 1 || echo 0)"
    printf 'GUEST_SHARES='
    local sd sharel=""
    for sd in ${shares[@]+"${shares[@]}"}; do sharel="$sharel $(quote "$sd")"; done
    quote "$sharel"; echo
  } >"$d/extra/guest.conf"
  (cd "$d/extra" && echo guest.conf | cpio -o -H newc --quiet | gzip -1) >"$d/run.cpio.gz"
  cat "$base" "$d/run.cpio.gz" >"$d/initrd"
  # The guest's own /boot, as an installed kernel has it: its image, its initrd (so a kexec
  # inside the guest boots it again, into the same command) and its config (which latlab
  # hashes).
  mkdir -p "$d/boot"
  ln "$vmlinuz" "$d/boot/vmlinuz-$release" 2>/dev/null || cp "$vmlinuz" "$d/boot/vmlinuz-$release"
  cp "$d/initrd" "$d/boot/initrd.img-$release"
  local kconf="${kdir:-}/boot/config-$release"
  [ -n "${kdir:-}" ] && [ -f "$kconf" ] && cp "$kconf" "$d/boot/"
  : >"$d/out"; : >"$d/err"; : >"$d/rc"; : >"$d/console"
  # Multi-threaded TCG only while each vCPU can have a host CPU: with more vCPUs than host
  # CPUs, vCPU threads that wait for each other (a text patch's IPIs, stop_machine) while
  # the host runs others livelocked an 8-vCPU guest on 2 host CPUs; one thread taking the vCPUs
  # in turn ran the same work, and faster.
  local thread=multi
  [ "$n" -gt "$(nproc)" ] && thread=single
  local cpu=max accelopt=tcg,thread=${GUEST_TCG_THREAD:-$thread}
  [ "$acc" = kvm ] && { cpu=${GUEST_KVM_CPU:-host,-arch-capabilities}; accelopt=kvm; }
  local q=(qemu-system-x86_64 -nodefaults -no-user-config -display none -no-reboot
    -machine pc -accel "$accelopt" -cpu "$cpu" -smp "$n" -m "$mem"
    -kernel "$image" -initrd "$d/initrd" -pidfile "$d/qemu.pid"
    -append "console=ttyS0 panic=-1 quiet loglevel=4 $cmdline"
    -serial "file:$d/console"
    -fsdev "local,id=root,path=/,security_model=none,readonly=on,multidevs=remap"
    -device virtio-9p-pci,fsdev=root,mount_tag=hostroot
    -fsdev "local,id=cwd,path=$PWD,security_model=none,multidevs=remap"
    -device virtio-9p-pci,fsdev=cwd,mount_tag=hostcwd
    -fsdev "local,id=boot,path=$d/boot,security_model=none,readonly=on"
    -device virtio-9p-pci,fsdev=boot,mount_tag=boot
    -device virtio-serial-pci,id=vser
    -chardev "file,id=out,path=$d/out" -device virtserialport,bus=vser.0,chardev=out,name=out
    -chardev "file,id=err,path=$d/err" -device virtserialport,bus=vser.0,chardev=err,name=err
    -chardev "file,id=rc,path=$d/rc" -device virtserialport,bus=vser.0,chardev=rc,name=rc)
  # For debugging a guest that hangs: GUEST_MONITOR=SOCKET opens QEMU's monitor there.
  [ -n "${GUEST_MONITOR:-}" ] && q+=(-monitor "unix:$GUEST_MONITOR,server,nowait")
  local si=0 sd
  for sd in ${shares[@]+"${shares[@]}"}; do
    q+=(-fsdev "local,id=share$si,path=$sd,security_model=none,readonly=on,multidevs=remap"
      -device "virtio-9p-pci,fsdev=share$si,mount_tag=share$si")
    si=$((si + 1))
  done
  if [ -n "$moddir" ]; then
    q+=(-fsdev "local,id=mods,path=$moddir,security_model=none,readonly=on"
      -device virtio-9p-pci,fsdev=mods,mount_tag=modules)
  fi
  # timeout ends a guest past its limit; each process dies with its parent, so qemu dies with
  # this script even when the script is SIGKILLed.
  setpriv --pdeathsig KILL timeout -s TERM -k 5 "$limit" \
    setpriv --pdeathsig KILL "${q[@]}" </dev/null >"$d/qemu.log" 2>&1 &
  qpid=$!
  local t1="" t2=""
  if [ "${GUEST_STREAM:-1}" = 1 ]; then
    follow "$d/out" "$d/.done" &
    t1=$!
    follow "$d/err" "$d/.done" >&2 &
    t2=$!
    followers="$t1 $t2"
  fi
  wait "$qpid" 2>/dev/null; local qrc=$?
  qpid=""
  : >"$d/.done"
  [ -n "$t1" ] && wait "$t1" "$t2"
  followers=""
  return $qrc
}

# follow FILE DONE: copies FILE to stdout as it grows, and once DONE exists, the rest: every
# byte once (tail -f --pid could end before its last read and lose a result's end).
follow() {
  local f=$1 done=$2 off=0 size last=0
  while :; do
    # Its boot's files gone (the script ended): nothing more will come.
    [ -e "$f" ] || return 0
    [ -e "$done" ] && last=1
    size=$(stat -c %s "$f" 2>/dev/null || echo "$off")
    if [ "$size" -gt "$off" ]; then
      tail -c +$((off + 1)) "$f" | head -c $((size - off))
      off=$size
    fi
    [ "$last" = 1 ] && return 0
    sleep 0.2
  done
}

probe_kvm() {
  [ -r /dev/kvm ] && [ -w /dev/kvm ] || return 1
  local f
  f="$cache/kvm-probe.$(cat /proc/sys/kernel/random/boot_id 2>/dev/null)"
  if [ ! -f "$f" ]; then
    rm -f "$cache"/kvm-probe.*
    if GUEST_STREAM=0 boot kvm 1 256M 20 true && [ "$(tr -dc 0-9 <"$run_tmp/kvm/rc")" = 0 ]; then
      echo yes >"$f"
    else
      echo no >"$f"
    fi
    rm -rf "$run_tmp/kvm"
  fi
  [ "$(cat "$f")" = yes ]
}
case "$accel" in
  auto) if probe_kvm; then acc=kvm; else acc=tcg; fi ;;
  *) acc=$accel ;;
esac
why=""
if [ "$acc" = tcg ]; then
  [ "$cpus" -gt "$(nproc)" ] && t=single || t=multi
  why=" (${GUEST_TCG_THREAD:-$t}-threaded, emulated: latencies are the emulator's)"
fi
echo "guest.sh: $release, $cpus vCPUs, $memory, $acc$why" >&2

boot "$acc" "$cpus" "$memory" "$timeout" "$@"
qrc=$?
d="$run_tmp/$acc"
rc=$(tr -dc 0-9 <"$d/rc")
if [ -n "$rc" ]; then
  [ "$console" = 1 ] && cat "$d/console" >&2
  exit "$rc"
fi
if [ $qrc -eq 124 ]; then
  echo "guest.sh: the guest did not finish within --timeout $timeout s; it was ended" >&2
  tail -n 20 "$d/console" >&2
  exit 124
fi
echo "guest.sh: the guest ended without the command's exit code (qemu exit $qrc); its console's end:" >&2
tail -n 30 "$d/console" >&2
tail -n 5 "$d/qemu.log" >&2
exit 125

# The guest's /init, run by busybox as PID 1. Copied into the initramfs between the markers.
#--init--
#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
for m in $(cat /modules.list); do insmod "/mods/$m" || echo "init: insmod $m failed" >/dev/console; done
. /guest.conf
# A port's device appears once its driver has probed it, which may be after init starts.
port() {
  for i in $(seq 100); do
    for p in /sys/class/virtio-ports/*; do
      [ -e "$p/name" ] && [ "$(cat "$p/name")" = "$1" ] && [ -e "/dev/${p##*/}" ] && echo "/dev/${p##*/}" && return
    done
    sleep 0.05
  done
  echo /dev/console
}
fail() { echo "init: $1" >/dev/console; poweroff -f; reboot -f; }
out=$(port out); err=$(port err); rcport=$(port rc)
R=/newroot
mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=524288,cache=loose hostroot $R || fail "cannot mount the host's root"
mount -t proc proc $R/proc
mount -t sysfs sys $R/sys
mount -t devtmpfs dev $R/dev
mkdir -p $R/dev/pts $R/dev/shm $R/dev/mqueue
mount -t devpts -o newinstance,ptmxmode=0666 devpts $R/dev/pts
mount -t tmpfs -o mode=1777 shm $R/dev/shm
mount -t mqueue mqueue $R/dev/mqueue 2>/dev/null
mount -t cgroup2 cgroup2 $R/sys/fs/cgroup 2>/dev/null
for d in /tmp /var/tmp; do mount -t tmpfs -o mode=1777 tmp $R$d; done
# The --share directories, at their own paths (over the fresh /tmp when they are under it).
eval "set -- $GUEST_SHARES"
i=0
for s in "$@"; do
  mkdir -p "$R$s" 2>/dev/null
  mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=524288 "share$i" "$R$s" || echo "init: cannot share $s" >/dev/console
  i=$((i + 1))
done
for d in /run /var/lib/latlab /var/log /var/cache; do [ -d $R$d ] && mount -t tmpfs -o mode=0755 tmp $R$d; done
# The kernel's modules where modprobe looks (when the host has a /lib/modules to mount on).
if [ "$GUEST_MODULES" = 1 ] && [ -d $R/lib/modules ]; then
  mkdir -p $R/lib/modules/$(uname -r) 2>/dev/null
  mount -t 9p -o trans=virtio,version=9p2000.L,ro modules $R/lib/modules/$(uname -r) 2>/dev/null ||
    { mount -t tmpfs -o mode=0755 mods $R/lib/modules && mkdir -p $R/lib/modules/$(uname -r) &&
      mount -t 9p -o trans=virtio,version=9p2000.L,ro modules $R/lib/modules/$(uname -r); }
fi
[ -d $R/boot ] && mount -t 9p -o trans=virtio,version=9p2000.L,ro boot $R/boot
mkdir -p "$R$GUEST_DIR" 2>/dev/null
mount -t 9p -o trans=virtio,version=9p2000.L,rw,msize=524288,cache=mmap hostcwd "$R$GUEST_DIR" || fail "cannot mount the working directory"
mkdir -p $R/run/home/data $R/run/home/state $R/run/home/cache
hostname latlab-guest
ip link set lo up 2>/dev/null
eval "set -- $GUEST_ENV"
chroot $R /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  HOME=/root XDG_DATA_HOME=/run/home/data XDG_STATE_HOME=/run/home/state XDG_CACHE_HOME=/run/home/cache \
  TERM=dumb LATLAB_IN_GUEST=1 "$@" /bin/sh -c "cd \"\$1\" && eval \"exec \$2\"" sh "$GUEST_DIR" "$GUEST_CMD" \
  <$R/dev/null >"$out" 2>"$err"
echo $? >"$rcport"
sync
poweroff -f
reboot -f
#--end--
