package impl_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/csconform/csconform/impl"
	"github.com/csconform/csconform/model/network"
	"github.com/csconform/csconform/model/vm"
)

// The network GC's last look and its DestroyNetwork write are not atomic against a start:
// NetworkOrchestrator.implementNetwork (apache/cloudstack@0035c6139ecb78d20e3831421874ef4367734606,
// engine/orchestration/src/main/java/org/apache/cloudstack/engine/orchestration/NetworkOrchestrator.java)
// returns an Implemented network before taking its lock ("Acquire lock only when network needs to be
// implemented"), and VirtualMachineManagerImpl.orchestrateStart (apache/cloudstack@3156c4ba,
// engine/orchestration/src/main/java/com/cloud/vm/VirtualMachineManagerImpl.java) moves the VM to
// Starting (changeToStartState) before prepare → implementNetwork → prepareNic. A start whose VM went
// Starting after the GC's look under the network's lock, and which read the network before the GC's
// Implemented → Shutdown, reserved its NIC on a network the GC then shut down (explore finding G,
// harness/testdata/gc-last-look-vs-start.yaml). The C4 fix looks again after the write: the start is
// seen and the network is put back to Implemented; with no start in between it is shut down.
func TestNetworkGCLooksAgainAfterItsWrite(t *testing.T) {
	for _, c := range []struct {
		name     string
		start    bool
		shutdown bool
		state    network.State
	}{
		{"a start between the look and the write", true, false, network.Implemented},
		{"no start", false, true, network.Allocated},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, db, log, srv, _, _, n := routerWorld(t, impl.Switches{})
			v2 := srv.AllocateVirtualMachine("web2", []int64{n.ID})
			between := func() {
				if c.start {
					require.True(t, db.UpdateVMState("Work-Job-Executor-9", db.VM(v2.ID), vm.StartRequested, vm.Starting, ""))
				}
			}
			var ok bool
			srv.GCShutdownForTest("Network-Scavenger", n.ID, between, &ok)
			require.NoError(t, s.RunUntil(s.Now().Add(2*time.Minute), func() bool {
				cur := db.Network(n.ID)
				return log.has("Network-Scavenger", "in use again") || cur.State == network.Allocated
			}))
			require.NoError(t, s.RunFor(10*time.Second)) // the shutdown returns
			require.Equal(t, c.shutdown, ok)
			require.Equal(t, c.state, db.Network(n.ID).State)
			require.Equal(t, c.start, log.has("Network-Scavenger", "Network 1 is in use again: not shutting it down"))
			if c.start {
				require.Equal(t, vm.Running, db.VM(n.RouterID).State, "the router is left running for the start")
			}
		})
	}
}
