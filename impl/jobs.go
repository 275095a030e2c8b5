package impl

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/csconform/csconform/model/job"
	"github.com/csconform/csconform/model/network"
	"github.com/csconform/csconform/model/vm"
)

// AsyncJobManager is AsyncJobManagerImpl: API jobs, VM work jobs serialised per VM on the
// VmWorkJobQueue and dispatched by the 2 s heartbeat, and the 10 s GC task that hosts the
// orphaned-network cleanup of PR #12409.
type AsyncJobManager struct {
	s      *Server
	mu     coopMutex             // guards queues, errs and each item's running; never held across an Env call
	queues map[int64][]*workItem // VmWorkJobQueue, keyed by VM id
	errs   map[int64]error       // a failed job's exception, as CloudStack serialises it into the result
}

type workItem struct {
	job     *JobVO
	fn      func(t *Thread) error
	running bool
	since   time.Time // when the heartbeat dispatched it (sync_queue_item.queue_proc_time)
}

// Heartbeat and GC periods (fixed in CloudStack).
const (
	HeartbeatInterval = 2 * time.Second
	GCInterval        = 10 * time.Second
)

func newAsyncJobManager(s *Server) *AsyncJobManager {
	return &AsyncJobManager{s: s, mu: coopMutex{env: s.Env, name: "the job queues' lock"}, queues: map[int64][]*workItem{}, errs: map[int64]error{}}
}

func (m *AsyncJobManager) start() {
	m.s.Go("AsyncJobMgr-Heartbeat-1", m.heartbeat)
	m.s.Go("AsyncJobMgr-Heartbeat-2", m.gcTask)
}

// SubmitAPIJob runs fn as an API job in its own executor thread and returns the job row at once.
func (m *AsyncJobManager) SubmitAPIJob(cmd, instanceType string, instanceID int64, fn func(t *Thread, j *JobVO) error) *JobVO {
	s := m.s
	name := s.nextThread("API-Job-Executor")
	j := s.DB.CreateJob(name, cmd, instanceType, instanceID, s.ID)
	s.Go(name, func(t *Thread) {
		err := fn(t, j)
		m.complete(t, j.ID, err)
	})
	return j
}

func (m *AsyncJobManager) complete(t *Thread, id int64, err error) {
	// completeAsyncJob: a job the GC cancelled or expunged meanwhile keeps what the GC wrote
	if j := m.s.DB.Job(id); j == nil {
		m.s.Log(t, "DEBUG", JobObject(id), "job-%d no longer exists, we just log completion info here.", id)
		return
	} else if j.Status.Done() {
		m.s.Log(t, "DEBUG", JobObject(id), "job-%d is already completed.", id)
		return
	}
	if err != nil {
		m.mu.Lock()
		m.errs[id] = err
		m.mu.Unlock()
		m.s.DB.CompleteJob(t.Name, id, job.Failed, 530, err.Error())
		return
	}
	m.s.DB.CompleteJob(t.Name, id, job.Succeeded, 0, "")
}

// JobError is the exception a failed job ended with (nil while running or on success).
func (m *AsyncJobManager) JobError(id int64) error {
	m.mu.Lock()
	err, ok := m.errs[id]
	m.mu.Unlock()
	if ok {
		return err
	}
	if j := m.s.DB.Job(id); j != nil && j.Status.Done() && j.Status != job.Succeeded {
		return errors.New(j.Result)
	}
	return nil
}

// JobGoneError is a job whose row was expunged while its caller polled it: the job GC expunges
// unfinished jobs older than job.expire.minutes (AsyncJobManagerImpl's GC task,
// AsyncJobDaoImpl.getExpiredUnfinishedJobs: IN_PROGRESS, created before the cut, whatever its
// executor is doing). The caller cannot learn the outcome: the work may still finish.
type JobGoneError struct{ ID int64 }

func (e *JobGoneError) Error() string { return fmt.Sprintf("job %d is gone", e.ID) }

// WaitJob polls a job every interval until it is done or timeout passes (cloudstack-go's
// queryAsyncJobResult loop, or a VM work job's VmStateSyncOutcome).
func (m *AsyncJobManager) WaitJob(id int64, interval, timeout time.Duration) (job.Status, error) {
	return m.waitJobOn(m.s.Env, id, interval, timeout)
}

// waitJobOn is WaitJob on env's clock: the server's, or an outside caller's.
func (m *AsyncJobManager) waitJobOn(env Env, id int64, interval, timeout time.Duration) (job.Status, error) {
	deadline := env.Now().Add(timeout)
	for {
		j := m.s.DB.Job(id)
		if j == nil {
			return job.Failed, &JobGoneError{ID: id}
		}
		if j.Status.Done() {
			return j.Status, m.JobError(id)
		}
		if timeout > 0 && !env.Now().Before(deadline) {
			return job.InProgress, &OperationTimedoutError{Host: "-", Cmd: j.Cmd}
		}
		env.Sleep(interval)
	}
}

// runVmWork is startVmThroughJobQueue / stopVmThroughJobQueue: a VmWork job on the VM's queue, joined
// by the caller, who polls it every vm.job.check.interval.
func (m *AsyncJobManager) runVmWork(t *Thread, cmd string, vmID int64, fn func(t *Thread) error) error {
	return m.joinVmWork(m.submitVmWork(t, cmd, vmID, fn))
}

// submitVmWork is the submit half of runVmWork: the job's row, and the job at the tail of the VM's
// queue for the heartbeat to dispatch.
func (m *AsyncJobManager) submitVmWork(t *Thread, cmd string, vmID int64, fn func(t *Thread) error) *JobVO {
	s := m.s
	j := s.DB.CreateJob(t.Name, cmd, "VirtualMachine", vmID, s.ID)
	m.mu.Lock()
	m.queues[vmID] = append(m.queues[vmID], &workItem{job: j, fn: fn})
	m.mu.Unlock()
	return j
}

// joinVmWork is the caller's half, VmStateSyncOutcome's get(): it polls the job every
// vm.job.check.interval until the job is done or gone, with no timeout. OutcomeImpl.get() passes
// waitAndCheck a timeout of -1 (wait for ever); vm.job.timeout is declared ("Time in milliseconds to
// wait before attempting to cancel a job") but no caller's wait reads it. So a stop or start queued
// behind a long work job keeps its caller — and whatever lock-table row the caller holds, as the
// network GC holds its network's — until that job ends or the job GC cancels it.
//
// A job the job GC expunged under its caller (job.expire.minutes) ends the wait with no error: the
// outcome's predicate takes a missing row for a finished job (VmJobVirtualMachineOutcome.checkCondition:
// jobVo == null → true), and retrieveResultFromJobOutcomeAndThrowExceptionIfNeeded throws only what
// unmarshallResultObject(outcome.getJob()) returns, null for a job that is no longer there. So
// advanceStart and advanceStop return as for a success while the job's thread may still run on: no
// retry of the start, the caller reads the VM as it finds it.
func (m *AsyncJobManager) joinVmWork(j *JobVO) error {
	_, err := m.WaitJob(j.ID, m.s.Config.Millis("vm.job.check.interval"), 0)
	if gone := (*JobGoneError)(nil); errors.As(err, &gone) {
		return nil
	}
	return err
}

// PendingWorkJobs reports whether a VM has an IN_PROGRESS work job (listPendingWorkJobs).
func (m *AsyncJobManager) PendingWorkJobs(vmID int64) bool {
	return len(m.s.DB.JobsFor("VirtualMachine", vmID, pendingWorkJob)) > 0
}

// pendingWorkJob: a VM work job still IN_PROGRESS (vm_work_job joined to async_job), what
// listPendingWorkJobs and listVmIdsWithPendingJob select.
func pendingWorkJob(j *JobVO) bool {
	return j.Status == job.InProgress && strings.HasPrefix(j.Cmd, "VmWork")
}

// MaxOnetimeScheduleSize is AsyncJobManagerImpl's MAX_ONETIME_SCHEDULE_SIZE: at most this many queue
// items are taken per heartbeat (dequeueFromAny(msid, 50)).
const MaxOnetimeScheduleSize = 50

// nextQueueItems is SyncQueueItemDaoImpl.getNextQueueItems(max) under m.mu: the queues with an item
// not in process, one row each, in item order (ORDER BY i.id; an item's job is created with it, so
// the job id stands for the item id), at most max. A queue whose head runs still takes a place when
// an item waits behind it, and dequeueFromAny then skips it (its active count is at its limit, 1), as
// the Java's LIMIT is applied before that check.
func (m *AsyncJobManager) nextQueueItems(max int) map[int64]bool {
	type row struct{ vm, item int64 }
	var rows []row
	for id, q := range m.queues {
		for _, w := range q {
			if !w.running {
				rows = append(rows, row{id, w.job.ID})
				break
			}
		}
	}
	slices.SortFunc(rows, func(a, b row) int { return cmp.Compare(a.item, b.item) })
	picked := make(map[int64]bool, min(len(rows), max))
	for _, r := range rows[:min(len(rows), max)] {
		picked[r.vm] = true
	}
	return picked
}

// heartbeat dispatches the head of each VM's queue (at most one work job per VM runs at a time), of at
// most MaxOnetimeScheduleSize queues a tick.
func (m *AsyncJobManager) heartbeat(t *Thread) {
	s := m.s
	for {
		s.Env.Sleep(HeartbeatInterval)
		m.mu.Lock()
		idle := len(m.queues) == 0
		m.mu.Unlock()
		if idle {
			continue // no queue, no head to start: most ticks of a run (what follows would find none)
		}
		// Pick the heads under the lock, then start them in VM id order (the order the simulator's
		// schedule depends on) without it.
		var heads []*workItem
		var vmIDs []int64
		var blocked map[int64]bool
		if s.Clustered {
			blocked = m.blockedByPeers()
		}
		m.mu.Lock()
		picked := m.nextQueueItems(MaxOnetimeScheduleSize)
		for _, id := range slices.Sorted(maps.Keys(m.queues)) {
			q := m.queues[id]
			if len(q) == 0 || q[0].running || blocked[q[0].job.ID] || !picked[id] {
				continue
			}
			q[0].running = true
			q[0].since = s.Env.Now()
			heads = append(heads, q[0])
			vmIDs = append(vmIDs, id)
		}
		m.mu.Unlock()
		for i, w := range heads {
			vmID := vmIDs[i]
			name := s.nextThread("Work-Job-Executor")
			s.Go(name, func(t *Thread) {
				t.workJob = true
				err := w.fn(t)
				m.complete(t, w.job.ID, err)
				m.mu.Lock()
				defer m.mu.Unlock()
				q := m.queues[vmID]
				if len(q) > 0 && q[0] == w {
					m.queues[vmID] = q[1:]
				}
				if len(m.queues[vmID]) == 0 {
					m.dropQueue(vmID)
				}
			})
		}
	}
}

// blockedByPeers are the heads of this server's queues that another server's work job on the same
// VM, queued earlier, still holds back. CloudStack's VM work queue is one table (sync_queue_item,
// one active item per VM, in item order) whichever server queued the item; here each server keeps
// its queue in memory, and the earlier IN_PROGRESS VmWork row of a peer stands for the item ahead.
// A server that left holds its items until the GC cancels them (job.cancel.threshold.minutes), as
// in CloudStack.
func (m *AsyncJobManager) blockedByPeers() map[int64]bool {
	s := m.s
	type head struct{ vm, job int64 }
	var hs []head
	m.mu.Lock()
	for _, id := range slices.Sorted(maps.Keys(m.queues)) {
		if q := m.queues[id]; len(q) > 0 && !q[0].running {
			hs = append(hs, head{id, q[0].job.ID})
		}
	}
	m.mu.Unlock()
	blocked := map[int64]bool{}
	for _, h := range hs {
		if len(s.DB.JobsFor("VirtualMachine", h.vm, func(j *JobVO) bool {
			return j.Status == job.InProgress && j.MSID != s.ID && j.ID < h.job && strings.HasPrefix(j.Cmd, "VmWork")
		})) > 0 {
			blocked[h.job] = true
		}
	}
	return blocked
}

// gcTask is the GC task: every 10 s, among other things, the orphaned-network cleanup. It also runs
// VMMI's TransitionTask when due (every vm.op.cleanup.interval, read at start): CloudStack gives that
// task its own executor, but a thread of its own would move every simulated schedule for a task that
// fires once a day; here it fires up to 10 s late (docs/fidelity.md).
func (m *AsyncJobManager) gcTask(t *Thread) {
	period := m.s.Config.Seconds("vm.op.cleanup.interval")
	next := m.s.Env.Now().Add(period)
	for {
		m.s.Env.Sleep(GCInterval)
		release, ok := m.s.globalLock(t, "AsyncJobManagerGC")
		if !ok {
			continue // a peer runs this tick's GC
		}
		m.cancelBlockedQueueItems(t)
		m.expungeExpiredUnfinishedJobs(t)
		m.s.cleanupOrphanedNetworks(t)
		if !m.s.Env.Now().Before(next) {
			m.s.transitionTask(t)
			next = next.Add(period)
		}
		release()
	}
}

// BlockedJobResult is the result a job cancelled by the GC for blocking its queue ends with.
const BlockedJobResult = "Job is cancelled as it has been blocking others for too long"

// cancelBlockedQueueItems is the first step of the GC task (getBlockedQueueItems with
// job.cancel.threshold.minutes): a queue item in process for longer than the threshold has its job
// completed FAILED and is purged, so the next item of its queue is dispatched at the next heartbeat.
// The thread running the item is not interrupted: it runs on beside its successor, and its own
// completion later finds the job already done.
func (m *AsyncJobManager) cancelBlockedQueueItems(t *Thread) {
	s := m.s
	cut := s.Env.Now().Add(-time.Duration(s.Config.Int("job.cancel.threshold.minutes")) * time.Minute)
	var blocked []*workItem
	var vmIDs []int64
	m.mu.Lock()
	for _, id := range slices.Sorted(maps.Keys(m.queues)) {
		for _, w := range m.queues[id] {
			if w.running && w.since.Before(cut) && !mutated(MutJobGCKeepsBlockedItems) {
				blocked = append(blocked, w)
				vmIDs = append(vmIDs, id)
			}
		}
	}
	m.mu.Unlock()
	for i, w := range blocked {
		s.Log(t, "INFO", JobObject(w.job.ID), "Remove Job-%d from Queue-%d since it has been blocked for too long", w.job.ID, vmIDs[i])
		// completeAsyncJob(FAILED, 0, ...): JobError reads the result from the row
		s.DB.CompleteJob(t.Name, w.job.ID, job.Failed, 0, BlockedJobResult)
		m.purgeItem(vmIDs[i], w.job.ID)
	}
	m.cancelLeftServersBlockedItems(t, cut)
}

// cancelLeftServersBlockedItems is the part of getBlockedQueueItems a peer sees: sync_queue_item is a
// table, so the GC of any server cancels an item a server that left was processing. The queues are
// each server's memory here; the work job's row stands in for its item (queued at its creation,
// dispatched by the next heartbeat, so its age is the item's within 2 s). A running server's items
// are left to its own GC, which cancels them at the same age.
func (m *AsyncJobManager) cancelLeftServersBlockedItems(t *Thread, cut time.Time) {
	s := m.s
	if !s.Clustered || s.cluster == nil {
		return
	}
	for _, j := range s.DB.JobsInProgress(func(j *JobVO) bool {
		return j.MSID != s.ID && strings.HasPrefix(j.Cmd, "VmWork") && j.Created.Before(cut) && !s.cluster.isActive(j.MSID)
	}) {
		s.Log(t, "INFO", JobObject(j.ID), "Remove Job-%d from Queue-%d since it has been blocked for too long", j.ID, j.InstanceID)
		s.DB.CompleteJob(t.Name, j.ID, job.Failed, 0, BlockedJobResult)
	}
}

// expungeExpiredUnfinishedJobs is the second step of the GC task (getExpiredUnfinishedJobs, 100 a
// round, oldest first): an IN_PROGRESS job created job.expire.minutes ago or earlier is deleted with
// its queue item, whether or not a thread still runs it. Until then it counts as pending (a VM's power
// reports wait for it); after, nothing does. Completed jobs are not expunged here: nothing in the
// reference reads a completed job after its caller has (docs/fidelity.md).
func (m *AsyncJobManager) expungeExpiredUnfinishedJobs(t *Thread) {
	s := m.s
	key := "job.expire.minutes"
	if mutated(MutJobExpungeAtCancel) {
		key = "job.cancel.threshold.minutes"
	}
	cut := s.Env.Now().Add(-time.Duration(s.Config.Int(key)) * time.Minute)
	expired := s.DB.JobsInProgress(func(j *JobVO) bool { return j.Status == job.InProgress && !j.Created.After(cut) })
	slices.SortStableFunc(expired, func(a, b *JobVO) int { return a.Created.Compare(b.Created) })
	if len(expired) > 100 {
		expired = expired[:100]
	}
	if mutated(MutJobGCKeepsExpiredJobs) {
		expired = nil
	}
	for _, j := range expired {
		s.Log(t, "INFO", JobObject(j.ID), "Expunging unfinished job-%d", j.ID)
		s.DB.ExpungeJob(t.Name, j.ID)
		if j.InstanceType == "VirtualMachine" {
			m.purgeItem(j.InstanceID, j.ID)
		}
	}
}

// purgeItem removes a job's item from its VM's queue (purgeAsyncJobQueueItemId).
func (m *AsyncJobManager) purgeItem(vmID, jobID int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	q := m.queues[vmID]
	for i, w := range q {
		if w.job.ID == jobID {
			m.queues[vmID] = slices.Delete(slices.Clone(q), i, i+1)
			break
		}
	}
	if len(m.queues[vmID]) == 0 {
		m.dropQueue(vmID)
	}
}

// dropQueue forgets a VM's empty queue. The last one gone, the map is made anew: a Go map keeps the
// room of its busiest moment, and the heartbeat (every 2 s) walks all of it — after a deploy of
// thousands of VMs, for the rest of the run.
func (m *AsyncJobManager) dropQueue(vmID int64) {
	delete(m.queues, vmID)
	if len(m.queues) == 0 {
		m.queues = map[int64][]*workItem{}
	}
}

// cleanupLeftOverJobs cancels this server's IN_PROGRESS jobs after a restart and moves their objects
// out of transitional states (cleanupResources, PR #8394) (a network under its lock only with C14 fixed: cleanupNetwork).
func (m *AsyncJobManager) cleanupLeftOverJobs(t *Thread) { m.cleanupLeftOverJobsOf(t, m.s.ID) }

// cleanupLeftOverJobsOf is cleanupLeftOverJobs(msid): a server at start-up for its own previous
// incarnation, a peer for a server that left (onManagementNodeLeft).
func (m *AsyncJobManager) cleanupLeftOverJobsOf(t *Thread, msid string) {
	s := m.s
	for _, j := range s.DB.JobsInProgress(func(j *JobVO) bool { return j.MSID == msid && j.Status == job.InProgress }) {
		s.Log(t, "DEBUG", JobObject(j.ID), "Cancel left-over job-%d", j.ID)
		s.DB.CompleteJob(t.Name, j.ID, job.Failed, 530, "job cancelled because of management server restart or shutdown")
		switch j.InstanceType {
		case "VirtualMachine":
			v := s.DB.VM(j.InstanceID)
			if v != nil && v.State == vm.Starting && v.HostID != "" && !s.Defects[C2] && (!mutated(MutRestartStopsUnreported) || v.PowerState == vm.PowerOn) {
				// its StartCommand may have reached the host: leave it Starting for power sync
				s.Log(t, "INFO", VMObject(v.ID), "Leaving %s in Starting on host %s: its start may have run there; the host's reports will settle it", v.Name, v.HostID)
				continue
			}
			if v != nil && v.State.IsTransitional() {
				// cleanupVirtualMachine: stateTransitTo(vm, OperationFailed, vm.getHostId()) keeps
				// host_id, also on the way to Stopped
				if to, ok := vm.Next(v.State, vm.OperationFailed); ok {
					s.DB.UpdateVMState(t.Name, v, vm.OperationFailed, to, v.HostID)
				}
			}
		case "Network":
			m.cleanupNetwork(t, j.InstanceID)
		}
	}
}

// cleanupNetwork is cleanupResources' network branch (AsyncJobManagerImpl.cleanupNetwork,
// apache/cloudstack@04b49bc3): a network found Implementing goes OperationFailed → Shutdown, read and
// written without the network's lock. C14: the left-over job (a deleteNetwork waiting on the lock
// when its server went) never implemented the network; a live start on another server may be doing
// so under the lock, and finds its network Shutdown. The fix tries the lock without waiting: a holder
// is a live operation on the network, which settles the state itself.
func (m *AsyncJobManager) cleanupNetwork(t *Thread, id int64) {
	s := m.s
	if !s.Defects[C14] {
		key := NetworkLockKey(id)
		if !s.DB.TryLock(key, s.ID, t.Name) {
			s.Log(t, "DEBUG", NetworkObject(id), "Network %d is locked by a running operation; its state is left to it", id)
			return
		}
		defer s.releaseFromLockTable(t, key)
	}
	n := s.DB.Network(id)
	if n != nil && n.State == network.Implementing {
		s.Log(t, "DEBUG", NetworkObject(id), "Cleaning up Network with Id: %d", id)
		s.DB.UpdateNetworkState(t.Name, n, network.Shutdown, "cleanupResources: OperationFailed", false)
	}
}
