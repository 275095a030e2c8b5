package impl

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/csconform/csconform/model/vm"
)

// Power-state sync (VirtualMachinePowerStateSyncImpl, spec 3.11) and the reactions to it (3.12).

// processHostVmStateReport handles a report of powered-on domains; force is the ping's outOfBand flag.
func (s *Server) processHostVmStateReport(t *Thread, hostID string, report []string, collected time.Time, force bool) {
	reported := make([]int64, 0, len(report))
	var unknown []string
	memo := s.takeReportMemo(hostID, len(report))
	defer s.putReportMemo(hostID, memo)
	hints := memo.hints
	for i, name := range report {
		if id, ok := s.DB.VMIDByNameHinted(name, &hints[i]); ok {
			reported = append(reported, id)
		} else {
			unknown = append(unknown, name)
		}
	}
	s.reportUnknownInstances(t, hostID, unknown)
	s.logText(t, "DEBUG", memo.object, memo.line(hostID, len(report), force))
	now := s.Env.Now()
	for _, id := range reported {
		if !s.Defects[C3] && s.reportPredatesStateChange(t, id, collected) {
			continue
		}
		if s.DB.UpdatePowerState(t.Name, id, vm.PowerOn, hostID, now) {
			s.publishVmPowerState(t, id)
		}
	}
	s.processMissingVmReport(t, hostID, reported, force)
}

// reportMemo is what power sync keeps of a host's last report: the name hints (it looks up the same
// names at every ping) and the report's log line, which is the same line ping after ping on a quiet
// host (three quarters of a scale run's history; formatting each was a string per event kept for the
// whole run).
type reportMemo struct {
	hints  []NameHint
	object string // HostObject
	text   string // the last line, for n records and force
	n      int
	force  bool
}

// line is processHostVmStateReport's log line.
func (m *reportMemo) line(hostID string, n int, force bool) string {
	if m.text == "" || m.n != n || m.force != force {
		m.text = fmt.Sprintf("Process VM state report. host: %s, number of records in report: %d, force: %v", hostID, n, force)
		m.n, m.force = n, force
	}
	return m.text
}

// takeReportMemo lends the memo of a host's last report; a report of the same host handled meanwhile
// gets a fresh one.
func (s *Server) takeReportMemo(hostID string, n int) *reportMemo {
	s.mu.Lock()
	m := s.reportMemos[hostID]
	delete(s.reportMemos, hostID)
	s.mu.Unlock()
	if m == nil {
		m = &reportMemo{object: HostObject(hostID)}
	}
	if len(m.hints) < n {
		m.hints = append(m.hints, make([]NameHint, n-len(m.hints))...)
	}
	return m
}

func (s *Server) putReportMemo(hostID string, m *reportMemo) {
	s.mu.Lock()
	if s.reportMemos == nil {
		s.reportMemos = map[string]*reportMemo{}
	}
	s.reportMemos[hostID] = m
	s.mu.Unlock()
}

// reportPredatesStateChange is the C3 fix: a power-on entry collected before the VM's last state
// change (vm_instance.update_time, written by every stateTransitTo) says nothing about the state the
// VM is in now. 4.22 writes it with the processing time as wisdom era (updatePowerState(..., now)),
// so a report collected before a stop and handled after it sets the Stopped VM Running again
// (handlePowerOnReportWithNoPendingJobsOnVM). Skipping it only defers the VM to the next report,
// which is collected after the change. The comparison is of the agent's clock with the server's: a
// host running behind makes more reports look old (deferred, harmless), one running ahead narrows
// the window the fix closes.
func (s *Server) reportPredatesStateChange(t *Thread, id int64, collected time.Time) bool {
	if collected.IsZero() {
		return false // a report that does not say when it was collected: 4.22's behaviour
	}
	v, ok := s.DB.VMStampOf(id)
	if !ok || collected.After(v.UpdateTime) {
		return false
	}
	s.Log(t, "DEBUG", VMObject(id), "Ignoring the power-on report of VM %s collected at %s: its state changed to %s at %s, after the report was collected.",
		v.Name, collected.Format("15:04:05.000"), v.State, v.UpdateTime.Format("15:04:05.000"))
	return true
}

// reportUnknownInstances: D2e on, one debug line per unknown domain per report; off, a warning when
// the set of unknown domains on a host changes.
func (s *Server) reportUnknownInstances(t *Thread, hostID string, names []string) {
	if s.Defects[D2e] {
		for _, n := range names {
			s.Log(t, "DEBUG", HostObject(hostID), "Unable to find matched VM in CloudStack DB. name: %s powerstate: PowerOn", n)
		}
		return
	}
	key := strings.Join(names, ",")
	s.mu.Lock()
	if s.unknownOnHost == nil {
		s.unknownOnHost = map[string]string{}
	}
	same := s.unknownOnHost[hostID] == key
	s.unknownOnHost[hostID] = key
	s.mu.Unlock()
	if same {
		return
	}
	if len(names) > 0 {
		s.Log(t, "WARN", HostObject(hostID), "Host reports %d instance(s) that do not exist in CloudStack DB, they are running unmanaged. host: %s, instances: %v", len(names), hostID, names)
	}
}

func (s *Server) processMissingVmReport(t *Thread, hostID string, reported []int64, force bool) {
	startTime := s.Env.Now()
	cands := s.DB.HostVMs(hostID, func(v *VMVO) bool {
		return !v.Removed && v.HostID == hostID && (v.State == vm.Running || v.State == vm.Stopping || v.State == vm.Starting) &&
			!slices.Contains(reported, v.ID)
	})
	graceful := 2 * s.Config.PingInterval()
	if mutated(MutGracefulOnePing) {
		graceful = s.Config.PingInterval()
	}
	var missing []int64
	for _, v := range cands {
		if !force && v.PowerStateUpdateCount >= 3 {
			s.DB.ResetVMPowerStateTracking(v.ID) // filterOutdatedFromMissingVmReport
			continue
		}
		last := v.PowerStateUpdateTime
		if last.IsZero() {
			last = v.UpdateTime
		}
		since := startTime.Sub(last)
		s.Log(t, "DEBUG", VMObject(v.ID), "Detected missing VM. host: %s, vm id: %d(%s), power state: PowerReportMissing, last state update: %s", hostID, v.ID, v.Name, last.Format("15:04:05.000"))
		passed := force || since > graceful || mutated(MutMissingNoGraceful)
		if !s.Defects[D2a] && startTime.Sub(v.UpdateTime) <= graceful && !(mutated(MutRecentChangeOnlyUnforced) && force) {
			// PR #14207 hasRecentStateChange: a report says nothing about a VM whose state changed
			// within the graceful period, whatever its force flag.
			passed = false
		}
		if passed {
			s.Log(t, "DEBUG", VMObject(v.ID), "vm id: %d - time since last state update(%d ms) has passed graceful period", v.ID, since.Milliseconds())
			missing = append(missing, v.ID)
		} else {
			s.Log(t, "DEBUG", VMObject(v.ID), "vm id: %d - time since last state update(%d ms) has not passed graceful period yet", v.ID, since.Milliseconds())
		}
	}
	for _, id := range missing {
		if s.DB.UpdatePowerState(t.Name, id, vm.PowerReportMissing, hostID, startTime) {
			s.publishVmPowerState(t, id)
		}
	}
}

// handlePowerStateReport is the VM_POWER_STATE subscriber (HandlePowerStateReport).
func (s *Server) handlePowerStateReport(t *Thread, id int64) {
	v := s.DB.VM(id)
	if v == nil || v.Removed {
		s.Log(t, "WARN", VMObject(id), "VM %d no longer exists when processing VM state report.", id)
		return
	}
	if (s.jobs.PendingWorkJobs(id) || s.ha.hasPendingHaWork(v)) && !(mutated(MutPendingOnlyForPowerOn) && v.PowerState != vm.PowerOn) &&
		!(mutated(MutRouterPowerOnNotPostponed) && v.Type == "DomainRouter" && v.PowerState == vm.PowerOn) {
		s.Log(t, "INFO", VMObject(id), "There is pending job or HA tasks working on the VM. vm: %s, postpone power-change report by resetting power-change counters.", v.Name)
		s.DB.ResetVMPowerStateTracking(id)
		return
	}
	switch v.PowerState {
	case vm.PowerOn:
		s.handlePowerOnReportWithNoPendingJobsOnVM(t, v)
	case vm.PowerOff, vm.PowerReportMissing:
		s.handlePowerOffReportWithNoPendingJobsOnVM(t, v)
	}
}

func (s *Server) handlePowerOnReportWithNoPendingJobsOnVM(t *Thread, v *VMVO) {
	switch v.State {
	case vm.Starting, vm.Stopping, vm.Stopped, vm.Migrating:
		s.Log(t, "INFO", VMObject(v.ID), "VM %s is at %s and we received a power-on report while there is no pending jobs on it.", v.Name, v.State)
		from := v.State
		to := v.PowerHost
		if mutated(MutPowerOnSyncKeepsHost) {
			to = v.HostID
		}
		if s.DB.UpdateVMState(t.Name, v, vm.FollowAgentPowerOnReport, vm.Running, to) {
			s.Log(t, "WARN", VMObject(v.ID), "ALERT: VM %s state is sync-ed (%s -> Running) from out-of-context transition. VM network environment may need to be reset", v.Name, from)
		}
	case vm.Running:
		if v.HostID != v.PowerHost {
			s.Log(t, "INFO", VMObject(v.ID), "Detected out of band VM migration from host %s to host %s", v.HostID, v.PowerHost)
			s.DB.UpdateVMState(t.Name, v, vm.FollowAgentPowerOnReport, vm.Running, v.PowerHost)
		}
	case vm.Destroyed, vm.Expunging:
		if s.Defects[D2d] {
			s.Log(t, "INFO", VMObject(v.ID), "Receive power on report when Instance is in destroyed or expunging state. Instance: %s, state: %s.", v.Name, v.State)
			return
		}
		s.stopUnmanagedInstanceOnReportingHost(t, v)
	default:
		if s.Defects[D2d] {
			s.Log(t, "INFO", VMObject(v.ID), "Receive power on report when Instance is in error or unexpected state. Instance: %s, state: %s.", v.Name, v.State)
			return
		}
		s.Log(t, "WARN", VMObject(v.ID), "ALERT: Instance %s is reported running by host %s but is in %s state. It is not managed by CloudStack and may need to be stopped on the host.", v.Name, v.PowerHost, v.State)
	}
}

func (s *Server) stopUnmanagedInstanceOnReportingHost(t *Thread, v *VMVO) {
	target := v.PowerHost
	if mutated(MutStopUnmanagedOnRecordHost) {
		target = v.HostID
	}
	if target == "" {
		s.Log(t, "WARN", VMObject(v.ID), "Instance %s is reported running in %s state but no reporting host is recorded, cannot stop it.", v.Name, v.State)
		return
	}
	ans, err := s.agents.Send(t, target, Message{Kind: MsgStop, VMName: v.Name}, 0)
	if err != nil || !ans.Result {
		s.Log(t, "WARN", VMObject(v.ID), "ALERT: Instance %s is reported running by host %s but is in %s state, and could not be stopped. It may need to be stopped on the host.", v.Name, v.PowerHost, v.State)
		return
	}
	s.Log(t, "INFO", VMObject(v.ID), "Stopped unmanaged instance %s on host %s.", v.Name, v.PowerHost)
}

func (s *Server) handlePowerOffReportWithNoPendingJobsOnVM(t *Thread, v *VMVO) {
	switch v.State {
	case vm.Destroyed, vm.Expunging, vm.Error:
		return
	}
	s.Log(t, "INFO", VMObject(v.ID), "VM %s is at %s and we received a %s report while there is no pending jobs on it", v.Name, v.State, v.PowerState)
	if s.ha.restartOnPowerOff(t, v) {
		return
	}
	switch v.PowerState {
	case vm.PowerOff:
		if !s.sendStop(t, v, true, true) {
			return
		}
		s.releaseVmResources(t, v)
	case vm.PowerReportMissing:
		// D2b: release with no StopCommand and no look at the host. Fixed: a real stop first, which
		// the agent refuses (checkBeforeCleanup) while the domain runs.
		if !s.Defects[D2b] && !s.sendStop(t, v, false, !mutated(MutMissingStopUnchecked)) {
			s.Log(t, "WARN", VMObject(v.ID), "Unable to stop VM %s on its host, not releasing its resources.", v.Name)
			if !mutated(MutMissingReleaseAfterRefuse) {
				return
			}
		}
		s.releaseVmResources(t, v)
	default:
		// PowerOn or PowerUnknown (only the stall scan brings these here): the Java goes on to the
		// transition, with no stop and no release (C9); the fix sends a PowerOn VM to the power-on
		// handler instead and leaves an unknown one as it is
		if !s.Defects[C9] {
			return
		}
	}
	from := v.State
	if !s.DB.UpdateVMState(t.Name, v, vm.FollowAgentPowerOffReport, vm.Stopped, "") {
		s.Log(t, "WARN", VMObject(v.ID), "Unexpected VM state transition exception, race-condition?")
		return
	}
	s.Log(t, "WARN", VMObject(v.ID), "ALERT: VM %s(%d) state is sync-ed (%s -> Stopped) from out-of-context transition.", v.Name, v.ID, from)
	s.Log(t, "INFO", VMObject(v.ID), "VM %s is sync-ed to at Stopped state according to power-off report from hypervisor.", v.Name)
}
