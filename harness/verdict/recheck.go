package verdict

import (
	"time"

	"github.com/csconform/csconform/detect"
	"github.com/csconform/csconform/model/guard"
	"github.com/csconform/csconform/model/history"
	"github.com/csconform/csconform/model/invariant"
	"github.com/csconform/csconform/model/linear"
)

// Rechecked is a saved history judged again (csconform check).
type Rechecked struct {
	// Violations are those the history records, then the transition guards' verdicts it did not
	// record (a history saved before a guard was written, or with other settings).
	Violations []history.Event
	// Results are every partition's linearizability, Bad those not linearizable and Undecided those
	// the checker could not decide within its timeout.
	Results, Bad, Undecided []linear.Result
	// Guards is the guards' checker after the history: its Undecided and Reasons say what it could
	// not decide for want of a setting.
	Guards *guard.Checker
}

// Recheck judges a saved history again: the violations it recorded, the transition guards under cfg
// (a verdict the run recorded already is counted once), and each partition's linearizability within
// timeout a partition (0: no limit).
func Recheck(events []history.Event, cfg guard.Config, timeout time.Duration) Rechecked {
	var r Rechecked
	recorded := map[string]bool{} // transition-guard verdicts the run recorded
	for _, e := range events {
		if e.Kind == history.Violation {
			r.Violations = append(r.Violations, e)
			if e.To == invariant.TransitionGuard {
				recorded[e.Object+"|"+e.Detail] = true
			}
		}
	}
	r.Guards = guard.NewChecker(cfg)
	for _, e := range events {
		r.Guards.Add(e)
	}
	for _, v := range r.Guards.Violations {
		if gv := detect.GuardViolation(v); !recorded[gv.Object+"|"+gv.Message] {
			r.Violations = append(r.Violations, history.Event{Kind: history.Violation, Object: gv.Object, Time: gv.Time, To: gv.Invariant, Detail: gv.Message})
		}
	}
	r.Results = linear.Check(linear.Partitions(events), timeout)
	r.Bad, r.Undecided = linear.Illegal(r.Results), linear.Undecided(r.Results)
	return r
}
