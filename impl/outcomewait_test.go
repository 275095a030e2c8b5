package impl_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/csconform/csconform/impl"
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
