package harness

import (
	"slices"
	"testing"
	"time"

	"github.com/csconform/csconform/model/invariant"
)

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
