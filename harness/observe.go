package harness

import (
	"slices"
	"strings"

	"github.com/csconform/csconform/model/history"
	"github.com/csconform/csconform/model/invariant"
	"github.com/csconform/csconform/model/linear"
	"github.com/csconform/csconform/model/vm"
)

// observe writes what a snapshot shows of each user VM (its running domain and its record) and of each
// guest IP (the running domains that use it) into the history, for the linearizability checker. An
// object is observed again when its value changed or when some event named it since the last time:
// an observation after a write is what makes a write that did not happen on the host visible.
func (r *Recorder) observe(s invariant.Snapshot) {
	if r.observed == nil {
		r.observed = map[string]string{}
	}
	running := map[string]bool{}   // domain name
	users := map[string][]string{} // ip -> vm objects
	byName := map[string]string{}
	for _, v := range s.VMs {
		if !v.Removed || byName[v.Name] == "" {
			byName[v.Name] = "vm:" + v.ID
		}
	}
	for _, d := range s.Domains {
		if !d.Running {
			continue
		}
		running[d.Name] = true
		for _, ip := range d.IPs {
			if o := byName[d.Name]; o != "" {
				users["ip:"+ip] = append(users["ip:"+ip], o)
			}
		}
	}
	emit := func(obj, val, detail string) {
		if old, seen := r.observed[obj]; seen && old == val && !r.touched[obj] {
			return
		}
		r.observed[obj] = val
		r.Emit(history.Event{Actor: "observer", Kind: history.Observe, Object: obj, To: val, Detail: detail})
	}
	for _, v := range s.VMs {
		if v.Type != "User" {
			continue
		}
		dead := v.Removed || slices.Contains([]vm.State{vm.Destroyed, vm.Expunging, "Expunged"}, v.State)
		state := string(v.State)
		if v.Removed {
			state = "removed"
		}
		emit("vm:"+v.ID, linear.ObserveVM(running[v.Name], dead), "record "+state)
	}
	for _, ip := range s.IPs {
		obj := "ip:" + ip.Address
		u := users[obj]
		slices.Sort(u)
		if len(u) == 0 && ip.Free && r.observed[obj] == "" && !r.touched[obj] {
			continue // never used: nothing to say
		}
		holder := "free"
		if !ip.Free {
			holder = "vm:" + ip.VMID
		}
		emit(obj, strings.Join(u, ","), "pool says "+holder)
	}
	clear(r.touched)
}
