#!/usr/bin/env bash
# Builds csconform's guest from Debian packages only: Debian's kernel (vmlinuz, extracted from the
# linux-image package, never installed) and a busybox-static initramfs whose /init takes its
# behaviour from the kernel command line. Cached: it does nothing when the inputs are unchanged.
#
#   ci/build-guest.sh      -> $CSCONFORM_GUEST_DIR (default /var/cache/csconform/guest)
#                             vmlinuz, initramfs.cpio.gz, inputs (what they were built from)
#
# Kernel command line the guest understands (the libvirt driver writes it):
#   console=ttyS0          everything below goes to the first serial port
#   csc.name=NAME          printed in the banner lines
#   csc.delay=SECONDS      sleep between "booting" and "ready" (a router's boot); default 0
#   csc.life=SECONDS       after "ready", live this long and then power off (poweroff -f); 0 = forever
#   csc.ip=IP csc.mac=MAC  what the guest was given; printed on the ready line
# Lines on the serial console:
#   csconform: booting NAME
#   csconform: ready NAME ip=IP mac=MAC
#   csconform: poweroff NAME            (lifetime over, or "poweroff" was written to the serial port)
# While it runs, the guest reads the serial port: a line "poweroff" makes it power off at once
# (ACPI power off: libvirt reports SHUTDOWN, then STOPPED/SHUTDOWN).
set -euo pipefail

die() { echo "ci/build-guest.sh: $*" >&2; exit 1; }

out="${CSCONFORM_GUEST_DIR:-/var/cache/csconform/guest}"
command -v dpkg-query >/dev/null 2>&1 || die "needs Debian (dpkg, apt-get)"

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q '^install ok installed$'; }
need=()
for p in busybox-static cpio; do installed "$p" || need+=("$p"); done
if [ "${#need[@]}" -gt 0 ]; then
  [ "$(id -u)" = 0 ] || die "missing packages ${need[*]}: run as root or apt-get install them"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${need[@]}" ||
    { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${need[@]}"; } ||
    die "apt-get install ${need[*]} failed"
fi

# Which kernel image package: the one linux-image-amd64 depends on.
kpkg="$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/ {print $2; exit}')"
if [ -z "$kpkg" ]; then
  [ "$(id -u)" = 0 ] || die "apt knows no linux-image-amd64: run apt-get update as root"
  apt-get update -q || die "apt-get update failed"
  kpkg="$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/ {print $2; exit}')"
  [ -n "$kpkg" ] || die "cannot find the kernel package linux-image-amd64 depends on"
fi
kver="$(apt-cache policy "$kpkg" | awk '/Candidate:/ {print $2}')"
bbver="$(dpkg-query -W -f='${Version}' busybox-static)"

# The /init script is part of the inputs; so is this file.
read -r -d '' INIT <<'EOF' || true
#!/bin/busybox sh
/bin/busybox mkdir -p /proc /sys /dev /tmp /sbin /usr/bin /usr/sbin
/bin/busybox --install -s
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null || mdev -s
name=guest delay=0 life=0 ip= mac=
for arg in $(cat /proc/cmdline); do
  case "$arg" in
    csc.name=*) name="${arg#csc.name=}" ;;
    csc.delay=*) delay="${arg#csc.delay=}" ;;
    csc.life=*) life="${arg#csc.life=}" ;;
    csc.ip=*) ip="${arg#csc.ip=}" ;;
    csc.mac=*) mac="${arg#csc.mac=}" ;;
  esac
done
con=/dev/ttyS0
[ -c "$con" ] || con=/dev/console
stty -F "$con" -echo 2>/dev/null
say() { echo "csconform: $*" >"$con"; }
off() { say "poweroff $name"; sync; poweroff -f; sleep 5; echo o >/proc/sysrq-trigger; }
say "booting $name"
[ "$delay" != 0 ] && sleep "$delay"
say "ready $name ip=$ip mac=$mac"
if [ "$life" != 0 ]; then
  ( sleep "$life"; off ) &
fi
# Commands on the serial port.
while true; do
  while read -r cmd; do
    case "$cmd" in
      poweroff) off ;;
      ping) say "pong $name" ;;
    esac
  done <"$con"
  sleep 1
done
EOF

stamp="kernel=$kpkg $kver busybox-static=$bbver init=$(printf '%s' "$INIT" | sha256sum | cut -c1-16)"
if [ -f "$out/inputs" ] && [ -f "$out/vmlinuz" ] && [ -f "$out/initramfs.cpio.gz" ] &&
  [ "$(cat "$out/inputs")" = "$stamp" ]; then
  echo "== guest is cached in $out ($stamp)"
  exit 0
fi

echo "== building guest in $out ($stamp)"
mkdir -p "$out"
work="$(mktemp -d /tmp/csconform-guest.XXXXXX)"
trap 'rm -rf "$work"' EXIT

# Kernel: download the .deb (no install) and take /boot/vmlinuz-* out of it. No modules are needed:
# the serial port, ACPI power off and the initramfs are built into Debian's kernel.
(cd "$work" && apt-get download -q "$kpkg" >/dev/null 2>&1) ||
  (cd "$work" && chown _apt "$work" 2>/dev/null; apt-get download -q "$kpkg") ||
  die "apt-get download $kpkg failed"
deb="$(ls "$work"/*.deb | head -n1)"
mkdir -p "$work/kernel"
dpkg -x "$deb" "$work/kernel"
vmlinuz="$(ls "$work"/kernel/boot/vmlinuz-* | head -n1)"
[ -f "$vmlinuz" ] || die "no vmlinuz in $deb"

# Initramfs: busybox-static and /init.
root="$work/root"
mkdir -p "$root/bin" "$root/proc" "$root/sys" "$root/dev" "$root/tmp"
cp /bin/busybox "$root/bin/busybox"
printf '%s\n' "$INIT" >"$root/init"
chmod 755 "$root/init" "$root/bin/busybox"
ln -s busybox "$root/bin/sh"
# A console node for the kernel to open before devtmpfs is mounted.
mknod -m 600 "$root/dev/console" c 5 1 2>/dev/null || true
(cd "$root" && find . -print0 | cpio --null -o -H newc --quiet) | gzip -9 >"$work/initramfs.cpio.gz"

install -m 644 "$vmlinuz" "$out/vmlinuz.new"
install -m 644 "$work/initramfs.cpio.gz" "$out/initramfs.cpio.gz.new"
mv "$out/vmlinuz.new" "$out/vmlinuz"
mv "$out/initramfs.cpio.gz.new" "$out/initramfs.cpio.gz"
echo "$stamp" >"$out/inputs"
echo "== guest built: $(du -h "$out/vmlinuz" | cut -f1) vmlinuz, $(du -h "$out/initramfs.cpio.gz" | cut -f1) initramfs"
