package main

import (
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/csconform/csconform/harness/explore"
	"github.com/csconform/csconform/impl"
)

// benchOpts are bench's flags.
type benchOpts struct {
	seeds, budget int
	detectors     string
	// the scale bench
	scale     string
	scaleRun  int
	scaleRuns int
	profile   string
	prof      scaleProfiles
	sf        scaleFlags
	// the defect table and the generators' throughput
	shrink     int
	throughput int
	only       string
	classic    bool
	sched      *strategyFlag
}

func benchFlags(fs *pflag.FlagSet, o *benchOpts) {
	fs.IntVar(&o.seeds, "seeds", 20, "`N` seeds per defect")
	fs.IntVar(&o.budget, "budget", 100, "at most `N` cases per seed")
	fs.StringVar(&o.detectors, "detectors", "both", "`D`: both, invariants or linear")
	fs.StringVar(&o.scale, "scale", "", "instead: the scale bench, one generated cloud per host count in `LIST` (e.g. 10,50,100,200), each in its own process (SIGINT or SIGTERM goes on to it, and bench reaps it before it exits 130): wall and CPU time, steps/s, simulated:real, peak RSS and growth from the size before")
	fs.IntVar(&o.scaleRun, "scale-run", 0, "run one size `N` in this process (the scale bench's child)")
	_ = fs.MarkHidden("scale-run")
	fs.IntVar(&o.scaleRuns, "scale-runs", 1, "the scale bench: run each size `N` times, in rounds of every size, and print the median (3 or 5 on a noisy machine: one run's growth factor can be off by a third)")
	fs.StringVar(&o.profile, "profile", impl.Fixed, "the scale bench's profile `P`")
	fs.StringVar(&o.prof.cpu, "cpuprofile", "", "the scale bench: write a CPU profile of each size to `FILE`.<hosts>")
	fs.StringVar(&o.prof.mem, "memprofile", "", "the scale bench: write an allocation profile of each size to `FILE`.<hosts>")
	o.sf = addScaleFlags(fs)
	fs.IntVar(&o.shrink, "shrink", 0, "how many runs `N` each finding may shrink with (0: none; 2000 for counterexamples as short as they get; a bound by runs, so a seed shrinks alike on any machine)")
	fs.IntVar(&o.throughput, "throughput", 1000, "explore `N` cases under fixed with the classic generator and with the current one, and print both speeds and coverages side by side (0: skip)")
	fs.StringVar(&o.only, "defects", "", "only these of "+strings.Join(explore.BenchDefects(), ",")+" (`LIST`; default all)")
	fs.BoolVar(&o.classic, "classic", false, "find them with the classic generator (before swarm, config and the guide)")
	o.sched = &strategyFlag{}
	fs.Var(o.sched, "scheduler", "the simulator's strategy `S`: random (default) or pct[:depth]")
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
