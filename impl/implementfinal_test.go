package impl_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/csconform/csconform/drivers/sim"
	"github.com/csconform/csconform/impl"
	"github.com/csconform/csconform/model/job"
	"github.com/csconform/csconform/model/network"
	"github.com/csconform/csconform/model/vm"
)

// NetworkOrchestrator.implementNetwork (apache/cloudstack@0035c613, spec 3.3 step 9 and section 8)
// ends with stateTransitTo(network, OperationSucceeded) on the NetworkVO it read under the lock, still
// Implementing, and NetworkDaoImpl.updateState overwrites the row: the in-memory reading. The D1
// report observed networks left Allocated with the router running: the reread reading, which validates
// the transition against the row (Shutdown → OperationSucceeded → Allocated). Under D1 the
// orphaned-network cleanup writes Shutdown into a two-day-old network while its router boots; the two
// readings of network.implement.final.transition then end apart.
func TestImplementNetworkFinalTransition(t *testing.T) {
	cases := []struct {
		reading   impl.ImplementFinalTransition
		net       network.State
		deploy    job.Status
		web1      vm.State
		notFullyI bool
	}{
		{impl.FinalTransitionReread, network.Allocated, job.Failed, vm.Stopped, true},
		{impl.FinalTransitionInMemory, network.Implemented, job.Succeeded, vm.Running, false},
	}
	for _, c := range cases {
		t.Run(string(c.reading), func(t *testing.T) {
			w := newSimServer(t, 2, map[string]string{"network.implement.final.transition": string(c.reading)}, impl.Switches{impl.D1: true})
			s, db, log, srv := w.s, w.db, w.log, w.srv
			w.agent(t, "h1", sim.NewHost(s, "h1"))
			n := srv.CreateNetwork("net1", false, 4)
			require.NoError(t, db.SetNetworkCreated(n.ID, s.Now().Add(-48*time.Hour)))
			// started once, as a boot group does: a retry would implement the network again
			v := srv.AllocateVirtualMachine("web1", []int64{n.ID})
			j := srv.StartVirtualMachineOnce(v.ID, "h1")
			require.NoError(t, s.RunUntil(s.Now().Add(10*time.Minute), func() bool { return db.Job(j.ID).Status.Done() }))
			require.True(t, log.has("AsyncJobMgr-Heartbeat-2", "Found orphaned network"), "the cleanup wrote Shutdown during the implementation")
			n = db.Network(n.ID)
			require.Equal(t, c.net, n.State)
			require.Equal(t, vm.Running, db.VM(n.RouterID).State, "the router runs either way")
			require.Equal(t, c.deploy, db.Job(j.ID).Status)
			require.Equal(t, c.web1, db.VM(v.ID).State)
			require.Equal(t, c.notFullyI, log.has("", "Network is not yet fully implemented"))
		})
	}
}

// A value outside the vocabulary is refused with the key and the values it accepts.
func TestImplementFinalTransitionRefusesOtherValues(t *testing.T) {
	_, err := impl.NewConfig(map[string]string{"network.implement.final.transition": "copy"})
	require.ErrorContains(t, err, "network.implement.final.transition")
	require.ErrorContains(t, err, "reread|in-memory")
	c, err := impl.NewConfig(nil)
	require.NoError(t, err)
	require.Equal(t, impl.FinalTransitionReread, c.ImplementFinalTransition(), "the default keeps the behaviour the D1 report observed")
}
