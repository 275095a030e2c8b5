#!/usr/bin/env bash
# The container tier: the management server and every host in Docker containers built at test time
# FROM scratch with a static csconform (nothing is pulled; Ryuk is off), on a user-defined network per
# run. Runs the driver's fault tests (partition, pause, stop/start, kill, rolling restart, the
# server's kill and start with its records kept, guest faults: CSCONFORM_TIERS=containers go test
# ./drivers/container), the libvirt-backed agents' test (an agent container's restart leaves its real domain
# running), and seed 004 and 001 under both profiles and ms-restart-keeps-records under fixed, all at
# once (CSCONFORM_TIERS=containers go test ./conformance): seed 004 on real libvirt domains that the agent
# containers drive through libvirtd's mounted socket, the others on simulated domains (a hypervisor
# container per host). Then it fails if docker ps -a, docker network ls, docker volume ls, docker
# images, virsh list, the run directories or the process table shows anything of the harness.
# Needs a Docker daemon; with libvirtd and the guest (ci/setup-libvirt.sh, ci/build-guest.sh, as the
# libvirt tier leaves them) seed 004 must run on real domains; without, everything is simulated and
# the libvirt test is skipped (the script says so). About 6 minutes on 2 cores (measured 284 s with
# ms-restart and the guest faults, 317 s and 358 s with real domains, separately; 199 s before both).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"
export TESTCONTAINERS_RYUK_DISABLED=true
export TESTCONTAINERS_HOST_OVERRIDE="${TESTCONTAINERS_HOST_OVERRIDE:-localhost}"

docker info >/dev/null 2>&1 || { echo "ci/test-containers.sh: no Docker daemon answers" >&2; exit 1; }

log=/tmp/csconform-containers.txt
start=$(date +%s)
# an installed-like csconform: static, -trimpath, outside the source tree (go install puts it in
# GOBIN): the exploration below runs from / with it, so its images carry this binary, not a build
# of the tree (issue 15)
bindir="$(mktemp -d)"
CGO_ENABLED=0 go build -trimpath -o "$bindir/csconform" ./cmd/csconform
set +e
CSCONFORM_TIERS=containers go test -count=1 -short -timeout 20m -v -run 'TestFaults|TestLibvirtAgentRestart' ./drivers/container >"$log" 2>&1
rc1=$?
CSCONFORM_TIERS=containers go test -count=1 -short -timeout 30m -parallel 5 -v -run TestContainerTier ./conformance >>"$log" 2>&1
rc2=$?
# exploration on this driver: one random program under fixed, judged by the invariants, run by the
# installed-like binary from outside the tree
(cd / && "$bindir/csconform" explore --driver container --domains simulated --profile fixed --budget 1 --seed 3 --quiet) >>"$log" 2>&1
rc3=$?
rm -rf "$bindir"
set -e
grep -E '^(=== RUN|\s*--- |PASS|FAIL|ok)|^---- |^   |container_test.go:[0-9]+: (partition|pause|stop|kill|rolling|after)|libvirt_test.go:[0-9]+: (csc-|stop|kill)|^explored |^found nothing|^FOUND' "$log" || true
echo "container tier wall time: $(( $(date +%s) - start )) s (log: $log)"
libvirt=0
[ -S /var/run/libvirt/libvirt-sock ] && [ -f /var/cache/csconform/guest/vmlinuz ] && libvirt=1
skips="$(grep -A1 -- '--- SKIP' "$log" || true)"
if [ "$libvirt" = 0 ]; then
  echo "ci/test-containers.sh: no libvirtd socket or no guest: every run had simulated domains, TestLibvirtAgentRestart skipped"
  skips="$(grep -v -e TestLibvirtAgentRestart -e 'libvirt-backed agents cannot run here' <<<"$skips" | grep -v '^--$' || true)"
fi
if [ -n "$skips" ]; then
  echo "ci/test-containers.sh: container tier skipped, not tested:" >&2
  echo "$skips" >&2
  exit 1
fi
real="$(grep -c "^   world: containers .*hosts' domains: REAL libvirt domains" "$log" || true)"
echo "runs on real libvirt domains: $real"
if [ "$libvirt" = 1 ] && [ "$real" -lt 2 ]; then
  echo "ci/test-containers.sh: libvirt is set up, but seed 004 did not run on real domains under both profiles" >&2
  exit 1
fi
left=""
for what in "ps -a" "network ls" "volume ls" "images"; do
  out="$(docker $what --filter label=org.csconform.run --format '{{.ID}}' 2>/dev/null || true)"
  [ -n "$out" ] && left="$left docker $what: $(echo $out)"
done
# Unlabelled leftovers of the harness by name, in case a label was ever missing.
out="$(docker ps -a --format '{{.Names}}' | grep '^csc-' || true)"; [ -n "$out" ] && left="$left containers: $out"
out="$(docker images --format '{{.Repository}}' | grep '^csconform-harness$' || true)"; [ -n "$out" ] && left="$left images: $out"
out="$(docker network ls --format '{{.Name}}' | grep -v -E '^(bridge|host|none)$' || true)"; [ -n "$out" ] && left="$left networks: $out"
# libvirt: the runs' domains, their QEMU processes and run directories, and any csconform process.
if command -v virsh >/dev/null 2>&1 && [ "$libvirt" = 1 ]; then
  out="$(virsh -c qemu:///system list --all --name | grep '^csc-' || true)"; [ -n "$out" ] && left="$left domains: $(echo $out)"
fi
out="$(ls -d /var/lib/csconform/*/.csconform-run 2>/dev/null || true)"; [ -n "$out" ] && left="$left run dirs: $(echo $out)"
out="$(pgrep -af 'qemu-system.*csc-|csconform (agent|server|hypervisor)|container.test|conformance.test.*driver=container' || true)"
[ -n "$out" ] && left="$left processes: $out"
if [ -n "$left" ]; then
  echo "ci/test-containers.sh: harness resources left after the tier:$left" >&2
  exit 1
fi
[ "$rc1" = 0 ] && [ "$rc2" = 0 ] && [ "$rc3" = 0 ] || { echo "ci/test-containers.sh: tier failed (driver $rc1, conformance $rc2, explore $rc3; log: $log)" >&2; exit 1; }
echo "container tier passed; docker ps -a, network ls, volume ls, images, virsh list, run dirs and ps show nothing of the harness"
