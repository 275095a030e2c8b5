package harness

import (
	"slices"
	"strings"

	"github.com/csconform/csconform/model/history"
	"github.com/csconform/csconform/model/invariant"
	"github.com/csconform/csconform/model/linear"
	"github.com/csconform/csconform/model/vm"
)

// Observe writes what a snapshot shows of each user VM (its running domain and its record) and of each
// guest IP (the running domains that use it) into the history, for the linearizability checker. An
// object is observed again when its value changed or when some event named it since the last time:
// an observation after a write is what makes a write that did not happen on the host visible.
func (r *Recorder) Observe(s invariant.Snapshot) { r.applyObservations(r.observations(s)) }

// observation is one Observe event to write: the object, its value and what the records say.
type observation struct{ obj, val, detail string }

// observer decides which objects to observe again, as observe does, without writing anything: what
// it decides is read back by later decisions of the same pass (an object listed twice).
type observer struct {
	r    *Recorder
	mine map[string]string
	out  []observation
}

func (o *observer) last(obj string) (string, bool) {
	if v, ok := o.mine[obj]; ok {
		return v, true
	}
	v, ok := o.r.observed[obj]
	return v, ok
}

func (o *observer) emit(obj, val, detail string) {
	if old, seen := o.last(obj); seen && old == val && !o.r.touched[obj] {
		return
	}
	if o.mine == nil {
		o.mine = map[string]string{}
	}
	o.mine[obj] = val
	o.out = append(o.out, observation{obj, val, detail})
}

// vm observes a user VM record: its domain running anywhere, and whether the record is dead.
func (o *observer) vm(v invariant.VM, running bool) {
	dead := v.Removed || slices.Contains([]vm.State{vm.Destroyed, vm.Expunging, "Expunged"}, v.State)
	state := string(v.State)
	if v.Removed {
		state = "removed"
	}
	o.emit("vm:"+v.ID, linear.ObserveVM(running, dead), "record "+state)
}

// ip observes a pool address: the VM objects of the running domains that use it.
func (o *observer) ip(ip invariant.IP, users []string) {
	obj := "ip:" + ip.Address
	slices.Sort(users)
	if last, _ := o.last(obj); len(users) == 0 && ip.Free && last == "" && !o.r.touched[obj] {
		return // never used: nothing to say
	}
	holder := "free"
	if !ip.Free {
		holder = "vm:" + ip.VMID
	}
	o.emit(obj, strings.Join(users, ","), "pool says "+holder)
}

// applyObservations writes the observations decided and forgets what was touched.
func (r *Recorder) applyObservations(obs []observation) {
	if r.observed == nil {
		r.observed = map[string]string{}
	}
	for _, o := range obs {
		r.observed[o.obj] = o.val
		r.Emit(history.Event{Actor: "observer", Kind: history.Observe, Object: o.obj, To: o.val, Detail: o.detail})
	}
	clear(r.touched)
}

// observations decides the observations of a whole snapshot.
func (r *Recorder) observations(s invariant.Snapshot) []observation {
	running := map[string]bool{}   // domain name
	users := map[string][]string{} // ip -> vm objects
	byName := map[string]string{}
	live := map[string][]invariant.VM{} // the live records, by name
	for _, v := range s.VMs {
		if !v.Removed || byName[v.Name] == "" {
			byName[v.Name] = "vm:" + v.ID
		}
		if !v.Removed {
			live[v.Name] = append(live[v.Name], v)
		}
	}
	dests := invariant.NewHandovers(s.Ops, s.Time, s.ReportGrace)
	handover := map[string]bool{} // ip and VM object: already counted for a migration's two hosts
	for _, d := range s.Domains {
		if !d.Running {
			continue
		}
		running[d.Name] = true
		isMig := slices.ContainsFunc(live[d.Name], func(v invariant.VM) bool { return invariant.MigrationHost(v, d.HostID, dests.To(v.ID)) })
		for _, ip := range d.IPs {
			if o := byName[d.Name]; o != "" {
				// the two domains of a guest libvirt hands from one host to the other are one user
				if isMig {
					if handover[ip+" "+o] {
						continue
					}
					handover[ip+" "+o] = true
				}
				users["ip:"+ip] = append(users["ip:"+ip], o)
			}
		}
	}
	o := &observer{r: r}
	for _, v := range s.VMs {
		if v.Type == "User" && !r.asserted.Exempt(v.Name) {
			o.vm(v, running[v.Name])
		}
	}
	for _, ip := range s.IPs {
		o.ip(ip, slices.Clone(users["ip:"+ip.Address]))
	}
	if len(r.watchedNets) > 0 {
		nets := make(map[string]invariant.Network, len(s.Networks))
		for _, n := range s.Networks {
			nets[n.ID] = n
		}
		o.networks(func(id string) (invariant.Network, bool) { n, ok := nets[id]; return n, ok })
	}
	return o.out
}

// networks observes the rows of the networks a deleteNetwork was called on: listed, or removed (a
// world whose records omit removed rows does not list it). Only those: a history with no
// deleteNetwork is as it was.
func (o *observer) networks(look func(id string) (invariant.Network, bool)) {
	for _, n := range o.r.watchedNets {
		nid := id(n)
		row, ok := look(nid)
		seen, detail := linear.NetListed, "record "+string(row.State)
		if !ok || row.Removed {
			seen, detail = linear.NetRemoved, "record removed"
		}
		o.emit("network:"+nid, seen, detail)
	}
}
