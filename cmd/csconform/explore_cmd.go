package main

import (
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/csconform/csconform/drivers/container"
	"github.com/csconform/csconform/drivers/sim"
	"github.com/csconform/csconform/impl"
)

// exploreOpts are explore's flags.
type exploreOpts struct {
	profile, defects string
	budget           int
	seed             uint64
	shard, detectors string
	out              string
	report           string
	marvin           string
	quiet            bool
	driver, domains  string
	sched            *strategyFlag
	schedSet         bool // --scheduler given on the command line
	peersSet         bool // --peers given on the command line
	peers            bool
}

func exploreFlags(fs *pflag.FlagSet, o *exploreOpts) {
	fs.StringVar(&o.profile, "profile", impl.Fixed, "the profile `P`: fixed or cloudstack-4.22, as for repro")
	fs.StringVar(&o.defects, "defects", "", "switch on exactly the defects in `LIST` instead, as for repro")
	fs.IntVar(&o.budget, "budget", 1000, "run at most `N` cases")
	fs.Uint64Var(&o.seed, "seed", 0, "the seed `N` to start from (default: random, printed); --seed N --budget 1 replays a finding")
	fs.StringVar(&o.shard, "shard", "", "run the i-th of n disjoint slices of the seed space (`i/n`, a CI matrix; needs --seed, the same for every shard)")
	fs.StringVar(&o.detectors, "detectors", "both", "`D`: both, invariants or linear")
	fs.StringVar(&o.out, "out", "", "write summary.txt, result.json (seeds as strings, the replay command, the attribution: which defect a finding is), junit.xml (one test case per detector, seed and replay as properties, a failure message that names the defect), history.jsonl (the finding's, or the last case's) and, for a finding, counterexample.yaml and one porcupine HTML per failing partition into `DIR`, a fresh one (a non-empty directory is refused); a run stopped by SIGINT or SIGTERM writes them too, for the cases it ran, marked interrupted")
	fs.StringVar(&o.report, "report", "", "for a finding, write a bug report a CloudStack committer can read to `FILE.md` (a new file): which defect it is, the settings, the shrunk program as API calls and host faults, what broke, the timeline and the run's management-server.log in CloudStack's wording, the replay command; nothing is written when nothing is found")
	fs.StringVar(&o.marvin, "marvin", "", "for a finding, write it as a Marvin test case to `FILE.py` (a new file), for a CloudStack zone with the Simulator hypervisor: the setup, the shrunk program's API calls, configureSimulator mocks for its faults (a skip, with why, at a fault the simulator cannot say) and assertions for the invariants it broke; nothing is written when nothing is found")
	fs.BoolVar(&o.quiet, "quiet", false, "no progress bar")
	fs.BoolVar(&o.peers, "peers", true, "draw programs with two management servers now and then (the hosts split between them, the API calls alternating) and peer-stop; the simulator only (--peers=false: one server, as before 2026-11-30)")
	fs.StringVar(&o.driver, "driver", "sim", driverHelp(drivers)+"; a real-time world takes a minute or two a case: use a small budget")
	fs.StringVar(&o.domains, "domains", container.DomainsAuto, "`D`, for --driver container: auto, libvirt or simulated, as for repro")
	// PCT by default: the fixed profile stays clean under it (1000 cases on seeds 1, 2, 3) and it
	// reaches check-then-act interleavings the random strategy cannot.
	o.sched = &strategyFlag{st: sim.Strategy{Kind: sim.PCT}}
	fs.Var(o.sched, "scheduler", "the simulator's strategy `S`: pct[:depth] or random, as for repro; a finding's replay line and counterexample.yaml carry it")
}

func newExploreCmd(e *cliEnv) *cobra.Command {
	o := &exploreOpts{}
	c := &cobra.Command{
		Use:   "explore [flags]",
		Short: "random programs with faults until a detector flags one",
		Long: `Generates random programs of operations and faults (rapid) and runs them until a detector flags
one: the invariants on every step, or a history no sequential order explains. A finding is shrunk
and printed with the seed that replays it, and named: its shrunk program runs again under fixed
and with each defect switch that was on turned off alone, and the switch whose removal makes it go
away is the defect it is ("this is D1 (...)"; "no known defect explains it: new" if it stays
under fixed). --report writes it up as a bug report.`,
		Example: `  csconform explore --seed 1 --budget 50
  csconform explore --profile cloudstack-4.22 --out reports
  csconform explore --defects D1 --seed 5 --budget 20 --report d1.md
  csconform explore --seed N --budget 1        # replay a finding`,
		Run: func(c *cobra.Command, args []string) {
			o.schedSet = c.Flags().Changed("scheduler")
			o.peersSet = c.Flags().Changed("peers")
			*e.code = exploreCmd(o, args, e.stdout, e.stderr)
		},
	}
	exploreFlags(c.Flags(), o)
	return c
}
