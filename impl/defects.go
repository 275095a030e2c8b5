package impl

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Defect is one switch: a known CloudStack defect, or a bug the detector tests plant. Its constants
// are the vocabulary the code names them by, so a misspelt switch does not compile; Name is the word
// users type (--defects, scenario files, reports).
type Defect uint8

// The known defects, in the order the reports give them.
const (
	_ Defect = iota
	D1
	D2a
	D2b
	D2c
	D2d
	D2e
	D3
	// Found by csconform explore, not in the seed reports: the D2/D3 family through the start path.
	C1
	C2
	C3
	C4
	C5
	// Found by csconform explore --peers under fixed (seeds 2, 4, 8): a StartCommand held on a cut link.
	C6
	// Found by csconform explore under fixed (seed 1, 21 cases) once the reference kept op_it_work rows.
	C7
	// Found by csconform explore under fixed (seed 3, 388 cases) once a restart handed its unfinished starts to HA.
	C8
	// Found by csconform explore under fixed (seed 1, case 1353, two servers and peer-stop faults).
	C9
	// Found reading VirtualMachineManagerImpl.scanStalledVMInTransitionStateOnUpHost against its 10 s cache (issue 34).
	C10
	// Found by csconform explore once its programs drew deleteNetwork (issue 45, retire-network; the
	// PCT test's seed 7919, case 427, and explore under fixed).
	C11
	// Found by csconform explore under fixed (scheduler pct:8, seed 4164520807643135661) once a user
	// VM's start prepared its network's stopped router.
	C12
	// Found by csconform explore under fixed (seeds 4 and 5, issue 46 item 4): a live migration whose
	// MigrateCommand timed out with both hosts out of the server's reach.
	C13
	// Found by csconform explore under fixed (scheduler random, seed 8 × 10,000) once M1's fix let a
	// peer clean up a left server's jobs.
	C14
	// Found reading HighAvailabilityManagerImpl.restart and KVMFencer against a live host whose storage heartbeat failed.
	H1
	// Found by csconform explore under fixed once it drew the host faults (seed 5, case 1604).
	H2
	// Found by csconform explore under fixed (seeds 1-4, about 1,700 cases each) once the ha-promise
	// detector judged HA's work items.
	H3
	// Found by csconform explore under fixed (seeds 1-10, both schedulers, within a few thousand cases)
	// once the ha-promise detector judged HA's hand-over.
	H4
	// Found reading AsyncJobManagerImpl.onManagementNodeLeft for several management servers.
	M1

	// PlantedStopTimeoutIsSuccess is not a CloudStack defect: it is a bug the detector tests plant to show
	// that exploration finds bugs nobody described. With it on, a stop whose StopCommand timed out (the
	// host went away with the command in flight) counts as stopped: resources are released and the record
	// says Stopped while the domain may run on. No profile has it and ParseDefects does not accept it.
	PlantedStopTimeoutIsSuccess
	// PlantedIPFromStaleRead is not a CloudStack defect: it is a read-then-write race the detector tests
	// plant to show that the simulator's PCT strategy reaches interleavings its default cannot. With it
	// on, a NIC's guest address is chosen from a read of the pool (the shape of early CloudStack's
	// GuestNetworkGuru.acquireGuestIpAddress: listIpAddressInNetworkConfiguration, then a pick) and
	// claimed by a second statement that trusts that read: two NICs of one network reserved at the same
	// instant can both pick the first free address, and the second claim takes it from the first. There
	// is no sleep between the read and the claim, so only a preemption at a scheduling point can cut the
	// two apart. No profile has it and ParseDefects does not accept it.
	PlantedIPFromStaleRead
	numDefects
)

var defectInfo = [numDefects]struct {
	name, summary string
	title         string     // the heading docs/defects.md or docs/profiles.md gives it
	upstream      []Upstream // apache/cloudstack's issues and PRs (docs/defects.md)
}{
	D1:                          {"D1", "orphaned-network cleanup ages networks from creation, takes no lock and writes Shutdown directly (#12409, #14522)", "the orphaned-network cleanup shuts down a network a start is implementing", d1Upstream},
	D2a:                         {"D2a", "a forced (out-of-band) power report skips the graceful period for missing VMs (#14206 cause 1)", "a forced (out-of-band) power report skips the graceful period for missing VMs", d2Upstream},
	D2b:                         {"D2b", "PowerReportMissing releases NICs and volumes without sending a StopCommand (#14206 cause 2)", "PowerReportMissing releases NICs and volumes without a StopCommand", d2Upstream},
	D2c:                         {"D2c", "expunge never contacts the host for a VM in Error or Stopped: advanceStop returns early (#14206 cause 3)", "expunge never contacts the host for a VM in Error or Stopped", d2Upstream},
	D2d:                         {"D2d", "a power-on report for a Destroyed/Expunging VM is only logged (#14206 cause 4)", "a power-on report for a Destroyed/Expunging VM is only logged", d2Upstream},
	D2e:                         {"D2e", "unknown domains in a report are only debug-logged (#14206 cause 5)", "unknown domains in a report are only debug-logged", d2Upstream},
	D3:                          {"D3", "a forced stop releases resources when the host is only transiently unreachable (vm.destroy.forcestop)", "a forced destroy during a brief host disconnect releases resources without stopping", d3Upstream},
	C1:                          {"C1", "a failed start's cleanup releases NICs and volumes even when its stop could not reach the host (spec 3.8 step 12)", "a failed start's cleanup releases what a domain its stop could not reach still uses", nil},
	C2:                          {"C2", "after a management-server restart, a VM whose start was in flight is moved to Stopped without asking its host (cleanupResources, PR #8394)", "a management-server restart moves a VM whose start was in flight to Stopped without asking its host", nil},
	C3:                          {"C3", "a power-on report collected before a VM's last state change still sets it Running (FollowAgentPowerOnReport): a stop or destroy is undone with no domain behind the record", "a power-on report collected before a stop or destroy sets the VM Running again", nil},
	C4:                          {"C4", "the network GC shuts down every network of the list it built at its tick without asking again whether each is still free: a VM started on a later one meanwhile loses its network (NetworkGarbageCollector.reallyRun)", "the network GC shuts down a network a VM has just started on", nil},
	C5:                          {"C5", "a network an earlier failed implementation left in Shutdown (its router could not be stopped then) fails the next start on it: implementNetwork has no transition from Shutdown and only that start's own cleanup completes the shutdown (NetworkOrchestrator.implementNetwork)", "a network a failed implementation left in Shutdown fails the next start on it", nil},
	C6:                          {"C6", "the agent runs a StopCommand beside a StartCommand of the same VM: a stop that arrives while the start still prepares the domain finds none and answers stopped, the server releases the VM's NICs and volumes, and the start then boots its domain (Agent.processRequest, LibvirtStopCommandWrapper)", "the agent runs a StopCommand beside a StartCommand of the same VM", nil},
	C7:                          {"C7", "a start of a VM that a timed-out start left Starting waits up to vm.op.cancel.interval (an hour) on that start's op_it_work row though no job runs it any more: the wait holds the VM's work queue, so its host's reports are postponed, the VM stays Starting with its domain running and every stop or destroy queues behind (VirtualMachineManagerImpl.checkWorkItems)", "a start waits an hour on the op_it_work row of a start that no longer runs", nil},
	C8:                          {"C8", "an HA restart item that waits to be tried again postpones every power report of its VM even after the VM has changed (stopped, started again): restart() will discard it as changed, but until then — up to restart.retry.interval — a VM whose domain is gone stays Running in its record (HighAvailabilityManagerImpl.hasPendingHaWork)", "a waiting HA restart item postpones the power reports of the VM's next life", nil},
	C9:                          {"C9", "the stall scan hands a VM in Starting or Stopping whose power state is PowerOn (the host's latest report has its domain running) to the power-off handler, which moves the record to Stopped without stopping the domain or releasing anything: a running domain behind a Stopped record (VirtualMachineManagerImpl.scanStalledVMInTransitionStateOnUpHost, handlePowerOffReportWithNoPendingJobsOnVM)", "the stall scan stops a running VM on paper", nil},
	C10:                         {"C10", "the stall scan takes the VMs with a pending work job from a cache filled up to 10 s earlier (vmIdsInProgressCache): a VM whose start or stop began since is handled as stalled under its running job — a Starting VM stopped on its host (PowerOff) or its NICs and volumes released (PowerReportMissing), and moved to Stopped while its start goes on (VirtualMachineManagerImpl.scanStalledVMInTransitionStateOnUpHost, listStalledVMInTransitionStateOnUpHost)", "the stall scan's 10 s cache of pending work jobs misses a start that began since", nil},
	C11:                         {"C11", "deleteNetwork checks that no user VM is left on the network, then shuts it down and destroys it, with no lock held between the check and the shutdown's: a deploy into the network that comes after the check implements it (or finds it Implemented) and starts its VM, and the delete then shuts the network down under the running VM, expunges its router and removes the row (NetworkOrchestrator.destroyNetwork)", "deleteNetwork destroys a network a deploy has just started a VM on", nil},
	C12:                         {"C12", "two user VMs started at once on a network whose router is stopped both start the router: each start's VirtualRouterElement.prepare runs the router's advanceStart inline in its own work job, and the second changeToStartState's Stopped → Starting, which finds the row already Starting, is taken as its own (VMInstanceDaoImpl.updateState: \"already been updated\"), so two StartCommands boot the one router, here on two hosts with one gateway address (VirtualMachineManagerImpl.changeToStartState)", "two starts of one router both pass changeToStartState", nil},
	C13:                         {"C13", "a live migration whose MigrateCommand timed out while active (its answer lost with the source's agent or link) is put back on the source by the migration's finally (OperationFailed) even when the cleanup StopCommand could not reach the destination, where the hypervisor may have resumed the guest: the HA item the timeout scheduled to investigate the destination then finds the VM changed and does nothing, and the source's power sync or HA's fencing of the source releases the VM's NICs and volumes (and may start it again) while the guest runs on the destination (VirtualMachineManagerImpl.migrate)", "a timed-out migration is put back on the source while the guest may run on the destination", nil},
	C14:                         {"C14", "a left-over job's cleanup moves the job's network out of Implementing (OperationFailed → Shutdown) without the network's lock and without asking who implements it: a server that restarts, or a peer that sees it leave, cleans up its deleteNetwork job that was waiting on the network's lock, and flips the network a live start on another server is implementing under that lock: the start's OperationSucceeded then takes the network Shutdown → Allocated, its VM's preparation finds it not implemented, and the start fails (the deploy passes only if its retry does) (AsyncJobManagerImpl.cleanupLeftOverJobs → cleanupResources → cleanupNetwork)", "a left-over network job's cleanup shuts down a network another server is implementing", nil},
	H1:                          {"H1", "KVM fencing only checks the host's storage heartbeat: a live host whose heartbeat failed is \"fenced\" while its domain runs, and HA starts the VM a second time elsewhere", "KVM fencing asks only about the storage heartbeat", nil},
	H2:                          {"H2", "KVMInvestigator judges a host Down from its storage heartbeat alone: a live host whose heartbeat failed is Down once its agent is cut off, and a start's cleanup or a forced stop then releases the NICs of a domain that still runs (KVMInvestigator.isAgentAlive)", "KVMInvestigator judges a host Down from its storage heartbeat alone", nil},
	H3:                          {"H3", "HA's processWork catch takes the VM's state and update count for the next try from the VM as read before restart() ran, not anew: a try that moved the VM (HA's forced stop, its failed start) and then threw a CloudRuntimeException leaves the item with the old capture, the next try finds the VM \"has been changed\" and ends the item, and the HA-enabled VM stays Stopped (HighAvailabilityManagerImpl.processWork)", "HA drops an HA-enabled VM after a try that threw", nil},
	H4:                          {"H4", "a forced deleteHost decides for each VM of the host on the list it read at its start: an HA-enabled VM that was Stopping then (a client's stop or destroy under way) and is Running again when its turn comes (that stop failed) is force-stopped as the HA-disabled ones are, its NICs released, and HA is never asked to restart it (ResourceManagerImpl.deleteRoutingHost / doDeleteHost)", "a forced deleteHost force-stops an HA-enabled VM it listed while Stopping", nil},
	M1:                          {"M1", "a peer's onManagementNodeLeft cleans up the left server's jobs by its mshost row id, which no job's msid column holds: its IN_PROGRESS jobs, and the VMs and networks they left in transition, stay until the GC cancels or expires them or the server comes back (AsyncJobManagerImpl.onManagementNodeLeft)", "a peer cleans up a left server's jobs by its mshost row id", nil},
	PlantedStopTimeoutIsSuccess: {"planted-stop-timeout-is-success", "planted: a stop whose StopCommand timed out counts as stopped", "planted: a stop whose StopCommand timed out counts as stopped", nil},
	PlantedIPFromStaleRead:      {"planted-ip-from-stale-read", "planted: a NIC's address is claimed from an earlier read of the pool", "planted: a NIC's address is claimed from an earlier read of the pool", nil},
}

// Upstream is where apache/cloudstack discusses a defect: an issue or pull request on GitHub, and
// what it is to the defect. docs/defects.md says the same in prose.
type Upstream struct {
	Number int    `json:"number"`
	Kind   string `json:"kind"` // "issue", "pr" or "related" (an issue or PR about the same code)
	Note   string `json:"note"`
}

// URL is the or pull request's page (GitHub sends an issue number that is a PR on to it).
func (u Upstream) URL() string {
	if u.Kind == "pr" {
		return fmt.Sprintf("https://github.com/apache/cloudstack/pull/%d", u.Number)
	}
	return fmt.Sprintf("https://github.com/apache/cloudstack/issues/%d", u.Number)
}

// String is the reference as a line names it: "issue #14522", "PR #12409", "related #6798".
func (u Upstream) String() string {
	k := u.Kind
	if k == "pr" {
		k = "PR"
	}
	return fmt.Sprintf("%s #%d", k, u.Number)
}

// The seed defects' upstream references, from docs/defects.md.
var (
	d1Upstream = []Upstream{
		{14522, "issue", "the upstream issue"},
		{12409, "pr", "added the cleanup (\"Allow cleaning up of networks stuck in Implementing state\"), merged on the 4.20 and 4.22 branches and main"},
	}
	d2Upstream = []Upstream{
		{14206, "issue", "a stale out-of-band power report orphans a starting VM (open, KVM, Major); D2a-D2e are its five causes"},
		{14207, "pr", "\"engine: do not orphan an instance on a forced power report during start\" (open): the fix the fixed profile follows"},
	}
	d3Upstream = []Upstream{
		{6798, "related", "a caller's forced stop marks the VM stopped when its host cannot be reached: closed as documented behaviour; no issue names vm.destroy.forcestop on a transiently unreachable host"},
		{3054, "related", "vm.destroy.forcestop"},
		{3626, "related", "vm.destroy.forcestop"},
		{3965, "related", "a PR: expunge honours vm.destroy.forcestop"},
	}
)

// Name is the defect's name as users write it (D1, D2a, planted-…).
func (d Defect) Name() string {
	if d == 0 || d >= numDefects {
		return fmt.Sprintf("Defect(%d)", uint8(d))
	}
	return defectInfo[d].name
}

func (d Defect) String() string { return d.Name() }

// Summary says what the defect does, and where in the Java (or the report) it is.
func (d Defect) Summary() string {
	if d == 0 || d >= numDefects {
		return ""
	}
	return defectInfo[d].summary
}

// Title is the defect in a few words: the heading docs/defects.md (D1, D3) or docs/profiles.md (the
// races found since) gives it; a D2 switch's row of the profiles.md table.
func (d Defect) Title() string {
	if d == 0 || d >= numDefects {
		return ""
	}
	return defectInfo[d].title
}

// Upstream lists apache/cloudstack's issues and pull requests about the defect, the issue first;
// none for a race csconform found (docs/profiles.md gives its verdict).
func (d Defect) Upstream() []Upstream {
	if d == 0 || d >= numDefects {
		return nil
	}
	return defectInfo[d].upstream
}

// Defects are CloudStack's switches (the planted bugs are not among them), in the order the reports
// give them: the constants from D1 to M1.
var Defects = func() []Defect {
	var out []Defect
	for d := D1; d <= M1; d++ {
		out = append(out, d)
	}
	return out
}()

// Planted returns the planted bug of that name (bench and the detector tests switch them on by name;
// no profile has them and ParseDefects does not accept them).
func Planted(name string) (Defect, bool) {
	for _, d := range []Defect{PlantedStopTimeoutIsSuccess, PlantedIPFromStaleRead} {
		if d.Name() == name {
			return d, true
		}
	}
	return 0, false
}

// Switches says which defects are on.
type Switches map[Defect]bool

// Profile is a named set of switches: a CloudStack release as the reference plays it.
type Profile struct {
	Name     string
	Switches Switches
}

// The profiles' names, for code that picks one (a name typed wrong does not compile).
const (
	CloudStack422 = "cloudstack-4.22" // every known defect on, as the release ships
	Fixed         = "fixed"           // every defect's fix on
)

// Profiles are the profiles, sorted by name: the one table every list, check and error message reads.
var Profiles = []Profile{
	{CloudStack422, allDefects(true)},
	{Fixed, allDefects(false)},
}

func allDefects(on bool) Switches {
	s := Switches{}
	for _, d := range Defects {
		s[d] = on
	}
	return s
}

// ProfileNames lists the profiles' names, sorted.
func ProfileNames() []string {
	var n []string
	for _, p := range Profiles {
		n = append(n, p.Name)
	}
	return n
}

// ProfileSwitches returns a copy of a named profile's switches.
func ProfileSwitches(name string) (Switches, error) {
	for _, p := range Profiles {
		if p.Name == name {
			return maps.Clone(p.Switches), nil
		}
	}
	return nil, fmt.Errorf("unknown profile %q (known: %s)", name, strings.Join(ProfileNames(), ", "))
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
			if strings.EqualFold(d.Name(), f) || len(f) == 2 && family(d.Name()) != "" && strings.EqualFold(family(d.Name()), f) {
				s[d] = true
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
		n := d.Name()
		if f := family(n); f != "" && !slices.Contains(out, f) {
			out = append(out, f)
		}
		out = append(out, n)
	}
	return out
}

// family is the two-letter family of a lettered switch (D2 for D2a), "" for any other: C10 is not of
// a family C1.
func family(name string) string {
	if len(name) == 3 && name[2] >= 'a' && name[2] <= 'z' {
		return name[:2]
	}
	return ""
}

// On lists the switches that are on, in the order of Defects.
func (s Switches) On() []string {
	var out []string
	for _, d := range Defects {
		if s[d] {
			out = append(out, d.Name())
		}
	}
	return out
}
