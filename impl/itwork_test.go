package impl_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/csconform/csconform/impl"
	"github.com/csconform/csconform/model/history"
	"github.com/csconform/csconform/model/job"
	"github.com/csconform/csconform/model/vm"
)

// VirtualMachineManagerImpl.changeToStartState and checkWorkItems (bhouse-nexthop/cloudstack@d4da80c5,
// the 4.22 branch; ItWorkDaoImpl.findByOutstandingWork at apache@1502b605): a start of a VM in a
// transitional state looks for an op_it_work row of that state whose step is not Done; while one
// exists and the VM is not Running it sleeps vm.op.wait.interval (120 s) and looks again, until the
// row has been inactive longer than vm.op.cancel.interval (3600 s), then fails with "There are
// concurrent operations". orchestrateStart leaves the row of a start whose StartCommand timed out at
// step Starting (canRetry = false skips the finally's Release/Done). Here web1's StartCommand waits on
// a cut link past 2 × `wait` (AgentAttache.send's two rounds); the deploy retries the start at once (VMEntityManagerImpl), and that second
// start finds the first one's row. Under 4.22 (C7) it waits on it for an hour: web1's queue is held,
// so its domain, booted once the link heals, is not followed to Running (the reports are postponed
// while a work job is pending) until the wait gives up. C7's fix fails it at once, no other work job
// running on web1, and the next report follows the domain.
func TestChangeToStartStateWaitsOnWorkItems(t *testing.T) {
	for _, c := range []struct {
		name    string
		sw      impl.Switches
		waits   int // rounds of vm.op.wait.interval
		settled time.Duration
	}{
		// the row was 4 min old (the first start waited 2 × wait) when the wait began: 28 rounds take
		// it past the hour
		{"cloudstack-4.22 (C7)", impl.Switches{impl.C7: true}, 28, 62 * time.Minute},
		{"fixed", impl.Switches{}, 0, 8 * time.Minute}, // the link heals 5 min after the send
	} {
		t.Run(c.name, func(t *testing.T) {
			w, v := deployedUntilStartSent(t, c.sw)
			s, f, log := w.s, w.f, w.log
			f.Cut("h1", true)
			require.NoError(t, s.RunFor(5*time.Minute))
			f.Cut("h1", false)
			row := w.db.FindOutstandingItWork(v.ID, vm.Starting)
			require.NotNil(t, row, "the timed-out start left no outstanding op_it_work row")
			require.Equal(t, impl.ItWorkStarting, row.Step)
			require.True(t, log.has("Work-Job-Executor", "Determining why we're unable to update the state to Starting for web1. Retry=4"))

			require.NoError(t, s.RunUntil(row.UpdatedAt.Add(70*time.Minute), func() bool { return w.db.VM(v.ID).State == vm.Running }))
			require.Equal(t, vm.Running, w.db.VM(v.ID).State, "the report never followed web1's domain")
			settled := s.Now().Sub(row.UpdatedAt)
			require.True(t, settled < c.settled, "web1 Running %s after the row's last step, want under %s", settled, c.settled)
			var failed time.Time
			waits := 0
			for _, e := range log.events {
				switch {
				case strings.Contains(e.Detail, "Waiting some more to make sure there's no activity on web1"):
					waits++
				case e.Kind == history.State && strings.Contains(e.To, "FAILED") && strings.Contains(e.Detail, "There are concurrent operations on web1"):
					failed = e.Time
				}
			}
			require.False(t, failed.IsZero(), "the second start did not fail")
			require.Equal(t, c.waits, waits)
			if c.waits > 0 {
				idle := failed.Sub(row.UpdatedAt)
				require.True(t, idle > time.Hour && idle < time.Hour+2*time.Minute, "gave up %s after the row's last step, want just past vm.op.cancel.interval", idle)
			} else {
				require.True(t, log.has("Work-Job-Executor", "belongs to no running job: this one holds the VM"))
			}
		})
	}
}

// VirtualMachineManagerImpl.cancelWorkItems, from start() (d4da80c5): a restarted server lists its
// own op_it_work rows not Done (listWorkInProgressFor), hands a start's to
// HighAvailabilityManager.scheduleRestart(vm, true) and marks it Done. web1's start dies with its
// server after the StartCommand was sent (row at step Starting).
func TestCancelWorkItemsHandsUnfinishedStartsToHA(t *testing.T) {
	_, db, log, id, _ := leftByDeadServer(t, nil, impl.Switches{}, "Sending StartCommand for web1")
	require.True(t, log.has("main", "Handling unfinished work item: ItWork[1-Starting-"))
	require.True(t, log.has("main", "Schedule vm for HA: web1 (HAWork[1-HA-"), "no HA restart with investigation")
	require.True(t, log.has("main", "-Starting-Investigating]"))
	require.Nil(t, db.FindOutstandingItWork(id, vm.Starting), "the row should be Done")
}

// A restart after kill -9 under load (issue 35): the dead incarnation left many starts half done, each
// VM Starting without a host (killed between changeToStartState and the planner's OperationRetry),
// its op_it_work row at Prepare; half of them with their start's job still in progress, which
// cleanupLeftOverJobs fails and moves to Stopped (cleanupVirtualMachine: OperationFailed). For every
// row cancelWorkItems calls scheduleRestart, which force-stops a VM with no host through its work
// queue before it queues the HA item: the stop is a VmWork job for the heartbeat to dispatch.
//
// Read: apache/cloudstack@00114e8b engine/orchestration/src/main/java/com/cloud/vm/VirtualMachineManagerImpl.java
// (start: cancelWorkItems(_nodeId); cancelWorkItems: scheduleRestart(vm, true) then Step.Done;
// advanceStop: outside a work job, stopVmThroughJobQueue and a wait on its outcome),
// apache/cloudstack@04913a45 server/src/main/java/com/cloud/ha/HighAvailabilityManagerImpl.java
// (scheduleRestart: hostId == null → _itMgr.advanceStop(uuid, true), then the HA item), and
// apache/cloudstack@04b49bc3 framework/jobs/.../AsyncJobManagerImpl.java (submitAsyncJob with a sync
// object only queues the item; the heartbeat dispatches it to the work-job executors configure made).
//
// Start must not wait on those stops: it returns at once, before any of them ran (here the work-job
// dispatcher only starts after cancelWorkItems, so a wait in Start waited vm.job.timeout, 600 s, per
// VM for a job nobody dispatched), and the clean-up then happens all the same: every VM Stopped by its
// forced stop, every row Done, every VM handed to HA.
func TestRestartDoesNotWaitOnHalfStartedVMsCleanup(t *testing.T) {
	const n = 40
	w := newSimServer(t, 5, nil, impl.Switches{})
	s, f, db := w.s, w.f, w.db
	net := w.srv.CreateNetwork("n1", false, 64)
	var ids []int64
	for i := range n {
		v := w.srv.AllocateVirtualMachine(fmt.Sprintf("web%d", i), []int64{net.ID})
		if i%2 == 0 {
			db.CreateJob("API-Job-Executor-1", "DeployVMCmd", "VirtualMachine", v.ID, "ms1")
		}
		require.True(t, db.UpdateVMState("Work-Job-Executor-1", v, vm.StartRequested, vm.Starting, ""))
		db.PersistItWork("ms1", vm.Starting, v.ID)
		ids = append(ids, v.ID)
	}
	f.Listen(false)
	s.Kill("ms/")
	require.NoError(t, s.RunFor(5*time.Second))
	f.Listen(true)

	srv := impl.NewServer("ms1", s, db, w.cfg, impl.Switches{}, f)
	began := s.Now()
	var returned time.Time
	var starting, queued int // VMs still Starting, forced stops queued, when Start returned
	s.Go("restart", func() {
		srv.Start()
		returned = s.Now()
		for _, id := range ids {
			if db.VM(id).State == vm.Starting {
				starting++
			}
			queued += len(db.JobsFor("VirtualMachine", id, func(j *impl.JobVO) bool { return j.Cmd == "VmWorkStop" && j.Status == job.InProgress }))
		}
	})
	require.NoError(t, s.RunUntil(began.Add(time.Minute), func() bool { return !returned.IsZero() }))
	require.False(t, returned.IsZero(), "Start had not returned a minute after it began: it waits on the clean-up's stop jobs")
	require.Equal(t, began, returned, "Start took simulated time: it waited on the clean-up")
	require.Equal(t, n/2, starting, "Start returned after the clean-up's stop jobs ran, not before")
	require.Equal(t, n, queued, "every forced stop is queued before Start returns, ahead of anything a client queues")

	require.NoError(t, s.RunUntil(s.Now().Add(10*time.Minute), func() bool {
		return len(db.ItWorkInProgressFor("ms1")) == 0 && len(db.JobsInProgress(func(j *impl.JobVO) bool { return j.MSID == "ms1" })) == 0
	}))
	require.Empty(t, db.ItWorkInProgressFor("ms1"), "rows left not Done")
	for _, id := range ids {
		v := db.VM(id)
		require.Equal(t, vm.Stopped, v.State, "%s", v.Name)
		require.Empty(t, v.HostID, "%s", v.Name)
		ha := db.HaWorkOf(id)
		require.Len(t, ha, 1, "%s: one HA item", v.Name)
		require.EqualValues(t, "HA", ha[0].Type)
		require.True(t, w.log.has("", "Schedule vm for HA: "+v.Name+" ("), "%s not handed to HA", v.Name)
	}
	stops := db.Jobs(func(j *impl.JobVO) bool { return j.Cmd == "VmWorkStop" })
	require.Len(t, stops, n, "one forced stop per VM without a host")
	for _, j := range stops {
		require.Equal(t, job.Succeeded, j.Status, "job %d", j.ID)
	}
}
