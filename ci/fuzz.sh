#!/usr/bin/env bash
# Runs every Go fuzz target in the module for a short time each (CSCONFORM_FUZZTIME, default 10s),
# one line of figures per target; fails when any target fails (its output and the failing input
# go test wrote under the package's testdata/fuzz are shown). Targets are found, not listed here:
# the packages whose Go files declare a func Fuzz... are asked `go test -list '^Fuzz'`, so a target
# added anywhere later runs too (the grep only spares building every package's tests to list them).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"

fuzztime="${CSCONFORM_FUZZTIME:-10s}"
# Minimizing a new interesting input counts no execs and runs past -fuzztime when it starts late: the
# run then ends in Go's own deadline race (golang/go#75804, fixed in Go 1.27: "context deadline
# exceeded" with no input written). One second bounds it; minimizing a crasher still happens.
minimizetime="${CSCONFORM_FUZZMINIMIZETIME:-1s}"
log="$(mktemp -d)"
trap 'rm -rf "$log"' EXIT

mapfile -t pkgs < <(grep -rlE --include='*_test.go' --exclude-dir=testdata --exclude-dir=.git '^func Fuzz' . | xargs -r -n1 dirname | sort -u)
targets=()
for dir in "${pkgs[@]}"; do
  pkg="$(go list "$dir")"
  # go test -list prints the matching names, then "ok <package> <time>"; a package that does not
  # build fails here
  list="$(go test -timeout 5m -list '^Fuzz' "$dir")"
  for name in $(grep -E '^Fuzz' <<<"$list" || true); do
    targets+=("$pkg $name")
  done
done
if [ "${#targets[@]}" = 0 ]; then
  echo "ci/fuzz.sh: no fuzz targets found" >&2
  exit 1
fi

start=$(date +%s)
failed=()
for i in "${!targets[@]}"; do
  read -r pkg name <<<"${targets[$i]}"
  out="$log/$i.txt"
  t0=$(date +%s.%N)
  dir="$(go list -f '{{.Dir}}' "$pkg")/testdata/fuzz/$name"
  before="$(ls "$dir" 2>/dev/null | sort || true)"
  fuzz() { go test -timeout 5m -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" -fuzzminimizetime "$minimizetime" "$pkg" >"$out" 2>&1; }
  if fuzz; then
    status=ok
  elif [ "$(ls "$dir" 2>/dev/null | sort || true)" = "$before" ] && grep -q '^    context deadline exceeded$' "$out" && ! grep -qE '^(panic:|    [a-z_]+_test\.go:[0-9]+:)' "$out"; then
    # Go's deadline race (above): nothing was found and no input was written. Run once more; a
    # second failure of any kind fails the target.
    echo "note: $name ended in Go's fuzz deadline race (golang/go#75804), no input written; running it again" >&2
    if fuzz; then status=ok; else status=FAIL; failed+=("$i"); fi
  else
    status=FAIL
    failed+=("$i")
  fi
  secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { print b - a }')
  # the last progress line: "fuzz: elapsed: 10s, execs: 12345 (1234/sec), new interesting: 3 (total: 40)"
  last="$(grep -E '^fuzz: elapsed:' "$out" | tail -n1 || true)"
  execs="$(sed -nE 's/.*execs: ([0-9]+).*/\1/p' <<<"$last")"
  new="$(sed -nE 's/.*new interesting: ([0-9]+).*/\1/p' <<<"$last")"
  total="$(sed -nE 's/.*\(total: ([0-9]+)\).*/\1/p' <<<"$last")"
  printf '%-4s %-50s %-24s execs %10s  new interesting %4s (corpus %4s)  %6.1f s\n' \
    "$status" "$pkg" "$name" "${execs:-?}" "${new:-?}" "${total:-?}" "$secs"
done
echo "fuzz: ${#targets[@]} target(s), $fuzztime each, $(( $(date +%s) - start )) s in all"

if [ "${#failed[@]}" -gt 0 ]; then
  for i in "${failed[@]}"; do
    echo "== ${targets[$i]} failed:" >&2
    tail -n 40 "$log/$i.txt" >&2
  done
  exit 1
fi
