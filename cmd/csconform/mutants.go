package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/csconform/csconform/conformance"
	"github.com/csconform/csconform/harness/explore"
	"github.com/csconform/csconform/impl"
)

// listMutants prints the mutation catalogue.
func listMutants(stdout io.Writer) int {
	for _, m := range impl.Mutants {
		fmt.Fprintf(stdout, "%-46s %-44s %s\n", m.ID, m.Method, m.Summary)
	}
	return 0
}

// mutantsRun scores the detectors and exploration against the mutation catalogue.
func mutantsRun(f *mutantsOpts, stdout, stderr io.Writer) int {
	fail := func(err error) int { fmt.Fprintln(stderr, "csconform mutants:", err); return 2 }
	if !impl.MutantsBuilt() {
		return fail(fmt.Errorf("this binary has no mutation points: go run -tags mutants ./cmd/csconform mutants run"))
	}
	o := explore.MutationOptions{Budget: f.budget, Scheduler: f.sched.st}
	for _, f := range strings.Split(f.seeds, ",") {
		s, err := strconv.ParseUint(strings.TrimSpace(f), 10, 64)
		if err != nil || s == 0 {
			return fail(fmt.Errorf("--seeds wants positive integers, got %q", f))
		}
		o.Seeds = append(o.Seeds, s)
	}
	if f.only != "" {
		for _, id := range strings.Split(f.only, ",") {
			m := impl.Mutant(strings.TrimSpace(id))
			if err := impl.SetMutant(m); err != nil {
				return fail(err)
			}
			o.Only = append(o.Only, m)
		}
		_ = impl.SetMutant("")
	}
	all, err := conformance.Builtin()
	if err != nil {
		return fail(err)
	}
	for _, sc := range all {
		// a load scenario (hundreds of concurrent deploys) is a test of the reference's scale, and
		// at 5 s a run it would cost more than the exploration of each mutant
		if !strings.HasPrefix(sc.Name, "load-") {
			o.Scenarios = append(o.Scenarios, sc)
		}
	}
	// a line per mutant as it is judged (a long run shows its progress), then the score
	rs, err := explore.MutationScore(o, func(r explore.MutantResult) { fmt.Fprint(stdout, explore.MutantLine(r)) })
	if err != nil {
		return fail(err)
	}
	fmt.Fprint(stdout, explore.ScoreLine(rs, o))
	return 0
}
