package external

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/csconform/csconform/harness/audit"
	"github.com/csconform/csconform/model/history"
	"github.com/csconform/csconform/model/invariant"
	"github.com/csconform/csconform/model/vm"
)

// The external world's view of the server: what the API lists and the hosts run, checked and written
// into the history (see external.go).

// ---- what the server says

// ours keeps the records of what the run created: its VMs (and their volumes), its networks, their
// routers; and remembers the instance names (an expunged VM's domain is still the run's).
func (w *extWorld) ours(rec audit.Records) audit.Records {
	w.mu.Lock()
	defer w.mu.Unlock()
	vms := map[string]bool{}
	for _, id := range w.vmIDs {
		vms[id] = true
	}
	nets := map[string]bool{}
	for _, id := range w.netIDs {
		nets[id] = true
	}
	out := audit.Records{Hosts: rec.Hosts}
	keep := map[string]bool{}
	for _, v := range rec.VMs {
		mine := vms[v.ID] || v.Type == "DomainRouter" && slices.ContainsFunc(v.NICs, func(n audit.NIC) bool { return nets[n.NetworkID] }) ||
			v.Type == "DomainRouter" && slices.ContainsFunc(v.NetworkIDs, func(n string) bool { return nets[n] })
		if mine {
			out.VMs = append(out.VMs, v)
			keep[v.ID] = true
			if v.InstanceName != "" {
				w.instances[v.InstanceName] = true
			}
		}
	}
	for _, n := range rec.Networks {
		if nets[n.ID] {
			out.Networks = append(out.Networks, n)
		}
	}
	for _, v := range rec.Volumes {
		if keep[v.VMID] || w.ourVols[v.ID] {
			w.ourVols[v.ID] = true
			out.Volumes = append(out.Volumes, v)
		}
	}
	return out
}

// check reads the hosts' domains, then the records (as the audit does), and runs the invariants on
// what the run created. The reads are not atomic, so a violation of the domains' truth counts once two
// checks in a row see it.
func (w *extWorld) check() {
	w.checkMu.Lock()
	defer w.checkMu.Unlock()
	var truth []audit.HostDomains
	for _, h := range w.hosts {
		hd, err := h.Domains()
		if err != nil {
			return // a host's truth is missing: no check this time
		}
		truth = append(truth, hd)
	}
	all, err := audit.FromAPI(w.ro, w.eo.API.Zone)
	if err != nil {
		return // the server is unreachable: nothing to compare
	}
	w.hostEvents(all.Hosts)
	rec := w.ours(all)
	now := w.eo.Now()
	s, _ := audit.Snapshot(rec, truth, audit.Options{DomainPrefix: w.eo.DomainPrefix, Time: now})
	w.mu.Lock()
	w.last = &rec
	s.Domains = slices.DeleteFunc(s.Domains, func(d invariant.Domain) bool { return !w.instances[d.Name] })
	// A VM the API listed once and lists no more is expunged: its record is gone, as the other
	// worlds' removed rows say (the observations and the orphan check need to know).
	listed := map[string]bool{}
	for _, v := range rec.VMs {
		listed[v.ID] = true
		w.listed[v.ID] = true
	}
	for _, id := range slices.Sorted(maps.Values(w.vmIDs)) {
		if w.listed[id] && !listed[id] {
			s.VMs = append(s.VMs, invariant.VM{ID: id, Name: w.vmInstance[id], Type: "User", State: "Expunged", Removed: true})
		}
	}
	nets := map[string]bool{}
	for _, id := range w.netIDs {
		nets[id] = true
	}
	for _, v := range rec.VMs {
		if v.State == string(vm.Starting) || v.State == string(vm.Running) {
			if w.startSeen == nil {
				w.startSeen = map[string]bool{}
			}
			w.startSeen[v.ID] = true
		}
	}
	w.mu.Unlock()
	s.IPs = slices.DeleteFunc(s.IPs, func(ip invariant.IP) bool { return !nets[ip.NetworkID] })
	s.ReportGrace = w.grace
	for i := range s.Hosts {
		s.Hosts[i].UpSince = w.rec.HostUpSince(s.Hosts[i].ID)
	}
	later := w.poolWrites(s.IPs)
	w.rec.FillSnapshot(&s)
	s.NetworkChanges = nil // the writes and their lock holders stay in the server
	w.rec.Observe(s)
	for _, e := range later {
		w.rec.Emit(e)
	}
	for _, v := range w.checks.Add(w.rec, s, func(obj string) []string {
		var objs []string
		if name, ok := strings.CutPrefix(obj, "domain:"); ok {
			for _, r := range rec.VMs {
				if r.InstanceName == name {
					objs = append(objs, "vm:"+r.ID)
				}
			}
			w.mu.Lock()
			for _, id := range w.vmIDs {
				if w.vmInstance[id] == name {
					objs = append(objs, "vm:"+id)
				}
			}
			w.mu.Unlock()
		}
		return objs
	}) {
		w.mu.Lock()
		w.viols = append(w.viols, v)
		w.mu.Unlock()
		w.note("checker: %s %s", v.Invariant, v.Message)
	}
}

// poolWrites writes into the history what the listed NICs say of the guest addresses' holders since
// the last look (the server's own writes stay in its database), for model/linear's IP register. The
// domains were read before the records, so an address taken since the last look was taken before
// the domains that use it started (the write goes before this look's observation), and one given up
// may have been given up after the domains were read (the write goes after; returned to emit then).
func (w *extWorld) poolWrites(ips []invariant.IP) (later []history.Event) {
	holders := map[string]string{}
	for _, ip := range ips {
		h := "free"
		if !ip.Free && ip.VMID != "" {
			h = "vm:" + ip.VMID
		}
		if old, ok := holders[ip.Address]; !ok || old == "free" {
			holders[ip.Address] = h
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for a := range w.ipHolder {
		if _, ok := holders[a]; !ok {
			holders[a] = "free"
		}
	}
	write := func(a, from, to string) history.Event {
		return history.Event{Actor: "server", Kind: history.IP, Object: "ip:" + a, From: from, To: to, Detail: "as listed (NICs)"}
	}
	for _, a := range slices.Sorted(maps.Keys(holders)) {
		h, old := holders[a], cmp.Or(w.ipHolder[a], "free")
		if h == old {
			continue
		}
		w.ipHolder[a] = h
		switch {
		case h == "free":
			later = append(later, write(a, old, h))
		case old == "free":
			w.rec.Emit(write(a, old, h))
		default:
			w.rec.Emit(write(a, old, "free"))
			w.rec.Emit(write(a, "free", h))
		}
	}
	return later
}

// hostEvents writes the hosts' states as the server lists them into the history (a host back Up has
// a report grace) and the report's timeline.
func (w *extWorld) hostEvents(hs []audit.HostRecord) {
	for _, h := range hs {
		w.mu.Lock()
		old, known := w.hostState[h.Name]
		w.hostState[h.Name] = h.State
		w.mu.Unlock()
		if old != h.State {
			w.rec.Emit(history.Event{Actor: "server", Kind: history.State, Object: "host:" + h.Name, From: old, To: h.State, Detail: "listHosts"})
			if known {
				w.note("server: host %s %s -> %s", h.Name, old, h.State)
			}
		}
	}
}

func (w *extWorld) hostIs(name, state string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.hostState[name] == state
}

// vmState is a scenario VM's record in the last look (Expunged once the API no longer lists it).
func (w *extWorld) vmState(name string) (vm.State, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	id, ok := w.vmIDs[name]
	if !ok || w.last == nil {
		return "", false
	}
	for _, v := range w.last.VMs {
		if v.ID == id {
			if v.State == "Expunged" {
				return "Expunged", true
			}
			return vm.State(v.State), true
		}
	}
	return "Expunged", true
}

// unobservable lists what this scenario's steps rely on that is seen differently from outside.
func (w *extWorld) unobservable() []string {
	var out []string
	for i, st := range w.sc.Steps {
		switch {
		case st.Until == "start-sent":
			out = append(out, fmt.Sprintf("step %d waits for start-sent: from outside that is the VM's record seen Starting (polled), not the StartCommand leaving the server", i+1))
		case st.Op == "startNoRetry":
			out = append(out, fmt.Sprintf("step %d (startNoRetry) uses csconform's startVirtualMachineOnce, which a real CloudStack does not have", i+1))
		}
	}
	return out
}
