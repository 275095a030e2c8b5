package explore

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/csconform/csconform/impl"
	"github.com/csconform/csconform/model/invariant"
)

// The verdicts of an Attribution.
const (
	// VerdictDefect: one switch, or several together, explain the finding: each, switched off alone,
	// makes it go away.
	VerdictDefect = "defect"
	// VerdictSeveral: the finding goes away under fixed but stays with each switch off alone: more
	// than one of the defects on can make it, no one of them is needed.
	VerdictSeveral = "several"
	// VerdictNew: the finding stays under fixed (every known defect's switch off): no known defect
	// explains it.
	VerdictNew = "new"
	// VerdictNotAttributed: the re-runs were not made (a real-time world) or failed.
	VerdictNotAttributed = "not-attributed"
)

// Attribution says which known defect a finding is: its shrunk program run again under fixed, and
// with each defect switch that was on turned off in turn. The runs are bounded by their count (one
// per switch, and fixed), never by time, and the simulator is deterministic: the same finding is
// attributed the same way on any machine.
type Attribution struct {
	Verdict string `json:"verdict"` // defect, several, new or not-attributed
	// Defects are the switches that explain the finding (VerdictDefect): each, off alone, makes it
	// go away.
	Defects []NamedDefect `json:"defects,omitempty"`
	// Line is the finding named in one line, as the text report, junit.xml and --report give it.
	Line string `json:"line"`
	// How says what the re-runs showed.
	How string `json:"how,omitempty"`
	// Trials are the re-runs in the order they were made.
	Trials []Trial `json:"trials,omitempty"`
}

// NamedDefect is a defect switch as a finding names it.
type NamedDefect struct {
	Name     string          `json:"name"`
	Title    string          `json:"title"`
	Summary  string          `json:"summary"`
	Upstream []impl.Upstream `json:"upstream,omitempty"`
}

// Trial is one re-run of the shrunk program: what was off, and whether the finding stayed.
type Trial struct {
	Off   string `json:"off"` // a switch's name, or "fixed" (every known defect's switch off)
	Stays bool   `json:"stays"`
}

// named is a defect as a finding names it.
func named(d impl.Defect) NamedDefect {
	return NamedDefect{Name: d.Name(), Title: d.Title(), Summary: d.Summary(), Upstream: d.Upstream()}
}

// refs is a defect's upstream references as a line gives them: "CloudStack issue #14522, PR
// #12409", or that there is none yet.
func (n NamedDefect) refs() string {
	if len(n.Upstream) == 0 {
		return "no CloudStack issue yet: found by csconform, its verdict in docs/profiles.md"
	}
	var own, related []string
	for _, u := range n.Upstream {
		if u.Kind == "related" {
			related = append(related, fmt.Sprintf("#%d", u.Number))
		} else {
			own = append(own, u.String())
		}
	}
	if len(own) == 0 {
		return "no CloudStack issue of its own; related: " + strings.Join(related, ", ")
	}
	return "CloudStack " + strings.Join(own, ", ")
}

// Text is the defect in a line's words: D1 (title; CloudStack issue #14522, PR #12409).
func (n NamedDefect) Text() string {
	return fmt.Sprintf("%s (%s; %s)", n.Name, n.Title, n.refs())
}

// signature is what the detectors flagged in a run: the invariants broken (a transition guard's by
// the guard: transition-guard holds a family of them) and the objects whose history no sequential
// order explains.
func signature(out *Outcome, det Detectors) []string {
	var s []string
	if det.Invariants {
		for _, v := range out.Result.Violations {
			k := "invariant " + v.Invariant
			if g, _, ok := strings.Cut(v.Message, ":"); ok && v.Invariant == invariant.TransitionGuard {
				k += " (" + g + ")"
			}
			if !slices.Contains(s, k) {
				s = append(s, k)
			}
		}
	}
	if det.Linear {
		for _, r := range out.Illegal {
			s = append(s, "not linearizable "+r.Object)
		}
	}
	return s
}

// stays says whether a re-run shows the finding again: an invariant it broke broken again, or an
// object it found not linearizable found so again. A re-run that fails otherwise (another defect
// still on breaking another invariant) is another finding.
func stays(finding []string, again *Outcome, det Detectors) bool {
	for _, s := range signature(again, det) {
		if slices.Contains(finding, s) {
			return true
		}
	}
	return false
}

// Attribute names a finding's defect: it runs the shrunk program again under fixed (every known
// defect's switch off; a planted bug, no known defect, stays on) and, if the finding goes away
// there, once with each known defect's switch that was on turned off alone. A real-time world is not
// asked: each run would take minutes and its timing is not the simulator's.
func Attribute(f *Finding, o Options) *Attribution {
	if o.RealTime() {
		return &Attribution{Verdict: VerdictNotAttributed, Line: fmt.Sprintf("which defect: not attributed (--driver %s runs in real time: a re-run per switch would take minutes each)", o.Driver)}
	}
	det := o.Detectors
	if det == (Detectors{}) {
		det = Both
	}
	prog := f.Shrunk.Program
	run := func(sw impl.Switches) (*Outcome, error) {
		p := o
		p.Defects, p.Profile = sw, "custom"
		if !slices.ContainsFunc(impl.Defects, func(d impl.Defect) bool { return sw[d] }) {
			p.Profile = impl.Fixed
		}
		sc := *prog // Run sets the copy's scheduler, never the finding's
		return Run(&sc, p)
	}
	a, err := attribute(signature(f.Shrunk, det), o.Defects, det, run)
	if err != nil {
		return &Attribution{Verdict: VerdictNotAttributed, Line: "which defect: not attributed: a re-run failed: " + err.Error()}
	}
	return a
}

// attribute is Attribute's logic, the runs given: run runs the shrunk program with the switches
// given.
func attribute(finding []string, on impl.Switches, det Detectors, run func(impl.Switches) (*Outcome, error)) (*Attribution, error) {
	var known []impl.Defect // the known defects that were on, in the order of impl.Defects
	for _, d := range impl.Defects {
		if on[d] {
			known = append(known, d)
		}
	}
	a := &Attribution{}
	if len(known) == 0 {
		a.Verdict = VerdictNew
		a.Line = "no known defect explains it: new (found with no known defect's switch on)"
		return a, nil
	}
	try := func(off string, sw impl.Switches) (bool, error) {
		out, err := run(sw)
		if err != nil && off == "fixed" {
			return false, fmt.Errorf("under fixed: %v", err)
		}
		if err != nil {
			return false, fmt.Errorf("with %s off: %v", off, err)
		}
		s := stays(finding, out, det)
		a.Trials = append(a.Trials, Trial{Off: off, Stays: s})
		return s, nil
	}
	fixed := maps.Clone(on)
	for _, d := range known {
		fixed[d] = false
	}
	s, err := try("fixed", fixed)
	if err != nil {
		return nil, err
	}
	if s {
		a.Verdict = VerdictNew
		a.Line = "no known defect explains it: new (it stays under fixed, every known defect's switch off)"
		a.How = "the shrunk program run again under fixed: the finding stays (1 re-run)"
		return a, nil
	}
	var gone, kept []string
	for _, d := range known {
		sw := maps.Clone(on)
		sw[d] = false
		s, err := try(d.Name(), sw)
		if err != nil {
			return nil, err
		}
		if s {
			kept = append(kept, d.Name())
		} else {
			gone = append(gone, d.Name())
			a.Defects = append(a.Defects, named(d))
		}
	}
	how := []string{"gone under fixed"}
	if len(gone) > 0 {
		how = append(how, "gone with "+orList(gone)+" off")
	}
	if len(kept) > 0 {
		how = append(how, "stays with "+orList(kept)+" off")
	}
	a.How = fmt.Sprintf("the shrunk program run again under fixed and with each defect switch that was on turned off alone: %s (%d re-runs)", strings.Join(how, "; "), len(a.Trials))
	switch len(a.Defects) {
	case 0:
		a.Verdict = VerdictSeveral
		a.Line = fmt.Sprintf("known defects explain it, no one of them alone: it is gone under fixed but stays with each of %s switched off alone", strings.Join(kept, ", "))
	case 1:
		a.Verdict = VerdictDefect
		a.Line = "this is " + a.Defects[0].Text()
	default:
		a.Verdict = VerdictDefect
		var each []string
		for _, n := range a.Defects {
			each = append(each, n.Text())
		}
		a.Line = "this is " + strings.Join(gone, " and ") + " together (each, switched off alone, makes it go away): " + strings.Join(each, "; ")
	}
	return a, nil
}

// orList is names as a line lists them: "D1", "each of D1, D3".
func orList(names []string) string {
	if len(names) == 1 {
		return names[0]
	}
	return "each of " + strings.Join(names, ", ")
}

// text is the attribution as the text report gives it: its line, and how the re-runs showed it
// ("" when there is none).
func (a *Attribution) text() string {
	if a == nil {
		return ""
	}
	if a.How == "" {
		return a.Line + "\n"
	}
	return a.Line + "\n   how: " + a.How + "\n"
}
