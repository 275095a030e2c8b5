package main

import (
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/csconform/csconform/conformance"
	"github.com/csconform/csconform/harness/explore"
	"github.com/csconform/csconform/impl"
)

const mutantsUsage = `usage: csconform mutants [list]
       csconform mutants run [--budget N] [--seeds LIST] [--only ID,...]

The mutation catalogue: plausible one-line regressions of the fixed code paths (impl/mutants.go).
run switches each on in turn under the fixed profile and says whether the built-in scenarios (repro
all, load scenarios left out) or exploration (explore --budget N, each seed) catch it, then the score. run needs a binary
built with the mutation points:

    go run -tags mutants ./cmd/csconform mutants run

Exit status: 0 the score was measured (a figure, not a verdict), 2 bad input.
`

func mutantsCmd(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "list" {
		for _, m := range impl.Mutants {
			fmt.Fprintf(stdout, "%-46s %-44s %s\n", m.ID, m.Method, m.Summary)
		}
		return 0
	}
	if args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stdout, mutantsUsage)
		return 0
	}
	if args[0] != "run" {
		fmt.Fprintf(stderr, "csconform mutants: unknown subcommand %q\n%s", args[0], mutantsUsage)
		return 2
	}
	fs := flag.NewFlagSet("mutants run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	budget := fs.Int("budget", 1000, "explore cases per seed")
	seedList := fs.String("seeds", "1,2,3", "explore seeds, comma-separated")
	only := fs.String("only", "", "run only these mutants (comma-separated ids)")
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	fail := func(err error) int { fmt.Fprintln(stderr, "csconform mutants:", err); return 2 }
	if fs.NArg() > 0 {
		return fail(fmt.Errorf("unexpected argument %q", fs.Arg(0)))
	}
	if !impl.MutantsBuilt() {
		return fail(fmt.Errorf("this binary has no mutation points: go run -tags mutants ./cmd/csconform mutants run"))
	}
	o := explore.MutationOptions{Budget: *budget}
	for _, f := range strings.Split(*seedList, ",") {
		s, err := strconv.ParseUint(strings.TrimSpace(f), 10, 64)
		if err != nil || s == 0 {
			return fail(fmt.Errorf("--seeds wants positive integers, got %q", f))
		}
		o.Seeds = append(o.Seeds, s)
	}
	if *only != "" {
		for _, id := range strings.Split(*only, ",") {
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
