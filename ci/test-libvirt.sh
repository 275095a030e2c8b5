#!/usr/bin/env bash
# The libvirt tier: sets up libvirtd and the guest (both idempotent), runs the guest tests of
# drivers/libvirt, the audit's libvirt reader and csconform inject --local on a real domain, and
# checks that no harness domain or QEMU of the tests is left. Run as root.
# About 2 minutes on a 2-core machine under TCG (first run: plus package install and guest build).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"

ci/setup-libvirt.sh
ci/build-guest.sh

echo "== guest tests (CSCONFORM_TIERS=libvirt go test ./drivers/libvirt/), the audit's libvirt reader and inject --local on a real domain"
set +e
CSCONFORM_TIERS=libvirt go test -count=1 -short -timeout 20m -v ./drivers/libvirt/ >/tmp/csconform-libvirt-test.txt 2>&1
rc=$?
CSCONFORM_TIERS=libvirt go test -count=1 -short -timeout 10m -v -run '^(TestLibvirtHost|TestInjectCrashesALocalDomain)$' ./harness/audit ./cmd/csconform >>/tmp/csconform-libvirt-test.txt 2>&1
rc2=$?
[ "$rc" != 0 ] || rc=$rc2
set -e
grep -E '^(=== RUN|--- |PASS|FAIL|ok)|libvirt_test.go' /tmp/csconform-libvirt-test.txt || true
if grep -q -- '--- SKIP' /tmp/csconform-libvirt-test.txt; then
  echo "ci/test-libvirt.sh: guest tests skipped, libvirt tier not tested:" >&2
  grep -A1 -- '--- SKIP' /tmp/csconform-libvirt-test.txt >&2
  exit 1
fi
left="$(virsh -c qemu:///system list --all --name | grep '^csc-' || true)"
if [ -n "$left" ]; then
  echo "ci/test-libvirt.sh: harness domains left after the tests: $left" >&2
  exit 1
fi
[ "$rc" = 0 ] || { echo "ci/test-libvirt.sh: guest tests failed (log: /tmp/csconform-libvirt-test.txt)" >&2; exit "$rc"; }
echo "libvirt tier passed"
