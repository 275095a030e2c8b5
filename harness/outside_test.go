package harness

import (
	"slices"
	"testing"
	"time"

	"github.com/csconform/csconform/model/invariant"
)

// A violation of the domains' truth stands only when two checks in a row see it; one judged on the
// history alone stands at once.
func TestTwoLooks(t *testing.T) {
	orphan := invariant.Violation{Invariant: invariant.OrphanDomain, Object: "domain:i-2-2-VM"}
	lock := invariant.Violation{Invariant: invariant.NetworkLock, Object: "network:1"}
	var looks twoLooks
	for i, c := range []struct {
		in   []invariant.Violation
		want int
	}{
		{[]invariant.Violation{orphan, lock}, 1}, // the orphan seen once: held back
		{[]invariant.Violation{orphan}, 1},       // seen twice: stands
		{nil, 0},                                 // gone
		{[]invariant.Violation{orphan}, 0},       // seen once again: held back again
	} {
		if got := looks.confirm(c.in); len(got) != c.want {
			t.Errorf("check %d: %d violations stand (%v), want %d", i+1, len(got), got, c.want)
		}
	}
}

// Each kind of finding about one address is reported once, and one reported first does not hide
// another: the address allocated to a new VM whose domain does not run yet, then used by two running
// domains once it does (seed 004 on real domains).
func TestOutsideChecksReportEachKindOnce(t *testing.T) {
	ip := func(msg string) invariant.Violation {
		return invariant.Violation{Invariant: invariant.IPConflict, Object: "ip:10.1.1.10", Message: msg}
	}
	allocated := ip("address 10.1.1.10 used by running domain i-2-2-VM on host h1 is allocated to VM 14 in network 1")
	shared := ip("address 10.1.1.10 used by 2 running domains: i-2-14-VM on host h1, i-2-2-VM on host h1")
	var oc OutsideChecks
	rec := NewRecorder(time.Now)
	none := func(string) []string { return nil }
	var reported []string
	for _, vs := range [][]invariant.Violation{{allocated}, {allocated}, {allocated}, {shared}, {shared}, {allocated, shared}} {
		for _, v := range oc.addChecked(rec, vs, none) {
			reported = append(reported, v.Message)
		}
	}
	if want := []string{allocated.Message, shared.Message}; !slices.Equal(reported, want) {
		t.Errorf("reported %q, want %q", reported, want)
	}
}
