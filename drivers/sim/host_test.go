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
