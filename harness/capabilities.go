package harness

import (
	"fmt"
	"strings"

	"github.com/csconform/csconform/drivers/sim"
	"github.com/csconform/csconform/faults"
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
	// VirtualTime: the world runs on a virtual clock, so it takes a scheduler strategy (a scenario's
	// scheduler:) and can let the cloud run on alone after a scenario for as long as a check needs
	// (liveness, jobs left by a dead server, unexplained stops).
	VirtualTime Capability = "virtual time"
	// DefectSwitches: the world runs the reference, whose known defects a profile (or explicit
	// switches) turns on; Run resolves them and judges the expectations of the profile they match.
	DefectSwitches Capability = "defect switches"
)

// FaultCap is a fault's capability.
func FaultCap(name string) Capability { return Capability("fault " + name) }

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
	if errs := c.refusals(sc); len(errs) > 0 {
		return fmt.Errorf("scenario %s cannot run %s:\n  %s", sc.Name, c.World, strings.Join(errs, "\n  "))
	}
	return nil
}

// refusals are the lines of Check: "step 3 (fault heartbeat-fail) cannot run in the live world: why".
func (c Capabilities) refusals(sc *Scenario) []string {
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
		switch {
		case st.Fault != "":
			refuse(where, "fault "+st.Fault, FaultCap(st.Fault))
		case st.Op == "setConfig":
			refuse(where, "setConfig "+st.Key, SetConfigOp)
		case st.Op == "allocate":
			refuse(where, "allocate "+st.VM, AllocateOp)
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
		VirtualTime:                inRealTime,
		FaultCap("host-power-off"): noHostPower,
		FaultCap("heartbeat-fail"): noHostPower,
		FaultCap("peer-stop"):      peersSimOnly,
		PeerServers:                peersSimOnly,
	}}

	// LibvirtCapabilities: real QEMU domains on the machine csconform runs on.
	LibvirtCapabilities = Capabilities{World: "on libvirt", Lacks: map[Capability]string{
		VirtualTime:                inRealTime,
		FaultCap("host-power-off"): noHostPower,
		FaultCap("heartbeat-fail"): noHostPower,
		FaultCap("peer-stop"):      peersSimOnly,
		PeerServers:                peersSimOnly,
	}}

	// ContainerCapabilities: the server and the hosts in containers on one machine.
	ContainerCapabilities = Capabilities{World: "in containers", Lacks: map[Capability]string{
		VirtualTime:                inRealTime,
		FaultCap("host-power-off"): "a host container stopped with its agent still leaves the domains in libvirtd (or the hypervisor container), so it is an agent kill, not a power loss",
		FaultCap("host-remove"):    "the control endpoint has no deleteHost",
		FaultCap("heartbeat-fail"): "there is no shared NFS primary storage whose heartbeat file the hosts write",
		FaultCap("peer-stop"):      peersSimOnly,
		PeerServers:                peersSimOnly,
		PrimedNetworks:             "priming waits for the network GC to shut the network down, 20 min of real time with CloudStack's values",
		AllocateOp:                 "the control endpoint deploys and starts at once",
		HAVMs:                      "the control endpoint's deploy has no HA flag (the service offering's offer_ha)",
	}}

	// ExternalCapabilities: a real CloudStack seen through its API; the faults that need a host go
	// through csconform inject (Preflight checks the host access).
	ExternalCapabilities = externalCapabilities()
)

const (
	inRealTime   = "it runs in real time: a scheduler strategy, and the checks that let the cloud run on alone after the scenario, are the simulator's"
	noHostPower  = "its hosts are real machines (or the machine csconform runs on) whose power and shared-storage heartbeat csconform does not control"
	peersSimOnly = "several management servers run only in the simulator (--driver sim)"
)

func externalCapabilities() Capabilities {
	c := Capabilities{World: "against an external CloudStack", Lacks: map[Capability]string{
		VirtualTime:    inRealTime,
		DefectSwitches: "a real CloudStack runs its own code: the profile (--expect) only names the outcome it is judged against",
		PeerServers:    "the external CloudStack has the servers it has; run the scenario without the field",
		PrimedNetworks: "that needs the network GC's timing; create and shut the network down by hand",
		AgedNetworks:   "that needs a write to CloudStack's database (csconform inject backdate, by hand)",
		SetConfigOp:    "changing the CloudStack's global configuration is not done from here; set it with updateConfiguration first and drop the step",
		HAVMs:          "the run deploys with the chosen offering; pick an HA offering instead",
	}}
	for _, k := range faults.Kinds {
		if ef, ok := externalFaults[k.Name]; !ok || ef.inject == "" {
			c.Lacks[FaultCap(k.Name)] = or(ef.why, "unknown to the external world")
		}
	}
	return c
}
