#!/usr/bin/env bash
# The libvirt conformance tier: sets up libvirtd and the guest (both idempotent), runs the seed
# scenarios (D1: seed-000-*, D2: seed-001, D3: seed-004) on real QEMU domains under both profiles
# (go test ./conformance -driver=libvirt), and fails if any harness domain (csc-*) or harness
# process is left afterwards. Run as root. See harness/libvirt.go for the time scaling.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"

ci/setup-libvirt.sh
ci/build-guest.sh

log=/tmp/csconform-libvirt-conformance.txt
echo "== libvirt conformance tier (go test ./conformance -driver=libvirt -run TestLibvirtTier)"
start=$(date +%s)
set +e
go test -count=1 -timeout 45m -parallel 16 -v -run 'TestLibvirtTier' ./conformance -driver=libvirt >"$log" 2>&1
rc=$?
set -e
grep -E '^(=== RUN|\s*--- |PASS|FAIL|ok)|^---- |^   (Case|profile|VIOLATION|outcome|OUTCOME|[A-Za-z0-9-]+ +[a-z0-9]+ )|libvirt_test.go' "$log" || true
echo "tier wall time: $(( $(date +%s) - start )) s (log: $log)"
if grep -q -- '--- SKIP' "$log"; then
  echo "ci/test-libvirt-conformance.sh: libvirt tier skipped, not tested:" >&2
  grep -A1 -- '--- SKIP' "$log" >&2
  exit 1
fi
left="$(virsh -c qemu:///system list --all --name | grep '^csc-' || true)"
if [ -n "$left" ]; then
  echo "ci/test-libvirt-conformance.sh: harness domains left after the tier: $left" >&2
  exit 1
fi
# The tier runs the server and the agents inside the test process; a QEMU of a harness domain or a
# test binary still running afterwards is a leak.
procs="$(pgrep -af 'qemu-system.*csc-|conformance.test' || true)"
if [ -n "$procs" ]; then
  echo "ci/test-libvirt-conformance.sh: harness processes left after the tier:" >&2
  echo "$procs" >&2
  exit 1
fi
[ "$rc" = 0 ] || { echo "ci/test-libvirt-conformance.sh: tier failed (log: $log)" >&2; exit "$rc"; }
echo "libvirt conformance tier passed"
