package harness

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/csconform/csconform/internal/tier"
)

// outcome is what the API path must reproduce: each case's result and each VM's final record.
func outcome(r *Result) string {
	var b strings.Builder
	for _, c := range r.Cases {
		fmt.Fprintf(&b, "case %s (%s %s): %s, final %s\n", c.Case, c.Op, c.VM, c.Result, c.FinalState)
	}
	var names []string
	for n := range r.cluster.vmIDs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		st, _ := r.cluster.VMState(n)
		fmt.Fprintf(&b, "vm %s: %s\n", n, st)
	}
	return b.String()
}

func violations(r *Result) string {
	seen := map[string]bool{}
	var out []string
	for _, v := range r.Violations {
		if !seen[v.Invariant] {
			seen[v.Invariant] = true
			out = append(out, v.Invariant)
		}
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

// The built-in scenarios in the live world (real TCP, fake hosts, world time 20× the wall clock),
// once with the client operations called directly and once through CloudStack's API with
// cloudstack-go: both give the same case results and final VM states.
//
// Every scenario takes 4 to 8 minutes of wall time in all, so the laptop tests run the three seed
// defects' scenarios (about 25 s) and the realtime tier (ci/test.sh) runs them all but those
// notInLiveComparison names.
func TestSeedScenariosThroughTheAPI(t *testing.T) {
	tier.Need(t, tier.Long) // runs scenarios twice each in real time
	all := tier.Enabled(tier.Realtime)
	const profile = "cloudstack-4.22"
	ran := 0
	t.Cleanup(func() {
		if !all && ran != len(laptopScenarios) {
			t.Errorf("ran %d of the %d laptop scenarios: is one renamed?", ran, len(laptopScenarios))
		}
	})
	for _, sc := range builtinScenarios(t) {
		if !all && !laptopScenarios[sc.Name] {
			continue
		}
		ran++
		if err := LiveCapabilities.Check(sc); err != nil {
			// several servers, a host's power or heartbeat, a simulator strategy (an explore
			// counterexample: real time takes its own turns, differently in each run)
			t.Logf("not in the live world: %v", err)
			continue
		}
		if why, ok := notInLiveComparison[sc.Name]; ok {
			t.Logf("not compared in the live world: %s: %s", sc.Name, why)
			continue
		}
		if strings.HasPrefix(sc.Name, "load-") {
			// hundreds of concurrent operations are a load test of the simulator's reference; in real
			// time on one machine they measure the machine (most deploys time out, differently each run)
			continue
		}
		t.Run(sc.Name, func(t *testing.T) {
			t.Parallel()
			var wg sync.WaitGroup
			res := map[bool]*Result{}
			errs := map[bool]error{}
			var mu sync.Mutex
			for _, api := range []bool{false, true} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					start := time.Now()
					r, err := Run(Live, sc, RunOptions{Profile: profile, Seed: sc.Seed, Own: &LiveOptions{Speed: 20, API: api}})
					mu.Lock()
					res[api], errs[api] = r, err
					mu.Unlock()
					t.Logf("api=%v: %s wall", api, time.Since(start).Round(time.Millisecond))
				}()
			}
			wg.Wait()
			for api, err := range errs {
				if err != nil {
					t.Fatalf("api=%v: %v", api, err)
				}
			}
			d, a := res[false], res[true]
			t.Logf("direct: violations [%s] mismatches %v\n%s", violations(d), d.Mismatches, outcome(d))
			t.Logf("api:    violations [%s] mismatches %v\n%s", violations(a), a.Mismatches, outcome(a))
			compareOutcomes(t, d, a, sc.Expect[profile])
		})
	}
}

// A server restart kills its threads in the live world as it does in the simulator and in CloudStack:
// the scenarios that rely on a network left Implementing by a killed implementer meet their
// expectations there too, under both profiles. The comparison above cannot see it (the direct and API
// runs were both wrong when the dying thread's deferred cleanup freed the network).
func TestLiveRestartLeavesNetworkImplementing(t *testing.T) {
	tier.Need(t, tier.Realtime) // four runs of 7 to 8 minutes of world time, about 25 s of wall time
	for _, sc := range builtinScenarios(t) {
		if sc.Name != "restart-leaves-network-implementing" && sc.Name != "delete-network-left-implementing" {
			continue
		}
		for _, profile := range []string{"cloudstack-4.22", "fixed"} {
			t.Run(sc.Name+"/"+profile, func(t *testing.T) {
				t.Parallel()
				r, err := Run(Live, sc, RunOptions{Profile: profile, Seed: sc.Seed, Own: &LiveOptions{Speed: 20}})
				if err != nil {
					t.Fatal(err)
				}
				if len(r.Mismatches) > 0 {
					t.Errorf("expectations not met in the live world: %v\n%s", r.Mismatches, outcome(r))
				}
			})
		}
	}
}

// notInLiveComparison are built-ins the live world runs but this comparison leaves out, with why.
var notInLiveComparison = map[string]string{
	"retry-waits-on-timed-out-start": "since its API jobs wait out C7's hour (OutcomeImpl.get() has no timeout, issue 34 item 5) " +
		"it costs five minutes of real time a run, and its end after the hour is a race of the next report with D2b " +
		"(web1 Running or Stopped; its expectation leaves it open); the simulator judges it at seeds 1-10",
	"host-remove-stale-vm-list": "H4 needs the delete to list web1 while the destroy has it Stopping, and the destroy's stop to " +
		"fail before web1's turn: a window of milliseconds that real time takes its own way in each run (in its first run web1 " +
		"ended Stopped directly and Running through the API); the simulator judges it at seeds 1-10",
}

// laptopScenarios are the ones TestSeedScenariosThroughTheAPI runs outside the realtime tier: one of
// each seed defect.
var laptopScenarios = map[string]bool{
	"seed-000-boot-group":         true, // D1
	"seed-001-stale-power-report": true, // D2
	"seed-004-forced-destroy":     true, // D3
}

// compareOutcomes fails on any difference in case results or final VM states, except where the
// orphaned-network cleanup (a 10 s GC tick, D1) caught the operation in either run: whether a tick
// also lands inside the ~2 s retry depends on the tick's phase, which in real time is not set by the
// seed, and real latencies (an HTTP round trip) move it by Speed× in world time. Those are logged.
//
// A case the scenario itself expects "any" of (its outcome depends on the interleaving, e.g. seed
// 001's deploy) may differ as well, and so may the end of a VM whose expected state is alternatives
// (host-remove-with-vms' web1: Running|Stopped).
func compareOutcomes(t *testing.T, d, a *Result, e Expect) {
	t.Helper()
	if len(d.Cases) != len(a.Cases) {
		t.Fatalf("%d cases direct, %d through the API", len(d.Cases), len(a.Cases))
	}
	phase := map[string]bool{} // VMs whose outcome the GC's phase decided
	for i := range d.Cases {
		dc, ac := d.Cases[i], a.Cases[i]
		if dc.Result == ac.Result && dc.FinalState == ac.FinalState {
			continue
		}
		if dc.Result == ac.Result && e.Open(dc.VM) {
			t.Logf("case %s (%s): final %s direct, %s through the API — the scenario's expectation leaves %s open (%s)",
				dc.Case, dc.Op, dc.FinalState, ac.FinalState, dc.VM, e.States[dc.VM])
			continue
		}
		if e.Cases[dc.Case] == "any" {
			phase[dc.VM] = true
			t.Logf("case %s (%s): %s direct, %s through the API — the scenario expects any outcome", dc.Case, dc.Op, dc.Result, ac.Result)
			continue
		}
		// The cleanup caught one run or both: where its tick fell decided (in one run it may have
		// fallen between the implementations, e.g. seed-000-stuck-network's later deploy).
		if strings.HasPrefix(dc.Cleanup, "orphaned") || strings.HasPrefix(ac.Cleanup, "orphaned") {
			phase[dc.VM] = true
			t.Logf("case %s (%s): %s direct, %s through the API — the cleanup's phase decided (direct: %s; api: %s)",
				dc.Case, dc.Op, dc.Result, ac.Result, dc.Cleanup, ac.Cleanup)
			continue
		}
		t.Errorf("case %s (%s %s): direct %s/%s, through the API %s/%s", dc.Case, dc.Op, dc.VM, dc.Result, dc.FinalState, ac.Result, ac.FinalState)
	}
	for n := range d.cluster.vmIDs {
		if phase[n] || e.Open(n) {
			continue // the expectation's alternatives are the interleaving's to pick
		}
		ds, _ := d.cluster.VMState(n)
		as, ok := a.cluster.VMState(n)
		if !ok || ds != as {
			t.Errorf("VM %s: direct %s, through the API %s", n, ds, as)
		}
	}
}
