package external

// Faults through CloudStack's Simulator hypervisor plugin (csconform repro --api URL --faults
// simulator): a scenario fault becomes configureSimulator mocks on the agent commands that carry it,
// cleared (cleanupSimulatorMock) at the end of the step's duration and, whatever happens, when the
// run ends — Ctrl-C included. What the mocks can say is what SimulatorManagerImpl.simulate and
// AgentRoutingResource.getCurrentStatus read (apache/cloudstack plugins/hypervisors/simulator; see
// impl/simmock.go): a command made to wait, to fail or to throw, a ping not sent. A fault they cannot
// say is refused up front, with why.

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/csconform/csconform/faults"
	"github.com/csconform/csconform/harness"
	"github.com/csconform/csconform/harness/cloudclient"
)

// FaultSource is where an external run's faults come from.
type FaultSource int

const (
	// FaultsInject: csconform inject on the hosts (ssh, or --local), on the operator's allowlist.
	FaultsInject FaultSource = iota
	// FaultsSimulator: configureSimulator on a CloudStack whose hosts are the Simulator hypervisor's.
	FaultsSimulator
)

var faultSourceNames = []string{"inject", "simulator"}

func (f FaultSource) String() string {
	if int(f) < len(faultSourceNames) {
		return faultSourceNames[f]
	}
	return "FaultSource(" + strconv.Itoa(int(f)) + ")"
}

// ParseFaultSource reads --faults.
func ParseFaultSource(s string) (FaultSource, error) {
	if i := slices.Index(faultSourceNames, s); i >= 0 {
		return FaultSource(i), nil
	}
	return 0, fmt.Errorf("unknown fault source %q (one of %s)", s, strings.Join(faultSourceNames, ", "))
}

// mockScope is the level a mock is configured at.
type mockScope int

const (
	zoneScope mockScope = iota // every host of the zone the run deploys in
	hostScope                  // the step's host (zone, pod, cluster and host ids, as findByNameBottomUP needs)
)

// simMock is one configureSimulator call of a fault.
type simMock struct {
	scope mockScope
	name  string                       // the agent command
	value func(st harness.Step) string // key:value|...
}

// simFault is a scenario fault through the simulator: its mocks, or why it cannot be said.
type simFault struct {
	mocks []simMock
	// lasting: the mocks stay after the step (until a later step of the same fault, or the run's end)
	// instead of for the step's duration
	lasting bool
	how     string // what the mocks do, in a line
	why     string // why not, when there are no mocks
}

func ms(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }

// hostFaultDefault is a host fault's duration when the step gives none (simFault's sleep).
const hostFaultDefault = 5 * time.Minute

// lostCommand is a command sent into an unreachable host: SimulatorManagerImpl.simulate sleeps the
// wait, then answers the result:fail without running the command (AgentRoutingResource.execute
// returns that failure for a StartCommand or StopCommand before touching its MockVm).
func lostCommand(st harness.Step) string {
	return "wait:" + ms(cmp.Or(st.Duration, hostFaultDefault)) + "|result:fail"
}

var simFaults = map[string]simFault{
	"slow-router-boot": {lasting: true,
		mocks: []simMock{{zoneScope, "StartCommand", func(st harness.Step) string { return "wait:" + ms(st.Duration) }}},
		how:   "StartCommand value wait:<duration ms> at zone scope, until the run ends or a later slow-router-boot replaces it; the simulator cannot tell a router's StartCommand from a user VM's, so every start in the zone waits"},
	"host-unreachable": {
		mocks: []simMock{
			{hostScope, "PingCommand", func(harness.Step) string { return "result:fail" }},
			{hostScope, "CheckHealthCommand", func(harness.Step) string { return "result:fail" }},
			{hostScope, "StartCommand", lostCommand},
			{hostScope, "StopCommand", lostCommand},
			{hostScope, "DeleteCommand", lostCommand}},
		how: "PingCommand and CheckHealthCommand value result:fail at the host's scope for the duration (default 5m): no ping reaches the server, the ping timeout investigates and the health check fails; StartCommand, StopCommand and DeleteCommand value wait:<duration ms>|result:fail there: a VM's command sent to the host is held for the duration and then fails without running, as a cut link loses it (the server's send times out first if its timeout, 2 × wait, is shorter; the simulator cannot refuse a connection, and other commands still run). A StartCommand mock of an earlier slow-router-boot is older and so wins (findByNameBottomUP takes the oldest row). Versions whose AgentRoutingResource.getCurrentStatus no longer reads the PingCommand mock (apache/cloudstack@1502b605) keep pinging"},
	"start-fails": {
		mocks: []simMock{{hostScope, "StartCommand", func(harness.Step) string { return "result:fail" }}},
		how:   "StartCommand value result:fail at the host's scope for the duration (default 5m): every start on the host answers a failed StartAnswer without running, as a hypervisor that cannot create the domain does; a StartCommand mock of an earlier slow-router-boot is older and so wins (findByNameBottomUP takes the oldest row)"},
	"agent-restart":  {why: "the simulator's agents are direct agents inside the management server: there is no agent process to stop and no API call that shuts one down (seed-004-forced-destroy-simulator carries seed 004 with host-unreachable instead)"},
	"agent-kill":     {why: "the simulator's agents are direct agents inside the management server: there is no agent process to kill"},
	"disconnect":     {why: "a mock answers, fails or delays one command; it cannot hold a link's messages both ways and deliver them later"},
	"crash":          {why: "the simulator's VMs are rows of its mock database whose power state changes only when the server starts or stops them (MockVmManagerImpl.startVM, stopVM): no mock or API powers one off behind the server's back (a PingRoutingWithNwGroupsCommand jsonresponse, read before AgentRoutingResource@1502b605, could only replace every ping with one fixed report)"},
	"guest-shutdown": {why: "the simulator's VMs are rows of its mock database: no mock makes a guest power itself off"},
	"stale-report":   {why: "a mock acts on the commands the server sends; the simulator's agent reports only in its ping, collected and processed in one go (DirectAgentAttache.PingTask: getCurrentStatus, then handleCommands, in one thread), so no report is processed after a later answer"},
	"host-power-off": {why: "a mock cannot take a host's VMs away or stop its heartbeat"},
	"host-remove":    {why: "removing a host is an operator's deleteHost (forced=true), not an agent command: do it by hand"},
	"heartbeat-fail": {why: "a real simulator's SimulatorInvestigator (apache/cloudstack@49fe187f) reads a neighbour's failed CheckOnHostCommand as Down, so CheckOnHostCommand result:fail on the neighbours would say it there; csconform's reference investigates as KVMInvestigator does (a result true is Down, a failure Up), where the same mock means the opposite: refused, so that a scenario means the same against either server"},
	"ms-restart":     {why: "restarting the management server needs its host"},
	"peer-stop":      {why: "stopping one management server of several needs its host"},
	"backdate":       {why: "backdating a network writes CloudStack's database"},
}

// SimulatorCapabilities: an external CloudStack with the Simulator hypervisor, faults through
// configureSimulator.
var SimulatorCapabilities = simulatorCapabilities()

func simulatorCapabilities() harness.Capabilities {
	c := harness.Capabilities{World: "through CloudStack's simulator (--faults simulator)", Lacks: map[harness.Capability]string{}}
	for k, v := range Capabilities.Lacks {
		if !strings.HasPrefix(string(k), "fault ") {
			c.Lacks[k] = v
		}
	}
	for _, k := range faults.Kinds {
		if sf, ok := simFaults[k.Name]; !ok || len(sf.mocks) == 0 {
			c.Lacks[harness.FaultCap(k.Name)] = cmp.Or(sf.why, "unknown to the simulator bridge")
		}
	}
	return c
}

// SimulatorMapping says how a catalogue fault goes through the simulator: the mocks, or why not.
func SimulatorMapping(fault string) (expressible bool, text string) {
	sf, ok := simFaults[fault]
	if !ok {
		return false, "unknown to the simulator bridge"
	}
	if len(sf.mocks) == 0 {
		return false, sf.why
	}
	return true, sf.how
}

// SimulatorMock is one configureSimulator call of a fault's step: the command, the value, and
// whether it is configured at the step's host (else the zone's).
type SimulatorMock struct {
	Command, Value string
	HostScope      bool
}

// SimulatorMocks are the mocks a fault step configures through the simulator, in order (nil: the
// fault cannot go through it). Explore's Marvin tests write the same mocks from here.
func SimulatorMocks(st harness.Step) []SimulatorMock {
	var out []SimulatorMock
	for _, m := range simFaults[st.Fault].mocks {
		out = append(out, SimulatorMock{Command: m.name, Value: m.value(st), HostScope: m.scope == hostScope})
	}
	return out
}

// capabilities are the run's: the fault source decides which faults it can apply.
func (eo Options) capabilities() harness.Capabilities {
	if eo.Faults == FaultsSimulator {
		return SimulatorCapabilities
	}
	return Capabilities
}

// liveMock is a mock the run configured and has not cleared yet.
type liveMock struct {
	id    int64
	fault string
	desc  string
}

// simFault applies a fault through configureSimulator, recorded in the history as the other worlds
// record theirs.
func (w *extWorld) simFault(st harness.Step) error {
	sf := simFaults[st.Fault]
	kind, _ := faults.Lookup(st.Fault)
	var targets []string
	if st.Host != "" {
		targets = []string{"host:" + w.eo.hostName(st.Host)}
	}
	if sf.lasting {
		w.clearMocks(st.Fault) // a later step of the same fault replaces the earlier
		if st.Duration <= 0 {
			i := w.rec.BeginFault(st.Fault, kind.Disruptive, "through the simulator: the mocks cleared (default)", targets...)
			w.rec.EndFault(i, "")
			return nil
		}
	}
	var ids []liveMock
	var descs []string
	for _, m := range sf.mocks {
		sc, err := w.mockScope(m.scope, st.Host)
		if err != nil {
			w.clearList(ids)
			return fmt.Errorf("fault %s: %v", st.Fault, err)
		}
		val := m.value(st)
		id, err := w.cc.ConfigureSimulator(sc, m.name, val)
		if err != nil {
			w.clearList(ids)
			return fmt.Errorf("fault %s: %v", st.Fault, w.redact(err.Error()))
		}
		desc := fmt.Sprintf("mock %d %s %s", id, m.name, val)
		ids = append(ids, liveMock{id, st.Fault, desc})
		descs = append(descs, desc)
		w.mu.Lock()
		w.mocks = append(w.mocks, liveMock{id, st.Fault, desc})
		w.mu.Unlock()
	}
	detail := "through configureSimulator: " + strings.Join(descs, ", ")
	if sf.lasting {
		i := w.rec.BeginFault(st.Fault, kind.Disruptive, detail, targets...)
		w.note("fault %s: %s (until the run ends)", st.Fault, detail)
		w.rec.EndFault(i, "")
		return nil
	}
	i := w.rec.BeginFault(st.Fault, kind.Disruptive, detail, targets...)
	w.note("fault %s begins: %s", st.Fault, detail)
	w.sleepWorld(cmp.Or(st.Duration, hostFaultDefault)) // cut short by Ctrl-C: the mocks go at once
	err := w.clearList(ids)
	// a host fault lasts until the host is Up again: until then it explains a failed start
	if err == nil && len(targets) > 0 && w.eo.Ctx.Err() == nil {
		deadline := w.eo.Now().Add(5 * time.Minute)
		for !w.hostIs(strings.TrimPrefix(targets[0], "host:"), "Up") && w.eo.Now().Before(deadline) && harness.SleepCtx(w.eo.Ctx, w.eo.Poll/4) {
			w.check()
		}
	}
	end := "mocks cleared"
	if err != nil {
		end = "failed: " + err.Error()
	}
	w.rec.EndFault(i, end)
	w.note("fault %s ends: %s", st.Fault, end)
	return err
}

func (w *extWorld) mockScope(s mockScope, h string) (cloudclient.MockScope, error) {
	if s == zoneScope {
		return w.cc.ZoneScope()
	}
	return w.cc.HostScope(w.eo.hostName(h))
}

// clearList clears these mocks and forgets them; the first error, after trying every one.
func (w *extWorld) clearList(ms []liveMock) error {
	var first error
	for _, m := range ms {
		err := w.cc.CleanupSimulatorMock(m.id)
		if err != nil && first == nil {
			first = fmt.Errorf("%s: %v", m.desc, w.redact(err.Error()))
		}
		if err == nil {
			w.logf("cleared %s", m.desc)
		}
		w.mu.Lock()
		w.mocks = slices.DeleteFunc(w.mocks, func(x liveMock) bool { return x.id == m.id && err == nil })
		w.mu.Unlock()
	}
	return first
}

// clearMocks clears the live mocks of one fault ("" every one): the run's end, Ctrl-C included.
func (w *extWorld) clearMocks(fault string) []string {
	w.mu.Lock()
	var ms []liveMock
	for _, m := range w.mocks {
		if fault == "" || m.fault == fault {
			ms = append(ms, m)
		}
	}
	w.mu.Unlock()
	var left []string
	for _, m := range ms {
		if err := w.clearList([]liveMock{m}); err != nil {
			left = append(left, fmt.Sprintf("simulator %s (cleanupSimulatorMock id=%d by hand): %v", m.desc, m.id, err))
		}
	}
	return left
}

// noDomains says what a run without a source of the hosts' domains does not check: a Java
// simulator's VMs are rows of its own database (mockvm), which no API lists.
func (w *extWorld) noDomains() []string {
	if len(w.hosts) > 0 {
		return nil
	}
	return []string{"no domains' truth (no --host or --hosts-from-api: a simulator's VMs are rows of its own database): " +
		"orphan-domain, ip-conflict between domains and volume-in-use are not checked; the records alone are"}
}
