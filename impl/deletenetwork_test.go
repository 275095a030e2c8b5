package impl_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/csconform/csconform/impl"
	"github.com/csconform/csconform/model/job"
	"github.com/csconform/csconform/model/network"
)

// NetworkOrchestrator.destroyNetwork (apache/cloudstack@0035c613,
// engine/orchestration/src/main/java/org/apache/cloudstack/engine/orchestration/NetworkOrchestrator.java),
// reached from NetworkServiceImpl.deleteNetwork: a user VM on the network that is not expunged
// refuses it; shutdownNetwork runs, its result unread; the row read again must be Allocated or Setup,
// else "Network is not in the correct state to be destroyed" and false (DeleteNetworkCmd: "Failed to
// delete network"). shutdownNetwork leaves an Implementing network alone ("Network is not
// implemented"), so a network an implementer left Implementing cannot be deleted, while one that is
// Implemented is shut down (its router stopped), its router expunged, and the row goes Destroy.
func TestDeleteNetwork(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T) (*simServer, *impl.NetworkVO)
		ok    bool
		state network.State // the row's state at the end
		line  string        // a line of the job's log
	}{
		{name: "Implemented, its router running", ok: true, state: network.Destroy, line: "is shutdown successfully",
			setup: func(t *testing.T) (*simServer, *impl.NetworkVO) {
				s, db, log, srv, _, _, n := routerWorld(t, impl.Switches{})
				return &simServer{s: s, db: db, log: log, srv: srv}, n
			}},
		{name: "left Implementing by its implementer", ok: false, state: network.Implementing, line: "Network is not in the correct state to be destroyed: Implementing",
			setup: func(t *testing.T) (*simServer, *impl.NetworkVO) {
				w := newSimServer(t, 5, nil, impl.Switches{})
				n := w.srv.CreateNetwork("net1", false, 4)
				w.db.UpdateNetworkState("Work-Job-Executor-1", n, network.Implementing, "implementNetwork: ImplementNetwork", false)
				return w, n
			}},
		{name: "a VM on it not expunged", ok: false, state: network.Allocated, line: "",
			setup: func(t *testing.T) (*simServer, *impl.NetworkVO) {
				w := newSimServer(t, 5, nil, impl.Switches{})
				n := w.srv.CreateNetwork("net1", false, 4)
				w.srv.AllocateVirtualMachine("web1", []int64{n.ID})
				return w, n
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, n := tc.setup(t)
			j := w.srv.DeleteNetwork(n.ID)
			require.NoError(t, w.s.RunUntil(w.s.Now().Add(10*time.Minute), func() bool { return w.db.Job(j.ID).Status.Done() }))
			got := w.db.Network(n.ID)
			require.Equal(t, tc.state, got.State)
			require.Equal(t, tc.ok, got.Removed, "removed")
			if tc.ok {
				require.Equal(t, job.Succeeded, w.db.Job(j.ID).Status)
				require.True(t, w.db.VM(got.RouterID) == nil || w.db.VM(got.RouterID).Removed, "the router is expunged")
			} else {
				require.Equal(t, job.Failed, w.db.Job(j.ID).Status)
			}
			if tc.line != "" {
				require.True(t, w.log.has("API-Job-Executor", tc.line), tc.line)
			}
		})
	}
}

// destroyNetwork destroys its router through VirtualRouterElement.destroy →
// VirtualNetworkApplianceManagerImpl.destroyRouter → _itMgr.expunge (apache/cloudstack@ea7d3226,
// server/src/main/java/com/cloud/network/router/VirtualNetworkApplianceManagerImpl.java,
// destroyRouter): the expunge a user VM takes, so the router's volumes are deleted on its last host,
// not only marked Expunged (the reference did that, and the files stayed on primary storage: a
// storage-leak the retire-network programs found). And VirtualMachineManagerImpl.advanceExpunge
// (apache/cloudstack@3156c4ba, engine/orchestration/src/main/java/com/cloud/vm/VirtualMachineManagerImpl.java)
// re-reads the VM after its stop and transits ExpungeOperation from what it finds: a router a deploy
// started again meanwhile is Starting, which has no such transition (NoTransitionException), and the
// expunge fails with "Unable to destroy".
func TestDeleteNetworkExpungesItsRouter(t *testing.T) {
	s, db, _, srv, h1, _, n := routerWorld(t, impl.Switches{})
	router := db.VM(n.RouterID)
	vols := db.Volumes(router.ID)
	require.NotEmpty(t, vols)
	j := srv.DeleteNetwork(n.ID)
	require.NoError(t, s.RunUntil(s.Now().Add(10*time.Minute), func() bool { return db.Job(j.ID).Status.Done() }))
	require.Equal(t, job.Succeeded, db.Job(j.ID).Status)
	require.True(t, db.VM(router.ID).Removed, "the router's row is removed")
	_, deleted := h1.VolumeFiles()
	for _, v := range vols {
		require.Equal(t, "Expunged", db.Volume(v.ID).State)
		require.True(t, deleted[v.Path], "%s deleted on the router's host", v.Path)
	}
}
