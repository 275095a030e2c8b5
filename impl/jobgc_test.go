package impl_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/csconform/csconform/drivers/sim"
	"github.com/csconform/csconform/impl"
	"github.com/csconform/csconform/model/job"
	"github.com/csconform/csconform/model/vm"
)

// jobGCWorld is a management server with no hosts: only its job manager's tasks run.
func jobGCWorld(t *testing.T, overrides map[string]string) (*sim.Scheduler, *impl.DB, *eventLog, *impl.Server) {
	w := newSimServer(t, 1, overrides, impl.Switches{})
	return w.s, w.db, w.log, w.srv
}

func jobOf(db *impl.DB, cmd string) *impl.JobVO {
	for _, j := range db.Jobs(nil) {
		if j.Cmd == cmd {
			return j
		}
	}
	return nil
}

// AsyncJobManagerImpl.getGCTask (apache/cloudstack@04b49bc3, the same in db36a006): every 10 s,
// getBlockedQueueItems(job.cancel.threshold.minutes × 60000) — SyncQueueItemDaoImpl: items with a
// queue_proc_time older than the threshold, i.e. in process that long — each has its job completed
// FAILED with result code 0 and "Job is cancelled as it has been blocking others for too long", and the
// item purged, so the next job of the same queue is dispatched while the first one's thread still runs.
// Below the threshold the queue waits for the first job.
func TestJobGCCancelsBlockedQueueItems(t *testing.T) {
	cases := []struct {
		name      string
		threshold string
		cancelled bool
	}{
		{"in process longer than the threshold", "1", true},
		{"within the default threshold (60 min)", "60", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, db, log, srv := jobGCWorld(t, map[string]string{"job.cancel.threshold.minutes": c.threshold})
			var firstDone, secondStarted time.Time
			srv.RunVmWorkForTest("caller-1", "VmWorkStop", 7, func(t *impl.Thread) error {
				s.Sleep(5 * time.Minute) // a StopCommand the host never answers, say
				firstDone = s.Now()
				return nil
			})
			require.NoError(t, s.RunFor(time.Second))
			srv.RunVmWorkForTest("caller-2", "VmWorkStart", 7, func(t *impl.Thread) error {
				secondStarted = s.Now()
				return nil
			})
			require.NoError(t, s.RunFor(10*time.Minute))
			first, second := jobOf(db, "VmWorkStop"), jobOf(db, "VmWorkStart")
			require.NotNil(t, first)
			require.NotNil(t, second)
			require.False(t, firstDone.IsZero(), "the first job's thread is not interrupted")
			require.Equal(t, job.Succeeded, second.Status)
			if !c.cancelled {
				require.Equal(t, job.Succeeded, first.Status)
				require.True(t, secondStarted.After(firstDone), "the queue waits for the first job")
				require.False(t, log.has("", "blocked for too long"))
				return
			}
			require.Equal(t, job.Failed, first.Status)
			require.Equal(t, 0, first.ResultCode)
			require.Equal(t, impl.BlockedJobResult, first.Result)
			require.True(t, log.has("AsyncJobMgr-Heartbeat-2", "since it has been blocked for too long"))
			require.True(t, secondStarted.Before(firstDone), "the second job runs beside the first one's thread")
			require.True(t, log.has("Work-Job-Executor", "is already completed"), "the first thread's completion finds the job done")
		})
	}
}

// AsyncJobManagerImpl.getGCTask (apache/cloudstack@04b49bc3): cut = now − job.expire.minutes;
// getExpiredUnfinishedJobs(cut, 100) (AsyncJobDaoImpl: IN_PROGRESS, not pseudo, created ≤ cut, oldest
// first) are expunged — row and queue item deleted — whether a thread still runs them or not. From then
// on the VM has no pending work job. A job that ends in time is never expunged as unfinished.
func TestJobGCExpungesExpiredUnfinishedJobs(t *testing.T) {
	cases := []struct {
		name     string
		runs     time.Duration
		expunged bool
	}{
		{"still in progress after job.expire.minutes", 5 * time.Minute, true},
		{"finished before job.expire.minutes", time.Minute, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, db, log, srv := jobGCWorld(t, map[string]string{"job.expire.minutes": "2"})
			srv.RunVmWorkForTest("caller-1", "VmWorkStop", 7, func(t *impl.Thread) error {
				s.Sleep(c.runs)
				return nil
			})
			require.NoError(t, s.RunFor(30*time.Second))
			require.True(t, srv.PendingWorkJobsForTest(7), "within job.expire.minutes the job is pending")
			require.NoError(t, s.RunFor(8*time.Minute))
			j := jobOf(db, "VmWorkStop")
			if !c.expunged {
				require.NotNil(t, j)
				require.Equal(t, job.Succeeded, j.Status)
				require.False(t, log.has("", "Expunging unfinished job"))
				return
			}
			require.Nil(t, j, "the unfinished job's row is expunged")
			require.False(t, srv.PendingWorkJobsForTest(7))
			require.True(t, log.has("AsyncJobMgr-Heartbeat-2", "Expunging unfinished job-"))
			require.True(t, log.has("Work-Job-Executor", "no longer exists"), "the thread's completion finds no row")
		})
	}
}

// TestJoinOfAnExpungedWorkJobEndsWithoutError pins what the caller of a VM work job sees when the
// job GC expunges the job under it (job.expire.minutes; AsyncJobManagerImpl.getGCTask →
// getExpiredUnfinishedJobs → expungeAsyncJob, apache/cloudstack@00114e8b3f9640cd01512a70f5981cc7c343abaa,
// framework/jobs/src/main/java/org/apache/cloudstack/framework/jobs/impl/AsyncJobManagerImpl.java).
// VirtualMachineManagerImpl.advanceStart and advanceStop (apache/cloudstack@3156c4ba62c07c065d1aac119b0dac31242797b3,
// engine/orchestration/src/main/java/com/cloud/vm/VirtualMachineManagerImpl.java) wait on the job's
// outcome: waitAndCheck ends when VmJobVirtualMachineOutcome's predicate finds no row (jobVo == null
// → true), and retrieveResultFromJobOutcomeAndThrowExceptionIfNeeded throws only what
// unmarshallResultObject(outcome.getJob()) returns — null for a job that is no longer there
// (OutcomeImpl.getJob reloads it). So the caller goes on as after a success, while the job's thread
// still runs: a deploy is not retried (VMEntityManagerImpl retries on an exception only), and reads
// the VM as it finds it. The reference failed the join with "job N is gone" until this change, so
// the API job started the VM again beside the first start's thread, whose late cleanup then stopped
// the second start's domain (explore --profile fixed --scheduler random --seed 2020275968866430551).
func TestJoinOfAnExpungedWorkJobEndsWithoutError(t *testing.T) {
	s, db, log, srv := jobGCWorld(t, map[string]string{"job.expire.minutes": "2"})
	var err error
	joined, finished := false, false
	srv.JoinVmWorkForTest("caller-1", "VmWorkStart", 7, func(t *impl.Thread) error {
		s.Sleep(5 * time.Minute)
		finished = true
		return nil
	}, &err, &joined)
	require.NoError(t, s.RunUntil(s.Now().Add(4*time.Minute), func() bool { return joined }))
	require.True(t, joined, "the caller's wait ends when the job's row is gone")
	require.NoError(t, err, "no result to unmarshal: no exception")
	require.Nil(t, jobOf(db, "VmWorkStart"))
	require.True(t, log.has("AsyncJobMgr-Heartbeat-2", "Expunging unfinished job-"))
	require.False(t, finished, "the job's thread still runs")
	require.NoError(t, s.RunFor(4*time.Minute))
	require.True(t, finished)
}

// AsyncJobManagerImpl.cleanupVirtualMachine (from cleanupResources, PR #8394; apache/cloudstack@04b49bc3):
// a VM left in a transitional state by a cancelled left-over job goes through
// stateTransitTo(vm, OperationFailed, vm.getHostId()): Starting → Stopped keeping host_id (the
// reference cleared it before). Under C2 (4.22) that is the VM web1, left Starting on h1 by a server
// killed during its deploy.
func TestCleanupLeftOverJobsKeepsHostID(t *testing.T) {
	sw := impl.Switches{impl.C2: true}
	_, db, log, id, _ := leftByDeadServer(t, nil, sw, "")
	v := db.VM(id)
	require.Equal(t, vm.Stopped, v.State)
	require.Equal(t, "h1", v.HostID, "cleanupVirtualMachine keeps host_id")
	require.True(t, log.has("main", "Cancel left-over job-"))
}
