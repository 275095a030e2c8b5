package explore

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/csconform/csconform/harness"
)

// Guide steers an exploration toward what it has not reached yet. It keeps the coverage of the cases
// run so far and, per feature of a program (an operation, a fault, a setting, a VM with NICs on
// several networks, a wait past a threshold…), how many programs with it ran and how many of those
// reached a transition or a kind of log line no case had reached before. Before each case it draws a
// few candidate seeds, draws each one's program without running it, and runs the one whose features
// have been the most productive, untried ones first. The choice is among seeds only: a case is still
// its seed's program, so --seed N --budget 1 replays it without the guide.
type Guide struct {
	Coverage    *Coverage
	runs, gains map[string]int
}

// NewGuide is a guide that has seen nothing.
func NewGuide() *Guide {
	return &Guide{Coverage: NewCoverage(), runs: map[string]int{}, gains: map[string]int{}}
}

// candidates is how many seeds the guide weighs per case: drawing a program costs a few
// microseconds, running one milliseconds.
const candidates = 4

// guideStream is the PCG stream of the candidate seeds (any constant: it only has to stay put so a
// --seed gives the same sequence of cases).
const guideStream = 0x6775696465

// Features are what the guide credits a program with, sorted.
func Features(sc *harness.Scenario) []string {
	set := map[string]bool{fmt.Sprintf("hosts:%d", len(sc.Hosts)): true, fmt.Sprintf("networks:%d", len(sc.Networks)): true}
	for k, v := range sc.Config {
		set["config:"+k+"="+v] = true
	}
	for _, n := range sc.Networks {
		if n.Age > 0 {
			set["network:aged"] = true
		}
		if n.Persistent {
			set["network:persistent"] = true
		}
	}
	for _, st := range sc.Steps {
		switch {
		case st.Fault != "":
			set["fault:"+st.Fault] = true
		case st.Op != "":
			set["op:"+st.Op] = true
		}
		if len(st.Networks) > 1 {
			set["deploy:multi-nic"] = true
		}
		if st.HA {
			set["deploy:ha"] = true
		}
		if st.Until != "" {
			set["until:"+st.Until] = true
		}
		if st.Wait >= 10*time.Minute {
			set["wait:long"] = true
		}
	}
	out := make([]string, 0, len(set))
	for f := range set {
		out = append(out, f)
	}
	slices.Sort(out)
	return out
}

// score is how productive a program's features have been: the mean over them of (gains+1)/(runs+1),
// so a feature never tried scores 1 and one that ran often for nothing new sinks toward 0.
func (g *Guide) score(sc *harness.Scenario) float64 {
	fs := Features(sc)
	sum := 0.0
	for _, f := range fs {
		sum += float64(g.gains[f]+1) / float64(g.runs[f]+1)
	}
	return sum / float64(len(fs))
}

// observe adds a case's coverage and credits its program's features if it reached something new.
func (g *Guide) observe(sc *harness.Scenario, cov *Coverage) {
	nt, nl := g.Coverage.Merge(cov)
	for _, f := range Features(sc) {
		g.runs[f]++
		if nt+nl > 0 {
			g.gains[f]++
		}
	}
}

// next picks the seed of the next case among candidates drawn from rng.
func (g *Guide) next(rng *rand.Rand, draw func(seed uint64) *harness.Scenario) uint64 {
	best, bestScore := uint64(0), -1.0
	for range candidates {
		s := rng.Uint64() | 1 // rapid takes seed 0 for "pick one at random"
		if v := g.score(draw(s)); v > bestScore {
			best, bestScore = s, v
		}
	}
	return best
}
