package invariant

import (
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/csconform/csconform/model/host"
	"github.com/csconform/csconform/model/network"
	"github.com/csconform/csconform/model/vm"
)

// world is a small cloud whose rows a test changes one at a time: the whole snapshot for the Tracker,
// the change for the Incremental.
type world struct {
	vms      map[string]VM
	hosts    map[string]Host
	networks map[string]Network
	pools    map[string][]IP
	volumes  map[string]Volume
	domains  map[string][]Domain
	faults   []Fault
	ops      []ClientOp
	writes   []NetworkChange
}

func (w *world) snapshot(t time.Time, changes []NetworkChange) Snapshot {
	s := Snapshot{Time: t, ReportGrace: 20 * time.Second, GhostBound: 30 * time.Second, NetworkChanges: changes, NetworkWrites: w.writes, Faults: w.faults, Ops: w.ops}
	for _, id := range slices.Sorted(maps.Keys(w.vms)) {
		s.VMs = append(s.VMs, w.vms[id])
	}
	for _, id := range slices.Sorted(maps.Keys(w.hosts)) {
		s.Hosts = append(s.Hosts, w.hosts[id])
	}
	for _, id := range slices.Sorted(maps.Keys(w.networks)) {
		s.Networks = append(s.Networks, w.networks[id])
	}
	for _, id := range slices.Sorted(maps.Keys(w.pools)) {
		s.IPs = append(s.IPs, w.pools[id]...)
	}
	for _, id := range slices.Sorted(maps.Keys(w.volumes)) {
		s.Volumes = append(s.Volumes, w.volumes[id])
	}
	for _, h := range slices.Sorted(maps.Keys(w.domains)) {
		s.Domains = append(s.Domains, w.domains[h]...)
	}
	return s
}

var (
	testHosts = []string{"h1", "h2", "h3"}
	testNames = []string{"a", "b", "r-1", "c"}
	testVMIDs = []string{"1", "2", "9", "10", "11"} // "10" sorts before "9" as a string
	testNets  = []string{"20", "21"}
	testAddrs = []string{"10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.1.1"}
	testPaths = []string{"/p1", "/p2", "/p3"}
	vmStates  = []vm.State{vm.Running, vm.Stopped, vm.Starting, vm.Stopping, vm.Destroyed, vm.Expunging, vm.Error}
)

func someOf[T any](t *rapid.T, xs []T, label string) []T {
	var out []T
	for i, x := range xs {
		if rapid.Bool().Draw(t, fmt.Sprintf("%s%d", label, i)) {
			out = append(out, x)
		}
	}
	return out
}

func withEmpty(xs []string) []string { return append([]string{""}, xs...) }

// TestIncrementalMatchesTracker: after every change of a random sequence, the Incremental's verdicts
// are the Tracker's on the whole snapshot, in the same order.
func TestIncrementalMatchesTracker(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		w := &world{vms: map[string]VM{}, hosts: map[string]Host{}, networks: map[string]Network{}, pools: map[string][]IP{},
			volumes: map[string]Volume{}, domains: map[string][]Domain{}}
		tr := NewTracker()
		in := NewIncremental()
		now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		loaded := false
		for step := range rapid.IntRange(1, 40).Draw(t, "steps") {
			now = now.Add(time.Duration(rapid.IntRange(0, 25).Draw(t, "dt")) * time.Second)
			switch rapid.IntRange(0, 8).Draw(t, "what") {
			case 0, 1:
				id := rapid.SampledFrom(testVMIDs).Draw(t, "vm")
				v, had := w.vms[id]
				if !had { // a record's name, type and networks are set at creation
					v = VM{ID: id, Name: rapid.SampledFrom(testNames).Draw(t, "name"), Type: rapid.SampledFrom([]string{"User", "DomainRouter"}).Draw(t, "type"),
						NetworkIDs: someOf(t, testNets, "net")}
				}
				v.State = rapid.SampledFrom(vmStates).Draw(t, "state")
				v.HostID = rapid.SampledFrom(withEmpty(testHosts)).Draw(t, "host")
				v.Removed = rapid.IntRange(0, 5).Draw(t, "removed") == 0
				if rapid.IntRange(0, 3).Draw(t, "released") == 0 { // an HA hold on its reports ended
					v.HAReleased = now.Add(-time.Duration(rapid.IntRange(0, 60).Draw(t, "releasedAgo")) * time.Second)
				}
				w.vms[id] = v
				in.SetVM(v)
			case 2:
				h := Host{ID: rapid.SampledFrom(testHosts).Draw(t, "host"), Status: rapid.SampledFrom([]host.Status{host.Up, host.Up, host.Disconnected, host.Alert}).Draw(t, "status")}
				h.Name = h.ID
				if rapid.Bool().Draw(t, "back") {
					h.UpSince = now.Add(-time.Duration(rapid.IntRange(0, 30).Draw(t, "ago")) * time.Second)
				}
				w.hosts[h.ID] = h
				in.SetHost(h)
			case 3:
				n := Network{ID: rapid.SampledFrom(testNets).Draw(t, "net"), State: rapid.SampledFrom([]network.State{network.Implemented, network.Setup, network.Allocated, network.Shutdown}).Draw(t, "nstate"),
					RouterID: rapid.SampledFrom(withEmpty(testVMIDs)).Draw(t, "router")}
				w.networks[n.ID] = n
				in.SetNetwork(n)
			case 4:
				nid := rapid.SampledFrom(testNets).Draw(t, "pool")
				var pool []IP
				for _, a := range testAddrs[:3] { // 10.0.0.1 is in both pools
					if nid == "21" && a != "10.0.0.1" {
						a = "10.0.1." + a[len(a)-1:]
					}
					holder := rapid.SampledFrom(withEmpty(testVMIDs)).Draw(t, "holder")
					pool = append(pool, IP{Address: a, NetworkID: nid, Free: holder == "", VMID: holder})
				}
				w.pools[nid] = pool
				in.SetPool(nid, pool)
			case 5:
				v := Volume{ID: rapid.SampledFrom([]string{"30", "31", "4"}).Draw(t, "vol"), VMID: rapid.SampledFrom(testVMIDs).Draw(t, "volvm"),
					Path: rapid.SampledFrom(testPaths).Draw(t, "path"), State: rapid.SampledFrom([]string{"Ready", "Destroy", "Expunged", "Allocated"}).Draw(t, "vstate")}
				v.Removed = v.State == "Expunged"
				w.volumes[v.ID] = v
				in.SetVolume(v)
			case 6, 7:
				h := rapid.SampledFrom(testHosts).Draw(t, "domhost")
				var ds []Domain
				for _, name := range someOf(t, testNames, "dom") {
					ds = append(ds, Domain{HostID: h, Name: name, Running: rapid.IntRange(0, 4).Draw(t, "running") > 0,
						IPs: someOf(t, append(testAddrs, "10.0.0.1"), "ip"), Disks: someOf(t, testPaths, "disk"),
						Asserted: rapid.IntRange(0, 4).Draw(t, "asserted") == 0})
				}
				w.domains[h] = ds
				in.SetDomains(h, ds)
			case 8:
				if rapid.Bool().Draw(t, "fault") {
					// a crash of a VM, or a server restart (which can leave a network Implementing)
					target := rapid.SampledFrom(append([]string{"ms"}, testVMIDs...)).Draw(t, "target")
					if target != "ms" {
						target = "vm:" + target
					}
					f := Fault{Kind: "crash", Targets: []string{target}, Begin: now, Disruptive: true}
					if target == "ms" {
						f.End = now.Add(5 * time.Second)
					}
					w.faults = append(w.faults, f)
					in.SetFaults(w.faults)
				} else if open := slices.IndexFunc(w.ops, func(o ClientOp) bool { return o.Return.IsZero() }); open >= 0 && rapid.Bool().Draw(t, "return") {
					// an open call returns: its op is written in place, as the recorder's EndOp does
					w.ops[open].Return, w.ops[open].OK = now, rapid.Bool().Draw(t, "ok")
					in.SetOps(w.ops)
				} else {
					// a migrate names its destination: its domain there is the VM's guest for a while
					op := ClientOp{ID: step + 1, Kind: rapid.SampledFrom([]string{"start", "deploy", "stop", "migrate"}).Draw(t, "opkind"),
						VMID: rapid.SampledFrom(testVMIDs).Draw(t, "opvm"), HostID: rapid.SampledFrom(testHosts).Draw(t, "ophost"),
						NetworkIDs: someOf(t, testNets, "opnet"), Call: now.Add(-time.Second), Err: "boom"}
					if rapid.IntRange(0, 2).Draw(t, "returned") > 0 {
						op.Return, op.OK = now, rapid.Bool().Draw(t, "ok")
					}
					w.ops = append(w.ops, op)
					in.SetOps(w.ops)
				}
			}
			var changes []NetworkChange
			if rapid.IntRange(0, 4).Draw(t, "netwrite") == 0 {
				c := NetworkChange{Time: now, NetworkID: rapid.SampledFrom(testNets).Draw(t, "wnet"), From: network.Implementing,
					To: rapid.SampledFrom([]network.State{network.Shutdown, network.Implementing, network.Implemented}).Draw(t, "wto"), Actor: "gc", LockHolder: "job-1"}
				changes = append(changes, c)
				w.writes = append(w.writes, c)
				in.SetNetworkWrites(w.writes)
			}
			s := w.snapshot(now, changes)
			if !loaded && rapid.Bool().Draw(t, "load") { // a full check can come first, or none at all
				in.Load(s)
				loaded = true
			}
			want := tr.Check(s)
			got := in.Check(now, s.ReportGrace, s.GhostBound, changes)
			if !slices.EqualFunc(got, want, func(a, b Violation) bool { return a == b }) {
				t.Fatalf("step %d at %s:\nincremental %v\nfull        %v", step, now.Format(time.TimeOnly), got, want)
			}
		}
	})
}

// TestIncrementalReadsNetworkWrites: the Incremental judges a failed start on the network writes it
// was handed, as the Tracker does: a deploy into a network a server restart left Implementing is
// explained once the writes are in, and the writes grown later leave that verdict alone.
func TestIncrementalReadsNetworkWrites(t *testing.T) {
	restart := Fault{Kind: "ms-restart", Targets: []string{"ms"}, Begin: at(60), End: at(65), Disruptive: true}
	deploy := ClientOp{ID: 1, Client: "c1", Kind: "deploy", VMID: "v9", NetworkIDs: []string{"n2"}, Call: at(300), Return: at(310), Err: "Failed to implement Network ID=n2"}
	writes := []NetworkChange{{Time: at(50), NetworkID: "n2", From: network.Allocated, To: network.Implementing, Actor: "job-1"}}

	in := NewIncremental()
	in.SetFaults([]Fault{restart})
	in.SetOps([]ClientOp{deploy})
	got := in.Check(at(311), 10*time.Second, 0, nil)
	require.Len(t, got, 1, "without the writes the failure is unexplained")
	require.Equal(t, UnexplainedStartFailure, got[0].Invariant)

	in.SetNetworkWrites(writes)
	require.Empty(t, in.Check(at(312), 10*time.Second, 0, nil), "the restart left n2 Implementing")

	writes = append(writes, NetworkChange{Time: at(313), NetworkID: "n2", From: network.Implementing, To: network.Shutdown, Actor: "job-2"})
	in.SetNetworkWrites(writes)
	require.Empty(t, in.Check(at(314), 10*time.Second, 0, nil), "a write after the call moves nothing")
}
