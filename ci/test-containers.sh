#!/usr/bin/env bash
# The container tier: the management server and every host in Docker containers built at test time
# FROM scratch with a static csconform (nothing is pulled; Ryuk is off), on a user-defined network per
# run. Runs the driver's fault tests (partition, pause, stop/start, kill, rolling restart, the
# server's kill and start with its records kept, guest faults: go test ./drivers/container
# -containers), seed 004 and seed 001 under both profiles and ms-restart-keeps-records under fixed, all
# five at once (go test ./conformance -driver=container), and one explore case, then fails if docker
# ps -a, docker network ls, docker volume ls or docker images shows anything of the harness. Needs a
# Docker daemon; no libvirt (the domains are simulated, in a hypervisor container per host). About 5
# minutes on 2 cores (measured: 284 s; 199 s before ms-restart and the guest faults were added).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"
export TESTCONTAINERS_RYUK_DISABLED=true
export TESTCONTAINERS_HOST_OVERRIDE="${TESTCONTAINERS_HOST_OVERRIDE:-localhost}"

docker info >/dev/null 2>&1 || { echo "ci/test-containers.sh: no Docker daemon answers" >&2; exit 1; }

log=/tmp/csconform-containers.txt
start=$(date +%s)
set +e
go test -count=1 -timeout 20m -v -run TestFaults ./drivers/container -containers >"$log" 2>&1
rc1=$?
go test -count=1 -timeout 30m -parallel 5 -v -run TestContainerTier ./conformance -driver=container >>"$log" 2>&1
rc2=$?
# exploration on this driver: one random program under fixed, judged by the invariants
go run ./cmd/csconform explore --driver container --profile fixed --budget 1 --seed 3 --quiet >>"$log" 2>&1
rc3=$?
set -e
grep -E '^(=== RUN|\s*--- |PASS|FAIL|ok)|^---- |^   |container_test.go:[0-9]+: (partition|pause|stop|kill|rolling|after)|^explored |^found nothing|^FOUND' "$log" || true
echo "container tier wall time: $(( $(date +%s) - start )) s (log: $log)"
if grep -q -- '--- SKIP' "$log"; then
  echo "ci/test-containers.sh: container tier skipped, not tested:" >&2
  grep -A1 -- '--- SKIP' "$log" >&2
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
if [ -n "$left" ]; then
  echo "ci/test-containers.sh: harness resources left after the tier:$left" >&2
  exit 1
fi
[ "$rc1" = 0 ] && [ "$rc2" = 0 ] && [ "$rc3" = 0 ] || { echo "ci/test-containers.sh: tier failed (driver $rc1, conformance $rc2, explore $rc3; log: $log)" >&2; exit 1; }
echo "container tier passed; docker ps -a, network ls, volume ls and images show nothing of the harness"
