package detect

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// The checker's own reading of hasPendingHaWork (C8 fixed), on the rows alone: the planted bugs are
// the reference's predicates broken one way or another (a Cancelled or Done item that still holds, a
// CheckStop counted, a stale item that holds), each of which the checker must not follow
// (apache/cloudstack@04913a45 server/src/main/java/com/cloud/ha/HighAvailabilityManagerImpl.java
// hasPendingHaWork; HighAvailabilityDaoImpl.listPendingHaWorkForVm: type HA, step not Done/Error/Cancelled).
func TestHaRestartHoldsIsTheCheckersOwn(t *testing.T) {
	cases := []struct {
		name string
		row  HaWorkRow
		want bool
	}{
		{"scheduled, saw the VM as it is", HaWorkRow{Type: "HA", Step: "Scheduled", PrevUpdate: 5}, true},
		{"investigating, taken by a worker, VM changed since", HaWorkRow{Type: "HA", Step: "Investigating", PrevUpdate: 3, Taken: true}, true},
		{"scheduled, untaken, VM changed since (stale: C8 holds it)", HaWorkRow{Type: "HA", Step: "Scheduled", PrevUpdate: 3}, false},
		{"cancelled", HaWorkRow{Type: "HA", Step: "Cancelled", PrevUpdate: 5, Taken: true}, false},
		{"done", HaWorkRow{Type: "HA", Step: "Done", PrevUpdate: 5}, false},
		{"a CheckStop item", HaWorkRow{Type: "CheckStop", Step: "Scheduled", PrevUpdate: 5}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, HaRestartHolds([]HaWorkRow{c.row}, 5), "the VM's update count is 5")
		})
	}
}
