package impl_test

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/csconform/csconform/drivers/sim"
	"github.com/csconform/csconform/impl"
	"github.com/csconform/csconform/model/job"
	"github.com/csconform/csconform/model/network"
	"github.com/csconform/csconform/model/vm"
)

// routerWorld deploys web1 into net1 on h1 (so net1's router runs), then destroys and expunges web1:
// net1 is free and Implemented, its router Running.
func routerWorld(t *testing.T, sw impl.Switches) (*sim.Scheduler, *impl.DB, *eventLog, *impl.Server, *sim.Host, *impl.Agent, *impl.NetworkVO) {
	w := newSimServer(t, 5, nil, sw)
	s, db, log, srv := w.s, w.db, w.log, w.srv
	h1 := sim.NewHost(s, "h1")
	agent := w.agent(t, "h1", h1)
	n := srv.CreateNetwork("net1", false, 4)
	v, j := srv.DeployVirtualMachine("web1", []int64{n.ID}, "h1")
	done := func(j *impl.JobVO) func() bool { return func() bool { return db.Job(j.ID).Status.Done() } }
	require.NoError(t, s.RunUntil(s.Now().Add(5*time.Minute), done(j)))
	require.Equal(t, vm.Running, db.VM(v.ID).State)
	j = srv.DestroyVirtualMachine(v.ID, true)
	require.NoError(t, s.RunUntil(s.Now().Add(5*time.Minute), done(j)))
	require.Equal(t, job.Succeeded, db.Job(j.ID).Status)
	n = db.Network(n.ID)
	require.Equal(t, network.Implemented, n.State)
	require.Equal(t, vm.Running, db.VM(n.RouterID).State)
	return s, db, log, srv, h1, agent, n
}

// A router is stopped by VirtualRouterElement.shutdown → VirtualNetworkApplianceManagerImpl.stop →
// VMMI.advanceStop (apache/cloudstack@0018999f), which outside a work job goes through the VM work
// queue (stopVmThroughJobQueue, spec 3.1 item 7): the router has a pending work job while its
// StopCommand runs, so a power report in that window is postponed (HandlePowerStateReport). Without a
// work job, an out-of-band report that still sees the router's domain moves the Stopping record back to
// Running (FollowAgentPowerOnReport), and the stop's last write (OperationSucceeded → Stopped) fails on
// the changed update_count: the record says Running while no domain runs, and net1 goes Allocated
// regardless (the reference did that before the router stop went through the queue).
func TestRouterStopPowerReportDuringStop(t *testing.T) {
	s, db, log, srv, h1, agent, n := routerWorld(t, impl.Switches{})
	var ok bool
	srv.ShutdownNetworkForTest("Network-Scavenger", n.ID, &ok)
	require.NoError(t, s.RunUntil(s.Now().Add(time.Minute), func() bool { return db.VM(n.RouterID).State == vm.Stopping }))
	require.NoError(t, s.RunFor(300*time.Millisecond)) // the StopCommand is on h1: 1–2 s to destroy the domain
	r := db.VM(n.RouterID)
	require.True(t, slices.Contains(h1.Running(), r.Name), "the router's domain still runs")
	agent.TriggerUpdateForTest()
	require.NoError(t, s.RunFor(30*time.Second))
	r = db.VM(n.RouterID)
	require.False(t, slices.Contains(h1.Running(), r.Name), "the StopCommand destroyed the router's domain")
	// The router's VmWorkStop job is pending: the report is postponed and the stop's write stands.
	require.False(t, log.has("AgentTaskPool", "state is sync-ed (Stopping -> Running)"), "the report must not move the Stopping router")
	require.True(t, log.has("AgentTaskPool", "postpone power-change report"))
	require.True(t, log.has("Work-Job-Executor", "Stopping router") || log.has("Network-Scavenger", "Stopping router"))
	require.Equal(t, vm.Stopped, r.State)
	require.True(t, ok)
	require.NotEmpty(t, db.Jobs(func(j *impl.JobVO) bool {
		return j.Cmd == "VmWorkStop" && j.InstanceID == r.ID && j.Status == job.Succeeded
	}), "the router was stopped by a VmWorkStop job")
	require.Equal(t, network.Allocated, db.Network(n.ID).State)
}

// NetworkOrchestrator.shutdownNetwork (apache/cloudstack@0035c613; identical in bhouse-nexthop@b58b6567,
// the 4.22 fork): when shutdownNetworkElementsAndResources fails — VirtualRouterElement.shutdown could
// not stop the router — the transaction fires OperationFailed (Shutdown → Shutdown) and returns false:
// the network stays Shutdown, it does not go Allocated, and the router keeps its record. Here h1's agent
// dies before the network GC shuts net1 down: the StopCommand is cancelled when the disconnect is
// noticed, and orchestrateStop (unforced) puts the router back to Running.
func TestShutdownNetworkElementFailureLeavesShutdown(t *testing.T) {
	s, db, log, srv, _, agent, n := routerWorld(t, impl.Switches{})
	agent.Kill()
	var ok bool
	srv.ShutdownNetworkForTest("Network-Scavenger", n.ID, &ok)
	require.NoError(t, s.RunFor(10*time.Minute))
	require.False(t, ok, "shutdownNetwork reports the failure")
	require.Equal(t, network.Shutdown, db.Network(n.ID).State, "OperationFailed leaves the network Shutdown")
	require.Equal(t, vm.Running, db.VM(n.RouterID).State, "the router's stop failed: its record stays Running")
	require.True(t, log.has("Network-Scavenger", "Unable to complete shutdown of the network elements due to element: VirtualRouter"))
	require.False(t, log.has("Network-Scavenger", "is shutdown successfully"))
}
