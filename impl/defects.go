package impl

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Defect is one known defect, switchable on its own.
type Defect struct {
	Name, Summary string
}

// Defects are the switches, in the order the reports give them.
var Defects = []Defect{
	{"D1", "orphaned-network cleanup ages networks from creation, takes no lock and writes Shutdown directly (#12409, #14522)"},
	{"D2a", "a forced (out-of-band) power report skips the graceful period for missing VMs (#14206 cause 1)"},
	{"D2b", "PowerReportMissing releases NICs and volumes without sending a StopCommand (#14206 cause 2)"},
	{"D2c", "expunge never contacts the host for a VM in Error or Stopped: advanceStop returns early (#14206 cause 3)"},
	{"D2d", "a power-on report for a Destroyed/Expunging VM is only logged (#14206 cause 4)"},
	{"D2e", "unknown domains in a report are only debug-logged (#14206 cause 5)"},
	{"D3", "a forced stop releases resources when the host is only transiently unreachable (vm.destroy.forcestop)"},
	// Found by csconform explore, not in the seed reports: the D2/D3 family through the start path.
	{"C1", "a failed start's cleanup releases NICs and volumes even when its stop could not reach the host (spec 3.8 step 12)"},
	{"C2", "after a management-server restart, a VM whose start was in flight is moved to Stopped without asking its host (cleanupResources, PR #8394)"},
	{"C3", "a power-on report collected before a VM's last state change still sets it Running (FollowAgentPowerOnReport): a stop or destroy is undone with no domain behind the record"},
	{"C4", "the network GC shuts down every network of the list it built at its tick without asking again whether each is still free: a VM started on a later one meanwhile loses its network (NetworkGarbageCollector.reallyRun)"},
	{"C5", "a network an earlier failed implementation left in Shutdown (its router could not be stopped then) fails the next start on it: implementNetwork has no transition from Shutdown and only that start's own cleanup completes the shutdown (NetworkOrchestrator.implementNetwork)"},
	// Found by csconform explore --peers under fixed (seeds 2, 4, 8): a StartCommand held on a cut link.
	{"C6", "the agent runs a StopCommand beside a StartCommand of the same VM: a stop that arrives while the start still prepares the domain finds none and answers stopped, the server releases the VM's NICs and volumes, and the start then boots its domain (Agent.processRequest, LibvirtStopCommandWrapper)"},
	// Found reading HighAvailabilityManagerImpl.restart and KVMFencer against a live host whose storage heartbeat failed.
	{"H1", "KVM fencing only checks the host's storage heartbeat: a live host whose heartbeat failed is \"fenced\" while its domain runs, and HA starts the VM a second time elsewhere"},
	// Found by csconform explore under fixed once it drew the host faults (seed 5, case 1604).
	{"H2", "KVMInvestigator judges a host Down from its storage heartbeat alone: a live host whose heartbeat failed is Down once its agent is cut off, and a start's cleanup or a forced stop then releases the NICs of a domain that still runs (KVMInvestigator.isAgentAlive)"},
	// Found reading AsyncJobManagerImpl.onManagementNodeLeft for several management servers.
	{"M1", "a peer's onManagementNodeLeft cleans up the left server's jobs by its mshost row id, which no job's msid column holds: its IN_PROGRESS jobs, and the VMs and networks they left in transition, stay until the GC cancels or expires them or the server comes back (AsyncJobManagerImpl.onManagementNodeLeft)"},
}

// PlantedStopTimeoutIsSuccess is not a CloudStack defect: it is a bug the detector tests plant to show
// that exploration finds bugs nobody described. With it on, a stop whose StopCommand timed out (the
// host went away with the command in flight) counts as stopped: resources are released and the record
// says Stopped while the domain may run on. No profile has it and ParseDefects does not accept it.
const PlantedStopTimeoutIsSuccess = "planted-stop-timeout-is-success"

// Switches says which defects are on.
type Switches map[string]bool

// Profiles are named sets of switches.
var Profiles = map[string]Switches{
	"cloudstack-4.22": allDefects(true),
	"fixed":           allDefects(false),
}

func allDefects(on bool) Switches {
	s := Switches{}
	for _, d := range Defects {
		s[d.Name] = on
	}
	return s
}

// ProfileNames lists the profiles, sorted.
func ProfileNames() []string {
	var n []string
	for k := range Profiles {
		n = append(n, k)
	}
	sort.Strings(n)
	return n
}

// Profile returns a copy of a named profile's switches.
func Profile(name string) (Switches, error) {
	p, ok := Profiles[name]
	if !ok {
		return nil, fmt.Errorf("unknown profile %q (known: %s)", name, strings.Join(ProfileNames(), ", "))
	}
	s := Switches{}
	for k, v := range p {
		s[k] = v
	}
	return s, nil
}

// ParseDefects turns "D1,D2a" into switches with exactly those on; "D2" means all of D2a–D2e.
func ParseDefects(list string) (Switches, error) {
	s := allDefects(false)
	for _, f := range strings.Split(list, ",") {
		f = strings.TrimSpace(f)
		if f == "" || strings.EqualFold(f, "none") {
			continue
		}
		matched := false
		for _, d := range Defects {
			if strings.EqualFold(d.Name, f) || strings.HasPrefix(strings.ToUpper(d.Name), strings.ToUpper(f)) && len(f) == 2 {
				s[d.Name] = true
				matched = true
			}
		}
		if !matched {
			return nil, fmt.Errorf("unknown defect %q (known: %s)", f, strings.Join(knownDefects(), ", "))
		}
	}
	return s, nil
}

// knownDefects lists what ParseDefects accepts, from Defects: each name, and before the first of a
// family (D2a…) the family's two-letter name.
func knownDefects() []string {
	var out []string
	for _, d := range Defects {
		if len(d.Name) > 2 && !slices.Contains(out, d.Name[:2]) {
			out = append(out, d.Name[:2])
		}
		out = append(out, d.Name)
	}
	return out
}

// On lists the switches that are on, in the order of Defects.
func (s Switches) On() []string {
	var out []string
	for _, d := range Defects {
		if s[d.Name] {
			out = append(out, d.Name)
		}
	}
	return out
}
