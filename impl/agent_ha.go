package impl

import (
	"slices"

	"github.com/csconform/csconform/model/vm"
)

// HAStorage is what a KVM agent sees of the other hosts on the shared NFS primary storage: the
// heartbeat file each host's KVMHAMonitor writes (kvmheartbeat.sh), and the VMs' disk activity.
type HAStorage interface {
	// HeartbeatAlive: the host's heartbeat is fresh (KVMHAChecker reads it).
	HeartbeatAlive(host string) bool
	// DiskActivity: the VM's volumes are being written by a domain on host
	// (CheckVMActivityOnStoragePoolCommand, kvmvmactivity.sh).
	DiskActivity(host, vmName string) bool
}

// GuestNetwork is the guest networks as a virtual router reaches them.
type GuestNetwork interface {
	// AnswersPing: a running guest holds the address and answers ICMP.
	AnswersPing(ip string) bool
}

// noHAStorage is the answer of an agent without an NFS pool: KVMInvestigator skips such hosts
// ("host has no NFS storage. Skipping investigation via NFS").
const noHAStorage = "no NFS storage pool for HA heartbeats"

// executeHA runs the HA commands: LibvirtCheckOnHostCommandWrapper and LibvirtFenceCommandWrapper
// answer result=true when the target's heart is NOT beating ("Heart is still beating..." is
// result=false); LibvirtCheckVirtualMachineCommandWrapper answers the domain's power state.
func (a *Agent) executeHA(m Message, ans *Message) {
	switch m.Kind {
	case MsgCheckVM:
		// getVmState looks the domain up by name: a domain this host is receiving by live migration
		// is there, paused (PowerOn in s_powerStatesTable), as well as a running one
		ans.Power = vm.PowerOff
		if slices.Contains(a.HV.Running(), m.VMName) || receiving(a.HV, m.VMName) {
			ans.Power = vm.PowerOn
		}
		return
	case MsgPingTest:
		// LibvirtPingTestCommandWrapper: pingtest.sh logs into the router over its link-local address,
		// which only its own host reaches, and pings the guest once from there.
		switch {
		case !slices.Contains(a.HV.Running(), m.VMName):
			ans.Result, ans.Details = false, "Unable to ping the vm "+m.PrivateIP+": router "+m.VMName+" is not running here"
		case a.Guests == nil || !a.Guests.AnswersPing(m.PrivateIP):
			ans.Result, ans.Details = false, "Unable to ping the vm "+m.PrivateIP
		}
		return
	}
	if a.HA == nil {
		ans.Result, ans.Details = false, noHAStorage
		return
	}
	if a.HA.HeartbeatAlive(m.Target) {
		ans.Result, ans.Details = false, "Heart is still beating..."
		return
	}
	if m.Kind == MsgFence && m.CheckActivity && a.HA.DiskActivity(m.Target, m.VMName) {
		// The H1 fix: a stale heartbeat with the VM's disks still written is a live host whose
		// heartbeat failed, not a dead one.
		ans.Result, ans.Details = false, "VM "+m.VMName+" is still writing to its volumes"
		return
	}
	if m.Kind == MsgCheckOnHost && m.CheckActivity {
		// The H2 fix: the same activity check for the investigation, over the VMs the database puts
		// on the host (KVMHostActivityChecker.isVMActivtyOnHost of KVM host HA)
		for _, name := range m.VMNames {
			if a.HA.DiskActivity(m.Target, name) {
				ans.Result, ans.Details = false, "VM "+name+" is still writing to its volumes"
				return
			}
		}
	}
	ans.Result = true
}

// PowerLoss is the host losing power under the agent: nothing is sent and the socket is not closed
// (no FIN, no RST); the management server finds out by missed pings.
func (a *Agent) PowerLoss() {
	a.mu.Lock()
	a.dead = true
	a.mu.Unlock()
}
