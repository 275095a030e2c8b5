package impl

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/csconform/csconform/model/host"
	"github.com/csconform/csconform/model/vm"
)

// HighAvailabilityManagerImpl: the HA work queue (op_ha_work, hawork.go), its workers, restart with investigation
// and the CheckStop of a start that timed out (scheduleStop, stopVM),
// and fencing. Read: apache/cloudstack server/.../ha/HighAvailabilityManagerImpl.java at 04913a45
// (scheduleRestartForVmsOnHost, scheduleRestart, restart, checkAndCancelWorkIfNeeded), KVMFencer at
// 4108507240's copy (fenceOff: FenceCommand to every other Up KVM host of the cluster, the first
// result=true fences), KVMInvestigator.isVmAlive (isAgentAlive: Up → alive, else UnknownVM).
//
// Divergences: a server starts its ha.workers workers when it first has work for them — an item
// scheduled, or rows released at start or from a peer that left — not at start-up (an idle worker
// only sleeps); of ha.investigators.order's default (SimpleInvestigator, XenServerInvestigator,
// KVMInvestigator, HypervInvestigator, VMwareInvestigator, PingInvestigator,
// ManagementIPSysVMInvestigator, Ovm3Investigator) the ones that answer for a KVM user VM are modelled:
// SimpleInvestigator (CheckOnAgentInvestigator), KVMInvestigator and PingInvestigator
// (UserVmDomRInvestigator); volumes are on shared storage (no local-storage skip).

type haStep string

// haWorkType is HighAvailabilityManager.WorkType: a restart (HA) or a check that a VM stopped.
type haWorkType string

const (
	haRestart   haWorkType = "HA"
	haCheckStop haWorkType = "CheckStop"
)

// HaWorkVO.Step values.
const (
	haInvestigating haStep = "Investigating"
	haScheduled     haStep = "Scheduled"
	haDone          haStep = "Done"
	haCancelled     haStep = "Cancelled"
)

// reasonHostDown is ReasonType.HostDown, one of CancellableWorkReasonTypes: an item for it is
// cancelled once its host investigates Up again. Restarts for an out-of-band stop have no reason.
const reasonHostDown = "HostDown"

// haMaxRetries is max.retries: a work item tried more often is given up.
const haMaxRetries = 5

// HighAvailabilityManager is HighAvailabilityManagerImpl.
type HighAvailabilityManager struct {
	s *Server
	// mu guards the fields below; never held across a call into Env.
	mu      coopMutex
	wake    []Signal // each sleeping worker's
	running bool
}

func newHighAvailabilityManager(s *Server) *HighAvailabilityManager {
	return &HighAvailabilityManager{s: s, mu: coopMutex{env: s.Env, name: "the HA manager's lock"}}
}

// hasPendingHaWork: a restart item for the VM is not Done or Cancelled (it postpones power reports);
// listPendingHaWorkForVm asks for type HA only, so a CheckStop does not count. v is the VM's row as
// the caller read it. C8's fix counts an item only while a worker runs it or the VM is still as the
// item saw it (update count): restart() discards an item whose VM has changed since ("VM has been
// changed"), so waiting for one only keeps the VM's new life from power sync — for up to
// restart.retry.interval when the item was rescheduled.
func (m *HighAvailabilityManager) hasPendingHaWork(v *VMVO) bool {
	return slices.ContainsFunc(m.s.DB.HaWorkOf(v.ID), func(w *HaWorkVO) bool {
		return w.pending(haRestart) && (m.s.Defects[C8] || w.running() || w.PrevUpdate == v.UpdateCount)
	}) // the checker's detect.HaRestartHolds is the same test with C8 off, written apart
}

// recapture takes the VM's state and update count anew after a failed try, so the next one
// compares with what the VM is then (processWork's catch; written back with the row).
func (m *HighAvailabilityManager) recapture(w *HaWorkVO) {
	if cur := m.s.DB.VM(w.VMID); cur != nil {
		w.PrevState, w.PrevUpdate = cur.State, cur.UpdateCount
	}
}

// scheduleStop is scheduleStop(vm, hostId, CheckStop): an item that will stop the VM if, when the
// worker takes it, the VM is still as it was now (state, update count, host). orchestrateStart
// schedules one when its StartCommand timed out (OperationTimedoutException.isActive, which a
// non-sequential command - every KVM start - always has). One CheckStop per VM not taken by a worker
// (hasBeenScheduled: a row of the type whose taken column is null).
func (m *HighAvailabilityManager) scheduleStop(t *Thread, v *VMVO, hostID string) {
	s := m.s
	if slices.ContainsFunc(s.DB.HaWorkOf(v.ID), func(w *HaWorkVO) bool { return w.Type == haCheckStop && w.DateTaken.IsZero() }) {
		s.Log(t, "INFO", VMObject(v.ID), "There's already a job scheduled to stop %s", v.Name)
		return
	}
	w := s.DB.PersistHaWork(HaWorkVO{Type: haCheckStop, VMID: v.ID, HostID: hostID, Step: haScheduled, PrevState: v.State,
		PrevUpdate: v.UpdateCount, TimeToTry: s.Env.Now()})
	s.Log(t, "DEBUG", VMObject(v.ID), "Scheduled %s", w)
	m.wakeupWorkers()
}

// stopVM is HighAvailabilityManagerImpl.stopVM for CheckStop: a VM that changed since the item was
// scheduled is left alone; otherwise an unforced advanceStop. A failure is tried again after
// stop.retry.interval with the VM's state and update count taken anew (processWork's catch).
func (m *HighAvailabilityManager) stopVM(t *Thread, w *HaWorkVO) time.Time {
	s := m.s
	v := s.DB.VM(w.VMID)
	if v == nil || v.Removed {
		s.Log(t, "INFO", VMObject(w.VMID), "No longer can find VM %d. Throwing away %s", w.VMID, w)
		return time.Time{}
	}
	s.Log(t, "INFO", VMObject(v.ID), "Stopping %s", v.Name)
	if v.State != w.PrevState || v.UpdateCount != w.PrevUpdate || v.HostID == "" || v.HostID != w.HostID {
		cur := v.HostID
		if cur == "" {
			cur = "none"
		}
		s.Log(t, "INFO", VMObject(v.ID), "%s is different now.  Scheduled Host: %s Current Host: %s State: %s", v.Name, w.HostID, cur, v.State)
		return time.Time{}
	}
	if err := s.advanceStop(t, v.ID, unforced); err != nil {
		s.Log(t, "WARN", VMObject(v.ID), "Encountered unhandled exception during HA process, reschedule work: %v", err)
		m.recapture(w)
		return s.Env.Now().Add(s.Config.Seconds("stop.retry.interval"))
	}
	s.Log(t, "INFO", VMObject(v.ID), "Stop for %s was successful", v.Name)
	return time.Time{}
}

// scheduleRestartForVmsOnHost: every VM the host holds gets an HA item (with investigation when
// asked); the host-down alert names the HA-enabled ones.
func (m *HighAvailabilityManager) scheduleRestartForVmsOnHost(t *Thread, hostID string, investigate bool) {
	s := m.s
	s.Log(t, "WARN", HostObject(hostID), "Scheduling restart for VMs on host %s", hostID)
	all := s.DB.VMs(func(v *VMVO) bool { return !v.Removed && v.HostID == hostID })
	// A VM whose last pending restart item of this host has not been tried max.retries times is
	// skipped (vmHasPendingHAJob: "Skipping HA on … as there is already a running HA job for it"); the
	// alert too when every VM was skipped. canScheduleNew is not modelled: a pending item here is
	// always below max.retries (processWork ends it Done at max.retries).
	pending := s.DB.PendingHaWorkForHost(hostID)
	var vms []*VMVO
	for _, v := range all {
		last := -1
		for i, w := range pending {
			if w.VMID == v.ID {
				last = i
			}
		}
		if last >= 0 && pending[last].TimesTried < haMaxRetries {
			s.Log(t, "DEBUG", VMObject(v.ID), "Skipping HA on %s as there is already a running HA job for it", v.Name)
			continue
		}
		vms = append(vms, v)
	}
	if len(vms) == 0 && len(all) > 0 {
		s.Log(t, "DEBUG", HostObject(hostID), "Skipping sending alert for %s as it is suspected to be a duplicate of a recent alert", hostID)
		return
	}
	// system VMs first (reorderedVMList)
	slices.SortStableFunc(vms, func(a, b *VMVO) int { return cmp.Compare(b2i(a.Type == "User"), b2i(b.Type == "User")) })
	var ha []string
	for _, v := range vms {
		if v.HAEnabled {
			ha = append(ha, v.Name)
		}
	}
	s.Log(t, "WARN", HostObject(hostID), "ALERT: Host is down, %s. Starting HA on the following VMs: %v", hostID, ha)
	for _, v := range vms {
		cur := s.DB.VM(v.ID)
		if cur == nil || cur.Removed {
			continue
		}
		if cur.HostID != "" && cur.HostID != hostID {
			s.Log(t, "DEBUG", VMObject(v.ID), "VM %s is not on down host %s it is on other host %s VM HA is done", cur.Name, hostID, cur.HostID)
			continue
		}
		if mutated(MutHaHostDownStopsHaVMs) && cur.HAEnabled {
			m.forceStop(t, cur.ID)
			continue
		}
		s.Log(t, "DEBUG", VMObject(v.ID), "Notifying HA Mgr of to restart vm %s", cur.Name)
		m.scheduleRestart(t, cur, investigate, reasonHostDown)
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// scheduleRestart queues an HA item for the VM; without investigation the VM is force-stopped first.
func (m *HighAvailabilityManager) scheduleRestart(t *Thread, v *VMVO, investigate bool, reason string) {
	m.finishScheduleRestart(t, v, investigate, reason, m.beginScheduleRestart(t, v))
}

// beginScheduleRestart is scheduleRestart up to the forced stop of a VM with no host id: that stop's
// VmWork job queued, not joined (nil: the VM has a host). finishScheduleRestart joins it and goes on.
func (m *HighAvailabilityManager) beginScheduleRestart(t *Thread, v *VMVO) *JobVO {
	s := m.s
	s.Log(t, "DEBUG", VMObject(v.ID), "HA schedule restart")
	if v.HostID != "" {
		return nil
	}
	s.Log(t, "DEBUG", VMObject(v.ID), "Found a vm that is scheduled to be restarted but has no host id: %s", v.Name)
	return s.submitStop(t, v.ID, forcedCleanup) // the HA manager's own decision, as in forceStop
}

// finishScheduleRestart is the rest of scheduleRestart, from the join of the forced stop begun by
// beginScheduleRestart (stop nil: none).
func (m *HighAvailabilityManager) finishScheduleRestart(t *Thread, v *VMVO, investigate bool, reason string, stop *JobVO) {
	s := m.s
	hostID := v.HostID
	if stop != nil {
		m.forceStopped(t, v.ID, s.jobs.joinVmWork(stop))
	}
	if !investigate {
		s.Log(t, "DEBUG", VMObject(v.ID), "VM does not require investigation so I'm marking it as Stopped: %s", v.Name)
		if !v.HAEnabled {
			s.Log(t, "WARN", VMObject(v.ID), "ALERT: VM %s stopped unexpectedly on host %s", v.Name, v.HostID)
		}
		m.forceStop(t, v.ID)
		if cur := s.DB.VM(v.ID); cur != nil {
			v = cur
		}
	}
	if hostID == "" {
		hostID = v.LastHostID
	}
	step := haScheduled
	if investigate {
		step = haInvestigating
	}
	w := s.DB.PersistHaWork(HaWorkVO{Type: haRestart, VMID: v.ID, HostID: hostID, Step: step, PrevState: v.State, PrevUpdate: v.UpdateCount,
		TimeToTry: s.Env.Now(), Reason: reason})
	s.Log(t, "INFO", VMObject(v.ID), "Schedule vm for HA: %s (%s)", v.Name, w)
	m.wakeupWorkers()
}

func (m *HighAvailabilityManager) forceStop(t *Thread, vmID int64) {
	m.forceStopped(t, vmID, m.s.advanceStop(t, vmID, forcedCleanup)) // the HA manager's own decision, as a failed start's cleanup is
}

// forceStopped logs a forced stop's failure.
func (m *HighAvailabilityManager) forceStopped(t *Thread, vmID int64, err error) {
	if err != nil {
		m.s.Log(t, "WARN", VMObject(vmID), "HA: forced stop of VM %d failed: %v", vmID, err)
	}
}

// wakeupWorkers wakes the workers, starting ha.workers of them on first use.
func (m *HighAvailabilityManager) wakeupWorkers() {
	m.mu.Lock()
	start := !m.running
	m.running = true
	wake := m.wake
	m.wake = nil
	m.mu.Unlock()
	if start {
		for i := range m.s.Config.Int("ha.workers") {
			m.s.Go(fmt.Sprintf("HA-Worker-%d", i), m.workerThread)
		}
		return
	}
	for _, w := range wake {
		w.Fire()
	}
}

// wakeupIfWork starts or wakes the workers when some row is there to take, now or later: at start-up
// (the Java's workers start with the server) and after a peer's rows were released.
func (m *HighAvailabilityManager) wakeupIfWork() {
	if m.s.DB.HasOpenHaWork() {
		m.wakeupWorkers()
	}
}

// workerThread is WorkerThread.runWithContext: take a row, or sleep time.to.sleep (woken early by
// wakeupWorkers).
func (m *HighAvailabilityManager) workerThread(t *Thread) {
	s := m.s
	for {
		w := s.DB.TakeHaWork(s.ID)
		if w == nil {
			sig := s.Env.NewSignal()
			m.mu.Lock()
			m.wake = append(m.wake, sig)
			m.mu.Unlock()
			sig.Wait(s.Config.Seconds("time.to.sleep"))
			continue
		}
		m.processWork(t, w)
	}
}

func (m *HighAvailabilityManager) processWork(t *Thread, w *HaWorkVO) {
	s := m.s
	s.Log(t, "INFO", VMObject(w.VMID), "Processing work %s", w)
	var next time.Time
	if w.Type == haCheckStop {
		next = m.stopVM(t, w)
	} else {
		next = m.restart(t, w)
	}
	switch {
	case w.Step == haCancelled:
	case next.IsZero():
		w.Step = haDone
	default: // rescheduleWork hands the row back, then the finally gives up after max.retries tries
		w.TimeToTry = next
		w.TimesTried++
		w.ServerID, w.DateTaken = "", time.Time{}
		if w.TimesTried >= haMaxRetries || (mutated(MutHaGiveUpEarly) && w.TimesTried >= 2) {
			w.Step = haDone
		}
	}
	s.DB.UpdateHaWork(w)
	switch {
	case w.Step == haDone && !next.IsZero():
		s.Log(t, "WARN", VMObject(w.VMID), "Giving up, retried max times for work: %s", w)
	case w.Step == haDone:
		s.Log(t, "INFO", VMObject(w.VMID), "Completed work %s", w)
	case w.Step != haCancelled:
		s.Log(t, "INFO", VMObject(w.VMID), "Rescheduling work %s to try again at %s", w, next.Format("15:04:05"))
	}
}

// restart is HighAvailabilityManagerImpl.restart: a zero time is done, else when to try again.
func (m *HighAvailabilityManager) restart(t *Thread, w *HaWorkVO) time.Time {
	s := m.s
	s.Log(t, "DEBUG", VMObject(w.VMID), "RESTART with HAWORK")
	// listFutureHaWorkForVm and listRunningHaWorkForVm look at rows of type HA only
	rows := s.DB.HaWorkOf(w.VMID)
	newer := slices.ContainsFunc(rows, func(o *HaWorkVO) bool { return o.Type == haRestart && o.ID > w.ID })
	other := slices.ContainsFunc(rows, func(o *HaWorkVO) bool { return o.ID != w.ID && o.Type == haRestart && o.running() })
	if newer {
		s.Log(t, "INFO", VMObject(w.VMID), "Cancelling this work item because newer ones have been scheduled.")
		return time.Time{}
	}
	if other {
		s.Log(t, "INFO", VMObject(w.VMID), "Waiting because there's HA work being executed on an item currently.")
		return s.Env.Now().Add(s.Config.Seconds("investigate.retry.interval"))
	}
	v := s.DB.VM(w.VMID)
	if v == nil || v.Removed {
		s.Log(t, "INFO", VMObject(w.VMID), "Unable to find vm: %d", w.VMID)
		return time.Time{}
	}
	if m.checkAndCancelWorkIfNeeded(t, w) {
		return time.Time{}
	}
	s.Log(t, "INFO", VMObject(v.ID), "HA on %s", v.Name)
	if v.State != w.PrevState || v.UpdateCount != w.PrevUpdate {
		s.Log(t, "INFO", VMObject(v.ID), "VM %s has been changed.  Current State = %s Previous State = %s last updated = %d previous updated = %d",
			v.Name, v.State, w.PrevState, v.UpdateCount, w.PrevUpdate)
		return time.Time{}
	}
	h := s.DB.Host(w.HostID)
	removed := h == nil || h.Status == host.Removed
	if w.Step == haInvestigating {
		if !removed {
			if v.HostID != w.HostID {
				s.Log(t, "INFO", VMObject(v.ID), "VM %s is now no longer on host %s", v.Name, w.HostID)
				return time.Time{}
			}
			alive, known := m.isVmAlive(t, v, w.HostID)
			fenced := false
			switch {
			case !known:
				s.Log(t, "DEBUG", VMObject(v.ID), "Fencing off VM that we don't know the state of")
				fenced = m.fenceOff(t, v, w.HostID)
				s.Log(t, "INFO", VMObject(v.ID), "Fencer KVMFenceBuilder returned %v", fenced)
			case !alive:
				fenced = true
			default:
				s.Log(t, "DEBUG", VMObject(v.ID), "VM %s is found to be alive by the investigators", v.Name)
				if h.Status == host.Up {
					s.Log(t, "INFO", VMObject(v.ID), "%s is alive and host is up. No need to restart it.", v.Name)
					return time.Time{}
				}
				s.Log(t, "DEBUG", VMObject(v.ID), "Rescheduling because the host is not up but the vm is alive")
				return s.Env.Now().Add(s.Config.Seconds("investigate.retry.interval"))
			}
			if !fenced {
				s.Log(t, "WARN", VMObject(v.ID), "ALERT: Unable to restart %s which was running on host %s: we were unable to fence off the VM", v.Name, w.HostID)
				return s.Env.Now().Add(s.Config.Seconds("restart.retry.interval"))
			}
		} else {
			s.Log(t, "DEBUG", VMObject(v.ID), "How come that HA step is Investigating and the host is removed? Calling forced Stop on Vm anyways")
		}
		if err := s.advanceStop(t, v.ID, forcedCleanup); err != nil {
			// The Java's advanceStop throws (a Starting VM: "not in 'Stopping' state") and restart does
			// not catch it: processWork reschedules the item, no restart this round.
			return m.unhandled(t, w, err)
		}
		if removed {
			// The Java leaves the step Investigating on this branch.
			return m.afterForcedStop(t, w, v)
		}
		w.Step = haScheduled
		s.DB.UpdateHaWork(w)
	}
	return m.afterForcedStop(t, w, v)
}

// unhandled is processWork's catch of an exception restart threw: the item goes back for
// restart.retry.interval (getRescheduleTime(HA)). Under H3 it keeps the state and update count of the
// VM as processWork read it before restart ran — the item's own, since restart got this far only when
// they matched — so a try that moved the VM is "changed" at the next one (apache main since the
// vm.ha.enabled gate). The fix is the catch of the releases before it, whose comment says why: "if
// restart failed in the middle due to exception, VM state may has been changed; recapture into the HA
// worker so that it can really continue in it next turn" (_instanceDao.findById in the catch), for a
// VM the try left Stopped: re-read always, with C8's fix an item that holds the VM's reports while it
// is unchanged kept a VM whose migration completed in the hypervisor on its source for
// restart.retry.interval (harness TestTimedOutMigrationCompletesInTheHypervisor).
func (m *HighAvailabilityManager) unhandled(t *Thread, w *HaWorkVO, err error) time.Time {
	m.s.Log(t, "WARN", VMObject(w.VMID), "Encountered unhandled exception during HA process, reschedule work: %v", err)
	if !m.s.Defects[H3] {
		// H3's fix: a VM the try left Stopped is HA's to restart at the next one; a VM that is up again
		// (a forced stop that failed) keeps the old capture and is left to power sync, which the
		// item's hold (C8's fix) would keep from following it to another host for the whole interval
		if cur := m.s.DB.VM(w.VMID); cur != nil && cur.State == vm.Stopped {
			m.recapture(w)
		}
	}
	return m.s.Env.Now().Add(m.s.Config.Seconds("restart.retry.interval"))
}

// afterForcedStop is the rest of restart: an HA-enabled VM is started again, in the worker's thread
// (startVm: advanceStart queues the VmWorkStart job and waits for it). canVmRestartOnAnotherServer is
// always true here (shared storage), and the HaTag and HaOperation params change nothing the reference
// models. startVm's InsufficientCapacityException makes restart start the VM once more with the HA
// planner (the same planner here). What restart catches — InsufficientCapacityException,
// ResourceUnavailableException (AgentUnavailableException), ConcurrentOperationException,
// OperationTimedoutException — or a start that returned with the VM not Running has the item take the
// VM's state and update count anew and try again after restart.retry.interval; a CloudRuntimeException
// goes through to processWork's catch (unhandled), which keeps the item's own.
func (m *HighAvailabilityManager) afterForcedStop(t *Thread, w *HaWorkVO, v *VMVO) time.Time {
	s := m.s
	v = s.DB.VM(v.ID)
	if !v.HAEnabled {
		s.Log(t, "DEBUG", VMObject(v.ID), "VM is not HA enabled so we're done.")
		return time.Time{}
	}
	err := s.advanceStart(t, v.ID, "")
	var ic *InsufficientCapacityError
	if errors.As(err, &ic) {
		s.Log(t, "WARN", VMObject(v.ID), "Failed to deploy vm %s with original planner, sending HAPlanner", v.Name)
		err = s.advanceStart(t, v.ID, "")
	}
	switch {
	case err == nil:
		if started := s.DB.VM(v.ID); started != nil && started.State == vm.Running {
			s.Log(t, "INFO", VMObject(v.ID), "HA is now restarting %s on %s", started.Name, started.HostID)
			return time.Time{}
		}
		s.Log(t, "DEBUG", VMObject(v.ID), "Rescheduling VM %s to try again in %s", v.Name, s.Config.Seconds("restart.retry.interval"))
	case uncaughtByRestart(err):
		return m.unhandled(t, w, err)
	default:
		s.Log(t, "WARN", VMObject(v.ID), "Unable to restart %s due to %v", v.Name, err)
	}
	if mutated(MutHaNoRecaptureAfterFailure) {
		return s.Env.Now().Add(s.Config.Seconds("restart.retry.interval"))
	}
	m.recapture(w)
	return s.Env.Now().Add(s.Config.Seconds("restart.retry.interval"))
}

// uncaughtByRestart: a CloudRuntimeException (not the ConcurrentOperationException that extends it),
// which none of restart's catch blocks names. An error of no known class — a job the GC cancelled or
// expunged under the start — is left with the caught ones: what advanceStart throws for it was not read.
func uncaughtByRestart(err error) bool {
	var re *CloudRuntimeError
	return errors.As(err, &re)
}

// checkAndCancelWorkIfNeeded: an Investigating item for a host-down whose host investigates Up again
// is cancelled.
func (m *HighAvailabilityManager) checkAndCancelWorkIfNeeded(t *Thread, w *HaWorkVO) bool {
	if w.Step != haInvestigating || w.Reason != reasonHostDown {
		return false
	}
	if m.s.investigateHost(t, w.HostID) != host.Up {
		return false
	}
	m.s.Log(t, "DEBUG", VMObject(w.VMID), "Cancelling %s as it is not needed anymore", w)
	w.Step = haCancelled
	m.s.DB.UpdateHaWork(w)
	return true
}

// isVmAlive runs the investigators in order; known=false is every one throwing UnknownVM.
// CheckOnAgentInvestigator asks the VM's host (CheckVirtualMachineCommand); KVMInvestigator says
// alive when the host's agent is judged Up, and does not know otherwise; PingInvestigator has the
// guest's router ping it.
func (m *HighAvailabilityManager) isVmAlive(t *Thread, v *VMVO, hostID string) (alive, known bool) {
	s := m.s
	ans, err := s.agents.Send(t, hostID, Message{Kind: MsgCheckVM, VMName: v.Name}, s.Config.CommandTimeout(MsgCheckVM))
	if err == nil && ans.Result {
		s.Log(t, "INFO", VMObject(v.ID), "SimpleInvestigator found %s to be alive? %v", v.Name, ans.Power == vm.PowerOn)
		return ans.Power == vm.PowerOn, true
	}
	s.Log(t, "INFO", VMObject(v.ID), "SimpleInvestigator could not find %s", v.Name)
	if s.kvmIsAgentAlive(t, hostID) == host.Up {
		s.Log(t, "INFO", VMObject(v.ID), "KVMInvestigator found %s to be alive? true", v.Name)
		return true, true
	}
	s.Log(t, "INFO", VMObject(v.ID), "KVMInvestigator could not find %s", v.Name)
	// XenServer-, Hyperv- and VMwareInvestigator throw UnknownVM for a KVM VM (not logged here)
	if m.pingInvestigator(t, v) {
		s.Log(t, "INFO", VMObject(v.ID), "PingInvestigator found %s to be alive? true", v.Name)
		return true, true
	}
	s.Log(t, "INFO", VMObject(v.ID), "PingInvestigator could not find %s", v.Name)
	// ManagementIPSysVMInvestigator (system VMs) and Ovm3Investigator are not modelled: unknown
	return false, false
}

// pingInvestigator is UserVmDomRInvestigator.isVmAlive (the "PingInvestigator" bean of
// ha.investigators.order): for a user VM, each guest NIC with an address has its network's router,
// through the router's host (KVM: router.getHostId() only), ping that address (testUserVM's
// PingTestCommand through easySend); an answer makes the VM alive. No answer is never "dead": true,
// or UnknownVM (false here).
func (m *HighAvailabilityManager) pingInvestigator(t *Thread, v *VMVO) bool {
	s := m.s
	if v.Type != "User" {
		s.Log(t, "DEBUG", VMObject(v.ID), "Not a User Vm, unable to determine state of %s returning null", v.Name)
		return false
	}
	s.Log(t, "DEBUG", VMObject(v.ID), "testing if %s is alive", v.Name)
	for _, nic := range s.DB.Nics(v.ID) {
		if nic.IP == "" {
			continue
		}
		n := s.DB.Network(nic.NetworkID)
		var r *VMVO
		if n != nil && n.RouterID != 0 {
			r = s.DB.VM(n.RouterID)
		}
		if r == nil || r.Removed {
			s.Log(t, "DEBUG", VMObject(v.ID), "Unable to find a router in network %d to ping %s", nic.NetworkID, v.Name)
			continue
		}
		if r.HostID != "" {
			ans := s.agents.easySend(t, r.HostID, Message{Kind: MsgPingTest, VMName: r.Name, PrivateIP: nic.IP}, 0)
			if ans != nil && ans.Result {
				s.Log(t, "DEBUG", VMObject(v.ID), "user vm's %s ip address %s  has been successfully pinged from the Virtual Router %s, returning that vm is alive", v.Name, nic.IP, r.Name)
				return true
			}
		}
		s.Log(t, "DEBUG", VMObject(v.ID), "%s could not be pinged, returning that it is unknown", v.Name)
	}
	s.Log(t, "DEBUG", VMObject(v.ID), "Returning null since we're unable to determine state of %s", v.Name)
	return false
}

// fenceOff is KVMFencer.fenceOff: a FenceCommand to each other Up host; the first result=true fences.
// A KVM "fence" kills nothing: the neighbour only checks that the host's storage heartbeat stopped
// (LibvirtFenceCommandWrapper). With H1 off the neighbour also requires that the VM's volumes are
// not being written (the activity check KVM host HA already has, CheckVMActivityOnStoragePoolCommand).
func (m *HighAvailabilityManager) fenceOff(t *Thread, v *VMVO, hostID string) bool {
	s := m.s
	asked := 0
	for _, h := range s.DB.Hosts() {
		if h.Status != host.Up {
			continue
		}
		asked++
		if h.ID == hostID {
			continue
		}
		ans, err := s.agents.Send(t, h.ID, Message{Kind: MsgFence, Target: hostID, VMName: v.Name, CheckActivity: !s.Defects[H1]}, s.Config.CommandTimeout(MsgFence))
		if err != nil {
			s.Log(t, "INFO", HostObject(h.ID), "Moving on to the next host because %s is unavailable", h.ID)
			continue
		}
		if ans.Result {
			return true
		}
	}
	s.Log(t, "WARN", HostObject(hostID), "ALERT: Unable to fence off host: %s. Fencing off host %s did not succeed after asking %d hosts.", hostID, hostID, asked)
	s.Log(t, "ERROR", VMObject(v.ID), "Unable to fence off %s on %s", v.Name, hostID)
	return false
}

// restartOnPowerOff is the HA shortcut of handlePowerOffReportWithNoPendingJobsOnVM: an HA-enabled
// Running VM reported off is restarted by HA (with investigation) instead of being synced to Stopped.
func (m *HighAvailabilityManager) restartOnPowerOff(t *Thread, v *VMVO) bool {
	s := m.s
	if !v.HAEnabled || v.State != vm.Running || !s.Config.Bool("ha.vm.restart.hostup") || mutated(MutHaPowerOffNoRestart) {
		return false
	}
	s.Log(t, "INFO", VMObject(v.ID), "Detected out-of-band stop of a HA enabled VM %s, will schedule restart.", v.Name)
	if m.hasPendingHaWork(v) {
		s.Log(t, "INFO", VMObject(v.ID), "VM %s already has a pending HA task working on it.", v.Name)
		return true
	}
	m.scheduleRestart(t, v, true, "")
	return true
}
