// Package verdict judges what runs leave: the results of scenario runs (harness.Result) — each
// scenario's verdict for a summary line, the tally of several, the worst outcome (the exit status
// csconform repro gives) and the summary of findings a report ends with — and a saved history judged
// again (Recheck, csconform check).
package verdict

import (
	"fmt"
	"strings"

	"github.com/csconform/csconform/harness"
)

// Outcome is what a scenario's result comes to, in rank order: a worse one wins over a better.
type Outcome int

// The outcomes, best first.
const (
	OK        Outcome = iota // nothing found, or what its expectations said
	Undecided                // an object the linearizability checker could not decide
	Found                    // a violation or a non-linearizable object
	Unmet                    // an expectation not met
)

// Verdict is one scenario's judgement: its status word and detail for the summary line, and the
// outcome it alone would give.
type Verdict struct {
	Status, Detail string
	Outcome        Outcome
}

// Of is a scenario's verdict. A scenario whose expectations were checked is judged by them when
// gate is set (--expectations): the violations and non-linearizable objects its profile is known
// for are its expected outcome then, not a failure. Otherwise an unmet expectation wins over a
// finding, which wins over an undecided object.
func Of(r *harness.Result, gate bool) Verdict {
	var found []string
	seen := map[string]bool{}
	for _, v := range r.Violations {
		if !seen[v.Invariant] {
			seen[v.Invariant] = true
			found = append(found, v.Invariant)
		}
	}
	for _, l := range r.NotLinearizable {
		found = append(found, "not linearizable: "+l.Object)
	}
	var und []string
	for _, l := range r.Undecided {
		und = append(und, "undecided: "+l.Object)
	}
	what := strings.Join(append(found, und...), ", ")
	switch {
	case r.Expected && len(r.Mismatches) > 0:
		return Verdict{"UNMET", strings.Join(r.Mismatches, "; "), Unmet}
	case r.Expected && gate:
		if what == "" {
			return Verdict{"met", "as expected: nothing found", OK}
		}
		return Verdict{"met", "as expected: " + what, OK}
	case len(found) > 0:
		return Verdict{"FOUND", what, Found}
	case len(und) > 0:
		return Verdict{"UNDECIDED", what, Undecided}
	case r.Expected:
		return Verdict{"met", "as expected: nothing found", OK}
	}
	return Verdict{"clean", "nothing found", OK}
}

// Tally is a summary's last line: how many scenarios got each verdict.
func Tally(rs []*harness.Result, gate bool) string {
	order := []string{"met", "clean", "UNMET", "FOUND", "UNDECIDED"}
	n := map[string]int{}
	for _, r := range rs {
		n[Of(r, gate).Status]++
	}
	var parts []string
	for _, st := range order {
		if n[st] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n[st], st))
		}
	}
	return fmt.Sprintf("%d scenario(s): %s", len(rs), strings.Join(parts, ", "))
}

// Worst is the worst of the scenarios' outcomes: an expectation not met wins over a violation, so a
// profile whose expected violations stop showing fails the run instead of passing as "found"; a
// violation wins over an undecided object. With gate (--expectations), a scenario that met its
// expectations counts as OK whatever it found.
func Worst(rs []*harness.Result, gate bool) Outcome {
	worst := OK
	for _, r := range rs {
		worst = max(worst, Of(r, gate).Outcome)
	}
	return worst
}

// Summary is a report's last lines: the findings, the objects undecided, and the scenarios that did
// not meet their expectations.
func Summary(rs []*harness.Result) string {
	var unmet []string
	for _, r := range rs {
		if r.Expected && len(r.Mismatches) > 0 {
			unmet = append(unmet, fmt.Sprintf("%s under %s: %s", r.Scenario, r.Profile, strings.Join(r.Mismatches, "; ")))
		}
	}
	s := findings(rs)
	if len(unmet) > 0 {
		s += fmt.Sprintf("\nUNEXPECTED: %d scenario(s) did not meet their expectations:\n  %s", len(unmet), strings.Join(unmet, "\n  "))
	}
	return s
}

// findings is the summary's line about violations and linearizability.
func findings(rs []*harness.Result) string {
	n, bad := 0, 0
	var names []string
	for _, r := range rs {
		n += len(r.Violations) + len(r.NotLinearizable)
		if len(r.Violations) == 0 && len(r.NotLinearizable) == 0 {
			continue
		}
		bad++
		seen := map[string]bool{}
		for _, v := range r.Violations {
			if !seen[v.Invariant] {
				seen[v.Invariant] = true
				names = append(names, r.Scenario+": "+v.Invariant)
			}
		}
		for _, l := range r.NotLinearizable {
			names = append(names, r.Scenario+": not linearizable: "+l.Object)
		}
	}
	// an object the checker could not decide is named as such, never counted as linearizable
	var undecided []string
	for _, r := range rs {
		for _, l := range r.Undecided {
			undecided = append(undecided, r.Scenario+": "+l.Object)
		}
	}
	und := ""
	if len(undecided) > 0 {
		und = fmt.Sprintf("\n%d object(s) undecided (the linearizability checker timed out): not known to be linearizable:\n  %s", len(undecided), strings.Join(undecided, "\n  "))
	}
	if n == 0 {
		lin := ", every object's history linearizable"
		if len(undecided) > 0 {
			lin = ", every object's history decided linearizable"
		}
		for _, r := range rs {
			if !r.LinearChecked {
				lin = " (linearizability not checked: the world records no server history)"
			}
		}
		return fmt.Sprintf("%d scenario(s), no invariant violated%s%s", len(rs), lin, und)
	}
	return fmt.Sprintf("%d scenario(s), %d with findings (%d in all):\n  %s%s", len(rs), bad, n, strings.Join(names, "\n  "), und)
}
