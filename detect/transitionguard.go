package detect

import (
	"fmt"
	"iter"
	"strings"
	"time"

	"github.com/csconform/csconform/model/guard"
	"github.com/csconform/csconform/model/history"
	"github.com/csconform/csconform/model/invariant"
)

// GuardConfigAt is the configuration the guards read from a time on (a setConfig step changes it
// mid-run; a real world's scaled set-up timings end).
type GuardConfigAt struct {
	From time.Time
	Cfg  guard.Config
}

// JudgeGuards judges every state change of a history against the transition guards (model/guard),
// each under the configuration in force at its time (cfgs in time order, the first from the start).
// The checker keeps, beside its violations, how many changes each guard decided (Judged).
func JudgeGuards(events iter.Seq[history.Event], cfgs []GuardConfigAt) *guard.Checker {
	ch := guard.NewChecker(cfgs[0].Cfg)
	next := 1
	for e := range events {
		for next < len(cfgs) && !cfgs[next].From.After(e.Time) {
			ch.SetConfig(cfgs[next].Cfg)
			next++
		}
		ch.Add(e)
	}
	return ch
}

// GuardViolation is a guard's refusal as a transition-guard violation: the transition, the guard, and
// the history lines its verdict rests on.
func GuardViolation(v guard.Violation) invariant.Violation {
	lines := make([]string, len(v.Evidence))
	for i, e := range v.Evidence {
		lines[i] = fmt.Sprint(e.Seq)
	}
	return invariant.Violation{Invariant: invariant.TransitionGuard, Object: v.Event.Object, Time: v.Event.Time,
		Message: fmt.Sprintf("%s: %s by %s was not allowed: %s (history lines %s)", v.Guard, v.Row, v.Event.Actor, v.Reason, strings.Join(lines, ", "))}
}
