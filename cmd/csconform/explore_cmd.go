package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/csconform/csconform/drivers/container"
	"github.com/csconform/csconform/drivers/sim"
	"github.com/csconform/csconform/harness/explore"
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
	cpuprofile       string
}

func exploreFlags(fs *pflag.FlagSet, o *exploreOpts) {
	fs.StringVar(&o.profile, "profile", impl.Fixed, "the profile `P`: fixed or cloudstack-4.22, as for repro")
	fs.StringVar(&o.defects, "defects", "", "switch on exactly the defects in `LIST` instead, as for repro")
	fs.IntVar(&o.budget, "budget", 1000, "run at most `N` cases")
	fs.Uint64Var(&o.seed, "seed", 0, "the seed `N` to start from (default: random, printed); --seed N --budget 1 replays a finding")
	fs.StringVar(&o.shard, "shard", "", "run slice i of n disjoint slices of the seed space (`i/n`, i counted from 0: 0/4 to 3/4 for a CI matrix of four; needs --seed, the same for every shard): chunks i, i+n, ... of 100 cases; explore merge joins the shards' --out directories")
	fs.StringVar(&o.detectors, "detectors", "both", "`D`: both, invariants or linear")
	fs.StringVar(&o.out, "out", "", "write summary.txt, result.json (seeds as strings, the replay command, the attribution: which defect a finding is), junit.xml (one test case per detector, seed and replay as properties, a failure message that names the defect), history.jsonl (the finding's, or the last case's) and, for a finding, counterexample.yaml and one porcupine HTML per failing partition into `DIR`, a fresh one (a non-empty directory is refused); a run stopped by SIGINT or SIGTERM writes them too, for the cases it ran, marked interrupted")
	fs.StringVar(&o.report, "report", "", "for a finding, write a bug report a CloudStack committer can read to `FILE.md` (a new file): which defect it is, the settings, the shrunk program as API calls and host faults, what broke, the timeline and the run's management-server.log in CloudStack's wording, the replay command; nothing is written when nothing is found")
	fs.StringVar(&o.marvin, "marvin", "", "for a finding, write it as a Marvin test case to `FILE.py` (a new file), for a CloudStack zone with the Simulator hypervisor: the setup, the shrunk program's API calls, configureSimulator mocks for its faults (a skip, with why, at a fault the simulator cannot say) and assertions for the invariants it broke; nothing is written when nothing is found")
	fs.BoolVar(&o.quiet, "quiet", false, "no progress bar")
	fs.StringVar(&o.cpuprofile, "cpuprofile", "", "write a CPU profile of the run to `FILE` (go tool pprof reads it): where explore's time goes")
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
	c.AddCommand(newExploreMergeCmd(e))
	return c
}

// mergeOpts are explore merge's flags.
type mergeOpts struct {
	out    string
	asJSON bool
}

func newExploreMergeCmd(e *cliEnv) *cobra.Command {
	o := &mergeOpts{}
	c := &cobra.Command{
		Use:   "merge DIR... [flags]",
		Short: "join the reports of a sharded explore run into one summary and JUnit file",
		Long: `Reads the result.json and junit.xml that each shard of one run wrote (explore --seed N --shard i/n
--out DIR, one job of a CI matrix each) and joins them: a line a shard, every finding with its replay
command, the cases summed; --out writes summary.txt, result.json and junit.xml (every shard's suite
under one testsuites element). The shards must be of one run (the same profile or defects, seed,
scheduler, driver and peers), each i/n once and all n of them. Exit 1 when a shard found something,
2 when a shard is missing or was interrupted before its budget (no verdict), 3 when only undecided
cases remain, 0 when the whole run found nothing. A shard's files are read up to 64 MiB each and n
is at most 10000 (explore --shard refuses more); control characters in what merge prints of them
are escaped (\x1b). docs/examples/explore-shards.yml is a GitHub Actions workflow
that runs it.`,
		Example: `  csconform explore merge shard-0 shard-1 shard-2 shard-3 --out merged
  csconform explore merge results/* --json`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return fmt.Errorf("name the shards' --out directories")
			}
			return nil
		},
		Run: func(c *cobra.Command, args []string) {
			*e.code = exploreMerge(o, args, e.stdout, e.stderr)
		},
	}
	c.Flags().StringVar(&o.out, "out", "", "write summary.txt, result.json and junit.xml of the merged run into `DIR`, a fresh one")
	c.Flags().BoolVar(&o.asJSON, "json", false, "print the merged result.json instead of the summary")
	return c
}

// exploreMerge joins the shards' reports (explore.Merge) and prints the merged summary.
func exploreMerge(o *mergeOpts, dirs []string, stdout, stderr io.Writer) int {
	fail := func(err error) int { fmt.Fprintln(stderr, "csconform explore merge:", err); return exitBadInput }
	if o.out != "" {
		if err := explore.CheckOutDir(o.out); err != nil {
			return fail(err)
		}
	}
	var shards []*explore.Shard
	for _, d := range dirs {
		s, err := explore.ReadShard(d)
		if err != nil {
			return fail(err)
		}
		shards = append(shards, s)
	}
	m, err := explore.Merge(shards)
	if err != nil {
		return fail(err)
	}
	if o.asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(m); err != nil {
			return fail(err)
		}
	} else {
		fmt.Fprint(stdout, m.Text())
	}
	if o.out != "" {
		if err := m.WriteReports(o.out, shards); err != nil {
			return fail(err)
		}
		if !o.asJSON {
			fmt.Fprintf(stdout, "reports in %s\n", o.out)
		}
	}
	if !m.Found && len(m.Interrupted) > 0 {
		// the shards' names come from their files: escaped, as Text escapes them
		fmt.Fprintf(stderr, "csconform explore merge: shard(s) %s were interrupted before their budget: no verdict\n", explore.Printable(strings.Join(m.Interrupted, ", ")))
		return exitBadInput
	}
	return verdictExit(m.Found, m.Undecided > 0)
}
