package detect

import (
	"fmt"
	"time"

	"github.com/csconform/csconform/model/invariant"
)

// Transition is something a world observes in a transitional state (a VM Starting, Stopping or
// Migrating, a network Implementing, a job in progress): since when, as far as its records say, and
// how long it may stay there in a cloud left alone (the world's liveness bound, from its
// configuration).
type Transition struct {
	Object, What string
	Since        time.Time
	Bound        time.Duration
	// Duty: the bound is a duty of the management server's own (the job GC's expunge of unfinished
	// jobs), which a host's or a link's fault does not hold up: only a server's fault excuses it.
	Duty bool
}

// Overdue says whether t has been in its state for its bound or longer (an unknown since: never).
func (t Transition) Overdue(now time.Time) bool {
	return !t.Since.IsZero() && now.Sub(t.Since) >= t.Bound
}

// StuckInTransition judges what is in a transitional state at now: one past its bound is stuck (a
// network stuck in Implementing is the most common real report of this kind), its time counted from
// quiet if later (the end of the last fault: a thing that got there recently is still within its
// time), a duty's from serverQuiet (the end of the last management server's fault). A caller whose
// fault is still on passes now. The violations come in the order of ts.
func StuckInTransition(ts []Transition, now, quiet, serverQuiet time.Time) []invariant.Violation {
	var out []invariant.Violation
	for _, t := range ts {
		q := quiet
		if t.Duty {
			q = serverQuiet
		}
		if !t.Overdue(now) || now.Sub(q) < t.Bound {
			continue
		}
		out = append(out, invariant.Violation{Invariant: invariant.StuckInTransition, Object: t.Object, Time: now,
			Message: fmt.Sprintf("%s since %s ago, past the %s it may take in a cloud left alone", t.What, now.Sub(t.Since).Round(time.Second), t.Bound)})
	}
	return out
}
