package invariant

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/csconform/csconform/model/host"
	"github.com/csconform/csconform/model/network"
	"github.com/csconform/csconform/model/vm"
)

// settledHosts are the hosts that are Up and have had time to report since they came back: what
// their records say about their domains is to be believed.
func settledHosts(s Snapshot) map[string]bool {
	settled := map[string]bool{}
	for _, h := range s.Hosts {
		settled[h.ID] = h.Status == host.Up && (h.UpSince.IsZero() || s.Time.Sub(h.UpSince) >= s.ReportGrace)
	}
	return settled
}

// runningOn indexes the running domains by host and name.
func runningOn(ds []Domain) map[string]map[string]bool {
	m := map[string]map[string]bool{}
	for _, d := range ds {
		if !d.Running {
			continue
		}
		if m[d.HostID] == nil {
			m[d.HostID] = map[string]bool{}
		}
		m[d.HostID][d.Name] = true
	}
	return m
}

// implementedState: a network a running guest can use (isNetworkImplemented; Setup is a
// non-persistent network's implemented state).
func implementedState(st network.State) bool {
	return st == network.Implemented || st == network.Setup
}

// CheckNetworkOutages: a user VM whose record says Running and whose domain runs on its (settled)
// host must find each of its networks implemented, with the network's virtual router Running and
// its domain running. Otherwise the guest runs on a network with no router: no DHCP, DNS, gateway or
// NAT — the outage users see when a network is shut down, or its router stopped, under a running VM.
// A router that a fault targeted is not judged (a crashed router is HA's business, not a race).
func CheckNetworkOutages(s Snapshot) []Violation {
	settled := settledHosts(s)
	on := runningOn(s.Domains)
	nets := map[string]Network{}
	for _, n := range s.Networks {
		nets[n.ID] = n
	}
	recs := map[string]VM{}
	for _, v := range s.VMs {
		if !v.Removed {
			recs[v.ID] = v
		}
	}
	faulted := map[string]bool{}
	for _, f := range s.Faults {
		for _, t := range f.Targets {
			faulted[t] = true
		}
	}
	asserted := map[domKey]bool{}
	for _, d := range s.Domains {
		if d.Running && d.Asserted {
			asserted[domKey{d.HostID, d.Name}] = true
		}
	}
	w := outageWorld{
		asserted: func(h, name string) bool { return asserted[domKey{h, name}] },
		settled:  func(h string) bool { return settled[h] },
		on:       func(h, name string) bool { return on[h][name] },
		network:  func(id string) (Network, bool) { n, ok := nets[id]; return n, ok },
		record:   func(id string) (VM, bool) { r, ok := recs[id]; return r, ok },
		faulted:  func(t string) bool { return faulted[t] },
		runsAnywhere: func(name string) bool {
			for _, names := range on {
				if names[name] {
					return true
				}
			}
			return false
		},
	}
	var out []Violation
	vms := slices.Clone(s.VMs)
	slices.SortStableFunc(vms, func(a, b VM) int { return cmp.Compare(a.ID, b.ID) })
	for _, v := range vms {
		out = append(out, vmOutages(v, w, s.Time)...)
	}
	sortViolations(out)
	return out
}

// outageWorld is what a VM's network-outage judgement reads: the settled hosts, the running domains
// (by host and name, and anywhere), the networks, the live records and the faults' targets.
type outageWorld struct {
	settled      func(host string) bool
	on           func(host, name string) bool
	runsAnywhere func(name string) bool
	network      func(id string) (Network, bool)
	record       func(id string) (VM, bool) // live (not removed) records only
	faulted      func(target string) bool
	// asserted: the domain is Domain.Asserted (a caller's forced stop left its VM to the operator)
	asserted func(host, name string) bool
}

// vmOutages judges one VM record: a running user VM's networks and their routers.
func vmOutages(v VM, w outageWorld, t time.Time) []Violation {
	if v.Removed || v.Type != "User" || v.State != vm.Running || !w.settled(v.HostID) || !w.on(v.HostID, v.Name) || w.asserted(v.HostID, v.Name) {
		return nil
	}
	var out []Violation
	for _, nid := range v.NetworkIDs {
		n, ok := w.network(nid)
		if !ok {
			continue
		}
		var why string
		switch r, hasRouter := w.record(n.RouterID); {
		case !implementedState(n.State):
			why = fmt.Sprintf("network %s is %s", nid, n.State)
		case n.RouterID == "" || w.faulted("vm:"+n.RouterID):
			continue
		case !hasRouter:
			why = fmt.Sprintf("network %s's router %s has no record", nid, n.RouterID)
		case r.State != vm.Running:
			why = fmt.Sprintf("network %s's router %s is %s", nid, r.Name, r.State)
		case w.settled(r.HostID) && !w.runsAnywhere(r.Name):
			why = fmt.Sprintf("network %s's router %s runs nowhere (its record says Running on host %s)", nid, r.Name, r.HostID)
		default:
			continue
		}
		out = append(out, Violation{
			Invariant: NetworkOutage, Object: "network:" + nid, Time: t,
			Message: fmt.Sprintf("VM %s (%s) runs on host %s but %s", v.ID, v.Name, v.HostID, why),
		})
	}
	return out
}

// ghostWhy says why a record holds as a ghost (a running user VM or router with no host, or none of its domain
// on its settled host); ok false: it does not.
func ghostWhy(v VM, settled func(string) bool, on func(host, name string) bool) (string, bool) {
	if v.Removed || v.State != vm.Running {
		return "", false
	}
	switch {
	case v.HostID == "":
		return "its record has no host", true
	case settled(v.HostID) && !on(v.HostID, v.Name):
		return "no domain " + v.Name + " runs on host " + v.HostID, true
	}
	return "", false
}

// ghostKey names a ghost condition: the record and the host it names.
func ghostKey(v VM) string { return GhostRecord + "|vm:" + v.ID + "|" + v.HostID }

// ghostViolation: a ghost that has held since first is a violation once it has lasted past bound,
// counted from the later of first and the end of an HA hold on its reports (VM.HAReleased: until then
// power sync could only postpone them).
func ghostViolation(v VM, why string, first, now time.Time, bound time.Duration) (Violation, bool) {
	bound += v.HAGrace
	d := now.Sub(first)
	from, after := d, ""
	if v.HAReleased.After(first) {
		from = now.Sub(v.HAReleased)
		after = fmt.Sprintf(" of HA's hold on its reports ending %s ago", from.Round(time.Second))
	}
	if from <= bound {
		return Violation{}, false
	}
	return Violation{
		Invariant: GhostRecord, Object: "vm:" + v.ID, Time: now,
		Message: fmt.Sprintf("VM %s (%s) has been Running in its record for %s but %s (power sync must notice within %s%s)", v.ID, v.Name, d.Round(time.Second), why, bound, after),
	}, true
}

// Tracker checks a sequence of snapshots of one run. Besides Check's invariants it judges the
// conditions that are violations only when they last: a VM record that says Running while no domain
// runs on its host (ghost-record), beyond the snapshot's GhostBound.
type Tracker struct {
	since map[string]time.Time // condition key → when it was first seen holding, continuously
}

// NewTracker returns a tracker with no history.
func NewTracker() *Tracker { return &Tracker{since: map[string]time.Time{}} }

// Check runs every invariant on s, the timed ones against what the earlier snapshots showed.
func (tr *Tracker) Check(s Snapshot) []Violation {
	out := Check(s)
	out = append(out, tr.ghosts(s)...)
	sortViolations(out)
	return out
}

// ghosts: a user VM record that says Running (or Running with no host at all) on a settled host
// where no domain of its name runs, for longer than GhostBound. Power sync must have seen the
// domain missing by then and stopped the record; a record that stays Running is a VM the users see
// as running and that runs nowhere — the start "succeeded" without a guest.
func (tr *Tracker) ghosts(s Snapshot) []Violation {
	if s.GhostBound <= 0 {
		// off (or paused: the harness passes 0 while no report can be processed, a management
		// server restarting): the ages start again when it is back on, as the Incremental's do
		for k := range tr.since {
			if strings.HasPrefix(k, GhostRecord+"|") {
				delete(tr.since, k)
			}
		}
		return nil
	}
	settled := settledHosts(s)
	on := runningOn(s.Domains)
	holding := map[string]bool{}
	var out []Violation
	vms := slices.Clone(s.VMs)
	slices.SortStableFunc(vms, func(a, b VM) int { return cmp.Compare(a.ID, b.ID) })
	for _, v := range vms {
		why, ok := ghostWhy(v, func(h string) bool { return settled[h] }, func(h, name string) bool { return on[h][name] })
		if !ok {
			continue
		}
		key := ghostKey(v)
		holding[key] = true
		first, ok := tr.since[key]
		if !ok {
			tr.since[key] = s.Time
			continue
		}
		if g, ok := ghostViolation(v, why, first, s.Time, s.GhostBound); ok {
			out = append(out, g)
		}
	}
	for k := range tr.since {
		if strings.HasPrefix(k, GhostRecord+"|") && !holding[k] {
			delete(tr.since, k)
		}
	}
	return out
}
