#!/usr/bin/env bash
# The libvirt conformance tier: sets up libvirtd and the guest (both idempotent), runs the seed
# scenarios (D1: seed-000-*, D2: seed-001, D3: seed-004) on real QEMU domains under both profiles
# (CSCONFORM_TIERS=libvirt go test ./conformance), and fails if any harness domain (csc-*) or harness
# process is left afterwards, or unless every run matched its expectations. Run as root. See
# harness/libvirt.go for the time scaling.
#
#   ci/test-libvirt-conformance.sh      D1 (seed-000-boot-group; seed-000-retry-not-safe, fixed), D2, D3 (both profiles): ~7 min
#   CSCONFORM_LIBVIRT_LONG=1 ci/test-libvirt-conformance.sh
#       also D1 under cloudstack-4.22 (phase-dependent in real time: see conformance/libvirt_test.go),
#       seed-000-ab and seed-000-stuck-network: ~15 min
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"

ci/setup-libvirt.sh
ci/build-guest.sh

log=/tmp/csconform-libvirt-conformance.txt
echo "== libvirt conformance tier (CSCONFORM_TIERS=libvirt go test ./conformance -run TestLibvirtTier)"
start=$(date +%s)
set +e
long=()
[ "${CSCONFORM_LIBVIRT_LONG:-0}" = 1 ] && long=(-long)
CSCONFORM_TIERS=libvirt go test -count=1 -short -timeout 40m -parallel 16 -v -run 'TestLibvirtTier' ./conformance "${long[@]}" >"$log" 2>&1
rc=$?
set -e
grep -E '^(=== RUN|\s*--- |PASS|FAIL|ok)|^---- |^   (Case|profile|VIOLATION|outcome|OUTCOME|[A-Za-z0-9-]+ +[a-z0-9]+ )|libvirt_test.go|^libvirt tier:' "$log" || true
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
procs="$(pgrep -af 'qemu-system.*csc-|conformance.test.*TestLibvirtTier' || true)"
if [ -n "$procs" ]; then
  echo "ci/test-libvirt-conformance.sh: harness processes left after the tier:" >&2
  echo "$procs" >&2
  exit 1
fi
[ "$rc" = 0 ] || { echo "ci/test-libvirt-conformance.sh: tier failed (log: $log)" >&2; exit "$rc"; }
# A pass counts only with every run there and matched (not, say, a test that ran no run at all).
summary="$(grep -E '^libvirt tier: [0-9]+ of [0-9]+ runs matched' "$log" || true)"
read -r m n < <(sed -E 's/^libvirt tier: ([0-9]+) of ([0-9]+) .*/\1 \2/' <<<"$summary")
if [ -z "$summary" ] || [ "${n:-0}" -lt 7 ] || [ "$m" != "$n" ]; then
  echo "ci/test-libvirt-conformance.sh: not every run matched its expectations: ${summary:-no summary line} (log: $log)" >&2
  exit 1
fi
echo "libvirt conformance tier passed"
