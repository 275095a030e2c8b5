package impl_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/csconform/csconform/impl"
	"github.com/csconform/csconform/model/vm"
)

// TestVmWorkCallerWaitsWithoutATimeout pins the wait of a VM work job's caller. VMMI.advanceStop
// (bhouse-nexthop/cloudstack@017c41e8, engine/orchestration/src/main/java/com/cloud/vm/
// VirtualMachineManagerImpl.java) calls outcome.get() on the VmStateSyncOutcome of
// stopVmThroughJobQueue, and OutcomeImpl.get() (apache/cloudstack@2b96665b, framework/jobs/src/org/
// apache/cloudstack/framework/jobs/impl/OutcomeImpl.java) calls waitAndCheck with a timeout of -1,
// which AsyncJobManagerImpl.waitAndCheck (apache/cloudstack@04b49bc3) takes as "for ever": the loop
// ends only when the job is done or gone. vm.job.timeout is declared in VMMI but no wait reads it.
// So a caller queued behind a 30-minute work job of the same VM waits the 30 minutes and gets its
// own job's result, well past vm.job.timeout (600 s).
func TestVmWorkCallerWaitsWithoutATimeout(t *testing.T) {
	w := newSimServer(t, 1, nil, impl.Switches{})
	const vmID = 7
	long := func(t *impl.Thread) error { w.s.Sleep(30 * time.Minute); return nil }
	w.srv.RunVmWorkForTest("API-Job-Executor-long", "VmWorkStart", vmID, long)
	var err error
	done := false
	ran := false
	require.NoError(t, w.s.RunUntil(w.s.Now().Add(time.Second), func() bool { return false })) // queued second
	w.srv.JoinVmWorkForTest("API-Job-Executor-behind", "VmWorkStop", vmID, func(t *impl.Thread) error { ran = true; return nil }, &err, &done)
	require.NoError(t, w.s.RunUntil(w.s.Now().Add(20*time.Minute), func() bool { return done }))
	require.False(t, done, "the caller gave up after %s: vm.job.timeout is not a caller timeout", w.cfg.Millis("vm.job.timeout"))
	require.NoError(t, w.s.RunUntil(w.s.Now().Add(15*time.Minute), func() bool { return done }))
	require.True(t, done, "the caller's job ran once the long one ended")
	require.True(t, ran)
	require.NoError(t, err)
}

// TestNetworkGCHoldsTheLockWhileItsRouterStopWaits: the same wait from the network GC's
// shutdownNetwork. NetworkOrchestrator.shutdownNetwork (apache/cloudstack@0035c613) holds the
// network's lock-table row while VirtualRouterElement.shutdown stops the router
// (apache/cloudstack@0018999f: _routerMgr.stop → VMMI.advanceStop → stopVmThroughJobQueue and
// outcome.get(), no timeout). With the router's queue held by a 30-minute work job, the GC holds the
// lock for those 30 minutes, so a start that has to implement the network meanwhile times out on
// network.lock.timeout (600 s). With a caller that gave up after vm.job.timeout (600 s), the GC let
// the lock go before that start's timeout and the start went through.
func TestNetworkGCHoldsTheLockWhileItsRouterStopWaits(t *testing.T) {
	w := newHAWorld(t, impl.Switches{}, "h1")
	v1, j := w.srv.DeployVirtualMachine("web1", []int64{w.net}, "h1")
	w.runUntil(5*time.Minute, func() bool { return w.db.Job(j.ID).Status.Done() })
	require.Equal(t, vm.Running, w.db.VM(v1.ID).State)
	router := w.db.Network(w.net).RouterID
	require.NotZero(t, router)

	w.srv.RunVmWorkForTest("API-Job-Executor-hold", "VmWorkStart", router, func(*impl.Thread) error {
		w.s.Sleep(30 * time.Minute)
		return nil
	})
	w.runUntil(3*time.Second, func() bool { return false })
	gcDone := false
	w.srv.ShutdownNetworkForTest("Network-Scavenger-gc", w.net, &gcDone)
	w.runUntil(time.Minute, func() bool { return false })
	_, j2 := w.srv.DeployVirtualMachine("web2", []int64{w.net}, "h1")
	w.runUntil(15*time.Minute, func() bool { return w.evs.has("Work-Job-Executor", "Timed out on acquiring lock") })
	require.True(t, w.evs.has("Work-Job-Executor", "Timed out on acquiring lock"), "web2's start timed out on the network's lock")
	require.False(t, gcDone, "the GC still waits on the router's stop, holding the lock")
	w.runUntil(30*time.Minute, func() bool { return gcDone && w.db.Job(j2.ID).Status.Done() })
	require.True(t, gcDone, "the GC's shutdown ends once the router's stop has run")
}
