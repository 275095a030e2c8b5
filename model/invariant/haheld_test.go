package invariant

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// While an HA restart item holds a VM's power reports, power sync only postpones them and resets the
// VM's power-change counters (apache/cloudstack main as stored,
// engine/orchestration/src/main/java/com/cloud/vm/VirtualMachineManagerImpl.java
// handlePowerStateReport: hasPendingHaWork → resetVmPowerStateTracking); once the item is finished
// (HighAvailabilityManagerImpl.restart at apache/cloudstack@04913a45: checkAndCancelWorkIfNeeded
// cancels a HostDown item whose host is Up again) the next missing reports past the graceful period
// stop the VM. So a ghost whose hold ended after it began has the whole bound from that end
// (VM.HAReleased), not from when it began. The planted ghosts: one with no HA hold past the bound, one
// whose hold ended before it began, one that outlasts the bound from the hold's end. Both checkers,
// the Tracker and the Incremental, judge alike.
func TestGhostBoundCountsFromTheEndOfAnHAHold(t *testing.T) {
	const bound = 5 * time.Minute
	cases := []struct {
		name     string
		released int // seconds; 0: no hold ever ended
		check    int // the second check (the first, at 110 s, sees the ghost begin)
		want     bool
	}{
		{"no HA hold, within the bound", 0, 400, false},
		{"no HA hold, past the bound (planted)", 0, 411, true},
		{"hold ended before the ghost began (planted)", 50, 411, true},
		{"hold ended after the ghost began: within the bound from its end", 300, 599, false},
		{"hold ended after the ghost began: past the bound from its end (planted)", 300, 601, true},
		{"hold ended at the check: the bound starts again", 411, 411, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			snap := func(sec int) Snapshot {
				s := withNetworks()
				s.Time = at(sec)
				s.GhostBound = bound
				s.Domains = s.Domains[1:] // i-1 no longer runs on h1
				if tc.released > 0 && sec >= tc.released {
					s.VMs[0].HAReleased = at(tc.released)
				}
				return s
			}
			isGhost := func(v Violation) bool { return v.Invariant == GhostRecord && v.Object == "vm:v1" }

			tr := NewTracker()
			require.False(t, slices.ContainsFunc(tr.Check(snap(110)), isGhost))
			got := tr.Check(snap(tc.check))
			require.Equal(t, tc.want, slices.ContainsFunc(got, isGhost), "tracker: %v", got)

			in := NewIncremental()
			first := snap(110)
			in.Load(first)
			require.False(t, slices.ContainsFunc(in.Check(first.Time, first.ReportGrace, bound, nil), isGhost))
			later := snap(tc.check)
			in.SetVM(later.VMs[0])
			got = in.Check(later.Time, later.ReportGrace, bound, nil)
			require.Equal(t, tc.want, slices.ContainsFunc(got, isGhost), "incremental: %v", got)
		})
	}
}
