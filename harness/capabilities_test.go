package harness

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/csconform/csconform/impl"
	"github.com/csconform/csconform/model/invariant"
)

// The refusals a world makes at run time are its declaration's.
func TestCapabilitiesRefuseAtRunTime(t *testing.T) {
	c := &Cluster{w: &liveWorld{}, HostIDs: []string{"h1"}}
	assert.Equal(t, LiveCapabilities.Refusal(FaultCap("heartbeat-fail")), c.Heartbeat("h1", false))
}

// The in-process cluster's substrates declare the detectors their Judge runs: storage-leak where the
// substrate lists primary storage, the run-on-alone checks where time is virtual, the rest everywhere;
// every world lacking a detector says why.
func TestClusterWorldsDeclareTheirDetectors(t *testing.T) {
	for _, tc := range []struct {
		caps Capabilities
		w    substrate
	}{
		{SimCapabilities, &simWorld{}},
		{LiveCapabilities, &liveWorld{}},
		{LibvirtCapabilities, &libvirtWorld{}},
	} {
		t.Run(tc.caps.World, func(t *testing.T) {
			_, lists := tc.w.(storageLister)
			assert.Equal(t, lists, tc.caps.Runs(invariant.StorageLeak), "storage-leak")
			for _, d := range []string{invariant.StuckInTransition, invariant.LeftServerJob, invariant.UnexplainedStop} {
				assert.Equal(t, tc.caps.Can(VirtualTime), tc.caps.Runs(d), d)
			}
			cfg, err := impl.NewConfig(nil)
			require.NoError(t, err)
			_, linear := (&clusterRun{c: &Cluster{Config: cfg}}).LinearBounds()
			assert.Equal(t, linear, tc.caps.Runs(Linearizability))
			for _, d := range Detectors() {
				switch d {
				case invariant.StorageLeak, invariant.StuckInTransition, invariant.LeftServerJob, invariant.UnexplainedStop:
				default: // the snapshot's invariants and the history's detectors: Judge runs them on every substrate
					assert.True(t, tc.caps.Runs(d), d)
				}
			}
			for k, why := range tc.caps.Lacks {
				assert.NotEmpty(t, why, k)
			}
		})
	}
}

// OutsideChecks drops what the outside worlds cannot judge, the network-lock a snapshot's writes show.
func TestOutsideChecksDropOutsideLacks(t *testing.T) {
	var oc OutsideChecks
	v := invariant.Violation{Invariant: invariant.NetworkLock, Object: "network:1", Message: "m"}
	rec := NewRecorder(time.Now)
	for range 2 { // two looks confirm a violation
		assert.Empty(t, oc.addChecked(rec, []invariant.Violation{v}, func(string) []string { return nil }))
	}
	v.Invariant = invariant.VolumeInUse
	oc.addChecked(rec, []invariant.Violation{v}, func(string) []string { return nil })
	assert.Len(t, oc.addChecked(rec, []invariant.Violation{v}, func(string) []string { return nil }), 1)
}
