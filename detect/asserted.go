package detect

import (
	"sync"

	"github.com/csconform/csconform/model/invariant"
)

// A caller's forced stop (stopVirtualMachine forced=true) is the operator's assertion that the VM is
// stopped: CloudStack marks it Stopped and releases its resources even when the StopCommand cannot
// reach the host (documented so in apache/cloudstack#6798; the D3 fix leaves this path alone). If the
// domain still runs, what follows is what the operator asked for, not a race of the server's: the
// domain orphaned, its volumes and its freed address in use, power sync adopting it again (Stopped
// -> Running, "VM network environment may need to be reset"), a start elsewhere making two domains
// of one VM that power sync then follows in turn. The checkers believe the assertion: while the forced
// stop is in flight, and afterwards while a domain it left running (or a twin that ran beside it, see
// Filter) still runs, every running domain of that VM is invariant.Domain.Asserted (no
// orphan-domain, no volume-in-use, no network-outage) with its addresses left out (of ip-conflict and
// of the ip model's observations), and the VM model gets no observation of the VM. docs/fidelity.md,
// advanceStop, says why D3's fix is scoped so. AssertedStops is that belief, fed by the world as the
// operations begin and end; its zero value believes nothing yet.
type AssertedStops struct {
	mu     sync.Mutex
	open   map[string]int  // domain name → forced stops of its VM in flight
	frozen map[domKey]bool // the domains a forced stop that returned left running
	gen    int             // moves whenever the set changes (the incremental checker reloads domains)
	// vms: domain name → its VM's id; ended: the VMs whose exemption ended since the incremental
	// observer last looked (it observes them anew: nothing else may have moved them)
	vms   map[string]string
	ended []string
	// removed: the hosts an operator removed (host-remove), from the removal's start: a domain that
	// runs there is the operator's (Filter freezes it), as one a forced stop left running is
	removed map[string]bool
}

type domKey struct{ host, name string }

// exemptLocked says whether the VM of domain name is the operator's just now.
func (a *AssertedStops) exemptLocked(name string) bool {
	if a.open[name] > 0 {
		return true
	}
	for k := range a.frozen {
		if k.name == name {
			return true
		}
	}
	return false
}

// frozenElsewhereLocked says whether a domain of k's VM that a forced stop left running is frozen on
// another host.
func (a *AssertedStops) frozenElsewhereLocked(k domKey) bool {
	for f := range a.frozen {
		if f.name == k.name && f.host != k.host {
			return true
		}
	}
	return false
}

// Exempt says whether the VM of domain name is the operator's just now: the observer leaves it out.
func (a *AssertedStops) Exempt(name string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.exemptLocked(name)
}

// Filter gives the checkers' view of the domains of hosts (nil: every host) and forgets the frozen ones
// no longer running there.
func (a *AssertedStops) Filter(hosts map[string]bool, ds []invariant.Domain) []invariant.Domain {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.open) == 0 && len(a.frozen) == 0 && len(a.removed) == 0 {
		return ds
	}
	running := map[domKey]bool{}
	for _, d := range ds {
		if d.Running {
			running[domKey{d.HostID, d.Name}] = true
		}
	}
	// A domain of the VM that runs beside one the forced stop left running is its twin (a start
	// elsewhere made two domains of one VM): power sync follows either in turn, "Detected out of band
	// VM migration" moves the record's host to whichever reported last, and a later stop reaches that
	// one and releases the VM's address and volumes while the other runs on. Which of the two the
	// record ends with is the operator's split brain, not a race of the server's: the twin is frozen
	// too, so the VM stays the operator's until every domain that ran beside the asserted one stops.
	for _, d := range ds {
		if k := (domKey{d.HostID, d.Name}); d.Running && !a.frozen[k] && a.removed[d.HostID] {
			a.frozen[k] = true
			a.gen++
		}
	}
	for _, d := range ds {
		if k := (domKey{d.HostID, d.Name}); d.Running && !a.frozen[k] && a.frozenElsewhereLocked(k) {
			a.frozen[k] = true
			a.gen++
		}
	}
	for k := range a.frozen {
		if (hosts == nil || hosts[k.host]) && !running[k] {
			delete(a.frozen, k)
			a.gen++ // the VM's domains on other hosts may be its own again
			if !a.exemptLocked(k.name) && a.vms[k.name] != "" {
				a.ended = append(a.ended, a.vms[k.name])
			}
		}
	}
	out := ds[:0:0]
	for _, d := range ds {
		if d.Running && a.exemptLocked(d.Name) {
			d.Asserted, d.IPs = true, nil
		}
		out = append(out, d)
	}
	return out
}

// TakeEnded returns the ids of the VMs whose exemption ended since the last call.
func (a *AssertedStops) TakeEnded() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	e := a.ended
	a.ended = nil
	return e
}

// Generation moves whenever the set changes (the incremental checker then filters the domains anew).
func (a *AssertedStops) Generation() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.gen
}

// initLocked makes the maps of an empty set; the caller holds mu.
func (a *AssertedStops) initLocked() {
	if a.open == nil {
		a.open, a.frozen, a.vms, a.removed = map[string]int{}, map[domKey]bool{}, map[string]string{}, map[string]bool{}
	}
}

// ForceStopBegins marks the forced stop of VM vmID (domain name) in flight.
func (a *AssertedStops) ForceStopBegins(vmID, name string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.initLocked()
	a.open[name]++
	a.vms[name] = vmID
	a.gen++
}

// HostRemovalBegins marks host h removed by an operator: from now on every domain that runs there is
// the operator's (Filter).
func (a *AssertedStops) HostRemovalBegins(h string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.initLocked()
	a.removed[h] = true
	a.gen++
}

// MigrateBegins: a live migration of a VM that is the operator's (a domain a forced stop left
// running, which power sync adopted with its address already released) hands that very guest to
// another host; the assertion goes with it. While the migration is in flight every domain of the VM
// is the operator's, as during a forced stop, and End keeps it for those still running (the
// destination's): the checkers sample the domains host by host, so the twin rule of Filter may not
// see the source's and the destination's domains at once. A VM that is not the operator's is left
// alone (false).
func (a *AssertedStops) MigrateBegins(name string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.exemptLocked(name) {
		return false
	}
	a.open[name]++
	a.gen++
	return true
}

// End closes an operation that held the VM of domain name the operator's (a forced stop, whatever
// its outcome: a forced stop of a Starting VM releases and then fails, as the Java does; a migration
// MigrateBegins took) and keeps the assertion for every domain of the VM that still runs in ds, the
// domains the world reports now. It returns the hosts where one still runs.
func (a *AssertedStops) End(name string, ds []invariant.Domain) []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.open[name]--
	if a.open[name] <= 0 {
		delete(a.open, name)
	}
	a.gen++
	var left []string
	for _, d := range ds {
		if d.Name == name && d.Running {
			a.frozen[domKey{d.HostID, d.Name}] = true
			left = append(left, d.HostID)
		}
	}
	if !a.exemptLocked(name) {
		a.ended = append(a.ended, a.vms[name])
	}
	return left
}
