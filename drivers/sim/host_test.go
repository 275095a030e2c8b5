package sim

import (
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
