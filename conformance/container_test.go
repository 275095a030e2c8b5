package conformance

// The container tier: CSCONFORM_TIERS=containers go test ./conformance runs seed 004 (forced destroy during an
// agent restart, D3), seed 001 (stale power report, D2) and ms-restart-keeps-records (the server's
// container killed and started again on its database's state file) with the management server and
// every host in Docker containers (drivers/container), under both profiles (ms-restart-keeps-records
// under fixed only), and requires the same outcome as on the simulator. Seed 004 runs on real libvirt
// domains, driven by the agent containers through libvirtd's mounted socket, where libvirt is usable
// (else on simulated ones, and the test says so); the others on simulated domains (a hypervisor
// container per host), which keeps the tier's time down. Each run prints what the server saw of every
// fault (host states from listHosts over time) and which domains it had. See ci/test-containers.sh
// and, for the time scaling, the container world's Scaling (harness/world/container).

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/csconform/csconform/drivers/container"
	"github.com/csconform/csconform/harness"
	containerworld "github.com/csconform/csconform/harness/world/container"
	"github.com/csconform/csconform/impl"
	"github.com/csconform/csconform/internal/tier"
	"github.com/csconform/csconform/model/invariant"
)

var containerSeeds = []string{"seed-004-forced-destroy", "seed-001-stale-power-report", "ms-restart-keeps-records"}

// containerProfile limits a scenario to one profile in the tier: ms-restart-keeps-records involves no
// defect, so one run shows the records surviving the server container's restart (and saves a run's
// minute and a half).
var containerProfile = map[string]string{"ms-restart-keeps-records": "fixed"}

// containerDomains is where each seed's domains run in the tier.
var containerDomains = map[string]string{
	"seed-004-forced-destroy":     container.DomainsAuto,
	"seed-001-stale-power-report": container.DomainsSimulated,
}

func TestContainerTier(t *testing.T) {
	tier.Need(t, tier.Containers)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	t.Cleanup(stop)
	if err := container.Available(ctx); err != nil {
		t.Skipf("Docker unreachable: %v", err)
	}
	var mu sync.Mutex
	var runs []string
	var table strings.Builder
	t.Cleanup(func() {
		// Each run removes what it made; whatever an interrupted run left is removed here, and then
		// nothing labelled with this test's runs may remain.
		for _, run := range runs {
			if removed, err := container.Cleanup(context.Background(), run); err != nil {
				t.Errorf("cleanup of run %s: %v", run, err)
			} else if len(removed) > 0 {
				t.Errorf("run %s left %v", run, removed)
			}
		}
		fmt.Fprint(os.Stderr, table.String())
	})
	if err := container.LibvirtUsable(""); err != nil {
		t.Logf("libvirt is not usable here (%v): every run has simulated domains", err)
	}
	start := time.Now()
	for _, name := range containerSeeds {
		sc, err := Find(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, profile := range impl.ProfileNames() {
			if _, ok := sc.Expect[profile]; !ok {
				continue
			}
			if only, ok := containerProfile[name]; ok && only != profile {
				continue
			}
			t.Run(name+"/"+profile, func(t *testing.T) {
				t.Parallel()
				run := harness.NewRunID()
				mu.Lock()
				runs = append(runs, run)
				mu.Unlock()
				t0 := time.Now()
				r, err := harness.Run(containerworld.Def, sc, harness.RunOptions{Profile: profile, Seed: sc.Seed,
					RunID: run, Ctx: ctx, Log: testLog{t}, Domains: containerDomains[name]})
				if err != nil {
					t.Fatal(err)
				}
				var b strings.Builder
				r.WriteText(&b, r.Started)
				mu.Lock()
				fmt.Fprintf(&table, "---- %s under %s in containers: %s wall (finished %s after the tier started)\n%s",
					name, profile, time.Since(t0).Round(time.Second), time.Since(start).Round(time.Second), b.String())
				mu.Unlock()
				if !r.Expected {
					t.Fatal("expectations were not checked")
				}
				for _, m := range r.Mismatches {
					t.Error(m)
				}
				switch profile {
				case "fixed":
					for _, v := range r.Violations {
						t.Errorf("fixed profile violates %s: %s", v.Invariant, v.Message)
					}
				case "cloudstack-4.22":
					if name == "seed-004-forced-destroy" {
						// The done criterion: a running domain with no (live) record, and its IP handed
						// to the new VM — and the report says so.
						var orphan, conflict bool
						for _, v := range r.Violations {
							orphan = orphan || v.Invariant == invariant.OrphanDomain
							conflict = conflict || v.Invariant == invariant.IPConflict && strings.Contains(v.Message, "2 running domains")
						}
						noRecord := strings.Contains(b.String(), "record REMOVED (expunged): no record")
						if !orphan || !conflict || !noRecord || !strings.Contains(b.String(), "VIOLATION orphan-domain") {
							t.Errorf("want an orphaned running domain whose record is removed and an IP conflict; got %v", r.Violations)
						}
					}
				}
			})
		}
	}
}
