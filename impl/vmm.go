package impl

import (
	"errors"
	"fmt"
	"time"

	"github.com/csconform/csconform/model/host"
	"github.com/csconform/csconform/model/vm"
)

// VirtualMachineManagerImpl: start (spec 3.8), stop (3.9), destroy and expunge (3.10).

func (s *Server) domainSpec(v *VMVO) DomainSpec {
	spec := DomainSpec{Name: v.Name, Type: v.Type, MemoryMiB: 128}
	for _, nic := range s.DB.Nics(v.ID) {
		if nic.IP != "" {
			spec.IPs = append(spec.IPs, nic.IP)
		}
		spec.MACs = append(spec.MACs, nic.MAC)
	}
	for _, vol := range s.DB.Volumes(v.ID) {
		if !vol.Removed {
			spec.Disks = append(spec.Disks, vol.Path)
		}
	}
	return spec
}

// excludeList is DeploymentPlanner.ExcludeList (bhouse-nexthop@b34b9d91) as the reference's world
// needs it: the hosts to avoid, and the scopes above a host that were added (DataCenter, Pod,
// Cluster, StoragePool). The reference has one zone, pod, cluster and primary pool, so any of these
// avoids every host: shouldAvoid(Host) checks the host's zone, pod and cluster, and with the pool
// avoided the storage allocator finds none.
type excludeList struct {
	hosts  map[string]bool
	scopes map[string]bool
}

func newExcludeList() *excludeList {
	return &excludeList{hosts: map[string]bool{}, scopes: map[string]bool{}}
}

func (e *excludeList) addHost(id string) { e.hosts[id] = true }

// shouldAvoid is shouldAvoid(Host).
func (e *excludeList) shouldAvoid(id string) bool { return e.hosts[id] || len(e.scopes) > 0 }

// add is ExcludeList.add(ResourceUnavailableException): a Host, Pod, DataCenter, Cluster or
// StoragePool scope is added (its resource id: a host's own, or every host here) and true returned;
// any other scope (Network, Volume, Nic, ...) is not, and false returned. An AgentUnavailableException
// is a ResourceUnavailableException of scope Host.
func (e *excludeList) add(err error) bool {
	var ue *AgentUnavailableError
	if errors.As(err, &ue) {
		e.addHost(ue.Host)
		return true
	}
	var re *ResourceUnavailableError
	if !errors.As(err, &re) {
		return false
	}
	switch scope, id := re.Scope(); scope {
	case "Host":
		e.addHost(id)
	case "Pod", "DataCenter", "Cluster", "StoragePool":
		e.scopes[scope] = true
	default:
		return false
	}
	return true
}

// planDeployment picks a host: the requested one, else the VM's last host, else the first Up host not
// avoided. A requested host in the avoid set gives no destination, as any other plan that finds none
// (DeploymentPlanningManagerImpl.deployInSpecifiedHostWithoutHA returns null, and orchestrateStart's
// dest == null throws InsufficientServerCapacityException, or with a last known error the
// CloudRuntimeException that carries it); so does a zone in the avoid set (planDeployment: "DataCenter
// id ... provided is in avoid set, DeploymentPlanner cannot allocate the VM, returning.").
func (s *Server) planDeployment(t *Thread, v *VMVO, want string, avoid *excludeList) (string, error) {
	if want != "" {
		if avoid.shouldAvoid(want) {
			s.Log(t, "DEBUG", VMObject(v.ID), "Cannot deploy VM [%s] to host [%s] because this host is in the avoid set.", v.Name, want)
			return "", &InsufficientCapacityError{Msg: "Unable to create a deployment for " + v.Name}
		}
		return want, nil
	}
	if avoid.scopes["DataCenter"] {
		s.Log(t, "DEBUG", VMObject(v.ID), "DataCenter id = '1' provided is in avoid set, DeploymentPlanner cannot allocate the VM, returning.")
		return "", &InsufficientCapacityError{Msg: "Unable to create a deployment for " + v.Name}
	}
	var cands []string
	if v.LastHostID != "" {
		cands = append(cands, v.LastHostID)
	}
	for _, h := range s.DB.Hosts() {
		cands = append(cands, h.ID)
	}
	for _, id := range cands {
		if h := s.DB.Host(id); h != nil && h.Status == host.Up && !avoid.shouldAvoid(id) {
			return id, nil
		}
	}
	return "", &InsufficientCapacityError{Msg: "Unable to create a deployment for " + v.Name}
}

// changeToStartState takes a Stopped VM to Starting under a new op_it_work row
// (VirtualMachineManagerImpl.changeToStartState, source A). Up to vm.op.lock.state.retry rounds: a
// Running VM is already started (nil, nil, nil); a VM in a transitional state is waited on by
// checkWorkItems, then tried again; any other state but Stopped cannot be started. The row is kept
// only when the transition succeeds (the Java also keeps it when the compare-and-set misses).
func (s *Server) changeToStartState(t *Thread, v *VMVO) (*VMVO, *ItWorkVO, error) {
	retries := s.Config.Int("vm.op.lock.state.retry")
	for retry := retries; retry != 0; retry-- {
		if v.State == vm.Stopped {
			if s.startRequested(t, v) {
				return v, s.DB.PersistItWork(s.ID, vm.Starting, v.ID), nil
			}
		}
		cur := s.DB.VM(v.ID)
		if cur == nil {
			return nil, nil, &ConcurrentOperationError{Msg: "Unable to acquire lock on " + v.Name}
		}
		s.Log(t, "DEBUG", VMObject(v.ID), "Determining why we're unable to update the state to Starting for %s. Retry=%d", v.Name, retry-1)
		v = cur
		switch {
		case v.State == vm.Running:
			s.Log(t, "DEBUG", VMObject(v.ID), "VM is already started: %s", v.Name)
			return nil, nil, nil
		case v.State.IsTransitional():
			if !s.checkWorkItems(t, v, v.State) {
				return nil, nil, &ConcurrentOperationError{Msg: "There are concurrent operations on " + v.Name}
			}
			v = s.DB.VM(v.ID)
		case v.State != vm.Stopped:
			s.Log(t, "WARN", VMObject(v.ID), "Cannot start %s in %s state", v.Name, v.State)
			return nil, nil, runtimeErr("Cannot start %s in %s state", v.Name, v.State)
		}
	}
	return nil, nil, &ConcurrentOperationError{Msg: "Unable to change the state of " + v.Name}
}

// startRequested is changeToStartState's transition, Stopped → Starting on the caller's copy of the
// row. Under C12 it is stateTransitTo as the Java has it: VMInstanceDaoImpl.updateState answers true
// when the row is already Starting ("VM … state has been already been updated to Starting"), so a
// second start that read the VM Stopped before the first one's transition takes that transition for
// its own and goes on to plan and send its StartCommand (apache/cloudstack@3156c4ba
// VirtualMachineManagerImpl.changeToStartState; VMInstanceDaoImpl.updateState, apache@8682179a). A user
// VM's starts are one at a time on its work queue; a router's are not: every user VM's start runs its
// network's router's advanceStart inline in its own work job (VirtualRouterElement.prepare →
// NetworkHelperImpl.startRouters → start → advanceStart's placeholder branch, apache@00f5a159). C12's
// fix makes the transition only on a row still as the copy has it (the row locked and compared in the
// transaction), so the second start finds the router Starting and waits on the first (checkWorkItems).
func (s *Server) startRequested(t *Thread, v *VMVO) bool {
	if s.Defects[C12] {
		return s.DB.UpdateVMState(t.Name, v, vm.StartRequested, vm.Starting, "")
	}
	return s.DB.UpdateVMStateIfCurrent(t.Name, v, vm.StartRequested, vm.Starting, "")
}

// checkWorkItems waits while another start of the VM may still be at work
// (VirtualMachineManagerImpl.checkWorkItems, source A): true at once when no outstanding op_it_work
// row is of the VM's state or the VM is Running; false once the row has been inactive longer than
// vm.op.cancel.interval; else it sleeps vm.op.wait.interval and looks again. A row a timed-out start
// left at step Starting holds a second start for up to an hour after that start's last step, whatever
// the VM does meanwhile (only Running or a row marked Done ends the wait): C7, whose fix does not wait
// when the caller runs from the VM's work queue.
func (s *Server) checkWorkItems(t *Thread, v *VMVO, state vm.State) bool {
	for {
		w := s.DB.FindOutstandingItWork(v.ID, state)
		if w == nil {
			s.Log(t, "DEBUG", VMObject(v.ID), "Unable to find work for VM: %s and state: %s", v.Name, state)
			return true
		}
		if cur := s.DB.VM(v.ID); cur != nil && cur.State == vm.Running {
			s.Log(t, "DEBUG", VMObject(v.ID), "VM is already started in DB: %s", v.Name)
			return true
		}
		if !s.Defects[C7] && t.workJob {
			// C7's fix: a start dispatched from the VM's work queue holds that queue (one item per
			// VM at a time, whichever server queued it), so no other start or stop of the VM runs: the
			// row was left by one that has ended, and waiting on it only holds the queue.
			s.Log(t, "WARN", VMObject(v.ID), "The task item for vm %s (%s) belongs to no running job: this one holds the VM's work queue", v.Name, w)
			return false
		}
		if idle := w.secondsInactive(s.Env.Now()); idle > s.Config.Seconds("vm.op.cancel.interval") {
			s.Log(t, "WARN", VMObject(v.ID), "The task item for vm %s has been inactive for %d", v.Name, int64(idle.Seconds()))
			return false
		}
		s.Env.Sleep(s.Config.Seconds("vm.op.wait.interval"))
		s.Log(t, "DEBUG", VMObject(v.ID), "Waiting some more to make sure there's no activity on %s", v.Name)
	}
}

// changeState is VirtualMachineManagerImpl.changeState: the work step first, then the VM's transition;
// the step goes back if the transition did not happen. work nil: the transition alone. Callers check
// that the transition exists, as they did before the work rows.
func (s *Server) changeState(t *Thread, v *VMVO, ev vm.Event, to vm.State, host string, work *ItWorkVO, step ItWorkStep) bool {
	var prev ItWorkStep
	if work != nil {
		if w := s.DB.ItWork(work.ID); w != nil {
			prev = w.Step
		}
		s.DB.UpdateItWorkStep(work.ID, step)
	}
	ok := s.DB.UpdateVMState(t.Name, v, ev, to, host)
	if !ok && work != nil {
		s.DB.UpdateItWorkStep(work.ID, prev)
	}
	return ok
}

// advanceStart runs orchestrateStart as a VmWorkStart job on the VM's queue.
func (s *Server) advanceStart(t *Thread, vmID int64, host string) error {
	return s.jobs.runVmWork(t, "VmWorkStart", vmID, func(t *Thread) error { return s.orchestrateStart(t, vmID, host) })
}

func (s *Server) orchestrateStart(t *Thread, vmID int64, want string) (err error) {
	v := s.DB.VM(vmID)
	if v == nil {
		return runtimeErr("Unable to find VM %d", vmID)
	}
	v, work, err := s.changeToStartState(t, v)
	if err != nil || v == nil {
		return err // nil, nil: already running
	}
	started, canRetry := false, true
	avoid := newExcludeList()
	var lastKnownError error // a failed StartAnswer's, or a ResourceUnavailableException the loop avoided
	defer func() {
		if !started && canRetry && !(mutated(MutFailedAnswerLeavesStarting) && lastKnownError != nil) {
			// the outer finally: changeState(vm, OperationFailed, null, work, Done) on the start's own
			// copy, not on the row read again. A copy whose success transition failed already says
			// Running (updateState sets the VO before its UPDATE): Running has no OperationFailed, so
			// the NoTransitionException, rethrown as a ConcurrentOperationException, replaces what was
			// thrown, and the work step goes back to Release.
			if to, ok := vm.Next(v.State, vm.OperationFailed); ok {
				s.changeState(t, v, vm.OperationFailed, to, "", work, ItWorkDone)
			} else {
				prev := s.DB.ItWork(work.ID).Step
				s.DB.UpdateItWorkStep(work.ID, ItWorkDone)
				s.DB.UpdateItWorkStep(work.ID, prev)
				err = &ConcurrentOperationError{Msg: fmt.Sprintf("Unable to transition to a new state from %s via %s", v.State, vm.OperationFailed)}
			}
		}
		if !started && err == nil {
			err = runtimeErr("Unable to start Instance '%s' (%d), see management server log for details", v.Name, vmID)
		}
	}()
	for retry := s.Config.Int("start.retry"); retry != 0; retry-- {
		s.Log(t, "DEBUG", VMObject(vmID), "VM start attempt #%d", s.Config.Int("start.retry")-retry+1)
		dest, perr := s.planDeployment(t, v, want, avoid)
		var ic *InsufficientCapacityError
		if errors.As(perr, &ic) && lastKnownError != nil {
			// dest == null after a failed attempt: an admin caller (the API's, HA's system account)
			// gets a CloudRuntimeException with the last known error (canExposeError), not the
			// InsufficientServerCapacityException
			attempt := s.Config.Int("start.retry") - retry + 1
			return runtimeErr("Unable to create a deployment for %s after %d attempts Last known error: %v", v.Name, attempt, lastKnownError)
		}
		if perr != nil {
			return perr
		}
		avoid.addHost(dest)
		if !s.changeState(t, v, vm.OperationRetry, vm.Starting, dest, work, ItWorkPrepare) {
			return &ConcurrentOperationError{Msg: "Unable to update the state of the Virtual Machine " + v.Name}
		}
		answered := false
		aerr := func() error {
			if err := s.prepare(t, v, dest); err != nil {
				return err
			}
			for _, vol := range s.DB.Volumes(vmID) {
				if vol.State == "Allocated" {
					s.DB.SetVolumeState(t.Name, vol.ID, "Ready")
				}
			}
			spec := s.domainSpec(v)
			if w := s.DB.ItWork(work.ID); w == nil || w.Step != ItWorkPrepare {
				return &ConcurrentOperationError{Msg: fmt.Sprintf("Work steps have been changed: %v", w)}
			}
			s.DB.UpdateItWorkStep(work.ID, ItWorkStarting)
			s.Log(t, "DEBUG", VMObject(vmID), "Sending StartCommand for %s to host %s", v.Name, dest)
			ans, err := s.agents.Send(t, dest, Message{Kind: MsgStart, Domain: &spec}, 0)
			if err != nil {
				return err
			}
			s.DB.UpdateItWorkStep(work.ID, ItWorkStarted)
			if !ans.Result {
				s.Log(t, "INFO", VMObject(vmID), "Unable to start VM on %s due to %s", dest, ans.Details)
				lastKnownError = fmt.Errorf("Unable to start VM on %s due to %s", dest, ans.Details)
				return nil
			}
			answered = true
			// a compare-and-set on the attempt's own copy (its state, host and updated as its
			// OperationRetry left them), not a write on the row read again: a change of the row since
			// (the stall scan's sync, C10) fails it, and the attempt's cleanup stops the domain
			if !s.changeState(t, v, vm.OperationSucceeded, vm.Running, dest, work, ItWorkDone) {
				s.Log(t, "ERROR", VMObject(vmID), "Unable to transition to a new state. VM uuid: %s, VM oldstate: %s, Event: %s", v.Name, v.State, vm.OperationSucceeded)
				return &ConcurrentOperationError{Msg: "Failed to deploy VM " + v.Name}
			}
			started = true
			s.Log(t, "DEBUG", VMObject(vmID), "Start completed for VM %s", v.Name)
			return nil
		}()
		if started {
			return nil
		}
		var te *OperationTimedoutError
		timedOut := errors.As(aerr, &te)
		if timedOut && !mutated(MutStartTimeoutIsFailure) {
			canRetry = false // the VM stays Starting on the host; no cleanup
		} else if aerr == nil && mutated(MutFailedAnswerNoCleanup) {
			// the mutant: no cleanup after a failed StartAnswer
		} else {
			// per-attempt finally: the work step goes to Release before cleanup, so a StopCommand goes to
			// the host whatever step failed, forced unless a successful StartAnswer came back; cleanup
			// always releases NICs and volumes (C1 aside). It reads the attempt's profile, whose VM is
			// this start's own copy: after a failed success transition that copy says Running on dest,
			// so the StopCommand goes whatever the row says now.
			prev := s.DB.ItWork(work.ID).Step
			s.DB.UpdateItWorkStep(work.ID, ItWorkRelease)
			sent := prev == ItWorkStarted || prev == ItWorkStarting
			s.cleanup(t, v, ItWorkRelease, forceIf(!(sent && answered), forcedCleanup), sent)
		}
		var ue *AgentUnavailableError
		var re *ResourceUnavailableError
		var ce *ConcurrentOperationError
		switch {
		case aerr == nil:
			continue // a failed StartAnswer: next attempt
		case timedOut:
			s.Log(t, "DEBUG", VMObject(vmID), "Unable to send the start command to host %s", dest)
			// e.isActive(): a non-sequential command (every KVM start) that timed out is active. The
			// item records the start's own copy (its state and updated), as scheduleStop(vm, ...) does.
			s.ha.scheduleStop(t, v, dest)
			return &AgentUnavailableError{Host: dest, Reason: "Unable to start " + v.Name}
		case errors.As(aerr, &ce):
			return aerr // caught by none of the attempt's catch blocks: no log line of its own
		case errors.As(aerr, &ue), errors.As(aerr, &re):
			// catch (ResourceUnavailableException e): lastKnownError = e, then ExcludeList.add(e).
			// A scope it can add (an AgentUnavailableException's Host — the attempt's, or that of the
			// router the attempt's prepare started —, any other Host-scoped exception, or the
			// zone of "Can't find at least one running router!") joins the avoid set and the loop
			// goes on with the same copy of the VM: to another host, or, the zone avoided, to a plan
			// that finds none. Any other scope (a Network's) is rethrown.
			s.Log(t, "WARN", VMObject(vmID), "Unable to contact resource. %v", aerr)
			lastKnownError = aerr
			if avoid.add(aerr) {
				continue
			}
			if scope, _ := re.Scope(); scope != "Volume" && scope != "Nic" {
				s.Log(t, "WARN", VMObject(vmID), "unexpected ResourceUnavailableException : %s", javaScopeClass(scope))
			}
			return aerr
		default:
			s.Log(t, "ERROR", VMObject(vmID), "Failed to start instance %s: %v", v.Name, aerr)
			return aerr // CloudRuntimeException escapes the loop
		}
	}
	return nil
}

// cleanup stops what a failed start may have left and — in its finally — always releases resources.
// mayRun says a StartCommand may have reached the host: only then can a stop that did not reach it
// leave a domain running (C1).
func (s *Server) cleanup(t *Thread, v *VMVO, step ItWorkStep, force stopForce, mayRun bool) bool {
	s.Log(t, "DEBUG", VMObject(v.ID), "Cleaning up resources for the vm %s in %s state", v.Name, v.State)
	released := true
	defer func() {
		if released || !mayRun || s.Defects[C1] {
			s.releaseVmResources(t, v)
			return
		}
		s.Log(t, "WARN", VMObject(v.ID), "Not releasing the resources of %s: its stop did not reach host %s, whose domain may still run", v.Name, v.HostID)
	}()
	switch v.State {
	case vm.Starting:
		switch step {
		case "": // no outstanding work item: stop whatever runs
			if v.HostID != "" && !s.sendStopAs(t, v, force, false) {
				s.Log(t, "WARN", VMObject(v.ID), "Failed to stop vm %s in Starting state as a part of cleanup process", v.Name)
				released = false
				return false
			}
		case ItWorkPrepare: // the StartCommand was not sent: nothing to stop
		case ItWorkStarting, ItWorkStarted, ItWorkRelease:
			if step == ItWorkStarting && force == unforced {
				s.Log(t, "WARN", VMObject(v.ID), "Unable to cleanup vm %s; work state is incorrect: %s", v.Name, step)
				return false
			}
			if v.HostID != "" && !s.sendStopAs(t, v, force, false) {
				s.Log(t, "WARN", VMObject(v.ID), "Failed to stop vm %s in Starting state as a part of cleanup process", v.Name)
				released = false
				return false
			}
		default:
			s.Log(t, "DEBUG", VMObject(v.ID), "Cleanup is not needed for vm %s; work state is not alright: %s", v.Name, step)
		}
		return true
	case vm.Stopping, vm.Running:
		if v.HostID != "" && !s.sendStopAs(t, v, force, false) {
			released = mutated(MutCleanupReleasesRunning)
			return false
		}
	}
	return true
}

// stopForce is advanceStop's cleanUpEvenIfUnableToStop together with who asked for it: which fix
// governs a forced release depends on the asker, not on the flag alone.
type stopForce int

const (
	unforced stopForce = iota
	// forcedByCaller is stopVirtualMachine forced=true (and deleteHost forced=true). CloudStack
	// documents it as marking the VM Stopped even when the StopCommand cannot reach the host
	// (apache/cloudstack#6798, closed as documentation); the fork's D3 fix leaves it alone, and so
	// does D3's here: the release is the operator's assertion, which the harness believes
	// (detect/asserted.go).
	forcedByCaller
	// forcedBySetting is vm.destroy.forcestop on destroy and expunge: a global setting applied to
	// every destroy, not knowledge that the host is gone (report 004). D3 lives here.
	forcedBySetting
	// forcedCleanup is a cleanup the server decides on: a failed start's (cleanUpEvenIfUnableToStop),
	// a power-off report's. C1 governs it, not D3.
	forcedCleanup
)

func forceIf(on bool, f stopForce) stopForce {
	if on {
		return f
	}
	return unforced
}

// forcedReleaseAllowed says whether a forced stop that could not reach the host may treat the VM as
// stopped. A caller's forced stop always may (its documented meaning). Otherwise, with its defect on,
// always (CloudStack 4.22): D3 for vm.destroy.forcestop, C1 for the server's own cleanups. With it
// off, only when the host is gone (Down, Removed, no row): a host that may reconnect — Disconnected,
// Connecting, Alert, Rebalancing, or Up with its link down — is expected back with the domain still
// running.
func (s *Server) forcedReleaseAllowed(t *Thread, v *VMVO, hostID string, force stopForce) bool {
	switch {
	case force == unforced:
		return false
	case hostID == "", force == forcedByCaller:
		return true
	case force == forcedCleanup && s.Defects[C1]:
		return true
	case force != forcedCleanup && s.Defects[D3]:
		return true
	}
	h := s.DB.Host(hostID)
	if h == nil || h.Status == host.Down || h.Status == host.Removed {
		return true
	}
	if (mutated(MutForcedReleaseOnAlert) && h.Status == host.Alert) || (mutated(MutForcedReleaseUnlessUp) && h.Status != host.Up) {
		return true
	}
	s.Log(t, "WARN", VMObject(v.ID), "Not forcing the stop of %s: its host %s is %s and may still be running it. The stop fails if the host cannot be reached; retry once the host is Up or Down.", v.Name, hostID, h.Status)
	return false
}

// sendStop (spec 3.9): with force, an unreachable host counts as success. A force here is the
// server's own cleanup (forcedCleanup); sendStopAs says who asked.
func (s *Server) sendStop(t *Thread, v *VMVO, force, checkBeforeCleanup bool) bool {
	return s.sendStopAs(t, v, forceIf(force, forcedCleanup), checkBeforeCleanup)
}

func (s *Server) sendStopAs(t *Thread, v *VMVO, force stopForce, checkBeforeCleanup bool) bool {
	if v.HostID == "" {
		s.Log(t, "ERROR", VMObject(v.ID), "Invalid answer received in response to a StopCommand for %s", v.Name)
		return false
	}
	ans, err := s.agents.Send(t, v.HostID, Message{Kind: MsgStop, VMName: v.Name, CheckFirst: checkBeforeCleanup}, 0)
	if err != nil {
		s.Log(t, "WARN", VMObject(v.ID), "Unable to stop %s due to [%v].", v.Name, err)
		return s.forcedReleaseAllowed(t, v, v.HostID, force)
	}
	if !ans.Result {
		s.Log(t, "DEBUG", VMObject(v.ID), "Unable to stop VM due to %s", ans.Details)
		return false
	}
	if v.Type == "User" {
		s.DB.SetPowerState(t.Name, v.ID, vm.PowerOff)
	}
	return true
}

// AdvanceStop runs the stop as a VmWorkStop job.
func (s *Server) advanceStop(t *Thread, vmID int64, force stopForce) error {
	return s.jobs.joinVmWork(s.submitStop(t, vmID, force))
}

// submitStop queues advanceStop's VmWorkStop job without joining it.
func (s *Server) submitStop(t *Thread, vmID int64, force stopForce) *JobVO {
	return s.jobs.submitVmWork(t, "VmWorkStop", vmID, func(t *Thread) error { return s.orchestrateStop(t, vmID, force) })
}

func (s *Server) orchestrateStop(t *Thread, vmID int64, force stopForce) error {
	forced := force != unforced
	v := s.DB.VM(vmID)
	if v == nil || v.Removed {
		return runtimeErr("Unable to find VM %d", vmID)
	}
	switch v.State {
	case vm.Stopped:
		s.Log(t, "DEBUG", VMObject(vmID), "VM is already stopped: %s", v.Name)
		return nil
	case vm.Destroyed, vm.Expunging, vm.Error:
		s.Log(t, "DEBUG", VMObject(vmID), "Stopped called on %s but the state is %s", v.Name, v.State)
		return nil
	}
	work := s.DB.FindOutstandingItWork(vmID, v.State)
	if work != nil {
		s.Log(t, "DEBUG", VMObject(vmID), "Found an outstanding work item for this vm %s with state:%s, work id:%d", v.Name, v.State, work.ID)
	}
	if v.HostID == "" {
		if !forced {
			s.Log(t, "DEBUG", VMObject(vmID), "HostId is null but this is not a forced stop, cannot stop vm %s", v.Name)
			return runtimeErr("Unable to stop %s", v.Name)
		}
		s.DB.UpdateVMState(t.Name, v, vm.AgentReportStopped, vm.Stopped, "")
		if work != nil {
			s.DB.UpdateItWorkStep(work.ID, ItWorkDone)
		}
		return nil
	}
	hostID := v.HostID
	if _, ok := vm.Next(v.State, vm.StopRequested); !ok {
		if !forced {
			return runtimeErr("We cannot stop %s when it is in state %s", v.Name, v.State)
		}
		s.Log(t, "WARN", VMObject(vmID), "Unable to transition the state but we're moving on because it's forced stop")
		var step ItWorkStep // "": no outstanding work item
		if work != nil {
			step = work.Step
		}
		if !s.cleanup(t, v, step, force, true) {
			return runtimeErr("Failed to cleanup %s , current state %s", v.Name, v.State)
		}
		// on the copy read at the start, as the Java's changeState(vm, …): a row moved meanwhile (the
		// start completed during the cleanup) makes the compare-and-set fail ("Unable to stop")
		if !s.changeState(t, v, vm.AgentReportStopped, vm.Stopped, "", work, ItWorkDone) {
			return runtimeErr("Unable to stop %s", v.Name)
		}
		// The Java falls through to its "Stopping" check with the VM now Stopped, and throws: the VM is
		// stopped and cleaned up, and the stop (and a destroy that forced it) fails.
		return runtimeErr("We cannot proceed with stop VM %s since it is not in 'Stopping' state, current state: %s", v.Name, vm.Stopped)
	}
	if !s.DB.UpdateVMState(t.Name, v, vm.StopRequested, vm.Stopping, hostID) {
		return &ConcurrentOperationError{Msg: v.Name + " is being operated on."}
	}
	ans, err := s.agents.Send(t, hostID, Message{Kind: MsgStop, VMName: v.Name}, 0)
	stopped := false
	var ue *AgentUnavailableError
	var te *OperationTimedoutError
	switch {
	case errors.As(err, &te) && s.Defects[PlantedStopTimeoutIsSuccess]:
		stopped = true
	case errors.As(err, &ue) || errors.As(err, &te):
		s.Log(t, "WARN", VMObject(vmID), "Unable to stop %s due to [%v].", v.Name, err)
	case err != nil:
		return err
	case !ans.Result:
		if !forced {
			s.DB.UpdateVMState(t.Name, v, vm.OperationFailed, vm.Running, hostID)
		}
		return runtimeErr("Unable to stop the virtual machine due to %s", ans.Details)
	default:
		stopped = true
	}
	if !stopped {
		if !s.forcedReleaseAllowed(t, v, hostID, force) {
			s.Log(t, "WARN", VMObject(vmID), "Unable to stop vm %s", v.Name)
			if !mutated(MutStopUnreachableStopping) {
				s.DB.UpdateVMState(t.Name, v, vm.OperationFailed, vm.Running, hostID)
			}
			return runtimeErr("Unable to stop %s", v.Name)
		}
		s.Log(t, "WARN", VMObject(vmID), "Unable to actually stop %s but continue with release because it's a force stop", v.Name)
	}
	s.Log(t, "DEBUG", VMObject(vmID), "%s is stopped on the host.  Proceeding to release resource held.", v.Name)
	s.releaseVmResources(t, v)
	if work != nil {
		s.DB.UpdateItWorkStep(work.ID, ItWorkDone)
	}
	if !s.DB.UpdateVMState(t.Name, v, vm.OperationSucceeded, vm.Stopped, "") {
		return runtimeErr("unable to stop %s", v.Name)
	}
	return nil
}

// destroy is UserVmManagerImpl.destroyVm then VMMI.destroy (and advanceExpunge when asked).
func (s *Server) destroy(t *Thread, vmID int64, expunge bool) error {
	v := s.DB.VM(vmID)
	if v == nil || v.Removed {
		return fmt.Errorf("InvalidParameterValueException: Unable to find a virtual machine with id %d", vmID)
	}
	if (v.State == vm.Destroyed || v.State == vm.Expunging) && !expunge {
		return nil
	}
	forced := forceIf(s.Config.Bool("vm.destroy.forcestop"), forcedBySetting)
	if mutated(MutDestroyMarksVolumesFirst) && v.State != vm.Destroyed && v.State != vm.Expunging {
		for _, vol := range s.DB.Volumes(vmID) {
			s.DB.SetVolumeState(t.Name, vol.ID, "Destroy")
		}
	}
	if err := s.advanceStop(t, vmID, forced); err != nil {
		return runtimeErr("Unable to contact the agent to stop the virtual machine %s: %v", v.Name, err)
	}
	v = s.DB.VM(vmID)
	if v.State != vm.Destroyed && v.State != vm.Expunging {
		s.Log(t, "DEBUG", VMObject(vmID), "Destroying vm %s, expunge flag %v", v.Name, expunge)
		if err := s.advanceStop(t, vmID, forced); err != nil {
			return err
		}
		v = s.DB.VM(vmID)
		to, ok := vm.Next(v.State, vm.DestroyRequested)
		if !ok {
			return runtimeErr("Unable to destroy %s", v.Name)
		}
		steps := []VMTransition{{vm.DestroyRequested, to}}
		if expunge {
			// VMMI.destroy: DestroyRequested and, with expunge, ExpungeOperation in one transaction.
			steps = append(steps, VMTransition{vm.ExpungeOperation, vm.Expunging})
		}
		if done := s.DB.UpdateVMStates(t.Name, v, v.HostID, steps...); done < len(steps) {
			if done == 1 {
				return runtimeErr("Unable to expunge %s", v.Name)
			}
			return runtimeErr("Unable to destroy %s", v.Name)
		}
		for _, vol := range s.DB.Volumes(vmID) {
			s.DB.SetVolumeState(t.Name, vol.ID, "Destroy")
		}
	}
	if expunge {
		return s.advanceExpunge(t, vmID)
	}
	return nil
}

// advanceExpunge (spec 3.10). D2c: with it on, nothing contacts the host for a VM the DB says is
// stopped; with it off, the last known host is asked to stop the instance first (PR #14207).
func (s *Server) advanceExpunge(t *Thread, vmID int64) error {
	v := s.DB.VM(vmID)
	if v == nil || v.Removed {
		return runtimeErr("Unable to find VM %d", vmID)
	}
	if v.State != vm.Destroyed && v.State != vm.Expunging && v.State != vm.Error {
		return runtimeErr("VM %s is not destroyed: %s", v.Name, v.State)
	}
	return s.expunge(t, v)
}

// expunge is VirtualMachineManagerImpl.advanceExpunge without the API's "destroy it first" check
// (UserVmManagerImpl.expungeVm makes that): a router's destroyRouter calls it on a Stopped router.
func (s *Server) expunge(t *Thread, v *VMVO) error {
	vmID := v.ID
	if !s.Defects[D2c] && (!mutated(MutExpungeChecksOnlyError) || v.State == vm.Error) {
		s.ensureInstanceIsStoppedOnLastKnownHost(t, v)
	}
	if err := s.advanceStop(t, vmID, forceIf(s.Config.Bool("vm.destroy.forcestop"), forcedBySetting)); err != nil {
		return err
	}
	v = s.DB.VM(vmID)
	// stateTransitTo(ExpungeOperation) on the copy read after the stop: a VM another thread started
	// meanwhile (a router a deploy implementing its network starts again) has no such transition,
	// NoTransitionException, and the expunge fails (VirtualMachineManagerImpl.advanceExpunge,
	// apache/cloudstack@3156c4ba, engine/orchestration/.../VirtualMachineManagerImpl.java)
	if _, ok := vm.Next(v.State, vm.ExpungeOperation); !ok {
		s.Log(t, "DEBUG", VMObject(vmID), "Unable to destroy the vm because it is not in the correct state: %s (%s)", v.Name, v.State)
		return runtimeErr("Unable to destroy %s", v.Name)
	}
	if v.State != vm.Expunging {
		if !s.DB.UpdateVMState(t.Name, v, vm.ExpungeOperation, vm.Expunging, v.HostID) {
			return runtimeErr("Unable to expunge %s", v.Name)
		}
	}
	s.cleanupNics(t, v)
	for _, vol := range s.DB.Volumes(vmID) {
		if vol.Removed {
			continue
		}
		s.DB.SetVolumeState(t.Name, vol.ID, "Expunging")
		target := v.LastHostID
		if target == "" {
			target = v.HostID
		}
		ok := false
		if target != "" {
			ans, err := s.agents.Send(t, target, Message{Kind: MsgDeleteVolume, Path: vol.Path}, 0)
			ok = err == nil && ans.Result
			if !ok {
				s.Log(t, "WARN", VMObject(vmID), "Unable to expunge volume %s: %v %s", vol.Path, err, details(ans))
			}
		}
		if ok || target == "" || mutated(MutExpungeVolumeFailureOK) {
			s.DB.SetVolumeState(t.Name, vol.ID, "Expunged")
		} else {
			s.DB.SetVolumeState(t.Name, vol.ID, "Destroy")
		}
	}
	s.Log(t, "DEBUG", VMObject(vmID), "Expunged VM instance %s", v.Name)
	if !mutated(MutExpungeKeepsRow) {
		s.DB.RemoveVM(t.Name, vmID)
	}
	return nil
}

func details(m *Message) string {
	if m == nil {
		return ""
	}
	return m.Details
}

func (s *Server) ensureInstanceIsStoppedOnLastKnownHost(t *Thread, v *VMVO) {
	target := v.HostID
	if target == "" {
		target = v.LastHostID
	}
	if target == "" {
		return
	}
	ans, err := s.agents.Send(t, target, Message{Kind: MsgStop, VMName: v.Name}, 0)
	if err != nil || !ans.Result {
		s.Log(t, "WARN", VMObject(v.ID), "Unable to confirm instance %s is stopped on host %s before expunging: %v %s", v.Name, target, err, details(ans))
	}
}

// Stall scans and VMMI's periodic tasks (spec 3.12; VirtualMachineManagerImpl at d4da80c5).

// inTransition is listByHostAndState(host, Starting, Stopping, Migrating).
func inTransition(st vm.State) bool {
	return st == vm.Starting || st == vm.Stopping || st == vm.Migrating
}

// powerStateUpdateTime is power_state_update_time, with the fallback power sync uses for a VM never
// reported (processMissingVmReport: the update time). In the Java the column is NULL until a report
// of the VM is recorded (VMInstanceVO's constructor leaves it unset, updateState and sendStop's
// setPowerState do not write it, resetHostPowerStateTracking reaches only VMs whose power_host is the
// host), and the scan's filter dereferences it: a NullPointerException ends the scan of that host at
// that ping, with nothing handled. The reference keeps the fallback (docs/fidelity.md).
func powerStateUpdateTime(v *VMVO) time.Time {
	if v.PowerStateUpdateTime.IsZero() {
		return v.UpdateTime
	}
	return v.PowerStateUpdateTime
}

// vmIdsInProgressTTL is the life of the stall scan's cache of VMs with pending work jobs: VMMI.start
// builds it as new SingleCache<>(10, vmWorkJobDao::listVmIdsWithPendingJob), a Caffeine cache whose
// one entry expires 10 s after it was written and is loaded again by the next get.
const vmIdsInProgressTTL = 10 * time.Second

// vmIdsInProgressCache is vmIdsInProgressCache.get(): the ids of the VMs with an IN_PROGRESS work job
// (VmWorkJobDaoImpl.listVmIdsWithPendingJob: vm_work_job joined to async_job, queued jobs included) as
// they were when the cache was filled, on the server's clock. The scan of hostID asked for it.
func (s *Server) vmIdsInProgressCache(t *Thread, hostID string) map[int64]bool {
	now := s.Env.Now()
	s.mu.Lock()
	ids, filled := s.vmIdsInProgress, s.vmIdsInProgressFilled
	s.mu.Unlock()
	if ids != nil && now.Sub(filled) < vmIdsInProgressTTL {
		return ids
	}
	ids = map[int64]bool{}
	for _, j := range s.DB.JobsInProgress(func(j *JobVO) bool { return j.InstanceType == "VirtualMachine" && pendingWorkJob(j) }) {
		ids[j.InstanceID] = true
	}
	s.mu.Lock()
	s.vmIdsInProgress, s.vmIdsInProgressFilled = ids, now
	s.mu.Unlock()
	s.Log(t, "DEBUG", HostObject(hostID), "Filled the cache of VMs with pending work jobs (for 10 s): %d VM(s)", len(ids))
	return ids
}

// pendingWorkJobForScan says whether the stall scan leaves v alone for a work job: the cache's answer
// (C10), and with C10's fix vm_work_job asked again for a VM the cache calls free, as
// handlePowerStateReport asks (listPendingWorkJobs): the cache can be up to 10 s old and knows no job
// that began since it was filled.
func (s *Server) pendingWorkJobForScan(t *Thread, v *VMVO, cached map[int64]bool) bool {
	if cached[v.ID] {
		return true
	}
	if s.Defects[C10] || !s.jobs.PendingWorkJobs(v.ID) {
		return false
	}
	s.Log(t, "DEBUG", VMObject(v.ID), "VM %s has a pending work job the cache of VMs with pending work jobs was filled before: leaving it to its job", v.Name)
	return true
}

// scanStalledVMInTransitionStateOnUpHost runs after the report of every ping of an Up host
// (processCommands): a VM in Starting, Stopping or Migrating with no work job in progress is pushed
// through the power-off handler, or the power-on handler if its power state is PowerOn and recent.
// As in the Java both lists filter one snapshot of the host's VMs in transition, the stalled ones
// (listStalledVMInTransitionStateOnUpHost) before either is handled, the recent ones
// (listVMInTransitionStateWithRecentReportOnUpHost) once the stalled ones were; each list asks the
// cache of VMs with pending work jobs (vmIdsInProgressCache), and neither asks it when the host has no
// VM in transition.
func (s *Server) scanStalledVMInTransitionStateOnUpHost(t *Thread, hostID string) {
	if !s.syncTransitioningVmPowerState {
		return
	}
	if h := s.DB.Host(hostID); h == nil || h.Status != host.Up {
		return
	}
	// VmJobStateReportInterval.value() * 2 is a number of seconds used as milliseconds: 120 ms by
	// default, so "stalled" means any VM not reported in this very ping.
	stall := time.Duration(s.Config.Int("vm.job.report.interval")*2) * time.Millisecond
	cut := s.Env.Now().Add(-stall)
	vms := s.DB.HostVMs(hostID, func(v *VMVO) bool { return !v.Removed && inTransition(v.State) })
	if len(vms) == 0 {
		return
	}
	var stalled, recent []*VMVO
	cached := s.vmIdsInProgressCache(t, hostID)
	for _, v := range vms {
		if powerStateUpdateTime(v).Before(cut) && !s.pendingWorkJobForScan(t, v, cached) {
			stalled = append(stalled, v)
		}
	}
	for _, v := range stalled {
		if !s.Defects[C9] && v.PowerState == vm.PowerOn {
			// C9's fix: a stalled VM whose power state is PowerOn has its domain running as of this
			// very ping (the report lists running domains; an unchanged one keeps its old update
			// time): follow it, as a VM with a recent report is followed
			s.Log(t, "INFO", VMObject(v.ID), "VM %s is stalled in %s on Up host %s with no pending work job; its domain runs: following it", v.Name, v.State, hostID)
			s.handlePowerOnReportWithNoPendingJobsOnVM(t, v)
			continue
		}
		s.Log(t, "INFO", VMObject(v.ID), "VM %s is stalled in %s on Up host %s with no pending work job; handling it as powered off", v.Name, v.State, hostID)
		s.handlePowerOffReportWithNoPendingJobsOnVM(t, v)
	}
	cached = s.vmIdsInProgressCache(t, hostID)
	for _, v := range vms {
		if powerStateUpdateTime(v).After(cut) && !s.pendingWorkJobForScan(t, v, cached) {
			recent = append(recent, v)
		}
	}
	for _, v := range recent {
		if v.PowerState == vm.PowerOn {
			s.handlePowerOnReportWithNoPendingJobsOnVM(t, v)
		} else {
			s.handlePowerOffReportWithNoPendingJobsOnVM(t, v)
		}
	}
}

// scanStalledVMInTransitionStateOnDisconnectedHosts (from TransitionTask) only alerts: a VM in
// transition whose host is not Up and whose power state has not been updated for vm.op.wait.interval.
// A null power_state_update_time never matches the SQL's "<".
func (s *Server) scanStalledVMInTransitionStateOnDisconnectedHosts(t *Thread) {
	cut := s.Env.Now().Add(-s.Config.Seconds("vm.op.wait.interval"))
	for _, v := range s.DB.VMs(func(v *VMVO) bool {
		return !v.Removed && v.HostID != "" && inTransition(v.State) && !v.PowerStateUpdateTime.IsZero() && v.PowerStateUpdateTime.Before(cut)
	}) {
		if h := s.DB.Host(v.HostID); h == nil || h.Status == host.Up || s.jobs.PendingWorkJobs(v.ID) {
			continue
		}
		s.Log(t, "WARN", VMObject(v.ID), "ALERT: VM %s(%d) is stuck in %s state and its host is unreachable for too long", v.Name, v.ID, v.State)
	}
}

// transitionTask is TransitionTask (every vm.op.cleanup.interval, under the cluster-wide
// "TransitionChecking" lock): the disconnected-host scan, then VMs in Starting or Stopping not updated
// for `wait` (findVMInTransition): a Starting one is handed to HA for a restart with investigation
// (scheduleRestart(vm, true)), a Stopping one gets a CheckStop (scheduleStop(vm, hostId, CheckStop)).
func (s *Server) transitionTask(t *Thread) {
	release, ok := s.globalLock(t, "TransitionChecking")
	if !ok {
		return
	}
	defer release()
	s.scanStalledVMInTransitionStateOnDisconnectedHosts(t)
	cut := s.Env.Now().Add(-s.Config.Seconds("wait"))
	if mutated(MutTransitionTaskOpWait) {
		cut = s.Env.Now().Add(-s.Config.Seconds("vm.op.wait.interval"))
	}
	for _, v := range s.DB.VMs(func(v *VMVO) bool {
		return !v.Removed && (v.State == vm.Starting || v.State == vm.Stopping) && v.UpdateTime.Before(cut)
	}) {
		if v.State == vm.Stopping {
			s.ha.scheduleStop(t, v, v.HostID)
		} else {
			s.ha.scheduleRestart(t, v, true, "")
		}
	}
}

// javaScopeClass is the class name getScope().getName() prints for a scope the reference uses.
func javaScopeClass(scope string) string {
	switch scope {
	case "Network":
		return "com.cloud.network.Network"
	}
	return scope
}
