#!/usr/bin/env bash
# Sets up what the tests need and runs every test tier. Run as root on a fresh Debian machine.
# Tiers today: unit and property tests (rapid explorations included), the conformance suite on the
# simulator driver, every fuzz target for a short time (CSCONFORM_FUZZTIME), go vet and gofmt, smoke
# runs of repro, explore and check, logcheck (parse tests, round trip, benchmark figures), the
# mutation score, and the machine's tiers: libvirt and containers.
#
# CSCONFORM_TIERS says which of the machine's tiers run (default all; e.g. CSCONFORM_TIERS=libvirt on
# a machine without Docker, CSCONFORM_TIERS=none for neither): the one gate, which the tier scripts
# also set for the go tests they run (internal/tier).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"
tiers=",${CSCONFORM_TIERS:-all},"
unset CSCONFORM_TIERS # the plain go test runs below leave the machine's tiers out
wants() { [[ "$tiers" == *",all,"* || "$tiers" == *",$1,"* ]]; }

if ! command -v go >/dev/null 2>&1; then
  echo "ci/test.sh: Go 1.26 or newer is needed (https://go.dev/dl; Debian's golang package is too old)" >&2
  exit 2
fi
need="1.26"
have="$(go env GOVERSION | sed 's/^go//')"
if [ "$(printf '%s\n%s\n' "$need" "$have" | sort -V | head -n1)" != "$need" ]; then
  echo "ci/test.sh: Go $have is older than $need" >&2
  exit 2
fi

# inject resolves its targets with the real ssh -G (faults/inject: TestSSHResolveRefusesAnAliasOutside)
if ! command -v ssh >/dev/null 2>&1; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends openssh-client
fi

echo "== go vet"
go vet ./...
echo "== gofmt"
bad="$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))"
if [ -n "$bad" ]; then echo "gofmt would change: $bad" >&2; exit 1; fi

# Every go test here has a -timeout well over what it needs (idle, on 2 cores) and says so: a test that
# creeps shows in the slowest-ten figures long before it reaches its deadline.
echo "== unit, property and conformance tests (the laptop tests, go test ./...; simulator driver): each package under 90 s idle, all under 3 min"
gotest_json() { # go test -json ARGS, shown as go test shows it, with the run's wall time and its slowest ten
  local log rc t0
  log="$(mktemp)"
  t0=$(date +%s)
  set +e
  go test -json "$@" >"$log" 2>&1
  rc=$?
  go run ./internal/cmd/testtimes -n 10 <"$log"
  set -e
  echo "wall time: $(( $(date +%s) - t0 )) s (go test $*)"
  rm -f "$log"
  return "$rc"
}
gotest_json -count=1 -timeout 15m ./...

echo "== every built-in scenario at seeds 1-10 under each profile (go test ./... runs seeds 1-3): about 8 s idle, 15 s on a loaded machine"
gotest_json -count=1 -timeout 5m -run '^TestBuiltinScenariosMeetTheirExpectationsAtEverySeed$' ./conformance -csconform.seeds=10

echo "== realtime tier: every built-in scenario in the live world, directly and through the API, the restart-left-Implementing ones against their expectations, and repro --api against a server process (real time, mostly waiting)"
# The laptop tests above ran the seed scenarios this way; this runs them all, 8 at a time (about 3 min).
CSCONFORM_TIERS=realtime gotest_json -count=1 -timeout 25m -parallel 8 -run '^(TestSeedScenariosThroughTheAPI|TestLiveRestartLeavesNetworkImplementing|TestReproExternalAgainstServer)$' ./harness ./cmd/csconform

echo "== audit on MariaDB (a real server: passwords, privileges, READ ONLY; ci/setup-mariadb.sh)"
t0=$(date +%s)
# A datadir of this run's own (another run on the machine keeps its own server) and a free port.
CSCONFORM_MARIADB_DIR="$(mktemp -d /var/tmp/csconform-mariadb.XXXXXX)"
export CSCONFORM_MARIADB_DIR
trap 'ci/setup-mariadb.sh stop; rm -rf "$CSCONFORM_MARIADB_DIR"' EXIT
# not eval "$(...)": that hides the script's failure, and the tests then only skip
mariadb_env="$(ci/setup-mariadb.sh)"
eval "$mariadb_env"
out="$(go test -count=1 -timeout 10m -v -run 'TestMariaDB' ./harness/audit 2>&1)" || { echo "$out"; exit 1; }
echo "$out" | grep -E '^(--- |ok)'
ci/setup-mariadb.sh stop
rm -rf "$CSCONFORM_MARIADB_DIR"
trap - EXIT
if echo "$out" | grep -q -- '--- SKIP'; then echo "the MariaDB tests were skipped" >&2; exit 1; fi
unset CSCONFORM_MARIADB_DSN CSCONFORM_MARIADB_NOSELECT_DSN CSCONFORM_MARIADB_ADMIN_DSN
echo "audit on MariaDB: $(( $(date +%s) - t0 )) s (setup, tests and stop)"

echo "== fuzz: every fuzz target in the module, ${CSCONFORM_FUZZTIME:-5s} each (ci/fuzz.sh)"
CSCONFORM_FUZZTIME="${CSCONFORM_FUZZTIME:-5s}" ci/fuzz.sh

echo "== race detector on the code that runs with real goroutines (real-time Env, TCP, server and agent)"
go test -race -count=1 -timeout 20m ./drivers/live ./impl
# the harness in a real-time world: faults' tasks beside the checker, the clients and the server's threads
CSCONFORM_TIERS=realtime go test -race -count=1 -timeout 10m -run '^TestLiveFaultTasksBesideTheChecker$' ./harness

echo "== CLI smoke: the seed scenarios reproduce under cloudstack-4.22 and pass under fixed"
# Built with coverage of impl/: the smoke runs below say which of the reference's statements
# repro all and the explorations reached (a figure, printed after the exploration smoke).
covdir="$(mktemp -d)"
export GOCOVERDIR="$covdir"
go build -cover -coverpkg=github.com/csconform/csconform/impl/...,github.com/csconform/csconform/cmd/csconform -o /tmp/csconform-ci ./cmd/csconform
set +e
/tmp/csconform-ci repro all --profile cloudstack-4.22 >/tmp/csconform-422.txt 2>&1; rc422=$?
/tmp/csconform-ci repro all --profile fixed >/tmp/csconform-fixed.txt 2>&1; rcfixed=$?
set -e
tail -n 14 /tmp/csconform-422.txt
tail -n 1 /tmp/csconform-fixed.txt
rm -f /tmp/csconform-ci
if [ "$rc422" != 1 ] || [ "$rcfixed" != 0 ]; then
  echo "csconform repro: exit $rc422 under cloudstack-4.22 (want 1), $rcfixed under fixed (want 0)" >&2
  exit 1
fi
echo "== exploration smoke: fixed finds nothing in 2000 cases; the seed defects are found, shrunk, reported and re-checked"
go build -cover -coverpkg=github.com/csconform/csconform/impl/...,github.com/csconform/csconform/cmd/csconform -o /tmp/csconform-ci ./cmd/csconform
out=/tmp/csconform-explore-ci
rm -rf "$out"
set +e
/tmp/csconform-ci explore --profile fixed --budget 2000 --seed 1 --quiet >/tmp/csconform-explore-fixed.txt 2>&1; rcf=$?
/tmp/csconform-ci explore --profile cloudstack-4.22 --budget 100 --seed 1 --quiet --out "$out" >/tmp/csconform-explore-422.txt 2>&1; rc4=$?
/tmp/csconform-ci check "$out/history.jsonl" >/dev/null 2>&1; rcc=$?
set -e
# the count, coverage and the situations the detectors need (how many cases reached each)
sed -n '1,/^found nothing/p' /tmp/csconform-explore-fixed.txt | head -n 40
head -n 12 /tmp/csconform-explore-422.txt
rm -f /tmp/csconform-ci
if [ "$rcf" != 0 ] || [ "$rc4" != 1 ] || [ "$rcc" != 1 ] || [ ! -s "$out/junit.xml" ]; then
  echo "csconform explore: exit $rcf under fixed (want 0), $rc4 under cloudstack-4.22 (want 1), check exit $rcc (want 1)" >&2
  cat /tmp/csconform-explore-fixed.txt >&2
  exit 1
fi
unset GOCOVERDIR
echo "statements of impl/ reached by repro all (both profiles) and these explorations (go build -cover):"
go tool covdata percent -i="$covdir" -pkg=github.com/csconform/csconform/impl | sed 's/^/  /'
rm -rf "$covdir"

echo "== logcheck: the round trip (reference logs vs in-process detectors) and the benchmark figures"
# (the parse and bad-input tests ran with the unit tests above; this prints the matrix and the figures)
LOGCHECK_CASES=200 go test -count=1 -timeout 10m -v ./logcheck -run 'TestRoundTrip' | grep -v '^=== \|^    \|^        '
# figures printed, never asserted against a time (the machine is shared)
LOGCHECK_BENCH_MB=64 go test -count=1 -timeout 10m ./logcheck -run '^$' -bench 'BenchmarkLogcheck' -benchtime 1x | grep '^Benchmark'
# the real excerpts of testdata/corpus: the unknown-entry rate (asserted <= 10 % by the test itself)
go test -count=1 -timeout 5m -v ./logcheck -run '^TestCorpus$' | grep 'corpus:'

# The mutation score runs beside the libvirt tier's package install and guest build (mostly
# downloads and unpacking on a fresh machine), never beside a booting guest.
echo "== mutation score (a figure, not an assertion): the catalogue of impl/mutants.go against repro all under fixed and explore --budget 300, seed 1; then mechanical mutants nobody picked, a sample drawn from the commit"
go build -tags mutants -o /tmp/csconform-mutants ./cmd/csconform
# the sample's draw is the commit's: each submission measures other mutants, and the run replays
# with the seed it prints
sample_seed=$(( 16#$(git rev-parse --short=12 HEAD 2>/dev/null || echo 1) ))
( /tmp/csconform-mutants mutants run --budget 300 --seeds 1 &&
  echo && /tmp/csconform-mutants mutants sample 3 --seed "$sample_seed" --budget 300 --seeds 1 ) >/tmp/csconform-mutants.txt 2>&1 &
mutants=$!
finish_mutants() {
  local rc=0
  wait "$mutants" || rc=$?
  cat /tmp/csconform-mutants.txt
  rm -f /tmp/csconform-mutants
  [ "$rc" = 0 ] || { echo "ci/test.sh: csconform mutants run or sample failed" >&2; exit 1; }
}

echo "== libvirt tier: libvirt/QEMU from Debian, the guest built, virtlogd and libvirtd started; the driver on real domains, then the seed scenarios on them (ci/test-libvirt.sh, ci/test-libvirt-conformance.sh)"
if ! wants libvirt; then
  finish_mutants
  echo "libvirt tier left out (CSCONFORM_TIERS=${tiers//,/ })"
else
  ci/setup-libvirt.sh
  ci/build-guest.sh
  echo "== mutation score, as measured beside the set-up:"
  finish_mutants
  ci/test-libvirt.sh
  ci/test-libvirt-conformance.sh
fi

echo "== container tier (server and hosts in Docker containers; ci/test-containers.sh)"
if ! wants containers; then
  echo "container tier left out (CSCONFORM_TIERS=${tiers//,/ })"
elif ! docker info >/dev/null 2>&1; then
  echo "ci/test.sh: no Docker daemon answers, so the container tier cannot run (CSCONFORM_TIERS=libvirt leaves it out)" >&2
  exit 1
else
  ci/test-containers.sh
fi

echo "all tiers passed"
