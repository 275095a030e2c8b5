package detect

import (
	"fmt"
	"iter"
	"slices"
	"strings"
	"time"

	"github.com/csconform/csconform/model/history"
	"github.com/csconform/csconform/model/invariant"
)

// unexplainedStopGrace is how long after a fault on a VM (its guest shuts itself down over seconds), on
// a host or a peer server's stop its domain may still stop because of it: HA investigates, fences and
// force-stops on its own schedule (investigate.retry.interval, restart.retry.interval).
const unexplainedStopGrace = 15 * time.Minute

// UnexplainedStops judges a recorded history: a user VM's domain stopped running (the observer saw
// it on, then off) while its record said Running, with no client operation on the VM, no fault on the
// VM or on a host and no peer server's stop in flight or ended within unexplainedStopGrace before.
// Nothing in the fixed reference stops the domain of a VM it believes Running unasked (power sync's
// stop of a missing VM is checkBeforeCleanup: the agent refuses while the domain runs); a regression
// that does (an unchecked stop, a stop sent to the wrong host) loses a user's running VM without
// breaking any other invariant: its record follows the domain. faults are the run's injected faults,
// as the world recorded them.
func UnexplainedStops(events iter.Seq[history.Event], faults []invariant.Fault) []invariant.Violation {
	type op struct {
		call, done time.Time
		stops      bool // a stop, destroy or expunge: its StopCommand may land after it returned
	}
	ops := map[int]*op{}
	byObj := map[string][]*op{} // the objects an operation names at its call or its return
	for e := range events {
		switch e.Kind {
		case history.Call:
			kind, _, _ := strings.Cut(e.Detail, " ")
			o := &op{call: e.Time, stops: slices.Contains(invariant.StopKinds, kind)}
			ops[e.Op] = o
			byObj[e.Object] = append(byObj[e.Object], o)
		case history.Return:
			if o := ops[e.Op]; o != nil {
				o.done = e.Time
				if e.Object != "" && !slices.Contains(byObj[e.Object], o) {
					byObj[e.Object] = append(byObj[e.Object], o)
				}
			}
		}
	}
	onVM := func(obj string, t time.Time) bool {
		for _, o := range byObj[obj] {
			// a stopping operation's StopCommand can still run after the operation gave up on it (a
			// request a restart or a disconnect cancelled, a command held on a cut link)
			grace := time.Second
			if o.stops {
				grace = unexplainedStopGrace
			}
			if !o.call.After(t) && (o.done.IsZero() || !o.done.Add(grace).Before(t)) {
				return true
			}
		}
		return false
	}
	faulted := func(obj string, t time.Time) bool {
		for _, f := range faults {
			// a stale report moves no domain: it is the very fault an unchecked stop would turn into a
			// lost VM
			if !f.Disruptive || f.Begin.After(t) || f.Kind == "stale-report" {
				continue
			}
			for _, tg := range f.Targets {
				// a guest's own shutdown takes a while to stop its domain; HA acts on its own schedule
				if (tg == obj || strings.HasPrefix(tg, "host:") || f.Kind == "peer-stop") &&
					(f.End.IsZero() || !f.End.Add(unexplainedStopGrace).Before(t)) {
					return true
				}
			}
		}
		return false
	}
	var out []invariant.Violation
	last := map[string]string{}
	for e := range events {
		if e.Kind != history.Observe || !strings.HasPrefix(e.Object, "vm:") {
			continue
		}
		prev := last[e.Object]
		last[e.Object] = e.To
		if !strings.HasPrefix(prev, "on/") || !strings.HasPrefix(e.To, "off/") || e.Detail != "record Running" {
			continue
		}
		if onVM(e.Object, e.Time) || faulted(e.Object, e.Time) {
			continue
		}
		out = append(out, invariant.Violation{Invariant: invariant.UnexplainedStop, Object: e.Object, Time: e.Time,
			Message: fmt.Sprintf("the domain of %s stopped while its record said Running, with no client operation on it and no fault on it, a host or a management server to explain it", e.Object)})
	}
	return out
}
