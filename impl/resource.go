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
func (s *Server) DeleteHost(hostID string, forced bool) error {
	t := &Thread{Name: s.nextThread("API-Job-Executor")}
	h := s.DB.Host(hostID)
	if h == nil || h.Status == host.Removed {
		return fmt.Errorf("InvalidParameterValueException: Host with id %s doesn't exist", hostID)
	}
	vms := s.DB.VMs(func(v *VMVO) bool { return !v.Removed && v.HostID == hostID })
	if len(vms) > 0 && !forced {
		return fmt.Errorf("Unable to delete host: %s as there are vms running on it; use forced=true", hostID)
	}
	for _, v := range vms {
		if !v.HAEnabled || v.State == vm.Stopping {
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
