#!/usr/bin/env bash
# Sets up a libvirtd with the QEMU driver for csconform's libvirt tier. Idempotent; run as root on
# Debian 12. Works without systemd (CI containers): it starts virtlogd and libvirtd itself.
#
#   ci/setup-libvirt.sh            install what is missing, configure, start, wait for virsh
#
# Environment: CSCONFORM_LIBVIRT_WAIT (seconds to wait for libvirtd, default 60).
set -euo pipefail

die() { echo "ci/setup-libvirt.sh: $*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || die "must run as root (it installs packages and starts libvirtd)"
command -v apt-get >/dev/null 2>&1 || die "needs a Debian-like system with apt-get"

pkgs=(libvirt-daemon libvirt-daemon-driver-qemu libvirt-clients libvirt-dev
  qemu-system-x86 qemu-utils busybox-static cpio pkg-config tini)
missing=()
for p in "${pkgs[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q '^install ok installed$'; then
    missing+=("$p")
  fi
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "== installing: ${missing[*]}"
  # Update the package lists once if they were never fetched (or are older than a day).
  if [ -z "$(find /var/lib/apt/lists -maxdepth 1 -name '*_Packages*' -mmin -1440 2>/dev/null | head -n1)" ]; then
    apt-get update -q || die "apt-get update failed"
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" \
    || die "apt-get install ${missing[*]} failed"
else
  echo "== packages already installed"
fi

# Users and groups the Debian packages expect (their postinst may have been skipped without systemd).
getent group kvm >/dev/null || groupadd --system kvm
getent group libvirt-qemu >/dev/null || groupadd --system libvirt-qemu
getent passwd libvirt-qemu >/dev/null ||
  useradd --system --no-create-home --home-dir /var/lib/libvirt --shell /usr/sbin/nologin \
    -g kvm libvirt-qemu
getent group libvirt >/dev/null || groupadd --system libvirt

# QEMU runs as root without a security driver: the harness kills QEMU and checks open disk files
# itself, and a CI container has no AppArmor/SELinux to confine it.
conf=/etc/libvirt/qemu.conf
# Debian ships qemu.conf in libvirt-daemon-system, which drags in polkit and systemd units; without it
# libvirtd runs on built-in defaults and we write just the keys we need.
mkdir -p /etc/libvirt
[ -f "$conf" ] || echo "# written by csconform ci/setup-libvirt.sh" >"$conf"
setconf() { # key value
  if grep -Eq "^[[:space:]]*$1[[:space:]]*=" "$conf"; then
    sed -i -E "s|^[[:space:]]*$1[[:space:]]*=.*|$1 = $2|" "$conf"
  else
    echo "$1 = $2" >>"$conf"
  fi
}
changed=0
for kv in 'user|"root"' 'group|"root"' 'security_driver|"none"'; do
  k="${kv%%|*}"; v="${kv#*|}"
  if ! grep -Eq "^$k = $v\$" "$conf"; then setconf "$k" "$v"; changed=1; fi
done
mkdir -p /var/log/libvirt /var/log/libvirt/qemu /var/run/libvirt /var/lib/libvirt/qemu /var/cache/csconform

running() { pgrep -x "$1" >/dev/null 2>&1; }
# libvirtd runs under tini as a child subreaper (tini -s): libvirtd daemonizes QEMU, so a QEMU that
# exits is reaped by the nearest subreaper, or else by PID 1. In a CI container PID 1 may be a
# process manager that reaps orphans only now and then (here every ~1.3 s), and until the zombie is
# gone libvirt holds the domain: a kill -9 of QEMU reached the agents as STOPPED/FAILED ~1.4 s late
# and every destroy took ~2 s. Under tini both take milliseconds, as under systemd.
under_reaper() { # pid
  local pp; pp="$(ps -o ppid= -p "$1" | tr -d ' ')"
  [ -n "$pp" ] && [ "$(ps -o comm= -p "$pp")" = tini ]
}
if [ "$changed" = 0 ] && running libvirtd && ! under_reaper "$(pgrep -x libvirtd | head -n1)"; then
  if [ -n "$(virsh -c qemu:///system list --name 2>/dev/null | grep -v '^$' || true)" ]; then
    echo "== libvirtd is not under a subreaper, but domains are running: left as it is (crash events will be late)"
  else
    echo "== libvirtd is not under a subreaper: restarting it under tini -s"
    changed=1
  fi
fi
if [ "$changed" = 1 ] && running libvirtd; then
  echo "== restarting libvirtd"
  pid="$(pgrep -x libvirtd | head -n1)"
  kill "$pid" || true
  for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
fi
if ! running virtlogd; then
  echo "== starting virtlogd"
  virtlogd -d || die "virtlogd -d failed"
fi
if ! running libvirtd; then
  echo "== starting libvirtd"
  setsid tini -s -- libvirtd </dev/null >>/var/log/libvirt/libvirtd.out 2>&1 &
  sleep 0.5
  running libvirtd || die "libvirtd failed to start (see /var/log/libvirt/libvirtd.out)"
fi

wait_s="${CSCONFORM_LIBVIRT_WAIT:-60}"
deadline=$(( $(date +%s) + wait_s ))
until virsh -c qemu:///system list >/dev/null 2>&1; do
  if [ "$(date +%s)" -ge "$deadline" ]; then
    virsh -c qemu:///system list || true
    die "libvirtd did not answer 'virsh -c qemu:///system list' within ${wait_s}s"
  fi
  sleep 0.5
done
echo "== libvirtd is up: $(virsh -c qemu:///system version --daemon 2>/dev/null | grep -i 'running hypervisor' || echo qemu:///system)"
