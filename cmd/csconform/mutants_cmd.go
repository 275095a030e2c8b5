package main

import (
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/csconform/csconform/drivers/sim"
)

// mutantsOpts are the flags of mutants run.
type mutantsOpts struct {
	budget      int
	seeds, only string
	sched       *strategyFlag
	peers       bool
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
		Use:   "mutants [list|run|sample]",
		Short: "the mutation catalogue and its score; mechanical mutants nobody picked",
		Long: `The mutation catalogue: plausible one-line regressions of the fixed code paths (impl/mutants.go).
mutants and mutants list print it; mutants run scores the detectors against it; mutants sample
draws mechanical mutants of impl/'s race paths at random and scores the detectors on them.`,
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
	r.Flags().BoolVar(&o.peers, "peers", false, "draw the explorations' programs with two management servers now and then, as explore does by default (the score CI prints is measured without)")
	c.AddCommand(r, newMutantsSampleCmd(e), newMutantsOracleCmd(e))
	return c
}

func newMutantsSampleCmd(e *cliEnv) *cobra.Command {
	o := &sampleOpts{}
	c := &cobra.Command{
		Use:   "sample N [flags]",
		Short: "judge the detectors on N mechanical mutants of impl/'s race paths, drawn at random",
		Long: `Draws N mutants of impl/'s race paths that nobody picked — one operand of a condition dropped,
a condition negated, a statement deleted (a lock, a re-read, a state write, a release, a publish),
the stale copy used where the code re-reads and the re-read where it uses its copy, two adjacent
statements swapped, a comparison's boundary moved, an error type replaced by a sibling — in the
order --seed shuffles them, builds each (a mutant that does not compile is drawn past), and runs
the oracle: repro all under fixed and cloudstack-4.22 against their expectations, then explore
under fixed (a finding counts only if the unmutated binary, replaying its case, does not make it).
With --witness it also runs go test ./impl/... on each: a mutant a unit test fails on changes
behaviour someone pinned. It prints the kill rates (among all, among witnessed), the rates by
operator and the survivors by file and function with their diffs. It needs the source tree and
the go command; each mutant costs a build, the oracle and the witness (about 40 s on 2 cores).`,
		Example: "  csconform mutants sample 20 --seed 7\n  csconform mutants sample 200 --seed 1 --json sample.json",
		Args:    cobra.RangeArgs(0, 1),
		Run: func(_ *cobra.Command, args []string) {
			if len(args) == 0 {
				// --count, --show and --ids need no N
				args = []string{"1"}
			}
			n, err := strconv.Atoi(args[0])
			if err != nil {
				fmt.Fprintf(e.stderr, "csconform mutants sample: N must be a number of mutants, got %q\n", args[0])
				*e.code = exitBadInput
				return
			}
			*e.code = mutantsSample(n, o, e.stdout, e.stderr)
		},
	}
	fs := c.Flags()
	mutantsFlags(fs, &o.mutantsOpts)
	_ = fs.MarkHidden("only")
	fs.Uint64Var(&o.seed, "seed", 1, "the draw: the same seed and tree give the same mutants")
	fs.BoolVar(&o.witness, "witness", true, "also run go test ./impl/... on each mutant")
	fs.StringVar(&o.jsonOut, "json", "", "write the figures and every mutant's fate, with its diff, to `FILE`")
	fs.StringVar(&o.src, "src", "", "csconform's source tree (default: the module holding the working directory)")
	fs.DurationVar(&o.bound, "bound", 2*time.Minute, "a mutant's oracle or unit tests still running after `D` are reported hung (a bound that tells a hang from a verdict, never one verdict from another)")
	fs.BoolVar(&o.listOnly, "count", false, "print how many mutation points each operator offers, and judge none")
	fs.StringVar(&o.ids, "ids", "", "judge exactly these mutants (comma-separated ids from an earlier sample of the same tree) instead of drawing N")
	fs.BoolVar(&o.show, "show", false, "print the diffs of the --ids mutants, and judge none")
	return c
}

// newMutantsOracleCmd is the oracle a mutant's binary runs on itself (mutants sample's child).
func newMutantsOracleCmd(e *cliEnv) *cobra.Command {
	o := &mutantsOpts{}
	var baseline string
	c := &cobra.Command{
		Use:    "oracle",
		Short:  "the verdict of this binary's reference (mutants sample runs it in each mutant's build)",
		Hidden: true,
		Args:   noArgs,
		Run: func(_ *cobra.Command, _ []string) {
			*e.code = mutantsOracle(o, baseline, e.stdout, e.stderr)
		},
	}
	mutantsFlags(c.Flags(), o)
	c.Flags().StringVar(&baseline, "baseline", "", "the unmutated binary, which replays an exploration's finding")
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
