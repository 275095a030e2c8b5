package impl

import (
	"errors"
	"fmt"

	"github.com/csconform/csconform/model/host"
	"github.com/csconform/csconform/model/vm"
)

// Live migration of a VM between the hosts of its cluster (VirtualMachineManagerImpl.migrate,
// orchestrateMigrate, migrateVmThroughJobQueue; apache/cloudstack main as stored, commit 3156c4ba,
// engine/orchestration/src/main/java/com/cloud/vm/VirtualMachineManagerImpl.java) and the recovery
// of a destroyed VM (UserVmManagerImpl.recoverVirtualMachine).

// ItWorkMigrating is the step of a migration's op_it_work row once the VM is Migrating.
const ItWorkMigrating ItWorkStep = "Migrating"

// checkMigrationDestination is UserVmManagerImpl.migrateVirtualMachine with checkVmMigrationDestination
// for a given host: the VM Running, the destination another host, Up. It returns the source host.
func (s *Server) checkMigrationDestination(vmID int64, dest string) (string, error) {
	v := s.DB.VM(vmID)
	if v == nil || v.Removed {
		return "", fmt.Errorf("InvalidParameterValueException: Unable to find the VM by id=%d", vmID)
	}
	if v.State != vm.Running {
		return "", fmt.Errorf("InvalidParameterValueException: VM is not Running, unable to migrate the vm with specified id")
	}
	if v.HostID == "" || s.DB.Host(v.HostID) == nil {
		return "", fmt.Errorf("InvalidParameterValueException: Cannot migrate VM, host with id: %s for VM not found", v.HostID)
	}
	if dest == "" {
		return "", runtimeErr("Unable to find suitable destination to migrate VM %s", v.Name)
	}
	if dest == v.HostID {
		return "", fmt.Errorf("InvalidParameterValueException: Cannot migrate VM, VM is already present on this host, please specify valid destination host to migrate the VM")
	}
	h := s.DB.Host(dest)
	if h == nil {
		return "", fmt.Errorf("InvalidParameterValueException: Unable to find the host to migrate the VM, host id=%s", dest)
	}
	if h.Status != host.Up {
		return "", fmt.Errorf("InvalidParameterValueException: Cannot migrate VM, destination host is not in correct state, has status: %s, state: Enabled", h.Status)
	}
	return v.HostID, nil
}

// migrateVM is VirtualMachineManagerImpl.migrate(vmUuid, srcHostId, dest) outside a work job:
// migrateVmThroughJobQueue, a VmWorkMigrate job on the VM's queue, joined.
func (s *Server) migrateVM(t *Thread, vmID int64, src, dest string) error {
	return s.jobs.runVmWork(t, "VmWorkMigrate", vmID, func(t *Thread) error { return s.orchestrateMigrate(t, vmID, src, dest) })
}

// orchestrateMigrate finds the VM and runs migrate(vm, srcHostId, dest).
func (s *Server) orchestrateMigrate(t *Thread, vmID int64, src, dest string) error {
	v := s.DB.VM(vmID)
	if v == nil || v.Removed {
		s.Log(t, "DEBUG", VMObject(vmID), "Unable to find the vm %d", vmID)
		return runtimeErr("Unable to find a virtual machine with id %d", vmID)
	}
	return s.migrate(t, v, src, dest)
}

// migrate is VirtualMachineManagerImpl.migrate(vm, srcHostId, dest): a PrepareForMigrationCommand to
// the destination; MigrationRequested (host_id := destination, last_host_id := source); a
// MigrateCommand to the source; OperationSucceeded on the destination and a CheckVirtualMachine there.
// Whatever failed after the PrepareForMigrationCommand, the finally sends a StopCommand to the
// destination and tries OperationFailed back to the source (Migrating → Running; a VM already
// Running after the success transition has no such row, and the Java only logs the
// NoTransitionException).
func (s *Server) migrate(t *Thread, v *VMVO, src, dest string) (err error) {
	s.Log(t, "INFO", VMObject(v.ID), "Migrating %s to %s", v.Name, dest)
	if s.DB.Host(src) == nil {
		s.Log(t, "INFO", VMObject(v.ID), "Unable to find the host to migrate from: %s", src)
		return runtimeErr("Unable to find the host to migrate from: %s", src)
	}
	if v.State != vm.Running {
		s.Log(t, "DEBUG", VMObject(v.ID), "VM is not Running, unable to migrate the vm %s", v.Name)
		return runtimeErr("VM is not Running, unable to migrate the vm currently %s , current state: %s", v.Name, v.State)
	}
	spec := s.domainSpec(v)
	work := s.DB.PersistItWork(s.ID, vm.Migrating, v.ID)
	// PrepareForMigrationCommand to the destination; a failed or missing answer is an
	// AgentUnavailableException of the destination, with the row Done and the VM left Running where it
	// is
	pfma, perr := s.agents.Send(t, dest, Message{Kind: MsgPrepareForMigration, Domain: &spec}, 0)
	if perr != nil || !pfma.Result {
		s.DB.UpdateItWorkStep(work.ID, ItWorkDone)
		var te *OperationTimedoutError
		if errors.As(perr, &te) {
			return &AgentUnavailableError{Host: dest, Reason: "Operation timed out"}
		}
		details := "null answer returned"
		if perr == nil {
			details = pfma.Details
		}
		return &AgentUnavailableError{Host: dest, Reason: "Unable to prepare for migration due to " + details}
	}
	// vm.setLastHostId(srcHostId) before changeState(vm, MigrationRequested, dstHostId, work,
	// Migrating): the VO's last host is written with the transition (updateVMStateLocked)
	if v.HostID != src || !s.changeState(t, v, vm.MigrationRequested, vm.Migrating, dest, work, ItWorkMigrating) {
		s.Log(t, "INFO", VMObject(v.ID), "Migration cancelled because state has changed: %s", v.Name)
		return &ConcurrentOperationError{Msg: "Migration cancelled because state has changed: " + v.Name}
	}
	migrated := false
	// outcomeUnknown: the MigrateCommand timed out while active, so the hypervisor may have handed
	// the guest to the destination (C13)
	outcomeUnknown := false
	defer func() {
		if !migrated {
			s.Log(t, "INFO", VMObject(v.ID), "Migration was unsuccessful.  Cleaning up: %s", v.Name)
			s.Log(t, "WARN", VMObject(v.ID), "ALERT: Unable to migrate vm %s from host %s: Migrate Command failed.  Please check logs.", v.Name, src)
			// _agentMgr.send(dstHostId, new Commands(cleanup(vm)), null): a StopCommand to the
			// destination whatever it runs; the Java does not wait for its answer, the reference does
			// (docs/fidelity.md)
			ca, cerr := s.agents.Send(t, dest, Message{Kind: MsgStop, VMName: v.Name}, 0)
			if cerr != nil {
				var ue *AgentUnavailableError
				if errors.As(cerr, &ue) {
					s.Log(t, "INFO", VMObject(v.ID), "Looks like the destination Host is unavailable for cleanup")
				}
			}
			if outcomeUnknown && (cerr != nil || !ca.Result) && !s.Defects[C13] {
				// C13's fix: the guest may run on the destination, which the cleanup did not reach.
				// The VM stays Migrating (host_id the destination, last_host_id the source), as the HA
				// item the timeout scheduled saw it: that item investigates the destination, and the
				// destination's next report (the stall scan, handlePowerOnReportWithNoPendingJobsOnVM
				// case Migrating) or the source's settles where the guest runs
				s.Log(t, "WARN", VMObject(v.ID), "The migration of %s timed out and its cleanup did not reach host %s, where it may run: leaving it Migrating for HA and power sync", v.Name, dest)
			} else if _, ok := vm.Next(v.State, vm.OperationFailed); ok {
				s.DB.UpdateVMState(t.Name, v, vm.OperationFailed, vm.Running, src)
			} else {
				s.Log(t, "WARN", VMObject(v.ID), "Unable to transition to a new state from %s via %s", v.State, vm.OperationFailed)
			}
		}
		s.DB.UpdateItWorkStep(work.ID, ItWorkDone)
	}()
	ma, merr := s.agents.Send(t, v.LastHostID, Message{Kind: MsgMigrate, VMName: v.Name, Target: dest}, 0)
	var te *OperationTimedoutError
	switch {
	case errors.As(merr, &te):
		// e.isActive(): a KVM MigrateCommand is not executed in sequence, so a timed-out one is active
		s.Log(t, "WARN", VMObject(v.ID), "Active migration command so scheduling a restart for %s", v.Name)
		outcomeUnknown = true
		s.ha.scheduleRestart(t, v, true, "")
		return &AgentUnavailableError{Host: dest, Reason: "Operation timed out on migrating " + v.Name}
	case merr != nil:
		return merr
	case !ma.Result:
		return runtimeErr("%s", ma.Details)
	}
	if !s.changeState(t, v, vm.OperationSucceeded, vm.Running, dest, work, ItWorkStarted) {
		return &ConcurrentOperationError{Msg: "Unable to change the state for " + v.Name}
	}
	on, cerr := s.checkVmOnHost(t, v, dest)
	switch {
	case cerr != nil:
		var ce *OperationTimedoutError
		if !errors.As(cerr, &ce) {
			return cerr // AgentUnavailableException escapes: the finally finds the VM Running
		}
		s.Log(t, "DEBUG", VMObject(v.ID), "Error while checking the vm %s on host %s: %v", v.Name, dest, cerr)
	case !on:
		s.Log(t, "ERROR", VMObject(v.ID), "Unable to complete migration for %s", v.Name)
		if _, serr := s.agents.Send(t, src, Message{Kind: MsgStop, VMName: v.Name}, 0); serr != nil {
			s.Log(t, "ERROR", VMObject(v.ID), "AgentUnavailableException while cleanup on source host: %s", src)
		}
		s.cleanup(t, v, "", forcedCleanup, true)
		return runtimeErr("Unable to complete migration for %s", v.Name)
	}
	migrated = true
	return nil
}

// checkVmOnHost is VirtualMachineManagerImpl.checkVmOnHost: a CheckVirtualMachineCommand to the host;
// false on a failed answer or a domain powered off there.
func (s *Server) checkVmOnHost(t *Thread, v *VMVO, hostID string) (bool, error) {
	ans, err := s.agents.Send(t, hostID, Message{Kind: MsgCheckVM, VMName: v.Name}, 0)
	if err != nil {
		return false, err
	}
	return ans.Result && ans.Power != vm.PowerOff, nil
}

// recoverVirtualMachine is UserVmManagerImpl.recoverVirtualMachine: a Destroyed VM, not yet expunged,
// goes back to Stopped (RecoveryRequested, no host) and its volumes the destroy marked Destroy are
// Ready again (VolumeApiService.recoverVolume). An expunged or never-destroyed VM is refused.
func (s *Server) recoverVirtualMachine(t *Thread, vmID int64) error {
	v := s.DB.VM(vmID)
	if v == nil {
		return fmt.Errorf("InvalidParameterValueException: unable to find a virtual machine with id %d", vmID)
	}
	if v.Removed {
		s.Log(t, "DEBUG", VMObject(vmID), "Unable to find vm or vm is removed: %d", vmID)
		return fmt.Errorf("InvalidParameterValueException: Unable to find vm by id %d", vmID)
	}
	if v.State != vm.Destroyed {
		s.Log(t, "DEBUG", VMObject(vmID), "vm is not in the right state: %d", vmID)
		return fmt.Errorf("InvalidParameterValueException: Vm with id %d is not in the right state", vmID)
	}
	s.Log(t, "DEBUG", VMObject(vmID), "Recovering vm %d", vmID)
	if !s.DB.UpdateVMState(t.Name, v, vm.RecoveryRequested, vm.Stopped, "") {
		s.Log(t, "DEBUG", VMObject(vmID), "Unable to recover the vm because it is not in the correct state: %d", vmID)
		return fmt.Errorf("InvalidParameterValueException: Unable to recover the vm because it is not in the correct state: %d", vmID)
	}
	for _, vol := range s.DB.Volumes(vmID) {
		if !vol.Removed && vol.State == "Destroy" {
			s.DB.SetVolumeState(t.Name, vol.ID, "Ready")
		}
	}
	return nil
}
