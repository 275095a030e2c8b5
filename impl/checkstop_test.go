package impl_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/csconform/csconform/drivers/sim"
	"github.com/csconform/csconform/impl"
	"github.com/csconform/csconform/model/vm"
)

// VirtualMachineManagerImpl.orchestrateStart, catch (OperationTimedoutException e): "if
// (e.isActive()) _haMgr.scheduleStop(vm, destHostId, WorkType.CheckStop)", then canRetry = false (no
// cleanup). AgentAttache.send throws with isActive = true for a command that is not in sequence (every
// KVM start) once it has waited twice. HighAvailabilityManagerImpl.scheduleStop persists an HaWorkVO of
// type CheckStop with the VM's state, update count and host; stopVM then stops the VM with an unforced
// advanceStop only if none of them changed ("is different now" otherwise), and a failure is
// rescheduled after stop.retry.interval with the VM's state taken anew (processWork's catch).
// Here the StartCommand of web1 waits on a cut link past `wait`: the item is scheduled and taken at
// once, finds web1 still Starting, and its stop fails (a Starting VM has no StopRequested transition)
// and is rescheduled; the link heals, the held command boots the domain, the host's report makes web1
// Running, and the next try finds web1 different and leaves it running. (The deploy's second start
// finds the first one's op_it_work row and fails at once under fixed: TestChangeToStartStateWaitsOnWorkItems.)
func TestTimedOutStartSchedulesCheckStop(t *testing.T) {
	w, v := deployedUntilStartSent(t, impl.Switches{})
	s, f, log := w.s, w.f, w.log
	f.Cut("h1", true)
	scheduled := fmt.Sprintf("Scheduled HAWork[1-CheckStop-%d-Starting-Scheduled]", v.ID)
	require.NoError(t, s.RunUntil(s.Now().Add(5*time.Minute), func() bool { return log.has("", scheduled) }))
	require.True(t, log.has("Work-Job-Executor", scheduled), "no CheckStop scheduled after the start timed out")
	rescheduled := "Encountered unhandled exception during HA process, reschedule work"
	require.NoError(t, s.RunUntil(s.Now().Add(time.Minute), func() bool { return log.has("HA-Worker", rescheduled) }))
	require.True(t, log.has("HA-Worker", "Stopping "+v.Name))
	require.True(t, log.has("HA-Worker", rescheduled), "the stop of a Starting VM should fail and be rescheduled")
	require.Equal(t, vm.Starting, w.db.VM(v.ID).State)
	f.Cut("h1", false)
	require.NoError(t, s.RunFor(11*time.Minute))
	require.Equal(t, vm.Running, w.db.VM(v.ID).State, "the held start ran and the report settled web1")
	require.True(t, log.has("HA-Worker", v.Name+" is different now.  Scheduled Host: h1 Current Host: h1 State: Running"))
	require.False(t, log.has("HA-Worker", "Stop for "+v.Name+" was successful"))
}

// deployedUntilStartSent deploys web1 on h1 (wait 120 s) and runs until its StartCommand is sent.
func deployedUntilStartSent(t *testing.T, sw impl.Switches) (*simServer, *impl.VMVO) {
	t.Helper()
	w := newSimServer(t, 3, map[string]string{"wait": "120"}, sw)
	w.agent(t, "h1", sim.NewHost(w.s, "h1"))
	n := w.srv.CreateNetwork("n1", true, 4)
	v, _ := w.srv.DeployVirtualMachine("web1", []int64{n.ID}, "h1")
	sent := fmt.Sprintf("Sending StartCommand for %s to host h1", v.Name)
	require.NoError(t, w.s.RunUntil(w.s.Now().Add(3*time.Minute), func() bool { return w.log.has("", sent) }))
	require.True(t, w.log.has("", sent), "web1's StartCommand was not sent")
	return w, v
}
