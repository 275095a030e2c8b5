package detect

import (
	"testing"

	"github.com/csconform/csconform/model/invariant"
)

// A violation of the domains' truth stands only when two checks in a row see it; one judged on the
// history alone stands at once.
func TestTwoLooks(t *testing.T) {
	orphan := invariant.Violation{Invariant: invariant.OrphanDomain, Object: "domain:i-2-2-VM"}
	lock := invariant.Violation{Invariant: invariant.NetworkLock, Object: "network:1"}
	var looks TwoLooks
	for i, c := range []struct {
		in   []invariant.Violation
		want int
	}{
		{[]invariant.Violation{orphan, lock}, 1}, // the orphan seen once: held back
		{[]invariant.Violation{orphan}, 1},       // seen twice: stands
		{nil, 0},                                 // gone
		{[]invariant.Violation{orphan}, 0},       // seen once again: held back again
	} {
		if got := looks.Confirm(c.in); len(got) != c.want {
			t.Errorf("check %d: %d violations stand (%v), want %d", i+1, len(got), got, c.want)
		}
	}
}
