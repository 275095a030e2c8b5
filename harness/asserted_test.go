package harness

import (
	"slices"
	"strings"
	"testing"

	"github.com/csconform/csconform/model/history"
	"github.com/csconform/csconform/model/invariant"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A caller's forced stop of a VM whose host is disconnected marks the VM Stopped and frees its address
// while the domain runs on, under both profiles: CloudStack documents stopVirtualMachine forced=true so
// (apache/cloudstack#6798; VirtualMachineManagerImpl.advanceStop with cleanUpEvenIfUnableToStop, whose
// sendStop failure is ignored for a forced stop), and the D3 fix (the fork's shouldForceStopOnDestroy,
// bhouse-nexthop@017c41e8) covers vm.destroy.forcestop on destroy only. The checkers take the call as
// the operator's assertion; without it the same run is an ip-conflict, so the assertion
// is what keeps the fixed profile clean here, and nothing else.
func TestForcedStopIsTheOperatorsAssertion(t *testing.T) {
	sc := loadScenario(t, "../conformance/scenarios/forced-stop-disconnected-host.yaml")
	for _, p := range []string{"cloudstack-4.22", "fixed"} {
		t.Run(p, func(t *testing.T) {
			r, err := RunScenario(sc, p, nil, sc.Seed)
			require.NoError(t, err)
			assert.Empty(t, r.Violations)
			assert.Empty(t, r.NotLinearizable)
			said := slices.ContainsFunc(r.cluster.Rec.History().Slice(), func(e history.Event) bool {
				return e.Actor == "checker" && e.Kind == history.Log && strings.Contains(e.Detail, "still runs after forceStop web1")
			})
			assert.True(t, said, "the history says which domain the checkers leave to the operator")
			freed := slices.ContainsFunc(r.cluster.Rec.History().Slice(), func(e history.Event) bool { return e.Kind == history.IP && e.To == "free" })
			assert.True(t, freed, "the forced stop released the address")

			believeForcedStops = false
			defer func() { believeForcedStops = true }()
			r, err = RunScenario(sc, p, nil, sc.Seed)
			require.NoError(t, err)
			var got []string
			for _, v := range r.Violations {
				got = append(got, v.Invariant)
			}
			assert.Contains(t, got, invariant.IPConflict, "without the assertion the freed address in use is a conflict")
		})
	}
}
