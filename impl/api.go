package impl

import (
	"slices"
	"time"

	"github.com/csconform/csconform/model/network"
	"github.com/csconform/csconform/model/vm"
)

// The client's face of the server: each call is an API command that becomes an async job, as in
// CloudStack. Callers poll the job (WaitJob) like cloudstack-go's queryAsyncJobResult loop.

// CreateNetwork is createNetwork: the network stays Allocated until a VM start implements it.
func (s *Server) CreateNetwork(name string, persistent bool, poolSize int) *NetworkVO {
	n, err := s.NewNetwork(name, persistent, poolSize)
	if err != nil {
		panic(err)
	}
	return n
}

// NewNetwork is CreateNetwork, refused when the database has no id or /24 left (DB.NewNetwork).
func (s *Server) NewNetwork(name string, persistent bool, poolSize int) (*NetworkVO, error) {
	if poolSize <= 0 {
		poolSize = 32
	}
	return s.DB.NewNetwork("api", name, persistent, poolSize)
}

// DeployVirtualMachine allocates the VM (record, NICs, ROOT volume) and starts it in a job, through
// VMEntityManagerImpl.deployVirtualMachine, which retries the start once on any exception.
//
// After the start, UserVmManagerImpl's private startVirtualMachine(vmId, podId, clusterId, hostId,
// diskOfferingMap, additionalParams, planner) (apache/cloudstack@00114e8b, server/src/main/java/com/
// cloud/vm/UserVmManagerImpl.java, the DeployVMCmd path) reads the VM again and fails the deploy unless
// it is Running: another thread (a migration, a stop, power sync) may have moved it since its start
// completed ("Some other thread changed state of VM, possibly vmsync"). Its finally,
// updateVmStateForFailedVmCreation, takes a VM left Stopped to Error.
func (s *Server) DeployVirtualMachine(name string, networks []int64, hostID string) (*VMVO, *JobVO) {
	v := s.AllocateVirtualMachine(name, networks)
	j := s.jobs.SubmitAPIJob("DeployVMCmd", "VirtualMachine", v.ID, func(t *Thread, _ *JobVO) error {
		err := s.startWithRetry(t, v.ID, hostID)
		if err == nil {
			cur := s.DB.VM(v.ID)
			if cur.State == vm.Running {
				return nil
			}
			s.Log(t, "ERROR", VMObject(v.ID), "VM %s unexpectedly went to %s state", cur.Name, cur.State)
			err = &ConcurrentOperationError{Msg: "Failed to deploy VM " + v.Name}
		}
		if cur := s.DB.VM(v.ID); cur != nil && cur.State == vm.Stopped {
			s.DB.UpdateVMState(t.Name, cur, vm.OperationFailedToError, vm.Error, "")
		}
		s.Log(t, "WARN", VMObject(v.ID), "ALERT: Failed to deploy Instance %s: %v", v.Name, err)
		return err
	})
	return v, j
}

// AllocateVirtualMachine is the allocation half of deployVirtualMachine (startvm=false): the record,
// its NICs and its ROOT volume, Stopped.
func (s *Server) AllocateVirtualMachine(name string, networks []int64) *VMVO {
	v := s.DB.CreateVM("api", name, "User", networks)
	for _, n := range networks {
		s.DB.CreateNic(v.ID, n)
	}
	s.DB.CreateVolume("api", v.ID)
	return v
}

// startWithRetry is VMEntityManagerImpl's start with a planner reservation: any exception → one more
// start.
func (s *Server) startWithRetry(t *Thread, vmID int64, hostID string) error {
	err := s.advanceStart(t, vmID, hostID)
	if err == nil {
		return nil
	}
	s.Log(t, "WARN", VMObject(vmID), "Start of VM %d failed, retrying once: %v", vmID, err)
	return s.advanceStart(t, vmID, hostID)
}

// StartVirtualMachine is the startVirtualMachine API: the start is retried once. The VM's state is
// not read after it: startVirtualMachine(StartVMCmd) returns startVirtualMachine(id, podId, clusterId,
// hostId, params, planner).first(), whose last overload returns the VM it read before
// vmEntity.deploy (apache/cloudstack@00114e8b, UserVmManagerImpl.java); only the DeployVMCmd path
// checks for Running. A VM another operation moved right after its start completed is a started VM.
func (s *Server) StartVirtualMachine(vmID int64, hostID string) *JobVO {
	return s.jobs.SubmitAPIJob("StartVMCmd", "VirtualMachine", vmID, func(t *Thread, _ *JobVO) error {
		return s.startWithRetry(t, vmID, hostID)
	})
}

// StartVirtualMachineOnce is the instance boot group / HA path: advanceStart exactly once. Like
// VirtualMachineManagerImpl.advanceStart, whose caller it stands for, it does not read the VM's state
// after the start (the Running check is the DeployVMCmd path's alone).
func (s *Server) StartVirtualMachineOnce(vmID int64, hostID string) *JobVO {
	return s.jobs.SubmitAPIJob("StartInstanceBootGroup", "VirtualMachine", vmID, func(t *Thread, _ *JobVO) error {
		if err := s.advanceStart(t, vmID, hostID); err != nil {
			s.Log(t, "WARN", VMObject(vmID), "boot group start halted (tier 0: failed to start a VM): %v", err)
			return err
		}
		return nil
	})
}

// StopVirtualMachine is stopVirtualMachine (forced=true is the API's forced stop).
func (s *Server) StopVirtualMachine(vmID int64, forced bool) *JobVO {
	return s.jobs.SubmitAPIJob("StopVMCmd", "VirtualMachine", vmID, func(t *Thread, _ *JobVO) error {
		return s.advanceStop(t, vmID, forceIf(forced, forcedByCaller))
	})
}

// DestroyVirtualMachine is destroyVirtualMachine (expunge=true expunges at once).
func (s *Server) DestroyVirtualMachine(vmID int64, expunge bool) *JobVO {
	return s.jobs.SubmitAPIJob("DestroyVMCmd", "VirtualMachine", vmID, func(t *Thread, _ *JobVO) error {
		return s.destroy(t, vmID, expunge)
	})
}

// MigrateVirtualMachine is migrateVirtualMachine (virtualmachineid, hostid): the checks of
// UserVmManagerImpl.migrateVirtualMachine, then VMMI.migrate through the VM's work queue. A refused
// request fails its job.
func (s *Server) MigrateVirtualMachine(vmID int64, hostID string) *JobVO {
	return s.jobs.SubmitAPIJob("MigrateVMCmd", "VirtualMachine", vmID, func(t *Thread, _ *JobVO) error {
		src, err := s.checkMigrationDestination(vmID, hostID)
		if err != nil {
			return err
		}
		s.Log(t, "INFO", VMObject(vmID), "Starting migration of VM %d from host %s to host %s", vmID, src, hostID)
		return s.migrateVM(t, vmID, src, hostID)
	})
}

// RecoverVirtualMachine is recoverVirtualMachine (id): synchronous in CloudStack (RecoverVMCmd is a
// BaseCmd); here a job like the others, so that a client waits for it the same way.
func (s *Server) RecoverVirtualMachine(vmID int64) *JobVO {
	return s.jobs.SubmitAPIJob("RecoverVMCmd", "VirtualMachine", vmID, func(t *Thread, _ *JobVO) error {
		return s.recoverVirtualMachine(t, vmID)
	})
}

// ExpungeVirtualMachine is expungeVirtualMachine for a Destroyed VM.
func (s *Server) ExpungeVirtualMachine(vmID int64) *JobVO {
	return s.jobs.SubmitAPIJob("ExpungeVMCmd", "VirtualMachine", vmID, func(t *Thread, _ *JobVO) error {
		return s.advanceExpunge(t, vmID)
	})
}

// DeleteNetwork is deleteNetwork: NetworkServiceImpl.deleteNetwork → NetworkOrchestrator.destroyNetwork
// (apache/cloudstack@0035c613, engine/orchestration/.../NetworkOrchestrator.java, destroyNetwork):
// refused while a user VM on the network is not expunged; then shutdownNetwork, whose result is not
// looked at: the row is read again and anything but Allocated (or Setup) is refused ("Network is not
// in the correct state to be destroyed"), so a network left Implementing (shutdownNetwork never
// touches one) or Shutdown (its router would not stop) stays as it is. Otherwise the router is
// expunged (VirtualRouterElement.destroy) and the row goes DestroyNetwork → Destroy and is removed,
// a write made without the network's lock, as the Java's stateTransitTo in destroyNetwork is. C11:
// nothing holds the lock between the check for user VMs and the shutdown's taking of it, so a deploy
// that comes in between starts its VM on a network the delete then shuts down and removes.
func (s *Server) DeleteNetwork(id int64) *JobVO {
	return s.jobs.SubmitAPIJob("DeleteNetworkCmd", "Network", id, func(t *Thread, _ *JobVO) error {
		if !s.Defects[C11] {
			// the fix of C11: the check, the shutdown and the destroy under the network's lock (the
			// shutdown's own taking of it is reentrant), so that a deploy's implementNetwork waits for
			// the delete and then finds the network gone, instead of starting a VM on it in between
			key := NetworkLockKey(id)
			if !s.acquireInLockTable(t, key, s.Config.Seconds("network.lock.timeout")) {
				s.Log(t, "WARN", NetworkObject(id), "Unable to acquire lock for the network %d as a part of network destroy", id)
				return runtimeErr("Failed to delete network %d: its lock is held", id)
			}
			defer s.releaseFromLockTable(t, key)
		}
		n := s.DB.Network(id)
		if n == nil || n.Removed {
			return runtimeErr("Unable to find network with specified id %d", id)
		}
		for _, v := range s.DB.VMs(func(v *VMVO) bool { return v.Type == "User" && !v.Removed }) {
			if slices.Contains(v.NetworkIDs, id) {
				return runtimeErr("Can't delete the network, not all user vms are expunged. Vm %s is in %s state", v.Name, v.State)
			}
		}
		s.shutdownNetwork(t, id)
		n = s.DB.Network(id)
		to, ok := network.Next(n.State, network.DestroyNetwork)
		if !ok || to != network.Destroy {
			s.Log(t, "DEBUG", NetworkObject(id), "Network is not in the correct state to be destroyed: %s", n.State)
			return runtimeErr("Failed to delete network: it is %s", n.State)
		}
		if r := s.DB.VM(n.RouterID); r != nil && !r.Removed {
			if r.State == vm.Running {
				s.stopRouter(t, r)
			}
			if r = s.DB.VM(r.ID); r.State != vm.Stopped {
				return runtimeErr("Unable to destroy router %s: it is %s", r.Name, r.State)
			}
			// destroyRouter: _itMgr.expunge(router), the expunge a user VM's takes, its volumes
			// deleted on its last host (VirtualNetworkApplianceManagerImpl.destroyRouter,
			// apache/cloudstack@ea7d3226)
			if err := s.expunge(t, r); err != nil {
				return err
			}
		}
		s.DB.UpdateNetworkState(t.Name, n, to, "destroyNetwork: DestroyNetwork", false)
		if !mutated(MutDeleteNetworkKeepsRow) {
			s.DB.RemoveNetwork(t.Name, id)
		}
		return nil
	})
}

// jobPoll is how often API callers poll queryAsyncJobResult.
const jobPoll = time.Second

// WaitJob polls a job until it is done, every second, and returns its error.
func (s *Server) WaitJob(j *JobVO) error { return s.WaitJobOn(s.Env, j) }

// WaitJobOn is WaitJob for a caller outside the server (an API client): it waits on the caller's own
// env, so it outlives a server incarnation that dies meanwhile and reads the outcome from the
// database, where the next incarnation writes it, as cloudstack-go's poll does.
func (s *Server) WaitJobOn(env Env, j *JobVO) error {
	_, err := s.jobs.waitJobOn(env, j.ID, jobPoll, 0)
	return err
}
