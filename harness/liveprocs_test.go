package harness

import (
	"slices"
	"testing"

	"github.com/csconform/csconform/internal/tier"
	"github.com/csconform/csconform/model/invariant"
)

// In a real-time world a fault's task stops and starts the server and the agents while the checker's
// task, the clients' tasks and the server's threads read which of them run (Cluster.procMu). This
// runs the built-ins whose faults do so in the live world: a server restart, agent restarts and
// kills, an operator's host removal. Its finding is the race detector's: CI runs it under -race
// (ci/test.sh), where it reported the checker's read of msDown beside ServerStop's write, and the
// recorder's op table written by two clients' tasks at once, before both were guarded. The
// outcomes are TestSeedScenariosThroughTheAPI's to compare; here a run only has to end.
func TestLiveFaultTasksBesideTheChecker(t *testing.T) {
	tier.Need(t, tier.Realtime) // about 30 s of wall time, mostly waiting; meant for the race step
	want := map[string]string{  // the scenario and the fault it must have applied
		"ms-restart-keeps-records": "ms-restart",    // ServerStop, ServerStart
		"host-remove-with-vms":     "host-remove",   // RemoveHost, then AgentStop
		"seed-004-forced-destroy":  "agent-restart", // AgentStop, AgentStart, a forced destroy beside them
	}
	ran := 0
	for _, sc := range builtinScenarios(t) {
		fault, ok := want[sc.Name]
		if !ok {
			continue
		}
		ran++
		t.Run(sc.Name, func(t *testing.T) {
			t.Parallel()
			res, err := Run(Live, sc, RunOptions{Profile: "fixed", Seed: sc.Seed, Own: &LiveOptions{Speed: 20}})
			if err != nil {
				t.Fatal(err)
			}
			// a run that never applied its fault would leave the race detector nothing to see
			if !slices.ContainsFunc(res.cluster.Rec.Faults, func(f invariant.Fault) bool { return f.Kind == fault }) {
				t.Errorf("the run applied no %s fault: %v", fault, res.cluster.Rec.Faults)
			}
		})
	}
	if ran != len(want) {
		t.Fatalf("ran %d of the %d scenarios: is one renamed?", ran, len(want))
	}
}
