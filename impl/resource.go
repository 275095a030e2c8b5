package impl

import (
	"fmt"

	"github.com/csconform/csconform/model/host"
	"github.com/csconform/csconform/model/vm"
)

// DeleteHost is ResourceManagerImpl.deleteHost with forced=true, as an operator removes a host
// (doDeleteHost): HA-disabled VMs and VMs in Stopping are force-stopped, HA-enabled Running or
// Starting VMs get an HA restart without investigation; then the agent is disconnected and the host
// goes Removed, and the VMs still marked on it are set Stopped with no host (doDeleteHost's last sweep,
// apache/cloudstack 0115b87ebb85c67f8b1e8177a86004a66112de75 server/.../resource/ResourceManagerImpl.java).
// Without forced, a host with VMs is refused.
//
// A host another server owns (host.mgmt_server_id) is not deleted here: deleteHost's
// propagateResourceEvent sends the DeleteHost event to the owner, whose executeUserRequest runs
// doDeleteHost(hostId, false, false) — not forced — so the owner refuses a host that is not in
// Maintenance (or Degraded, not modelled) with "cannot be deleted as it is not in maintenance mode",
// and the caller's deleteHost returns false ("Failed to delete host"), as it does when the owner
// cannot be reached (_clusterMgr.execute answers null: AgentUnavailableException). Until this row the
// reference deleted such a host on the caller's side and left the owner's attache in place, where
// starts still sent commands to the removed host (finding H).
func (s *Server) DeleteHost(hostID string, forced bool) error {
	if h := s.DB.Host(hostID); h != nil && h.Status != host.Removed && s.Clustered && h.MSID != "" && h.MSID != s.ID {
		t := &Thread{Name: s.nextThread("API-Job-Executor")}
		s.Log(t, "DEBUG", HostObject(hostID), "Propagating resource request event:DeleteHost to agent:%s", hostID)
		var peer *Server
		if s.Peers != nil {
			peer = s.Peers(h.MSID)
		}
		if peer == nil {
			return fmt.Errorf("Failed to delete host: AgentUnavailableException: Resource [Host:%s] is unreachable: the management server %s that owns it does not answer", hostID, h.MSID)
		}
		if err := peer.doDeleteHost(hostID, false); err != nil {
			s.Log(t, "DEBUG", HostObject(hostID), "Result for agent change is false")
			return fmt.Errorf("Failed to delete host: %v", err)
		}
		return nil
	}
	return s.doDeleteHost(hostID, forced)
}

// doDeleteHost is ResourceManagerImpl.doDeleteHost on the server that owns the host (or on any server
// when nobody does); not forced, a host not in Maintenance is refused first (canDeleteHost).
func (s *Server) doDeleteHost(hostID string, forced bool) error {
	t := &Thread{Name: s.nextThread("API-Job-Executor")}
	h := s.DB.Host(hostID)
	if h == nil || h.Status == host.Removed {
		return fmt.Errorf("InvalidParameterValueException: Host with id %s doesn't exist", hostID)
	}
	if !forced && h.ResourceState != ResourceMaintenance {
		return fmt.Errorf("CloudRuntimeException: Host %s cannot be deleted as it is not in maintenance mode. Either put the host into maintenance or perform a forced deletion.", hostID)
	}
	vms := s.DB.VMs(func(v *VMVO) bool { return !v.Removed && v.HostID == hostID })
	if len(vms) > 0 && !forced {
		return fmt.Errorf("Unable to delete host: %s as there are vms running on it; use forced=true", hostID)
	}
	for _, v := range vms {
		if !s.Defects[H4] {
			// H4's fix: decide on the VM as it is at its turn, not as the list read it (an earlier VM's
			// forced stop can take minutes, and a client's stop that fails meanwhile leaves the VM
			// Running again)
			cur := s.DB.VM(v.ID)
			if cur == nil || cur.Removed || cur.HostID != hostID {
				continue
			}
			v = cur
		}
		if !v.HAEnabled || v.State == vm.Stopping || mutated(MutHaHostRemoveStopsHaVMs) {
			s.Log(t, "DEBUG", VMObject(v.ID), "Stopping vm: %s as a part of deleteHost id=%s", v.Name, hostID)
			if err := s.advanceStop(t, v.ID, forcedByCaller); err != nil { // the operator's deleteHost forced=true
				return fmt.Errorf("There was an error stopping the vm: %s as a part of hostDelete id=%s: %v", v.Name, hostID, err)
			}
		} else if v.State == vm.Running || v.State == vm.Starting {
			s.Log(t, "DEBUG", VMObject(v.ID), "Scheduling restart for vm: %s %s, as a part of deleteHost id=%s", v.Name, v.State, hostID)
			s.ha.scheduleRestart(t, v, false, "")
		}
	}
	s.agents.mu.Lock()
	a := s.agents.attaches[hostID]
	s.agents.mu.Unlock()
	if a != nil {
		s.agents.removeAgent(a)
	}
	if _, ok := s.DB.HostTransit(t.Name, hostID, host.Remove, s.ID); !ok {
		// Connecting/Up without a Remove edge: the row goes anyway (the Java marks it removed).
		s.DB.HostTransit(t.Name, hostID, host.ShutdownRequested, s.ID)
		s.DB.HostTransit(t.Name, hostID, host.Remove, s.ID)
	}
	// doDeleteHost: "Make sure any VMs that were marked as being on this host are cleaned up" — a VM
	// whose stop or restart left it there (a router whose start HA's restart sent to the host while the
	// delete ran, its StartCommand cancelled with the attache) goes Stopped with no host.
	for _, id := range s.DB.StopVMsOfRemovedHost(t.Name, hostID) {
		s.Log(t, "DEBUG", VMObject(id), "VM %d was marked on removed host %s: set Stopped", id, hostID)
	}
	s.Log(t, "INFO", HostObject(hostID), "Host %s removed", hostID)
	return nil
}
