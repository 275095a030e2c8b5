package impl

import (
	"time"

	"github.com/csconform/csconform/model/host"
	"github.com/csconform/csconform/model/vm"
)

// Investigation of a host whose agent went away (AgentManagerImpl.handleDisconnectWithInvestigation,
// investigate; HighAvailabilityManagerImpl.investigate; KVMInvestigator.isAgentAlive). Read: apache/
// cloudstack AgentManagerImpl at 002a9ef8 (4.21+, with reconcile commands), KVMInvestigator at
// 0506649f, CheckHealthCommand (wait 50) and CheckOnHostCommand (wait 20).

// ResourceState is the host's resource_state (com.cloud.resource.ResourceState).
type ResourceState string

// The resource states the ping-timeout path looks at.
const (
	ResourceEnabled               ResourceState = ""
	ResourceDisabled              ResourceState = "Disabled"
	ResourceMaintenance           ResourceState = "Maintenance"
	ResourcePrepareForMaintenance ResourceState = "PrepareForMaintenance"
	ResourceErrorInMaintenance    ResourceState = "ErrorInMaintenance"
)

// The commands' own waits (their constructors' setWait).
const (
	checkHealthWait = 50 * time.Second
	checkOnHostWait = 20 * time.Second
)

// easySend is AgentManagerImpl.easySend: nil for a missing or removed host, a host not Up or
// Connecting, and any failure.
func (am *AgentManager) easySend(t *Thread, hostID string, m Message, wait time.Duration) *Message {
	h := am.s.DB.Host(hostID)
	if h == nil || h.Status == host.Removed {
		return nil
	}
	if h.Status != host.Up && h.Status != host.Connecting {
		am.s.Log(t, "DEBUG", HostObject(hostID), "Can not send command %s due to Host %s not being up", m.Kind, hostID)
		return nil
	}
	if d := am.s.Config.CommandTimeout(m.Kind); d > 0 {
		wait = d // commands.timeout (applied here to the investigation's commands only)
	}
	ans, err := am.send(t, hostID, m, wait)
	if err != nil {
		am.s.Log(t, "WARN", HostObject(hostID), "%v", err)
		return nil
	}
	return ans
}

// investigate is AgentManagerImpl.investigate: CheckHealthCommand first (an answer means Up), then
// the HA investigators.
func (am *AgentManager) investigate(t *Thread, hostID string) host.Status {
	if am.Investigate != nil {
		return am.Investigate(hostID)
	}
	am.s.Log(t, "DEBUG", HostObject(hostID), "Checking if agent (%s) is alive", hostID)
	if ans := am.easySend(t, hostID, Message{Kind: MsgCheckHealth}, checkHealthWait); ans != nil && ans.Result {
		am.s.Log(t, "DEBUG", HostObject(hostID), "Agent (%s) responded to checkHealthCommand, reporting that agent is Up", hostID)
		return host.Up
	}
	return am.s.investigateHost(t, hostID)
}

// investigateHost is HighAvailabilityManagerImpl.investigate: the first investigator with an answer.
// Of the default ha.investigators.order only KVMInvestigator answers for a KVM host
// (CheckOnAgentInvestigator.isAgentAlive returns null).
func (s *Server) investigateHost(t *Thread, hostID string) host.Status {
	if s.DB.Host(hostID) == nil {
		return host.Alert
	}
	st := s.kvmIsAgentAlive(t, hostID)
	if st != "" {
		s.Log(t, "DEBUG", HostObject(hostID), "KVMInvestigator was able to determine host %s is in %s", hostID, st)
	}
	return st
}

// kvmIsAgentAlive is KVMInvestigator.isAgentAlive / checkAgentStatusViaNfs: ask the host itself, then
// the Up neighbours, about the host's storage heartbeat. The host answering decides Up or Down; a
// neighbour seeing the heart beat makes an unreachable host Disconnected, one seeing it stopped makes
// it Down. Without NFS storage the answer is Disconnected (the KVM HA agent client is not modelled:
// it is off unless kvm.ha.webservice is installed).
//
// In 4.22 (H2) the answer is the heartbeat alone: a live host whose heartbeat writes failed is Down
// once its agent is out of reach, and every path that trusts Down (a forced stop's release, a start's
// cleanup, HA) then acts on domains that still run. The fix asks about the activity on the volumes of
// the VMs the database puts on the host as well, as KVM host HA's KVMHostActivityChecker does.
func (s *Server) kvmIsAgentAlive(t *Thread, hostID string) host.Status {
	cmd := Message{Kind: MsgCheckOnHost, Target: hostID}
	if !s.Defects[H2] {
		cmd.CheckActivity = true
		for _, v := range s.DB.HostVMs(hostID, func(v *VMVO) bool { return onHostStates[v.State] }) {
			cmd.VMNames = append(cmd.VMNames, v.Name)
		}
	}
	hostStatus := host.Disconnected
	if ans := s.agents.easySend(t, hostID, cmd, checkOnHostWait); ans != nil && ans.Details != noHAStorage {
		hostStatus = host.Up
		if ans.Result {
			hostStatus = host.Down
		}
	}
	neighbour := host.Status("")
	for _, n := range s.DB.Hosts() {
		if n.ID == hostID || n.Status != host.Up {
			continue
		}
		s.Log(t, "DEBUG", HostObject(hostID), "Investigating host:%s via neighbouring host:%s", hostID, n.ID)
		ans := s.agents.easySend(t, n.ID, cmd, checkOnHostWait)
		if ans == nil || ans.Details == noHAStorage {
			continue
		}
		neighbour = host.Up
		if ans.Result {
			neighbour = host.Down
		}
		s.Log(t, "DEBUG", HostObject(hostID), "Neighbouring host:%s returned status:%s for the investigated host:%s", n.ID, neighbour, hostID)
		if neighbour == host.Up {
			break
		}
	}
	switch {
	case neighbour == host.Up && (hostStatus == host.Disconnected || hostStatus == host.Down):
		hostStatus = host.Disconnected
	case neighbour == host.Down && (hostStatus == host.Disconnected || hostStatus == host.Down):
		hostStatus = host.Down
	}
	s.Log(t, "DEBUG", HostObject(hostID), "HA: HOST is ineligible legacy state %s for host %s", hostStatus, hostID)
	return hostStatus
}

// onHostStates are the states of a VM whose domain may run on its host_id.
var onHostStates = map[vm.State]bool{vm.Starting: true, vm.Running: true, vm.Stopping: true, vm.Migrating: true}

// handleDisconnectWithInvestigation (spec 3.14 step 6, AgentManagerImpl.handleDisconnectWithInvestigation).
func (am *AgentManager) handleDisconnectWithInvestigation(t *Thread, a *attache, ev host.Event) {
	s := am.s
	h := s.DB.Host(a.host)
	if h != nil {
		if next, ok := host.Next(h.Status, ev); ok && next == host.Alert {
			s.Log(t, "INFO", HostObject(a.host), "Investigating why host %s has disconnected with event %s", a.host, ev)
			// The verdict below is judged on h, the row as read before the investigation (status,
			// resource state, last_pinged), as the Java's HostVO is: it is not read again.
			determined := am.investigate(t, a.host)
			alertWaitPassed := s.Env.Now().Sub(h.LastPinged) > s.Config.Seconds("alert.wait")
			if determined == "" {
				if !alertWaitPassed {
					s.Log(t, "WARN", HostObject(a.host), "Agent %s state cannot be determined, do nothing", a.host)
					return
				}
				s.Log(t, "WARN", HostObject(a.host), "Agent %s state cannot be determined for more than alert.wait seconds, will go to Alert state", a.host)
				determined = host.Alert
			}
			s.Log(t, "INFO", HostObject(a.host), "The agent from host %s state determined is %s", a.host, determined)
			switch determined {
			case host.Down:
				s.Log(t, "ERROR", HostObject(a.host), "Host %s is down. Starting HA on the VMs", a.host)
				ev = host.HostDown
			case host.Up:
				s.Log(t, "INFO", HostObject(a.host), "Agent is determined to be up and running")
				s.DB.HostTransit(t.Name, a.host, host.Ping, s.ID)
				return
			case host.Disconnected:
				s.Log(t, "WARN", HostObject(a.host), "Agent is disconnected but the host is still up: %s state: %s", a.host, h.Status)
				switch {
				case h.Status == host.Disconnected || (h.Status == host.Up && h.ResourceState == ResourcePrepareForMaintenance):
					if !alertWaitPassed {
						s.Log(t, "DEBUG", HostObject(a.host), "Host %s has been determined to be disconnected but it hasn't passed the wait time yet.", a.host)
						return
					}
					s.Log(t, "WARN", HostObject(a.host), "Host %s has been disconnected past the wait time it should be disconnected.", a.host)
					ev = host.WaitedTooLong
				case h.Status == host.Up:
					s.Log(t, "WARN", HostObject(a.host), "ALERT: Host disconnected, %s: if the agent is not restarted within alert.wait seconds, host will go to Alert state", a.host)
					ev = host.AgentDisconnected
				}
			default:
				s.Log(t, "WARN", HostObject(a.host), "ALERT: Host in ALERT state, %s", a.host)
			}
		}
	}
	am.handleDisconnectWithoutInvestigation(t, a, ev)
	if h := s.DB.Host(a.host); h != nil && h.Status == host.Down {
		s.ha.scheduleRestartForVmsOnHost(t, a.host, true)
	}
}

// skipsInvestigation is MonitorTask's test: a host behind on ping whose resource state is Disabled,
// Maintenance or ErrorInMaintenance is disconnected with ShutdownRequested, without investigation.
func skipsInvestigation(h *HostVO) bool {
	return h != nil && (h.ResourceState == ResourceDisabled || h.ResourceState == ResourceMaintenance || h.ResourceState == ResourceErrorInMaintenance)
}
