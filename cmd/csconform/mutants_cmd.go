package main

import (
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/csconform/csconform/drivers/sim"
)

// mutantsOpts are the flags of mutants run.
type mutantsOpts struct {
	budget      int
	seeds, only string
	sched       *strategyFlag
}

func mutantsFlags(fs *pflag.FlagSet, o *mutantsOpts) {
	fs.IntVar(&o.budget, "budget", 1000, "explore cases per seed")
	fs.StringVar(&o.seeds, "seeds", "1,2,3", "explore seeds, comma-separated")
	fs.StringVar(&o.only, "only", "", "run only these mutants (comma-separated ids)")
	// the explore command's default: the score measures what a user's explore run would catch
	o.sched = &strategyFlag{st: sim.Strategy{Kind: sim.PCT}}
	fs.Var(o.sched, "scheduler", "the simulator's strategy `S` for the explorations: pct[:depth] or random, as for explore")
}

func newMutantsCmd(e *cliEnv) *cobra.Command {
	list := func(_ *cobra.Command, _ []string) { *e.code = listMutants(e.stdout) }
	c := &cobra.Command{
		Use:   "mutants [list|run]",
		Short: "the mutation catalogue, and its score",
		Long: `The mutation catalogue: plausible one-line regressions of the fixed code paths (impl/mutants.go).
mutants and mutants list print it; mutants run scores the detectors against it.`,
		Args: noArgs,
		Run:  list,
	}
	c.AddCommand(&cobra.Command{Use: "list", Short: "print the mutation catalogue", Args: noArgs, Run: list})
	o := &mutantsOpts{}
	r := &cobra.Command{
		Use:   "run [flags]",
		Short: "score the detectors and exploration against the catalogue",
		Long: `Switches each mutant on in turn under the fixed profile and says whether the built-in scenarios
(repro all, load scenarios left out) or exploration (explore --budget N, each seed) catch it, then
the score: a figure, not a verdict. It needs a binary built with the mutation points.`,
		Example: "  go run -tags mutants ./cmd/csconform mutants run",
		Args:    noArgs,
		Run: func(_ *cobra.Command, _ []string) {
			*e.code = mutantsRun(o, e.stdout, e.stderr)
		},
	}
	mutantsFlags(r.Flags(), o)
	c.AddCommand(r)
	return c
}

func newVersionCmd(e *cliEnv) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "the module version and VCS revision of this binary",
		Args:  noArgs,
		Run: func(_ *cobra.Command, _ []string) {
			*e.code = versionCmd(e.stdout)
		},
	}
}
