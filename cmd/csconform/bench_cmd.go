package main

import (
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// benchOpts are bench's flags.
type benchOpts struct {
	seeds, budget int
	detectors     string
}

func benchFlags(fs *pflag.FlagSet, o *benchOpts) {
	fs.IntVar(&o.seeds, "seeds", 20, "`N` seeds per defect")
	fs.IntVar(&o.budget, "budget", 100, "at most `N` cases per seed")
	fs.StringVar(&o.detectors, "detectors", "both", "`D`: both, invariants or linear")
}

func newBenchCmd(e *cliEnv) *cobra.Command {
	o := &benchOpts{}
	c := &cobra.Command{
		Use:   "bench [flags]",
		Short: "time to find each defect, simulator and checker speed",
		Long: `Prints how fast exploration finds each defect (each switched on alone), how fast the simulator
runs and how long porcupine takes on a 10,000-operation history. Figures, never assertions.`,
		Args: noArgs,
		Run: func(_ *cobra.Command, _ []string) {
			*e.code = benchCmd(o, e.stdout, e.stderr)
		},
	}
	benchFlags(c.Flags(), o)
	return c
}
