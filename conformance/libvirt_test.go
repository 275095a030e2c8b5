package conformance

// The libvirt tier: go test ./conformance -driver=libvirt -timeout 40m runs the seed scenarios on
// real QEMU domains (libvirtd, the guest from ci/build-guest.sh), concurrently (give -parallel 16:
// the default runs only GOMAXPROCS at once, and the runs mostly wait on real time), under every profile
// they state an outcome for, and requires the same outcome as on the simulator. See
// ci/test-libvirt-conformance.sh.

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/csconform/csconform/drivers/libvirt"
	"github.com/csconform/csconform/harness"
	"github.com/csconform/csconform/impl"
)

var driver = flag.String("driver", "sim", "where the libvirt tier runs: sim (skip it) or libvirt")

// libvirtSeeds are the scenarios of the libvirt tier: the three seed reports (D1, D2, D3).
var libvirtSeeds = []string{"seed-000-ab", "seed-000-retry-not-safe", "seed-000-stuck-network", "seed-001-stale-power-report", "seed-004-forced-destroy"}

func TestLibvirtTier(t *testing.T) {
	if *driver != "libvirt" {
		t.Skip("the libvirt tier runs with -driver=libvirt (ci/test-libvirt-conformance.sh)")
	}
	for _, f := range []string{"vmlinuz", "initramfs.cpio.gz"} {
		if p := filepath.Join(libvirt.DefaultGuestDir(), f); !exists(p) {
			t.Skipf("guest not built (%s missing): run ci/build-guest.sh", p)
		}
	}
	if _, err := libvirt.Cleanup(libvirt.DefaultURI, t.TempDir(), "probe-only-no-such-run"); err != nil {
		t.Skipf("libvirtd unreachable: %v (run ci/setup-libvirt.sh)", err)
	}
	// The default base directory, so that csconform cleanup finds what a killed tier left.
	base := libvirt.DefaultBaseDir()
	var mu sync.Mutex
	var runs []string
	var table strings.Builder
	t.Cleanup(func() {
		// Each run removes what it made; whatever a crash of a run left is removed here, and then no
		// labelled domain of this test's runs may remain.
		for _, run := range runs {
			if removed, err := libvirt.Cleanup(libvirt.DefaultURI, base, run); err != nil {
				t.Errorf("cleanup of run %s: %v", run, err)
			} else if len(removed) > 0 {
				t.Errorf("run %s left %v", run, removed)
			}
		}
		fmt.Fprint(os.Stderr, table.String())
	})
	start := time.Now()
	for _, name := range libvirtSeeds {
		sc, err := Find(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, profile := range impl.ProfileNames() {
			if _, ok := sc.Expect[profile]; !ok {
				continue
			}
			t.Run(name+"/"+profile, func(t *testing.T) {
				t.Parallel()
				run := harness.NewRunID()
				mu.Lock()
				runs = append(runs, run)
				mu.Unlock()
				t0 := time.Now()
				r, err := harness.RunScenarioLibvirt(sc, profile, nil, sc.Seed, harness.LibvirtOptions{Run: run, BaseDir: base, Log: testLog{t}})
				if err != nil {
					t.Fatal(err)
				}
				var b strings.Builder
				r.WriteText(&b, r.Started)
				mu.Lock()
				fmt.Fprintf(&table, "---- %s under %s on libvirt: %s wall (finished %s after the tier started)\n%s",
					name, profile, time.Since(t0).Round(time.Second), time.Since(start).Round(time.Second), b.String())
				mu.Unlock()
				if !r.Expected {
					t.Fatal("expectations were not checked")
				}
				for _, m := range r.Mismatches {
					t.Error(m)
				}
				if profile == "fixed" && len(r.Violations) > 0 {
					t.Errorf("fixed profile violates %s: %s", r.Violations[0].Invariant, r.Violations[0].Message)
				}
			})
		}
	}
}

type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
