package harness

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/csconform/csconform/model/history"
	"github.com/csconform/csconform/model/invariant"
)

// Finding G of explore --profile fixed --scheduler pct:8 --seed 9 (replay: --seed 14091810369211861443
// --budget 1): vm2's start reads net2 Implemented after the network GC's last look under net2's lock
// and before its Implemented -> Shutdown, and runs on the network the GC shuts down. The Java has the
// window: NetworkOrchestrator.implementNetwork (apache/cloudstack@0035c6139ecb78d20e3831421874ef4367734606,
// engine/orchestration/src/main/java/org/apache/cloudstack/engine/orchestration/NetworkOrchestrator.java)
// returns an Implemented network before acquireInLockTable, and NetworkGarbageCollector.reallyRun calls
// shutdownNetwork with nothing asked again (C4). Under cloudstack-4.22 the program shows C4's outage; the
// fix looks again after its write and leaves net2 Implemented (TestNetworkGCLooksAgainAfterItsWrite in
// impl has the protocol on its own).
func TestGCLastLookVsStart(t *testing.T) {
	sc := loadScenario(t, "testdata/gc-last-look-vs-start.yaml")
	r, err := RunScenario(sc, "cloudstack-4.22", nil, sc.Seed)
	require.NoError(t, err)
	var got []string
	for _, v := range r.Violations {
		got = append(got, v.Invariant)
	}
	assert.Contains(t, got, invariant.NetworkOutage, "C4: the GC shuts net2 down under vm2")

	runFixedBothModes(t, "testdata/gc-last-look-vs-start.yaml", func(t *testing.T, r *Result) {
		assert.Empty(t, r.Violations)
		assert.Empty(t, r.NotLinearizable)
		h := r.cluster.Rec.History().Slice()
		putBack := slices.ContainsFunc(h, func(e history.Event) bool {
			return e.Kind == history.State && e.Object == "network:2" && e.From == "Shutdown" && e.To == "Implemented" && e.Actor == "Network-Scavenger"
		})
		assert.True(t, putBack, "the GC wrote Shutdown after vm2's start read net2, and put Implemented back")
		assert.True(t, serverSaid(r, "Network 2 is in use again: not shutting it down"))
	})
}
