package explore

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/csconform/csconform/drivers/sim"
	"github.com/csconform/csconform/harness"
	"github.com/csconform/csconform/impl"
)

// MutationOptions say how hard to try to kill each mutant of impl's catalogue (impl.Mutants).
type MutationOptions struct {
	Scenarios []*harness.Scenario // the built-in scenarios, run under fixed (repro all)
	// Profiles the scenarios run under, each against its expectations (nil: fixed alone, the
	// catalogue's setting; a mechanical mutant may also break a defect's path, which only the
	// cloudstack-4.22 expectations see)
	Profiles  []string
	Budget    int           // explore cases per seed
	Seeds     []uint64      // explore seeds
	Only      []impl.Mutant // a subset of the catalogue (nil: all of it)
	Scheduler sim.Strategy  // the explorations' strategy (the zero value is random)
	// Peers draws programs with two management servers now and then, as explore does by default
	// (the catalogue's score leaves it off, as it was measured)
	Peers bool
}

// MutantResult is one mutant's fate: killed by a scenario (a violation, a history that is not
// linearizable, or an expectation not met under fixed), by exploration, or survived.
type MutantResult struct {
	Mutant   impl.MutantInfo
	KilledBy string // "" survived; "repro" or "explore"
	Detail   string // what killed it
	Wall     time.Duration
}

// MutationScore runs the built-in scenarios and explorations under the fixed profile with each mutant
// switched on in turn. It needs a binary built with -tags mutants.
func MutationScore(o MutationOptions, seen func(MutantResult)) ([]MutantResult, error) {
	if !impl.MutantsBuilt() {
		return nil, impl.SetMutant("")
	}
	defer impl.SetMutant("")
	fixed, err := impl.ProfileSwitches(impl.Fixed)
	if err != nil {
		return nil, err
	}
	var out []MutantResult
	for _, m := range impl.Mutants {
		if len(o.Only) > 0 && !slices.Contains(o.Only, m.ID) {
			continue
		}
		if err := impl.SetMutant(m.ID); err != nil {
			return nil, err
		}
		start := time.Now()
		r := MutantResult{Mutant: m}
		r.KilledBy, r.Detail, err = killMutant(o, fixed, m.ID)
		if err != nil {
			return nil, fmt.Errorf("mutant %s: %v", m.ID, err)
		}
		r.Wall = time.Since(start)
		out = append(out, r)
		if seen != nil {
			seen(r)
		}
	}
	return out, nil
}

func killMutant(o MutationOptions, fixed impl.Switches, id impl.Mutant) (string, string, error) {
	return Judge(o, func(f *Finding) (bool, error) { return mutantsOwn(f, fixed, id, o.Scheduler) })
}

// Judge is the detectors' verdict on the reference as built: a built-in scenario that breaks an
// invariant, is not linearizable or misses an expectation, else an exploration's finding that own
// says the unmutated reference does not make too (a finding fixed makes without the mutant kills
// nothing, and the seed's budget goes on from a seed drawn from it). It returns what killed
// ("repro" or "explore", "" if nothing did) and how.
func Judge(o MutationOptions, own func(*Finding) (bool, error)) (string, string, error) {
	fixed, err := impl.ProfileSwitches(impl.Fixed)
	if err != nil {
		return "", "", err
	}
	profiles := o.Profiles
	if len(profiles) == 0 {
		profiles = []string{impl.Fixed}
	}
	for _, p := range profiles {
		sw, err := impl.ProfileSwitches(p)
		if err != nil {
			return "", "", err
		}
		for _, sc := range o.Scenarios {
			res, err := harness.RunScenario(sc, p, sw, sc.Seed)
			if err != nil {
				// a mutant that breaks a scenario's run (a step that cannot complete) is caught too
				return "repro", fmt.Sprintf("%s (%s): the run failed: %v", sc.Name, p, firstLine(err.Error())), nil
			}
			// under a profile with defects on, violations are what the scenario expects: only a
			// missed expectation tells
			switch {
			case p == impl.Fixed && len(res.Violations) > 0:
				return "repro", fmt.Sprintf("%s: %s: %s", sc.Name, res.Violations[0].Invariant, res.Violations[0].Message), nil
			case p == impl.Fixed && len(res.NotLinearizable) > 0:
				return "repro", fmt.Sprintf("%s: not linearizable: %s", sc.Name, res.NotLinearizable[0].Object), nil
			case len(res.Mismatches) > 0:
				return "repro", fmt.Sprintf("%s (%s): unexpected: %s", sc.Name, p, res.Mismatches[0]), nil
			}
		}
	}
	for _, seed := range o.Seeds {
		for done, k := 0, uint64(0); done < o.Budget; k++ {
			s := seed
			if k > 0 {
				s = rand.New(rand.NewPCG(seed, k)).Uint64() | 1
			}
			f, ran, err := Explore(Options{Profile: impl.Fixed, Defects: fixed, Scheduler: o.Scheduler, Peers: o.Peers}, o.Budget-done, s, -1) // the score needs no shrinking
			if err != nil {
				// rapid reports a case that failed to run (a panic, a step that cannot complete) as an
				// error: the mutant broke the reference, and that is a kill
				return "explore", fmt.Sprintf("seed %d: %s", s, firstLine(err.Error())), nil
			}
			done += ran
			if f == nil {
				break
			}
			mine, err := own(f)
			if err != nil {
				return "", "", err
			}
			if mine {
				what := "not linearizable"
				if inv := f.Shrunk.Invariants(); len(inv) > 0 {
					what = strings.Join(inv, ",")
				}
				return "explore", fmt.Sprintf("seed %d after %d cases: %s (case %d)", s, f.Cases, what, f.Seed), nil
			}
		}
	}
	return "", "", nil
}

// mutantsOwn says whether a finding is the mutant's: its shrunk program passes with the mutant off.
func mutantsOwn(f *Finding, fixed impl.Switches, id impl.Mutant, sched sim.Strategy) (bool, error) {
	if err := impl.SetMutant(""); err != nil {
		return false, err
	}
	defer func() { _ = impl.SetMutant(id) }()
	again, err := Run(f.Shrunk.Program, Options{Profile: impl.Fixed, Defects: fixed, Scheduler: sched})
	if err != nil {
		return false, err
	}
	return !again.Failed(Both), nil
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// MutantLine is one mutant's line of the report.
func MutantLine(r MutantResult) string {
	fate := "SURVIVED"
	if r.KilledBy != "" {
		fate = "killed by " + r.KilledBy + ": " + r.Detail
	}
	return fmt.Sprintf("%-46s %5.1f s  %s\n", r.Mutant.ID, r.Wall.Seconds(), fate)
}

// ScoreLine is the report's last line: how many mutants were killed, and by what effort.
func ScoreLine(rs []MutantResult, o MutationOptions) string {
	killed := 0
	for _, r := range rs {
		if r.KilledBy != "" {
			killed++
		}
	}
	return fmt.Sprintf("mutation score: %d of %d mutants killed (repro all under fixed + explore --budget %d × %d seeds, scheduler %s)\n", killed, len(rs), o.Budget, len(o.Seeds), o.Scheduler)
}
