package impl_test

import (
	"slices"
	"testing"
	"time"

	"github.com/csconform/csconform/drivers/sim"
	"github.com/csconform/csconform/impl"
	"github.com/csconform/csconform/model/host"
	"github.com/csconform/csconform/model/vm"
	"github.com/stretchr/testify/require"
)

// haWorld is a server with simulated hosts whose agents read the simulated storage heartbeats.
type haWorld struct {
	t      *testing.T
	s      *sim.Scheduler
	f      *sim.Fabric
	db     *impl.DB
	srv    *impl.Server
	hosts  map[string]*sim.Host
	agents map[string]*impl.Agent
	evs    *eventLog
	net    int64
}

func newHAWorld(t *testing.T, defects impl.Switches, hostIDs ...string) *haWorld {
	sv := newSimServer(t, 5, nil, defects)
	s := sv.s
	w := &haWorld{t: t, s: s, f: sv.f, db: sv.db, srv: sv.srv, evs: sv.log, hosts: map[string]*sim.Host{}, agents: map[string]*impl.Agent{}}
	for _, h := range hostIDs {
		w.hosts[h] = sim.NewHost(s, h)
	}
	for _, h := range hostIDs {
		w.startAgent(h)
	}
	w.runUntil(time.Minute, func() bool { return w.status(hostIDs[len(hostIDs)-1]) == host.Up && w.status(hostIDs[0]) == host.Up })
	w.net = w.srv.CreateNetwork("n1", true, 8).ID
	return w
}

func (w *haWorld) startAgent(h string) {
	a := impl.NewAgent(h, w.s, w.f, w.hosts[h], nil)
	v := sim.NewHAView(w.s, w.hosts)
	a.HA, a.Guests = v, v
	w.agents[h] = a
	a.Start()
}

func (w *haWorld) status(h string) host.Status {
	if r := w.db.Host(h); r != nil {
		return r.Status
	}
	return ""
}

func (w *haWorld) runUntil(d time.Duration, done func() bool) {
	w.t.Helper()
	require.NoError(w.t, w.s.RunUntil(w.s.Now().Add(d), done))
}

func (w *haWorld) deploy(name, h string, ha bool) *impl.VMVO {
	w.t.Helper()
	v, j := w.srv.DeployVirtualMachine(name, []int64{w.net}, h)
	w.db.SetHAEnabled(v.ID, ha)
	done := false
	w.s.Go("client-"+name, func() { w.srv.WaitJob(j); done = true })
	w.runUntil(5*time.Minute, func() bool { return done })
	require.Equal(w.t, vm.Running, w.db.VM(v.ID).State, "deploy %s", name)
	return w.db.VM(v.ID)
}

// logged says whether a management-server line starting with prefix was written.
func (w *haWorld) logged(prefix string) bool {
	return w.evs.logged(0, prefix)
}

// TestDisconnectWithInvestigation pins AgentManagerImpl.handleDisconnectWithInvestigation and
// investigate (apache/cloudstack 4.21+ copy 002a9ef8) with KVMInvestigator.checkAgentStatusViaNfs:
//   - a link that drops from Up gives AgentDisconnected, whose next status is Alert: investigate;
//   - investigate sends CheckHealthCommand (wait 50) through easySend: an answer is Up;
//   - else HighAvailabilityManagerImpl.investigate asks KVMInvestigator: CheckOnHostCommand (wait 20)
//     to the host, then to the Up neighbours, which read its NFS heartbeat; result=true means the
//     heart stopped. Host unanswered + a neighbour seeing the heart beat → Disconnected; + a
//     neighbour seeing it stopped → Down; no neighbour → Disconnected;
//   - Disconnected from Up → event AgentDisconnected (Alert); Down → HostDown and
//     scheduleRestartForVmsOnHost, whose HA items force-stop HA-disabled VMs once fenced;
//   - MonitorTask: a host behind on ping in resource state Disabled or Maintenance is disconnected with
//     ShutdownRequested ("so no investigation").
func TestDisconnectWithInvestigation(t *testing.T) {
	cases := []struct {
		name       string
		hosts      []string
		heartbeat  bool // h1's heartbeat stopped a while before
		powerOff   bool // h1 loses power (domains gone, link silent) instead of its agent being killed
		disabled   bool // h1's resource state is Disabled; its link is cut instead of its agent killed
		healInTime bool // the link is cut and healed while CheckHealthCommand waits
		want       host.Status
		wantVM     vm.State
		logs       []string
		noLogs     []string
	}{
		{name: "agent killed, neighbour sees the heart beat: Alert", hosts: []string{"h1", "h2"},
			want: host.Alert, wantVM: vm.Running,
			logs: []string{"Investigating why host h1", "Neighbouring host:h2 returned status:Up", "Agent is disconnected but the host is still up"}},
		{name: "agent killed, single host: Disconnected, Alert", hosts: []string{"h1"},
			want: host.Alert, wantVM: vm.Running,
			logs: []string{"HA: HOST is ineligible legacy state Disconnected for host h1"}, noLogs: []string{"Investigating host:h1 via neighbouring"}},
		// (with H2 on, the heartbeat alone, it is Down: TestInvestigationAsksAboutVMActivity, TestHAKVMFencing)
		{name: "agent killed, heart stopped, domain runs: its disks are written, Alert", hosts: []string{"h1", "h2"}, heartbeat: true,
			want: host.Alert, wantVM: vm.Running,
			logs: []string{"Neighbouring host:h2 returned status:Up for the investigated host:h1"}, noLogs: []string{"Host h1 is down. Starting HA on the VMs"}},
		{name: "power off: Down, VM force-stopped by HA", hosts: []string{"h1", "h2"}, powerOff: true,
			want: host.Down, wantVM: vm.Stopped,
			logs: []string{"Ping timeout for agent h1, do investigation", "Host h1 is down. Starting HA on the VMs", "Scheduling restart for VMs on host h1", "Fencer KVMFenceBuilder returned true", "VM is not HA enabled so we're done."}},
		{name: "ping timeout, link back while CheckHealthCommand waits: Up", hosts: []string{"h1", "h2"}, healInTime: true,
			want: host.Up, wantVM: vm.Running,
			logs: []string{"Ping timeout for agent h1, do investigation", "Agent (h1) responded to checkHealthCommand", "Agent is determined to be up and running"}},
		{name: "ping timeout of a Disabled host: no investigation", hosts: []string{"h1", "h2"}, disabled: true,
			want: host.Disconnected, wantVM: vm.Running,
			logs: []string{"Ping timeout but agent h1 is in resource state of Disabled, so no investigation"}, noLogs: []string{"Investigating why host h1"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := newHAWorld(t, impl.Switches{}, c.hosts...)
			web := w.deploy("web1", "h1", false)
			if c.heartbeat {
				w.hosts["h1"].StopHeartbeat(true)
				w.runUntil(sim.HeartbeatWindow+time.Second, nil)
			}
			switch {
			case c.disabled:
				w.db.SetHostResourceState("h1", impl.ResourceDisabled)
				w.f.Cut("h1", true)
				w.runUntil(10*time.Minute, func() bool { return w.status("h1") != host.Up })
			case c.powerOff:
				w.agents["h1"].PowerLoss()
				w.f.Cut("h1", true)
				w.hosts["h1"].PowerOff()
				w.runUntil(10*time.Minute, func() bool { return w.status("h1") != host.Up })
				w.runUntil(30*time.Second, nil)
			case c.healInTime:
				w.f.Cut("h1", true)
				w.runUntil(10*time.Minute, func() bool { return w.logged("Checking if agent (h1) is alive") })
				w.runUntil(10*time.Second, nil)
				w.f.Cut("h1", false)
				w.runUntil(2*time.Minute, func() bool { return w.logged("Agent is determined to be up and running") })
			default:
				w.agents["h1"].Kill()
				w.runUntil(time.Minute, func() bool { return w.status("h1") != host.Up })
				w.runUntil(30*time.Second, nil) // HA, when it runs, is done by then
			}
			require.Equal(t, c.want, w.status("h1"))
			require.Equal(t, c.wantVM, w.db.VM(web.ID).State)
			for _, l := range c.logs {
				require.True(t, w.logged(l), "logged %q", l)
			}
			for _, l := range c.noLogs {
				require.False(t, w.logged(l), "logged %q", l)
			}
		})
	}
}

// TestHAKVMFencing pins HighAvailabilityManagerImpl.restart (04913a45) with KVMFencer.fenceOff: an
// HA-enabled VM on a host judged Down is investigated (CheckOnAgentInvestigator cannot reach the host,
// KVMInvestigator.isVmAlive throws UnknownVM for a host not Up), so it is fenced: a FenceCommand to the
// other Up hosts, which (LibvirtFenceCommandWrapper) only check that the host's heartbeat stopped.
// Then advanceStop(forced) and startVm elsewhere. With H1 on (4.22) a live host whose heartbeat
// failed is "fenced" while its domain runs: the VM runs twice. Fixed: the fence also requires no disk
// activity of the VM, it fails, and the HA item waits.
func TestHAKVMFencing(t *testing.T) {
	for _, h1 := range []bool{true, false} {
		name := map[bool]string{true: "cloudstack-4.22 (H1 on): two domains", false: "fixed (H1 off): not fenced"}[h1]
		t.Run(name, func(t *testing.T) {
			// H2 on in both: the heartbeat-only investigation judges h1 Down, so HA reaches the fence
			w := newHAWorld(t, impl.Switches{impl.H1: h1, impl.H2: true}, "h1", "h2")
			web := w.deploy("web1", "h1", true)
			w.hosts["h1"].StopHeartbeat(true)
			w.runUntil(sim.HeartbeatWindow+time.Second, nil)
			w.agents["h1"].Kill() // its domains run on
			w.runUntil(time.Minute, func() bool { return w.status("h1") == host.Down })
			w.runUntil(2*time.Minute, nil)
			require.Equal(t, host.Down, w.status("h1"))
			require.Contains(t, w.hosts["h1"].Running(), web.Name)
			got := w.db.VM(web.ID)
			if h1 {
				require.True(t, w.logged("Fencer KVMFenceBuilder returned true"))
				require.Equal(t, vm.Running, got.State)
				require.Equal(t, "h2", got.HostID)
				require.Contains(t, w.hosts["h2"].Running(), web.Name, "HA started a second domain")
				return
			}
			require.True(t, w.logged("Fencer KVMFenceBuilder returned false"))
			require.Equal(t, vm.Running, got.State)
			require.Equal(t, "h1", got.HostID)
			require.NotContains(t, w.hosts["h2"].Running(), web.Name)
		})
	}
}

// TestInvestigationAsksAboutVMActivity pins H2, found by csconform explore under fixed (scenario
// heartbeat-fail-destroy). KVMInvestigator.isAgentAlive (0506649f) sends CheckOnHostCommand to the
// host and then to its Up neighbours; LibvirtCheckOnHostCommandWrapper answers from the host's
// heartbeat file alone (KVMHAChecker), so a live host whose heartbeat writes failed, with its agent
// gone, is Down while its domains run (4.22, H2 on), and everything that trusts Down may release
// their resources. The fix asks about the activity on the volumes of the VMs the database puts on
// the host too, as KVM host HA's KVMHostActivityChecker.isVMActivtyOnHost does: web1's disks are
// written, h1 is not Down.
func TestInvestigationAsksAboutVMActivity(t *testing.T) {
	for _, h2 := range []bool{true, false} {
		name := map[bool]string{true: "cloudstack-4.22 (H2 on): Down", false: "fixed (H2 off): not Down"}[h2]
		t.Run(name, func(t *testing.T) {
			w := newHAWorld(t, impl.Switches{impl.H2: h2}, "h1", "h2")
			web := w.deploy("web1", "h1", false)
			w.hosts["h1"].StopHeartbeat(true)
			w.runUntil(sim.HeartbeatWindow+time.Second, nil)
			w.agents["h1"].Kill() // its domains run on
			w.runUntil(5*time.Minute, func() bool { return w.status("h1") == host.Down })
			require.Contains(t, w.hosts["h1"].Running(), web.Name)
			require.Equal(t, h2, w.status("h1") == host.Down, "h1 is %s", w.status("h1"))
			require.Equal(t, !h2, w.logged("Neighbouring host:h2 returned status:Up for the investigated host:h1"))
		})
	}
}

// TestHAShortcutOnPowerOffReport pins VirtualMachineManagerImpl.handlePowerOffReportWithNoPendingJobsOnVM
// (4.22 copy): an HA-enabled Running VM reported off (ha.vm.restart.hostup true) is not synced to
// Stopped: haMgr.scheduleRestart(vm, true), whose restart finds it off on its Up host
// (CheckVirtualMachineCommand, alive=false counts as fenced), force-stops and starts it again. An
// HA-disabled VM is synced to Stopped as before.
func TestHAShortcutOnPowerOffReport(t *testing.T) {
	for _, ha := range []bool{true, false} {
		t.Run(map[bool]string{true: "HA-enabled: restarted", false: "HA-disabled: Stopped"}[ha], func(t *testing.T) {
			w := newHAWorld(t, impl.Switches{}, "h1")
			web := w.deploy("web1", "h1", ha)
			require.NoError(t, w.hosts["h1"].Crash(web.Name, "CRASHED"))
			w.runUntil(3*time.Minute, nil)
			got := w.db.VM(web.ID)
			require.Equal(t, ha, w.logged("Detected out-of-band stop of a HA enabled VM "+web.Name))
			if ha {
				require.True(t, w.logged("HA is now restarting "+web.Name))
				require.Equal(t, vm.Running, got.State)
				require.Contains(t, w.hosts["h1"].Running(), web.Name)
				return
			}
			require.Equal(t, vm.Stopped, got.State)
		})
	}
}

// TestPingInvestigatorFindsAGuestAlive pins UserVmDomRInvestigator.isVmAlive and testUserVM
// (apache/cloudstack@7b29dd99, server/src/main/java/com/cloud/ha/UserVmDomRInvestigator.java), the
// "PingInvestigator" of ha.investigators.order, after KVMInvestigator: for a user VM each guest NIC's
// network router pings the guest's address, through the router's host for KVM (PingTestCommand by
// easySend); an answer makes the VM alive, and HighAvailabilityManagerImpl.restart, its host not Up,
// reschedules the item (investigate.retry.interval) with no fence and no forced stop. No answer, or
// the router's host out of reach, is UnknownVM and the fencers are asked. Here h1's heartbeat writes
// fail and its agent is killed (its domains run on); with H1 and H2 on, the heartbeat-only fence
// would succeed. web1's router runs on h1 (unreachable: fenced, a second domain on h2) or on h2
// (web1 answers its ping: alive, left alone).
func TestPingInvestigatorFindsAGuestAlive(t *testing.T) {
	cases := []struct {
		name     string
		routerOn string
		alive    bool
	}{
		{"router on the unreachable host: unknown, fenced", "h1", false},
		{"router on a reachable host: the guest answers, alive", "h2", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := newHAWorld(t, impl.Switches{impl.H1: true, impl.H2: true}, "h1", "h2")
			w.deploy("first", c.routerOn, false) // the network's router starts on the first VM's host
			web := w.deploy("web1", "h1", true)
			w.hosts["h1"].StopHeartbeat(true)
			w.runUntil(sim.HeartbeatWindow+time.Second, nil)
			w.agents["h1"].Kill() // its domains run on
			w.runUntil(5*time.Minute, func() bool { return w.status("h1") == host.Down })
			w.runUntil(2*time.Minute, nil)
			require.Equal(t, host.Down, w.status("h1"))
			require.Equal(t, c.alive, w.logged("PingInvestigator found "+web.Name+" to be alive? true"))
			require.Equal(t, !c.alive, w.logged("Fencer KVMFenceBuilder returned true"))
			require.Contains(t, w.hosts["h1"].Running(), web.Name)
			require.Equal(t, !c.alive, slices.Contains(w.hosts["h2"].Running(), web.Name), "a second domain on h2")
			if c.alive {
				require.True(t, w.logged("Rescheduling because the host is not up but the vm is alive"))
				got := w.db.VM(web.ID)
				require.Equal(t, vm.Running, got.State)
				require.Equal(t, "h1", got.HostID)
			}
		})
	}
}
