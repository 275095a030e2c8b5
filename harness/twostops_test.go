package harness

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/csconform/csconform/model/history"
)

// Finding B of explore --profile fixed --scheduler pct:8 --seed 6 (two management servers; replay:
// --seed 13960443919138493241 --budget 1): router r-11 is stopped by two attempts at once, and the one
// that did not move it to Stopping ends it. The reference does what the Java does:
//   - bhouse-nexthop/cloudstack@d4da80c5 engine/orchestration/src/main/java/com/cloud/vm/VirtualMachineManagerImpl.java
//     advanceStop(String, boolean): from a job dispatched by VM_WORK_JOB_DISPATCHER (vm1's HA restart,
//     whose implementNetwork completes net1's shutdown and stops its router) orchestrateStop runs inline
//     under createPlaceHolderWork, a vm_work_job row persisted with no place in the VM's work queue;
//     from any other job (deleteHost's API job, ResourceManagerImpl.doDeleteHost) it goes through
//     stopVmThroughJobQueue, whose queue the placeholder does not hold: the two stops run at once;
//   - the second attempt's stateTransitTo(StopRequested) on the Stopping router is a row of s_fsm
//     (Stopping -> Stopping, api/src/main/java/com/cloud/vm/VirtualMachine.java) that
//     bhouse-nexthop/cloudstack@15eb2bcd engine/schema/src/main/java/com/cloud/vm/dao/VMInstanceDaoImpl.java
//     updateState returns true for without a write ("state is same, don't need to update");
//   - each attempt sends its StopCommand; the first answered releases and moves Stopping -> Stopped
//     (OperationSucceeded), the other's updateState finds the row already Stopped and returns true
//     ("VM … state has been already been updated to Stopped").
//
// The history has no line of the second attempt taking the router, so operation-by-its-attempt
// allows a work job to end a Stopping VM while a second stop of it is in progress
// (TestEachGuardFailsOnItsBugAndPassesOnTheFix has the planted cases).
func TestTwoStopsOfOneRouter(t *testing.T) {
	// The program runs on h3, a host ms1 owns: since deleteHost is propagated to a host's owner
	// (TestDeleteHostOfAPeersHostIsPropagatedToTheOwner), ms1's delete of ms2's h2, where explore found
	// it, is refused.
	r := runFixed(t, "testdata/two-stops-of-one-router.yaml")
	assert.Empty(t, r.Violations)
	assert.Empty(t, r.NotLinearizable)
	h := r.cluster.Rec.History().Slice()
	var stopping, stopped string
	for _, e := range h {
		if e.Kind == history.State && e.Object == "vm:11" && e.From == "Running" && e.To == "Stopping" {
			stopping = e.Actor
		}
		if e.Kind == history.State && e.Object == "vm:11" && e.From == "Stopping" && e.To == "Stopped" {
			stopped = e.Actor
		}
	}
	assert.NotEmpty(t, stopping)
	assert.NotEqual(t, stopping, stopped, "the run still has the other stop end r-11's Stopping")
	both := slices.ContainsFunc(h, func(e history.Event) bool {
		return e.Kind == history.Log && e.Object == "vm:11" && e.Detail == "VM r-11-VM state has been already been updated to Stopped"
	})
	assert.True(t, both, "the inline stop's own write finds r-11 already Stopped")
}
