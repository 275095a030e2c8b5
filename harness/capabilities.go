package harness

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/csconform/csconform/drivers/sim"
	"github.com/csconform/csconform/faults"
	"github.com/csconform/csconform/model/invariant"
)

// Capability is one thing a scenario may ask of a world: a fault of the catalogue, an operation or a
// feature of its setup.
type Capability string

// The capabilities that are not faults (a fault's is FaultCap(name)).
const (
	PrimedNetworks Capability = "primed networks"
	AgedNetworks   Capability = "aged networks"
	HAVMs          Capability = "HA-enabled VMs"
	PeerServers    Capability = "several management servers"
	SetConfigOp    Capability = "op setConfig"
	AllocateOp     Capability = "op allocate"
	// MigrateOp: a live migration of a VM to another host (the world's hypervisors hand a running
	// domain over, as libvirt's peer-to-peer migration does).
	MigrateOp Capability = "op migrate"
	RecoverOp Capability = "op recover"
	// DeleteNetworkOp: deleteNetwork of a scenario's network.
	DeleteNetworkOp Capability = "op deleteNetwork"
	// VirtualTime: the world runs on a virtual clock, so it takes a scheduler strategy (a scenario's
	// scheduler:) and can let the cloud run on alone after a scenario for as long as a check needs
	// (liveness, jobs left by a dead server, unexplained stops).
	VirtualTime Capability = "virtual time"
	// ServerLog: the world records the server's log lines in its history, which an until: log
	// condition searches.
	ServerLog Capability = "the server's log"
	// DefectSwitches: the world runs the reference, whose known defects a profile (or explicit
	// switches) turns on; Run resolves them and judges the expectations of the profile they match.
	DefectSwitches Capability = "defect switches"
)

// FaultCap is a fault's capability.
func FaultCap(name string) Capability { return Capability("fault " + name) }

// DetectorCap is a detector's capability: a world that lacks it does not run the detector, and its
// Lacks says why (what the detector reads that the world cannot fill). name is one of Detectors.
func DetectorCap(name string) Capability { return Capability("detector " + name) }

// Linearizability is the porcupine check of every object's history (model/linear), the detector
// beside the invariants.
const Linearizability = "linearizability"

// Detectors are every detector's name: the invariants the report prints, in its order, then
// Linearizability.
func Detectors() []string { return append(slices.Clone(invariant.Names), Linearizability) }

// Runs says whether the world runs the detector name.
func (c Capabilities) Runs(name string) bool { return c.Can(DetectorCap(name)) }

// OutsideLacks are the detectors no world that sees the server from outside can feed (containers, an
// external CloudStack): OutsideChecks drops what they would find, and each such world declares them.
var OutsideLacks = map[Capability]string{
	DetectorCap(invariant.NetworkLock): "it needs each network write with its lock holder, which only the server knows (its database and threads)",
	DetectorCap(invariant.GhostRecord): "its bound is power sync's, paused while the server or a host is away and lengthened by a VM's HA holds (op_ha_work): from outside the snapshots leave it zero",
}

// WithLacks is c lacking also what lacks says (a copy: c's map is not changed).
func (c Capabilities) WithLacks(lacks map[Capability]string) Capabilities {
	m := maps.Clone(c.Lacks)
	if m == nil {
		m = map[Capability]string{}
	}
	maps.Copy(m, lacks)
	return Capabilities{World: c.World, Lacks: m}
}

// Capabilities is what a world can do, declared once beside it (as etcd's robustness failpoints each
// answer Available()): Lacks maps what it cannot do to why. The declaration is read before a run
// (Check refuses a scenario up front, every step that cannot run listed), by the external world's
// preflight, by explore's generator (ReachOf) and by the refusals a world makes at run time.
type Capabilities struct {
	World string
	Lacks map[Capability]string
}

// Can says whether the world can do k.
func (c Capabilities) Can(k Capability) bool {
	_, lacks := c.Lacks[k]
	return !lacks
}

// Refusal is the error of a world asked to do what it cannot: what, where and why.
func (c Capabilities) Refusal(k Capability) error {
	if c.Can(k) {
		return nil
	}
	return fmt.Errorf("%s is not available %s: %s", strings.TrimPrefix(string(k), "fault "), c.World, c.Lacks[k])
}

// Faults are the catalogue's faults the world can apply.
func (c Capabilities) Faults() []string {
	var out []string
	for _, k := range faults.Kinds {
		if c.Can(FaultCap(k.Name)) {
			out = append(out, k.Name)
		}
	}
	return out
}

// Check says what in sc the world cannot do, each with where and why; nil: it can run sc.
func (c Capabilities) Check(sc *Scenario) error {
	if errs := c.Refusals(sc); len(errs) > 0 {
		return fmt.Errorf("scenario %s cannot run %s:\n  %s", sc.Name, c.World, strings.Join(errs, "\n  "))
	}
	return nil
}

// Refusals are the lines of Check: "step 3 (fault heartbeat-fail) cannot run in the live world: why".
func (c Capabilities) Refusals(sc *Scenario) []string {
	var errs []string
	refuse := func(where, what string, k Capability) {
		if !c.Can(k) {
			errs = append(errs, fmt.Sprintf("%s (%s) cannot run %s: %s", where, what, c.World, c.Lacks[k]))
		}
	}
	if sc.ManagementServers > 1 {
		refuse(fmt.Sprintf("managementServers %d", sc.ManagementServers), string(PeerServers), PeerServers)
	}
	if sc.Scheduler.Kind != sim.Random {
		refuse("scheduler "+sc.Scheduler.String(), "a strategy of the simulator's scheduler", VirtualTime)
	}
	for _, n := range sc.Networks {
		if n.Primed {
			refuse("network "+n.Name, "primed", PrimedNetworks)
		}
		if n.Age > 0 {
			refuse("network "+n.Name, "aged "+n.Age.String(), AgedNetworks)
		}
	}
	for i, st := range sc.Steps {
		where := fmt.Sprintf("step %d", i+1)
		if st.Until == "log" {
			refuse(where, "until log", ServerLog)
		}
		switch {
		case st.Fault != "":
			refuse(where, "fault "+st.Fault, FaultCap(st.Fault))
		case st.Op == "setConfig":
			refuse(where, "setConfig "+st.Key, SetConfigOp)
		case st.Op == "allocate":
			refuse(where, "allocate "+st.VM, AllocateOp)
		case st.Op == "migrate":
			refuse(where, "migrate "+st.VM, MigrateOp)
		case st.Op == "recover":
			refuse(where, "recover "+st.VM, RecoverOp)
		case st.Op == "deleteNetwork":
			refuse(where, "deleteNetwork "+st.Network, DeleteNetworkOp)
		case st.HA:
			refuse(where, "deploy of HA-enabled VM "+st.VM, HAVMs)
		}
	}
	return errs
}

// The worlds' declarations.
var (
	// SimCapabilities: the simulator does everything.
	SimCapabilities = Capabilities{World: "in the simulator"}

	// LiveCapabilities: the live world runs the reference on the machine csconform runs on, hosts
	// simulated in real time over real TCP.
	LiveCapabilities = Capabilities{World: "in the live world", Lacks: map[Capability]string{
		VirtualTime:                WhyRealTime,
		FaultCap("host-power-off"): noHostPower,
		FaultCap("heartbeat-fail"): noHostPower,
		FaultCap("peer-stop"):      WhyPeersSimOnly,
		PeerServers:                WhyPeersSimOnly,
	}}.WithLacks(RealTimeLacks)

	// LibvirtCapabilities: real QEMU domains on the machine csconform runs on.
	LibvirtCapabilities = Capabilities{World: "on libvirt", Lacks: map[Capability]string{
		MigrateOp:                          WhyNoMigration,
		FaultCap("start-fails"):            "the libvirt driver has no way yet to make QEMU fail a domain's start on demand",
		VirtualTime:                        WhyRealTime,
		FaultCap("host-power-off"):         noHostPower,
		FaultCap("heartbeat-fail"):         noHostPower,
		FaultCap("peer-stop"):              WhyPeersSimOnly,
		PeerServers:                        WhyPeersSimOnly,
		DetectorCap(invariant.StorageLeak): "its volumes are libvirt's files, which the driver does not list yet",
	}}.WithLacks(RealTimeLacks)
)

// RealTimeLacks are the detectors that let the cloud run on alone after the scenario (in the
// simulator's virtual time): every world in real time declares them.
var RealTimeLacks = map[Capability]string{
	DetectorCap(invariant.StuckInTransition): whyNoRunOn,
	DetectorCap(invariant.LeftServerJob):     whyNoRunOn,
	DetectorCap(invariant.UnexplainedStop):   whyNoRunOn,
}

const whyNoRunOn = "it runs in real time: the check lets the cloud run on alone after the scenario for as long as it needs, which only the simulator's virtual time affords"

// Why a world lacks a capability, in the words several worlds share (WhyRealTime, WhyPeersSimOnly).
const (
	WhyRealTime     = "it runs in real time: a scheduler strategy, and the checks that let the cloud run on alone after the scenario, are the simulator's"
	noHostPower     = "its hosts are real machines (or the machine csconform runs on) whose power and shared-storage heartbeat csconform does not control"
	WhyPeersSimOnly = "several management servers run only in the simulator (--driver sim)"
	// WhyNoMigration: a world whose hosts are one machine's libvirt or containers cannot move a domain
	// between two hypervisors.
	WhyNoMigration = "its hosts share one machine's hypervisor, so a domain cannot live-migrate between two of them (a real migration needs two libvirt daemons)"
	// WhyNoServerLog: a world that sees the server from outside.
	WhyNoServerLog = "it sees the server from outside: its history has no server log lines for an until: log to search"
)
