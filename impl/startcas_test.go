package impl_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/csconform/csconform/drivers/sim"
	"github.com/csconform/csconform/impl"
	"github.com/csconform/csconform/model/vm"
)

// TestStartSuccessIsACompareAndSetOnTheAttemptsCopy pins VirtualMachineManagerImpl.orchestrateStart
// and cleanup (bhouse-nexthop/cloudstack@d4da80c5, engine/orchestration/src/main/java/com/cloud/vm/
// VirtualMachineManagerImpl.java). Each attempt transitions the VMInstanceVO that changeToStartState
// returned: changeState(vm, OperationRetry, destHostId, work, Step.Prepare), then, after a successful
// StartAnswer, changeState(vm, OperationSucceeded, destHostId, work, Step.Done) on that same VO —
// VMInstanceDaoImpl.updateState's UPDATE is keyed on the VO's state, host and updated, and its
// UpdateBuilder has already set state Running and the host on the VO. A row changed meanwhile makes it
// return false: "Unable to transition to a new state", ConcurrentOperationException("Failed to deploy
// VM ..."), which none of the attempt's catch blocks take. The attempt's finally (startedVm == null,
// canRetry) sets the step Release and calls cleanup(vmGuru, vmProfile, work, OperationFailed, false)
// (prevStep Started and a successful answer: not forced); the profile's VM is that same VO, now
// Running on the host, so cleanup's Running branch sends the StopCommand whatever the row says. The
// outer finally's changeState(vm, OperationFailed, null, work, Step.Done) then finds no transition from
// Running (StateMachine2.transitTo throws NoTransitionException), which it rethrows as a
// ConcurrentOperationException, and changeState's finally puts the step back to Release.
// Here the row is moved Starting -> Stopped (as the stall scan's power-off handler does under C10) while
// web1's StartCommand is on the host: the start fails and its domain is stopped.
func TestStartSuccessIsACompareAndSetOnTheAttemptsCopy(t *testing.T) {
	w := newSimServer(t, 3, nil, impl.Switches{})
	hv := sim.NewHost(w.s, "h1")
	w.agent(t, "h1", hv)
	n := w.srv.CreateNetwork("n1", true, 4)
	v := w.srv.AllocateVirtualMachine("web1", []int64{n.ID})
	j := w.srv.StartVirtualMachineOnce(v.ID, "h1")
	sent := fmt.Sprintf("Sending StartCommand for %s to host h1", v.Name)
	require.NoError(t, w.s.RunUntil(w.s.Now().Add(3*time.Minute), func() bool { return w.log.has("", sent) }))
	require.True(t, w.log.has("", sent), "web1's StartCommand was not sent")

	cur := w.db.VM(v.ID)
	require.Equal(t, vm.Starting, cur.State)
	require.True(t, w.db.UpdateVMState("AgentTaskPool-1", cur, vm.FollowAgentPowerOffReport, vm.Stopped, ""))

	var err error
	done := false
	w.s.Go("client", func() { err = w.srv.WaitJob(j); done = true })
	require.NoError(t, w.s.RunUntil(w.s.Now().Add(5*time.Minute), func() bool { return done }))
	require.True(t, done)

	require.True(t, w.log.has("Work-Job-Executor", "Unable to transition to a new state. VM uuid: web1, VM oldstate: Running, Event: OperationSucceeded"))
	require.True(t, w.log.has("Work-Job-Executor", "Cleaning up resources for the vm web1 in Running state"), "cleanup reads the attempt's copy")
	require.False(t, slices.Contains(hv.Running(), v.Name), "the attempt's cleanup stopped the domain")
	require.ErrorContains(t, err, "Unable to transition to a new state from Running via OperationFailed")
	row := w.db.VM(v.ID)
	require.Equal(t, vm.Stopped, row.State, "no write took the row back to Running")
	require.Equal(t, vm.PowerOff, row.PowerState, "sendStop's answer")
	wk := w.db.FindOutstandingItWork(v.ID, vm.Starting)
	require.NotNil(t, wk, "the outer finally's changeState failed: the work row is not Done")
	require.Equal(t, impl.ItWorkRelease, wk.Step)
}
