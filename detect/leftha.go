package detect

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/csconform/csconform/model/invariant"
)

// ServerStop is a management server's stop that a peer should have cleaned up after: its threads'
// prefix in the history ("ms2:"), its name (the msid its jobs carry), when it stopped, and by when its
// peers should have released what it held (the world knows the cluster heartbeat threshold and that
// another server ran).
type ServerStop struct {
	Prefix, Name string
	From, Due    time.Time
}

// LeftServerHaItems judges, for each stop, the HA work items the stopped server was working: a try
// its log began before the stop and never ended must be taken up again (a later "Processing work"
// by another server's worker) by Due — HighAvailabilityManagerImpl.onManagementNodeLeft releases a
// left server's items (releaseWorkItems) so that the peers' workers take them. An item left taken is
// a left-server-job violation, as a left server's job left in progress is.
func LeftServerHaItems(items []*HaItem, stops []ServerStop) []invariant.Violation {
	var out []invariant.Violation
	for _, st := range stops {
		if st.Prefix == "" {
			continue // the threads of a server without a prefix cannot be told from the others'
		}
		for _, it := range items {
			var cut *HaTry
			for i := range it.Tries {
				tr := &it.Tries[i]
				if tr.End == 0 && strings.HasPrefix(tr.Actor, st.Prefix) && tr.At.Before(st.From) {
					cut = tr
				}
			}
			if cut == nil || slices.ContainsFunc(it.Tries, func(tr HaTry) bool { return tr.Begin > cut.Begin && !tr.At.After(st.Due) }) {
				continue
			}
			out = append(out, invariant.Violation{Invariant: invariant.LeftServerJob, Object: it.VM, Time: st.Due,
				Message: fmt.Sprintf("HA work item %d (%s of %s), taken by management server %s, which stopped at %s, was not taken up again by %s while another server ran: no peer released it",
					it.ID, it.Type, it.VM, st.Name, st.From.Format("15:04:05"), st.Due.Format("15:04:05"))})
		}
	}
	return out
}
