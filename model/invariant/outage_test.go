package invariant

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/csconform/csconform/model/network"
	"github.com/csconform/csconform/model/vm"
)

// withNetworks gives clean()'s VMs their NIC on n1 and n1 its router r1.
func withNetworks() Snapshot {
	s := clean()
	for i := range s.VMs {
		s.VMs[i].NetworkIDs = []string{"n1"}
	}
	s.Networks[0].RouterID = "r1"
	return s
}

// The bugs of the class, planted: the network GC or the orphaned-network cleanup shuts a network down
// (or its router is stopped, or the router's record says Running while it runs nowhere) under a VM
// that runs on it. The fix — every network of a running VM implemented with its router up — passes.
func TestCheckNetworkOutages(t *testing.T) {
	cases := []struct {
		name  string
		plant func(*Snapshot)
		want  string // "" = no violation
	}{
		{"clean", func(*Snapshot) {}, ""},
		{"network shut down under a running VM", func(s *Snapshot) { s.Networks[0].State = network.Shutdown }, "network n1 is Shutdown"},
		{"network back to Allocated under a running VM", func(s *Snapshot) { s.Networks[0].State = network.Allocated }, "network n1 is Allocated"},
		{"router stopped", func(s *Snapshot) { s.VMs[2].State = vm.Stopped; s.Domains = s.Domains[:2] }, "router r-1 is Stopped"},
		{"router record Running, domain gone", func(s *Snapshot) { s.Domains = s.Domains[:2] }, "router r-1 runs nowhere"},
		{"a router a fault crashed is HA's business", func(s *Snapshot) {
			s.Domains = s.Domains[:2]
			s.Faults = append(s.Faults, Fault{Kind: "crash", Targets: []string{"vm:r1"}, Begin: at(50), Disruptive: true})
		}, ""},
		{"a VM whose domain is gone is not judged here", func(s *Snapshot) {
			s.Networks[0].State = network.Shutdown
			s.Domains = s.Domains[2:]
		}, ""},
		{"a stopped VM on a shut-down network is fine", func(s *Snapshot) {
			s.Networks[0].State = network.Shutdown
			s.VMs[0].State, s.VMs[1].State = vm.Stopped, vm.Stopped
		}, ""},
		{"a network being implemented under a starting VM is fine", func(s *Snapshot) {
			s.Networks[0].State = network.Implementing
			s.VMs[0].State, s.VMs[1].State = vm.Starting, vm.Starting
		}, ""},
		{"no NIC data (an outside world): nothing judged", func(s *Snapshot) {
			s.Networks[0].State = network.Shutdown
			for i := range s.VMs {
				s.VMs[i].NetworkIDs = nil
			}
		}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := withNetworks()
			c.plant(&s)
			vs := CheckNetworkOutages(s)
			if c.want == "" {
				if len(vs) > 0 {
					t.Fatalf("unexpected: %v", vs)
				}
				return
			}
			if len(vs) == 0 || !strings.Contains(vs[0].Message, c.want) || vs[0].Invariant != NetworkOutage {
				t.Fatalf("got %v, want a network-outage saying %q", vs, c.want)
			}
			if len(Check(s)) == 0 {
				t.Fatal("Check does not run the network-outage check")
			}
		})
	}
}

// The bug of the class, planted: a start that "succeeds" (or a power-on sync that keeps a stale host)
// leaves a record Running where no domain runs. Within the bound power sync may still fix it; past it
// the tracker reports it once per check; a domain that appears, or a record that stops, resets it.
func TestTrackerGhostRecords(t *testing.T) {
	ghost := func(sec int, gone bool) Snapshot {
		s := withNetworks()
		s.Time = at(sec)
		s.GhostBound = 5 * time.Minute
		if gone {
			s.Domains = s.Domains[1:] // i-1 no longer runs on h1
		}
		return s
	}
	tr := NewTracker()
	steps := []struct {
		sec    int
		gone   bool
		want   bool
		paused bool // the harness passes GhostBound 0: no report can be processed (server restarting)
	}{
		{100, false, false, false},
		{110, true, false, false}, // first seen
		{300, true, false, false}, // within the bound
		{411, true, true, false},  // past it
		{420, false, false, false},
		{430, true, false, false}, // a new condition: the clock starts again
		{740, true, true, false},
		{750, true, false, true},  // paused: nothing is judged, and the age is forgotten
		{900, true, false, false}, // back: the clock starts again here
		{1150, true, false, false},
		{1201, true, true, false},
	}
	for _, st := range steps {
		s := ghost(st.sec, st.gone)
		if st.paused {
			s.GhostBound = 0
		}
		vs := tr.Check(s)
		var got []Violation
		for _, v := range vs {
			if v.Invariant == GhostRecord {
				got = append(got, v)
			}
		}
		if st.want != (len(got) > 0) {
			t.Fatalf("at %d s: ghost-record violations %v, want %v", st.sec, got, st.want)
		}
		if st.want && (got[0].Object != "vm:v1" || !strings.Contains(got[0].Message, "no domain i-1 runs on host h1")) {
			t.Fatalf("at %d s: %v", st.sec, got[0])
		}
	}
	// a Running record with no host at all is a ghost too
	tr = NewTracker()
	s := ghost(100, false)
	s.VMs[0].HostID = ""
	tr.Check(s)
	s.Time = at(500)
	vs := tr.Check(s)
	found := false
	for _, v := range vs {
		found = found || (v.Invariant == GhostRecord && strings.Contains(v.Message, "its record has no host"))
	}
	if !found {
		t.Fatalf("a Running record without a host: %v", vs)
	}
	// with no bound (a world that cannot tell) the check is off
	tr = NewTracker()
	for _, sec := range []int{100, 1000} {
		s := ghost(sec, true)
		s.GhostBound = 0
		if vs := tr.Check(s); len(vs) != 0 {
			t.Fatalf("check without a bound: %v", vs)
		}
	}
}

// An HA-enabled VM reported off is HA's: its ghost bound is longer by HA's retry interval (HAGrace),
// and past that it is a ghost all the same.
func TestTrackerGhostRecordsOfHAVMs(t *testing.T) {
	tr := NewTracker()
	for _, st := range []struct {
		sec  int
		want bool
	}{{110, false}, {411, false}, {1009, false}, {1011, true}} {
		s := withNetworks()
		s.Time = at(st.sec)
		s.GhostBound = 5 * time.Minute
		s.VMs[0].HAGrace = 10 * time.Minute
		s.Domains = s.Domains[1:] // i-1 no longer runs on h1
		got := slices.ContainsFunc(tr.Check(s), func(v Violation) bool { return v.Invariant == GhostRecord && v.Object == "vm:v1" })
		if got != st.want {
			t.Fatalf("at %d s: ghost-record %v, want %v", st.sec, got, st.want)
		}
	}
}

// A router's record is judged as a ghost like a user VM's: Running past the bound with no domain on
// its settled host (its network's VMs lose their gateway, and the next start on the network finds the
// router Running and does not start it). The planted bug: its domain gone and its record left.
func TestTrackerGhostRouters(t *testing.T) {
	tr := NewTracker()
	for _, st := range []struct {
		sec  int
		gone bool
		want bool
	}{{100, false, false}, {110, true, false}, {411, true, true}, {420, false, false}} {
		s := withNetworks()
		s.Time = at(st.sec)
		s.GhostBound = 5 * time.Minute
		if st.gone {
			s.Domains = s.Domains[:2] // r-1 no longer runs on its host
		}
		got := slices.ContainsFunc(tr.Check(s), func(v Violation) bool { return v.Invariant == GhostRecord && v.Object == "vm:r1" })
		if got != st.want {
			t.Fatalf("at %d s: router ghost-record %v, want %v", st.sec, got, st.want)
		}
	}
}
