package impl_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/csconform/csconform/drivers/sim"
	"github.com/csconform/csconform/impl"
	"github.com/csconform/csconform/model/history"
	"github.com/csconform/csconform/model/job"
)

// hangingHost is a simulated host whose libvirt call for one domain does not return for hang.
type hangingHost struct {
	*sim.Host
	s    *sim.Scheduler
	name string
	hang time.Duration
}

func (h *hangingHost) Start(d impl.DomainSpec) error {
	if d.Name == h.name {
		h.s.Sleep(h.hang)
	}
	return h.Host.Start(d)
}

// TestStartStillWaitingAtTheCancelThreshold pins what the job GC does to a start whose StartCommand
// is still unanswered, at the defaults (wait 1800 s, job.cancel.threshold.minutes 60).
// AgentAttache.send(req, wait) (apache/cloudstack@04ee4fe0, engine/orchestration/src/main/java/com/
// cloud/agent/manager/AgentAttache.java) waits up to two rounds of wait: after the first it throws
// ("Waited too long", isActive false) only when another command is the attache's current sequence,
// else it waits again ("Waiting some more time because this is the current command") and throws
// OperationTimedoutException(..., wait * 2, true). A KVM StartCommand is not in sequence
// (getExecuteInSequence(KVM) is false), so it waits 2 × 1800 s = 60 min from its send. The GC task of
// AsyncJobManagerImpl (apache/cloudstack@04b49bc3, framework/jobs/.../AsyncJobManagerImpl.java,
// getGCTask().reallyRun) first cancels every queue item in process longer than
// job.cancel.threshold.minutes (SyncQueueItemDaoImpl.getBlockedQueueItems: last_process_time before
// now − threshold): completeAsyncJob(FAILED, 0, "Job is cancelled as it has been blocking others for
// too long") and purgeItem; the thread running the job is not interrupted. The item's clock starts
// when it is dispatched, the command's when it is sent (after planning and preparing: here the
// network's router boots first), so the GC, every 10 s, cancels the start's job before the command
// times out whenever the time from dispatch to send exceeds the GC tick's phase: the VM's queue is
// freed and its power reports are no longer postponed while the start thread still waits; when it times
// out it schedules its CheckStop and its completion finds the job already FAILED.
func TestStartStillWaitingAtTheCancelThreshold(t *testing.T) {
	w := newSimServer(t, 3, nil, impl.Switches{})
	hv := &hangingHost{Host: sim.NewHost(w.s, "h1"), s: w.s, hang: 3 * time.Hour}
	w.agent(t, "h1", hv)
	n := w.srv.CreateNetwork("n1", false, 4) // implemented by web1's start: its router boots first
	v := w.srv.AllocateVirtualMachine("web1", []int64{n.ID})
	hv.name = v.Name
	w.srv.StartVirtualMachineOnce(v.ID, "h1")
	sent := fmt.Sprintf("Sending StartCommand for %s to host h1", v.Name)
	require.NoError(t, w.s.RunUntil(w.s.Now().Add(5*time.Minute), func() bool { return w.log.has("", sent) }))
	require.True(t, w.log.has("", sent), "web1's StartCommand was not sent")
	sentAt := w.s.Now()

	timedOut := "Unable to send the start command to host h1"
	require.NoError(t, w.s.RunUntil(sentAt.Add(62*time.Minute), func() bool { return w.log.has("Work-Job-Executor", timedOut) }))
	at := func(detail string) time.Time {
		i := slices.IndexFunc(w.log.events, func(e history.Event) bool { return strings.Contains(e.Detail, detail) })
		require.GreaterOrEqual(t, i, 0, "no %q", detail)
		return w.log.events[i].Time
	}
	var work *impl.JobVO
	for _, j := range w.db.JobsFor("VirtualMachine", v.ID, nil) {
		if j.Cmd == "VmWorkStart" {
			work = j
		}
	}
	require.NotNil(t, work)
	require.Equal(t, job.Failed, work.Status)
	require.Equal(t, impl.BlockedJobResult, work.Result, "the GC cancelled the start's work job")
	cancelled := at(fmt.Sprintf("Remove Job-%d from Queue-%d since it has been blocked for too long", work.ID, v.ID))
	again := at("Waiting some more time because this is the current command")
	failed := at(timedOut)
	require.Equal(t, 30*time.Minute, again.Sub(sentAt).Round(time.Second), "the first round of wait")
	require.Equal(t, 60*time.Minute, failed.Sub(sentAt).Round(time.Second), "2 × wait")
	require.True(t, cancelled.Before(failed), "the GC cancels the job (%s) before the command times out (%s)", cancelled, failed)
	require.True(t, failed.Sub(cancelled) > 0 && failed.Sub(cancelled) < time.Minute)
	require.True(t, w.log.has("Work-Job-Executor", fmt.Sprintf("job-%d is already completed.", work.ID)), "the start's own completion finds the job FAILED")
	require.True(t, w.log.has("Work-Job-Executor", "Scheduled HAWork["), "the timed-out start schedules its CheckStop")
}
