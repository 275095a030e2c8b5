// Package tier is the one gate of the slow test tiers. A test that needs real QEMU domains, a Docker
// daemon or a long time says so with Need, and runs only where its tier is asked for:
// CSCONFORM_TIERS=libvirt,containers (or all) for the machine's tiers, which CI's scripts set
// (ci/test-libvirt.sh, ci/test-containers.sh, ci/test-libvirt-conformance.sh), and realtime for the
// real-time runs of every built-in scenario (minutes; ci/test.sh); long tests run unless go test
// -short. A plain go test ./... runs everything but the machine's tiers and realtime, in at most three
// minutes on two cores.
package tier

import (
	"flag"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Tier is a set of tests with what they need of the machine.
type Tier string

const (
	// Libvirt: real QEMU domains on libvirtd (ci/setup-libvirt.sh and ci/build-guest.sh first).
	Libvirt Tier = "libvirt"
	// Containers: a Docker daemon, images built FROM scratch.
	Containers Tier = "containers"
	// Long: seconds a test, at most about a minute (real time, the live world over TCP; many
	// simulated cases); off under go test -short.
	Long Tier = "long"
	// Realtime: every built-in scenario in real time (the live world), minutes of mostly waiting;
	// too long for the laptop tests, so asked for like a machine's tier (ci/test.sh does).
	Realtime Tier = "realtime"
)

// Env is the variable that asks for the machine's tiers: a comma-separated list, or "all".
const Env = "CSCONFORM_TIERS"

// Enabled says whether a tier runs in this test process.
func Enabled(t Tier) bool {
	if t == Long {
		return !testing.Short()
	}
	asked := strings.Split(os.Getenv(Env), ",")
	return slices.Contains(asked, "all") || slices.Contains(asked, string(t))
}

// Need skips the test unless every tier it names runs here, saying how to run it.
func Need(t testing.TB, tiers ...Tier) {
	t.Helper()
	for _, tr := range tiers {
		if Enabled(tr) {
			continue
		}
		if tr == Long {
			t.Skip("a long test: left out by go test -short")
		}
		t.Skipf("the %s tier: run with %s=%s (%s sets it)", tr, Env, tr, map[Tier]string{Libvirt: "ci/test-libvirt.sh", Containers: "ci/test-containers.sh", Realtime: "ci/test.sh"}[tr])
	}
}

// MostlyWaiting is for a package's TestMain whose parallel tests mostly wait on a real-time world
// (a live world at 20× the wall clock, a server process): they run n at once rather than
// GOMAXPROCS at once (two on CI's machine, which would queue them one behind the other while the
// CPU idles), unless go test -parallel says otherwise.
func MostlyWaiting(n int) {
	if !flag.Parsed() {
		flag.Parse()
	}
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if p := flag.Lookup("test.parallel"); p != nil && !given {
		if cur, err := strconv.Atoi(p.Value.String()); err == nil && cur < n {
			_ = p.Value.Set(strconv.Itoa(n))
		}
	}
}
