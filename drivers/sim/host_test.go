package sim

import (
	"strings"
	"testing"
	"time"

	"github.com/csconform/csconform/impl"
)

// TestDomainsVersionMovesWithEveryHost: the incremental checker compares each host's Version only when
// its scheduler's DomainsVersion moved, so every change a Version shows must move it too.
func TestDomainsVersionMovesWithEveryHost(t *testing.T) {
	s := NewScheduler(1)
	defer s.Close()
	h1, h2 := NewHost(s, "h1"), NewHost(s, "h2")
	type seen struct{ v1, v2, all uint64 }
	look := func() seen { return seen{h1.Version(), h2.Version(), s.DomainsVersion()} }
	var fails []string
	step := func(what string, do func()) {
		before := look()
		do()
		after := look()
		if (after.v1 != before.v1 || after.v2 != before.v2) && after.all == before.all {
			fails = append(fails, what)
		}
	}
	s.Go("t", func() {
		step("start on h2", func() { _ = h2.Start(impl.DomainSpec{Name: "i-2-1-VM"}) })
		step("start on h1", func() { _ = h1.Start(impl.DomainSpec{Name: "i-2-2-VM"}) })
		step("stop on h2", func() { _ = h2.Stop("i-2-1-VM") })
		step("stop of a gone domain", func() { _ = h2.Stop("i-2-1-VM") })
		step("power off h1", h1.PowerOff)
	})
	if err := s.RunFor(time.Minute); err != nil {
		t.Fatal(err)
	}
	if fails != nil {
		t.Fatalf("a host's Version moved and DomainsVersion did not: %v", fails)
	}
	if s.DomainsVersion() == 0 {
		t.Fatal("DomainsVersion never moved")
	}
}

// TestRunningAnswersStayAsHandedOut: Running shares its answer between calls, so a report already on
// the wire must not change when a domain does, and a caller's append must not write into it.
func TestRunningAnswersStayAsHandedOut(t *testing.T) {
	s := NewScheduler(1)
	defer s.Close()
	h := NewHost(s, "h1")
	s.Go("t", func() {
		_ = h.Start(impl.DomainSpec{Name: "i-2-2-VM"})
		_ = h.Start(impl.DomainSpec{Name: "i-2-1-VM"})
		first := h.Running()
		if again := h.Running(); &again[0] != &first[0] {
			t.Errorf("an unchanged host built a new answer")
		}
		_ = h.Stop("i-2-1-VM")
		_ = h.Start(impl.DomainSpec{Name: "i-2-0-VM"})
		if got := h.Running(); len(got) != 2 || got[0] != "i-2-0-VM" || got[1] != "i-2-2-VM" {
			t.Errorf("after the change: %v", got)
		}
		if len(first) != 2 || first[0] != "i-2-1-VM" || first[1] != "i-2-2-VM" {
			t.Errorf("an answer handed out changed: %v", first)
		}
		if again := h.Running(); cap(again) != len(again) {
			t.Errorf("an answer has room (%d > %d): a caller's append would write into it", cap(again), len(again))
		}
	})
	if err := s.RunFor(time.Minute); err != nil {
		t.Fatal(err)
	}
}

// TestMigrateTo: libvirt's peer-to-peer migration as LibvirtMigrateCommandWrapper has it run: the
// domain comes to run on the destination before it stops on the source; a source domain gone, an
// unknown destination or one that already runs the domain fails it with nothing left on the
// destination.
func TestMigrateTo(t *testing.T) {
	const vm = "i-2-1-VM"
	for _, tc := range []struct {
		name    string
		before  func(src, dst *Host)
		during  func(src, dst *Host) // while the memory is copied
		dest    string
		wantErr string
		wantOn  string // the host running the domain at the end ("" none)
	}{
		{name: "moves", dest: "h2", wantOn: "h2"},
		{name: "unknown destination", dest: "h9", wantErr: "unable to connect", wantOn: "h1"},
		{name: "to itself", dest: "h1", wantErr: "unable to connect", wantOn: "h1"},
		{name: "destination already runs it", dest: "h2", wantErr: "already exists",
			before: func(_, dst *Host) { _ = dst.Start(impl.DomainSpec{Name: vm}) }, wantOn: "h1,h2"},
		{name: "source crashes during the copy", dest: "h2", wantErr: "is not running",
			during: func(src, _ *Host) { _ = src.Crash(vm, "CRASHED") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewScheduler(1)
			defer s.Close()
			hosts := map[string]*Host{}
			for _, id := range []string{"h1", "h2"} {
				h := NewHost(s, id)
				h.Peers = func(id string) *Host { return hosts[id] }
				hosts[id] = h
			}
			src, dst := hosts["h1"], hosts["h2"]
			var err error
			bothAtOnce, received := false, false
			s.Go("t", func() {
				_ = src.Start(impl.DomainSpec{Name: vm, IPs: []string{"10.1.1.10"}})
				if tc.before != nil {
					tc.before(src, dst)
				}
				if tc.during != nil {
					s.Go("fault", func() { s.Sleep(500 * time.Millisecond); tc.during(src, dst) })
				}
				err = src.MigrateTo(vm, tc.dest)
			})
			s.AfterStep = func() {
				if len(src.Running()) == 1 && len(dst.Running()) == 1 && tc.before == nil {
					bothAtOnce = true
				}
				if dst.Receiving(vm) {
					received = true
					if len(dst.Running()) != 0 && tc.before == nil {
						t.Error("the incoming domain is paused: it runs nothing during the copy")
					}
				}
			}
			if rerr := s.RunFor(time.Minute); rerr != nil {
				t.Fatal(rerr)
			}
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("MigrateTo = %v, want error %q", err, tc.wantErr)
			}
			var on []string
			for _, id := range []string{"h1", "h2"} {
				if len(hosts[id].Running()) > 0 {
					on = append(on, id)
				}
			}
			if got := strings.Join(on, ","); got != tc.wantOn {
				t.Fatalf("domain runs on %q, want %q", got, tc.wantOn)
			}
			if tc.name == "moves" && !bothAtOnce {
				t.Fatal("the domain never ran on both hosts at the handover: it must exist on the destination before it stops on the source")
			}
			if wantRecv := tc.dest == "h2" && tc.before == nil; received != wantRecv {
				t.Fatalf("the destination received the domain during the copy: %v, want %v (libvirt defines the incoming domain, paused, before the copy)", received, wantRecv)
			}
			if dst.Receiving(vm) {
				t.Fatal("the copy is over: nothing is incoming any more")
			}
		})
	}
}

// TestFailStarts: while the start-fails fault is on, a start answers libvirt's error and leaves no
// domain; the domains already running go on; once it is off, starts create domains again.
func TestFailStarts(t *testing.T) {
	s := NewScheduler(1)
	defer s.Close()
	h := NewHost(s, "h1")
	var errs []error
	s.Go("t", func() {
		errs = append(errs, h.Start(impl.DomainSpec{Name: "i-2-1-VM"}))
		h.FailStarts(true)
		errs = append(errs, h.Start(impl.DomainSpec{Name: "i-2-2-VM"}))
		h.FailStarts(false)
		errs = append(errs, h.Start(impl.DomainSpec{Name: "i-2-3-VM"}))
	})
	if err := s.RunFor(time.Minute); err != nil {
		t.Fatal(err)
	}
	if errs[0] != nil || errs[2] != nil {
		t.Fatalf("starts outside the fault failed: %v", errs)
	}
	if errs[1] == nil || !strings.Contains(errs[1].Error(), "qemu unexpectedly closed the monitor") {
		t.Fatalf("start during the fault: %v, want libvirt's error", errs[1])
	}
	if got := strings.Join(h.Running(), ","); got != "i-2-1-VM,i-2-3-VM" {
		t.Fatalf("running %s, want i-2-1-VM,i-2-3-VM (no domain of the failed start)", got)
	}
}
