package impl_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/csconform/csconform/impl"
	"github.com/csconform/csconform/model/host"
	"github.com/csconform/csconform/model/network"
	"github.com/csconform/csconform/model/vm"
)

// TestNetworkLeftShutdown pins C5, found by csconform explore under the fixed profile (seeds 3 and 4 of
// 2,000 cases; scenario network-left-shutdown). h1's link is cut while web1 is deployed into n1: the
// router's StartCommand times out, and NetworkOrchestrator.implementNetwork's finally (4.22, read at
// apache/cloudstack NetworkOrchestrator.java) fires OperationFailed (Implementing → Shutdown) and calls
// shutdownNetwork, whose element shutdown cannot stop the router (still Starting: "We cannot stop ...
// when it is in state Starting"): OperationFailed again, and Shutdown → Shutdown is all the Network
// FSM allows. Once h1 is back (the router reported off, the link healed), web2 is deployed into n1:
//   - 4.22 (C5 on): implementNetwork's stateTransitTo(ImplementNetwork) throws NoTransitionException
//     from Shutdown, the start fails, and that start's own finally → shutdownNetwork, which now stops
//     the Stopped router at once, moves n1 to Allocated for the start after it (here the API's
//     retry): the deploy needs two attempts, and a VM on two such networks fails both;
//   - fixed (C5 off): implementNetwork completes the shutdown it finds left over, then implements:
//     one attempt.
func TestNetworkLeftShutdown(t *testing.T) {
	cases := []struct {
		name         string
		defects      impl.Switches
		noTransition bool // the first attempt failed on NoTransitionException
	}{
		{"cloudstack-4.22 (C5 on): the first start fails, its cleanup completes the shutdown", impl.Switches{impl.C5: true}, true},
		{"fixed (C5 off): the shutdown is completed first, one attempt", impl.Switches{}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := newHAWorld(t, c.defects, "h1")
			done := func(j *impl.JobVO) func() bool { return func() bool { return w.db.Job(j.ID).Status.Done() } }
			net := func() *impl.NetworkVO { return w.db.Network(w.net) }

			w.f.Cut("h1", true)
			_, j := w.srv.DeployVirtualMachine("web1", []int64{w.net}, "h1")
			w.runUntil(10*time.Minute, done(j))
			require.Equal(t, network.Shutdown, net().State, "the failed implementation's shutdown could not stop the router")
			w.f.Cut("h1", false)
			w.runUntil(5*time.Minute, func() bool { return w.status("h1") == host.Up && w.db.VM(net().RouterID).State == vm.Stopped })
			require.Equal(t, network.Shutdown, net().State, "nothing moves the network on by itself")

			before := len(w.evs.events)
			v, j := w.srv.DeployVirtualMachine("web2", []int64{w.net}, "h1")
			w.runUntil(10*time.Minute, done(j))
			require.Equal(t, vm.Running, w.db.VM(v.ID).State)
			require.Equal(t, network.Implemented, net().State)
			logged := func(prefix string) bool { return w.evs.logged(before, prefix) } // during web2's deploy
			require.Equal(t, c.noTransition, logged("NoTransitionException: unable to transition network"))
			require.Equal(t, c.noTransition, logged("Start of VM "), "the API's retry")
			require.Equal(t, !c.noTransition, logged(fmt.Sprintf("Network %d was left in Shutdown", w.net)))
		})
	}
}
