package impl_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/csconform/csconform/impl"
	"github.com/csconform/csconform/model/host"
	"github.com/csconform/csconform/model/network"
	"github.com/csconform/csconform/model/vm"
)

// TestNoRunningRouterAvoidsTheZone pins what orchestrateStart does with the ResourceUnavailableException
// "Can't find at least one running router!" that VirtualRouterElement.prepare (apache/cloudstack@0018999f,
// server/src/main/java/com/cloud/network/element/VirtualRouterElement.java) throws with scope
// DataCenter when NetworkHelperImpl.startRouters skipped the network's router (not Running, its host
// set and not Up). orchestrateStart's catch (bhouse-nexthop/cloudstack@d4da80c56eac6a4b67d90f12045750fc5febba59,
// engine/orchestration/src/main/java/com/cloud/vm/VirtualMachineManagerImpl.java) sets lastKnownError
// and adds the zone to the avoid set (DeploymentPlanner.ExcludeList.add, bhouse-nexthop@b34b9d91: the
// DataCenter scope is added, so no rethrow), and the loop goes on: the next plan finds the requested
// host avoided (shouldAvoid(Host) checks its zone), dest is null, and the admin caller gets the
// CloudRuntimeException "Unable to create a deployment … Last known error" rather than the
// ResourceUnavailableException. Until this test the reference rethrew the exception from the first
// attempt, which HA's restart catches as a ResourceUnavailableException where the Java's
// CloudRuntimeException goes through to processWork's catch.
func TestNoRunningRouterAvoidsTheZone(t *testing.T) {
	w := newHAWorld(t, impl.Switches{}, "h1", "h2")
	w.deploy("web0", "h1", false) // implements n1; its router runs on h1
	net := w.db.Network(w.net)
	require.Equal(t, network.Implemented, net.State)
	r := w.db.VM(net.RouterID)
	require.Equal(t, vm.Running, r.State)
	require.Equal(t, "h1", r.HostID)
	// the router is being stopped on h1 when h1 leaves Up: startRouters skips it
	require.True(t, w.db.UpdateVMState("test", r, vm.StopRequested, vm.Stopping, "h1"))
	_, ok := w.db.HostTransit("test", "h1", host.ShutdownRequested, "")
	require.True(t, ok)

	before := len(w.evs.events)
	_, j := w.srv.DeployVirtualMachine("web1", []int64{w.net}, "h2")
	var err error
	done := false
	w.s.Go("client", func() { err = w.srv.WaitJob(j); done = true })
	w.runUntil(5*time.Minute, func() bool { return done })
	require.True(t, done)

	require.True(t, w.evs.logged(before, "Unable to contact resource. ResourceUnavailableException: Resource [DataCenter:1] is unreachable: Can't find at least one running router!"))
	assert.True(t, w.evs.logged(before, "VM start attempt #2"), "the loop went on after adding the zone")
	assert.True(t, w.evs.logged(before, "Cannot deploy VM [web1] to host [h2] because this host is in the avoid set."))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "CloudRuntimeException: Unable to create a deployment for web1 after 2 attempts Last known error: ResourceUnavailableException: Resource [DataCenter:1]")
}
